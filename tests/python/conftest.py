"""Shared helpers for the adapter's tests: float64 references of every form
(written to be right in the negative tail), the library's accuracy contract
in ULPs, and inputs that reach the tail and the derivative's root.

Every test runs with the extension's output poisoning on: outputs are filled
with NaN before a kernel writes them, so an element never written fails the
comparison (inputs here are finite unless a test says otherwise).
"""
import math

import pytest
import torch

import gelu_fusion  # noqa: F401  (registers torch.ops.gelu_fusion)

FORMS = ("none", "tanh", "quick")
DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# Shapes: 0-d, empty, size 1, odd and prime sizes, one row, many rows.
SHAPES = ((), (0,), (1,), (7,), (3, 0), (0, 4), (1, 1), (13, 17), (1, 1031),
          (257, 3), (5, 2, 9), (37, 1))

_BITS = {torch.float32: (23, -126), torch.bfloat16: (7, -126),
         torch.float16: (10, -14)}
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715
_QUICK = 1.702
F32_SUBNORMAL = 2.0 ** -149


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: compiles with Inductor or trains whole models (seconds "
        "each); `pytest -m 'not slow'` leaves them out")


@pytest.fixture(autouse=True, scope="session")
def poison_outputs():
    was = torch.ops.gelu_fusion._set_poison_outputs(True)
    yield
    torch.ops.gelu_fusion._set_poison_outputs(was)


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(1234)


def inputs(shape, dtype, scale=3.0, seed=0):
    """Mostly N(0, scale); one in 8 in the tail [-15, -3), one in 8 near
    gelu's minimum (-0.9, -0.6), where the derivative crosses zero."""
    g = torch.Generator().manual_seed(seed)
    n = torch.randn(shape, generator=g, dtype=torch.float64) * scale
    tail = -3.0 - 12.0 * torch.rand(shape, generator=g, dtype=torch.float64)
    root = -0.9 + 0.3 * torch.rand(shape, generator=g, dtype=torch.float64)
    pick = torch.randint(0, 8, shape, generator=g)
    x = torch.where(pick == 0, tail, torch.where(pick == 1, root, n))
    return x.to(dtype)


def ref_gelu(z, form):
    """gelu(z) in float64, differentiable; erfc and sigmoid forms keep the
    negative tail exact (1 + erf(z/sqrt 2) would cancel to 0)."""
    if form == "none":
        return z * 0.5 * torch.special.erfc(-z * _SQRT1_2)
    if form == "tanh":
        u = _SQRT_2_OVER_PI * (z + _TANH_CUBIC * z ** 3)
        return z * torch.sigmoid(2.0 * u)
    return z * torch.sigmoid(_QUICK * z)


def grad_terms_abs(z, form):
    """|t1| + |t2| of gelu'(z) = t1 + t2: the scale of the backward bound."""
    if form == "none":
        t1 = 0.5 * torch.special.erfc(-z * _SQRT1_2)
        t2 = z * torch.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    elif form == "tanh":
        u = _SQRT_2_OVER_PI * (z + _TANH_CUBIC * z ** 3)
        s = torch.sigmoid(2.0 * u)
        du = _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_CUBIC * z * z)
        t1, t2 = s, z * 2.0 * du * s * torch.sigmoid(-2.0 * u)
    else:
        s = torch.sigmoid(_QUICK * z)
        t1, t2 = s, z * _QUICK * s * torch.sigmoid(-_QUICK * z)
    return t1.abs() + t2.nan_to_num(0.0).abs()


def ulp(dtype, v):
    """Spacing of `dtype`'s numbers at |v| (float64 tensor in and out)."""
    mant, min_exp = _BITS[dtype]
    a = v.abs()
    _, e = torch.frexp(a)
    e = torch.where((a > 0) & torch.isfinite(a), e - 1, torch.full_like(e, min_exp))
    return torch.ldexp(torch.ones_like(a), (e.clamp(min=min_exp) - mant))


def bound_ulps(dtype, extra=0.0):
    """The contract: f32 within 2 ULP (+ extra for a fused product's
    rounding), bf16 and f16 within 1 ULP of their storage format."""
    return 2.0 + extra if dtype == torch.float32 else 1.0


def assert_close(got, exact, scale, dtype, bound, what, factor=1.0):
    """|got - exact| <= bound * unit everywhere, unit = ulp(dtype, scale) but
    never below |factor| * 2^-149: `factor` is what an f32 intermediate
    (gelu' in a backward, gelu(a) in GeGLU) is multiplied by, and where that
    intermediate is subnormal it carries up to its bound in subnormal
    spacings (the contract of tests/test_support.hpp). NaN must match NaN
    and infinities match exactly."""
    assert got.shape == exact.shape, f"{what}: shape {got.shape} vs {exact.shape}"
    g = got.double()
    nan_ok = torch.isnan(exact) == torch.isnan(g)
    assert bool(nan_ok.all()), f"{what}: NaN mismatch (unwritten output?)"
    fin = torch.isfinite(exact)
    assert bool((g[~fin & ~torch.isnan(exact)] == exact[~fin & ~torch.isnan(exact)]).all()), \
        f"{what}: infinity mismatch"
    factor = torch.as_tensor(factor, dtype=torch.float64).abs()
    unit = torch.maximum(ulp(dtype, scale), factor * F32_SUBNORMAL)
    err = ((g - exact).abs() / unit).where(fin, torch.zeros_like(g))
    if err.numel() == 0:
        return
    i = int(err.reshape(-1).argmax())
    worst = float(err.reshape(-1)[i])
    assert worst <= bound, (
        f"{what}: worst error {worst:.3f} ulp > {bound} at flat index {i}: "
        f"got {float(g.reshape(-1)[i])!r}, exact {float(exact.reshape(-1)[i])!r}, "
        f"scale {float(scale.reshape(-1)[i])!r}")
