"""The smoke stage's Python part (scripts/gpu-check.sh): loads the gelu_fusion
package and its extension from PYTHONPATH, checks the extension has CUDA
kernels, prints the device, and runs gelu once per dtype on the device
against the library's CPU path. Results into the stage's JSON (argv[1]).
Exit 3: the extension could not be loaded (gpu-check.sh may rebuild it)."""
import sys
import traceback

import gpu_check_results as results

path = sys.argv[1]
part = "python"


def rec(name, outcome, why=""):
    results.update(path, lambda d: results.record(d, part, name, outcome, why))


import torch  # noqa: E402

gpu = torch.cuda.is_available()
device = torch.cuda.get_device_name() if gpu else "none"
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}); device: {device}")
results.update(path, lambda d: (results.part(d, part).update(
    torch=torch.__version__, torch_cuda=str(torch.version.cuda), device=device)))
try:
    import gelu_fusion
except Exception:  # any failure to load is reported the same way
    print(traceback.format_exc(), file=sys.stderr)
    print("gpu_smoke: the gelu_fusion extension could not be loaded", file=sys.stderr)
    sys.exit(3)
ext = gelu_fusion._load._LIB
print(f"extension: {ext}")
results.update(path, lambda d: results.part(d, part).update(extension=ext))
rec("load gelu_fusion and its extension", "passed")
ops = torch.ops.gelu_fusion
devices = list(ops._devices())
if "cuda" in devices:
    rec("extension built with CUDA kernels", "passed")
else:
    rec("extension built with CUDA kernels", "failed",
        f"torch.ops.gelu_fusion._devices() is {devices}: no CUDA backend")

for dtype in (torch.float32, torch.bfloat16, torch.float16):
    name = f"gelu {str(dtype).replace('torch.', '')} device vs host"
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(257, 129, generator=g, dtype=torch.float64) * 3).to(dtype)
    host = ops.gelu(x, "none")
    if not gpu:
        rec(name, "skipped", "no CUDA device")
        continue
    try:
        dev = ops.gelu(x.cuda(), "none")
        torch.cuda.synchronize()
        got = dev.cpu().double()
        want = host.double()
        eps = torch.finfo(dtype).eps
        tiny = torch.finfo(dtype).smallest_normal * eps
        worst = float(((got - want).abs() - 3 * eps * want.abs() - 4 * tiny).max())
        if worst <= 0:
            rec(name, "passed")
        else:
            rec(name, "failed", "device and host differ by more than 3 ulp")
    except Exception as e:  # a CUDA error is this check's failure
        rec(name, "failed", f"{type(e).__name__}: {e}")
