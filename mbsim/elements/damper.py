"""Dashpot on the full relative velocity of two points (THEORY §7, damper; §8 for ``seed``)."""
from __future__ import annotations

import numpy as np

from ..model.rotations import cross, skew
from ..kernels import connectors as kc
from .base import (MODES, NODATA, NOPOS, ConnectorKind, ElementEval, PointKinematics, material_arms, outputs,
                   pair_residual, pair_tangent)


class Damper(ConnectorKind):
    """``f = ε_c (v_pt,B,α − v_pt,A,α)`` on A; no moment."""

    type = "damper"

    def __init__(self, specs, index, body_index, r0, R0):
        super().__init__(specs, index, body_index, r0, R0)
        points = np.array([s.points for s in specs], dtype=float).reshape(-1, 2, 3)
        self.ZA, self.ZB = material_arms(points, self.ia, self.ib, r0, R0)
        self.c = np.array([s.damping for s in specs], dtype=float)

    def _B(self, kin, ib, z1, tangent):
        """``Dv_pt' = g Δr − B Δθ``: consistent ``g ẑ' T + (ω'×z')^``; seed ``g ẑ' Tᵀ + ω̂' ẑ'``."""
        Z1, T = skew(z1), kin.T[ib]
        if tangent == "consistent":
            return kin.g * Z1 @ T + skew(cross(kin.w1[ib], z1))
        return kin.g * Z1 @ T.transpose(0, 2, 1) + skew(kin.w1[ib]) @ Z1

    def evaluate_numpy(self, kin, tangent=None) -> ElementEval:
        pA = PointKinematics.of(kin, self.ia, self.ZA)
        pB = PointKinematics.of(kin, self.ib, self.ZB)
        dv = pB.velocity(kin, self.ib, self.ZB) - pA.velocity(kin, self.ia, self.ZA)
        f = self.c[:, None] * dv
        K = None
        if tangent is not None:
            cg = (self.c * kin.g)[:, None, None] * np.eye(3)
            cc = self.c[:, None, None]
            F = np.stack((-cg, cc * self._B(kin, self.ia, pA.z1, tangent),
                          cg, -cc * self._B(kin, self.ib, pB.z1, tangent)), axis=1)
            K = pair_tangent(kin.alpha_f, f, F, None, pA, pB, geometric=(tangent == "consistent"))
        zero = np.zeros_like(f)
        return ElementEval(
            residual=pair_residual(f, zero, pA, pB), tangent=K, force=f, moment=zero,
            length=np.linalg.norm(pB.xa - pA.xa, axis=1), power=np.einsum("ni,ni->n", f, dv),
            potential=np.zeros(self.n), degenerate=np.zeros(self.n, bool))

    def evaluate_compiled(self, kin, tangent=None) -> ElementEval:
        n = self.n
        res, K = outputs(n, tangent)
        f, L, pw = np.empty((n, 3)), np.empty(n), np.empty(n)
        T = kin.T if kin.T is not None else _UNUSED  # a single state: no tangent, T unused
        kc.damper(self.ia, self.ib, self.ZA, self.ZB, self.c, kin.alpha_f, kin.g, kin.R1, kin.Rn, kin.r1, kin.rn,
                  kin.v1, kin.vn, kin.w1, kin.wn, T, MODES[tangent], res, K, f, L, pw, NOPOS, NODATA, np.empty(kc.SCRATCH))
        return ElementEval(residual=res, tangent=K if tangent is not None else None, force=f,
                           moment=np.zeros_like(f), length=L, power=pw, potential=np.zeros(n),
                           degenerate=np.zeros(n, bool))


_UNUSED = np.zeros((1, 3, 3))  # stands in for T(θ) where the kernel reads none (mode 0)
