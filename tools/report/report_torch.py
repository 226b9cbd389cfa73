#!/usr/bin/python3
"""PyTorch peer of `gelu-fusion report` (run by tools/report/report_torch.cpp).

Usage: report_torch.py REQUEST RESULT [PACKAGE_DIR]

REQUEST holds one job a line:
  acc ID OP FORM DTYPE ROWS COLS DIR    run OP once on DIR/acc_ID_{x,b,dy}.bin,
                                        write DIR/acc_ID_out.bin
  tp OP FORM DTYPE ROWS COLS THREADS COPY_BYTES MIN_ROUNDS MAX_ROUNDS BUDGET_MS INPUTS SIGMA
                                        INPUTS "default" (x ~ N(0, 1), b in
                                        [-0.5, 0.5)) or an input scale's name
                                        with its SIGMA (report_common.hpp:
                                        x ~ N(0, SIGMA^2), b ~ N(0, 1); SIGMA 0:
                                        tail-only)
  ovh                                   per-call overhead of a 1-element gelu:
                                        "ovh ok FIGURES" for torch._C._nn.gelu(out=),
                                        then "ovhpy ok F_GELU OURS" for
                                        F.gelu(x) and gelu_fusion.gelu(x) in the
                                        same interleaved rounds (what a model's
                                        call costs), or "ovhpy na REASON"
RESULT gets one line per job: "... ok FIGURES" or "... na REASON".
With PACKAGE_DIR (build/python, where the adapter is built), a tp job also
times our op there, called through its out= overload on the same inputs, in
the same interleaved rounds: tp FIGURES are then "PYTORCH COPY OURS".

What each op is in PyTorch: the call a PyTorch user makes, on preallocated
outputs (out= variants), so that allocation is nobody's cost:
  gelu                F.gelu            (torch._C._nn.gelu(out=))
  gelu_backward       aten.gelu_backward (.grad_input)
  bias_gelu           x + b, then gelu
  bias_gelu_backward  gelu_backward on the saved h = x + b, then dx.sum(0)
  add_gelu            a + b, then gelu
  add_gelu_backward   gelu_backward on the saved h = a + b
  geglu               gelu(a) * g         (a, g the halves of x)
  geglu_backward      dy*g -> gelu_backward(., a) and dy * saved gelu(a)
Timing mirrors the C++ side: warm-up, repetitions calibrated to >= 100 us a
sample, rounds interleaved with a copy of the same traffic (dst.copy_(src)
inside this process), median with min and max. Ours runs between PyTorch's
call and the copy in every round, so a ratio of the two medians is taken side
by side: machine load that comes and goes hits both alike.
"""
import os
import sys
import time

MIN_SAMPLE_NS = 100e3
TAIL_LO, TAIL_HI = -10.0, -6.0  # kTailLo, kTailHi (report_common.hpp)
SLOW_CALL_NS = 0.5e9  # as report_timing.hpp


def log(msg):
    print("report: pytorch: " + msg, file=sys.stderr, flush=True)


def main():
    req_path, out_path = sys.argv[1], sys.argv[2]
    try:  # an OpenMP-bound parent may have pinned us to one core
        os.sched_setaffinity(0, range(os.cpu_count()))
    except (AttributeError, OSError):
        pass
    results = []
    try:
        import numpy as np
        import torch
    except ImportError as e:
        with open(out_path, "w") as f:
            f.write("error not installed (%s)\n" % e)
        return
    results.append("version %s" % torch.__version__)
    ours_ops = None
    if len(sys.argv) > 3:
        try:
            sys.path.insert(0, sys.argv[3])
            import gelu_fusion  # noqa: F401  (registers torch.ops.gelu_fusion)
            ours_ops = torch.ops.gelu_fusion
        except Exception as e:  # noqa: BLE001 - then PyTorch alone is timed
            log("no adapter in %s (%s): PyTorch timed alone" % (sys.argv[3], e))
    dtypes = {"f32": (torch.float32, np.float32),
              "bf16": (torch.bfloat16, np.int16),
              "f16": (torch.float16, np.int16)}
    gelu_out = torch._C._nn.gelu
    gelu_bwd_out = torch.ops.aten.gelu_backward.grad_input

    def values(k, s, dt, sigma, has_b):
        """Input k ("x", "b", "dy") of shape s, drawn as report_case.cpp draws
        it: by default x ~ N(0, 1), b in [-0.5, 0.5), dy in [-1, 1); with an
        input scale (fill_inputs) x ~ N(0, sigma^2), b ~ N(0, 1), or with
        sigma 0 tail-only: x (or x + b) in [TAIL_LO, TAIL_HI]."""
        if sigma == 0 and k != "dy":
            margin = 1.0 if has_b else 0.0
            lo, hi = {"x": (TAIL_LO + margin, TAIL_HI - margin), "b": (-1.0, 1.0)}[k]
            return torch.empty(s).uniform_(lo, hi).to(dtypes[dt][0])
        if sigma is not None and k in ("x", "b"):
            return (torch.randn(s) * (sigma if k == "x" else 1.0)).to(dtypes[dt][0])
        if k == "x":
            return torch.randn(s).to(dtypes[dt][0])
        lim = {"b": 0.5, "dy": 1.0}[k]
        return torch.empty(s, dtype=dtypes[dt][0]).uniform_(-lim, lim)

    def tensors(op, dt, rows, cols, load=None, sigma=None):
        """The case's tensors, as report_case.hpp lays them out, filled as
        report_case.cpp fills them (sigma: fill_inputs' input scale)."""
        geglu = op.startswith("geglu")
        shapes = {"x": (rows, 2 * cols) if geglu else (rows, cols),
                  "out": (rows, 2 * cols) if op == "geglu_backward" else (rows, cols)}
        if op.startswith("bias"):
            shapes["b"] = (cols,)
        if op.startswith("add"):
            shapes["b"] = (rows, cols)
        if op.endswith("backward"):
            shapes["dy"] = (rows, cols)
        t = {}
        for k, s in shapes.items():
            if load and k != "out":
                a = np.fromfile(load(k), dtype=dtypes[dt][1])
                t[k] = torch.from_numpy(a).view(dtypes[dt][0]).reshape(s)
            elif k == "out":
                t[k] = torch.zeros(s, dtype=dtypes[dt][0])
            else:
                t[k] = values(k, s, dt, sigma, "b" in shapes)
        return t

    def composition(op, form, t):
        """A callable computing op into t['out'] with preallocated temporaries."""
        x, out = t["x"], t["out"]
        if op == "gelu":
            return lambda: gelu_out(x, approximate=form, out=out)
        if op == "gelu_backward":
            dy = t["dy"]
            return lambda: gelu_bwd_out(dy, x, approximate=form, grad_input=out)
        if op in ("bias_gelu", "add_gelu"):
            b, h = t["b"], torch.empty_like(x)
            return lambda: (torch.add(x, b, out=h), gelu_out(h, approximate=form, out=out))
        if op in ("bias_gelu_backward", "add_gelu_backward"):
            h = x + t["b"]  # saved by the forward
            dy = t["dy"]
            if op == "add_gelu_backward":
                return lambda: gelu_bwd_out(dy, h, approximate=form, grad_input=out)
            db = torch.empty(x.shape[1], dtype=x.dtype)
            return lambda: (gelu_bwd_out(dy, h, approximate=form, grad_input=out),
                            torch.sum(out, 0, out=db))
        hh = x.shape[1] // 2
        a, g = x[:, :hh], x[:, hh:]
        if op == "geglu":
            h = torch.empty_like(out)
            return lambda: (gelu_out(a, approximate=form, out=h), torch.mul(h, g, out=out))
        if op == "geglu_backward":
            dy = t["dy"]
            ga = torch.nn.functional.gelu(a, approximate=form)  # saved by the forward
            tmp = torch.empty_like(dy)
            da, dg = out[:, :hh], out[:, hh:]
            return lambda: (torch.mul(dy, g, out=tmp),
                            gelu_bwd_out(tmp, a, approximate=form, grad_input=da),
                            torch.mul(dy, ga, out=dg))
        raise ValueError("unknown op " + op)

    def ours(op, form, t):
        """Our op through its out= overload, into outputs of its own."""
        x, f = t["x"], getattr(ours_ops, op).out
        out = torch.empty_like(t["out"])
        if op in ("gelu", "geglu"):
            return lambda: f(x, approximate=form, out=out)
        if op in ("bias_gelu", "add_gelu"):
            b = t["b"]
            return lambda: f(x, b, approximate=form, out=out)
        dy = t["dy"]
        if op in ("gelu_backward", "geglu_backward"):
            return lambda: f(dy, x, approximate=form, out=out)
        b = t["b"]
        if op == "add_gelu_backward":
            return lambda: f(dy, x, b, approximate=form, out=out)
        db = torch.empty_like(b)
        return lambda: f(dy, x, b, approximate=form, grad_x=out, grad_bias=db)

    def sample(fn, reps):
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            fn()
        return (time.perf_counter_ns() - t0) / reps

    def interleaved(fns, min_rounds, max_rounds, budget_ns):
        reps, slowest = [], 0
        for fn in fns:
            first = sample(fn, 1)  # warm-up; a long call warms up itself
            once = sample(fn, 1) if first < 20e6 else first
            slowest = max(slowest, once)
            reps.append(int(min(1e6, max(1, -(-MIN_SAMPLE_NS // max(1.0, once))))))
        if slowest > SLOW_CALL_NS:  # one round: keeps the default run bounded
            min_rounds = max_rounds = 1
        samples = [[] for _ in fns]
        start = time.perf_counter_ns()
        for r in range(max_rounds):
            if r >= min_rounds and time.perf_counter_ns() - start > budget_ns:
                break
            for i, fn in enumerate(fns):
                samples[i].append(sample(fn, reps[i]))
        return [stat(s) for s in samples]

    def stat(s):
        s = sorted(s)
        m = len(s)
        med = s[m // 2] if m % 2 else 0.5 * (s[m // 2 - 1] + s[m // 2])
        return "%.1f %.1f %.1f %d" % (med, s[0], s[-1], m)

    def why(form, dt, e=None):
        if form == "quick":
            return "no quick form in PyTorch"
        if e is not None:
            msg = str(e).splitlines()[0]
            return ("%s unsupported" % dt) if "not implemented" in msg else msg[:60]
        return None

    jobs = [l.split() for l in open(req_path).read().splitlines() if l.strip()]
    # Progress weighs a job by its size plus a fixed cost (large sizes last).
    tp_work = {id(j): int(j[4]) * int(j[5]) + 1e6 for j in jobs if j[0] == "tp"}
    tp_total = len(tp_work)
    work_total, work_done = sum(tp_work.values()), 0.0
    tp_done = 0
    tp_start = time.time()
    supported = {}
    cache = {}
    for j in jobs:
        kind = j[0]
        if kind == "acc":
            jid, op, form, dt, rows, cols, d = j[1], j[2], j[3], j[4], int(j[5]), int(j[6]), j[7]
            head = "acc %s" % jid
            if why(form, dt):
                results.append("%s na %s" % (head, why(form, dt)))
                continue
            try:
                torch.set_num_threads(1)
                t = tensors(op, dt, rows, cols, load=lambda k: os.path.join(d, "acc_%s_%s.bin" % (jid, k)))
                composition(op, form, t)()
                o = t["out"].contiguous()
                o = o if dt == "f32" else o.view(torch.int16)
                o.numpy().tofile(os.path.join(d, "acc_%s_out.bin" % jid))
                results.append("%s ok" % head)
            except Exception as e:  # noqa: BLE001 - a peer's failure is data
                results.append("%s na %s" % (head, why(form, dt, e)))
        elif kind == "tp":
            op, form, dt = j[1], j[2], j[3]
            rows, cols, threads, copy_bytes = int(j[4]), int(j[5]), int(j[6]), int(j[7])
            min_r, max_r, budget = int(j[8]), int(j[9]), float(j[10]) * 1e6
            inputs, sigma = j[11], (None if j[12] == "-" else float(j[12]))
            head = "tp %s %s %s %d %d %d %s" % (op, form, dt, rows * cols, threads, cols, inputs)
            tp_done += 1
            if tp_done > 1 and (tp_done % 16 == 1 or tp_done == tp_total):
                el = time.time() - tp_start
                log("throughput %d/%d, %.0f s elapsed, ~%.0f s left"
                    % (tp_done - 1, tp_total, el, el / work_done * (work_total - work_done)))
            work_done += tp_work[id(j)]
            if why(form, dt):
                results.append("%s na %s" % (head, why(form, dt)))
                continue
            key = (op, form, dt)
            if key not in supported:  # probe on a tiny case before allocating
                try:
                    composition(op, form, tensors(op, dt, 2, 8))()
                    supported[key] = None
                except Exception as e:  # noqa: BLE001
                    supported[key] = why(form, dt, e)
            if supported[key]:
                results.append("%s na %s" % (head, supported[key]))
                continue
            try:
                torch.set_num_threads(threads)
                if cache.get("key") != (op, form, dt, rows, cols):  # reuse across threads
                    cache.clear()
                    t = tensors(op, dt, rows, cols, sigma=sigma)
                    cache.update(key=(op, form, dt, rows, cols), t=t, inputs=inputs,
                                 fn=composition(op, form, t),
                                 ours=ours(op, form, t) if ours_ops else None,
                                 src=torch.ones(copy_bytes, dtype=torch.uint8),
                                 dst=torch.empty(copy_bytes, dtype=torch.uint8))
                elif cache["inputs"] != inputs:  # another input scale: refill x, b in place
                    t = cache["t"]
                    for k in ("x", "b"):
                        if k in t:
                            t[k].copy_(values(k, t[k].shape, dt, sigma, "b" in t))
                    cache.update(inputs=inputs, fn=composition(op, form, t))
                fn, src, dst = cache["fn"], cache["src"], cache["dst"]
                fns = [fn] + ([cache["ours"]] if cache["ours"] else [])
                s = interleaved(fns + [lambda: dst.copy_(src)], min_r, max_r, budget)
                results.append("%s ok %s %s%s" % (head, s[0], s[-1],
                                                  " " + s[1] if len(s) == 3 else ""))
            except Exception as e:  # noqa: BLE001
                results.append("%s na %s" % (head, why(form, dt, e)))
        elif kind == "ovh":
            torch.set_num_threads(1)
            x = torch.ones(1)
            y = torch.empty(1)
            s = interleaved([lambda: gelu_out(x, approximate="none", out=y)], 5, 21, 50e6)
            results.append("ovh ok %s" % s[0])
            if ours_ops is None:
                results.append("ovhpy na adapter not built")
                continue
            import gelu_fusion
            f_gelu, ours_gelu = torch.nn.functional.gelu, gelu_fusion.gelu
            s = interleaved([lambda: f_gelu(x), lambda: ours_gelu(x)], 5, 41, 100e6)
            results.append("ovhpy ok %s %s" % (s[0], s[1]))
    with open(out_path, "w") as f:
        f.write("\n".join(results) + "\n")


if __name__ == "__main__":
    main()
