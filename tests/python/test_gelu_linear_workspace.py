"""The memory-saving node's buffers: dh written over the node's own dY (the
*_and_value.grad_x_out overloads) and y, forward and backward, in a
per-thread reused buffer (gelu_fusion.workspace). dh leaves the node, so it must never be a
buffer that is reused: checked through hooks and retain_grad over layers,
steps, retain_graph, threads; the buffer itself is checked to be reused and
fully rewritten.
"""
import copy
import threading

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import gelu_fusion
from gelu_fusion import workspace

ops = torch.ops.gelu_fusion


def two_layers(seed, bias1=True):
    """Two Linear -> GELU -> Linear blocks, as Sequential (PyTorch's modules)."""
    torch.manual_seed(seed)
    d, hid = 12, 40
    return nn.Sequential(nn.Linear(d, hid, bias=bias1), nn.GELU(approximate="tanh"),
                         nn.Linear(hid, d), nn.Linear(d, hid, bias=bias1),
                         nn.GELU(approximate="tanh"), nn.Linear(hid, d))


def forward(model, x, fused, keep_h):
    """The two blocks with h (the first Linear's output before its bias,
    what the node receives) exposed: keep_h(h) is called on each."""
    out = x
    for i in (0, 3):
        fc1, fc2 = model[i], model[i + 2]
        h = F.linear(out, fc1.weight)
        keep_h(h)
        if fused:
            out = gelu_fusion.bias_gelu_linear(h, fc1.bias, fc2.weight, fc2.bias, "tanh")
        else:
            b = fc1.bias
            out = fc2(F.gelu(h if b is None else h + b, approximate="tanh"))
    return out


def grads(model):
    return [p.grad.clone() for p in model.parameters()]


def run_steps(model, xs, dzs, fused):
    """Steps of forward + backward; returns per step the parameter grads,
    the dh each hook saw (the very tensor, not a copy) and each h's
    retained grad."""
    steps = []
    for x, dz in zip(xs, dzs):
        model.zero_grad(set_to_none=True)
        seen, hs = [], []

        def keep_h(h):
            h.retain_grad()
            h.register_hook(seen.append)
            hs.append(h)

        forward(model, x, fused, keep_h).backward(dz)
        steps.append((grads(model), seen, [h.grad for h in hs]))
    return steps


@pytest.mark.parametrize("bias1", [True, False])
def test_dh_seen_by_hooks_is_never_reused(bias1):
    """Hooks on h keep the dh tensors themselves; after two layers and
    three steps (every later backward reusing the node's buffer) each is
    still the unfused model's, and no two share memory."""
    ref = two_layers(0, bias1)
    fused = two_layers(0, bias1)
    xs = [torch.randn(3, 5, 12) for _ in range(3)]
    dzs = [torch.randn(3, 5, 12) for _ in range(3)]
    want = run_steps(ref, xs, dzs, fused=False)
    got = run_steps(fused, xs, dzs, fused=True)
    ptrs = set()
    for (gp, seen, retained), (wp, wseen, wretained) in zip(got, want):
        for a, b in zip(gp, wp):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        assert len(seen) == len(wseen) == 2
        for a, b in zip(seen + retained, wseen + wretained):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        ptrs.update(t.data_ptr() for t in seen)
    assert len(ptrs) == 6  # 2 layers x 3 steps, all alive, all distinct
    buf = workspace.cached(torch.float32)
    assert buf is not None
    lo, hi = buf.data_ptr(), buf.data_ptr() + buf.numel() * buf.element_size()
    assert not any(lo <= p < hi for p in ptrs)


def test_retain_graph_second_backward_identical():
    """backward(retain_graph=True) twice: the second adds exactly the first's
    gradients (h, b1, W2, b2 kept intact by the first)."""
    torch.manual_seed(2)
    h = (torch.randn(6, 32) * 2).requires_grad_()
    b1, w2, b2 = (torch.randn(32).requires_grad_(), (torch.randn(9, 32) / 6).requires_grad_(),
                  torch.randn(9).requires_grad_())
    z = gelu_fusion.bias_gelu_linear(h, b1, w2, b2, "none")
    dz = torch.randn(6, 9)
    z.backward(dz, retain_graph=True)
    first = [t.grad.clone() for t in (h, b1, w2, b2)]
    z.backward(dz)
    for t, g in zip((h, b1, w2, b2), first):
        assert torch.equal(t.grad, 2 * g)


def test_create_graph_gives_the_same_first_gradients():
    torch.manual_seed(3)
    ts = [(torch.randn(4, 16) * 2).requires_grad_(), torch.randn(16).requires_grad_(),
          (torch.randn(5, 16) / 4).requires_grad_(), torch.randn(5).requires_grad_()]
    dz = torch.randn(4, 5)
    z = gelu_fusion.bias_gelu_linear(*ts, "tanh")
    plain = torch.autograd.grad(z, ts, dz, retain_graph=True)
    created = torch.autograd.grad(z, ts, dz, create_graph=True)
    for a, b in zip(plain, created):
        torch.testing.assert_close(a, b.detach(), rtol=1e-5, atol=1e-5)


def test_buffer_is_reused_and_fully_rewritten():
    """The second backward uses the same buffer (same data_ptr), filled with
    NaN in between: the gradients are still the unfused model's, so every
    element of y was written. A smaller call reuses it; a larger one grows
    it; empty_cache frees it."""
    gelu_fusion.empty_cache()
    assert workspace.cached(torch.float32) is None
    ref, fused = two_layers(4), two_layers(4)

    def check(x, dz):
        want = run_steps(ref, [x], [dz], fused=False)[0][0]
        got = run_steps(fused, [x], [dz], fused=True)[0][0]
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)

    check(torch.randn(10, 12), torch.randn(10, 12))
    buf = workspace.cached(torch.float32)
    assert buf is not None and buf.numel() == 10 * 40
    ptr = buf.data_ptr()
    buf.fill_(float("nan"))
    check(torch.randn(10, 12), torch.randn(10, 12))
    check(torch.randn(3, 12), torch.randn(3, 12))
    assert workspace.cached(torch.float32).data_ptr() == ptr
    check(torch.randn(30, 12), torch.randn(30, 12))
    assert workspace.cached(torch.float32).numel() == 30 * 40
    gelu_fusion.empty_cache()
    assert workspace.cached(torch.float32) is None
    check(torch.randn(7, 12), torch.randn(7, 12))


def test_buffers_per_dtype_and_nested_takes():
    like = torch.empty(0)
    gelu_fusion.empty_cache()
    a = workspace.take([4, 5], like)
    b = workspace.take([4, 5], like)  # a is in use: a separate buffer
    assert a.data_ptr() != b.data_ptr() and a.shape == (4, 5) and a.is_contiguous()
    workspace.give_back(b)
    workspace.give_back(a)
    c = workspace.take([2, 3], torch.empty(0, dtype=torch.bfloat16))
    assert c.dtype == torch.bfloat16
    workspace.give_back(c)
    assert workspace.cached(torch.float32).data_ptr() in (a.data_ptr(), b.data_ptr())
    assert workspace.cached(torch.bfloat16).data_ptr() == c.data_ptr()
    gelu_fusion.empty_cache()


def test_two_threads_backward_concurrently():
    """Each thread trains its own model copy on its own batches, at the same
    time; every step's gradients and hook-seen dh match the unfused model's
    computed on this thread, and the threads' buffers are distinct."""
    n_steps = 8
    ref = two_layers(5)
    batches = [[(torch.randn(16, 12), torch.randn(16, 12)) for _ in range(n_steps)]
               for _ in range(2)]
    want = [run_steps(ref, [x for x, _ in b], [d for _, d in b], fused=False)
            for b in batches]
    results, ptrs, errors = [None, None], [None, None], []
    models = [copy.deepcopy(ref) for _ in range(2)]
    start = threading.Barrier(2)

    def work(i):
        try:
            model = models[i]
            start.wait()
            results[i] = run_steps(model, [x for x, _ in batches[i]],
                                   [d for _, d in batches[i]], fused=True)
            ptrs[i] = workspace.cached(torch.float32).data_ptr()
        except Exception as e:  # reported on the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert ptrs[0] != ptrs[1]
    for got_steps, want_steps in zip(results, want):
        for (gp, seen, _), (wp, wseen, _) in zip(got_steps, want_steps):
            for a, b in zip(gp + seen, wp + wseen):
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16))
@pytest.mark.parametrize("in_place", [True, False])
def test_grad_x_out_ops_match_functional(dtype, in_place):
    """grad_x over grad_output or into a separate NaN-filled tensor, y into a
    NaN-filled one: bit for bit the functional ops' results, every element
    written."""
    torch.manual_seed(6)
    h, b = (torch.randn(5, 7, 33) * 3).to(dtype), torch.randn(33).to(dtype)
    dy = torch.randn(5, 7, 33).to(dtype)
    nan = lambda: torch.full(h.shape, float("nan"), dtype=dtype)  # noqa: E731
    for with_bias in (True, False):
        if with_bias:
            want = ops.bias_gelu_backward_and_value(dy, h, b, approximate="tanh")
        else:
            want = ops.gelu_backward_and_value(dy, h, approximate="tanh")
        g = dy.clone()
        dx, y = (g if in_place else nan()), nan()
        if with_bias:
            # Returns what it did not write into an argument: grad_bias.
            got_db = ops.bias_gelu_backward_and_value.grad_x_out(
                g, h, b, approximate="tanh", grad_x=dx, y=y)
            assert torch.equal(got_db, want[1])
        else:
            assert ops.gelu_backward_and_value.grad_x_out(
                g, h, approximate="tanh", grad_x=dx, y=y) is None
        assert torch.equal(dx, want[0]) and torch.equal(y, want[-1])


def test_grad_x_out_errors_leave_outputs_untouched():
    dy, h, b = torch.randn(3, 4), torch.randn(3, 4), torch.randn(4)
    cases = [
        (dict(grad_x=torch.zeros(3, 5), y=torch.zeros(3, 4)),
         r"bias_gelu_backward_and_value: grad_x has shape \[3, 5\], expected a "
         r"contiguous tensor of shape \[3, 4\]"),
        (dict(grad_x=torch.zeros(4, 3).t(), y=torch.zeros(3, 4)),
         r"grad_x has shape \[3, 4\] \(not contiguous\)"),
        (dict(grad_x=torch.zeros(3, 4, dtype=torch.bfloat16), y=torch.zeros(3, 4)),
         "grad_x has dtype BFloat16, expected Float"),
        (dict(grad_x=torch.zeros(3, 4), y=torch.zeros(12)),
         r"y has shape \[12\], expected a contiguous tensor of shape \[3, 4\]"),
        (dict(grad_x=torch.zeros(3, 4), y=torch.zeros(3, 4).double()),
         "y has dtype Double, expected Float"),
    ]
    for kw, msg in cases:
        for with_bias in (True, False):
            before = [t.clone() for t in kw.values()]
            with pytest.raises(RuntimeError, match=msg.replace("bias_gelu", "gelu")
                               if not with_bias else msg):
                if with_bias:
                    ops.bias_gelu_backward_and_value.grad_x_out(dy, h, b, **kw)
                else:
                    ops.gelu_backward_and_value.grad_x_out(dy, h, **kw)
            for t, t0 in zip(kw.values(), before):
                assert torch.equal(t, t0)
    # grad_x and y in one buffer: the library's overlap check, nothing written.
    buf = torch.zeros(3, 4)
    with pytest.raises(RuntimeError, match="overlaps"):
        ops.gelu_backward_and_value.grad_x_out(dy, h, grad_x=buf, y=buf)
    assert torch.equal(buf, torch.zeros(3, 4))
    with pytest.raises(RuntimeError, match="bias_gelu_backward_and_value: x has dtype"):
        ops.bias_gelu_backward_and_value.grad_x_out(dy, h.double(), b, grad_x=buf, y=buf)


def test_inference_mode_first_then_training():
    """A forward under inference_mode caches no inference tensor: a training
    step afterwards (which writes the buffer) still works and matches."""
    gelu_fusion.empty_cache()
    ref, fused = two_layers(7), two_layers(7)
    x = torch.randn(6, 12)
    with torch.inference_mode():
        z = forward(fused, x, True, lambda h: None)
        torch.testing.assert_close(z, forward(ref, x, False, lambda h: None),
                                   rtol=1e-5, atol=1e-5)
    assert workspace.cached(torch.float32) is None
    dz = torch.randn(6, 12)
    want = run_steps(ref, [x], [dz], fused=False)[0][0]
    got = run_steps(fused, [x], [dz], fused=True)[0][0]
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
