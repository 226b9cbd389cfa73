"""Every op of the library's op table as a Python function, generated at
import from the table (nothing here names an op):

    gelu_fusion.ops.bias_gelu_backward(dy, x, bias, approximate='tanh')

Each calls torch.ops.gelu_fusion.<op> (so it compiles, exports and
differentiates as the op does) with the tensors in the table's order and
the attributes by keyword; its docstring is the table's formula. These are
the ops as the library defines them: CPU tensors of float32, bfloat16 and
float16 only. The drop-ins for F.gelu and friends (gelu_fusion.gelu, ...)
take any tensor and are in gelu_fusion.functional.
"""
import torch

from . import _surface

__all__ = []


def _make(decl):
    op = getattr(torch.ops.gelu_fusion, decl["name"]).default
    names = [t["torch_name"] for t in decl["tensors"] if not t["output"]]
    attrs = {a["name"]: a["default"].strip("'") for a in decl["attrs"]}

    def fn(*tensors, **kwargs):
        if len(tensors) != len(names):
            raise TypeError(f"gelu_fusion.ops.{decl['name']}: takes {len(names)} "
                            f"tensors ({', '.join(names)}), got {len(tensors)}")
        unknown = set(kwargs) - set(attrs)
        if unknown:
            raise TypeError(f"gelu_fusion.ops.{decl['name']}: unexpected keyword "
                            f"{sorted(unknown)[0]!r}, expected one of {sorted(attrs)}")
        return op(*tensors, **kwargs)

    fn.__name__ = fn.__qualname__ = decl["name"]
    fn.__doc__ = (f"{decl['formula']}\n\nTensors: {', '.join(names)}. Attributes: "
                  + ", ".join(f"{k}='{v}'" for k, v in attrs.items()) + ".")
    return fn


for _decl in _surface.TABLE:
    globals()[_decl["name"]] = _make(_decl)
    __all__.append(_decl["name"])
