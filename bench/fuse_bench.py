"""gelu_fusion.fuse, measured: a GPT-2 small MLP training step after fuse
against the unfused model and against fuse(save_memory=False) (interleaved
rounds, one thread), the share of the step the GELU takes in each
(torch.profiler), and the time fuse itself takes on 12-layer GPT-2-style
models.

    PYTHONPATH=build/python .venv/bin/python bench/fuse_bench.py [--rounds N]

Figures, not tests: docs/notes/pytorch-performance-log.md quotes them with this command.
"""
import argparse
import copy
import os
import re
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import gelu_fusion  # noqa: E402
import model_zoo  # noqa: E402

TOKENS, D, INNER = 2048, 768, 3072  # GPT-2 small's MLP, 2048 tokens


def mlps():
    """(name, unfused module) for the two ways GPT-2's MLP is written."""
    torch.manual_seed(0)
    hf = model_zoo.gpt2_mlp(hidden=D, inner=INNER, act="gelu_new")
    nano = model_zoo.NanoGPTMLP(n_embd=D)
    return [("hf GPT2MLP (Conv1D/addmm, gelu_new formula)", hf),
            ("nanoGPT MLP (nn.Linear, F.gelu tanh)", nano)]


def step(model, x, w):
    """One training step's forward and backward (no optimizer)."""
    for p in model.parameters():
        p.grad = None
    model(x).backward(w)  # the loss's gradient, without a loss op in the profile


def time_steps(model, x, w, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        step(model, x, w)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


# Ops a GELU adds to a step, fused or spelled out (self time), by name.
# The formula's mul/add are GELU work here: the MLP has no other (the
# bias adds are inside addmm, the gradient sums in add_).
_GELU_OPS = re.compile(r"gelu|Gelu|tanh|Tanh|pow|Pow|erf|Erf|sigmoid|Sigmoid|"
                       r"^aten::mul|^aten::add$|MulBackward|AddBackward")


def gelu_share(model, x, w):
    """(GELU ops' share of the profiled steps' self time, the top four,
    minor page faults per step). The faults are first touches of fresh
    pages: glibc's malloc may hand a freed 25 MB block back to the system
    and map it again (its dynamic mmap and trim thresholds decide; env
    MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ fix them)."""
    step(model, x, w)
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        for _ in range(3):
            step(model, x, w)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 3
    ev = p.key_averages()
    total = sum(e.self_cpu_time_total for e in ev)
    gelu = sum(e.self_cpu_time_total for e in ev if _GELU_OPS.search(e.key))
    top = sorted(((e.self_cpu_time_total, e.key) for e in ev if _GELU_OPS.search(e.key)),
                 reverse=True)[:4]
    return gelu / total, top, faults


def bench_step(rounds, per_round):
    torch.set_num_threads(1)
    for name, ref in mlps():
        fused = gelu_fusion.fuse(copy.deepcopy(ref))
        # The GELU's output kept, as PyTorch keeps it: what save_memory costs.
        kept = gelu_fusion.fuse(copy.deepcopy(ref), save_memory=False)
        x = torch.randn(TOKENS, D, requires_grad=True)
        w = torch.randn(TOKENS, D)
        for m in (ref, fused, kept):  # warm up
            step(m, x, w)
        ratios, kept_ratios, t_ref, t_fused = [], [], [], []
        for _ in range(rounds):
            a = time_steps(ref, x, w, per_round)
            b = time_steps(fused, x, w, per_round)
            c = time_steps(kept, x, w, per_round)
            t_ref.append(a)
            t_fused.append(b)
            ratios.append(a / b)
            kept_ratios.append(c / b)
        s_ref, top_ref, faults_ref = gelu_share(ref, x, w)
        s_fused, top_fused, faults_fused = gelu_share(fused, x, w)
        print(f"\n{name}: training step, {TOKENS} tokens, {D}->{INNER}->{D}, f32, "
              f"1 thread, {rounds} interleaved rounds of {per_round}")
        print(f"  unfused median {statistics.median(t_ref) * 1e3:.1f} ms, "
              f"fused {statistics.median(t_fused) * 1e3:.1f} ms")
        print(f"  speedup (median of per-round ratios) {statistics.median(ratios):.3f}x "
              f"(rounds: min {min(ratios):.3f}, max {max(ratios):.3f})")
        print(f"  fuse() against fuse(save_memory=False) (>1: the memory-saving node is "
              f"faster) {statistics.median(kept_ratios):.3f}x "
              f"(rounds: min {min(kept_ratios):.3f}, max {max(kept_ratios):.3f})")
        print(f"  GELU-related share of the step (profiler self time): "
              f"unfused {100 * s_ref:.1f}%, fused {100 * s_fused:.1f}%")
        print("    unfused top, ms per step: "
              + ", ".join(f"{k} {t / 3e3:.1f}" for t, k in top_ref))
        print("    fused top, ms per step:   "
              + ", ".join(f"{k} {t / 3e3:.1f}" for t, k in top_fused))
        print(f"  minor page faults per profiled step: unfused {faults_ref:.0f}, "
              f"fused {faults_fused:.0f} "
              f"(a fresh [{TOKENS}, {INNER}] f32 tensor: {TOKENS * INNER * 4 // 4096} pages)")


# --- the node's GELU backward alone: what a fresh dh costs -------------------


def bench_backward_alone(calls):
    """bias_gelu_backward_and_value as the memory-saving node calls it, dY a
    fresh matmul output each call: now (.grad_x_out: dh over dY, y into a
    kept buffer) and before (.out: y over dY, dh allocated), against
    bias_gelu_backward.out into a kept dh (no y), interleaved; medians of
    time and minor page faults per call."""
    torch.set_num_threads(1)
    ops = torch.ops.gelu_fusion
    g = torch.Generator().manual_seed(0)
    h, b = torch.randn(TOKENS, INNER, generator=g), torch.randn(INNER, generator=g)
    dz, w2 = torch.randn(TOKENS, D, generator=g), torch.randn(D, INNER, generator=g)
    dh_kept, db_kept, y_kept = torch.empty_like(h), torch.empty(INNER), torch.empty_like(h)

    def timed(how):
        dy = torch.matmul(dz, w2)
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        if how == "now":
            ops.bias_gelu_backward_and_value.grad_x_out(dy, h, b, approximate="tanh",
                                                        grad_x=dy, y=y_kept)
        elif how == "before":
            ops.bias_gelu_backward_and_value.out(dy, h, b, approximate="tanh", y=dy)
        else:
            ops.bias_gelu_backward.out(dy, h, b, approximate="tanh", grad_x=dh_kept,
                                       grad_bias=db_kept)
        t = time.perf_counter() - t0
        return t, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0

    whats = {"now": "backward_and_value.grad_x_out, dh over dY, y kept",
             "before": "backward_and_value.out, dh fresh, y over dY",
             "kept": "backward.out into a kept dh, no y"}
    runs = {how: [] for how in whats}
    for _ in range(calls):
        for how in whats:
            runs[how].append(timed(how))
    print(f"\nGELU backward alone, [{TOKENS}, {INNER}] f32, 1 thread, {calls} calls interleaved")
    for how, what in whats.items():
        r = runs[how]
        print(f"  {what}: {statistics.median(t for t, _ in r) * 1e3:.1f} ms, "
              f"{statistics.median(f for _, f in r):.0f} minor faults per call")


# --- fuse time on 12-layer models ----------------------------------------------


class NanoBlock(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = model_zoo.CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = model_zoo.NanoGPTMLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class NanoGPT12(nn.Module):
    """nanoGPT's GPT: the top has `targets=None` (descended), the blocks
    trace whole."""

    def __init__(self, n_layer=12, n_embd=768, n_head=12, block_size=1024, vocab=50304):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, n_embd), wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([NanoBlock(n_embd, n_head, block_size) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd)))
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx, targets=None):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is not None:
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits


class HFBlock(nn.Module):
    """HF GPT2Block's shape: optional arguments (untraceable whole), an
    MLP that traces."""

    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.hidden_size)
        self.attn = model_zoo.Conv1D(3 * cfg.hidden_size, cfg.hidden_size)
        self.ln_2 = nn.LayerNorm(cfg.hidden_size)
        self.mlp = model_zoo.GPT2MLP(4 * cfg.hidden_size, cfg)

    def forward(self, hidden_states, layer_past=None, attention_mask=None):
        residual = hidden_states
        h = self.attn(self.ln_1(hidden_states))[..., :hidden_states.size(-1)]
        hidden_states = residual + h
        return hidden_states + self.mlp(self.ln_2(hidden_states))


class HFGPT2_12(nn.Module):
    def __init__(self, n_layer=12):
        super().__init__()
        cfg = model_zoo.Config(768, 3072)
        cfg.activation_function = "gelu_new"
        self.h = nn.ModuleList([HFBlock(cfg) for _ in range(n_layer)])

    def forward(self, hidden_states, attention_mask=None):
        for block in self.h:
            hidden_states = block(hidden_states, attention_mask=attention_mask)
        return hidden_states


def bench_fuse_time(repeats):
    for name, make in (("nanoGPT-style, 12 layers (blocks traced whole)", NanoGPT12),
                       ("HF GPT-2-style, 12 layers (MLPs traced)", HFGPT2_12)):
        ts, n = [], 0
        for _ in range(repeats):
            m = make()
            t0 = time.perf_counter()
            _, report = gelu_fusion.fusion.run_fuse(m)
            ts.append(time.perf_counter() - t0)
            n = len(report.fused)
        print(f"\nfuse on {name}: median {statistics.median(ts):.3f} s over {repeats} "
              f"(min {min(ts):.3f}, max {max(ts):.3f}); {n} sites fused")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--per-round", type=int, default=3)
    ap.add_argument("--fuse-repeats", type=int, default=3)
    ap.add_argument("--backward-alone", type=int, default=0, metavar="CALLS",
                    help="only time the node's GELU backward alone, CALLS calls")
    a = ap.parse_args()
    if a.backward_alone:
        bench_backward_alone(a.backward_alone)
        return
    bench_step(a.rounds, a.per_round)
    bench_fuse_time(a.fuse_repeats)


if __name__ == "__main__":
    main()
