"""A per-thread scratch buffer for the memory-saving node's y.

The node (gelu_linear.py) needs y = gelu(h + b1) only for one matmul: the
forward's F.linear, and in the backward W2's gradient; y never leaves the
node. Kept from one call to the next, its pages are touched once instead of
every step: a fresh [tokens, hidden] tensor each call could be handed back
to the system by glibc's malloc and cost thousands of first-touch page
faults inside the kernel (bench/fuse_bench.py --backward-alone).

One buffer per thread that runs the node and per dtype and device, as
large as the largest y it has held (a GPT-2 small MLP at 2048 tokens, f32:
24 MiB), against one y per layer the node does not keep. ``empty_cache()``
frees them. A buffer is taken out while in use, so a nested call on the same
thread gets its own.
"""
import threading
import weakref
from typing import Dict, Tuple

import torch
from torch import Tensor

_Key = Tuple[torch.dtype, torch.device]


class _Buffers:
    def __init__(self) -> None:
        self.by_key: Dict[_Key, Tensor] = {}


_local = threading.local()
_all: "weakref.WeakSet[_Buffers]" = weakref.WeakSet()  # every live thread's
# Guards _all and the dicts against empty_cache; reentrant: _mine() takes
# it and is called with it held.
_lock = threading.RLock()


def _mine() -> _Buffers:
    b = getattr(_local, "buffers", None)
    if b is None:
        b = _local.buffers = _Buffers()
        with _lock:
            _all.add(b)
    return b


def take(shape, like: Tensor) -> Tensor:
    """A contiguous tensor of `shape` with like's dtype and device, contents
    undefined; hand it back with ``give_back`` once it is no longer used."""
    key = (like.dtype, like.device)
    n = 1
    for s in shape:
        n *= s
    if torch.is_inference_mode_enabled():
        # An inference tensor cannot be written outside inference mode
        # later: not cached (give_back drops it).
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    with _lock:
        buf = _mine().by_key.pop(key, None)
    if buf is None or buf.numel() < n:
        del buf  # freed before the larger one is allocated
        buf = torch.empty(n, dtype=like.dtype, device=like.device)
    return buf[:n].view(shape)


def give_back(t: Tensor) -> None:
    """Keeps the buffer under `t` (a tensor from ``take``) for this
    thread's next ``take``, unless it holds a larger one already."""
    if t.is_inference():
        return
    base = t._base if t._base is not None else t
    key = (base.dtype, base.device)
    with _lock:
        mine = _mine().by_key
        held = mine.get(key)
        if held is None or held.numel() < base.numel():
            mine[key] = base


def cached(dtype: torch.dtype, device="cpu"):
    """This thread's kept buffer for dtype and device, or None (for tests)."""
    with _lock:
        return _mine().by_key.get((dtype, torch.device(device)))


def empty_cache() -> None:
    """Frees the kept scratch buffers of every thread (a buffer in use by a
    running node is kept when that call ends)."""
    with _lock:
        for b in _all:
            b.by_key.clear()
