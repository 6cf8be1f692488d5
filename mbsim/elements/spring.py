"""Linear spring between points of two bodies (THEORY §7, spring; §8 for ``seed``)."""
from __future__ import annotations

import numpy as np

from ..model.rotations import outer, skew
from ..kernels import connectors as kc
from .base import (MODES, NODATA, NOPOS, ConnectorKind, ElementEval, PointKinematics, material_arms, outputs,
                   pair_residual, pair_tangent)

# Below this length (relative to the rest length) a spring with L0 > 0 has no
# direction: the step fails instead of producing a huge, arbitrary force.
_DEGENERATE_LENGTH = 1e-12


class Spring(ConnectorKind):
    """``f = k (1 − L0/L) c`` on A with ``c = x_B,α − x_A,α`` (zero-length: ``f = k c``)."""

    type = "spring"

    def __init__(self, specs, index, body_index, r0, R0):
        super().__init__(specs, index, body_index, r0, R0)
        points = np.array([s.points for s in specs], dtype=float).reshape(-1, 2, 3)
        self.ZA, self.ZB = material_arms(points, self.ia, self.ib, r0, R0)
        self.k = np.array([s.stiffness for s in specs], dtype=float)
        self.L0 = np.array([s.rest_length for s in specs], dtype=float)

    def evaluate_numpy(self, kin, tangent=None) -> ElementEval:
        pA = PointKinematics.of(kin, self.ia, self.ZA)
        pB = PointKinematics.of(kin, self.ib, self.ZB)
        c = pB.xa - pA.xa
        L = np.linalg.norm(c, axis=1)
        degenerate = (self.L0 > 0) & (L <= _DEGENERATE_LENGTH * self.L0)
        safe_L = np.where(degenerate | (L == 0), 1.0, L)
        ratio = np.where(self.L0 > 0, self.L0 / safe_L, 0.0)  # L0/L
        f = (self.k * (1.0 - ratio))[:, None] * c
        K = None
        if tangent is not None:
            nvec = c / safe_L[:, None]
            P = (1.0 - ratio)[:, None, None] * np.eye(3) + ratio[:, None, None] * outer(nvec, nvec)
            kP = self.k[:, None, None] * P
            F = np.stack((-kP, kP @ skew(pA.z1), kP, -kP @ skew(pB.z1)), axis=1)
            K = pair_tangent(kin.alpha_f, f, F, None, pA, pB, geometric=(tangent == "consistent"))
        zero = np.zeros_like(f)
        return ElementEval(
            residual=pair_residual(f, zero, pA, pB), tangent=K, force=f, moment=zero, length=L,
            power=np.zeros(self.n), potential=0.5 * self.k * (L - self.L0) ** 2, degenerate=degenerate)

    def evaluate_compiled(self, kin, tangent=None) -> ElementEval:
        n = self.n
        res, K = outputs(n, tangent)
        f, L, pot, deg = np.empty((n, 3)), np.empty(n), np.empty(n), np.empty(n, dtype=np.bool_)
        kc.spring(self.ia, self.ib, self.ZA, self.ZB, self.k, self.L0, kin.alpha_f, kin.R1, kin.Rn, kin.r1, kin.rn,
                  MODES[tangent], res, K, f, L, pot, deg, NOPOS, NODATA, np.empty(kc.SCRATCH))
        return ElementEval(residual=res, tangent=K if tangent is not None else None, force=f,
                           moment=np.zeros_like(f), length=L, power=np.zeros(n), potential=pot, degenerate=deg)
