"""gelu_fusion.fuse on transformers' own model classes (the models of
tests/python/hf_models.py, built wider): for each model, the GELU sites
fuse finds and what each became, the time fuse takes, and the time of a
training step (forward, loss, backward, SGD step) fused over unfused, on 1
and 2 threads (interleaved rounds; the fastest round of each, which other
load on the machine disturbs least). gelu_10's row compares two unfused
models (fuse leaves it), so its ratio shows the noise of the machine.

    PYTHONPATH=build/python .venv/bin/python bench/hf_models_bench.py \\
        [--rounds N] [--d 128] [--ff 512] [--seq 64] [--models a,b]

Figures, not tests: docs/hf_models.md quotes them with this command.
"""
import argparse
import copy
import os
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import gelu_fusion  # noqa: E402
import hf_models as H  # noqa: E402


def train_step(model, opt, x):
    opt.zero_grad(set_to_none=True)
    H.loss_of(model, x).backward()
    opt.step()


def step_times(models, x, rounds, warmup=2):
    """The fastest training step of each model, in seconds, rounds
    interleaved so that drift in the machine's speed hits all alike."""
    opts = [torch.optim.SGD(m.parameters(), lr=1e-4) for m in models]
    for m, o in zip(models, opts):
        for _ in range(warmup):
            train_step(m, o, x)
    times = [[] for _ in models]
    for _ in range(rounds):
        for i, (m, o) in enumerate(zip(models, opts)):
            t0 = time.perf_counter()
            train_step(m, o, x)
            times[i].append(time.perf_counter() - t0)
    return [min(t) for t in times]


def fuse_time(model, repeats=3):
    """Median seconds of fuse on a fresh deep copy (the copy not timed)."""
    ts = []
    for _ in range(repeats):
        m = copy.deepcopy(model)
        t0 = time.perf_counter()
        gelu_fusion.fuse(m)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def sites(model):
    report = gelu_fusion.explain(copy.deepcopy(model), print_table=False)
    kinds = {}
    for s in report.sites:
        kinds[s.result] = kinds.get(s.result, 0) + 1
    text = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return f"{len(report.fused)}/{len(report.sites)} ({text})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--ff", type=int, default=512)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--models", default=",".join(H.MODELS))
    a = ap.parse_args()
    size = H.Size(d=a.d, ff=a.ff, seq=a.seq, image=64, batch=a.batch)
    print(f"torch {torch.__version__}, SIMD target {gelu_fusion.simd_target()}, "
          f"d={a.d} ff={a.ff} seq={a.seq} (images {size.image}px) batch={a.batch}, "
          f"{a.rounds} rounds; step = forward, loss, backward, SGD step")
    print(f"{'model':<20} {'activation':<18} {'sites fused':<28} {'fuse s':>7} "
          f"{'step ms 1t':>10} {'ratio 1t':>8} {'step ms 2t':>10} {'ratio 2t':>8}")
    for name in a.models.split(","):
        spec = H.MODELS[name]
        model = H.build(name, size=size)
        model.config.use_cache = False
        x = H.inputs(name, size=size)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # gelu_10: nothing to fuse
            fused = gelu_fusion.fuse(copy.deepcopy(model))
            t_fuse = fuse_time(model)
        row = [f"{name:<20} {spec.act:<18} {sites(model):<28} {t_fuse:>7.3f}"]
        for threads in (1, 2):
            torch.set_num_threads(threads)
            t_ref, t_fused = step_times([model, fused], x, a.rounds)
            row.append(f"{t_ref * 1e3:>10.2f} {t_fused / t_ref:>8.3f}")
        print(" ".join(row), flush=True)


if __name__ == "__main__":
    main()
