"""The report's "Model block" section: a GPT-2 small MLP block (tokens x
768 -> 3072 -> 768, f32, nn.Linear / nn.GELU / nn.Linear) trained for a few
steps (forward, backward, SGD step) in four variants, side by side in one
run, per thread count:

  pytorch     the module as PyTorch runs it
  fuse_plain  gelu_fusion.fuse(model, save_memory=False): bias_gelu, keeps y
  fuse        gelu_fusion.fuse(model): the GELU and fc2 as one node that
              keeps h, not y (recomputed in the fused backward pass)
  checkpoint  torch.utils.checkpoint of the PyTorch block (keeps x only)

Activation bytes: what the forward leaves allocated for the backward,
measured by torch.profiler's memory accounting (bytes allocated during the
forward and not freed by its end, less the output's; the block's input is
allocated before the forward and not counted), after a warm-up step. Step time: the median over
interleaved rounds (a shuffled variant order each round); the speed ratios
are medians of the per-round ratios, so a slow round (other load on the
machine) moves both sides of a ratio.

    PYTHONPATH=build/python .venv/bin/python tools/report/report_model_block.py \
        [--steps 7] [--threads 1,2] [--tokens 2048] [--out section.md]

Prints the section as markdown (and writes it to --out).
"""
import argparse
import copy
import random
import statistics
import sys
import time


def profiler_bytes(model, x):
    import torch
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True) as prof:
        z = model(x)
    held = sum(e.self_cpu_memory_usage for e in prof.events())
    return held - z.untyped_storage().nbytes()


def measure(tokens, d, threads, steps):
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint
    import gelu_fusion

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    base = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    class Checkpointed(nn.Module):
        def __init__(self, block):
            super().__init__()
            self.block = block

        def forward(self, x):
            return checkpoint(self.block, x)

    models = {
        "pytorch": copy.deepcopy(base),
        "fuse_plain": gelu_fusion.fuse(copy.deepcopy(base), save_memory=False),
        "fuse": gelu_fusion.fuse(copy.deepcopy(base)),
        "checkpoint": Checkpointed(copy.deepcopy(base)),
    }
    opts = {k: torch.optim.SGD(m.parameters(), lr=1e-4) for k, m in models.items()}
    x = torch.randn(tokens, d, requires_grad=True)
    dz = torch.randn(tokens, d)

    def step(name):
        m, o = models[name], opts[name]
        o.zero_grad(set_to_none=True)
        m(x).backward(dz)
        o.step()

    for k in models:  # warm-up
        step(k)
    # After the warm-up: the fused node's per-thread scratch buffer
    # (workspace.py), allocated at its first call and reused by every block
    # and step after, is not memory the forward keeps for the backward.
    held = {k: profiler_bytes(m, x) for k, m in models.items()}
    times = {k: [] for k in models}
    for _ in range(steps):
        order = list(models)
        random.shuffle(order)
        for k in order:
            t0 = time.perf_counter()
            step(k)
            times[k].append(time.perf_counter() - t0)
    def speed_vs(base, k):  # median over rounds of base's time / k's
        return statistics.median(b / t for b, t in zip(times[base], times[k]))

    return held, {k: statistics.median(v) for k, v in times.items()}, times, speed_vs


def section(tokens, d, thread_counts, steps):
    import torch
    import gelu_fusion
    out = ["## Model block", "",
           f"GPT-2 small MLP block, {tokens} tokens x {d} -> {4 * d} -> {d}, f32, one "
           f"training step (forward, backward, SGD) per sample, {steps} interleaved "
           f"rounds after a warm-up; PyTorch {torch.__version__}, SIMD "
           f"{gelu_fusion.simd_target()}. Activation MiB: bytes the forward leaves "
           "allocated (torch.profiler memory events, after the warm-up), less the "
           "output (the input is allocated before). Speed: the median of per-round time ratios against "
           "fuse(save_memory=False) (>1 is faster); bytes against PyTorch. "
           "Re-measure: `PYTHONPATH=build/python .venv/bin/python "
           "tools/report/report_model_block.py`.", ""]
    out.append("| threads | variant | step ms (median) | min-max | speed x fuse_plain "
               "| activation MiB | bytes x pytorch |")
    out.append("|---|---|---|---|---|---|---|")
    targets = []
    for th in thread_counts:
        held, med, raw, speed_vs = measure(tokens, d, th, steps)
        for k in held:
            out.append(f"| {th} | {k} | {med[k] * 1e3:.1f} | {min(raw[k]) * 1e3:.1f}-"
                       f"{max(raw[k]) * 1e3:.1f} | {speed_vs('fuse_plain', k):.3f} | "
                       f"{held[k] / 2**20:.1f} | {held[k] / held['pytorch']:.3f} |")
        targets.append(
            f"{th} thread(s): fuse keeps {held['fuse'] / held['pytorch']:.3f}x PyTorch's "
            f"activation bytes (target <= 0.56), steps at "
            f"{speed_vs('fuse_plain', 'fuse'):.3f}x the speed of fuse(save_memory=False) "
            f"(target >= 0.98) and {speed_vs('checkpoint', 'fuse'):.3f}x checkpoint's "
            f"(target >= 1.25).")
    out += ["", *("- " + t for t in targets), ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--out", default="")
    ap.add_argument("--package-dir", default="")
    a = ap.parse_args()
    if a.package_dir:
        sys.path.insert(0, a.package_dir)
    try:
        text = section(a.tokens, a.d, [int(t) for t in a.threads.split(",")], a.steps)
    except Exception as e:  # the report says why instead of failing
        text = f"## Model block\n\nNot measured: {type(e).__name__}: {e}\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
