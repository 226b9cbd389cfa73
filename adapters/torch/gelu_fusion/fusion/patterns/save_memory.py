"""A fused GELU (or GeGLU) whose only user is a Linear becomes one call
that keeps the GELU's input and not its output for the backward
(gelu_linear.py: the output is recomputed inside the fused backward pass):
a Linear -> GELU -> Linear block keeps d + 4d instead of d + 4d + 4d values
per token, with the same results.

Matched after the bias and GeGLU passes, the second Linear being an
nn.Linear (exact type, no hooks) called as a module, F.linear, or Hugging
Face's Conv1D traced through (GPT-2's MLP: addmm on the flattened input,
weight [in, out]; conv1d.py), which runs as F.linear with weight.t():

- linear_bias_gelu(x, W1, b1) -> Linear   (nn.Linear / F.linear with bias)
- addmm_bias_gelu(b1, a, W1) -> Linear    (a Conv1D before the GELU)
- gelu(h) -> Linear                       (any other GELU input)
- geglu(x) / geglu of the second half / geglu of two Linears -> Linear

A dropout between the GELU and the second Linear is left unfused (the
dropout's input is kept as PyTorch keeps it), except nn.Dropout(p=0),
F.dropout with a constant p=0 (nn.Dropout(p=0) as torch.compile inlines it)
and nn.Identity, which are dropped; explain() says which. Checked at each call
(runtime.py): the tensors fit the kernels (else the original
expression).
"""
import torch.nn.functional as F
from torch import nn
from torch.fx import Node

from .. import conv1d as conv1d
from .. import graph as g
from .. import runtime as rt
from ..trace import has_hooks
from ..pattern import Pattern

_DROPOUTS = (nn.Dropout, nn.AlphaDropout)
_NOTE = "; with the next Linear as one node keeping the GELU's input, not its output"
_NOTE_CONV1D = ("; with the next Conv1D `{}` (as a Linear on its weight.t()) as one "
                "node keeping the GELU's input, not its output")


def _site(node: Node):
    return node.meta.get("gf_site") or node.meta.get("gf_fused_site")


def _second_linear(gm, node: Node):
    """(linear node, [nodes between], weight, bias, why) for the Linear that
    is node's only user (through p=0 dropouts / Identity); weight is None
    with `why` when there is none to fuse. A Conv1D traced through comes
    back as its conv1d.Conv1DUse in place of the linear node."""
    between = []
    cur = node
    while True:
        use, why = conv1d.match(cur)
        if use is not None or why:
            return use, between, None, None, why
        if len(cur.users) != 1:
            linear = any(type(g.module_of(gm, u)) is nn.Linear or g.calls(u, (F.linear,))
                         for u in cur.users)
            return None, between, None, None, (
                "the GELU's output has another use than the Linear" if linear else "")
        (user,) = cur.users
        mod = g.module_of(gm, user)
        if type(mod) is nn.Identity or (type(mod) in _DROPOUTS and mod.p == 0):
            between.append(user)
            cur = user
            continue
        if g.calls(user, (F.dropout,)) and user.args[:1] == (cur,) \
                and g.arg(user, 1, "p", 0.5) == 0 and not g.arg(user, 3, "inplace", False):
            between.append(user)  # F.dropout(y, 0.0): nn.Dropout(p=0) inlined
            cur = user
            continue
        if isinstance(mod, _DROPOUTS) or g.calls(user, (F.dropout,), ("dropout",)):
            return None, between, None, None, (
                "a dropout between the GELU and the next Linear: left unfused "
                "(the dropout's input is kept)")
        if conv1d.is_conv1d(mod) and has_hooks(mod):  # called as it is, not traced
            return None, between, None, None, f"{user.target} has hooks"
        if type(mod) is nn.Linear and user.args[:1] == (cur,) and len(user.args) == 1 \
                and not user.kwargs:
            if has_hooks(mod):
                return None, between, None, None, f"{user.target} has hooks"
            with gm.graph.inserting_before(user):
                w = gm.graph.get_attr(f"{user.target}.weight")
                b = (gm.graph.get_attr(f"{user.target}.bias")
                     if mod.bias is not None else None)
            return user, between, w, b, ""
        if g.calls(user, (F.linear,)) and user.args[:1] == (cur,):
            return user, between, g.arg(user, 1, "weight"), g.arg(user, 2, "bias"), ""
        return None, between, None, None, ""


# The fused calls this pass extends, and the call that replaces each with
# the next Linear: (new function, the fused call's arguments kept).
_WITH_LINEAR = {
    rt.linear_bias_gelu: rt.linear_bias_gelu_linear,
    rt.addmm_bias_gelu: rt.addmm_bias_gelu_linear,
    rt.geglu_halves: rt.geglu_halves_linear,
    rt.geglu_halves_gelu_second: rt.geglu_halves_gelu_second_linear,
    rt.geglu_two_linears: rt.geglu_two_linears_linear,
    rt.geglu_two_linears_bias: rt.geglu_two_linears_bias_linear,
}


def _args(node: Node, w, b) -> tuple:
    """The fused call's arguments with the Linear's weight and bias added."""
    if node.target in (rt.geglu_halves, rt.geglu_halves_gelu_second):
        # (x, half, form, dim, split): the Linear's w and b go before form.
        return tuple(node.args[:2]) + (w, b) + tuple(node.args[2:])
    return tuple(node.args[:-1]) + (w, b, node.args[-1])


def fuse(gm) -> None:
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if g.is_canonical(node):
            fn = rt.gelu_linear
        elif node.target in _WITH_LINEAR and _site(node) is not None:
            fn = _WITH_LINEAR[node.target]
        else:
            continue
        site = _site(node)
        lin, between, w, b, why = _second_linear(gm, node)
        if lin is None:
            if why:
                site.reason += f"; memory saving not applied: {why}"
            continue
        if isinstance(lin, conv1d.Conv1DUse):
            y = between[-1] if between else node
            new = conv1d.rewrite(graph, lin, y, fn, lambda w, b: _args(node, w, b),
                                 [node] + between)
            new.meta.update(node.meta)
            note = _NOTE_CONV1D.format(lin.module)
        else:
            new = g.replace(graph, lin, fn, _args(node, w, b), [node] + between)
            note = _NOTE
        new.meta.pop("gf_site", None)
        new.meta["gf_fused_site"] = site
        if site.result == "gelu" and site.reason == "":
            site.reason = note[2:]
        else:
            site.reason += note


PATTERN = Pattern(
    "save_memory", "save_memory", lambda gm, path: fuse(gm),
    "a gelu or geglu whose only user is a Linear becomes one node that "
    "keeps the GELU's input")
