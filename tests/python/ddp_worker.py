"""The per-process body of test_ddp.py (a module of its own so that spawned
processes can import it by name)."""
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def mlp(gelu):
    torch.manual_seed(0)  # the same initial weights on every rank and run
    return nn.Sequential(nn.Linear(12, 32), gelu, nn.Linear(32, 12), gelu,
                         nn.Linear(12, 1))


def train(model, rank, steps):
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    losses = []
    for _ in range(steps):
        x = torch.randn(16, 12, generator=g)
        target = x[:, :1].sin()
        opt.zero_grad()
        loss = nn.functional.mse_loss(ddp(x), target)
        loss.backward()
        opt.step()
        # The global loss: the mean over ranks, identical everywhere.
        t = loss.detach().clone()
        dist.all_reduce(t)
        losses.append(float(t) / dist.get_world_size())
    return losses, [p.detach().clone() for p in model.parameters()]


def run(rank, world, port, out_dir, steps):
    import gelu_fusion

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    # Gloo over the loopback interface: no hostname lookup, no network.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        ref_losses, ref_params = train(mlp(nn.GELU()), rank, steps)
        fused = mlp(nn.GELU())
        gelu_fusion.patch(fused, fuse_bias=True)
        ours_losses, ours_params = train(mlp(gelu_fusion.GELU()), rank, steps)
        fused_losses, _ = train(fused, rank, steps)
        torch.save({"ref": ref_losses, "ours": ours_losses,
                    "fused": fused_losses, "ref_params": ref_params,
                    "ours_params": ours_params},
                   os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        # Both ranks leave together: gloo torn down while the other rank
        # still talks to it can abort the process.
        dist.barrier()
        dist.destroy_process_group()
