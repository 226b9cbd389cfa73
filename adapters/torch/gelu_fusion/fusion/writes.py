"""Which nodes of a traced graph write to a tensor, and which values may
share memory: what the registry (registry.py) needs to hold every
fusion to one rule, that a fused node reads its inputs as the original
code read them.

Writes come from the call itself, as PyTorch states them:
- an ATen schema's write annotation (`mul_(Tensor(a!) self, ...)`,
  `relu_`, every `out=` variant), looked up by the method's or function's
  name (Dynamo's and fx's `h.mul_(3)`, `torch.relu_(h)`, aten overloads);
- `out=` passed to any call; `inplace=True` of a torch.nn.functional call
  or of a torch.nn module (`nn.ReLU(inplace=True)`);
- `t[i] = v` (operator.setitem) and `t += v` (operator.iadd, ...);
- a method whose name ends in `_`, where no schema says otherwise;
- a call this module cannot see into (a user module called as a leaf, a
  module with hooks, a function outside torch, operator and builtins): it
  may write any tensor it is given.

Aliases: a call's output may share memory with its inputs where the
schema says so (`view`, `reshape`, `t`, `chunk`, `contiguous`, `to`),
for indexing and attributes (`h[..., :8]`, `h.T`), for the calls that
return their input unannotated (dropout in eval, `type_as`), and for
every call it cannot see into; get_attr nodes of the same attribute are
one tensor. Two inputs of the traced module are taken as different
tensors (a caller passing one tensor twice, then writing it inside the
forward, is not seen).
"""
import builtins
import inspect
import math
import operator
from functools import lru_cache
from typing import Dict, Iterable, List, Set, Tuple

import torch
import torch.fx
from torch import nn
from torch.fx import Node

from .. import functional as _functional
from . import runtime as _runtime

# The in-place operators of Python: `t += v` is operator.iadd(t, v).
_INPLACE_OPERATORS = frozenset(getattr(operator, n) for n in (
    "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "imatmul",
    "iand", "ior", "ixor", "ilshift", "irshift"))
# Calls whose output may be their input although no schema says so.
_RETURN_INPUT = frozenset({"dropout", "feature_dropout", "alpha_dropout",
                           "feature_alpha_dropout", "dropout1d", "dropout2d",
                           "dropout3d", "type_as", "float", "double", "half",
                           "bfloat16", "cpu", "cuda", "type", "identity"})
# Methods ending in `_` that change no tensor's values.
_NOT_DATA_WRITES = frozenset({"requires_grad_", "share_memory_", "retain_grad_",
                              "record_stream_"})
# torch.nn modules whose output may be (a view of) their input.
_NN_RETURN_INPUT = (nn.Identity, nn.Flatten, nn.Unflatten, nn.Dropout, nn.Dropout1d,
                    nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)
# Our own calls: fresh outputs, no writes.
_OURS = frozenset((_functional.gelu, _functional.bias_gelu, _functional.add_gelu,
                   _functional.geglu)
                  + tuple(getattr(_runtime, n) for n in _runtime.__all__))
_PURE_MODULES = ("_operator", "operator", "builtins", "math")


@lru_cache(maxsize=None)
def _schema_effects(name: str) -> Tuple[Tuple[Tuple[int, str, bool], ...], bool]:
    """For aten::<name>, over all its overloads: the written arguments as
    (position, name, keyword-only), and whether an output may alias an
    input. An out= overload adds only its `out` (written where passed),
    not its return, which is the `out` it was given. ((), False) for a
    fresh, pure op; None where aten has no such op."""
    packet = getattr(torch.ops.aten, name, None) if name else None
    if packet is None or not hasattr(packet, "overloads"):
        return None
    written, aliases = set(), False
    for ov in packet.overloads():
        schema = getattr(packet, ov)._schema
        writes = [(i, a.name, a.kwarg_only) for i, a in enumerate(schema.arguments)
                  if a.alias_info is not None and a.alias_info.is_write]
        written.update(writes)
        if any(kw for _, _, kw in writes):
            continue  # an out= variant
        aliases = aliases or any(r.alias_info is not None for r in schema.returns)
    return tuple(sorted(written)), aliases


def _bound(node: Node, pos: int, name: str, kwarg_only: bool):
    if name in node.kwargs:
        return node.kwargs[name]
    if not kwarg_only and pos < len(node.args):
        return node.args[pos]
    return None


def _inplace_flag(fn, node: Node) -> bool:
    """fn(..., inplace=True) as called by node."""
    if "inplace" in node.kwargs:
        return node.kwargs["inplace"] is True
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return False
    if "inplace" in params:
        i = params.index("inplace")
        return i < len(node.args) and node.args[i] is True
    return False


def _nodes(values) -> List[Node]:
    out = []
    torch.fx.map_arg(values, lambda n: out.append(n))
    return out


class Effects:
    """The writes and may-alias classes of a graph's nodes (see the module
    doc). `writes(node)`: the argument nodes the call may write;
    `same_memory(a)`: the nodes that may share memory with a."""

    def __init__(self, graph: torch.fx.Graph, root: nn.Module):
        self._root = root
        self._parent: Dict[Node, Node] = {}
        self._writes: Dict[Node, List[Node]] = {}
        attrs = {}
        for node in graph.nodes:
            self._parent[node] = node
            if node.op == "get_attr":
                self._union(node, attrs.setdefault(node.target, node))
            elif node.op in ("call_function", "call_method", "call_module"):
                written, aliased = self._effects(node)
                self._writes[node] = written
                for a in aliased:
                    self._union(node, a)
        self._members: Dict[Node, Set[Node]] = {}
        for node in self._parent:
            self._members.setdefault(self._find(node), set()).add(node)

    def _find(self, n: Node) -> Node:
        while self._parent[n] is not n:
            self._parent[n] = self._parent[self._parent[n]]
            n = self._parent[n]
        return n

    def _union(self, a: Node, b: Node) -> None:
        if a in self._parent and b in self._parent:
            self._parent[self._find(a)] = self._find(b)

    def writes(self, node: Node) -> List[Node]:
        return self._writes.get(node, [])

    def same_memory(self, node: Node) -> Set[Node]:
        if node not in self._parent:
            return {node}
        return self._members[self._find(node)]

    def _effects(self, node: Node) -> Tuple[List[Node], List[Node]]:
        """(nodes the call may write, nodes its output may alias)."""
        inputs = node.all_input_nodes
        out = node.kwargs.get("out")
        out_nodes = _nodes(out) if out is not None else []
        if node.op == "call_module":
            m = self._root.get_submodule(node.target)
            if isinstance(m, tuple(_ops_modules())):
                return [], []
            if (type(m).__module__.startswith("torch.nn.")
                    and not (m._forward_hooks or m._forward_pre_hooks)):
                first = inputs[:1]
                if getattr(m, "inplace", False) is True:
                    return first, first
                return [], (first if isinstance(m, _NN_RETURN_INPUT) else [])
            return inputs, inputs  # a module we cannot see into
        target = node.target
        if node.op == "call_function":
            if target in _OURS:
                return [], []
            if target is operator.setitem:
                return inputs[:1], []
            if target in _INPLACE_OPERATORS:
                return inputs[:1], inputs[:1]
            if target in (operator.getitem, builtins.getattr):
                return out_nodes, inputs[:1]
            name = getattr(target, "__name__", "")
            if isinstance(target, torch._ops.OpOverload):
                name = target._schema.name.split("::")[-1]
            owner = getattr(target, "__module__", None) or ""
            cls = getattr(target, "__objclass__", None)
            if isinstance(cls, type) and issubclass(cls, torch._C.TensorBase):
                owner = "torch"  # Tensor.mul_ and the other method descriptors
            if not (owner.startswith("torch") or isinstance(target, torch._ops.OpOverload)
                    or owner in _PURE_MODULES or target in vars(math).values()):
                return inputs, inputs  # a function we cannot see into
            if owner in _PURE_MODULES:
                return out_nodes, []
            inplace = _inplace_flag(target, node)
        else:
            name, inplace = target, False
        found = _schema_effects(name)
        first = [a for a in node.args[:1] if isinstance(a, Node)]
        if found is None:
            # Not an ATen op (a Python-level method or function of torch,
            # such as Tensor.float or F.cross_entropy): it may return its
            # first argument as it is.
            writes_self = (name.endswith("_") and not name.endswith("__")
                           and name not in _NOT_DATA_WRITES) or inplace
            return (first if writes_self else []) + out_nodes, first + out_nodes
        written, aliases = found
        w = list(out_nodes)
        for pos, arg, kwarg_only in written:
            v = _bound(node, pos, arg, kwarg_only)
            w += _nodes(v) if v is not None else []
        if inplace:
            w += first
        if name in _NOT_DATA_WRITES:
            w = []
        if w:
            return w, w  # an in-place or out= call returns what it wrote
        if aliases:
            return w, inputs
        return w, (first if name in _RETURN_INPUT else [])


@lru_cache(maxsize=None)
def _ops_modules() -> tuple:
    from ..modules import GELU, LinearBiasGELU
    return (GELU, LinearBiasGELU)


def describe_write(node: Node) -> str:
    """'`mul_` (model.py:12)': the writing call, for explain."""
    from .report import source_of
    t = node.target
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    if t is operator.setitem:
        name = "an indexed assignment"
    elif t in _INPLACE_OPERATORS:
        name = f"`{name}` (an augmented assignment)"
    else:
        name = f"`{name}`"
    where = source_of(node.meta.get("gf_source"))
    return name + (f" ({where})" if where else "")


def written_between(effects: Effects, value: Node, after: float, order: Dict[Node, float],
                    skip: Iterable[Node] = ()) -> List[Node]:
    """The nodes placed after `after` (order: a node's place) that may
    write `value` or memory it shares."""
    memory = effects.same_memory(value)
    skip = set(skip)
    return [w for w, ws in effects._writes.items()
            if ws and w not in skip and order.get(w, -1) > after
            and any(x in memory for x in ws)]
