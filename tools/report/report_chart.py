#!/usr/bin/python3
"""Chart of `gelu-fusion report`: GB/s of compulsory traffic against size.

Usage: report_chart.py REPORT_JSON OUT_PNG

One panel per op (rows: op families; columns: forward, backward), f32 and
the erf form when the report has them. Ours, oneDNN and PyTorch as lines
(solid: 1 thread, dashed: all threads); the memory copy of the same traffic
as a grey band-line: the roofline a kernel can at best reach.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

FAMILIES = ["gelu", "bias_gelu", "add_gelu", "geglu"]
COLORS = {"ours": "#1f5fbf", "oneDNN": "#e07b00", "PyTorch": "#2a9d3a", "copy": "#888888"}


def size_label(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return "%dM" % (n >> 20)
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return "%dK" % (n >> 10)
    return str(n)


def main():
    rep = json.load(open(sys.argv[1]))
    rows = rep["throughput"]
    if not rows:
        print("report_chart: no throughput rows", file=sys.stderr)
        return 1
    dtypes = [r["dtype"] for r in rows]
    dtype = "f32" if "f32" in dtypes else dtypes[0]
    forms = [r["form"] for r in rows]
    form = "none" if "none" in forms else forms[0]
    rows = [r for r in rows if r["dtype"] == dtype and r["form"] == form]
    threads = sorted({r["threads"] for r in rows})
    fams = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
    fig, axes = plt.subplots(len(fams), 2, figsize=(11, 2.9 * len(fams) + 1.2),
                             squeeze=False, sharex=True)
    sizes = sorted({r["n"] for r in rows})
    for i, fam in enumerate(fams):
        for j, bwd in enumerate([False, True]):
            ax = axes[i][j]
            sel = [r for r in rows if r["family"] == fam and r["backward"] == bwd]
            if not sel:
                ax.set_visible(False)
                continue
            ax.set_title("%s%s" % (fam, "_backward" if bwd else ""), fontsize=11,
                         fontweight="bold")
            for t in threads:
                style = "-" if t == threads[0] else "--"
                pts = sorted((r for r in sel if r["threads"] == t), key=lambda r: r["n"])
                xs = [r["n"] for r in pts]

                def gbs(key, r):
                    if key == "ours":
                        s = r["ours"]
                    elif key == "copy":
                        s = r["copy"]
                    else:
                        s = r[key].get("time")
                    return r["bytes"] / s["median_ns"] if s else None

                series = [("copy", "copy"), ("ours", "ours"), ("onednn", "oneDNN"),
                          ("torch", "PyTorch")]
                for key, name in series:
                    ys = [gbs(key, r) for r in pts]
                    xy = [(x, y) for x, y in zip(xs, ys) if y]
                    if not xy:
                        continue
                    kw = dict(color=COLORS[name], linestyle=style, marker="o",
                              markersize=4, linewidth=2.2)
                    if key == "copy":
                        kw.update(linewidth=5, alpha=0.35, marker="_", markersize=18)
                    ax.plot([p[0] for p in xy], [p[1] for p in xy], **kw)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(sizes)
            ax.set_xticklabels([size_label(n) for n in sizes])
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "%g" % v))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
            ax.grid(True, which="both", alpha=0.25)
            if j == 0:
                ax.set_ylabel("GB/s (higher is better)")
            if i == len(fams) - 1:
                ax.set_xlabel("size (GELU evaluations)")
    handles = [Line2D([], [], color=COLORS["copy"], linewidth=5, alpha=0.35,
                      label="memory copy of the same bytes (roofline)")]
    for name in ["ours", "oneDNN", "PyTorch"]:
        handles.append(Line2D([], [], color=COLORS[name], linewidth=2.2, marker="o",
                              label={"ours": "gelu-fusion",
                                     "oneDNN": "oneDNN (eltwise / binary+post-op)",
                                     "PyTorch": "PyTorch (unfused ops)"}[name]))
    handles.append(Line2D([], [], color="black", linestyle="-", label="%d thread" % threads[0]))
    if len(threads) > 1:
        handles.append(Line2D([], [], color="black", linestyle="--",
                              label="%d threads" % threads[-1]))
    fig.legend(handles=handles, loc="upper center", ncol=3, fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, 0.965))
    fig.suptitle("GELU throughput, %s, %s form: GB/s of compulsory traffic vs size"
                 % (dtype, "erf" if form == "none" else form), fontsize=13, y=0.995)
    m = rep.get("machine", {})
    foot = "%s, SIMD %s, load average %s. Closer to the grey line = closer to the memory limit." % (
        m.get("CPU", "?"), m.get("SIMD target (chosen at run time)", "?"),
        m.get("load average (1 min)", "?").split(" (")[0])
    fig.text(0.5, 0.005, foot, ha="center", va="bottom", fontsize=8, color="#444444")
    fig.tight_layout(rect=(0, 0.02, 1, 0.925))
    fig.savefig(sys.argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
