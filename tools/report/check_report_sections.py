#!/usr/bin/python3
"""Checks a `gelu-fusion report` JSON (run by CTest after report_smoke).

Usage: check_report_sections.py REPORT_JSON

Every throughput row has a finite positive median for ours and the copy; the
input-scale rows cover gelu, gelu_backward, bias_gelu and bias_gelu_backward
(those the report ran)
at every scale (N(0,1), N(0,2), N(0,3), tail) for every size and thread
count the report timed them at; the cliff table has each scale's ratio to
N(0,1) for each of those rows; the shape rows hold a narrow (8) and a wide
last dimension for bias_gelu, bias_gelu_backward and geglu; the timing
rules name the distributions. Exits 1 with the failures listed.
"""
import json
import math
import sys

SCALES = ["N(0,1)", "N(0,2)", "N(0,3)", "tail"]
SCALE_OPS = ["gelu", "gelu_backward", "bias_gelu", "bias_gelu_backward"]
SHAPE_OPS = ["bias_gelu", "bias_gelu_backward", "geglu"]


def main():
    rep = json.load(open(sys.argv[1]))
    bad = []
    rows = rep["throughput"]
    for r in rows:
        for k in ("ours", "copy"):
            v = r[k]["median_ns"]
            if v is None or not math.isfinite(v) or v <= 0:
                bad.append("%s %s %s n=%d: %s median %r" % (r["table"], r["op"], r["inputs"],
                                                            r["n"], k, v))
    # Only the ops the report ran (--ops may leave some out).
    ran = {r["op"] for r in rows if r["table"] == "sweep"}
    scale_ops = [op for op in SCALE_OPS if op in ran]
    shape_ops = [op for op in SHAPE_OPS if op in ran]
    scales = [r for r in rows if r["table"] == "scales"]
    cases = {(r["form"], r["n"], r["threads"]) for r in scales}
    if scale_ops and not cases:
        bad.append("no input-scale rows")
    cliffs = {(c["ratio"], c["op"], c["form"], c["n"], c["threads"]): c for c in rep["cliffs"]}
    for form, n, threads in cases:
        for op in scale_ops:
            for sc in SCALES:
                if not any(r["op"] == op and r["inputs"] == sc and r["form"] == form
                           and r["n"] == n and r["threads"] == threads for r in scales):
                    bad.append("missing input-scale row %s %s n=%d thr=%d" % (op, sc, n, threads))
                if sc == "N(0,1)":
                    continue
                c = cliffs.get(("%s vs N(0,1) elements/s" % sc, op, form, n, threads))
                if c is None or c["value"] is None or not c["value"] > 0:
                    bad.append("missing cliff ratio %s %s n=%d thr=%d" % (sc, op, n, threads))
    shapes = [r for r in rows if r["table"] == "shapes"]
    for op in shape_ops:
        widths = sorted(r["cols"] for r in shapes if r["op"] == op)
        if not widths or widths[0] != 8 or widths[-1] <= 8:
            bad.append("shapes: %s has last dimensions %s, not 8 and a wide one" % (op, widths))
    rules = " ".join(rep["rules"])
    for name in ("N(0, 2)", "N(0, 3)", "tail-only", "[-10, -6]"):
        if name not in rules:
            bad.append("timing rules do not name %s" % name)
    for b in bad:
        print("check_report_sections: " + b, file=sys.stderr)
    print("check_report_sections: %d input-scale rows, %d shape rows, %d failures"
          % (len(scales), len(shapes), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
