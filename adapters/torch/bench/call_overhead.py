"""Per-call overhead of gelu_fusion's Python functions against
torch.nn.functional.gelu on a tiny tensor (the kernel's time is negligible,
so the difference is dispatch and argument checks).

    PYTHONPATH=build/python .venv/bin/python adapters/torch/bench/call_overhead.py [NAME...]

(NAME: substrings of the case names to run, e.g. 'tanh' or 'grad'.)

Rounds interleave ours and PyTorch's; each round times N calls of each and
the script prints the median per-call time of each and of their difference
over the rounds, plus the spread (25th-75th percentile) of the difference.
Times are the thread's CPU time (time.thread_time_ns), so that on a shared,
loaded machine the time spent descheduled does not count.
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import gelu_fusion

N, ROUNDS = 2000, 41


def per_call(fn, x):
    t0 = time.thread_time_ns()
    for _ in range(N):
        fn(x)
    return (time.thread_time_ns() - t0) / N / 1000.0  # microseconds


def _cases():
    """name -> (ours, PyTorch's, input): every op and form, without and with
    a gradient wanted. The peer of 'quick' is F.gelu(x) (one ATen op, as
    ours is one op); PyTorch's quick GELU is two ops and slower."""
    cases = {}
    gf = gelu_fusion
    peer_form = {"none": "none", "tanh": "tanh", "quick": "none"}
    for grad in (False, True):
        g = " grad" if grad else ""

        def t(*shape):
            return torch.randn(*shape, requires_grad=grad)
        for form in ("none", "tanh", "quick"):
            pf = peer_form[form]
            cases[f"gelu {form} f32 (8,){g}"] = (
                (gf.gelu if form == "none" else
                 (lambda x, f=form: gf.gelu(x, approximate=f))),
                (F.gelu if pf == "none" else
                 (lambda x, f=pf: F.gelu(x, approximate=f))), t(8))
        cases[f"gelu tanh bf16 (8,){g}"] = (
            lambda x: gf.gelu(x, approximate="tanh"),
            lambda x: F.gelu(x, approximate="tanh"),
            torch.randn(8).bfloat16().requires_grad_(grad))
        cases[f"GELU module tanh f32 (8,){g}"] = (
            gf.GELU("tanh"), torch.nn.GELU("tanh"), t(8))
        b, a2 = t(8), t(4, 8)
        for form in ("none", "tanh"):
            cases[f"bias_gelu {form} f32 (4,8){g}"] = (
                lambda x, f=form: gf.bias_gelu(x, b, f),
                lambda x, f=form: F.gelu(x + b, approximate=f), t(4, 8))
            cases[f"add_gelu {form} f32 (4,8){g}"] = (
                lambda x, f=form: gf.add_gelu(x, a2, f),
                lambda x, f=form: F.gelu(x + a2, approximate=f), t(4, 8))
        for half in ("first", "second"):
            cases[f"geglu tanh {half} f32 (4,16){g}"] = (
                ((lambda x: gf.geglu(x, "tanh")) if half == "first" else
                 (lambda x: gf.geglu(x, "tanh", "second"))),
                ((lambda x: F.gelu(x[..., :8], approximate="tanh") * x[..., 8:])
                 if half == "first" else
                 (lambda x: x[..., :8] * F.gelu(x[..., 8:], approximate="tanh"))),
                t(4, 16))
    return cases


def main():
    torch.set_num_threads(1)
    only = sys.argv[1:]  # substrings of case names; none: every case
    cases = {k: v for k, v in _cases().items()
             if not only or any(o in k for o in only)}
    for name, (ours, theirs, x) in cases.items():
        try:
            ours(x)
        except (TypeError, RuntimeError) as e:  # an older build's API
            print(f"{name:36s} skipped: {e}")
            continue
        for _ in range(200):
            ours(x), theirs(x)
        o, t, d = [], [], []
        for _ in range(ROUNDS):
            a = per_call(ours, x)
            c = per_call(theirs, x)
            o.append(a), t.append(c), d.append(a - c)
        q = statistics.quantiles(d, n=4)
        print(f"{name:36s} ours {statistics.median(o):6.3f} us  "
              f"F.gelu {statistics.median(t):6.3f} us  "
              f"diff {statistics.median(d):+6.3f} us "
              f"(IQR {q[0]:+.3f}..{q[2]:+.3f})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
