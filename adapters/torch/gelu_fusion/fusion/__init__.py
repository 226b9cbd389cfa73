"""fuse(model), explain(model) and the torch.compile backend: GELUs found
in a model's code and run through gelu_fusion's ops, fused with their bias,
add or gate where the graph allows.

Layout, each file one job (imports only point down this list):

    api.py          fuse, explain: walks the module tree, traces, installs
    compile.py      backend(): the same patterns on Dynamo's graphs
    registry.py     the ordered list of patterns, and apply()
    patterns/       one file a pattern (formula, gelu, geglu, bias, add,
                    save_memory), each a pattern.Pattern
    rule.py         the rule every pattern is held to: no read moved past
                    a write (writes.py finds the writes)
    transformer.py  nn.TransformerEncoderLayer's feed-forward block
    trace.py        torch.fx tracing of one module (pystate.py, reads.py:
                    the Python state the trace read)
    call.py         FusedCall: how a fused module runs at each call
    guard.py        what a call checks before it runs the fused graph
    graph.py        helpers on fx graphs the patterns share
    runtime.py      the functions fused graphs call, with their checks
    conv1d.py       Hugging Face's Conv1D, seen as F.linear
    report.py       Site and Report: what explain prints
"""
from .api import explain, fuse, run_fuse
from .compile import backend
from .pattern import Pattern
from .registry import register, unregister
from .report import Report, Site

__all__ = ["fuse", "explain", "run_fuse", "backend", "Pattern", "register",
           "unregister", "Report", "Site"]
