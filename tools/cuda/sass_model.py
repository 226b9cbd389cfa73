#!/usr/bin/env python3
"""The CUDA kernels' speed, predicted from their SASS (docs/cuda.md).

Reads `cuobjdump -sass` of the built library (sm_90 code: H100/H200), and
for every element-wise kernel of the 16-byte path (src/cuda/body/eltwise.hpp)
counts what one element costs on its hot path, where every element of a
vector is in the core (N(0,1) inputs: 99.99% of vectors):

  issue   instructions an element (every instruction of the vector's path:
          the loads, the core math of its kVec elements, the stores, the
          loop step), divided by kVec;
  lsu     load/store-unit cycles an element: 1 a warp instruction, 4 for a
          16-byte access (512 bytes a warp at 128 bytes a cycle); the
          coefficient lookups touch one 64-byte row, so 1;
  fp64    double adds and conversions (dbias's sums).

The path: in the unit loop (the innermost loop holding the 16-byte loads),
the shortest way from its head to its back edge through every 16-byte load
and store. That is the vector's all-core copy: the general per-element
path, with each element's tail math, is longer, and the guards of rare
work (the 16-bit overflow-boundary fix-up) are skipped. The tool checks that what it counts holds no tail math (no MUFU, no
CALL), so a change of layout fails loudly rather than counting wrong.

The model (a roofline with full overlap): an element takes
  max(bytes / copy bandwidth, issue / issue rate, lsu / lsu rate, fp64 / rate)
and the prediction is the memory term's share of that, in % of copy. The
device: 132 SMs at 1.755 GHz, 4 warp instructions a cycle an SM, one LSU
wavefront a cycle, 64 FP64 lanes a cycle (16 for F2F conversions); copy
bandwidth 4.26 TB/s (an H200's measured copy, the most demanding: an H100's
~3.0 TB/s leaves more room).

  python3 tools/cuda/sass_model.py build/libgelu_fusion_cuda.a [--json F] [--min 90]

Exit status 1 when an op's prediction is under --min percent (f32 and bf16;
f16 is reported too), 2 when the SASS cannot be read or modelled.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

SMS, CLOCK = 132, 1.755e9
ISSUE = SMS * CLOCK * 4 * 32  # lane-instructions a second
LSU = SMS * CLOCK * 32  # lane-cycles a second (one wavefront of 32 lanes)
FP64 = SMS * CLOCK * 64
F2F = SMS * CLOCK * 16
COPY = 4.26e12  # bytes a second


def library_forms():
    """The forms by Approx value, from the library's one list
    (GELU_FUSION_FORMS, include/gelu/gelu.hpp); 'none' printed as 'erf'."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                        "include", "gelu", "gelu.hpp")
    with open(path, encoding="utf-8") as f:
        m = re.search(r"#define GELU_FUSION_FORMS\(X\)((?:\s*X\(\w+\))+)", f.read())
    names = re.findall(r"X\((\w+)\)", m.group(1))
    return {i: "erf" if n == "none" else n for i, n in enumerate(names)}


FORMS = library_forms()
DTYPES = {0: ("f32", 4), 1: ("bf16", 2), 2: ("f16", 2)}
KINDS = {0: "forward", 1: "backward", 2: "geglu_forward", 3: "geglu_backward"}


def find_cuobjdump():
    env = os.environ.get("CUOBJDUMP")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    venvs = [os.environ.get("VENV", ""), os.path.join(os.path.dirname(os.path.dirname(here)), ".venv")]
    for c in (b for v in venvs if v
              for b in glob.glob(os.path.join(v, "lib/python3*/site-packages/nvidia/cu13/bin"))):
        if os.path.exists(os.path.join(c, "cuobjdump")):
            return os.path.join(c, "cuobjdump")
    return shutil.which("cuobjdump")


def kernels(lib, cuobjdump):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(cuobjdump) + os.pathsep + env.get("PATH", "")
    out = subprocess.run([cuobjdump, "-sass", "-arch", "sm_90", lib], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0 or "Function :" not in out.stdout:
        sys.exit(f"sass_model: cuobjdump -sass failed: {out.stderr.strip()[:500]}")
    for part in re.split(r"\n\s*Function : ", out.stdout)[1:]:
        name = part.split("\n", 1)[0].strip()
        insts = []
        for line in part.split("\n"):
            m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
            if m:
                insts.append((int(m.group(1), 16), m.group(2)))
        yield name, insts


# body_kernel<Eltwise<F, D, K, kAdd, kValue, kDbias, kVec>, ...>, mangled.
ELTWISE = re.compile(r"EltwiseILNS_6ApproxE(\d)ELNS_5DTypeE(\d)ELNS3_4KindE(\d)ELb(\d)ELb(\d)ELb(\d)ELi(\d+)E")


def opcode(text):
    t = re.sub(r"^@!?U?P\w+\s+", "", text)
    return t.split()[0] if t else ""


def branch_target(text):
    m = re.search(r"BRA\s+(?:!?U?P\d,\s*)?(0x[0-9a-f]+)", text)
    return int(m.group(1), 16) if m else None


def hot_path(insts):
    """The instructions of one all-core vector, or raise ValueError."""
    loads = [a for a, t in insts if opcode(t).startswith("LDG.E.128")]
    if not loads:
        raise ValueError("no 16-byte loads")
    loops = []
    for a, t in insts:
        tgt = branch_target(t) if "BRA" in opcode(t) else None
        if tgt is not None and tgt < a and any(tgt <= l <= a for l in loads):
            loops.append((tgt, a))
    if not loops:
        raise ValueError("no loop around the 16-byte loads")
    head, back = min(loops, key=lambda r: r[1] - r[0])  # innermost
    body = [(a, t) for a, t in insts if head <= a <= back]
    # The shortest way through the loop body that still makes every 16-byte
    # load and store: the all-core copy (the general per-element path, with
    # each element's tail math, is longer; guards that skip rare work, such
    # as the overflow-boundary fix-up, are skipped).
    index = {a: i for i, (a, _) in enumerate(body)}

    def successors(i):
        a, t = body[i]
        op = opcode(t)
        if "BRA" in op:
            out = []
            tgt = branch_target(t)
            if tgt is not None and tgt > a and tgt in index:
                out.append(index[tgt])
            if t.startswith("@") and i + 1 < len(body):
                out.append(i + 1)
            return out
        if op == "EXIT" and not t.startswith("@"):
            return []
        return [i + 1] if i + 1 < len(body) else []

    def shortest(src, dst):  # instructions from src (inclusive) to dst
        inf = float("inf")
        dist = [inf] * len(body)
        prev = [None] * len(body)
        dist[src] = 0
        for i in range(src, dst):  # forward edges only: address order
            if dist[i] == inf:
                continue
            for j in successors(i):
                if j <= dst and dist[i] + 1 < dist[j]:
                    dist[j], prev[j] = dist[i] + 1, i
        if dist[dst] == inf:
            raise ValueError(f"no path from {body[src][0]:#x} to {body[dst][0]:#x}")
        path, j = [], dst
        while j != src:
            j = prev[j]
            path.append(j)
        return path[::-1]

    required = [i for i, (a, t) in enumerate(body) if ".128" in opcode(t) and
                opcode(t).startswith(("LDG", "STG"))]
    stops = [0] + required + [len(body) - 1]
    hot_idx = []
    for s0, s1 in zip(stops, stops[1:]):
        if s1 > s0:
            hot_idx += shortest(s0, s1)
    hot_idx.append(len(body) - 1)
    hot = [body[i] for i in hot_idx]
    bad = [t for a, t in hot if opcode(t).startswith(("MUFU", "CALL"))]
    if bad:
        raise ValueError(f"tail math on the counted path: {bad[:3]}")
    return hot


def costs(hot, vec):
    issue = lsu = fp64 = f2f = 0.0
    for _, t in hot:
        op = opcode(t)
        issue += 1
        if op.startswith(("LDG", "STG", "LDS", "STS", "LD.", "ST.", "SHFL", "ATOM", "RED")):
            lsu += 4 if ".128" in op else (2 if ".64" in op else 1)
        if op.startswith(("DADD", "DFMA", "DMUL")):
            fp64 += 1
        if op.startswith("F2F.F64"):
            f2f += 1
    return {k: v / vec for k, v in
            {"issue": issue, "lsu": lsu, "fp64": fp64, "f2f": f2f}.items()}


def ops_of(kind, add, value, dbias, size):
    """(op name, bytes an element) of the ops one kernel serves."""
    if kind == "forward":
        return [("gelu", 2 * size)] if not add else [("add_gelu", 3 * size),
                                                      ("bias_gelu", 2 * size)]
    if kind == "backward":
        y = size if value else 0
        if dbias:
            return [("bias_gelu_backward" + ("+y" if value else ""), 3 * size + y)]
        if add:
            return [("add_gelu_backward" + ("+y" if value else ""), 4 * size + y)]
        return [("gelu_backward" + ("+y" if value else ""), 3 * size + y)]
    if kind == "geglu_forward":
        return [("geglu", 3 * size)]
    return [("geglu_backward" + ("+y" if value else ""), 5 * size + (size if value else 0))]


def predict(c, nbytes):
    t_mem = nbytes / COPY
    t = max(t_mem, c["issue"] / ISSUE, c["lsu"] / LSU, c["fp64"] / FP64, c["f2f"] / F2F)
    bound = "memory" if t == t_mem else max(
        ("issue", c["issue"] / ISSUE), ("lsu", c["lsu"] / LSU),
        ("fp64", c["fp64"] / FP64), ("f2f", c["f2f"] / F2F), key=lambda p: p[1])[0]
    return 100.0 * t_mem / t, bound


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lib")
    ap.add_argument("--json")
    ap.add_argument("--min", type=float, default=90.0)
    args = ap.parse_args()
    cuobjdump = find_cuobjdump()
    if not cuobjdump:
        print("sass_model: no cuobjdump (make deps installs it into .venv)", file=sys.stderr)
        return 2
    rows, errors = [], []
    for name, insts in kernels(args.lib, cuobjdump):
        m = ELTWISE.search(name)
        if not m or int(m.group(7)) == 1:
            continue
        form, dt, kind, add, value, dbias, vec = (int(g) for g in m.groups())
        dname, size = DTYPES[dt]
        try:
            c = costs(hot_path(insts), vec)
        except ValueError as e:
            errors.append(f"{FORMS[form]} {dname} {KINDS[kind]}: {e}")
            continue
        for op, nbytes in ops_of(KINDS[kind], add, value, dbias, size):
            pct, bound = predict(c, nbytes)
            rows.append({"op": op, "form": FORMS[form], "dtype": dname, "bytes": nbytes,
                         **{k: round(v, 2) for k, v in c.items()},
                         "predicted_pct_of_copy": round(pct, 1), "bound": bound})
    if errors or not rows:
        for e in errors or ["no element-wise kernels found"]:
            print("sass_model: cannot model " + e, file=sys.stderr)
        return 2
    rows.sort(key=lambda r: (r["op"], r["dtype"], r["form"]))
    print(f"{'op':24} {'dtype':5} {'form':6} {'B/el':>5} {'instr':>6} {'lsu':>5} "
          f"{'fp64':>5} {'% copy':>7}  bound")
    for r in rows:
        print(f"{r['op']:24} {r['dtype']:5} {r['form']:6} {r['bytes']:5d} {r['issue']:6.1f} "
              f"{r['lsu']:5.2f} {r['fp64'] + r['f2f']:5.2f} {r['predicted_pct_of_copy']:7.1f}"
              f"  {r['bound']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device_model": {"sms": SMS, "clock_hz": CLOCK, "copy_bytes_per_s": COPY},
                       "kernels": rows}, f, indent=1)
    low = [r for r in rows if r["dtype"] in ("f32", "bf16") and
           r["predicted_pct_of_copy"] < args.min]
    for r in low:
        print(f"sass_model: {r['op']} {r['dtype']} {r['form']} predicted at "
              f"{r['predicted_pct_of_copy']}% of copy (< {args.min}%), {r['bound']}-bound",
              file=sys.stderr)
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
