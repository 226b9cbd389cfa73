"""Loads the C++ extension that registers torch.ops.gelu_fusion."""
import os

import torch

_LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "_gelu_fusion_ops.so")
if not os.path.exists(_LIB):
    raise ImportError(
        f"gelu_fusion: the extension {_LIB} is missing; build the project "
        "(cmake --build build) and use PYTHONPATH=build/python, or install "
        "it: pip install --no-build-isolation .")
torch.ops.load_library(_LIB)
