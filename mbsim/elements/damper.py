"""Dashpot between two points (THEORY §7, damper; §8 for ``seed``): on their full relative velocity,
or, ``axial: true``, on its component along the line of the points alone (the rate of change of their
distance, like a shock absorber or the damper of Exudyn's ``SpringDamper`` and Chrono's
``ChLinkTSDA``)."""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels.vec import dot, put, put_block, row
from .base import (DERIVATIVES, X_D, X_DV, Y_P, Y_POTENTIAL, Y_POWER, ElementKind, block_offset, material_arms, offsets,
                   points_distance, read_points)

FIELDS = (("ZA", 3), ("ZB", 3), ("c", 1), ("axial", 1), ("size", 1))
_C, _AXIAL, _SIZE = offsets(FIELDS)[2:]
_DD, _DV = block_offset("dd"), block_offset("dv")  # ∂p_d/∂d, ∂p_d/∂ḋ

# Below this distance (relative to the longer arm, or 1 m: ``size``) an axial damper's line has no direction:
# the step fails instead of producing a huge, arbitrary force.
_DEGENERATE_LENGTH = 1e-12


@njit(cache=True)
def law(lo, hi, p, x, t, want, y, dy):
    """``f = ε_c ḋ`` on A (ḋ the points' relative velocity), no moment; axial: ``f = ε_c (e·ḋ) e``
    with ``e = d/|d|``; ``p_d = −f``.  Returns the first axial instance whose points have met (no
    direction), or −1."""
    failed = -1
    for e in range(lo, hi):
        cd = p[e, _C]
        dv = row(x, e, X_DV)
        axial = p[e, _AXIAL] != 0.0
        if axial:
            c = row(x, e, X_D)
            L = np.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
            if L <= _DEGENERATE_LENGTH * p[e, _SIZE]:
                if failed < 0:
                    failed = e
                L = 1.0
            ev = (c[0] / L, c[1] / L, c[2] / L)
            ed = dot(ev, dv)
            f = (cd * ed * ev[0], cd * ed * ev[1], cd * ed * ev[2])
        else:
            ev = (0.0, 0.0, 0.0)
            L = 1.0
            f = (cd * dv[0], cd * dv[1], cd * dv[2])
        put(y, e, Y_P, (-f[0], -f[1], -f[2]))
        put(y, e, Y_P + 3, (0.0, 0.0, 0.0))
        put(y, e, Y_P + 6, (0.0, 0.0, 0.0))
        y[e, Y_POWER] = f[0] * dv[0] + f[1] * dv[1] + f[2] * dv[2]
        y[e, Y_POTENTIAL] = 0.0
        if want & DERIVATIVES:
            if axial:  # ∂f/∂ḋ = ε_c e eᵀ;  ∂f/∂d = ε_c [(e·ḋ) I + e ḋᵀ] (I − e eᵀ) / L (the turning line)
                put_block(dy, e, _DV, (-cd * ev[0] * ev[0], -cd * ev[0] * ev[1], -cd * ev[0] * ev[2],
                                      -cd * ev[1] * ev[0], -cd * ev[1] * ev[1], -cd * ev[1] * ev[2],
                                      -cd * ev[2] * ev[0], -cd * ev[2] * ev[1], -cd * ev[2] * ev[2]))
                ed = dot(ev, dv)
                for r in range(3):
                    for q in range(3):
                        m = 0.0
                        for s in range(3):
                            a_rs = cd * ((ed if r == s else 0.0) + ev[r] * dv[s])
                            m += a_rs * ((1.0 if s == q else 0.0) - ev[s] * ev[q])
                        dy[e, _DD + 3 * r + q] = -(m / L)
            else:
                put_block(dy, e, _DV, (-cd, 0.0, 0.0, 0.0, -cd, 0.0, 0.0, 0.0, -cd))
                put_block(dy, e, _DD, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    return failed


class Damper(ElementKind):
    """Dashpot between a point of body A and a point of body B."""

    type = "damper"
    aliases = ("dashpot",)
    keys = ("points", "damping", "axial")
    failure = "is axial and its two points have met; its line has no direction"
    fields = FIELDS
    points = ("ZA", "ZB")
    blocks = ("dd", "dv")
    draw = "dashpot"
    outputs = ("force",)
    law = law

    @classmethod
    def seed_of(cls, spec) -> bool:
        return not spec.params.get("axial", False)  # THEORY §8 has no seed matrix of an axial damper

    @staticmethod
    def read(r, m) -> dict:
        fields = read_points(r, m)
        fields["damping"] = r.required_number(m, "damping", ">=0")
        fields["axial"] = r.optional(m, "axial", r.boolean, False)
        points = fields["points"]
        if fields["axial"] and points is not None and not points_distance(points) > 0.0:
            r.report(m.sub("points"), m.get("points"),
                     "an axial damper needs two distinct points: the line between them is its direction")
        return fields

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        points = np.array([s.points for s in specs], dtype=float).reshape(-1, 2, 3)
        ZA, ZB = material_arms(points, ia, ib, r0, R0)
        return {"ZA": ZA, "ZB": ZB, "c": [s.damping for s in specs],
                "axial": [float(bool(s.params.get("axial", False))) for s in specs],
                "size": np.maximum(1.0, np.maximum(np.linalg.norm(ZA, axis=1), np.linalg.norm(ZB, axis=1)))}
