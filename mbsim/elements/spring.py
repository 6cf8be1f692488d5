"""Linear spring between points of two bodies (THEORY §7, spring; §8 for ``seed``)."""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels.vec import put, put_block, row
from .base import (DERIVATIVES, X_D, Y_P, Y_POTENTIAL, Y_POWER, ElementKind, block_offset, material_arms, offsets,
                   points_distance, read_points)

# Below this length (relative to the rest length) a spring with L0 > 0 has no
# direction: the step fails instead of producing a huge, arbitrary force.
_DEGENERATE_LENGTH = 1e-12

FIELDS = (("ZA", 3), ("ZB", 3), ("k", 1), ("L0", 1))
_K, _L0 = offsets(FIELDS)[2:]
_DD = block_offset("dd")  # ∂p_d/∂d


@njit(cache=True)
def law(lo, hi, p, x, t, want, y, dy):
    """``f = k (1 − L0/L) d`` on A (zero rest length: ``f = k d``), ``p_d = −f``, and
    ``∂p_d/∂d = −k P``, ``P = (1 − L0/L) I + (L0/L) n⊗n``; returns the first instance with L0 > 0
    collapsed to L = 0 (no direction), or −1."""
    failed = -1
    for e in range(lo, hi):
        k, L0 = p[e, _K], p[e, _L0]
        c = row(x, e, X_D)
        L = np.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
        deg = L0 > 0.0 and L <= _DEGENERATE_LENGTH * L0
        if deg and failed < 0:
            failed = e
        safe = 1.0 if (deg or L == 0.0) else L
        ratio = L0 / safe if L0 > 0.0 else 0.0
        s = k * (1.0 - ratio)
        put(y, e, Y_P, (-(s * c[0]), -(s * c[1]), -(s * c[2])))
        put(y, e, Y_P + 3, (0.0, 0.0, 0.0))
        put(y, e, Y_P + 6, (0.0, 0.0, 0.0))
        y[e, Y_POTENTIAL] = 0.5 * k * (L - L0) ** 2
        y[e, Y_POWER] = 0.0
        if want & DERIVATIVES:
            n0, n1, n2 = c[0] / safe, c[1] / safe, c[2] / safe
            q = 1.0 - ratio
            put_block(dy, e, _DD, (-k * (ratio * n0 * n0 + q), -k * (ratio * n0 * n1), -k * (ratio * n0 * n2),
                                  -k * (ratio * n1 * n0), -k * (ratio * n1 * n1 + q), -k * (ratio * n1 * n2),
                                  -k * (ratio * n2 * n0), -k * (ratio * n2 * n1), -k * (ratio * n2 * n2 + q)))
    return failed


class Spring(ElementKind):
    """Linear spring between a point of body A and a point of body B."""

    type = "spring"
    keys = ("points", "stiffness", "rest_length")
    fields = FIELDS
    points = ("ZA", "ZB")
    blocks = ("dd",)
    stiffness = "k"
    failure = "collapsed to zero length with a positive rest length; its direction is undefined"
    draw = "coil"
    outputs = ("force",)
    dissipates = False
    law = law

    @classmethod
    def seed_of(cls, spec) -> bool:
        return True  # THEORY §8: the excerpt's eq. rbs-8

    @staticmethod
    def read(r, m) -> dict:
        fields = read_points(r, m)
        fields["stiffness"] = r.required_number(m, "stiffness", ">=0")
        points = fields["points"]
        # halves first (read_points refuses points too far apart for a finite length)
        default = None if points is None else points_distance(points)
        if default is not None and not np.isfinite(default):
            default = None
        fields["rest_length"] = r.optional(m, "rest_length", lambda n, p: r.number(n, p, ">=0"), default)
        return fields

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        points = np.array([s.points for s in specs], dtype=float).reshape(-1, 2, 3)
        ZA, ZB = material_arms(points, ia, ib, r0, R0)
        return {"ZA": ZA, "ZB": ZB, "k": [s.stiffness for s in specs], "L0": [s.rest_length for s in specs]}
