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
"""
from __future__ import annotations

import numpy as np

from . import njit

NONE, CONSISTENT, SEED = 0, 1, 2
_DEGENERATE_LENGTH = 1e-12


# Floats of work space a kernel of this module (or of mbsim.kernels.bodies) takes as ``scr``: its
# small vectors and matrices are views of it, so a call allocates nothing (~450 ns saved a call).
SCRATCH = 96


@njit(cache=True)
def _mv(R, Z, out):
    for i in range(3):
        out[i] = R[i, 0] * Z[0] + R[i, 1] * Z[1] + R[i, 2] * Z[2]


@njit(cache=True)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True)
def _skew_left(z, M, out):
    """out = ẑ M."""
    for j in range(3):
        out[0, j] = -z[2] * M[1, j] + z[1] * M[2, j]
        out[1, j] = z[2] * M[0, j] - z[0] * M[2, j]
        out[2, j] = -z[1] * M[0, j] + z[0] * M[1, j]


@njit(cache=True)
def _skew_right(M, z, out):
    """out = M ẑ."""
    for i in range(3):
        out[i, 0] = M[i, 1] * z[2] - M[i, 2] * z[1]
        out[i, 1] = -M[i, 0] * z[2] + M[i, 2] * z[0]
        out[i, 2] = M[i, 0] * z[1] - M[i, 1] * z[0]


@njit(cache=True)
def _point(af, R1, Rn, r1, rn, Z, z1, zn, za, x):
    """Arm at n+1, at n, at n+α, and the point at n+α (THEORY §6)."""
    _mv(R1, Z, z1)
    _mv(Rn, Z, zn)
    for i in range(3):
        za[i] = af * z1[i] + (1.0 - af) * zn[i]
        x[i] = af * r1[i] + (1.0 - af) * rn[i] + za[i]


@njit(cache=True)
def _pair_residual(f, zAa, zBa, res, tmp):
    """[f, z_A×f, −f, −z_B×f] into res (12,)."""
    _cross(zAa, f, tmp)
    for i in range(3):
        res[i] = f[i]
        res[3 + i] = tmp[i]
        res[6 + i] = -f[i]
    _cross(zBa, f, tmp)
    for i in range(3):
        res[9 + i] = -tmp[i]


@njit(cache=True)
def _pair_tangent(af, F, zAa, zBa, zA1, zB1, f, geometric, K, tmp):
    """Generic 12×12 block of THEORY §6 without a moment part, into K (12, 12).

    F is (4, 3, 3) = [F_rA, F_θA, F_rB, F_θB] with Df = α_f Σ F_j Δ_j.
    """
    for j in range(4):
        for r in range(3):
            for c in range(3):
                K[r, 3 * j + c] = -af * F[j, r, c]
                K[6 + r, 3 * j + c] = af * F[j, r, c]
        _skew_left(zAa, F[j], tmp)
        for r in range(3):
            for c in range(3):
                K[3 + r, 3 * j + c] = -af * tmp[r, c]
        _skew_left(zBa, F[j], tmp)
        for r in range(3):
            for c in range(3):
                K[9 + r, 3 * j + c] = af * tmp[r, c]
    if geometric:
        # f̂ ẑ' = z' fᵀ − (f·z') I
        fzA = f[0] * zA1[0] + f[1] * zA1[1] + f[2] * zA1[2]
        fzB = f[0] * zB1[0] + f[1] * zB1[1] + f[2] * zB1[2]
        for r in range(3):
            for c in range(3):
                K[3 + r, 3 + c] -= af * (zA1[r] * f[c] - (fzA if r == c else 0.0))
                K[9 + r, 9 + c] += af * (zB1[r] * f[c] - (fzB if r == c else 0.0))


@njit(cache=True)
def _add_block(Ke, p, data):
    for r in range(12):
        for q in range(12):
            k = p[12 * r + q]
            if k >= 0:
                data[k] += Ke[r, q]


@njit(cache=True)
def _block(K, e, pos):
    """Where instance ``e`` builds its 12×12 tangent: the one scratch block when the blocks
    go straight into the solver storage (``pos`` given), else its own block of ``K``."""
    return K[0] if pos.shape[0] > 0 else K[e]


@njit(cache=True)
def _deliver(Ke, e, pos, data):
    """Add the block of instance ``e`` into the solver storage when ``pos`` is given."""
    if pos.shape[0] > 0:
        _add_block(Ke, pos[e], data)


@njit(cache=True)
def spring(ia, ib, ZA, ZB, k, L0, af, R1, Rn, r1, rn, mode,
           res, K, force, length, potential, degenerate, pos, data, scr):
    """Spring ``f = k (1 − L0/L) c`` (THEORY §7); fills the output arrays in place
    (``scr``: SCRATCH floats of work space, so that a call allocates nothing)."""
    zA1 = scr[0:3]; zAn = scr[3:6]; zAa = scr[6:9]; xA = scr[9:12]
    zB1 = scr[12:15]; zBn = scr[15:18]; zBa = scr[18:21]; xB = scr[21:24]
    c = scr[24:27]; f = scr[27:30]; nv = scr[30:33]; tmp = scr[33:36]
    F = scr[36:72].reshape((4, 3, 3)); T3 = scr[72:81].reshape((3, 3))
    for e in range(ia.shape[0]):
        a, b = ia[e], ib[e]
        _point(af, R1[a], Rn[a], r1[a], rn[a], ZA[e], zA1, zAn, zAa, xA)
        _point(af, R1[b], Rn[b], r1[b], rn[b], ZB[e], zB1, zBn, zBa, xB)
        for i in range(3):
            c[i] = xB[i] - xA[i]
        L = np.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
        deg = L0[e] > 0.0 and L <= _DEGENERATE_LENGTH * L0[e]
        safe = 1.0 if (deg or L == 0.0) else L
        ratio = L0[e] / safe if L0[e] > 0.0 else 0.0
        s = k[e] * (1.0 - ratio)
        for i in range(3):
            f[i] = s * c[i]
            force[e, i] = f[i]
        degenerate[e] = deg
        length[e] = L
        potential[e] = 0.5 * k[e] * (L - L0[e]) ** 2
        _pair_residual(f, zAa, zBa, res[e], tmp)
        if mode != NONE:
            for i in range(3):
                nv[i] = c[i] / safe
            for r in range(3):  # k P, P = (1 − L0/L) I + (L0/L) n⊗n
                for q in range(3):
                    T3[r, q] = k[e] * (ratio * nv[r] * nv[q] + ((1.0 - ratio) if r == q else 0.0))
            for r in range(3):
                for q in range(3):
                    F[0, r, q] = -T3[r, q]
                    F[2, r, q] = T3[r, q]
            _skew_right(T3, zA1, F[1])
            _skew_right(T3, zB1, F[3])
            for r in range(3):
                for q in range(3):
                    F[3, r, q] = -F[3, r, q]
            Ke = _block(K, e, pos)
            _pair_tangent(af, F, zAa, zBa, zA1, zB1, f, mode == CONSISTENT, Ke, T3)
            _deliver(Ke, e, pos, data)


@njit(cache=True)
def _damper_B(g, z1, T, w1, consistent, out, tmp):
    """Dv_pt' = g Δr − B Δθ: consistent g ẑ'T + (ω'×z')^, seed g ẑ'Tᵀ + ω̂'ẑ' (THEORY §7, §8)."""
    if consistent:
        _skew_left(z1, T, out)
        wz0 = w1[1] * z1[2] - w1[2] * z1[1]
        wz1 = w1[2] * z1[0] - w1[0] * z1[2]
        wz2 = w1[0] * z1[1] - w1[1] * z1[0]
        for r in range(3):
            for q in range(3):
                out[r, q] *= g
        out[0, 1] -= wz2; out[0, 2] += wz1
        out[1, 0] += wz2; out[1, 2] -= wz0
        out[2, 0] -= wz1; out[2, 1] += wz0
    else:
        for r in range(3):
            for q in range(3):
                tmp[r, q] = T[q, r]
        _skew_left(z1, tmp, out)
        wz = w1[0] * z1[0] + w1[1] * z1[1] + w1[2] * z1[2]
        for r in range(3):
            for q in range(3):  # ω̂'ẑ' = z' ω'ᵀ − (ω'·z') I
                out[r, q] = g * out[r, q] + z1[r] * w1[q] - (wz if r == q else 0.0)


@njit(cache=True)
def damper(ia, ib, ZA, ZB, cd, af, g, R1, Rn, r1, rn, v1, vn, w1, wn, T, mode,
           res, K, force, length, power, pos, data, scr):
    """Dashpot ``f = ε_c (v_pt,B,α − v_pt,A,α)`` (THEORY §7); fills the outputs in place
    (``scr``: SCRATCH floats of work space)."""
    zA1 = scr[0:3]; zAn = scr[3:6]; zAa = scr[6:9]; xA = scr[9:12]
    zB1 = scr[12:15]; zBn = scr[15:18]; zBa = scr[18:21]; xB = scr[21:24]
    dv = scr[24:27]; f = scr[27:30]; tmp = scr[30:33]; t1 = scr[33:36]; t2 = scr[36:39]
    F = scr[39:75].reshape((4, 3, 3)); M3 = scr[75:84].reshape((3, 3))
    for e in range(ia.shape[0]):
        a, b = ia[e], ib[e]
        _point(af, R1[a], Rn[a], r1[a], rn[a], ZA[e], zA1, zAn, zAa, xA)
        _point(af, R1[b], Rn[b], r1[b], rn[b], ZB[e], zB1, zBn, zBa, xB)
        # point velocities at n+1 and n, interpolated
        _cross(w1[b], zB1, t1)
        _cross(wn[b], zBn, t2)
        for i in range(3):
            dv[i] = af * (v1[b, i] + t1[i]) + (1.0 - af) * (vn[b, i] + t2[i])
        _cross(w1[a], zA1, t1)
        _cross(wn[a], zAn, t2)
        for i in range(3):
            dv[i] -= af * (v1[a, i] + t1[i]) + (1.0 - af) * (vn[a, i] + t2[i])
        pw = 0.0
        dl = 0.0
        for i in range(3):
            f[i] = cd[e] * dv[i]
            force[e, i] = f[i]
            pw += f[i] * dv[i]
            dl += (xB[i] - xA[i]) ** 2
        power[e] = pw
        length[e] = np.sqrt(dl)
        _pair_residual(f, zAa, zBa, res[e], tmp)
        if mode != NONE:
            cg = cd[e] * g
            for r in range(3):
                for q in range(3):
                    F[0, r, q] = -cg if r == q else 0.0
                    F[2, r, q] = cg if r == q else 0.0
            _damper_B(g, zA1, T[a], w1[a], mode == CONSISTENT, F[1], M3)
            _damper_B(g, zB1, T[b], w1[b], mode == CONSISTENT, F[3], M3)
            for r in range(3):
                for q in range(3):
                    F[1, r, q] *= cd[e]
                    F[3, r, q] *= -cd[e]
            Ke = _block(K, e, pos)
            _pair_tangent(af, F, zAa, zBa, zA1, zB1, f, mode == CONSISTENT, Ke, M3)
            _deliver(Ke, e, pos, data)


@njit(cache=True)
def torsional(ia, ib, E, chi, c0, c1, af, g, R1, Rn, w1, wn, T, Omega, mode,
              res, K, moment, power, pos, data, scr):
    """Torsional damper ``m = χ_r P (ω_B,α − ω_A,α)``, P = c0 I + c1 n⊗n (THEORY §7)
    (``scr``: SCRATCH floats of work space)."""
    n1 = scr[0:3]; nn = scr[3:6]; nv = scr[6:9]; w = scr[9:12]; m = scr[12:15]
    P = scr[15:24].reshape((3, 3)); W = scr[24:33].reshape((3, 3)); A = scr[33:42].reshape((3, 3))
    MA = scr[42:51].reshape((3, 3)); MB = scr[51:60].reshape((3, 3))
    for e in range(ia.shape[0]):
        a, b = ia[e], ib[e]
        for i in range(3):
            w[i] = (af * w1[b, i] + (1.0 - af) * wn[b, i]) - (af * w1[a, i] + (1.0 - af) * wn[a, i])
        _mv(R1[a], E[e], n1)
        _mv(Rn[a], E[e], nn)
        for i in range(3):
            nv[i] = af * n1[i] + (1.0 - af) * nn[i]
        for r in range(3):
            for q in range(3):
                P[r, q] = c1[e] * nv[r] * nv[q] + (c0[e] if r == q else 0.0)
        pw = 0.0
        for r in range(3):
            m[r] = chi[e] * (P[r, 0] * w[0] + P[r, 1] * w[1] + P[r, 2] * w[2])
            moment[e, r] = m[r]
            pw += m[r] * w[r]
            res[e, r] = 0.0
            res[e, 3 + r] = m[r]
            res[e, 6 + r] = 0.0
            res[e, 9 + r] = -m[r]
        power[e] = pw
        if mode != NONE:
            nw = nv[0] * w[0] + nv[1] * w[1] + nv[2] * w[2]
            for r in range(3):  # A = (n·ω) I + n⊗ω
                for q in range(3):
                    A[r, q] = nv[r] * w[q] + (nw if r == q else 0.0)
            _skew_right(A, n1, W)  # W = −c1 A n̂'
            for r in range(3):
                for q in range(3):
                    W[r, q] *= -c1[e]
            if mode == CONSISTENT:  # MA = χ(−P Ω_A + W), MB = χ P Ω_B
                for r in range(3):
                    for q in range(3):
                        sa = 0.0
                        sb = 0.0
                        for j in range(3):
                            sa += P[r, j] * Omega[a, j, q]
                            sb += P[r, j] * Omega[b, j, q]
                        MA[r, q] = chi[e] * (W[r, q] - sa)
                        MB[r, q] = chi[e] * sb
            else:  # seed: C_X = g P T(θ_X)ᵀ, K_mθA = χ(−C_A + W), K_mθB = χ C_B
                for r in range(3):
                    for q in range(3):
                        sa = 0.0
                        sb = 0.0
                        for j in range(3):
                            sa += P[r, j] * T[a, q, j]
                            sb += P[r, j] * T[b, q, j]
                        MA[r, q] = chi[e] * (W[r, q] - g * sa)
                        MB[r, q] = chi[e] * g * sb
            Ke = _block(K, e, pos)
            for r in range(12):
                for q in range(12):
                    Ke[r, q] = 0.0
            for r in range(3):
                for q in range(3):
                    Ke[3 + r, 3 + q] = -af * MA[r, q]
                    Ke[3 + r, 9 + q] = -af * MB[r, q]
                    Ke[9 + r, 3 + q] = af * MA[r, q]
                    Ke[9 + r, 9 + q] = af * MB[r, q]
            _deliver(Ke, e, pos, data)
