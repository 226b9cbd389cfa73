#!/usr/bin/python3
"""Fits the polynomial coefficients of the GELU math (src/cpu/gelu_math-inl.h).

Run: /usr/bin/python3 tools/fit/fit_gelu.py [--narrow] [--output PATH | --stdout]
         [--forms erf,tanh,... --update]
(numpy, math). Writes src/cpu/gelu_coefficients.h (or PATH, or stdout): the
C++ coefficient tables and, as comments, the error each fit reached (with the
f32-rounded coefficients, evaluated in double: the fit error alone, not the
f32 evaluation's rounding, which the tests measure).

--forms fits only those forms' tables and constants; with --update they
replace those tables in the existing file, or are added to it, and every
other table stays as it is. That is how to add a form: a full rerun need not
reproduce the committed tables bit for bit (numpy's least squares differs in
the last digits between versions), and would change the other forms' results.

Method: near-minimax weighted fits by Lawson's iteratively reweighted least
squares on Chebyshev nodes, then coefficients rounded to f32 one at a time,
lowest order first, each remaining coefficient refitted after a rounding so it
absorbs the rounding error. Reference values come from Python's double math
(erfc, exp): about 1e-16 relative, far below the 2^-24 targeted.

Functions (t = |x|, x < 0 side; the x > 0 side follows by symmetry):
  Core, t in [0, 3.875): 16 intervals [k/4 - 1/8, k/4 + 1/8], r = t - k/4,
  degree-6 polynomial in r with c0 split into f32 hi + lo:
    V(t) = t * s(-t)             gelu(-t) = -V(t); gelu(t) = t - V(t)
    G(t) = s(-t) - t * s'(t)     gelu'(-t) = G(t); gelu'(t) = 1 - G(t)
  where s is the form's gate (Phi, sigmoid(2u), sigmoid(1.702 x)); V fitted
  for relative error, G for error relative to s(-t) + t s'(t) (the contract's
  scale for the backward).
  Exp: e^r - 1 = r + r^2 P(r), |r| <= ln2/2, relative error of e^r - 1;
  degree 6 for the erf tail (speed: tail-only inputs), 7 for the others.
  Erf tail, t in [3.875, 14.75]: t R(t) = 1 + w P(w), P of degree 5, w = 1/t^2, R = Phi(-t) /
  phi(t) the Mills ratio; absolute error of 1 + w P(w).
"""
import argparse
import functools
import math
import os
import re
import struct

import numpy as np



def form_constants():
    """The forms' constants from their one place, src/math/gelu_forms.hpp."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                        "src", "math", "gelu_forms.hpp")
    with open(path, encoding="utf-8") as f:
        found = dict(re.findall(r"constexpr double (k\w+) = ([0-9.eE+-]+);", f.read()))
    return {name: float(value) for name, value in found.items()}


_FORMS = form_constants()
S2 = math.sqrt(2.0)
K = math.sqrt(2.0 / math.pi)
CUBIC = _FORMS["kTanhCubic"]
QUICK = _FORMS["kQuickScale"]
assert abs(K - _FORMS["kSqrt2OverPi"]) < 1e-16
W = 0.25          # core interval width (a power of two: k*W exact)
NINT = 16         # intervals: one 16-lane permute on AVX-512
DEG = 6           # core polynomial degree (f32 results)
DEG16 = 4         # core degree for bf16/f16 results (no c0 lo): the fit's
                  # 2^-17 relative error is under 1/64 ulp of f16 (2^-11)
T_TAIL = 3.875    # = (NINT - 0.5) * W: where the tail path takes over
ERF_TMAX = 14.75  # erf tail clamp: gelu and gelu' underflow to 0 beyond
# The narrow core (--narrow): 8 intervals, so that a coefficient is one
# 8-lane permute on AVX2 (16 take two and a blend); the wider interval needs
# a degree more for f32 (7) and for the bf16/f16 results (5).
# Interval k is [k w, (k + 1) w], k = t / w truncated (not rounded as with
# the 16 intervals), so the first is a whole one and the tail starts at 4.
NINT_N, W_N, DEG_N, DEG16_N = 8, 0.5, 7, 5
T_TAIL_N = NINT_N * W_N  # 4.0
# The wide core (--wide): 32 intervals, one two-table permute a coefficient
# on AVX-512 (vpermt2ps costs what a 16-entry permute does), at the 16
# intervals' degree; each form's width is the largest (from k/128) whose
# f32 core stays near the 16 intervals' rounding error, so the tail takes
# over later: erf at 5.91, tanh at 4.92 (its gate steepens as t^3), quick at
# 9.84.
NINT_W = 32
# The tail takes over 1/16 of a width short of the last interval's end, so
# that t / width rounded with the f32 reciprocal stays below NINT_W.
W_END = NINT_W - 0.5 - 1 / 16
W_WIDE = {'erf': 24 / 128, 'tanh': 20 / 128, 'quick': 40 / 128}


def narrow_bounds():
    """The narrow core's interval ends, k w for k = 0..8."""
    return [k * W_N for k in range(NINT_N + 1)]


def f32(v):
    return struct.unpack('f', struct.pack('f', v))[0]


def sig(z):
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


# The forms, by the names of their tables (kErfValue, ...).
FORMS = ('erf', 'tanh', 'quick')
# The forms this run fits (--forms); tables shared by all forms only with
# every form.
SELECTED = FORMS


def wanted(form):
    """Whether a table of `form` (None: shared by every form) is written."""
    return form in SELECTED if form else SELECTED == FORMS


def gate_neg(form, t):  # s(-t)
    if form == 'erf':
        return 0.5 * math.erfc(t / S2)
    if form == 'tanh':
        return sig(-2 * K * (t + CUBIC * t ** 3))
    return sig(-QUICK * t)


def slope(form, t):  # s'(t) = s'(-t)
    if form == 'erf':
        return math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    if form == 'tanh':
        z = 2 * K * (t + CUBIC * t ** 3)
        return sig(z) * sig(-z) * 2 * K * (1 + 3 * CUBIC * t * t)
    return QUICK * sig(QUICK * t) * sig(-QUICK * t)


def lawson(X, y, wgt, iters=40):
    """Near-minimax fit of X c ~ y with error weighted by 1/wgt."""
    lw = np.ones(len(y))
    best = None
    for _ in range(iters):
        sw = np.sqrt(lw) / wgt
        c, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
        e = np.abs(X @ c - y) / wgt
        if best is None or e.max() < best[1]:
            best = (c, e.max())
        lw = lw * (e + 1e-30)
        lw /= lw.sum()
    return best[0]


def nodes(lo, hi, n=600):
    th = np.linspace(0, math.pi, n)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(th)


def fit_rounded(r, y, wgt, powers, fixed=None):
    """Fits y ~ sum c_j r^j over `powers`, rounding coefficients to f32 one at
    a time (lowest first) and refitting the rest. `fixed` maps power -> value
    already chosen (e.g. c0 = hi + lo in double-float)."""
    fixed = dict(fixed or {})
    resid = y - sum(v * r ** p for p, v in fixed.items())
    free = [p for p in powers if p not in fixed]
    out = dict(fixed)
    while free:
        X = np.stack([r ** p for p in free], 1)
        c = lawson(X, resid, wgt)
        p0 = free.pop(0)
        out[p0] = f32(c[0])
        resid = resid - out[p0] * r ** p0
    return out


def core_at(form, kind, t):
    """V(t) or G(t) in double."""
    q = gate_neg(form, t)
    return t * q if kind == 'V' else q - t * slope(form, t)


def fit_core(form, kind, deg=DEG, lo=True, nint=NINT, w=W, centres=None, only=None,
             pin=False):
    """Rows c0 hi, [c0 lo,] c1..c<deg> of the nint intervals of width w;
    with lo=False c0 is a single f32 (the 16-bit results' tables). Interval
    k covers k w +- w/2 and is expanded at k w; with `centres` (the narrow
    core) it covers narrow_bounds()[k:k + 2] and is expanded at centres[k]:
    interval 0 at 0, with c0 = V(0) = 0 and G(0) = 1/2 exactly, so that
    gelu(0) = 0 and gelu'(0) = 1/2 exactly. `pin` (with centres, lo=False):
    c0 is V or G at the centre rounded to f32 (narrow_centres picks centres
    where that rounding is under 1/64 ulp), the other coefficients fitted
    around it. `only`: fit that interval alone."""
    nlo = 1 if lo else 0
    rows = [[0.0] * nint for _ in range(deg + 1 + nlo)]
    worst = 0.0
    for k in range(nint) if only is None else (only,):
        if centres:
            lo, hi = narrow_bounds()[k:k + 2]
            lo, hi = max(0.0, lo - (hi - lo) * 0.001), hi + (hi - lo) * 0.001
            c = centres[k]
        else:
            lo, hi = max(0.0, k * w - w / 2 * 1.001), k * w + w / 2 * 1.001
            c = k * w
        t = nodes(lo, hi)
        r = t - c
        q = np.array([gate_neg(form, v) for v in t])
        sp = np.array([slope(form, v) for v in t])
        if kind == 'V':
            y, wgt = t * q, np.maximum(t * q, 1e-300)
        else:
            y, wgt = q - t * sp, q + t * sp
        if kind == 'V' and k == 0:
            co = fit_rounded(r, y, wgt, range(1, deg + 1), {0: 0.0})
            hi0, lo0 = 0.0, 0.0
        elif centres and k == 0:
            co = fit_rounded(r, y, wgt, range(1, deg + 1), {0: 0.5})
            hi0, lo0 = 0.5, 0.0
        elif pin:
            hi0, lo0 = f32(core_at(form, kind, c)), 0.0
            co = fit_rounded(r, y, wgt, range(1, deg + 1), {0: hi0})
        elif lo:
            X = np.stack([r ** p for p in range(deg + 1)], 1)
            c0 = lawson(X, y, wgt)[0]
            hi0 = f32(c0)
            lo0 = f32(c0 - hi0)
            co = fit_rounded(r, y, wgt, range(deg + 1), {0: hi0 + lo0})
        else:
            co = fit_rounded(r, y, wgt, range(deg + 1))
            hi0, lo0 = co[0], 0.0
        rows[0][k] = hi0
        if lo:
            rows[1][k] = lo0
        for p in range(1, deg + 1):
            rows[p + nlo][k] = co[p]
        approx = hi0 + lo0 + sum(co[p] * r ** p for p in range(1, deg + 1))
        worst = max(worst, (np.abs(approx - y) / wgt).max())
    return rows, worst / 2 ** -24


def fit_exp(deg):
    r = nodes(-math.log(2) / 2 * 1.01, math.log(2) / 2 * 1.01)
    r = r[np.abs(r) > 1e-6]
    y = np.expm1(r)
    co = fit_rounded(r, y, np.abs(y), range(2, deg + 1), {1: 1.0})
    approx = sum(v * r ** p for p, v in co.items())
    return [co[p] for p in range(2, deg + 1)], (np.abs(approx - y) / np.abs(y)).max()


def fit_erf_tail(deg=6, t_tail=T_TAIL):
    t = nodes(t_tail * 0.999, ERF_TMAX)
    w = 1.0 / (t * t)
    # t R(t) - 1 with R = Q / phi = sqrt(pi/2) erfcx(t / sqrt2), computed from
    # the continued fraction-free identity via math.erfc scaled (t <= 14.75:
    # erfc(t/sqrt2) >= 1e-48 is a normal double).
    y = np.array([v * 0.5 * math.erfc(v / S2) /
                  (math.exp(-v * v / 2) / math.sqrt(2 * math.pi)) - 1.0
                  for v in t])
    co = fit_rounded(w, y, np.ones_like(y), range(1, deg + 1))
    approx = sum(v * w ** p for p, v in co.items())
    return [co[p] for p in range(1, deg + 1)], np.abs(approx - y).max()


def fmt(v):
    return '%.9ef' % v


def split(v, bits=24):
    """v as f32 hi (rounded to `bits` significant bits) + f32 lo."""
    e = math.frexp(v)[1]
    hi = f32(round(v * 2.0 ** (bits - e)) * 2.0 ** (e - bits))
    return hi, f32(v - hi)


def constants():
    """Double-float constants (hi + lo) the tail paths need exactly, each
    with its form (None: shared)."""
    import mpmath
    mpmath.mp.dps = 40
    out = []
    # ln2 hi with 16 significant bits: k * ln2_hi is exact for |k| < 2^8.
    out.append(('kLn2', split(float(mpmath.log(2)), 16), None))
    out.append(('kLnSqrt2Pi', split(float(mpmath.log(mpmath.sqrt(2 * mpmath.pi)))), None))
    # tanh: 2u = a1 t + a3 t^3 with the reference's double constants.
    a1 = 2 * 0.79788456080286535587989211986876
    out.append(('kTanhA1', split(a1), 'tanh'))
    out.append(('kTanhA3', split(a1 * CUBIC), 'tanh'))
    out.append(('kQuickA', split(QUICK), 'quick'))
    return [c for c in out if wanted(c[2])]


HEADER = '''// Generated by tools/fit/fit_gelu.py: rerun it rather than edit this file.
// The coefficients of the GELU math in src/cpu/gelu_math-inl.h, target-free
// data. Core rows: [0] c0 hi, [1] c0 lo, [2..7] c1..c6; column k = interval
// k (the *Bf16F16 tables: c0..c4, no c0 lo). Errors are of the fit alone.
#pragma once

// One table row a line, as the script writes it (make format leaves it).
// clang-format off
namespace gelu::cpu::gelu_coefficients {

'''
NARROW_HEADER = '''// Generated by tools/fit/fit_gelu.py --narrow: rerun it rather than edit.
// The coefficients of the GELU math's narrow core (src/cpu/gelu_math-inl.h):
// %d intervals [k/2, k/2 + 1/2], k = 2t truncated, one 8-lane permute a
// coefficient on AVX2; the tail takes over at %g. Rows: c0..c%d (the
// *Bf16F16 tables: c0..c%d), polynomials in r = t - the form's Centre[k]:
// a point of the interval where V and G are within 1/64 ulp of an f32,
// so that c0 needs no lo part, and whose f32 evaluation rounds least
// (narrow_centres). Errors are of the fit alone.
#pragma once

// clang-format off
namespace gelu::cpu::gelu_coefficients {

''' % (NINT_N, T_TAIL_N, DEG_N, DEG16_N)

WIDE_HEADER = '''// Generated by tools/fit/fit_gelu.py --wide: rerun it rather than edit.
// The coefficients of the GELU math's wide core (src/cpu/gelu_math-inl.h):
// %d intervals of each form's width (k*WidthW32), k = t / width rounded,
// one two-table permute a coefficient on AVX-512, f32 results only (the
// bf16/f16 results keep the 16 intervals). Rows: [0] c0 hi, [1] c0 lo,
// [2..] c1..c%d, polynomials in r = t - k width. Errors are of the fit alone.
#pragma once

// clang-format off
namespace gelu::cpu::gelu_coefficients {

''' % (NINT_W, DEG)

FOOTER = '''
}  // namespace gelu::cpu::gelu_coefficients
// clang-format on
'''


def core_tables(print, deg, deg16, nint, w, align, tag='', centres=lambda form: None,
                lo32=True):
    """The core's Value and Grad tables of every form: f32 results (degree
    deg, c0 in hi + lo; with lo32=False c0 alone, pinned at the centre:
    fit_core's pin), then bf16/f16 results (deg16, no c0 lo; none when
    deg16 is None). w: the width, or a function of the form."""
    for d, lo, suffix, what in ((deg, lo32, '', ''),
                                (deg16, False, 'Bf16F16',
                                 ', degree %d for bf16/f16 results' % (deg16 or 0))):
        if d is None:
            continue
        for form in SELECTED:
            for kind in ('V', 'G'):
                rows, err = fit_core(form, kind, d, lo, nint, w(form) if callable(w) else w,
                                     centres(form), pin=not lo32 and not suffix)
                name = 'k%s%s%s%s' % (form.capitalize(), 'Value' if kind == 'V' else 'Grad',
                                      tag, suffix)
                print('// %s: max error %.4f x 2^-24 relative%s%s' %
                      (name, err, '' if kind == 'V' else ' to s(-t) + t s\'(t)', what))
                print('alignas(%d) inline constexpr float %s[%d][%d] = {' %
                      (align, name, len(rows), nint))
                for row in rows:
                    print('    {' + ', '.join(fmt(v) for v in row) + '},')
                print('};')


def tables(print):
    core_tables(print, DEG, DEG16, NINT, W, 64)
    for name, (hi, lo), _ in constants():
        print('inline constexpr float %s[2] = {%s, %s};' % (name, fmt(hi), fmt(lo)))
    if not wanted(None):
        return
    for deg in (6, 7):
        co, err = fit_exp(deg)
        print('// kExpPoly%d: e^r - 1 = r + r^2 P(r), degree %d, max relative error'
              ' %.3g (2^%.1f)' % (deg, deg, err, math.log2(err)))
        print('inline constexpr float kExpPoly%d[%d] = {' % (deg, deg - 1) +
              ', '.join(fmt(v) for v in co) + '};')
    co, err = fit_erf_tail()
    print('// kErfTail: t R(t) = 1 + w P(w), max absolute error %.3g (2^%.1f)'
          % (err, math.log2(err)))
    print('inline constexpr float kErfTail[%d] = {' % len(co) + ', '.join(fmt(v) for v in co) + '};')


def f32_core_error(form, kind, rows, deg, c, lo, hi, has_lo=True):
    """The worst error of the f32 core on [lo, hi), x < 0, in ulps (V: of
    the result; G: of s(-t) + t s'(t)), evaluated as the kernels do: Horner
    in r = t - c with one rounding a step (an FMA: the exact product plus the
    addend, rounded once), c0 lo added last before c0 hi; without has_lo
    (rows c0..c<deg>) the last step is the FMA with c0."""
    def fma(a, b, cc):
        return (a.astype(np.float64) * b + cc).astype(np.float32)
    t = np.unique(np.linspace(lo, hi, 20001).astype(np.float32))
    t = t[(t >= lo) & (t < hi)]
    r = (t - np.float32(c)).astype(np.float32)
    row = [np.float32(v) for v in rows]
    if has_lo:
        p = fma(np.full_like(r, row[deg + 1]), r, row[deg])
        for j in range(deg - 2, 0, -1):
            p = fma(p, r, row[j + 1])
        got = (row[0] + fma(p, r, row[1])).astype(np.float64)
    else:
        p = fma(np.full_like(r, row[deg]), r, row[deg - 1])
        for j in range(deg - 2, -1, -1):
            p = fma(p, r, row[j])
        got = p.astype(np.float64)
    t = t.astype(np.float64)
    q = np.array([gate_neg(form, v) for v in t])
    sp = np.array([slope(form, v) for v in t])
    want, scale = (t * q, t * q) if kind == 'V' else (q - t * sp, q + t * sp)
    ulp = 2.0 ** (np.floor(np.log2(np.abs(scale))) - 23)
    return (np.abs(got - want) / ulp).max()


def ulp_residual(v):
    """|v - v rounded to f32| in ulps of that f32."""
    return abs(v - f32(v)) / 2.0 ** (math.floor(math.log2(abs(v))) - 23)


@functools.lru_cache(maxsize=None)
def narrow_centres(form):
    """Where the narrow core expands each interval (narrow_bounds), so that
    its c0 needs no lo part and its f32 evaluation rounds least. Interval 0
    (V(0) = 0, G(0) = 1/2, both exact) is expanded at 0, where r = t is
    exact for every t. For the others, the candidates are the points c on
    a grid of 2^-20 with t/2 <= c <= 2t over the whole interval (r = t - c
    exact, Sterbenz) where V(c) and G(c) both lie within 1/64 ulp of an
    f32, so that c0 = V(c) or G(c) rounded is all but exact (fit_core's
    pin); of them, the one nearest each multiple of 1/16 (by that rounding),
    and of those the one whose fitted f32 core has the smallest worst error,
    V's and G's, evaluated in f32 as the kernels do (f32_core_error).
    Rounding, not the fit, is most of that error: near an end where V is 6
    times V at the other end, r P(r) nearly equals the result, and its
    rounding alone nears an ulp."""
    out = [0.0]
    bounds = narrow_bounds()
    steps = 2 ** 19  # the grid: (hi - lo) / steps = 2^-20
    for k in range(1, NINT_N):
        lo, hi = bounds[k], bounds[k + 1]
        nearest = {}
        for j in range(steps + 1):
            c = lo + j * (hi - lo) / steps
            if not hi / 2 <= c <= 2 * lo:
                continue
            off = max(ulp_residual(core_at(form, kind, c)) for kind in ('V', 'G'))
            if off < 1 / 64:
                g = round((c - lo) * 16)
                if g not in nearest or off < nearest[g][0]:
                    nearest[g] = (off, c)

        def cost(c):
            worst = 0.0
            for kind in ('V', 'G'):
                rows, _ = fit_core(form, kind, DEG_N, False, NINT_N, None,
                                   [c] * NINT_N, only=k, pin=True)
                worst = max(worst, f32_core_error(form, kind, [row[k] for row in rows],
                                                  DEG_N, c, lo, hi, has_lo=False))
            return worst
        out.append(min((c for _, c in nearest.values()), key=cost))
    return out


def narrow_tables(print):
    core_tables(print, DEG_N, DEG16_N, NINT_N, None, 32, 'N8', narrow_centres,
                lo32=False)
    for form in SELECTED:
        print('// k%sCentreN8: interval k is expanded at this point (narrow_centres)'
              % form.capitalize())
        print('alignas(32) inline constexpr float k%sCentreN8[%d] = {' % (form.capitalize(), NINT_N)
              + ', '.join(fmt(v) for v in narrow_centres(form)) + '};')
    if not wanted('erf'):
        return
    co, err = fit_erf_tail(t_tail=T_TAIL_N)
    print('// kErfTailN8: t R(t) = 1 + w P(w) from t = %g, max absolute error %.3g (2^%.1f)'
          % (T_TAIL_N, err, math.log2(err)))
    print('inline constexpr float kErfTailN8[%d] = {' % len(co) +
          ', '.join(fmt(v) for v in co) + '};')


def wide_tables(print):
    core_tables(print, DEG, None, NINT_W, W_WIDE.get, 64, 'W32')
    for form in SELECTED:
        w = W_WIDE[form]
        print('// k%sWidthW32: the width, its reciprocal and the core\'s end; interval k'
              ' is [k - 1/2, k + 1/2] widths, expanded at k widths' % form.capitalize())
        print('inline constexpr float k%sWidthW32[3] = {%s, %s, %s};'
              % (form.capitalize(), fmt(w), fmt(f32(1 / w)), fmt(W_END * w)))


def blocks(lines):
    """The tables of a coefficient file: {name: (first, end)}, each table's
    lines [first, end) with the comment lines right above it."""
    out, comment = {}, None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('//'):
            comment = i if comment is None else comment
        elif ' inline constexpr float ' in ' ' + line:
            name = line.split('inline constexpr float ')[1].split('[')[0]
            end = i
            while not lines[end].rstrip().endswith('};'):
                end += 1
            out[name] = (i if comment is None else comment, end + 1)
            i, comment = end, None
        else:
            comment = None
        i += 1
    return out


def update(path, new_lines):
    """Replaces the tables of new_lines in the file at path, and adds the
    ones it lacks before its closing namespace."""
    with open(path) as f:
        old = f.read().split('\n')
    new = blocks(new_lines)
    have = blocks(old)
    for name, (a, b) in sorted(((n, have[n]) for n in new if n in have),
                               key=lambda item: -item[1][0]):
        old[a:b] = new_lines[new[name][0]:new[name][1]]
    close = old.index('}  // namespace gelu::cpu::gelu_coefficients')
    added = [line for n in new if n not in have
             for line in new_lines[new[n][0]:new[n][1]]]
    old[close - 1:close - 1] = added
    with open(path, 'w') as f:
        f.write('\n'.join(old))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--output', default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..', '..', 'src', 'cpu',
        'gelu_coefficients.h'))
    ap.add_argument('--stdout', action='store_true')
    ap.add_argument('--narrow', action='store_true',
                    help='the narrow core\'s tables instead (default output '
                    'src/cpu/gelu_coefficients_n8.h)')
    ap.add_argument('--forms', help='comma-separated forms to fit (default: all: %s)'
                    % ','.join(FORMS))
    ap.add_argument('--update', action='store_true',
                    help='with --forms: replace or add those tables in the existing '
                    'output file, leaving the others')
    ap.add_argument('--wide', action='store_true',
                    help='the wide core\'s tables instead (default output '
                    'src/cpu/gelu_coefficients_w32.h)')
    args = ap.parse_args()
    global SELECTED
    if args.forms:
        SELECTED = tuple(args.forms.split(','))
        unknown = set(SELECTED) - set(FORMS)
        if unknown:
            ap.error('unknown forms %s (the forms: %s)' % (sorted(unknown), ','.join(FORMS)))
    if args.update and (not args.forms or args.stdout):
        ap.error('--update needs --forms and writes the output file')
    if args.narrow and args.output == ap.get_default('output'):
        args.output = args.output.replace('gelu_coefficients.h', 'gelu_coefficients_n8.h')
    if args.wide and args.output == ap.get_default('output'):
        args.output = args.output.replace('gelu_coefficients.h', 'gelu_coefficients_w32.h')
    lines = []
    (narrow_tables if args.narrow else wide_tables if args.wide else tables)(
        lambda text: lines.append(text))
    if args.update:
        update(args.output, '\n'.join(lines).split('\n'))
        return
    text = ((NARROW_HEADER if args.narrow else WIDE_HEADER if args.wide else HEADER) +
            '\n'.join(lines) + '\n' + FOOTER)
    if args.stdout:
        print(text, end='')
        return
    with open(args.output, 'w') as f:
        f.write(text)


if __name__ == '__main__':
    main()
