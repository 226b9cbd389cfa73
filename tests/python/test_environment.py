"""The suite runs against the pinned PyTorch, and the extension against the
same one it was built for: never Debian's python3-torch (1.13), and no
second copy of PyTorch's libraries in the process.

An extension built with headers of one PyTorch and linked to a library of
another (TorchConfig found Debian's libc10.so.1.13 in the system paths
before torch's own) loads and runs, but every error it raises is a c10::Error
of the other library's layout, and PyTorch's exception translator crashed
on it (test_errors.py under PyTorch 2.11 ended in a segmentation fault)."""
import os
import re

import torch

import gelu_fusion  # noqa: F401  (loads the extension)

REPO = os.environ.get("GELU_FUSION_REPO") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_torch_is_the_pinned_one():
    with open(os.path.join(REPO, "scripts", "python-requirements.txt")) as f:
        pin = re.search(r"^torch==(\S+)", f.read(), re.M).group(1)
    assert torch.__version__.split("+")[0] == pin
    assert not torch.__file__.startswith("/usr/lib/python3/"), torch.__file__


def test_one_pytorch_in_the_process():
    """Every PyTorch library mapped (libc10*, libtorch*) is the running
    torch's own, the extension's dependencies included."""
    assert torch.ops.gelu_fusion.simd_target()  # the extension is loaded
    own = os.path.realpath(os.path.join(os.path.dirname(torch.__file__), "lib"))
    mapped = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path)
            if name.startswith(("libc10", "libtorch")):
                mapped.add(os.path.realpath(path))
    assert mapped, "no PyTorch library mapped?"
    others = sorted(p for p in mapped if os.path.dirname(p) != own)
    assert not others, f"PyTorch libraries from elsewhere than {own}: {others}"
