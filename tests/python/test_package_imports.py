"""The gelu_fusion package's import graph has no cycle.

Every import statement counts, those inside functions too: an import
deferred into a function to dodge a cycle at load time is still a cycle in
the design. Read from the package's sources (adapters/torch/gelu_fusion),
not from what is installed, so a test run against an installed copy checks
the same files."""
import ast
import os
from typing import Dict, List, Set

import pytest

REPO = os.environ.get("GELU_FUSION_REPO") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE_DIR = os.path.join(REPO, "adapters", "torch", "gelu_fusion")


def module_names(root: str, package: str) -> Dict[str, str]:
    """{dotted module name: file} for every .py under root; a package is
    named by its __init__.py."""
    names = {}
    for dirpath, _, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        parts = [package] + ([] if rel == "." else rel.split(os.sep))
        for f in files:
            if not f.endswith(".py"):
                continue
            stem = f[:-3]
            names[".".join(parts if stem == "__init__" else parts + [stem])] = \
                os.path.join(dirpath, f)
    return names


def imports_of(name: str, path: str, modules: Set[str]) -> Set[str]:
    """The package's modules that the module `name` (file `path`) imports."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    is_package = os.path.basename(path) == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                # `import a.b.c` imports a, a.b and a.b.c
                found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                base = ".".join(base + (node.module.split(".") if node.module else []))
            else:
                base = node.module or ""
            # `from base import x`: the submodule base.x where x is one,
            # else base itself (a parent package that its submodule imports
            # from is not an edge: Python initialises it before the child).
            subs = {f"{base}.{a.name}" for a in node.names} & modules
            found.update(subs if subs else {base})
    return {m for m in found if m in modules and m != name}


def import_graph(root: str, package: str) -> Dict[str, Set[str]]:
    names = module_names(root, package)
    return {n: imports_of(n, p, set(names)) for n, p in names.items()}


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one module
    (Tarjan's algorithm, iterative), each sorted."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_gelu_fusion_has_no_import_cycle():
    assert os.path.isfile(os.path.join(PACKAGE_DIR, "__init__.py")), PACKAGE_DIR
    graph = import_graph(PACKAGE_DIR, "gelu_fusion")
    assert "gelu_fusion.fusion.api" in graph and graph["gelu_fusion.fusion.api"], \
        "the import graph is empty: the walk found no imports"
    found = cycles(graph)
    assert not found, "import cycles in gelu_fusion:\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_the_fusion_passes_are_a_package_with_one_file_a_pattern():
    graph = import_graph(PACKAGE_DIR, "gelu_fusion")
    flat = sorted(n for n in graph if n.startswith("gelu_fusion.fusion_"))
    assert not flat, f"fusion modules outside gelu_fusion/fusion/: {flat}"
    patterns = {n for n in graph if n.startswith("gelu_fusion.fusion.patterns.")}
    from gelu_fusion.fusion import registry
    registered = {p.apply.__module__ for p in registry.PATTERNS}
    assert registered == patterns, (registered, patterns)


@pytest.mark.parametrize("deferred", [False, True])
def test_the_check_finds_a_cycle(tmp_path, deferred):
    """A planted cycle through a sub-package, at module level or inside a
    function, is found."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from .sub import b\n\ndef f():\n    return b.g()\n")
    (pkg / "sub" / "__init__.py").write_text("")
    body = "    from ..a import f\n    return f\n" if deferred else "    return 1\n"
    top = "" if deferred else "from .. import a\n"
    (pkg / "sub" / "b.py").write_text(f"{top}\ndef g():\n{body}")
    found = cycles(import_graph(str(pkg), "pkg"))
    assert found == [["pkg.a", "pkg.sub.b"]], found


def test_the_check_passes_a_tree(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import a, b\n")
    (pkg / "a.py").write_text("from .b import g\n")
    (pkg / "b.py").write_text("import os\n\ndef g():\n    return os.sep\n")
    graph = import_graph(str(pkg), "pkg")
    assert graph["pkg"] == {"pkg.a", "pkg.b"} and graph["pkg.a"] == {"pkg.b"}
    assert cycles(graph) == []
