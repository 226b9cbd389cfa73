"""The activation bytes a compiled GPT-2-small MLP block
(tokens x 768 -> 3072 -> 768, GELU erf form, f32) keeps for its backward,
compiled three ways:

  aot_eager           torch.compile(block, backend='aot_eager'), unfused
  inductor            torch.compile(block), unfused (Inductor's partitioner
                      may recompute the GELU itself)
  gelu_fusion+<inner> torch.compile(block, backend=gelu_fusion.backend(inner))

Bytes: the distinct storages the compiled forward saves for the backward
(saved_tensors_hooks), Parameters excluded, and which shapes they are.

    PYTHONPATH=build/python .venv/bin/python bench/compile_saved_bytes.py [--tokens 2048]
"""
import argparse

import torch
from torch import nn

import gelu_fusion


def saved(run, x, params):
    seen, shapes = {}, []
    skip = {p.untyped_storage().data_ptr() for p in params}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in skip and ptr not in seen:
            seen[ptr] = t.untyped_storage().nbytes()
            shapes.append(tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run(x)
    out.sum().backward()
    return sum(seen.values()), shapes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=2048)
    args = ap.parse_args()
    torch.manual_seed(0)
    block = nn.Sequential(nn.Linear(768, 3072), nn.GELU(), nn.Linear(3072, 768))
    x = torch.randn(args.tokens, 768)
    variants = {
        "aot_eager": "aot_eager",
        "inductor": "inductor",
        "gelu_fusion+aot_eager": gelu_fusion.backend("aot_eager"),
        "gelu_fusion+inductor": gelu_fusion.backend("inductor"),
    }
    print(f"tokens {args.tokens}, f32, x itself is {x.nbytes / 2**20:.1f} MiB")
    for name, backend in variants.items():
        torch._dynamo.reset()
        run = torch.compile(block, backend=backend)
        n, shapes = saved(run, x, list(block.parameters()))
        print(f"{name:22s} {n / 2**20:7.1f} MiB  {shapes}")


if __name__ == "__main__":
    main()
