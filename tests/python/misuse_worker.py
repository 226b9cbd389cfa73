"""Runs every misuse case of the adapter in this process, one after the other
(test_no_crash.py runs it in a subprocess and fails on a signal).

Prints one line per case, flushed before the case runs and after it:
    start NAME
    raised NAME TYPE MESSAGE   (an Exception: what a misuse must give)
    returned NAME              (the case was valid after all)
so that a crash names the case it died in; then "done N cases", or the
cases whose outcome was wrong and exit status 3: each case expects to
return (valid calls), to raise (arguments no call can accept: a freed or
shrunk storage, None for a tensor, a number, a bad string) or either. The
cases:
  - every overload of every op in torch.ops.gelu_fusion (from its schema),
    first with valid arguments (which must return), then with one argument
    replaced at a time: another dtype, device, layout, rank or shape, a
    non-contiguous, expanded, overlapping or aliased tensor, a tensor whose
    storage was freed or shrunk after it was made, one that requires grad,
    an inference tensor, None, a number; and a bad string for each str
  - the Python functions, modules and passes with the same replacements.
"""
import sys
import traceback

import torch
from torch import nn

import gelu_fusion

ops = torch.ops.gelu_fusion
R, C = 4, 6  # rows, last dimension of the base tensors (geglu: halves of C // 2)
BIG = 1 << 22  # elements of the tensors whose storage is shrunk (16 MiB: mmap'd)


def shrunk(shape, nbytes):
    """A tensor of `shape` whose storage was resized to nbytes afterwards
    (FSDP frees parameters this way): its data pointer is null (0) or points
    at a block smaller than its elements."""
    t = torch.zeros(shape)
    t.untyped_storage().resize_(nbytes)
    return t


def shape_of(op, name, rows=R, cols=C):
    """The valid shape of argument `name` of `op` (op name without overload)."""
    geglu = op.startswith("geglu") or op.startswith("_geglu")
    half = (rows, cols // 2)
    full = (rows, cols)
    if name in ("bias", "grad_bias"):
        return (cols,)
    if name == "grad_output":
        return half if geglu else full
    if name == "out":
        return half if op == "geglu" else full
    if name == "y":
        return half if geglu else full
    return full  # x, a, b, grad_x


def replacements(shape):
    """(label, factory) of the wrong arguments for a tensor of `shape`."""
    n = 1
    for s in shape:
        n *= s
    big = (BIG // shape[-1], shape[-1]) if len(shape) == 2 else (BIG,)
    r = [
        ("float64", lambda: torch.zeros(shape, dtype=torch.float64)),
        ("int32", lambda: torch.zeros(shape, dtype=torch.int32)),
        ("bool", lambda: torch.zeros(shape, dtype=torch.bool)),
        ("complex64", lambda: torch.zeros(shape, dtype=torch.complex64)),
        ("meta", lambda: torch.zeros(shape, device="meta")),
        ("sparse", lambda: torch.zeros(shape).to_sparse()),
        ("0-d", lambda: torch.tensor(1.0)),
        ("wrong size", lambda: torch.zeros(shape[:-1] + (shape[-1] + 1,))),
        ("extra dim", lambda: torch.zeros((2,) + shape)),
        ("empty", lambda: torch.zeros((0,) + shape[1:])),
        ("non-contiguous", lambda: torch.zeros(shape[::-1]).t() if len(shape) == 2
         else torch.zeros(2 * shape[0])[::2]),
        ("expanded", lambda: torch.zeros(shape[-1]).expand(shape)),
        ("storage freed", lambda: shrunk(shape, 0)),
        ("storage shrunk", lambda: shrunk(big, 8)),
        ("requires grad", lambda: torch.zeros(shape, requires_grad=True)),
        ("None", lambda: None),
        ("number", lambda: 1.5),
        ("bf16", lambda: torch.zeros(shape, dtype=torch.bfloat16)),
    ]
    if torch.backends.mkldnn.is_available() and len(shape) == 2:
        r.append(("mkldnn", lambda: torch.zeros(shape).to_mkldnn()))
    return r


def inference_tensor(shape):
    with torch.inference_mode():
        return torch.zeros(shape)


def run(name, fn):
    print("start", name, flush=True)
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - any Exception is the right outcome
        msg = str(e).splitlines()[0][:120] if str(e) else ""
        print("raised", name, type(e).__name__, msg, flush=True)
        return True
    print("returned", name, flush=True)
    return False


def op_cases():
    for s in torch._C._jit_get_all_schemas():
        if not s.name.startswith("gelu_fusion::"):
            continue
        op = s.name.split("::")[1]
        if op in ("simd_target", "simd_targets", "set_simd_target",
                  "_set_poison_outputs"):
            continue  # process-wide settings, not tensor ops: function_cases
        overload = s.overload_name
        packet = getattr(ops, op)
        fn = getattr(packet, overload) if overload else packet.default
        label = op + ("." + overload if overload else "")
        args = [(a.name, str(a.type), a.kwarg_only) for a in s.arguments]

        def call(values, fn=fn, args=args):
            pos = [values[n] for n, _, kw in args if not kw]
            kws = {n: values[n] for n, _, kw in args if kw}
            return fn(*pos, **kws)

        def base(op=op, args=args):
            v = {}
            for n, t, _ in args:
                if t == "Tensor":
                    v[n] = torch.randn(shape_of(op, n))
                else:
                    v[n] = "first" if n == "gelu_half" else "none"
            return v

        yield label + " valid", (lambda call=call, base=base: call(base())), "return"
        for n, t, _ in args:
            if t == "Tensor":
                for what, make in replacements(shape_of(op, n)):
                    def case(call=call, base=base, n=n, make=make):
                        v = base()
                        v[n] = make()
                        call(v)
                    yield f"{label} {n}={what}", case, _expect(what)

                def infer(call=call, base=base, n=n, op=op):
                    v = base()
                    v[n] = inference_tensor(shape_of(op, n))
                    v = {k: (t.requires_grad_() if isinstance(t, torch.Tensor) and k != n
                             and t.is_floating_point() else t) for k, t in v.items()}
                    call(v)
                yield f"{label} {n}=inference tensor", infer, "any"
                # Aliasing: this argument is another tensor argument (the
                # same tensor, or an overlapping view of it).
                for m, t2, _ in args:
                    if m == n or t2 != "Tensor":
                        continue

                    def alias(call=call, base=base, n=n, m=m):
                        v = base()
                        v[n] = v[m]
                        call(v)

                    def overlap(call=call, base=base, n=n, m=m, op=op):
                        v = base()
                        src = torch.randn(2 * 64 * 64)
                        v[m] = src[: _numel(shape_of(op, m))].view(shape_of(op, m))
                        v[n] = src[1: 1 + _numel(shape_of(op, n))].view(shape_of(op, n))
                        call(v)
                    yield f"{label} {n}={m}", alias, "any"
                    yield f"{label} {n} overlaps {m}", overlap, "any"
            else:
                for what in ("bogus", "", "NONE", None, 3):
                    def case(call=call, base=base, n=n, what=what):
                        v = base()
                        v[n] = what
                        call(v)
                    yield f"{label} {n}={what!r}", case, "raise"


# Tensor replacements no call can accept.
_ALWAYS_WRONG = ("storage freed", "storage shrunk", "None", "number")


def _expect(what, may_be_none=False, may_be_number=False):
    if (what == "None" and may_be_none) or (what == "number" and may_be_number):
        return "any"
    return "raise" if what in _ALWAYS_WRONG else "any"


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def function_cases():
    gf = gelu_fusion
    full, bias = (R, C), (C,)
    fns = {
        "gelu": (lambda x: gf.gelu(x), {"x": full}),
        "gelu(tanh)": (lambda x: gf.gelu(x, "tanh"), {"x": full}),
        "bias_gelu": (lambda x, bias: gf.bias_gelu(x, bias), {"x": full, "bias": bias}),
        "add_gelu": (lambda a, b: gf.add_gelu(a, b, "quick"), {"a": full, "b": full}),
        "geglu": (lambda x: gf.geglu(x), {"x": full}),
        "geglu(second)": (lambda x: gf.geglu(x, "tanh", "second"), {"x": full}),
        "GELU()": (lambda x: gf.GELU()(x), {"x": full}),
        "bias_gelu_linear": (lambda h, b1, w2: gf.bias_gelu_linear(h, b1, w2),
                             {"h": full, "b1": bias, "w2": (3, C)}),
        "geglu_linear": (lambda x, w2, b2: gf.geglu_linear(x, w2, b2),
                         {"x": full, "w2": (3, C // 2), "b2": (3,)}),
    }
    for label, (fn, shapes) in fns.items():
        def valid(fn=fn, shapes=shapes):
            v = {k: torch.randn(s, requires_grad=True) for k, s in shapes.items()}
            fn(**v).sum().backward()
        yield label + " valid", valid, "return"
        for n, shape in shapes.items():
            for what, make in replacements(shape):
                def case(fn=fn, shapes=shapes, n=n, make=make):
                    v = {k: torch.randn(s, requires_grad=True) for k, s in shapes.items()}
                    v[n] = make()
                    y = fn(**v)
                    if isinstance(y, torch.Tensor) and y.requires_grad:
                        y.sum().backward()
                # bias_gelu_linear's b1, geglu_linear's b2 may be None;
                # add_gelu's a and b may be numbers (they add as a + b).
                yield f"{label} {n}={what}", case, _expect(
                    what, n in ("b1", "b2"), label == "add_gelu")
    for what in ("bogus", "", None, 3):
        yield f"gelu approximate={what!r}", (
            lambda w=what: gf.gelu(torch.zeros(3), w)), "raise"
        yield f"geglu gelu_half={what!r}", (
            lambda w=what: gf.geglu(torch.zeros(2, 4), "none", w)), "raise"
        yield f"GELU({what!r})", (lambda w=what: gf.GELU(w)), "raise"
        yield f"GeluLinear approximate={what!r}", (
            lambda w=what: gf.GeluLinear(nn.Linear(3, 4), nn.Linear(4, 3), w)(
                torch.zeros(2, 3))), "raise"
    # Modules built from mismatched or wrong parts, and passes on non-models.
    yield "GeluLinear mismatched", (
        lambda: gf.GeluLinear(nn.Linear(3, 4), nn.Linear(5, 3))), "raise"
    yield "GegluLinear mismatched", (
        lambda: gf.GegluLinear(nn.Linear(3, 4), nn.Linear(5, 3))), "raise"
    yield "GeluLinear not Linear", (lambda: gf.GeluLinear(nn.ReLU(), nn.ReLU())), "raise"
    yield "GeluLinear wrong input", (
        lambda: gf.GeluLinear(nn.Linear(3, 4), nn.Linear(4, 3))(torch.zeros(2, 5))), "raise"
    yield "GegluLinear wrong input", (
        lambda: gf.GegluLinear(nn.Linear(3, 8), nn.Linear(4, 3))(torch.zeros(2, 5))), "raise"
    yield "LinearBiasGELU wrong input", (
        lambda: gf.LinearBiasGELU(3, 4)(torch.zeros(2, 5))), "raise"
    # Patched and fused models (BiasGELU, the fused graph's ops) on inputs
    # they cannot take.
    def mlp():
        return nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 4), nn.GELU("tanh"))

    def patched():
        m = mlp()
        gf.patch(m, fuse_bias=True)
        return m
    for label, make_model in (("patched", patched), ("fused", lambda: gf.fuse(mlp()))):
        for what, make in replacements((R, C)):
            if what == "storage shrunk":
                continue  # the first op is PyTorch's Linear: it reads past it (crashes) unfused too
            def case(make_model=make_model, make=make):
                y = make_model()(make())
                if isinstance(y, torch.Tensor) and y.requires_grad:
                    y.sum().backward()
            yield f"{label} model input={what}", case, _expect(what)
    for what, arg in (("None", None), ("int", 3), ("tensor", torch.zeros(3))):
        yield f"fuse({what})", (lambda a=arg: gf.fuse(a)), "raise"
        yield f"patch({what})", (lambda a=arg: gf.patch(a)), "raise"
        yield f"explain({what})", (lambda a=arg: gf.explain(a)), "raise"
    # The process-wide SIMD target: a name this CPU does not run raises,
    # '' and 'best' go back to the best target (every case leaves it there).
    for what in ("bogus", "NONE", "avx9", None, 3):
        yield f"set_simd_target({what!r})", (
            lambda w=what: gf.set_simd_target(w)), "raise"
    for what in ("", "best", *gf.simd_targets()):
        def pin(w=what):
            try:
                gf.set_simd_target(w)
            finally:
                gf.set_simd_target("best")
        yield f"set_simd_target({what!r})", pin, "return"
    # Differentiating through a backward op (no derivative of its own).
    def double_backward():
        x = torch.randn(R, C, requires_grad=True)
        dy = torch.randn(R, C, requires_grad=True)
        g = ops.gelu_backward(dy, x)
        torch.autograd.grad(g.sum(), (x, dy))
    yield "gelu_backward differentiated", double_backward, "raise"

    def out_then_backward():
        x = torch.randn(R, C, requires_grad=True)
        y = torch.empty(R, C)
        ops.gelu.out(x, out=y).sum().backward()
    yield "gelu.out then backward", out_then_backward, "raise"


def main():
    only = sys.argv[1:]
    total = 0
    wrong = []
    for name, fn, expect in list(op_cases()) + list(function_cases()):
        if only and not any(o in name for o in only):
            continue
        total += 1
        raised = run(name, fn)
        if expect != "any" and raised != (expect == "raise"):
            wrong.append(f"{name} (expected to {expect})")
    print(f"done {total} cases", flush=True)
    if wrong:
        print("wrong outcomes:", "; ".join(wrong), flush=True)
        sys.exit(3)


if __name__ == "__main__":
    try:
        main()
    except Exception:  # noqa: BLE001 - the worker itself broke: say where
        traceback.print_exc()
        sys.exit(2)
