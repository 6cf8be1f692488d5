"""A rigid rod between points of two bodies: an element with an unknown of its own, for tests.

Not a registered kind of mbsim (its built-in twin is the ``distance`` joint, mbsim/elements/joints.py):
tests register it (:func:`mbsim.elements.register`) in a process of their own to show that a kind
written outside mbsim, in the documented files only, gets what element-owned unknowns need --
numbering, the (12 + m)-wide local blocks, the scaled multiplier, the stopping test's rows in metres,
the block LU's body-with-multiplier blocks, the state across frames and resume.

It is THEORY §11's ``distance`` primitive, ``Φ = |d| − L`` with d = x_B − x_A, with one multiplier λ (N,
the tension).  Its law is the element at a state (mbsim.elements.base): in the frame coordinates (d,
θ_A, θ_B) its row's Jacobian is ``G_f = [e, 0, 0]`` (e = d/|d|), its generalized force ``p = −G_fᵀλ``,
``∂p/∂d = −λ (I − e eᵀ)/|d|``, and the quadratic part of Φ̈ in the rates is ``(|ḋ|² − (e·ḋ)²)/|d|``; the
engine does the rest (the arms, the chain rule, the generalized-α combination, the scatter).
"""
from __future__ import annotations

import numpy as np

from mbsim.elements.base import (DERIVATIVES, DG, GAMMA, JACOBIAN, X_D, X_DV, X_LAM, X_TARGET, Y_GAMMA, Y_P, Y_PHI, Y_POTENTIAL,
                                 Y_POWER, ElementKind, block_offset, material_arms, offsets, read_points)
from mbsim.kernels import njit

FIELDS = (("ZA", 3), ("ZB", 3), ("L", 1))
_ZA, _ZB, _L = offsets(FIELDS)
_DD = block_offset("dd")


@njit(cache=False)
def law(lo, hi, p, x, t, want, y, dy):
    for e in range(lo, hi):
        d0, d1, d2 = x[e, X_D], x[e, X_D + 1], x[e, X_D + 2]
        Ld = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        ev = (d0 / Ld, d1 / Ld, d2 / Ld)
        lm = x[e, X_LAM]
        y[e, Y_PHI] = Ld - p[e, _L] - x[e, X_TARGET]
        for i in range(3):
            y[e, Y_P + i] = -lm * ev[i]
            y[e, Y_P + 3 + i] = 0.0
            y[e, Y_P + 6 + i] = 0.0
        y[e, Y_POTENTIAL] = 0.0
        y[e, Y_POWER] = 0.0
        if want & JACOBIAN:
            for i in range(9):
                dy[e, DG + i] = 0.0
            for i in range(3):
                dy[e, DG + i] = ev[i]
        if want & DERIVATIVES:
            for r in range(3):
                for c in range(3):
                    dy[e, _DD + 3 * r + c] = -lm * ((1.0 if r == c else 0.0) - ev[r] * ev[c]) / Ld
        if want & GAMMA:
            v0, v1, v2 = x[e, X_DV], x[e, X_DV + 1], x[e, X_DV + 2]
            ed = ev[0] * v0 + ev[1] * v1 + ev[2] * v2
            y[e, Y_GAMMA] = (v0 * v0 + v1 * v1 + v2 * v2 - ed * ed) / Ld
    return -1


class Rod(ElementKind):
    """Rigid rod: the distance between a point of A and a point of B stays L (default: at t = 0)."""

    type = "rod"
    keys = ("points", "length")
    fields = FIELDS
    points = ("ZA", "ZB")
    blocks = ("dd",)
    interpolate = "forces"
    unknowns = ("translation",)
    dissipates = False
    draw = "line"
    outputs = ("force",)
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
