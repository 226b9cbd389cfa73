#!/usr/bin/env python3
"""Train a Linear -> GELU -> Linear block on synthetic data twice, with
torch.nn.GELU and with gelu_fusion (patched with fuse_bias=True), and print
both loss curves, the median step time of each and, with --profile, the share
of each step spent in GELU-related ops (torch.profiler).

    PYTHONPATH=build/python .venv/bin/python examples/train_mlp.py
    # the issue's benchmark: batch 4096, 1024 -> 4096 -> 1024, 1 and 2 threads
    PYTHONPATH=build/python .venv/bin/python examples/train_mlp.py \\
        --batch 4096 --dim 1024 --hidden 4096 --threads 1 2 --profile --overhead

Both models start from the same weights and see the same batches; their
steps are interleaved (one of each per round) so that both meet the same
machine conditions, and the times reported are medians over the rounds.

At the large size every op's fresh 64 MiB output comes from mmap and is
page-faulted on first touch (PyTorch's CPU allocator keeps no cache); on a
busy machine that costs more than the GELU itself, for nn.GELU and for us
alike. To measure the ops rather than the page faults, keep freed memory in
glibc's heap:  MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000
"""
import argparse
import copy
import statistics
import time

import torch
from torch import nn

import gelu_fusion


def make_model(dim, hidden, approximate):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(dim, hidden), nn.GELU(approximate),
                         nn.Linear(hidden, dim))


def make_step(model, lr):
    opt = torch.optim.SGD(model.parameters(), lr=lr)

    def step(x, target):
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        return float(loss)
    return step


def gelu_share(step, batches):
    """Fraction of the steps' CPU time (self time of every op) spent in ops
    whose name says GELU: aten::gelu and aten::gelu_backward, or ours
    (gelu_fusion::bias_gelu, its backward, and their autograd nodes)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for x, t in batches:
            step(x, t)
    total = gelu = 0.0
    counted = []
    for e in prof.key_averages():
        total += e.self_cpu_time_total
        if "gelu" in e.key.lower():
            gelu += e.self_cpu_time_total
            counted.append(f"{e.key} {e.self_cpu_time_total / 1e3 / len(batches):.1f} ms")
    return gelu / total if total else 0.0, total / len(batches), counted


def run(args, threads):
    torch.set_num_threads(threads)
    ref = make_model(args.dim, args.hidden, args.approximate)
    ours = copy.deepcopy(ref)
    swapped = gelu_fusion.patch(ours, fuse_bias=True)
    assert swapped == 1, swapped
    steps = {"nn.GELU": make_step(ref, args.lr),
             "gelu_fusion": make_step(ours, args.lr)}

    g = torch.Generator().manual_seed(1)
    w_true = torch.randn(args.dim, args.dim, generator=g) / args.dim ** 0.5

    def batch():
        x = torch.randn(args.batch, args.dim, generator=g)
        return x, torch.tanh(x @ w_true)

    losses = {k: [] for k in steps}
    times = {k: [] for k in steps}
    for i in range(args.steps):
        x, t = batch()
        # Alternate which model goes first, so neither always follows the other.
        order = list(steps) if i % 2 == 0 else list(steps)[::-1]
        for k in order:
            t0 = time.perf_counter()
            losses[k].append(steps[k](x, t))
            times[k].append(time.perf_counter() - t0)

    print(f"\n== threads={threads}  batch={args.batch}  "
          f"{args.dim} -> {args.hidden} -> {args.dim}  f32  "
          f"approximate={args.approximate!r}  ({gelu_fusion.simd_target()})")
    every = max(1, args.steps // 10)
    print("step   loss nn.GELU    loss gelu_fusion   rel.diff")
    for i in sorted(set(range(0, args.steps, every)) | {args.steps - 1}):
        a, b = losses["nn.GELU"][i], losses["gelu_fusion"][i]
        print(f"{i:4d}   {a:13.7f}   {b:16.7f}   {abs(a - b) / abs(a):.1e}")
    skip = min(args.warmup, args.steps - 1)
    med = {k: statistics.median(v[skip:]) for k, v in times.items()}
    for k in steps:
        print(f"median step time {k:12s} {med[k] * 1e3:9.2f} ms")
    print(f"step time ratio gelu_fusion / nn.GELU: "
          f"{med['gelu_fusion'] / med['nn.GELU']:.3f}")

    if args.profile:
        # One profiled step of each model per round, interleaved; the
        # median share over the rounds.
        share = {k: [] for k in steps}
        for _ in range(args.profile_rounds):
            b = [batch()]
            for k in steps:
                share[k].append(gelu_share(steps[k], b))
        med_share = {}
        for k, runs in share.items():
            runs.sort(key=lambda r: r[0])
            s, per_step, counted = runs[len(runs) // 2]
            med_share[k] = s
            print(f"GELU-related share of the step, {k:12s} {s * 100:6.2f} %"
                  f"   (median of {len(runs)}; that step {per_step / 1e3:.2f} ms: "
                  f"{', '.join(counted)})")
        before, after = med_share["nn.GELU"], med_share["gelu_fusion"]
        print(f"share drop: {before / after if after else float('inf'):.2f}x")


def per_call_overhead(rounds=7, number=20000):
    """Median per-call time of gelu_fusion.gelu and F.gelu on a 1-element
    tensor, interleaved; with and without an input requiring grad."""
    import timeit
    out = {}
    for grad in (False, True):
        x = torch.randn(1, requires_grad=grad)
        fns = {"F.gelu": lambda: nn.functional.gelu(x),
               "gelu_fusion.gelu": lambda: gelu_fusion.gelu(x)}
        res = {k: [] for k in fns}
        for _ in range(rounds):
            for k, f in fns.items():
                res[k].append(min(timeit.repeat(f, number=number, repeat=3))
                              / number * 1e6)
        out[grad] = {k: statistics.median(v) for k, v in res.items()}
    torch.set_num_threads(1)
    print("\n== per-call time on a 1-element f32 tensor (median of rounds)")
    for grad, r in out.items():
        print(f"requires_grad={grad!s:5s}  F.gelu {r['F.gelu']:.2f} us   "
              f"gelu_fusion.gelu {r['gelu_fusion.gelu']:.2f} us   "
              f"overhead {r['gelu_fusion.gelu'] - r['F.gelu']:+.2f} us")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--approximate", default="none", choices=["none", "tanh"])
    p.add_argument("--threads", type=int, nargs="+", default=[1])
    p.add_argument("--profile", action="store_true",
                   help="also measure the GELU-related share with torch.profiler")
    p.add_argument("--profile-rounds", type=int, default=5)
    p.add_argument("--overhead", action="store_true",
                   help="also measure per-call time on a 1-element tensor")
    args = p.parse_args()
    for t in args.threads:
        run(args, t)
    if args.overhead:
        per_call_overhead()


if __name__ == "__main__":
    main()
