"""GPT-2 small MLP block (tokens x 768 -> 3072 -> 768, GELU erf form): step
time (forward + backward) and the activation bytes the forward leaves for
the backward, side by side in one run, for

  torch       fc2(gelu(fc1(x))), as PyTorch runs it
  fused_bias  fc1 without bias + gelu_fusion.bias_gelu, then fc2 (keeps y)
  save_mem    gelu_fusion.GeluLinear: keeps h, recomputes y in the backward
  checkpoint  torch.utils.checkpoint of the torch block (keeps x only)

Activation bytes: the distinct storages autograd keeps (saved_tensors_hooks),
Parameters excluded, measured on the real forward; and, as a second measure,
the bytes torch.profiler's memory accounting still holds after the forward
minus the output's. Step times: medians over interleaved rounds (variants in
a shuffled order each round).

    PYTHONPATH=build/python .venv/bin/python bench/mlp_block_memory.py \
        [--tokens 2048] [--threads 1] [--rounds 9] [--dtype f32|bf16]
"""
import argparse
import random
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

import gelu_fusion


def variants(fc1, fc2):
    def torch_block(x):
        return fc2(F.gelu(fc1(x)))

    fused_bias = gelu_fusion.LinearBiasGELU.from_linear(fc1)

    def fused_bias_block(x):
        return fc2(fused_bias(x))

    save_mem = gelu_fusion.GeluLinear(fc1, fc2)

    def checkpoint_block(x):
        return checkpoint(torch_block, x)

    return {"torch": torch_block, "fused_bias": fused_bias_block,
            "save_mem": save_mem, "checkpoint": checkpoint_block}


def saved_bytes(block, x, params):
    kept = {}

    def pack(t):
        kept.setdefault(t.untyped_storage().data_ptr(), t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        z = block(x)
    return sum(t.untyped_storage().nbytes() for p, t in kept.items() if p not in params), z


def profiler_bytes(block, x):
    """Bytes allocated during the forward and still held after it, less the
    output's own (torch.profiler memory events)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True) as prof:
        z = block(x)
    held = sum(e.self_cpu_memory_usage for e in prof.events())
    return held - z.untyped_storage().nbytes(), z


def step(block, x, dz):
    z = block(x)
    z.backward(dz)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--dtype", default="f32", choices=("f32", "bf16"))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    fc1, fc2 = nn.Linear(a.d, 4 * a.d), nn.Linear(4 * a.d, a.d)
    params = {p.untyped_storage().data_ptr() for p in (*fc1.parameters(), *fc2.parameters())}
    x = torch.randn(a.tokens, a.d, requires_grad=True)
    dz = torch.randn(a.tokens, a.d)
    vs = variants(fc1, fc2)
    autocast = a.dtype == "bf16"

    def run(fn):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            return fn()

    print(f"MLP block {a.tokens} x {a.d} -> {4 * a.d} -> {a.d}, {a.dtype}"
          f"{' (autocast)' if autocast else ''}, {a.threads} thread(s), "
          f"{a.rounds} interleaved rounds; SIMD {gelu_fusion.simd_target()}")
    mem = {}
    for name, fn in vs.items():
        hooks, z = run(lambda: saved_bytes(fn, x, params))
        del z
        prof, z = run(lambda: profiler_bytes(fn, x))
        del z
        mem[name] = (hooks, prof)
    for name, fn in vs.items():  # warm-up
        run(lambda: step(fn, x, dz))
    times = {name: [] for name in vs}
    for _ in range(a.rounds):
        order = list(vs)
        random.shuffle(order)
        for name in order:
            t0 = time.perf_counter()
            run(lambda: step(vs[name], x, dz))
            times[name].append(time.perf_counter() - t0)
    base_mem, base_t = mem["torch"][0], statistics.median(times["torch"])
    fb_t = statistics.median(times["fused_bias"])
    print(f"{'variant':<11} {'step ms':>8} {'(min-max)':>17} {'x torch':>8} "
          f"{'act MiB':>8} {'x torch':>8} {'profiler MiB':>13}")
    for name in vs:
        t = statistics.median(times[name])
        hooks, prof = mem[name]
        print(f"{name:<11} {t * 1e3:8.1f} ({min(times[name]) * 1e3:7.1f}-"
              f"{max(times[name]) * 1e3:7.1f}) {base_t / t:8.3f} "
              f"{hooks / 2**20:8.2f} {hooks / base_mem:8.3f} {prof / 2**20:13.2f}")
    sm = statistics.median(times["save_mem"])
    print(f"save_mem: speed x fused_bias {fb_t / sm:.3f} (target >= 0.98), "
          f"x checkpoint {statistics.median(times['checkpoint']) / sm:.3f} (target >= 1.25), "
          f"activation bytes x torch {mem['save_mem'][0] / base_mem:.3f} (target <= 0.56)")


if __name__ == "__main__":
    main()
