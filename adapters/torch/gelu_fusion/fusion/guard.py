"""What a fused graph assumed about the model, checked at every call.

A traced graph stands for the code of the modules it was traced through
(their forwards, inlined) at the time of the trace: which module objects
sit where, which Parameters are None, the plain attributes the code read
as constants, the globals it read. `Guard.holds()` says whether all of
that is still so, and whether anything would run differently if the
modules were called one by one (hooks, a forward set on an object). When
it does not hold, the module runs its own forward instead (call.py).

Modules the graph still calls as modules (call_module nodes) are not
guarded: the graph calls whatever sits at their path then, with its hooks.
"""
import copy
import enum
import types
from typing import Dict, List, Tuple

import torch
from torch import nn

# nn.Module's own bookkeeping, not state a forward reads.
# Also the bookkeeping fully_shard (FSDP2) sets on each module it manages:
# it marks the module, the forward is the same (its hooks are checked).
_MODULE_INTERNALS = frozenset(nn.Module().__dict__) | {
    "_call_impl", "_compiled_call_impl", "training",
    "_is_fsdp_managed_module", "_fsdp_use_orig_params"}
_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
          "_backward_pre_hooks")
_SIMPLE = (type(None), bool, int, float, complex, str, bytes, torch.dtype,
           torch.device, torch.layout, torch.memory_format, enum.Enum, range,
           slice, type(Ellipsis))
_BY_IDENTITY = (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                types.ModuleType, type, nn.Module, torch.Tensor)


_SHARED = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type)


class Same:
    """A frozen reference: equal to another Same of the very same object.
    deepcopy maps it to the copy of its object (what a copied model holds
    where the original held this one); functions, classes and Python
    modules stay shared, as deepcopy keeps them."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, Same) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)

    def __deepcopy__(self, memo):
        if isinstance(self.obj, _SHARED):
            return self
        return Same(copy.deepcopy(self.obj, memo))


def module_hooks(m: nn.Module) -> bool:
    return any(getattr(m, h, None) for h in _HOOKS)


def global_hooks() -> bool:
    """Hooks registered for every module (register_module_forward_hook, ...)."""
    mm = nn.modules.module
    return bool(mm._global_forward_hooks or mm._global_forward_pre_hooks
                or mm._global_backward_hooks or mm._global_backward_pre_hooks
                or getattr(mm, "_global_forward_hooks_always_called", None))


def freeze(v, depth: int = 0):
    """A value that compares equal (==) exactly when v has not changed as
    far as code reading it can tell: simple values by value, containers by
    their contents, functions, modules and tensors by identity, other
    objects by identity and their own attributes (one level)."""
    if isinstance(v, _SIMPLE):
        return (type(v), v)
    if isinstance(v, _BY_IDENTITY) or depth > 2:
        return Same(v)
    if isinstance(v, (list, tuple)):
        return (type(v), tuple(freeze(e, depth + 1) for e in v))
    if isinstance(v, dict):
        return (type(v), tuple((freeze(k, depth + 1), freeze(e, depth + 1))
                               for k, e in v.items()))
    if isinstance(v, (set, frozenset)):
        return (type(v), frozenset(freeze(e, depth + 1) for e in v))
    d = getattr(v, "__dict__", None)
    if isinstance(d, dict):
        return (Same(v), tuple((k, freeze(e, 3)) for k, e in d.items()))
    return Same(v)


def _attributes(m: nn.Module) -> Tuple:
    return tuple((k, freeze(v)) for k, v in m.__dict__.items()
                 if k not in _MODULE_INTERNALS)


def _slots(m: nn.Module) -> Tuple:
    """Which Parameters and buffers exist and which are None."""
    return (tuple((k, v is None) for k, v in m._parameters.items()),
            tuple((k, v is None) for k, v in m._buffers.items()))


class _Entry:
    __slots__ = ("module", "cls", "attributes", "slots", "children")

    def __deepcopy__(self, memo):
        new = _Entry.__new__(_Entry)
        new.module = copy.deepcopy(self.module, memo)
        new.cls, new.slots = self.cls, self.slots
        new.attributes = copy.deepcopy(self.attributes, memo)
        new.children = {k: copy.deepcopy(c, memo) for k, c in self.children.items()}
        return new

    def __init__(self, m: nn.Module, children: Dict[str, nn.Module]):
        self.module, self.cls = m, type(m)
        self.attributes, self.slots = _attributes(m), _slots(m)
        self.children = children


class Guard:
    """The state of `modules` (the root first) and of `global_reads`
    (reads.Read: globals, attributes of Python modules and classes
    the code read) now, to compare with at each call."""

    def __init__(self, root: nn.Module, modules: List[nn.Module],
                 global_reads=()):
        inside = set(map(id, modules))
        self.root = root
        self.entries = []
        for m in [root] + [m for m in modules if m is not root]:
            kids = {n: c for n, c in m._modules.items()
                    if c is not None and id(c) in inside}
            self.entries.append(_Entry(m, kids))
        self.global_reads = [(r, freeze(r.value())) for r in global_reads]
        self._split_reads()

    def _split_reads(self) -> None:
        """Names in a dict (globals, a Python module) bound to a function,
        class or module are compared by identity in one tight loop; the
        rest through freeze."""
        self._same_in_dict, self._other_reads = [], []
        for r, v in self.global_reads:
            if type(v) is Same and isinstance(r.owner, dict):
                self._same_in_dict.append((r.owner, r.name, v.obj, r.label))
            else:
                self._other_reads.append((r, v))

    def __deepcopy__(self, memo):
        """The guard of a copied model: its modules and what they held
        mapped to the copies; the globals read stay those of the code."""
        new = Guard.__new__(Guard)
        memo[id(self)] = new
        new.root = copy.deepcopy(self.root, memo)
        new.entries = copy.deepcopy(self.entries, memo)
        new.global_reads = self.global_reads
        new._same_in_dict, new._other_reads = self._same_in_dict, self._other_reads
        return new

    def why_not(self) -> str:
        """'' while the graph still computes what the modules would; else
        what changed."""
        for i, e in enumerate(self.entries):
            m = e.module
            if type(m) is not e.cls:
                return f"{e.cls.__name__} changed its class"
            if i and module_hooks(m):
                return f"{e.cls.__name__} has hooks"
            if "forward" in m.__dict__:
                return f"{e.cls.__name__} has its own forward on the object"
            for name, child in e.children.items():
                if m._modules.get(name) is not child:
                    return f"{e.cls.__name__}.{name} was replaced"
            if _slots(m) != e.slots:
                return f"{e.cls.__name__}: a Parameter or buffer was added or removed"
            if _attributes(m) != e.attributes:
                return f"{e.cls.__name__}: an attribute changed"
        for d, n, obj, label in self._same_in_dict:
            if d.get(n, d) is not obj:
                return f"{label} changed"
        for r, v in self._other_reads:
            if freeze(r.value()) != v:
                return f"{r.label} changed"
        if global_hooks():
            return "global module hooks are registered"
        return ""
