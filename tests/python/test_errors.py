"""Misuse raises RuntimeError naming the op, the argument and what was
expected; the library's gelu::Error texts pass through."""
import pytest
import torch

import gelu_fusion


def raises(match):
    return pytest.raises(RuntimeError, match=match)


def test_dtype():
    """The ops keep their errors; the Python functions fall back to
    PyTorch's composition instead (tests/python/test_dropin_fallbacks.py)."""
    ops = torch.ops.gelu_fusion
    with raises(r"gelu_fusion::gelu: x has dtype Double, expected Float, "
                r"BFloat16 or Half"):
        ops.gelu(torch.zeros(3, dtype=torch.float64))
    with raises(r"x has dtype Int, expected"):
        ops.gelu(torch.zeros(3, dtype=torch.int32))
    with raises(r"bias_gelu: bias has dtype bf16, expected f32 \(the dtype of x\)"):
        ops.bias_gelu(torch.zeros(2, 3), torch.zeros(3, dtype=torch.bfloat16))
    with raises(r"add_gelu: b has dtype f16, expected f32"):
        ops.add_gelu(torch.zeros(3), torch.zeros(3, dtype=torch.float16))
    # No kernel and no composition either: PyTorch's own error.
    with raises(r"not implemented for 'Int'"):
        gelu_fusion.gelu(torch.zeros(3, dtype=torch.int32))


def test_device():
    ops = torch.ops.gelu_fusion
    # Meta tensors run the fake kernel: shapes and dtypes, no data.
    y = ops.geglu(torch.zeros(4, 6, dtype=torch.bfloat16, device="meta"))
    assert y.device.type == "meta" and y.shape == (4, 3) and y.dtype == torch.bfloat16
    with raises(r"bias_gelu: bias is on meta, expected cpu \(the device of x\)"):
        ops.bias_gelu(torch.zeros(2, 3), torch.zeros(3, device="meta"))
    with raises(r"bias_gelu: bias has shape \[4\], expected \[3\]"):
        ops.bias_gelu(torch.zeros(2, 3, device="meta"), torch.zeros(4, device="meta"))


def test_layout():
    with raises(r"expected a strided"):
        torch.ops.gelu_fusion.gelu(torch.zeros(3, 3).to_sparse())
    # The function behaves as F.gelu does on a layout it has no kernel for.
    with pytest.raises(NotImplementedError, match="SparseCPU"):
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
        torch.ops.gelu_fusion.add_gelu(torch.zeros(2, 3), torch.zeros(3))
    # The function broadcasts as a + b does, with a + b's error otherwise.
    with raises(r"must match the size of tensor b"):
        gelu_fusion.add_gelu(torch.zeros(2, 3), torch.zeros(4))
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


def test_storage_resized_under_the_tensor():
    """A tensor whose storage was resized smaller after it was made (FSDP
    frees parameters so) raises instead of letting a kernel read or write
    past the storage (PyTorch's own kernels crash on it)."""
    ops = torch.ops.gelu_fusion
    freed = torch.zeros(4, 6)
    freed.untyped_storage().resize_(0)
    with raises(r"gelu_fusion::gelu: x has shape \[4, 6\] and needs 96 bytes of its "
                r"storage, which holds 0"):
        gelu_fusion.gelu(freed)
    short = torch.zeros(1 << 20)
    short.untyped_storage().resize_(16)
    with raises(r"bias_gelu: bias has shape \[1048576\] and needs 4194304 bytes"):
        ops.bias_gelu(torch.zeros(2, 1 << 20), short)
    with raises(r"gelu_fusion::gelu: out has shape \[1048576\] and needs"):
        ops.gelu(torch.zeros(1 << 20), out=short)
    # A strided view: its last element decides.
    view = torch.zeros(8, 8)[:, ::2]
    view.untyped_storage().resize_(4 * 60)
    with raises(r"needs 252 bytes of its storage, which holds 240"):
        ops.gelu(view)
