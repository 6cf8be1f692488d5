"""Compiled connector kernels: the formulas of THEORY §6–8, one loop per connector kind.

Each kernel computes, for every instance of its kind, exactly what the numpy
kernels in :mod:`mbsim.elements` compute — local residual ``(n, 12)``,
local tangent ``(n, 12, 12)`` (optional), force and moment on A, length,
dissipated power, stored energy and the degenerate flag — with scalar
arithmetic on 3-vectors instead of batched temporaries.  The numpy kernels
stay the readable reference; tests hold the two to rounding.

Tangent modes: 0 none, 1 consistent, 2 seed (THEORY §8).

Every kernel can also add its tangent blocks straight into the solver's
storage: given ``pos`` (n, 144) positions and ``data``, block e goes to
``data[pos[e]]`` and only a one-block scratch ``K`` (1, 12, 12) is needed —
no (n, 12, 12) array is written and read back (what dominates large models).
With an empty ``pos`` the blocks are returned in ``K`` (n, 12, 12).

Style: 3-vectors are tuples (values in registers) and 3×3 work matrices are
rows ``S[k]`` of one scratch array passed down, addressed by index; rows of
the state arrays are read by index (``R1[a, i, j]``), never as views.  An
array view or slice costs two atomic reference-count updates in numba, and
with views these kernels spent three quarters of their time on them at
N = 1 (a spring's residual: 310 ns with views, 95 ns without).
"""
from __future__ import annotations

import numpy as np

from . import njit

NONE, CONSISTENT, SEED = 0, 1, 2
_DEGENERATE_LENGTH = 1e-12


# Shape of the work space a kernel of this module (or of mbsim.kernels.bodies) takes as ``scr``:
# five 3×3 matrices and a spare, so that a call allocates nothing.
SCRATCH = (6, 3, 3)


@njit(cache=True)
def row(x, i):
    """Row ``i`` of an (n, 3) array as a tuple."""
    return (x[i, 0], x[i, 1], x[i, 2])


@njit(cache=True)
def mv(R, a, z):
    """R[a] z for R (n, 3, 3) and a tuple z."""
    return (R[a, 0, 0] * z[0] + R[a, 0, 1] * z[1] + R[a, 0, 2] * z[2],
            R[a, 1, 0] * z[0] + R[a, 1, 1] * z[1] + R[a, 1, 2] * z[2],
            R[a, 2, 0] * z[0] + R[a, 2, 1] * z[1] + R[a, 2, 2] * z[2])


@njit(cache=True)
def mtv(R, a, z):
    """R[a]ᵀ z for R (n, 3, 3) and a tuple z."""
    return (R[a, 0, 0] * z[0] + R[a, 1, 0] * z[1] + R[a, 2, 0] * z[2],
            R[a, 0, 1] * z[0] + R[a, 1, 1] * z[1] + R[a, 2, 1] * z[2],
            R[a, 0, 2] * z[0] + R[a, 1, 2] * z[1] + R[a, 2, 2] * z[2])


@njit(cache=True)
def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True)
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def _skew_left(z, M, m, out, o):
    """out[o] = ẑ M[m]."""
    for j in range(3):
        out[o, 0, j] = -z[2] * M[m, 1, j] + z[1] * M[m, 2, j]
        out[o, 1, j] = z[2] * M[m, 0, j] - z[0] * M[m, 2, j]
        out[o, 2, j] = -z[1] * M[m, 0, j] + z[0] * M[m, 1, j]


@njit(cache=True)
def _skew_right(M, m, z, out, o):
    """out[o] = M[m] ẑ."""
    for i in range(3):
        out[o, i, 0] = M[m, i, 1] * z[2] - M[m, i, 2] * z[1]
        out[o, i, 1] = -M[m, i, 0] * z[2] + M[m, i, 2] * z[0]
        out[o, i, 2] = M[m, i, 0] * z[1] - M[m, i, 1] * z[0]


@njit(cache=True)
def _point(af, R1, Rn, r1, rn, a, Z):
    """Arm at n+1, at n, at n+α, and the point at n+α of body ``a`` (THEORY §6)."""
    z1 = mv(R1, a, Z)
    zn = mv(Rn, a, Z)
    b = 1.0 - af
    za = (af * z1[0] + b * zn[0], af * z1[1] + b * zn[1], af * z1[2] + b * zn[2])
    x = (af * r1[a, 0] + b * rn[a, 0] + za[0], af * r1[a, 1] + b * rn[a, 1] + za[1],
         af * r1[a, 2] + b * rn[a, 2] + za[2])
    return z1, zn, za, x


@njit(cache=True)
def _pair_residual(f, zAa, zBa, res, e):
    """res[e] = [f, z_A×f, −f, −z_B×f]."""
    tA = cross(zAa, f)
    tB = cross(zBa, f)
    for i in range(3):
        res[e, i] = f[i]
        res[e, 3 + i] = tA[i]
        res[e, 6 + i] = -f[i]
        res[e, 9 + i] = -tB[i]


@njit(cache=True)
def _pair_tangent(af, S, zAa, zBa, zA1, zB1, f, geometric, K, ke, tmp):
    """Generic 12×12 block of THEORY §6 without a moment part, into K[ke].

    S[0:4] = [F_rA, F_θA, F_rB, F_θB] with Df = α_f Σ F_j Δ_j; S[tmp] is work space.
    """
    for j in range(4):
        for r in range(3):
            for c in range(3):
                K[ke, r, 3 * j + c] = -af * S[j, r, c]
                K[ke, 6 + r, 3 * j + c] = af * S[j, r, c]
        _skew_left(zAa, S, j, S, tmp)
        for r in range(3):
            for c in range(3):
                K[ke, 3 + r, 3 * j + c] = -af * S[tmp, r, c]
        _skew_left(zBa, S, j, S, tmp)
        for r in range(3):
            for c in range(3):
                K[ke, 9 + r, 3 * j + c] = af * S[tmp, r, c]
    if geometric:
        # f̂ ẑ' = z' fᵀ − (f·z') I
        fzA = dot(f, zA1)
        fzB = dot(f, zB1)
        for r in range(3):
            for c in range(3):
                K[ke, 3 + r, 3 + c] -= af * (zA1[r] * f[c] - (fzA if r == c else 0.0))
                K[ke, 9 + r, 9 + c] += af * (zB1[r] * f[c] - (fzB if r == c else 0.0))


@njit(cache=True)
def add_block(K, ke, pos, e, data):
    """data[pos[e]] += K[ke] (entries −1 of pos: dropped)."""
    for r in range(12):
        for q in range(12):
            k = pos[e, 12 * r + q]
            if k >= 0:
                data[k] += K[ke, r, q]


@njit(cache=True)
def spring(ia, ib, ZA, ZB, k, L0, af, R1, Rn, r1, rn, mode,
           res, K, force, length, potential, degenerate, pos, data, scr):
    """Spring ``f = k (1 − L0/L) c`` (THEORY §7); fills the output arrays in place
    (``scr``: a SCRATCH array of work space, so that a call allocates nothing)."""
    direct = pos.shape[0] > 0
    for e in range(ia.shape[0]):
        a, b = ia[e], ib[e]
        zA1, zAn, zAa, xA = _point(af, R1, Rn, r1, rn, a, row(ZA, e))
        zB1, zBn, zBa, xB = _point(af, R1, Rn, r1, rn, b, row(ZB, e))
        c = (xB[0] - xA[0], xB[1] - xA[1], xB[2] - xA[2])
        L = np.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
        deg = L0[e] > 0.0 and L <= _DEGENERATE_LENGTH * L0[e]
        safe = 1.0 if (deg or L == 0.0) else L
        ratio = L0[e] / safe if L0[e] > 0.0 else 0.0
        s = k[e] * (1.0 - ratio)
        f = (s * c[0], s * c[1], s * c[2])
        for i in range(3):
            force[e, i] = f[i]
        degenerate[e] = deg
        length[e] = L
        potential[e] = 0.5 * k[e] * (L - L0[e]) ** 2
        _pair_residual(f, zAa, zBa, res, e)
        if mode != NONE:
            nv = (c[0] / safe, c[1] / safe, c[2] / safe)
            for r in range(3):  # S[4] = k P, P = (1 − L0/L) I + (L0/L) n⊗n
                for q in range(3):
                    scr[4, r, q] = k[e] * (ratio * nv[r] * nv[q] + ((1.0 - ratio) if r == q else 0.0))
            for r in range(3):
                for q in range(3):
                    scr[0, r, q] = -scr[4, r, q]
                    scr[2, r, q] = scr[4, r, q]
            _skew_right(scr, 4, zA1, scr, 1)
            _skew_right(scr, 4, zB1, scr, 3)
            for r in range(3):
                for q in range(3):
                    scr[3, r, q] = -scr[3, r, q]
            ke = 0 if direct else e
            _pair_tangent(af, scr, zAa, zBa, zA1, zB1, f, mode == CONSISTENT, K, ke, 4)
            if direct:
                add_block(K, ke, pos, e, data)


@njit(cache=True)
def _damper_B(g, z1, T, a, w1, consistent, S, o, tmp):
    """S[o] = Dv_pt' = g Δr − B Δθ: consistent g ẑ'T + (ω'×z')^, seed g ẑ'Tᵀ + ω̂'ẑ' (THEORY §7, §8);
    ``w1`` is the tuple ω' of body ``a``, T[a] its T(θ); S[tmp] is work space."""
    if consistent:
        for r in range(3):
            for q in range(3):
                S[tmp, r, q] = T[a, r, q]
        _skew_left(z1, S, tmp, S, o)
        wz = cross(w1, z1)
        for r in range(3):
            for q in range(3):
                S[o, r, q] *= g
        S[o, 0, 1] -= wz[2]; S[o, 0, 2] += wz[1]
        S[o, 1, 0] += wz[2]; S[o, 1, 2] -= wz[0]
        S[o, 2, 0] -= wz[1]; S[o, 2, 1] += wz[0]
    else:
        for r in range(3):
            for q in range(3):
                S[tmp, r, q] = T[a, q, r]
        _skew_left(z1, S, tmp, S, o)
        wz = dot(w1, z1)
        for r in range(3):
            for q in range(3):  # ω̂'ẑ' = z' ω'ᵀ − (ω'·z') I
                S[o, r, q] = g * S[o, r, q] + z1[r] * w1[q] - (wz if r == q else 0.0)


@njit(cache=True)
def damper(ia, ib, ZA, ZB, cd, af, g, R1, Rn, r1, rn, v1, vn, w1, wn, T, mode,
           res, K, force, length, power, pos, data, scr):
    """Dashpot ``f = ε_c (v_pt,B,α − v_pt,A,α)`` (THEORY §7); fills the outputs in place
    (``scr``: a SCRATCH array of work space)."""
    direct = pos.shape[0] > 0
    bf = 1.0 - af
    for e in range(ia.shape[0]):
        a, b = ia[e], ib[e]
        zA1, zAn, zAa, xA = _point(af, R1, Rn, r1, rn, a, row(ZA, e))
        zB1, zBn, zBa, xB = _point(af, R1, Rn, r1, rn, b, row(ZB, e))
        wA1 = row(w1, a)
        wB1 = row(w1, b)
        # point velocities at n+1 and n, interpolated
        t1 = cross(wB1, zB1)
        t2 = cross(row(wn, b), zBn)
        u1 = cross(wA1, zA1)
        u2 = cross(row(wn, a), zAn)
        dv = ((af * (v1[b, 0] + t1[0]) + bf * (vn[b, 0] + t2[0])) - (af * (v1[a, 0] + u1[0]) + bf * (vn[a, 0] + u2[0])),
              (af * (v1[b, 1] + t1[1]) + bf * (vn[b, 1] + t2[1])) - (af * (v1[a, 1] + u1[1]) + bf * (vn[a, 1] + u2[1])),
              (af * (v1[b, 2] + t1[2]) + bf * (vn[b, 2] + t2[2])) - (af * (v1[a, 2] + u1[2]) + bf * (vn[a, 2] + u2[2])))
        f = (cd[e] * dv[0], cd[e] * dv[1], cd[e] * dv[2])
        for i in range(3):
            force[e, i] = f[i]
        power[e] = f[0] * dv[0] + f[1] * dv[1] + f[2] * dv[2]
        length[e] = np.sqrt((xB[0] - xA[0]) ** 2 + (xB[1] - xA[1]) ** 2 + (xB[2] - xA[2]) ** 2)
        _pair_residual(f, zAa, zBa, res, e)
        if mode != NONE:
            cg = cd[e] * g
            for r in range(3):
                for q in range(3):
                    scr[0, r, q] = -cg if r == q else 0.0
                    scr[2, r, q] = cg if r == q else 0.0
            _damper_B(g, zA1, T, a, wA1, mode == CONSISTENT, scr, 1, 4)
            _damper_B(g, zB1, T, b, wB1, mode == CONSISTENT, scr, 3, 4)
            for r in range(3):
                for q in range(3):
                    scr[1, r, q] *= cd[e]
                    scr[3, r, q] *= -cd[e]
            ke = 0 if direct else e
            _pair_tangent(af, scr, zAa, zBa, zA1, zB1, f, mode == CONSISTENT, K, ke, 4)
            if direct:
                add_block(K, ke, pos, e, data)


@njit(cache=True)
def torsional(ia, ib, E, chi, c0, c1, af, g, R1, Rn, w1, wn, T, Omega, mode,
              res, K, moment, power, pos, data, scr):
    """Torsional damper ``m = χ_r P (ω_B,α − ω_A,α)``, P = c0 I + c1 n⊗n (THEORY §7)
    (``scr``: a SCRATCH array of work space; S[0] = P, S[1] = W, S[2] = A, S[3] = M_A, S[4] = M_B)."""
    direct = pos.shape[0] > 0
    bf = 1.0 - af
    for e in range(ia.shape[0]):
        a, b = ia[e], ib[e]
        w = ((af * w1[b, 0] + bf * wn[b, 0]) - (af * w1[a, 0] + bf * wn[a, 0]),
             (af * w1[b, 1] + bf * wn[b, 1]) - (af * w1[a, 1] + bf * wn[a, 1]),
             (af * w1[b, 2] + bf * wn[b, 2]) - (af * w1[a, 2] + bf * wn[a, 2]))
        Ee = row(E, e)
        n1 = mv(R1, a, Ee)
        nn = mv(Rn, a, Ee)
        nv = (af * n1[0] + bf * nn[0], af * n1[1] + bf * nn[1], af * n1[2] + bf * nn[2])
        for r in range(3):
            for q in range(3):
                scr[0, r, q] = c1[e] * nv[r] * nv[q] + (c0[e] if r == q else 0.0)
        pw = 0.0
        for r in range(3):
            mr = chi[e] * (scr[0, r, 0] * w[0] + scr[0, r, 1] * w[1] + scr[0, r, 2] * w[2])
            moment[e, r] = mr
            pw += mr * w[r]
            res[e, r] = 0.0
            res[e, 3 + r] = mr
            res[e, 6 + r] = 0.0
            res[e, 9 + r] = -mr
        power[e] = pw
        if mode != NONE:
            nw = dot(nv, w)
            for r in range(3):  # A = (n·ω) I + n⊗ω
                for q in range(3):
                    scr[2, r, q] = nv[r] * w[q] + (nw if r == q else 0.0)
            _skew_right(scr, 2, n1, scr, 1)  # W = −c1 A n̂'
            for r in range(3):
                for q in range(3):
                    scr[1, r, q] *= -c1[e]
            if mode == CONSISTENT:  # MA = χ(−P Ω_A + W), MB = χ P Ω_B
                for r in range(3):
                    for q in range(3):
                        sa = 0.0
                        sb = 0.0
                        for j in range(3):
                            sa += scr[0, r, j] * Omega[a, j, q]
                            sb += scr[0, r, j] * Omega[b, j, q]
                        scr[3, r, q] = chi[e] * (scr[1, r, q] - sa)
                        scr[4, r, q] = chi[e] * sb
            else:  # seed: C_X = g P T(θ_X)ᵀ, K_mθA = χ(−C_A + W), K_mθB = χ C_B
                for r in range(3):
                    for q in range(3):
                        sa = 0.0
                        sb = 0.0
                        for j in range(3):
                            sa += scr[0, r, j] * T[a, q, j]
                            sb += scr[0, r, j] * T[b, q, j]
                        scr[3, r, q] = chi[e] * (scr[1, r, q] - g * sa)
                        scr[4, r, q] = chi[e] * g * sb
            ke = 0 if direct else e
            for r in range(12):
                for q in range(12):
                    K[ke, r, q] = 0.0
            for r in range(3):
                for q in range(3):
                    K[ke, 3 + r, 3 + q] = -af * scr[3, r, q]
                    K[ke, 3 + r, 9 + q] = -af * scr[4, r, q]
                    K[ke, 9 + r, 3 + q] = af * scr[3, r, q]
                    K[ke, 9 + r, 9 + q] = af * scr[4, r, q]
            if direct:
                add_block(K, ke, pos, e, data)
