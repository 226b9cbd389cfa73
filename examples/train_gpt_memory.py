"""A small GPT-style character language model trained twice from the same
initial weights on the same batches: once with PyTorch's MLP blocks
(Linear -> nn.GELU -> Linear) and once with gelu_fusion.GeluLinear, which
keeps the GELU's input but not its output for the backward. Prints both
loss curves (they agree to float rounding), the median step times
(interleaved) and the activation bytes one forward keeps for the backward.

Text: the GPL-3 licence that every Debian system ships
(/usr/share/common-licenses/GPL-3, package base-files).

    PYTHONPATH=build/python .venv/bin/python examples/train_gpt_memory.py [--steps 200]
"""
import argparse
import copy
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

import gelu_fusion

TEXT = "/usr/share/common-licenses/GPL-3"


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (u.transpose(1, 2) for u in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, d, layers, heads, ctx):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.ln(self.blocks(x)))


def save_memory(model):
    """Each MLP's Linear -> GELU -> Linear becomes one GeluLinear (same
    Parameters)."""
    for blk in model.blocks:
        fc1, act, fc2 = blk.mlp
        blk.mlp = gelu_fusion.GeluLinear.from_modules(fc1, act, fc2)
    return model


def kept_bytes(model, idx):
    """Bytes of the distinct non-Parameter storages autograd keeps."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    kept = {}

    def pack(t):
        kept.setdefault(t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(idx)
    return sum(n for p, n in kept.items() if p not in params)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=64)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    text = open(TEXT, encoding="utf-8").read()
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text])
    unfused = GPT(len(chars), a.d, a.layers, 4, a.ctx)
    fused = save_memory(copy.deepcopy(unfused))
    models = {"unfused": unfused, "fused": fused}
    opts = {k: torch.optim.AdamW(m.parameters(), lr=3e-3) for k, m in models.items()}
    losses = {k: [] for k in models}
    times = {k: [] for k in models}
    gen = torch.Generator().manual_seed(1)
    for step in range(a.steps):
        starts = torch.randint(0, len(data) - a.ctx - 1, (a.batch,), generator=gen)
        idx = torch.stack([data[s:s + a.ctx] for s in starts])
        tgt = torch.stack([data[s + 1:s + a.ctx + 1] for s in starts])
        for k in (models if step % 2 else reversed(list(models))):  # interleaved
            t0 = time.perf_counter()
            logits = models[k](idx)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
            opts[k].zero_grad()
            loss.backward()
            opts[k].step()
            times[k].append(time.perf_counter() - t0)
            losses[k].append(loss.item())
        if step % 20 == 0 or step == a.steps - 1:
            u, f = losses["unfused"][-1], losses["fused"][-1]
            print(f"step {step:4d}  loss unfused {u:.6f}  fused {f:.6f}  "
                  f"rel diff {abs(u - f) / abs(u):.1e}")
    worst = max(abs(u - f) / abs(u) for u, f in zip(losses["unfused"], losses["fused"]))
    print(f"worst relative loss difference over {a.steps} steps: {worst:.1e}")
    mu, mf = (statistics.median(times[k]) * 1e3 for k in ("unfused", "fused"))
    print(f"median step: unfused {mu:.1f} ms, fused {mf:.1f} ms ({mu / mf:.3f}x)")
    idx = data[:a.batch * a.ctx].view(a.batch, a.ctx)
    bu, bf = kept_bytes(unfused, idx), kept_bytes(fused, idx)
    print(f"activations kept for the backward: unfused {bu / 2**20:.2f} MiB, "
          f"fused {bf / 2**20:.2f} MiB ({bf / bu:.3f}x)")


if __name__ == "__main__":
    main()
