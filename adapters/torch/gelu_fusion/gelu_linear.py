"""GELU -> Linear (and GeGLU -> Linear) as one autograd node that keeps the
pre-activation and never the GELU's output: activation memory saving.

In ``linear(gelu(h + b1), W2, b2)`` PyTorch keeps both h (for the GELU's
backward) and y = gelu(h + b1) (for W2's gradient). y is a pure function of
h, so this node keeps only h (and b1, W2), frees y right after the forward's
matmul and gets it back in the backward from the fused GELU backward pass,
which reads h once and writes dh, db1 and y together
(``torch.ops.gelu_fusion.bias_gelu_backward_and_value``). The results are
the same as the unfused modules', with the memory of one [..., hidden]
tensor less per block. The forward writes y, and the backward dh over its
own dY and y, into a per-thread buffer it reuses (workspace.py), so the
GELU passes touch no fresh [..., hidden] memory (GeGLU: the backward's y
over dY, its dh and the forward's y fresh).

    z = bias_gelu_linear(h, b1, W2, b2)   # h = x @ W1.T, its own autograd
    z = geglu_linear(x2h, W2, b2)         # linear(geglu(x2h), W2, b2)

``GeluLinear`` and ``GegluLinear`` wrap existing Linear modules (sharing
their Parameters). A backward with create_graph=True (double backward) or
with batched gradients (``is_grads_batched``, ``jacobian(vectorize=True)``)
computes its gradients from PyTorch's own ops instead, so that they are
differentiable and batch; tensors without a kernel (float64, other
devices), forward-mode AD and torch.func transforms (vmap, grad, jacrev)
compute the unfused composition, and ``torch.jit.trace`` records the fused
GELU op then the matmul (no autograd.Function to record).
"""
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import functional as _functional
from .functional import _composed_gelu, _on_kernel
from .modules import _check_approximate
from . import workspace

_ops = torch.ops.gelu_fusion


# gated: None for a GELU, else geglu's gelu_half ('first' or 'second').
def _value(h: Tensor, bias1: Optional[Tensor], approximate: str,
           gated: Optional[str]) -> Tensor:
    if gated:
        return _ops.geglu(h, approximate=approximate, gelu_half=gated)
    if bias1 is None:
        return _ops.gelu(h, approximate=approximate)
    return _ops.bias_gelu(h, bias1, approximate=approximate)


def _composed_value(h: Tensor, bias1: Optional[Tensor], approximate: str,
                    gated: Optional[str]) -> Tensor:
    """_value from PyTorch's ops (differentiable any number of times)."""
    if gated:
        a, b = h.chunk(2, dim=-1)
        if gated == "second":
            a, b = b, a
        return _composed_gelu(a, approximate) * b
    return _composed_gelu(h if bias1 is None else h + bias1, approximate)


def _composed_backward(ctx, dz):
    """The node's gradients as differentiable PyTorch ops, for a backward
    with create_graph=True, or one whose dz is batched (vmap over the
    backward: no out= op batches)."""
    h, bias1, weight2 = ctx.saved_tensors
    need_h, need_b1, need_w2, need_b2 = ctx.needs_input_grad[:4]
    create_graph = torch.is_grad_enabled()
    with torch.enable_grad():
        if not create_graph:  # a graph of its own, from these values
            h = h.detach().requires_grad_(need_h)
            bias1 = None if bias1 is None else bias1.detach().requires_grad_(need_b1)
        y = _composed_value(h, bias1, ctx.approximate, ctx.gated)
    wrt = [t for t, need in ((h, need_h), (bias1, need_b1)) if need]
    found = []
    if wrt:
        found = list(torch.autograd.grad(y, wrt, torch.matmul(dz, weight2),
                                         create_graph=create_graph))
    if not create_graph:
        y = y.detach()
    dh = found.pop(0) if need_h else None
    db1 = found.pop(0) if need_b1 else None
    dz2 = dz.reshape(-1, dz.shape[-1])
    dw2 = _weight_grad(dz2, y.reshape(-1, y.shape[-1]), weight2) if need_w2 else None
    db2 = _bias_grad(dz, dz2, ctx.bias2_shape) if need_b2 else None
    return dh, db1, dw2, db2, None, None


def _bias_grad(dz: Tensor, dz2: Tensor, shape) -> Tensor:
    """bias2's gradient in bias2's shape (a 2-D bias broadcasts in F.linear)."""
    if len(shape) == 1:
        return dz2.sum(0)
    return dz.sum_to_size(shape)


def _batched(t: Tensor) -> bool:
    """t is a torch.func wrapper (vmap's batched tensor, grad's tracking
    tensor) or autograd's batched gradient (is_grads_batched): no out=
    kernel call takes it."""
    fx = torch._C._functorch
    return fx.is_functorch_wrapped_tensor(t) or fx.is_legacy_batchedtensor(t)


def _weight_grad(dz2: Tensor, y2: Tensor, weight2: Tensor) -> Tensor:
    """dZ^T Y, laid out as weight2 is: for a transposed view (a Conv1D's
    weight.t(), the Parameter stored [in, out]) the product is computed as
    (Y^T dZ)^T, so the gradient reaching the Parameter through the transpose
    is contiguous and autograd keeps it as it is instead of copying it into
    the Parameter's layout."""
    if weight2.dim() == 2 and not weight2.is_contiguous() and weight2.t().is_contiguous():
        return y2.t().mm(dz2).t()
    return dz2.t().mm(y2)


def _traced(t: Tensor) -> bool:
    """torch.compile or make_fx is recording this code into a graph (fake
    or proxied tensors): what runs later is the graph, not this code."""
    from torch._subclasses.fake_tensor import is_fake
    from torch.fx.experimental.proxy_tensor import get_proxy_mode
    return (torch.compiler.is_compiling() or get_proxy_mode() is not None
            or is_fake(t))


class _ActivationLinear(torch.autograd.Function):
    """z = linear(act(h [+ bias1]), weight2, bias2); saves h, bias1, weight2."""

    @staticmethod
    def forward(ctx, h, bias1, weight2, bias2, approximate, gated):
        scratch = None
        if gated or _traced(h):
            y = _value(h, bias1, approximate, gated)
        else:
            # y only feeds the matmul (grad is off in here: it is not kept),
            # so it goes to this thread's reused buffer, as in the backward.
            y = scratch = workspace.take(h.shape, h)
            if bias1 is None:
                _ops.gelu.out(h, approximate=approximate, out=y)
            else:
                _ops.bias_gelu.out(h, bias1, approximate=approximate, out=y)
        z = F.linear(y, weight2, bias2)
        del y  # the matmul has consumed it; the backward recomputes it
        if scratch is not None:
            workspace.give_back(scratch)
        ctx.save_for_backward(h, bias1, weight2)
        ctx.approximate = approximate
        ctx.gated = gated
        ctx.bias2_shape = None if bias2 is None else bias2.shape
        return z

    @staticmethod
    def backward(ctx, dz):
        if torch.is_grad_enabled() or _batched(dz):  # create_graph / batched
            return _composed_backward(ctx, dz)
        h, bias1, weight2 = ctx.saved_tensors
        need_h, need_b1, need_w2, need_b2 = ctx.needs_input_grad[:4]
        a = ctx.approximate
        dh = db1 = dw2 = db2 = scratch = None
        dz2 = dz.reshape(-1, dz.shape[-1])
        traced = _traced(h)
        if need_h or need_b1:
            dy = torch.matmul(dz, weight2)
            # Traced (torch.compile): the functional ops below, no reused
            # buffer and no out= (the graph owns its memory).
            fits = not traced and dy.dtype == h.dtype and dy.is_contiguous()
            if fits and not ctx.gated:
                # dh in place over dY (this backward's own matmul temporary,
                # its pages already touched; dh is what leaves the node) and
                # y into this thread's reused buffer (y only feeds dW2
                # below): no fresh [..., hidden] buffer whose first touch
                # would fault inside the kernel (bench/fuse_bench.py
                # --backward-alone).
                y = scratch = workspace.take(h.shape, h)
                dh = dy  # written in place; the op returns what it did not write
                if bias1 is None:
                    _ops.gelu_backward_and_value.grad_x_out(dy, h, approximate=a,
                                                            grad_x=dy, y=y)
                else:
                    db1 = _ops.bias_gelu_backward_and_value.grad_x_out(
                        dy, h, bias1, approximate=a, grad_x=dy, y=y)
            elif fits:
                # geglu's dh is twice dY's size, so not in place: y is written
                # over dY, a temporary of its shape (no buffer for y).
                y = dy
                dh = _ops.geglu_backward_and_value.out(dy, h, approximate=a,
                                                       gelu_half=ctx.gated, y=y)
            elif ctx.gated:
                dh, y = _ops.geglu_backward_and_value(dy, h, approximate=a,
                                                      gelu_half=ctx.gated)
            elif bias1 is None:
                dh, y = _ops.gelu_backward_and_value(dy, h, approximate=a)
            else:
                dh, db1, y = _ops.bias_gelu_backward_and_value(dy, h, bias1, approximate=a)
            del dy
        elif need_w2:  # only W2's gradient: y alone, from the forward op
            y = _value(h, bias1, a, ctx.gated)
        if need_w2:
            dw2 = _weight_grad(dz2, y.reshape(-1, y.shape[-1]), weight2)
        if scratch is not None:
            del y
            workspace.give_back(scratch)
        if need_b2:
            db2 = _bias_grad(dz, dz2, ctx.bias2_shape)
        return (dh if need_h else None, db1 if need_b1 else None, dw2, db2, None, None)


def _fused_value(h: Tensor, bias1: Optional[Tensor], approximate: str,
                 gated: Optional[str]) -> Tensor:
    """_value through the public functions (their autograd, fallbacks)."""
    if gated:
        return _functional.geglu(h, approximate, gated)
    if bias1 is None:
        return _functional.gelu(h, approximate)
    return _functional.bias_gelu(h, bias1, approximate)


def _transformed(*ts) -> bool:
    """A torch.func transform wraps one of the tensors."""
    return any(t is not None and _batched(t) for t in ts)


def _apply(h, bias1, weight2, bias2, approximate, gated):
    _check_approximate(approximate)
    import torch.autograd.forward_ad as fwAD
    if torch._C._get_tracing_state() is not None and _on_kernel(h):
        return F.linear(_fused_value(h, bias1, approximate, gated), weight2, bias2)
    if (not _on_kernel(h) or fwAD._current_level >= 0
            or _transformed(h, bias1, weight2, bias2)):
        if bias1 is not None and bias1.dim() != 1:
            raise RuntimeError(f"gelu_fusion.bias_gelu_linear: bias1 has shape "
                               f"{list(bias1.shape)}, expected [{h.shape[-1]}]")
        return F.linear(_composed_value(h, bias1, approximate, gated), weight2, bias2)
    if torch.is_autocast_enabled("cpu"):
        # As autocast runs the unfused modules: the matmul in the autocast
        # dtype, the GELU in its input's dtype (h is the first Linear's
        # autocast output). The casts stay outside the node so their
        # gradients flow back to the f32 Parameters.
        t = torch.get_autocast_dtype("cpu")
        cast = lambda v: None if v is None else v.to(t)  # noqa: E731
        with torch.autocast("cpu", enabled=False):
            return _ActivationLinear.apply(cast(h), cast(bias1), cast(weight2),
                                           cast(bias2), approximate, gated)
    if bias1 is not None and bias1.dtype != h.dtype:
        bias1 = bias1.to(h.dtype)
    return _ActivationLinear.apply(h, bias1, weight2, bias2, approximate, gated)


def bias_gelu_linear(h: Tensor, bias1: Optional[Tensor], weight2: Tensor,
                     bias2: Optional[Tensor] = None, approximate: str = "none") -> Tensor:
    """linear(gelu(h + bias1), weight2, bias2), keeping h but not the GELU's
    output for the backward. bias1 (1-D, h's last dim) and bias2 may be None."""
    return _apply(h, bias1, weight2, bias2, approximate, None)


def geglu_linear(x: Tensor, weight2: Tensor, bias2: Optional[Tensor] = None,
                 approximate: str = "none", gelu_half: str = "first") -> Tensor:
    """linear(geglu(x), weight2, bias2), x [..., 2H] -> [..., out], keeping x
    but not geglu(x) for the backward. gelu_half as geglu's: 'second' is
    x[..., :H] * gelu(x[..., H:])."""
    if gelu_half not in ("first", "second"):
        raise ValueError(f"gelu_fusion.geglu_linear: gelu_half is {gelu_half!r}, "
                         "expected 'first' or 'second'")
    return _apply(x, None, weight2, bias2, approximate, gelu_half)


class GeluLinear(nn.Module):
    """fc2(gelu(fc1(x))) with the GELU's output not kept for the backward.

    fc1 runs as a bias-free matmul (its own autograd, its input kept as
    usual); its bias, the GELU and fc2 are one node (bias_gelu_linear).
    Wraps the given Linears' Parameters (shared, not copied): state_dict
    keys are ``fc1.*`` and ``fc2.*``.
    """

    def __init__(self, fc1: nn.Linear, fc2: nn.Linear, approximate: str = "none") -> None:
        super().__init__()
        _check_approximate(approximate)
        if fc2.in_features != fc1.out_features:
            raise ValueError(f"GeluLinear: fc2.in_features is {fc2.in_features}, expected "
                             f"{fc1.out_features} (fc1.out_features)")
        self.fc1, self.fc2, self.approximate = fc1, fc2, approximate

    @classmethod
    def from_modules(cls, fc1: nn.Linear, gelu: nn.Module, fc2: nn.Linear) -> "GeluLinear":
        """For fc1 -> gelu -> fc2 with gelu an nn.GELU or gelu_fusion.GELU
        (its `approximate` is kept): what a graph pass swaps the three for."""
        return cls(fc1, fc2, getattr(gelu, "approximate", "none"))

    def forward(self, x: Tensor) -> Tensor:
        h = F.linear(x, self.fc1.weight)
        return bias_gelu_linear(h, self.fc1.bias, self.fc2.weight, self.fc2.bias,
                                self.approximate)

    def extra_repr(self) -> str:
        return "approximate={}".format(repr(self.approximate))


class GegluLinear(nn.Module):
    """fc2(geglu(fc1(x))), fc1 projecting to 2H, with geglu's output not
    kept for the backward (geglu_linear). Shares the Linears' Parameters.
    gelu_half='second': the GELU on the second half of fc1's output."""

    def __init__(self, fc1: nn.Linear, fc2: nn.Linear, approximate: str = "none",
                 gelu_half: str = "first") -> None:
        super().__init__()
        _check_approximate(approximate)
        if fc1.out_features != 2 * fc2.in_features:
            raise ValueError(f"GegluLinear: fc1.out_features is {fc1.out_features}, "
                             f"expected {2 * fc2.in_features} (2 x fc2.in_features)")
        if gelu_half not in ("first", "second"):
            raise ValueError(f"GegluLinear: gelu_half is {gelu_half!r}, "
                             "expected 'first' or 'second'")
        self.fc1, self.fc2, self.approximate = fc1, fc2, approximate
        self.gelu_half = gelu_half

    def forward(self, x: Tensor) -> Tensor:
        return geglu_linear(self.fc1(x), self.fc2.weight, self.fc2.bias, self.approximate,
                            self.gelu_half)

    def extra_repr(self) -> str:
        s = "approximate={}".format(repr(self.approximate))
        return s + (", gelu_half='second'" if self.gelu_half == "second" else "")
