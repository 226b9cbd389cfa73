"""Misuse raises RuntimeError naming the op, the argument and what was
expected; the library's gelu::Error texts pass through."""
import pytest
import torch

import gelu_fusion


def raises(match):
    return pytest.raises(RuntimeError, match=match)


def test_dtype():
    with raises(r"gelu_fusion::gelu: x has dtype Double, expected Float, "
                r"BFloat16 or Half"):
        gelu_fusion.gelu(torch.zeros(3, dtype=torch.float64))
    with raises(r"x has dtype Int, expected"):
        gelu_fusion.gelu(torch.zeros(3, dtype=torch.int32))
    with raises(r"bias_gelu: bias has dtype bf16, expected f32 \(the dtype of x\)"):
        gelu_fusion.bias_gelu(torch.zeros(2, 3), torch.zeros(3, dtype=torch.bfloat16))
    with raises(r"add_gelu: b has dtype f16, expected f32"):
        gelu_fusion.add_gelu(torch.zeros(3), torch.zeros(3, dtype=torch.float16))


def test_device():
    with raises(r"gelu_fusion::gelu: x is on meta, expected a CPU tensor"):
        gelu_fusion.gelu(torch.zeros(3, device="meta"))
    with raises(r"bias_gelu: bias is on meta, expected a CPU tensor"):
        gelu_fusion.bias_gelu(torch.zeros(2, 3), torch.zeros(3, device="meta"))


def test_layout():
    with raises(r"expected a strided"):
        gelu_fusion.gelu(torch.zeros(3, 3).to_sparse())


def test_shapes():
    with raises(r"gelu_fusion::bias_gelu: bias has shape \[5\], expected \[6\] "
                r"\(the last dimension of x\)"):
        gelu_fusion.bias_gelu(torch.zeros(2, 6), torch.zeros(5))
    with raises(r"bias_gelu: bias has shape \[2, 6\], expected \[6\]"):
        gelu_fusion.bias_gelu(torch.zeros(2, 6), torch.zeros(2, 6))
    with raises(r"bias_gelu: x has shape \[\], expected at least one dimension"):
        gelu_fusion.bias_gelu(torch.tensor(1.0), torch.zeros(1))
    with raises(r"add_gelu: b has shape \[3\], expected \[2, 3\]"):
        gelu_fusion.add_gelu(torch.zeros(2, 3), torch.zeros(3))
    with raises(r"geglu: x has shape \[4, 5\], expected an even last dimension"):
        gelu_fusion.geglu(torch.zeros(4, 5))
    with raises(r"geglu: x has shape \[\], expected at least one dimension"):
        gelu_fusion.geglu(torch.tensor(1.0))
    with raises(r"gelu_backward: dy has shape \[2\], expected \[3\]"):
        torch.ops.gelu_fusion.gelu_backward(torch.zeros(2), torch.zeros(3))


def test_approximate():
    with raises(r"gelu_fusion::gelu: approximate is 'erf', expected 'none', "
                r"'tanh' or 'quick'"):
        gelu_fusion.gelu(torch.zeros(3), approximate="erf")
    with pytest.raises(ValueError, match="expected 'none', 'tanh' or 'quick'"):
        gelu_fusion.GELU("sigmoid")


def test_errors_leave_no_graph_behind():
    x = torch.zeros(2, 6, requires_grad=True)
    with raises("bias_gelu"):
        gelu_fusion.bias_gelu(x, torch.zeros(5, requires_grad=True))
    assert x.grad is None
