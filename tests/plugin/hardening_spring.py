"""A hardening spring between points of two bodies: a force element written outside mbsim.

Not a registered kind of mbsim: tests register it (:func:`mbsim.elements.register`) in a process of their
own (tests/plugin/check.py) to show that a kind written in the documented files only -- this file, its
registration, its tests, an example (tests/plugin/hardening.yaml) -- runs compiled in the step loop, is
verified against the reference solver (``mbsim verify``), has its derivatives checked through the
mechanism at a state, and is drawn, plotted, exported and listed by the tools (through its traits).

The tension is ``T(s) = k s + k₃ s³`` of the stretch ``s = L − L0`` (a Duffing spring), along the line
between the points: with ``d = x_B − x_A``, ``L = |d|``, ``n = d/L``, the force on A is ``f = T n`` and
``p_d = −f`` (mbsim.elements.base: the generalized force conjugate to d), so

    ∂p_d/∂d = −(T'(s) n nᵀ + (T/L)(I − n nᵀ)),    T'(s) = k + 3 k₃ s²,

and its stored energy is ``½ k s² + ¼ k₃ s⁴``.
"""
from __future__ import annotations

import numpy as np

from mbsim.elements.base import (DERIVATIVES, X_D, Y_P, Y_POTENTIAL, Y_POWER, ElementKind, block_offset,
                                 material_arms, offsets, points_distance, read_points)
from mbsim.kernels import njit

FIELDS = (("ZA", 3), ("ZB", 3), ("k", 1), ("k3", 1), ("L0", 1))
_K, _K3, _L0 = offsets(FIELDS)[2:]
_DD = block_offset("dd")


@njit(cache=True)
def law(lo, hi, p, x, t, want, y, dy):
    """The tension ``T = k s + k₃ s³`` along the line of the points; −1, or the first instance whose points
    coincide (no direction)."""
    failed = -1
    for e in range(lo, hi):
        k, k3, L0 = p[e, _K], p[e, _K3], p[e, _L0]
        d0, d1, d2 = x[e, X_D], x[e, X_D + 1], x[e, X_D + 2]
        L = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if L == 0.0:
            if failed < 0:
                failed = e
            L = 1.0
        n = (d0 / L, d1 / L, d2 / L)
        s = L - L0
        T = k * s + k3 * s * s * s
        for i in range(3):
            y[e, Y_P + i] = -T * n[i]
            y[e, Y_P + 3 + i] = 0.0
            y[e, Y_P + 6 + i] = 0.0
        y[e, Y_POTENTIAL] = 0.5 * k * s * s + 0.25 * k3 * s * s * s * s
        y[e, Y_POWER] = 0.0
        if want & DERIVATIVES:
            dT = k + 3.0 * k3 * s * s
            for r in range(3):
                for c in range(3):
                    dy[e, _DD + 3 * r + c] = -(dT * n[r] * n[c] + (T / L) * ((1.0 if r == c else 0.0) - n[r] * n[c]))
    return failed


class HardeningSpring(ElementKind):
    """Hardening spring between a point of body A and a point of body B (``cubic``: k₃ ≥ 0, N/m³)."""

    type = "hardening_spring"
    keys = ("points", "stiffness", "cubic", "rest_length")
    fields = FIELDS
    points = ("ZA", "ZB")
    blocks = ("dd",)
    stiffness = "k"
    failure = "has its two points at one place; its direction is undefined"
    draw = "line"
    outputs = ("force",)
    dissipates = False
    law = law

    @staticmethod
    def read(r, m) -> dict:
        fields = read_points(r, m)
        fields["stiffness"] = r.required_number(m, "stiffness", ">=0")
        fields["cubic"] = r.required_number(m, "cubic", ">=0")
        points = fields["points"]
        default = None if points is None else points_distance(points)
        fields["rest_length"] = r.optional(m, "rest_length", lambda n, p: r.number(n, p, ">=0"), default)
        return fields

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        points = np.array([s.points for s in specs], dtype=float).reshape(-1, 2, 3)
        ZA, ZB = material_arms(points, ia, ib, r0, R0)
        return {"ZA": ZA, "ZB": ZB, "k": [s.stiffness for s in specs], "k3": [s.params["cubic"] for s in specs],
                "L0": [s.rest_length for s in specs]}
