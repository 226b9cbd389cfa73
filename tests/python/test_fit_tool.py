"""tools/fit/fit_gelu.py --forms F --update: refits some forms' tables in the
existing coefficient file and leaves every other line, so that adding a form
does not move the other forms' results (a full rerun does not reproduce the
committed tables bit for bit across numpy versions)."""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.environ.get("GELU_FUSION_REPO") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "fit", "fit_gelu.py")
COEFFICIENTS = os.path.join(REPO, "src", "cpu", "gelu_coefficients.h")


def _tool():
    spec = importlib.util.spec_from_file_location("fit_gelu", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


def test_update_refits_only_the_named_forms_tables(tmp_path):
    out = tmp_path / "coefficients.h"
    shutil.copy(COEFFICIENTS, out)
    r = _run("--forms", "quick", "--update", "--output", str(out))
    assert r.returncode == 0, r.stderr
    before = open(COEFFICIENTS).read().split("\n")
    after = open(out).read().split("\n")
    blocks = _tool().blocks
    old, new = blocks(before), blocks(after)
    assert set(old) == set(new)  # nothing lost, nothing added
    quick = {n for n in old if n.startswith("kQuick")}
    assert quick == {"kQuickValue", "kQuickGrad", "kQuickValueBf16F16",
                     "kQuickGradBf16F16", "kQuickA"}
    # Every other table, and every line outside the tables, is untouched.
    for name in set(old) - quick:
        assert before[slice(*old[name])] == after[slice(*new[name])], name
    def outside(lines, spans):
        inside = {i for a, b in spans.values() for i in range(a, b)}
        return [line for i, line in enumerate(lines) if i not in inside]
    assert outside(before, old) == outside(after, new)
    # The refitted tables are the tool's own output for the form.
    fresh = _run("--stdout").stdout.split("\n")
    spans = blocks(fresh)
    for name in quick:
        assert after[slice(*new[name])] == fresh[slice(*spans[name])], name


def test_update_adds_a_missing_table_before_the_namespace_end(tmp_path):
    out = tmp_path / "coefficients.h"
    lines = open(COEFFICIENTS).read().split("\n")
    spans = _tool().blocks(lines)
    a, b = spans["kQuickA"]
    out.write_text("\n".join(lines[:a] + lines[b:]))
    r = _run("--forms", "quick", "--update", "--output", str(out))
    assert r.returncode == 0, r.stderr
    after = open(out).read().split("\n")
    assert "kQuickA" in _tool().blocks(after)
    end = after.index("}  // namespace gelu::cpu::gelu_coefficients")
    assert after[end - 2].startswith("inline constexpr float kQuickA[2]")


@pytest.mark.parametrize("args,message", [
    (("--forms", "gelu", "--stdout"), "unknown forms"),
    (("--update",), "--update needs --forms"),
    (("--forms", "quick", "--update", "--stdout"), "--update needs --forms"),
])
def test_bad_arguments_are_refused(args, message):
    r = _run(*args)
    assert r.returncode == 2 and message in r.stderr


def test_wide_tables_are_whole_blocks_a_form(tmp_path):
    """The wide core's file (--wide) is one the update can edit: each form's
    Value, Grad and Width tables parse as blocks, and refitting one form
    leaves the others' lines as they were."""
    wide = os.path.join(REPO, "src", "cpu", "gelu_coefficients_w32.h")
    lines = open(wide).read().split("\n")
    names = set(_tool().blocks(lines))
    assert names == {"k%s%sW32" % (f, t) for f in ("Erf", "Tanh", "Quick")
                     for t in ("Value", "Grad", "Width")}
    out = tmp_path / "w32.h"
    shutil.copy(wide, out)
    r = _run("--wide", "--forms", "tanh", "--update", "--output", str(out))
    assert r.returncode == 0, r.stderr
    after = open(out).read().split("\n")
    old, new = _tool().blocks(lines), _tool().blocks(after)
    for name in names - {"kTanhValueW32", "kTanhGradW32", "kTanhWidthW32"}:
        assert lines[slice(*old[name])] == after[slice(*new[name])], name
