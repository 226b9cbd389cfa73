"""The per-process body of test_distributed_hf.py (a module of its own so
that spawned processes can import it by name): a tiny transformers GPT-2
trained a few steps under DDP and under FSDP2 (fully_shard, each block and
the root), unfused, fused before wrapping, and (FSDP2) fused after
sharding. Each rank saves, per run, the global loss of each step, the
first step's gradients, the final parameters (full tensors, gathered from
the shards under FSDP2), our ops seen in the first step and whether the
weights were sharded."""
import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel as DDP

MODEL = "gpt2"
RUNS = (("ddp", ""), ("ddp", "first"), ("fsdp2", ""), ("fsdp2", "first"),
        ("fsdp2", "after"))


def _full(t):
    return t.full_tensor() if isinstance(t, DTensor) else t


def _wrap(model, how, world):
    if how == "ddp":
        return DDP(model)
    mesh = init_device_mesh("cpu", (world,))
    for block in model.transformer.h:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def train(how, fuse, rank, world, steps):
    """fuse: '' (unfused), 'first' (fuse, then wrap) or 'after' (wrap,
    then fuse the wrapped model)."""
    import gelu_fusion
    import hf_models

    model = hf_models.build(MODEL)  # the same weights on every rank and run
    if fuse == "first":
        model = gelu_fusion.fuse(model)
    wrapped = _wrap(model, how, world)
    if fuse == "after":
        model = gelu_fusion.fuse(model)
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.05, momentum=0.9)
    losses, grads, ops = [], None, None
    for step in range(steps):
        x = hf_models.inputs(MODEL, seed=100 * rank + step)  # each rank its own data
        opt.zero_grad()
        torch.manual_seed(1000 * rank + step)  # the same dropout masks in each run
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            loss = hf_models.loss_of(wrapped, x)
            loss.backward()
        if step == 0:
            ops = sorted({e.key for e in prof.key_averages()
                          if e.key.startswith("gelu_fusion::")})
        if grads is None:
            grads = {n: _full(p.grad).detach().clone()
                     for n, p in model.named_parameters() if p.grad is not None}
        opt.step()
        t = loss.detach().clone()
        dist.all_reduce(t)  # the global loss, identical on every rank
        losses.append(float(t) / world)
    params = {n: _full(p).detach().clone() for n, p in model.named_parameters()}
    sharded = all(isinstance(p, DTensor) and p.to_local().numel() < p.numel()
                  for p in model.parameters() if p.dim() == 2)
    return {"losses": losses, "grads": grads, "params": params, "ops": ops,
            "sharded": sharded}


def run(rank, world, port, out_dir, steps):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    # Gloo over the loopback interface: no hostname lookup, no network.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    # A run that fails on one rank only ends in a timeout, not a hang.
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=timedelta(seconds=120))
    try:
        out = {}
        for how, fuse in RUNS:
            key = f"{how}_{fuse or 'ref'}"
            try:
                out[key] = train(how, fuse, rank, world, steps)
            except Exception as e:  # reported by the test, with the reason
                out[key] = {"error": f"{type(e).__name__}: {e}"}
        torch.save(out, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        # Both ranks leave together: gloo torn down while the other rank
        # still talks to it can abort the process.
        dist.barrier()
        dist.destroy_process_group()
