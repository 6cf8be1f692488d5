"""A rigid rod between points of two bodies: an element with an unknown of its own, for tests.

Not a registered kind of mbsim (its built-in twin is the ``distance`` joint, mbsim/elements/joints.py):
tests register it (:func:`mbsim.elements.register`) in a process of their own to show that a kind
written outside mbsim gets what element-owned unknowns need -- numbering, the (12 + m)-wide local blocks, the scaled multiplier, the stopping test's rows
in metres, the block LU's body-with-multiplier blocks, the state across frames and resume.

It is THEORY §11's ``distance`` primitive, ``Φ = |x_B − x_A| − L``, with one multiplier λ (N, the
tension) at t_n + α_f Δt: body rows ``−G_αᵀλ`` with ``G_α = α_f G(q') + (1−α_f) G(q_n)``, its row
``−k Φ(q')`` for the scaled unknown λ̃ = λ/k, and the tangent ``K_uu = α_f ∂(G(q')ᵀλ)/∂q'``,
``K_uλ̃ = k G_αᵀ``, ``K_λ̃u = k G(q')``, ``K_λ̃λ̃ = 0``.  Like every element with unknowns of its own it
also gives the constrained systems at one state (modes ACCELERATION and VELOCITY): ``k G`` in both
off-diagonal blocks, right side ``k (F̈ − γ)`` or ``k Ḟ`` -- the initial accelerations, multipliers and
reactions come from them.
"""
from __future__ import annotations

import numpy as np

from mbsim.elements.base import FORCE, LENGTH, MOMENT, POTENTIAL, POWER, ElementKind, material_arms, offsets, read_points
from mbsim.kernels import njit
from mbsim.kernels.connectors import NONE, add_block, cross, mv, row

ACCELERATION, VELOCITY = -1, -2  # mbsim.elements.engine.MODES: the constrained systems at one state

FIELDS = (("ZA", 3), ("ZB", 3), ("L", 1))
_ZA, _ZB, _L = offsets(FIELDS)


@njit(cache=False)
def law(lo, hi, body, p, first, lam, scale, target, af, g, mode, r1, rn, dr, R1, Rn, v1, vn, w1, wn, T, Om, res, K, out, pos,
        data, scr, cache):
    direct = pos.shape[0] > 0
    for e in range(lo, hi):
        a, b = body[e, 0], body[e, 1]
        zA1, zAn = mv(R1, a, row(p, e, _ZA)), mv(Rn, a, row(p, e, _ZA))
        zB1, zBn = mv(R1, b, row(p, e, _ZB)), mv(Rn, b, row(p, e, _ZB))
        d1 = (r1[b, 0] + zB1[0] - r1[a, 0] - zA1[0], r1[b, 1] + zB1[1] - r1[a, 1] - zA1[1],
              r1[b, 2] + zB1[2] - r1[a, 2] - zA1[2])
        dn = (rn[b, 0] + zBn[0] - rn[a, 0] - zAn[0], rn[b, 1] + zBn[1] - rn[a, 1] - zAn[1],
              rn[b, 2] + zBn[2] - rn[a, 2] - zAn[2])
        L1 = np.sqrt(d1[0] ** 2 + d1[1] ** 2 + d1[2] ** 2)
        Ln = np.sqrt(dn[0] ** 2 + dn[1] ** 2 + dn[2] ** 2)
        e1 = (d1[0] / L1, d1[1] / L1, d1[2] / L1)
        en = (dn[0] / Ln, dn[1] / Ln, dn[2] / Ln)
        j = first[e]
        lm, k = lam[j], scale[j]
        if mode == ACCELERATION or mode == VELOCITY:  # the constrained systems at one state: k G, k (F̈ − γ) or k Ḟ
            ke = 0 if direct else e
            for r in range(K.shape[1]):
                for q in range(K.shape[1]):
                    K[ke, r, q] = 0.0
            for i in range(12):
                res[e, i] = 0.0
            mA, mB = cross(zA1, e1), cross(zB1, e1)
            Gr = (-e1[0], -e1[1], -e1[2], -mA[0], -mA[1], -mA[2], e1[0], e1[1], e1[2], mB[0], mB[1], mB[2])
            for q in range(12):
                K[ke, 12, q] = k * Gr[q]
                K[ke, q, 12] = k * Gr[q]
            rhs = target[j]
            if mode == ACCELERATION:  # γ = e·(ω_B×(ω_B×z_B) − ω_A×(ω_A×z_A)) + (|ḋ|² − (e·ḋ)²)/L
                wzA, wzB = cross((w1[a, 0], w1[a, 1], w1[a, 2]), zA1), cross((w1[b, 0], w1[b, 1], w1[b, 2]), zB1)
                ccA, ccB = cross((w1[a, 0], w1[a, 1], w1[a, 2]), wzA), cross((w1[b, 0], w1[b, 1], w1[b, 2]), wzB)
                dv = np.empty(3)
                gam = 0.0
                for i in range(3):
                    dv[i] = v1[b, i] + wzB[i] - v1[a, i] - wzA[i]
                    gam += e1[i] * (ccB[i] - ccA[i])
                ed = e1[0] * dv[0] + e1[1] * dv[1] + e1[2] * dv[2]
                gam += (dv[0] ** 2 + dv[1] ** 2 + dv[2] ** 2 - ed * ed) / L1
                rhs -= gam
            res[e, 12] = k * rhs
            if direct:
                add_block(K, ke, pos, e, data)
            continue
        c = 1.0 - af
        fa = (af * e1[0] + c * en[0], af * e1[1] + c * en[1], af * e1[2] + c * en[2])  # −G_αᵀ per unit λ
        mA1, mAn = cross(zA1, e1), cross(zAn, en)
        mB1, mBn = cross(zB1, e1), cross(zBn, en)
        col = np.empty(12)
        for i in range(3):
            col[i] = fa[i]
            col[3 + i] = af * mA1[i] + c * mAn[i]
            col[6 + i] = -fa[i]
            col[9 + i] = -(af * mB1[i] + c * mBn[i])
        for i in range(12):
            res[e, i] = lm * col[i]
        res[e, 12] = -k * (L1 - p[e, _L])
        for i in range(3):
            out[e, FORCE + i] = lm * fa[i]
            out[e, MOMENT + i] = 0.0
        out[e, LENGTH] = L1
        out[e, POTENTIAL] = 0.0
        out[e, POWER] = 0.0
        if mode <= NONE:
            continue
        ke = 0 if direct else e
        w = K.shape[1]
        for r in range(w):
            for q in range(w):
                K[ke, r, q] = 0.0
        # D = ∂d/∂u = [−I, ẑ_A, I, −ẑ_B]; ∂e/∂u = P D / L, P = I − e eᵀ
        D = np.zeros((3, 12))
        zh_A = np.array([[0.0, -zA1[2], zA1[1]], [zA1[2], 0.0, -zA1[0]], [-zA1[1], zA1[0], 0.0]])
        zh_B = np.array([[0.0, -zB1[2], zB1[1]], [zB1[2], 0.0, -zB1[0]], [-zB1[1], zB1[0], 0.0]])
        eh = np.array([[0.0, -e1[2], e1[1]], [e1[2], 0.0, -e1[0]], [-e1[1], e1[0], 0.0]])
        for i in range(3):
            D[i, i] = -1.0
            D[i, 6 + i] = 1.0
            for q in range(3):
                D[i, 3 + q] = zh_A[i, q]
                D[i, 9 + q] = -zh_B[i, q]
        ev = np.array(e1)
        dE = (np.eye(3) - np.outer(ev, ev)) @ D / L1
        # K_uu = α_f λ ∂[−e; e×z_A; e; −e×z_B]/∂u   (∂(e×z) = −ẑ ∂e + ê ∂z, ∂z = −ẑ Δθ)
        blk = np.zeros((12, 12))
        blk[0:3] = -dE
        blk[3:6] = -zh_A @ dE
        blk[3:6, 3:6] -= eh @ zh_A
        blk[6:9] = dE
        blk[9:12] = zh_B @ dE
        blk[9:12, 9:12] += eh @ zh_B
        for r in range(12):
            for q in range(12):
                K[ke, r, q] = af * lm * blk[r, q]
            K[ke, r, 12] = -k * col[r]  # −∂(λ col)/∂λ̃ … with R_u = −G_αᵀλ = λ·col: K = −∂R/∂u
        Gr = (-e1[0], -e1[1], -e1[2], -mA1[0], -mA1[1], -mA1[2], e1[0], e1[1], e1[2], mB1[0], mB1[1], mB1[2])
        for q in range(12):
            K[ke, 12, q] = k * Gr[q]  # k ∂Φ/∂u = k G(q')
        if direct:
            add_block(K, ke, pos, e, data)
    return -1


class Rod(ElementKind):
    """Rigid rod: the distance between a point of A and a point of B stays L (default: at t = 0)."""

    type = "rod"
    keys = ("points", "length")
    fields = FIELDS
    arms = ("ZA", "ZB")
    unknowns = ("translation",)
    law = law

    @staticmethod
    def read(r, m) -> dict:
        fields = read_points(r, m)
        fields["length"] = r.optional(m, "length", lambda n, p: r.number(n, p, ">0"), None)
        return fields

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        points = np.array([s.points for s in specs], dtype=float).reshape(-1, 2, 3)
        ZA, ZB = material_arms(points, ia, ib, r0, R0)
        L = [s.params.get("length") or float(np.linalg.norm(pt[1] - pt[0]))
             for s, pt in zip(specs, points)]
        return {"ZA": ZA, "ZB": ZB, "L": L}
