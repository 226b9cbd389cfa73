"""Per-call overhead of gelu_fusion's Python functions against
torch.nn.functional.gelu on a tiny tensor (the kernel's time is negligible,
so the difference is dispatch and argument checks).

    PYTHONPATH=build/python /usr/bin/python3 adapters/torch/bench/call_overhead.py

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


def main():
    torch.set_num_threads(1)
    cases = {
        "gelu f32 (8,)": (gelu_fusion.gelu, F.gelu, torch.randn(8)),
        "gelu tanh f32 (8,)": (lambda x: gelu_fusion.gelu(x, "tanh"),
                               lambda x: F.gelu(x, approximate="tanh"),
                               torch.randn(8)),
        "gelu bf16 (8,)": (gelu_fusion.gelu, F.gelu,
                           torch.randn(8).bfloat16()),
        "GELU module f32 (8,)": (gelu_fusion.GELU(), torch.nn.GELU(),
                                 torch.randn(8)),
        "gelu f32 (8,) requires_grad": (gelu_fusion.gelu, F.gelu,
                                        torch.randn(8, requires_grad=True)),
    }
    b = torch.randn(8)
    cases["bias_gelu f32 (4,8)"] = (lambda x: gelu_fusion.bias_gelu(x, b),
                                    lambda x: F.gelu(x + b), torch.randn(4, 8))
    for name, (ours, theirs, x) in cases.items():
        for _ in range(200):
            ours(x), theirs(x)
        o, t, d = [], [], []
        for _ in range(ROUNDS):
            a = per_call(ours, x)
            c = per_call(theirs, x)
            o.append(a), t.append(c), d.append(a - c)
        q = statistics.quantiles(d, n=4)
        print(f"{name:32s} ours {statistics.median(o):6.3f} us  "
              f"F.gelu {statistics.median(t):6.3f} us  "
              f"diff {statistics.median(d):+6.3f} us "
              f"(IQR {q[0]:+.3f}..{q[2]:+.3f})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
