"""PyTorch's own GELU tests, run against gelu_fusion: the OpInfo entry for
nn.functional.gelu (its sample inputs, numpy reference, error inputs and the
gradient checks its flags promise), the common_nn GELU module tests and the
ModuleInfo entry for nn.GELU (common_modules: its module inputs, reference
functions and gradient checks), from torch.testing._internal as PyTorch 2.11
ships it (the project's venv, scripts/python-requirements.txt).

Deliberate differences (docs/pytorch.md, "Differences from PyTorch"), adjusted here
and nowhere else: the error text for a bad `approximate` (we also accept
'quick'), the limits at +-inf (ours are the mathematical ones where
PyTorch returns NaN), and bf16 tanh-form values (ours are correctly rounded
where PyTorch's, computed in bf16, flush the negative tail to -0)."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch.autograd import gradcheck, gradgradcheck
from torch.testing._internal import common_methods_invocations as CMI
from torch.testing._internal import common_modules as COMMON_MODULES
from torch.testing._internal import common_nn as COMMON_NN

import gelu_fusion

OP = next(o for o in CMI.op_db if o.name == "nn.functional.gelu")
# The OpInfo's CPU dtypes (float32, float64, bfloat16 and, since PyTorch 2,
# float16; the union keeps float16 whatever the entry says).
DTYPES = sorted(OP.supported_dtypes("cpu") | {torch.float16}, key=str)
DT = pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])


def samples(dtype, requires_grad=False):
    return list(OP.sample_inputs("cpu", dtype, requires_grad=requires_grad))


def test_the_entry_promises_what_we_test():
    assert OP.supports_autograd and OP.supports_gradgrad
    assert OP.supports_forward_ad and OP.supports_fwgrad_bwgrad
    assert OP.ref is CMI.reference_gelu


@DT
def test_reference(dtype):
    """TestCommon.test_reference_testing: the numpy reference (scipy's
    norm.cdf / tanh), in the tolerances PyTorch uses for the dtype."""
    for s in samples(dtype):
        got = gelu_fusion.gelu(s.input, **s.kwargs)
        want = OP.ref(s.input.double().numpy(), **s.kwargs)
        torch.testing.assert_close(got, torch.from_numpy(want).to(dtype))


@DT
def test_matches_pytorch(dtype):
    """Ours against F.gelu itself on every sample, in every dtype (PyTorch
    2.11's CPU computes float16 too, which 1.13 did not)."""
    assert dtype in OP.supported_dtypes("cpu")
    for s in samples(dtype):
        got = gelu_fusion.gelu(s.input, **s.kwargs)
        if dtype == torch.bfloat16 and s.kwargs["approximate"] == "tanh":
            # Deliberately different: PyTorch's bf16 tanh form, computed in
            # bf16, is off by up to 100% in the negative tail; ours is the
            # correctly rounded value.
            want = OP.ref(s.input.double().numpy(), **s.kwargs)
            assert torch.equal(got, torch.from_numpy(want).to(dtype))
            continue
        torch.testing.assert_close(got, F.gelu(s.input, **s.kwargs))
        module = gelu_fusion.GELU(**s.kwargs)
        torch.testing.assert_close(module(s.input), got, rtol=0, atol=0)


@DT
def test_noncontiguous_samples(dtype):
    """TestCommon.test_noncontiguous_samples: same values on a
    non-contiguous copy, and the strides F.gelu gives."""
    for s in samples(dtype):
        nc = s.noncontiguous()
        got = gelu_fusion.gelu(nc.input, **nc.kwargs)
        want = gelu_fusion.gelu(s.input, **s.kwargs)
        if dtype == torch.float64:  # PyTorch's composition: its own rounding
            torch.testing.assert_close(got, want)
        else:  # our kernels: bit-identical
            assert torch.equal(got, want)
        t = s.input.t()
        assert gelu_fusion.gelu(t, **s.kwargs).stride() == t.stride()


def test_error_inputs():
    """error_inputs_gelu: an unknown `approximate` raises; our text differs
    on purpose (it names 'quick', which we accept)."""
    for e in OP.error_inputs("cpu"):
        s = e.sample_input
        with pytest.raises(RuntimeError, match=e.error_regex):
            F.gelu(s.input, **s.kwargs)  # PyTorch's own text
        with pytest.raises(RuntimeError, match=r"approximate is 'asdf', "
                           r"expected 'none', 'tanh' or 'quick'"):
            gelu_fusion.gelu(s.input, **s.kwargs)
        with pytest.raises(RuntimeError, match=r"expected 'none', 'tanh'"):
            gelu_fusion.gelu(s.input.double(), **s.kwargs)  # the fallback too


def _gradient_samples():
    """TestGradients runs in float64, where we compute PyTorch's composition
    (no float64 kernel), and in float32 through our kernels, which we check
    against float64 autograd (test_dropin_autograd.py holds the full set)."""
    return samples(torch.float64, requires_grad=True)[:4]


def test_fn_grad_and_forward_ad():
    """TestGradients.test_fn_grad / test_forward_mode_AD (gradcheck with
    check_forward_ad), on float64 samples."""
    for s in _gradient_samples():
        fn = lambda x: gelu_fusion.gelu(x, **s.kwargs)  # noqa: E731
        assert gradcheck(fn, (s.input,), check_forward_ad=True,
                         check_batched_grad=True)


def test_fn_gradgrad_and_fwgrad_bwgrad():
    """TestGradients.test_fn_gradgrad / test_fn_fwgrad_bwgrad."""
    for s in _gradient_samples():
        fn = lambda x: gelu_fusion.gelu(x, **s.kwargs)  # noqa: E731
        assert gradgradcheck(fn, (s.input,), check_fwd_over_rev=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gradients_of_samples_against_float64(dtype):
    """The same samples through our kernels: backward, forward AD and
    double backward against float64 autograd of F.gelu."""
    import torch.autograd.forward_ad as fwAD
    # float32: the second derivative is composed in float32 (cancellation
    # near the zeros of the second derivative costs a few ULPs of its terms);
    # bf16: its precision.
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == torch.float32 else \
        dict(rtol=2 ** -7, atol=2 ** -7)
    for s in samples(dtype):
        x = s.input.detach().requires_grad_()
        x64 = s.input.double().requires_grad_()
        v = torch.randn_like(x64)
        (g,) = torch.autograd.grad(gelu_fusion.gelu(x, **s.kwargs), x,
                                   v.to(dtype), create_graph=True)
        (g64,) = torch.autograd.grad(F.gelu(x64, **s.kwargs), x64, v,
                                     create_graph=True)
        torch.testing.assert_close(g.double(), g64, **tol)
        (gg,) = torch.autograd.grad(g.sum(), x)
        (gg64,) = torch.autograd.grad(g64.sum(), x64)
        torch.testing.assert_close(gg.double(), gg64, **tol)
        with fwAD.dual_level():
            t = fwAD.unpack_dual(gelu_fusion.gelu(
                fwAD.make_dual(x.detach(), v.to(dtype)), **s.kwargs)).tangent
            t64 = fwAD.unpack_dual(F.gelu(
                fwAD.make_dual(x64.detach(), v), **s.kwargs)).tangent
        torch.testing.assert_close(t.double(), t64, **tol)


def _module_tests():
    tests = [d for d in COMMON_NN.module_tests + COMMON_NN.get_new_module_tests()
             if d.get("module_name") == "GELU"]
    assert tests, "common_nn no longer lists GELU module tests"
    return tests


@pytest.mark.parametrize("case", _module_tests(),
                         ids=lambda d: d.get("desc", "default"))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16],
                         ids=lambda d: str(d)[6:])
def test_common_nn_module(case, dtype):
    """common_nn's GELU module tests: gelu_fusion.GELU built with the same
    constructor arguments, against the entry's reference_fn; gradcheck in
    float64 as NewModuleTest does."""
    torch.manual_seed(0)
    ours = gelu_fusion.GELU(*case.get("constructor_args", ()))
    theirs = torch.nn.GELU(*case.get("constructor_args", ()))
    x = torch.randn(case["input_size"], dtype=torch.float64)
    want = case["reference_fn"](x, list(theirs.parameters()), theirs)
    got = ours(x.to(dtype))
    tol = {} if dtype != torch.bfloat16 else dict(rtol=2 ** -7, atol=2 ** -8)
    torch.testing.assert_close(got, want.to(dtype), **tol)
    if dtype == torch.float64:
        assert gradcheck(ours, (x.requires_grad_(),), check_forward_ad=True)
        assert gradgradcheck(ours, (x,))


MODULE_INFO = next(m for m in COMMON_MODULES.module_db if m.module_cls is torch.nn.GELU)


@pytest.mark.parametrize("dtype", sorted(set(MODULE_INFO.dtypes) | {torch.bfloat16},
                                         key=str), ids=lambda d: str(d)[6:])
def test_module_info(dtype):
    """common_modules' ModuleInfo for nn.GELU (TestModule.test_forward,
    test_grad, test_gradgrad): each module input's constructor arguments
    build gelu_fusion.GELU, whose output matches the input's reference_fn and
    nn.GELU's; gradcheck and gradgradcheck in float64 (the dtypes the entry
    lists, float32 and float64, and bfloat16, which our kernels compute)."""
    inputs = MODULE_INFO.module_inputs_func(MODULE_INFO, device="cpu", dtype=dtype,
                                            requires_grad=False, training=True)
    assert inputs
    tol = {} if dtype != torch.bfloat16 else dict(rtol=2 ** -7, atol=2 ** -8)
    for mi in inputs:
        c, f = mi.constructor_input, mi.forward_input
        ours = gelu_fusion.GELU(*c.args, **c.kwargs)
        theirs = torch.nn.GELU(*c.args, **c.kwargs)
        assert repr(ours) == repr(theirs)
        got = ours(*f.args, **f.kwargs)
        torch.testing.assert_close(got, theirs(*f.args, **f.kwargs), **tol)
        if mi.reference_fn is not None:
            want = mi.reference_fn(ours, *f.args, **f.kwargs)
            torch.testing.assert_close(got, want, **tol)
        if dtype == torch.float64:
            x = f.args[0].detach().requires_grad_()
            assert gradcheck(ours, (x,), check_forward_ad=True)
            assert gradgradcheck(ours, (x,))


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(),
                    reason="PyTorch built without oneDNN")
def test_mkldnn_tensor():
    """test_mkldnn's gelu check: an mkldnn tensor in, one out, same values."""
    x = torch.randn(4, 5, dtype=torch.float32) * 10
    got = gelu_fusion.gelu(x.to_mkldnn())
    assert got.is_mkldnn
    torch.testing.assert_close(got.to_dense(), F.gelu(x))
    m = gelu_fusion.GELU()
    torch.testing.assert_close(m(x.to_mkldnn()).to_dense(), F.gelu(x))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16],
                         ids=lambda d: str(d)[6:])
def test_infinities_deliberately_differ(approximate, dtype):
    """At -inf PyTorch returns NaN (-inf * 0); ours is the limit, -0. At +inf
    ours is +inf; PyTorch 2.11's is +inf too except for the erf form in
    float32 and bfloat16, whose vectorized CPU kernel gives NaN (1.13 gave
    +inf). NaN stays NaN in both."""
    x = torch.tensor([-math.inf, math.inf, math.nan] * 8, dtype=dtype)
    ours = gelu_fusion.gelu(x, approximate)
    theirs = F.gelu(x, approximate=approximate)
    assert ours[0] == 0 and math.copysign(1.0, float(ours[0])) == -1.0
    assert torch.isnan(theirs[0])
    assert ours[1] == math.inf
    assert theirs[1] == math.inf or torch.isnan(theirs[1])
    assert torch.isnan(ours[2]) and torch.isnan(theirs[2])
