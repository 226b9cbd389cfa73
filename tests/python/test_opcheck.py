"""torch.library.opcheck on every operator of torch.ops.gelu_fusion (each op
of the table in each variant: functional, out=, and the value variants),
for every form and dtype: schema, autograd registration, the fake kernel
against the real one (shapes, dtypes, strides) and AOT dispatch with
dynamic shapes."""
import pytest
import torch
from torch.library import opcheck

from conftest import DTYPES, FORMS
from gelu_fusion import _surface

ops = torch.ops.gelu_fusion


def _inputs(decl, dtype, rows=5, cols=6, requires_grad=False):
    """The op's inputs by torch name: x [rows, cols] (cols even, for the
    gated ops), the others by the table's shape rules."""
    x = torch.randn(rows, cols) * 3
    t = {}
    for spec in decl["tensors"]:
        if spec["output"]:
            continue
        shape = _surface._want_shape(spec["shape"], list(x.shape))
        v = (x if spec["shape"] == "primary" else torch.randn(shape)).to(dtype)
        if requires_grad and decl["forward"] is None:
            v.requires_grad_()
        t[spec["torch_name"]] = v
    return t


def _outputs(decl, overload, tensors, dtype):
    """Arguments for the tensors an overload writes: of the real results'
    shapes (the functional variant's), NaN-filled."""
    kwargs = {}
    written = [a.name for a in overload._schema.arguments
               if a.alias_info is not None and a.alias_info.is_write]
    if not written:
        return kwargs
    name = decl["name"] + ("_and_value" if overload._schema.name.endswith("_and_value")
                           else "")
    base = getattr(ops, name).default(*tensors.values())
    base = base if isinstance(base, tuple) else (base,)
    returned = [r.name for r in getattr(ops, name).default._schema.returns]
    for w in written:
        ref = base[0] if w == "out" else base[returned.index(w)]
        kwargs[w] = torch.full_like(ref, float("nan"))
    return kwargs


CASES = [(decl, ov) for decl, ov in _surface._overloads()]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[1]))
def test_opcheck(case, form, dtype):
    decl, overload = case
    gated = any(a["name"] == "gelu_half" for a in decl["attrs"])
    for half in (("first", "second") if gated else (None,)):
        tensors = _inputs(decl, dtype, requires_grad=not overload._schema.is_mutable)
        kwargs = {"approximate": form}
        if half:
            kwargs["gelu_half"] = half
        kwargs.update(_outputs(decl, overload, {k: v.detach() for k, v in
                                                tensors.items()}, dtype))
        result = opcheck(overload, tuple(tensors.values()), kwargs)
        assert all(v == "SUCCESS" for v in result.values()), result


def test_every_table_op_is_registered():
    """The surface is generated from the table: each op has its functional
    and out= variants, and the backward ops with an optional y the value
    variants."""
    names = {str(ov) for _, ov in CASES}
    for decl in _surface.TABLE:
        assert f"gelu_fusion.{decl['name']}.default" in names
        assert f"gelu_fusion.{decl['name']}.out" in names
        if any(t["optional"] for t in decl["tensors"]):
            assert f"gelu_fusion.{decl['name']}_and_value.default" in names


def test_generated_functions_call_the_ops():
    """gelu_fusion.ops has one function per op of the table, calling it."""
    import gelu_fusion

    for decl in _surface.TABLE:
        fn = getattr(gelu_fusion.ops, decl["name"])
        assert decl["formula"] in fn.__doc__
        tensors = _inputs(decl, torch.float32)
        got = fn(*tensors.values(), approximate="quick")
        want = getattr(ops, decl["name"])(*tensors.values(), approximate="quick")
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        assert all(torch.equal(g, w) for g, w in zip(got, want))
    with pytest.raises(TypeError, match=r"ops.bias_gelu: takes 2 tensors \(x, bias\)"):
        gelu_fusion.ops.bias_gelu(torch.zeros(3))
    with pytest.raises(TypeError, match=r"unexpected keyword 'gelu_half'"):
        gelu_fusion.ops.gelu(torch.zeros(3), gelu_half="second")
