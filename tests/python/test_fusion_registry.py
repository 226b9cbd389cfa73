"""The fusions as one ordered registry of patterns
(gelu_fusion/fusion/registry.py): the order fuse applies them in, the
options that turn each off, and a new fusion added as a pattern of its
own, whose reasons explain prints."""
import pytest
import torch
from torch import nn

import gelu_fusion
from gelu_fusion.fusion import graph as g
from gelu_fusion.fusion import registry as fusion_registry
from gelu_fusion.fusion import Pattern


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))


def test_order_and_options():
    names = [p.name for p in fusion_registry.PATTERNS]
    assert names == ["formula", "gelu", "geglu", "bias", "add", "save_memory"]
    # Each option of fuse turns off its pattern, nothing else.
    for p in fusion_registry.PATTERNS:
        if p.option:
            left = fusion_registry.enabled({p.option: False})
            assert [q.name for q in left] == [n for n in names if n != p.name]
    r = gelu_fusion.explain(mlp(), bias=False, save_memory=False, print_table=False)
    assert [s.result for s in r.sites] == ["gelu"]
    r = gelu_fusion.explain(mlp(), save_memory=False, print_table=False)
    assert [s.result for s in r.sites] == ["bias_gelu"]


def _leave_every_gelu(gm, path):
    """A pattern that matches every canonical gelu and leaves it, giving
    its reason (as a fusion that cannot rewrite a match does)."""
    for node in gm.graph.nodes:
        site = node.meta.get("gf_site")
        if g.is_canonical(node) and site is not None and site.result == "gelu":
            site.reason = "left by the test pattern"
    return []


def test_a_new_pattern_is_registered_in_order_and_explained():
    p = Pattern("test_leave", None, _leave_every_gelu, "leaves every gelu")
    fusion_registry.register(p, after="gelu")
    try:
        names = [q.name for q in fusion_registry.PATTERNS]
        assert names.index("test_leave") == names.index("gelu") + 1
        r = gelu_fusion.explain(mlp(), bias=False, save_memory=False,
                                print_table=False)
        assert [s.reason for s in r.sites] == ["left by the test pattern"]
        assert "left by the test pattern" in r.table()
        with pytest.raises(ValueError, match="registered"):
            fusion_registry.register(p)
        with pytest.raises(ValueError, match="no pattern named 'nope'"):
            fusion_registry.register(Pattern("x", None, _leave_every_gelu, ""),
                                     after="nope")
    finally:
        fusion_registry.unregister("test_leave")
    assert "test_leave" not in [q.name for q in fusion_registry.PATTERNS]


def test_the_registrys_old_module_names_still_work():
    """gelu_fusion.fusion_registry and gelu_fusion.fusion_pattern, the
    names a pattern of one's own was registered through before the
    package, are the same modules as gelu_fusion.fusion's."""
    import importlib

    import gelu_fusion.fusion_registry as old_registry
    from gelu_fusion.fusion_pattern import Pattern as OldPattern
    assert old_registry is importlib.import_module("gelu_fusion.fusion.registry")
    assert old_registry.register is gelu_fusion.fusion.register
    assert OldPattern is Pattern
    assert gelu_fusion.fusion_registry.PATTERNS is fusion_registry.PATTERNS
