"""Dashpot on the full relative velocity of two points (THEORY §7, damper; §8 for ``seed``)."""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels.connectors import (CONSISTENT, NONE, add_block, cross, dot, pair_residual, pair_tangent, point, row,
                                  skew_left)
from .base import FORCE, LENGTH, MOMENT, POTENTIAL, POWER, ElementKind, material_arms, offsets, read_points

FIELDS = (("ZA", 3), ("ZB", 3), ("c", 1))
_ZA, _ZB, _C = offsets(FIELDS)


@njit(cache=True)
def _B(g, z1, T, a, w1, consistent, S, o, tmp):
    """S[o] = Dv_pt' = g Δr − B Δθ: consistent g ẑ'T + (ω'×z')^, seed g ẑ'Tᵀ + ω̂'ẑ' (THEORY §7, §8);
    ``w1`` is the tuple ω' of body ``a``, T[a] its T(θ); S[tmp] is work space."""
    if consistent:
        for r in range(3):
            for q in range(3):
                S[tmp, r, q] = T[a, r, q]
        skew_left(z1, S, tmp, S, o)
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
        skew_left(z1, S, tmp, S, o)
        wz = dot(w1, z1)
        for r in range(3):
            for q in range(3):  # ω̂'ẑ' = z' ω'ᵀ − (ω'·z') I
                S[o, r, q] = g * S[o, r, q] + z1[r] * w1[q] - (wz if r == q else 0.0)


@njit(cache=True)
def law(lo, hi, body, p, first, lam, scale, target, af, g, mode, r1, rn, R1, Rn, v1, vn, w1, wn, T, Om, res, K, out, pos,
        data, scr):
    """``f = ε_c (v_pt,B,α − v_pt,A,α)`` on A, no moment, for instances ``lo … hi−1``; returns −1
    (defined at every state)."""
    direct = pos.shape[0] > 0
    bf = 1.0 - af
    for e in range(lo, hi):
        a, b = body[e, 0], body[e, 1]
        cd = p[e, _C]
        zA1, zAn, zAa, xA = point(af, R1, Rn, r1, rn, a, row(p, e, _ZA))
        zB1, zBn, zBa, xB = point(af, R1, Rn, r1, rn, b, row(p, e, _ZB))
        wA1 = row(w1, a, 0)
        wB1 = row(w1, b, 0)
        # point velocities at n+1 and n, interpolated
        t1 = cross(wB1, zB1)
        t2 = cross(row(wn, b, 0), zBn)
        u1 = cross(wA1, zA1)
        u2 = cross(row(wn, a, 0), zAn)
        dv = ((af * (v1[b, 0] + t1[0]) + bf * (vn[b, 0] + t2[0])) - (af * (v1[a, 0] + u1[0]) + bf * (vn[a, 0] + u2[0])),
              (af * (v1[b, 1] + t1[1]) + bf * (vn[b, 1] + t2[1])) - (af * (v1[a, 1] + u1[1]) + bf * (vn[a, 1] + u2[1])),
              (af * (v1[b, 2] + t1[2]) + bf * (vn[b, 2] + t2[2])) - (af * (v1[a, 2] + u1[2]) + bf * (vn[a, 2] + u2[2])))
        f = (cd * dv[0], cd * dv[1], cd * dv[2])
        for i in range(3):
            out[e, FORCE + i] = f[i]
            out[e, MOMENT + i] = 0.0
        out[e, POWER] = f[0] * dv[0] + f[1] * dv[1] + f[2] * dv[2]
        out[e, LENGTH] = np.sqrt((xB[0] - xA[0]) ** 2 + (xB[1] - xA[1]) ** 2 + (xB[2] - xA[2]) ** 2)
        out[e, POTENTIAL] = 0.0
        pair_residual(f, zAa, zBa, res, e)
        if mode > NONE:
            cg = cd * g
            for r in range(3):
                for q in range(3):
                    scr[0, r, q] = -cg if r == q else 0.0
                    scr[2, r, q] = cg if r == q else 0.0
            _B(g, zA1, T, a, wA1, mode == CONSISTENT, scr, 1, 4)
            _B(g, zB1, T, b, wB1, mode == CONSISTENT, scr, 3, 4)
            for r in range(3):
                for q in range(3):
                    scr[1, r, q] *= cd
                    scr[3, r, q] *= -cd
            ke = 0 if direct else e
            pair_tangent(af, scr, zAa, zBa, zA1, zB1, f, mode == CONSISTENT, K, ke, 4)
            if direct:
                add_block(K, ke, pos, e, data)
    return -1


class Damper(ElementKind):
    """Dashpot between a point of body A and a point of body B."""

    type = "damper"
    aliases = ("dashpot",)
    keys = ("points", "damping")
    fields = FIELDS
    arms = ("ZA", "ZB")
    law = law

    @staticmethod
    def read(r, m) -> dict:
        fields = read_points(r, m)
        fields["damping"] = r.required_number(m, "damping", ">=0")
        return fields

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        points = np.array([s.points for s in specs], dtype=float).reshape(-1, 2, 3)
        ZA, ZB = material_arms(points, ia, ib, r0, R0)
        return {"ZA": ZA, "ZB": ZB, "c": [s.damping for s in specs]}
