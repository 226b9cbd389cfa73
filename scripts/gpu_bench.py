"""The bench stage (scripts/gpu-check.sh): each op of torch.ops.gelu_fusion
on the GPU, per dtype, against PyTorch's own eager equivalent on the same
tensors: time per call (CUDA events, median of several runs) and the
memory bandwidth it reached. Each row is checked against PyTorch's result
first (loosely: a wrong kernel must not give a speed). Rows go into the
stage's JSON (argv[1]) one by one.

  gpu_bench.py JSON [--cpu]   --cpu: a tiny run on the CPU (the dry run)
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import gelu_fusion  # noqa: F401  (loads the extension: torch.ops.gelu_fusion)
import gpu_check_results as results

path = sys.argv[1]
on_cpu = "--cpu" in sys.argv[2:]
part = "bench"
dev = "cpu" if on_cpu else "cuda"
rows, cols = (64, 128) if on_cpu else (8192, 4096)
reps, iters = (2, 2) if on_cpu else (7, 20)
ops = torch.ops.gelu_fusion


def sync():
    if not on_cpu:
        torch.cuda.synchronize()


def timed(fn):
    """Median seconds per call."""
    fn()
    sync()
    out = []
    for _ in range(reps):
        if on_cpu:
            t = time.perf_counter()
            for _ in range(iters):
                fn()
            out.append((time.perf_counter() - t) / iters)
        else:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(iters):
                fn()
            b.record()
            b.synchronize()
            out.append(a.elapsed_time(b) / 1e3 / iters)
    return statistics.median(out)


def close(a, b, dtype):
    """Against the largest value (PyTorch rounds x + b to the dtype first):
    a sanity check, not the accuracy stage."""
    a, b = a.double(), b.double()
    return bool(a.isfinite().all()) and \
        float((a - b).abs().max()) <= 16 * torch.finfo(dtype).eps * float(b.abs().max())


name_dev = "cpu (dry run)" if on_cpu else torch.cuda.get_device_name()
results.update(path, lambda d: results.part(d, part).update(
    device=name_dev, shape=[rows, cols], torch=torch.__version__))
print(f"bench on {name_dev}, shape {rows}x{cols}")
print(f"{'op':<20} {'dtype':<9} {'us':>9} {'GB/s':>8} {'torch us':>9} {'x torch':>8}")
g = torch.Generator().manual_seed(0)
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    x = (torch.randn(rows, cols, generator=g) * 3).to(dtype).to(dev)
    dy = torch.randn(rows, cols, generator=g).to(dtype).to(dev)
    r = torch.randn(rows, cols, generator=g).to(dtype).to(dev)
    b = torch.randn(cols, generator=g).to(dtype).to(dev)
    xg = torch.randn(rows, 2 * cols, generator=g).to(dtype).to(dev)
    n, es = rows * cols, x.element_size()
    cases = [
        # name, ours, PyTorch's, bytes moved
        ("gelu", lambda: ops.gelu(x, "none"), lambda: F.gelu(x), 2 * n * es),
        ("gelu_backward", lambda: ops.gelu_backward(dy, x, "none"),
         lambda: torch.ops.aten.gelu_backward(dy, x), 3 * n * es),
        ("add_gelu", lambda: ops.add_gelu(x, r, "none"), lambda: F.gelu(x + r), 3 * n * es),
        ("bias_gelu", lambda: ops.bias_gelu(x, b, "none"), lambda: F.gelu(x + b),
         2 * n * es),
        ("bias_gelu_backward", lambda: ops.bias_gelu_backward(dy, x, b, "none")[0],
         lambda: torch.ops.aten.gelu_backward(dy, x + b), 3 * n * es),
        ("geglu", lambda: ops.geglu(xg, "none", "first"),
         lambda: F.gelu(xg[:, :cols]) * xg[:, cols:], 3 * n * es),
    ]
    dname = str(dtype).replace("torch.", "")
    for name, ours, theirs, nbytes in cases:
        label = f"{name} {dname}"
        try:
            if not close(ours(), theirs(), dtype):
                results.update(path, lambda d: results.record(
                    d, part, label, "failed", "result differs from PyTorch's"))
                continue
            t, tt = timed(ours), timed(theirs)
            row = {"op": name, "dtype": dname, "us": round(t * 1e6, 2),
                   "GB_per_s": round(nbytes / t / 1e9, 1),
                   "torch_us": round(tt * 1e6, 2), "speedup": round(tt / t, 3)}
            print(f"{name:<20} {dname:<9} {row['us']:>9} {row['GB_per_s']:>8} "
                  f"{row['torch_us']:>9} {row['speedup']:>8}", flush=True)

            def add(d, row=row, label=label):
                results.part(d, part)["figures"].append(row)
                results.record(d, part, label, "passed")
            results.update(path, add)
        except Exception as e:  # a CUDA error is this row's failure
            results.update(path, lambda d: results.record(
                d, part, label, "failed", f"{type(e).__name__}: {e}"))
