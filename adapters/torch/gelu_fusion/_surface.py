"""The Python half of torch.ops.gelu_fusion, generated from the op table.

The extension defines every operator from the table (csrc/surface.cpp) and
exports the table itself as JSON (``torch.ops.gelu_fusion._op_table()``).
Here, in one loop over it, each operator gets its fake kernel (what
torch.compile, torch.export and FakeTensor run instead of the real one);
ops.py makes each op a Python function the same way. Nothing about a
particular op is written here: shapes, dtypes, results and messages follow
the table's rules.

Fake kernels:
- shapes and dtypes come from the table's rules; sizes may be symbolic, and
  the shape rules are checked with torch._check, which adds no guard;
- results are on the input's device (which device has kernels is the
  backend's business, not checked here);
- a call the real op refuses raises the real op's message;
- results have the real kernel's strides: those of a dense input for the
  results of its shape (as F.gelu's empty_like), else contiguous.
"""
import json
from typing import Dict, List, Tuple

import torch
from torch._prims_common import is_non_overlapping_and_dense_or_false as _dense

_LIB = "gelu_fusion"
_ops = torch.ops.gelu_fusion

TABLE: List[dict] = json.loads(_ops._op_table())
BY_NAME: Dict[str, dict] = {op["name"]: op for op in TABLE}
# The forms' constants, from the one place the library writes them
# (src/math/gelu_forms.hpp): tanh_cubic, sqrt_2_over_pi, quick_scale,
# inv_sqrt2, inv_sqrt2pi.
FORMS: Dict[str, float] = json.loads(_ops._forms())
# The forms' names, in the library's order (GELU_FUSION_FORMS).
FORM_NAMES: Tuple[str, ...] = tuple(_ops._form_names())


def forms_listed() -> str:
    """The forms' names as a message lists them: "'none', 'tanh' or 'quick'"."""
    q = [f"'{f}'" for f in FORM_NAMES]
    return q[0] if len(q) == 1 else ", ".join(q[:-1]) + " or " + q[-1]


_KERNEL_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# c10's names of dtypes, as the real kernels' messages print them.
_C10_NAMES = {torch.float32: "Float", torch.bfloat16: "BFloat16",
              torch.float16: "Half", torch.float64: "Double", torch.int64: "Long",
              torch.int32: "Int", torch.bool: "Bool", torch.int8: "Char",
              torch.uint8: "Byte", torch.int16: "Short",
              torch.complex64: "ComplexFloat", torch.complex128: "ComplexDouble"}
# The library's names, as its shape and dtype messages print them.
_LIB_NAMES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}
_FORMS = FORM_NAMES
_HALVES = ("first", "second")


def _shape_text(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _fail(op: str, what: str):
    raise RuntimeError(f"gelu_fusion::{op}: {what}")


def _check_input(op: str, name: str, t: torch.Tensor) -> None:
    if t.layout != torch.strided:
        _fail(op, f"{name} has layout {t.layout}, expected a strided (dense) tensor")
    if t.dtype not in _KERNEL_DTYPES:
        _fail(op, f"{name} has dtype {_C10_NAMES.get(t.dtype, t.dtype)}, "
                  "expected Float, BFloat16 or Half")


def _check_attrs(op: str, decl: dict, kwargs: dict) -> None:
    a = kwargs.get("approximate", "none")
    if a not in _FORMS:
        _fail(op, f"approximate is '{a}', expected {forms_listed()}")
    if any(attr["name"] == "gelu_half" for attr in decl["attrs"]):
        h = kwargs.get("gelu_half", "first")
        if h not in _HALVES:
            _fail(op, f"gelu_half is '{h}', expected 'first' or 'second'")


def _want_shape(rule: str, primary) -> list:
    if rule in ("primary", "same"):
        return list(primary)
    if rule == "last_dim":
        return [primary[-1] if len(primary) else 1]
    if rule == "half_last":
        return list(primary[:-1]) + [primary[-1] // 2] if len(primary) else []
    raise AssertionError(rule)


_REASON = {"last_dim": "the last dimension of ", "half_last": "the shape of ",
           "same": "the shape of "}


def _check_shapes(decl: dict, tensors: Dict[str, torch.Tensor]) -> None:
    """The library's validation (src/core/validate.cpp) on the inputs, with
    torch._check where a size may be symbolic."""
    op = decl["name"]
    specs = [t for t in decl["tensors"] if not t["output"]]
    p = next(t for t in specs if t["shape"] == "primary")
    x = tensors[p["torch_name"]]
    if decl["primary_rule"] != "any" and x.dim() == 0:
        _fail(op, f"{p['name']} has shape [], expected at least one dimension")
    if decl["primary_rule"] == "rank_ge_1_even_last":
        torch._check(x.shape[-1] % 2 == 0, lambda: (
            f"gelu_fusion::{op}: {p['name']} has shape {_shape_text(x.shape)}, "
            "expected an even last dimension (value and gate halves)"))
    for t in specs:
        if t is p:
            continue
        v = tensors[t["torch_name"]]
        if v.device != x.device:
            _fail(op, f"{t['torch_name']} is on {v.device}, expected {x.device} "
                      f"(the device of {p['torch_name']})")
        want = _want_shape(t["shape"], x.shape)
        msg = (lambda v=v, t=t, want=want: (
            f"gelu_fusion::{op}: {t['name']} has shape {_shape_text(v.shape)}, "
            f"expected {_shape_text(want)} ({_REASON[t['shape']]}{p['name']})"))
        torch._check(v.dim() == len(want), msg)
        for a, b in zip(v.shape, want):
            torch._check(a == b, msg)
        if t["dtype"] == "same" and v.dtype != x.dtype:
            _fail(op, f"{t['name']} has dtype {_LIB_NAMES[v.dtype]}, expected "
                      f"{_LIB_NAMES[x.dtype]} (the dtype of {p['name']})")


def _new_result(decl: dict, spec: dict, tensors: Dict[str, torch.Tensor]):
    """A result of the real kernel's shape, dtype and strides."""
    specs = [t for t in decl["tensors"] if not t["output"]]
    p = next(t for t in specs if t["shape"] == "primary")
    x = tensors[p["torch_name"]]
    dtype = x.dtype
    if spec["role"] == "dbias":
        dtype = tensors[next(t for t in specs if t["role"] == "addend")["torch_name"]].dtype
    shape = _want_shape(spec["shape"], x.shape)
    if (spec["shape"] in ("primary", "same") and decl["kind"] != "gated"
            and _dense(x)):
        return torch.empty_like(x, dtype=dtype)
    return x.new_empty(shape, dtype=dtype)


def _make_fake(decl: dict, overload):
    schema = overload._schema
    op = schema.name.split("::")[1]
    args = list(schema.arguments)
    written = [a.name for a in args if a.alias_info is not None and a.alias_info.is_write]
    inputs = [a.name for a in args
              if isinstance(a.type, torch.TensorType) and a.name not in written]
    defaults = {a.name: a.default_value for a in args if a.has_default_value()}
    outputs = {t["torch_name"]: t for t in decl["tensors"] if t["output"]}
    required = [n for n, t in outputs.items() if not t["optional"]]
    # The one out= argument of a one-result op is named `out`.
    rename = {"out": required[0]} if written == ["out"] else {}
    # Each result of the schema: named, or the op's one result. Written
    # arguments are not returned.
    returned = [r.name or required[0] for r in schema.returns]
    primary = next(t["torch_name"] for t in decl["tensors"] if t["shape"] == "primary")
    exact = overload._overloadname in ("grad_x_out",) or (
        op.endswith("_and_value") and overload._overloadname == "out")

    def fake(*a, **kw):
        # Every argument by name, as the schema binds them.
        kwargs = dict(defaults)
        kwargs.update(zip((x.name for x in args), a))
        kwargs.update(kw)
        tensors = {n: kwargs[n] for n in inputs}
        for n in inputs:
            _check_input(op, n, tensors[n])
        _check_attrs(op, decl, kwargs)
        _check_shapes(decl, tensors)
        results = {}
        for n, spec in outputs.items():
            if spec["optional"] and not op.endswith("_and_value"):
                continue
            results[n] = _new_result(decl, spec, tensors)
        for w in written:
            out = kwargs[w]
            want = results[rename.get(w, w)]
            if out.device != want.device:
                _fail(op, f"{w} is on {out.device}, expected {want.device} (the "
                          f"device of {primary})")
            if out.dtype != want.dtype:
                _fail(op, f"{w} has dtype {_C10_NAMES.get(out.dtype, out.dtype)}, "
                          f"expected {_C10_NAMES[want.dtype]} (the dtype this op "
                          "writes there)")
            if exact:
                torch._check(out.shape == want.shape and out.is_contiguous(), lambda: (
                    f"gelu_fusion::{op}: {w} has shape {list(out.shape)}, expected a "
                    f"contiguous tensor of shape {list(want.shape)}"))
            elif out.shape != want.shape:
                out.resize_(want.shape)
            results[rename.get(w, w)] = out
        r = [results[n] for n in returned]
        if not r:
            return None
        return r[0] if len(r) == 1 else tuple(r)

    return fake


def _overloads():
    """(table entry, OpOverload) for every operator the extension defines."""
    for decl in TABLE:
        for name in (decl["name"], decl["name"] + "_and_value"):
            if not hasattr(_ops, name):
                continue
            packet = getattr(_ops, name)
            for o in packet.overloads():
                yield decl, getattr(packet, o)


def _register() -> None:
    for decl, overload in _overloads():
        torch.library.register_fake(overload, _make_fake(decl, overload))


_register()
