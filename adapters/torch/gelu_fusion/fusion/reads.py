"""What model code read outside its modules' own state while it was traced,
found from the bytecode of the code that ran: the facts a fused graph took
as fixed.

Watched (guard compares each at every call, by identity for
functions, classes and modules, by value for plain data):
- the globals the code read (`SCALE`, a helper function, `F`);
- attributes of Python modules and classes reached from a global
  (`F.gelu`, `torch.nn.functional.gelu`, `M.SCALE`): a monkeypatched
  functional or a class attribute set later;
- class attributes read through `self` by the modules traced into
  (`self.SCALE` where SCALE is the class's, a method of the class).

Not watched, and listed by `explain`: the variables of closures the code
read, and what objects held by the model or a global hold beyond the
first level (guard.freeze compares one level of their attributes).
"""
import dis
import enum
import types
from typing import Iterable, List, Tuple

import torch
from torch import nn

_MISSING = object()
_LOADS_GLOBAL = ("LOAD_GLOBAL", "LOAD_NAME")
_LOADS_ATTR = ("LOAD_ATTR", "LOAD_METHOD")


def class_attribute(cls: type, name: str):
    """cls.name as attribute lookup finds it on the class (its MRO's
    dicts: no descriptor is called), or _MISSING."""
    for k in cls.__mro__:
        d = k.__dict__
        if name in d:
            return d[name]
    return _MISSING


class Read:
    """One name the code read: in a dict (globals, a Python module's
    namespace) or on a class (through its MRO)."""
    __slots__ = ("owner", "name", "label")

    def __init__(self, owner, name: str, label: str):
        self.owner, self.name, self.label = owner, name, label

    def value(self):
        if isinstance(self.owner, dict):
            return self.owner.get(self.name, _MISSING)
        return class_attribute(self.owner, self.name)

    def __eq__(self, other):
        return (isinstance(other, Read) and other.owner is self.owner
                and other.name == self.name)

    def __hash__(self):
        return hash((id(self.owner), self.name))


def _codes(code: types.CodeType):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def _chain_owner(obj):
    """Where an attribute of obj is read from and watched: a Python
    module's namespace or a class; None for other objects."""
    if isinstance(obj, types.ModuleType):
        return vars(obj)
    if isinstance(obj, type):
        return obj
    return None


def _holds_state(v) -> bool:
    """An object whose attributes the guard compares one level deep."""
    return (isinstance(getattr(v, "__dict__", None), dict)
            and not isinstance(v, (nn.Module, torch.Tensor, types.FunctionType,
                                   types.MethodType, types.ModuleType, type,
                                   enum.Enum)))


def _label(owner, name: str) -> str:
    if isinstance(owner, type):
        return f"class attribute {owner.__qualname__}.{name}"
    mod = owner.get("__name__", "?")
    return f"{mod}.{name}"


def scan(codes_and_globals: Iterable[Tuple[types.CodeType, dict]],
         modules: Iterable[nn.Module]) -> Tuple[List[Read], List[str]]:
    """(the reads to watch, the facts that cannot be watched) of the code
    objects that ran, each with its globals, for the modules traced into."""
    reads, attr_names, unwatched = [], set(), []
    for code, g in codes_and_globals:
        for c in _codes(code):
            if c.co_freevars:
                unwatched.append(f"closure variable{'s' if len(c.co_freevars) > 1 else ''} "
                                 f"{', '.join(c.co_freevars)} of "
                                 f"{getattr(c, 'co_qualname', c.co_name)} (not checked)")
            cur = None  # the object a chain of attribute loads is on
            for ins in dis.get_instructions(c):
                if ins.opname in _LOADS_GLOBAL:
                    name = ins.argval
                    cur = g.get(name, _MISSING) if name in g else None
                    if cur is not None:
                        reads.append(Read(g, name, f"global {name}"))
                    if cur is _MISSING:
                        cur = None
                elif ins.opname in _LOADS_ATTR:
                    attr_names.add(ins.argval)
                    owner = _chain_owner(cur) if cur is not None else None
                    if owner is None:
                        cur = None
                        continue
                    value = (owner.get(ins.argval, _MISSING) if isinstance(owner, dict)
                             else class_attribute(owner, ins.argval))
                    if value is _MISSING:  # a module __getattr__, a metaclass
                        cur = None
                        continue
                    reads.append(Read(owner, ins.argval, _label(owner, ins.argval)))
                    cur = value
                elif ins.opname not in ("CACHE", "PRECALL", "EXTENDED_ARG"):
                    cur = None
    for r in reads:
        v = r.value()
        if r.label.startswith("global ") and _holds_state(v):
            unwatched.append(f"what {r.label} ({type(v).__name__}) holds beyond its "
                             "own attributes (not checked)")
    for m in modules:
        for k, v in m.__dict__.items():
            if not k.startswith("_") and _holds_state(v):
                unwatched.append(f"what {type(m).__name__}.{k} ({type(v).__name__}) "
                                 "holds beyond its own attributes (not checked)")
        own = (m.__dict__, m._parameters, m._buffers, m._modules)
        for name in sorted(attr_names):
            if any(name in d for d in own):
                continue
            cls = type(m)
            for k in cls.__mro__:
                if name in k.__dict__:
                    if not k.__module__.startswith("torch."):
                        reads.append(Read(cls, name, _label(cls, name)))
                    break
    return list(dict.fromkeys(reads)), list(dict.fromkeys(unwatched))
