"""Per-call cost of a fused model's call-time check (fusion_guard: the
modules, their attributes, the globals and class attributes the traced
code read), for a small MLP and a tiny GPT-2 block stack.

    PYTHONPATH=build/python .venv/bin/python adapters/torch/bench/guard_cost.py

Prints, per model, the median over interleaved rounds of the thread CPU
time of one check (Guard.why_not over every fused module of the model),
with the reads of globals, functionals and class attributes the guards
watch (fusion_reads) and with those left out, and how many reads there are.
"""
import statistics
import sys
import time
import warnings

import torch
from torch import nn

import gelu_fusion
from gelu_fusion.fusion.call import installed

N, ROUNDS = 2000, 21


def _mlp():
    return nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))


def _gpt2():
    sys.path.insert(0, "tests/python")
    import hf_models as H
    return H.build("gpt2")


def guards(model):
    out = []
    for m in model.modules():
        c = installed(m)
        if c is not None and c.guard is not None:
            out.append(c.guard)
    return out


def per_check(gs) -> float:
    t0 = time.thread_time_ns()
    for _ in range(N):
        for g in gs:
            g.why_not()
    return (time.thread_time_ns() - t0) / N / 1e3


def main():
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    for name, build in (("mlp", _mlp), ("gpt2", _gpt2)):
        model = gelu_fusion.fuse(build())
        gs = guards(model)
        assert gs and all(g.why_not() == "" for g in gs)
        full = [(g._same_in_dict, g._other_reads) for g in gs]
        with_reads, without = [], []
        for _ in range(ROUNDS):
            with_reads.append(per_check(gs))
            for g in gs:
                g._same_in_dict, g._other_reads = [], []
            without.append(per_check(gs))
            for g, (a, b) in zip(gs, full):
                g._same_in_dict, g._other_reads = a, b
        reads = sum(len(g.global_reads) for g in gs)
        print(f"{name}: {len(gs)} fused modules, {reads} reads watched: check "
              f"{statistics.median(with_reads):.2f} us a call, "
              f"{statistics.median(without):.2f} us without the reads")


if __name__ == "__main__":
    main()
