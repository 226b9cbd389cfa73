"""gelu_fusion.set_simd_target and GELU_SIMD_TARGET: every op can run on each
SIMD target this CPU runs (to measure or test a narrower CPU's code here),
each within the accuracy contract; a name this CPU or build lacks is refused
with the choices."""
import os
import subprocess
import sys

import pytest
import torch

import gelu_fusion
from conftest import assert_close, bound_ulps, ref_gelu


@pytest.fixture
def best_after():
    yield
    gelu_fusion.set_simd_target("best")


def test_the_chosen_target_is_listed_first():
    assert gelu_fusion.simd_targets()[0] == gelu_fusion.simd_target()


@pytest.mark.parametrize("form", ("none", "tanh", "quick"))
def test_each_target_runs_the_ops_within_the_contract(form, best_after):
    x = (torch.randn(61, 67) * 3).double()  # f32 values, some in the tail
    for name in gelu_fusion.simd_targets():
        gelu_fusion.set_simd_target(name.lower())
        assert gelu_fusion.simd_target() == name
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            xt = x.to(dtype)
            y = gelu_fusion.gelu(xt, approximate=form)
            ex = ref_gelu(xt.double(), form)
            assert_close(y, ex, ex, dtype, bound_ulps(dtype), f"{name} {form} {dtype}")
    gelu_fusion.set_simd_target("")
    assert gelu_fusion.simd_target() == gelu_fusion.simd_targets()[0]


def test_an_unknown_target_is_refused_with_the_choices(best_after):
    before = gelu_fusion.simd_target()
    with pytest.raises(ValueError, match="set_simd_target: target is 'avx9000'") as e:
        gelu_fusion.set_simd_target("avx9000")
    assert gelu_fusion.simd_targets()[0] in str(e.value)
    assert gelu_fusion.simd_target() == before


def _import_with(target):
    env = dict(os.environ, GELU_SIMD_TARGET=target)
    return subprocess.run([sys.executable, "-c",
                           "import gelu_fusion; print(gelu_fusion.simd_target())"],
                          env=env, capture_output=True, text=True, timeout=120)


def test_the_environment_variable_pins_the_target_at_import():
    last = gelu_fusion.simd_targets()[-1]
    r = _import_with(last)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == last
    r = _import_with("avx9000")
    assert r.returncode != 0 and "avx9000" in r.stderr
