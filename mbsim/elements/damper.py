"""Dashpot between two points (THEORY §7, damper; §8 for ``seed``): on their full relative velocity,
or, ``axial: true``, on its component along the line of the points alone (the rate of change of their
distance, like a shock absorber or the damper of Exudyn's ``SpringDamper`` and Chrono's
``ChLinkTSDA``)."""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels.connectors import (CONSISTENT, NONE, add_block, cross, dot, pair_residual, pair_tangent, point, row,
                                  skew_left, skew_right)
from ..scenario.yamlnodes import norm
from .base import FORCE, LENGTH, MOMENT, POTENTIAL, POWER, ElementKind, material_arms, offsets, read_points

FIELDS = (("ZA", 3), ("ZB", 3), ("c", 1), ("axial", 1))
_ZA, _ZB, _C, _AXIAL = offsets(FIELDS)

# Below this distance (relative to the larger arm, or 1 m) an axial damper's line has no direction:
# the step fails instead of producing a huge, arbitrary force.
_DEGENERATE_LENGTH = 1e-12


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
def law(lo, hi, body, p, first, lam, scale, target, af, g, mode, r1, rn, dr, R1, Rn, v1, vn, w1, wn, T, Om, res, K, out, pos,
        data, scr, cache):
    """``f = ε_c (v_pt,B,α − v_pt,A,α)`` on A, no moment, for instances ``lo … hi−1``; axial:
    ``f = ε_c (e·Δv) e`` with ``e = c/|c|``, ``c = x_B,α − x_A,α`` (the spring's line) and ``Δv`` that
    relative velocity.  Returns the first axial instance whose points have met (no direction), or −1."""
    direct = pos.shape[0] > 0
    bf = 1.0 - af
    failed = -1
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
        axial = p[e, _AXIAL] != 0.0
        ev = (0.0, 0.0, 0.0)
        L = 1.0
        if axial:
            c = (xB[0] - xA[0], xB[1] - xA[1], xB[2] - xA[2])
            L = np.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
            size = max(1.0, np.sqrt(dot(zAa, zAa)), np.sqrt(dot(zBa, zBa)))
            if L <= _DEGENERATE_LENGTH * size:
                if failed < 0:
                    failed = e
                L = 1.0
            ev = (c[0] / L, c[1] / L, c[2] / L)
            ed = dot(ev, dv)
            f = (cd * ed * ev[0], cd * ed * ev[1], cd * ed * ev[2])
        else:
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
            exact = mode == CONSISTENT or axial  # THEORY §8 has no seed matrix of an axial damper
            _B(g, zA1, T, a, wA1, exact, scr, 1, 4)
            _B(g, zB1, T, b, wB1, exact, scr, 3, 4)
            for r in range(3):
                for q in range(3):
                    scr[1, r, q] *= cd
                    scr[3, r, q] *= -cd
            if axial:
                _axial(scr, cd, ev, dv, L, zA1, zB1)
            ke = 0 if direct else e
            pair_tangent(af, scr, zAa, zBa, zA1, zB1, f, exact, K, ke, 4)
            if direct:
                add_block(K, ke, pos, e, data)
    return failed


@njit(cache=True)
def _axial(S, cd, ev, dv, L, zA1, zB1):
    """S[0:4] of an axial damper from those of the full one (``ε_c`` times the derivatives of Δv):
    ``Df = ε_c [(e·Δv) I + e Δvᵀ] De + e eᵀ (ε_c DΔv)``, ``De = (I − e eᵀ) Dc / L`` and
    ``Dc = [−I, ẑ_A', I, −ẑ_B']`` (the spring's line, THEORY §7).  S[4], S[5]: work space."""
    ed = dot(ev, dv)
    for r in range(3):  # S[4] = ε_c [(e·Δv) I + e Δvᵀ] (I − e eᵀ) / L,  S[5] = e eᵀ
        for q in range(3):
            m = 0.0
            for t in range(3):
                a_rt = cd * ((ed if r == t else 0.0) + ev[r] * dv[t])
                m += a_rt * ((1.0 if t == q else 0.0) - ev[t] * ev[q])
            S[4, r, q] = m / L
            S[5, r, q] = ev[r] * ev[q]
    for j in range(4):  # the projection of the full damper's terms on the line
        for q in range(3):
            c0, c1, c2 = S[j, 0, q], S[j, 1, q], S[j, 2, q]
            for r in range(3):
                S[j, r, q] = S[5, r, 0] * c0 + S[5, r, 1] * c1 + S[5, r, 2] * c2
    for r in range(3):  # plus the turning of the line
        for q in range(3):
            S[0, r, q] -= S[4, r, q]
            S[2, r, q] += S[4, r, q]
    skew_right(S, 4, zA1, S, 5)  # S[5] = S[4] ẑ_A'
    for r in range(3):
        for q in range(3):
            S[1, r, q] += S[5, r, q]
    skew_right(S, 4, zB1, S, 5)
    for r in range(3):
        for q in range(3):
            S[3, r, q] -= S[5, r, q]


class Damper(ElementKind):
    """Dashpot between a point of body A and a point of body B."""

    type = "damper"
    aliases = ("dashpot",)
    keys = ("points", "damping", "axial")
    failure = "is axial and its two points have met; its line has no direction"
    fields = FIELDS
    arms = ("ZA", "ZB")
    law = law

    @staticmethod
    def read(r, m) -> dict:
        fields = read_points(r, m)
        fields["damping"] = r.required_number(m, "damping", ">=0")
        fields["axial"] = r.optional(m, "axial", r.boolean, False)
        points = fields["points"]
        if fields["axial"] and points is not None and not norm(0.5 * points[1] - 0.5 * points[0]) > 0.0:
            r.report(m.sub("points"), m.get("points"),
                     "an axial damper needs two distinct points: the line between them is its direction")
        return fields

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        points = np.array([s.points for s in specs], dtype=float).reshape(-1, 2, 3)
        ZA, ZB = material_arms(points, ia, ib, r0, R0)
        return {"ZA": ZA, "ZB": ZB, "c": [s.damping for s in specs],
                "axial": [float(bool(s.params.get("axial", False))) for s in specs]}
