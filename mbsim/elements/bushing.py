"""Bushing: 6×6 stiffness and damping between two bodies at a point, in a frame fixed in A (THEORY §13).

Frame E (three orthonormal axes, world at t = 0, fixed in A; the same axes fixed in B are F), point X
(world at t = 0, fixed in both bodies).  Deflection and its rate, in E's axes:

    δ = [Eᵀ d, θ],   θ = log(Eᵀ F) (the relative rotation since t = 0, |θ| < π),
    δ̇ = [Eᵀ(ḋ − ω_A × d), J_l(θ)⁻¹ Eᵀ(ω_B − ω_A)]

(d = x_B − x_A of the points), the generalized force on B ``g = −(p + K δ + C δ̇)``, and the law's
``p_d = E g_t`` (the force on B's point), ``p_B = E J_l(θ)⁻ᵀ g_r`` (the moment on B),
``p_A = −p_B + p_d × d`` — each conjugate to the exact variation of δ (:mod:`.rotation`), so that the
stiffness is exactly conservative at any rotation.  Potential ½ δᵀKδ + pᵀδ (= ½ δᵀK_sδ + pᵀδ, K_s the
symmetric part of K), dissipated power δ̇ᵀCδ̇; a non-symmetric K's antisymmetric part K_a does the work
−(K_a δ)·δ̇ = −½[(Kδ)·δ̇ − δ·(Kδ̇)] on the bodies, counted as external work (``Y_WORK``; THEORY §13).  The axis-less torsional spring (:mod:`.torsional_spring`) is the same law with K the
rotational κ I and no point.

It is evaluated at the states of the step's ends and its forces interpolated (``interpolate =
"forces"``, as the joints): the rotation measure needs orthonormal frames, which the α-interpolated
state of a step does not have.
"""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels.vec import cross, hat, madd, mm, mneg, msub, mt, put, put_block, row
from .base import (DERIVATIVES, X_AXES, X_D, X_DV, X_WA, X_WB, Y_P, Y_POTENTIAL, Y_POWER, Y_WORK, ElementKind,
                   block_offset, material_arms, offsets)
from .rotation import d_jinv, jinv, log_rotation

FIELDS = (("ZA", 3), ("ZB", 3), ("K", 36), ("C", 36), ("P", 6), ("asym", 1))  # asym: K is not symmetric
_K, _C, _P, _ASYM = offsets(FIELDS)[2:]

# where ∂p_d, ∂p_A, ∂p_B with respect to d, θ_A, θ_B, ḋ, ω_A, ω_B go
_BD = tuple(block_offset("d" + c) for c in "dabvAB")
_BA = tuple(block_offset("a" + c) for c in "dabvAB")
_BB = tuple(block_offset("b" + c) for c in "dabvAB")


@njit(cache=True)
def _blk(p, e, col, r, c):
    """Block (r, c) (3×3) of the 6×6 matrix stored row by row at ``col`` of row ``e``."""
    o = col + 18 * r + 3 * c
    return (p[e, o], p[e, o + 1], p[e, o + 2], p[e, o + 6], p[e, o + 7], p[e, o + 8],
            p[e, o + 12], p[e, o + 13], p[e, o + 14])


@njit(cache=True)
def _mv(A, v):
    return (A[0] * v[0] + A[1] * v[1] + A[2] * v[2], A[3] * v[0] + A[4] * v[1] + A[5] * v[2],
            A[6] * v[0] + A[7] * v[1] + A[8] * v[2])


@njit(cache=True)
def _add3(a, b, c):
    return (a[0] + b[0] + c[0], a[1] + b[1] + c[1], a[2] + b[2] + c[2])


@njit(cache=True)
def _apply(p, e, col, t, r):
    """M [t; r] for the 6×6 M at ``col``: its two 3-vector halves."""
    top = _add3(_mv(_blk(p, e, col, 0, 0), t), _mv(_blk(p, e, col, 0, 1), r), (0.0, 0.0, 0.0))
    bot = _add3(_mv(_blk(p, e, col, 1, 0), t), _mv(_blk(p, e, col, 1, 1), r), (0.0, 0.0, 0.0))
    return top, bot


@njit(cache=True)
def _apply_m(p, e, col, T, R):
    """M [T; R] for 3×3 blocks T, R (a 6×3 Jacobian): its two 3×3 halves."""
    top = madd(mm(_blk(p, e, col, 0, 0), T), mm(_blk(p, e, col, 0, 1), R))
    bot = madd(mm(_blk(p, e, col, 1, 0), T), mm(_blk(p, e, col, 1, 1), R))
    return top, bot


@njit(cache=True)
def _frame(x, e):
    """E (world columns a_i, fixed in A) and Eᵀ F (the relative rotation in E's axes) as 9-tuples."""
    a1, a2, a3 = row(x, e, X_AXES), row(x, e, X_AXES + 3), row(x, e, X_AXES + 6)
    b1, b2, b3 = row(x, e, X_AXES + 9), row(x, e, X_AXES + 12), row(x, e, X_AXES + 15)
    E = (a1[0], a2[0], a3[0], a1[1], a2[1], a3[1], a1[2], a2[2], a3[2])
    Q = (a1[0] * b1[0] + a1[1] * b1[1] + a1[2] * b1[2], a1[0] * b2[0] + a1[1] * b2[1] + a1[2] * b2[2],
         a1[0] * b3[0] + a1[1] * b3[1] + a1[2] * b3[2],
         a2[0] * b1[0] + a2[1] * b1[1] + a2[2] * b1[2], a2[0] * b2[0] + a2[1] * b2[1] + a2[2] * b2[2],
         a2[0] * b3[0] + a2[1] * b3[1] + a2[2] * b3[2],
         a3[0] * b1[0] + a3[1] * b1[1] + a3[2] * b1[2], a3[0] * b2[0] + a3[1] * b2[1] + a3[2] * b2[2],
         a3[0] * b3[0] + a3[1] * b3[1] + a3[2] * b3[2])
    return E, Q


@njit(cache=True)
def _neg3(a):
    return (-a[0], -a[1], -a[2])


@njit(cache=True)
def law(lo, hi, p, x, t, want, y, dy):
    """The bushing at a state (the module docstring).  Returns −1 (defined wherever |θ| < π)."""
    Z = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for e in range(lo, hi):
        d, dv, wa, wb = row(x, e, X_D), row(x, e, X_DV), row(x, e, X_WA), row(x, e, X_WB)
        E, Q = _frame(x, e)
        Et = mt(E)
        th = log_rotation(Q)
        wr = (wb[0] - wa[0], wb[1] - wa[1], wb[2] - wa[2])
        v = _mv(Et, wr)
        Ji = jinv(th, 1.0)
        JiT = jinv(th, -1.0)
        u = (dv[0] - (wa[1] * d[2] - wa[2] * d[1]), dv[1] - (wa[2] * d[0] - wa[0] * d[2]),
             dv[2] - (wa[0] * d[1] - wa[1] * d[0]))  # ḋ − ω_A × d
        dt_, dr_ = _mv(Et, d), th
        rt_, rr_ = _mv(Et, u), _mv(Ji, v)
        kt, kr = _apply(p, e, _K, dt_, dr_)
        ct, cr = _apply(p, e, _C, rt_, rr_)
        gt = (-(p[e, _P] + kt[0] + ct[0]), -(p[e, _P + 1] + kt[1] + ct[1]), -(p[e, _P + 2] + kt[2] + ct[2]))
        gr = (-(p[e, _P + 3] + kr[0] + cr[0]), -(p[e, _P + 4] + kr[1] + cr[1]), -(p[e, _P + 5] + kr[2] + cr[2]))
        pd = _mv(E, gt)
        mu = _mv(JiT, gr)
        pb = _mv(E, mu)
        pa = _add3(_neg3(pb), cross(pd, d), (0.0, 0.0, 0.0))
        put(y, e, Y_P, pd)
        put(y, e, Y_P + 3, pa)
        put(y, e, Y_P + 6, pb)
        y[e, Y_POTENTIAL] = (0.5 * (dt_[0] * kt[0] + dt_[1] * kt[1] + dt_[2] * kt[2]
                                    + dr_[0] * kr[0] + dr_[1] * kr[1] + dr_[2] * kr[2])
                             + p[e, _P] * dt_[0] + p[e, _P + 1] * dt_[1] + p[e, _P + 2] * dt_[2]
                             + p[e, _P + 3] * dr_[0] + p[e, _P + 4] * dr_[1] + p[e, _P + 5] * dr_[2])
        y[e, Y_POWER] = (rt_[0] * ct[0] + rt_[1] * ct[1] + rt_[2] * ct[2]
                         + rr_[0] * cr[0] + rr_[1] * cr[1] + rr_[2] * cr[2])
        y[e, Y_WORK] = 0.0
        if p[e, _ASYM] != 0.0:  # −½[(Kδ)·δ̇ − δ·(Kδ̇)]: the antisymmetric part's power, external work
            lt, lr = _apply(p, e, _K, rt_, rr_)
            y[e, Y_WORK] = -0.5 * ((kt[0] * rt_[0] + kt[1] * rt_[1] + kt[2] * rt_[2]
                                    + kr[0] * rr_[0] + kr[1] * rr_[1] + kr[2] * rr_[2])
                                   - (dt_[0] * lt[0] + dt_[1] * lt[1] + dt_[2] * lt[2]
                                      + dr_[0] * lr[0] + dr_[1] * lr[1] + dr_[2] * lr[2]))
        if want & DERIVATIVES:
            S = mm(Ji, Et)  # ∂θ/∂θ_B
            nS = mneg(S)
            Dv = d_jinv(th, v, 1.0)
            DS = mm(Dv, S)
            # the Jacobians of δ (T: translation, R: rotation) and δ̇ (Tv, Rv) with respect to each coordinate
            dhat = hat(d)
            Etd = mm(Et, dhat)
            # ∂g = −(K ∂δ + C ∂δ̇)
            # coordinates: 0 d, 1 θ_A, 2 θ_B (with δ and δ̇), 3 ḋ, 4 ω_A, 5 ω_B (δ̇ only)
            for c in range(6):
                if c == 0:
                    T, R, Tv, Rv = Et, Z, mm(Et, mneg(hat(wa))), Z
                elif c == 1:
                    T, R, Tv, Rv = Etd, nS, mm(Et, hat(u)), madd(mneg(DS), mm(Ji, mm(Et, hat(wr))))
                elif c == 2:
                    T, R, Tv, Rv = Z, S, Z, DS
                elif c == 3:
                    T, R, Tv, Rv = Z, Z, Et, Z
                elif c == 4:
                    T, R, Tv, Rv = Z, Z, Etd, nS
                else:
                    T, R, Tv, Rv = Z, Z, Z, S
                KT, KR = _apply_m(p, e, _K, T, R)
                CT, CR = _apply_m(p, e, _C, Tv, Rv)
                gT, gR = mneg(madd(KT, CT)), mneg(madd(KR, CR))
                dpd = mm(E, gT)
                dmu = mm(JiT, gR)
                if c == 1:
                    dmu = madd(dmu, mm(d_jinv(th, gr, -1.0), nS))
                elif c == 2:
                    dmu = madd(dmu, mm(d_jinv(th, gr, -1.0), S))
                dpb = mm(E, dmu)
                if c == 1:  # E turns with A
                    dpd = msub(dpd, hat(pd))
                    dpb = msub(dpb, hat(pb))
                dpa = msub(mneg(dpb), mm(dhat, dpd))
                if c == 0:
                    dpa = madd(dpa, hat(pd))
                put_block(dy, e, _BD[c], dpd)
                put_block(dy, e, _BA[c], dpa)
                put_block(dy, e, _BB[c], dpb)
    return -1


def matrix6(r, m, key: str, required: bool):
    """``key``: six numbers (a diagonal) or six rows of six (a full 6×6 matrix); None when absent and not
    ``required``."""
    node = m.get(key)
    if node is None:
        if required:
            r.require(m, key)
        return None
    path = m.sub(key)
    items = r.sequence(node, path, "six numbers (a diagonal) or six rows of six numbers")
    if items is None:
        return None
    if len(items) != 6:
        r.report(path, node, f"must have 6 entries (a diagonal) or 6 rows of 6, got {len(items)}")
        return None
    if all(isinstance(getattr(i, "value", None), list) for i in items):  # a list of six lists (YAML sequences)
        before = len(r.problems)
        rows = [r.numbers(i, f"{path}[{k}]", 6) for k, i in enumerate(items)]
        return None if len(r.problems) > before else np.array(rows, dtype=float)
    values = r.numbers(node, path, 6)
    return None if values is None else np.diag(values)


class Bushing(ElementKind):
    """A 6-DOF bushing between two bodies at a point (the module docstring)."""

    type = "bushing"
    keys = ("point", "axes", "stiffness", "damping", "preload")
    fields = FIELDS
    points = ("ZA", "ZB")
    axes = (("A1", "A"), ("A2", "A"), ("A3", "A"), ("B1", "B"), ("B2", "B"), ("B3", "B"))  # E in A, and in B
    interpolate = "forces"
    draw = "point"
    outputs = ("force", "moment")
    law = law
    works = True  # a non-symmetric stiffness
    stiffness = "k_max"
    measures_rotation = True  # its rotation vector is valid below a half turn (the driver warns past it)

    @staticmethod
    def read(r, m) -> dict:
        point = r.require(m, "point")
        point = None if point is None else r.vector(point, m.sub("point"))
        axes = np.eye(3)
        if m.has("axes"):
            node = m.get("axes")
            rows = r.numbers(node, m.sub("axes"), 3, item=r.vector, what="axes")
            if rows is not None:
                a = np.array(rows, dtype=float)
                norms = np.linalg.norm(a, axis=1)
                if np.any(norms == 0) or np.abs(a @ a.T / np.outer(norms, norms) - np.eye(3)).max() > 1e-6:
                    r.report(m.sub("axes"), node, "must be three perpendicular directions (|cos| ≤ 1e-6)")
                elif np.linalg.det(a) < 0:
                    r.report(m.sub("axes"), node, "must be a right-handed triad (axes[2] = axes[0] × axes[1])")
                else:
                    axes = a / norms[:, None]
        K = matrix6(r, m, "stiffness", True)  # (not symmetric: its antisymmetric part's work is external work)
        C = matrix6(r, m, "damping", False)
        if C is not None:
            lowest = float(np.linalg.eigvalsh(0.5 * (C + C.T))[0])
            if lowest < -1e-12 * max(np.abs(C).max(), 1e-300):
                r.report(m.sub("damping"), m.get("damping"),
                         f"must be positive semi-definite (its symmetric part has the eigenvalue {lowest:.6g}): a "
                         f"damping that feeds energy in is not a damping")
        preload = r.optional(m, "preload", lambda n, p: r.numbers(n, p, 6), [0.0] * 6)
        preload = None if preload is None else np.array(preload, dtype=float)
        return dict(points=None if point is None else np.array([point, point]), axis=None,
                    bushing_axes=axes, bushing_stiffness=K, bushing_damping=np.zeros((6, 6)) if C is None else C,
                    preload=preload)

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        n = len(specs)
        points = np.array([s.points for s in specs], dtype=float).reshape(n, 2, 3)
        ZA, ZB = material_arms(points, ia, ib, r0, R0)
        axes = np.array([s.params["bushing_axes"] for s in specs], dtype=float).reshape(n, 3, 3)  # rows: axes
        EA = np.einsum("nji,nkj->nki", R0[ia], axes)  # each axis as a material vector of A
        EB = np.einsum("nji,nkj->nki", R0[ib], axes)
        K = np.array([s.params["bushing_stiffness"] for s in specs], dtype=float).reshape(n, 36)
        C = np.array([s.params["bushing_damping"] for s in specs], dtype=float).reshape(n, 36)
        P = np.array([s.params["preload"] for s in specs], dtype=float).reshape(n, 6)
        return {"ZA": ZA, "ZB": ZB, "A1": EA[:, 0], "A2": EA[:, 1], "A3": EA[:, 2], "B1": EB[:, 0], "B2": EB[:, 1],
                "B3": EB[:, 2], "K": K, "C": C, "P": P, "k_max": np.abs(K).max(axis=1),
                "asym": [float(not np.array_equal(k.reshape(6, 6), k.reshape(6, 6).T)) for k in K]}
