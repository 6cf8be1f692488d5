"""Linear spring between points of two bodies (THEORY §7, spring; §8 for ``seed``)."""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..scenario.yamlnodes import norm
from ..kernels.connectors import CONSISTENT, NONE, add_block, pair_residual, pair_tangent, point, row, skew_right
from .base import FORCE, LENGTH, MOMENT, POTENTIAL, POWER, ElementKind, material_arms, offsets, read_points

# Below this length (relative to the rest length) a spring with L0 > 0 has no
# direction: the step fails instead of producing a huge, arbitrary force.
_DEGENERATE_LENGTH = 1e-12

FIELDS = (("ZA", 3), ("ZB", 3), ("k", 1), ("L0", 1))
_ZA, _ZB, _K, _L0 = offsets(FIELDS)


@njit(cache=True)
def law(lo, hi, body, p, first, lam, scale, target, af, g, mode, r1, rn, dr, R1, Rn, v1, vn, w1, wn, T, Om, res, K, out, pos,
        data, scr, cache):
    """``f = k (1 − L0/L) c`` on A with ``c = x_B,α − x_A,α`` (zero-length: ``f = k c``) for instances
    ``lo … hi−1``; returns the first with L0 > 0 collapsed to L = 0 (no direction), or −1."""
    direct = pos.shape[0] > 0
    failed = -1
    for e in range(lo, hi):
        a, b = body[e, 0], body[e, 1]
        k, L0 = p[e, _K], p[e, _L0]
        zA1, zAn, zAa, xA = point(af, R1, Rn, r1, rn, a, row(p, e, _ZA))
        zB1, zBn, zBa, xB = point(af, R1, Rn, r1, rn, b, row(p, e, _ZB))
        c = (xB[0] - xA[0], xB[1] - xA[1], xB[2] - xA[2])
        L = np.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
        deg = L0 > 0.0 and L <= _DEGENERATE_LENGTH * L0
        if deg and failed < 0:
            failed = e
        safe = 1.0 if (deg or L == 0.0) else L
        ratio = L0 / safe if L0 > 0.0 else 0.0
        s = k * (1.0 - ratio)
        f = (s * c[0], s * c[1], s * c[2])
        for i in range(3):
            out[e, FORCE + i] = f[i]
            out[e, MOMENT + i] = 0.0
        out[e, LENGTH] = L
        out[e, POTENTIAL] = 0.5 * k * (L - L0) ** 2
        out[e, POWER] = 0.0
        pair_residual(f, zAa, zBa, res, e)
        if mode > NONE:
            nv = (c[0] / safe, c[1] / safe, c[2] / safe)
            for r in range(3):  # S[4] = k P, P = (1 − L0/L) I + (L0/L) n⊗n
                for q in range(3):
                    scr[4, r, q] = k * (ratio * nv[r] * nv[q] + ((1.0 - ratio) if r == q else 0.0))
            for r in range(3):
                for q in range(3):
                    scr[0, r, q] = -scr[4, r, q]
                    scr[2, r, q] = scr[4, r, q]
            skew_right(scr, 4, zA1, scr, 1)
            skew_right(scr, 4, zB1, scr, 3)
            for r in range(3):
                for q in range(3):
                    scr[3, r, q] = -scr[3, r, q]
            ke = 0 if direct else e
            pair_tangent(af, scr, zAa, zBa, zA1, zB1, f, mode == CONSISTENT, K, ke, 4)
            if direct:
                add_block(K, ke, pos, e, data)
    return failed


class Spring(ElementKind):
    """Linear spring between a point of body A and a point of body B."""

    type = "spring"
    keys = ("points", "stiffness", "rest_length")
    fields = FIELDS
    arms = ("ZA", "ZB")
    stiffness = "k"
    failure = "collapsed to zero length with a positive rest length; its direction is undefined"
    law = law

    @staticmethod
    def read(r, m) -> dict:
        fields = read_points(r, m)
        fields["stiffness"] = r.required_number(m, "stiffness", ">=0")
        points = fields["points"]
        # halves first (read_points refuses points too far apart for a finite length)
        default = None if points is None else 2.0 * norm(0.5 * points[1] - 0.5 * points[0])
        if default is not None and not np.isfinite(default):
            default = None
        fields["rest_length"] = r.optional(m, "rest_length", lambda n, p: r.number(n, p, ">=0"), default)
        return fields

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        points = np.array([s.points for s in specs], dtype=float).reshape(-1, 2, 3)
        ZA, ZB = material_arms(points, ia, ib, r0, R0)
        return {"ZA": ZA, "ZB": ZB, "k": [s.stiffness for s in specs], "L0": [s.rest_length for s in specs]}
