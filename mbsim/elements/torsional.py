"""Torsional damper with joint projection P1/P2/P3/none (THEORY §7; §8 for ``seed``)."""
from __future__ import annotations

import numpy as np

from ..model.rotations import matvec, outer, skew
from ..kernels import connectors as kc
from .base import MODES, NODATA, NOPOS, ConnectorKind, ElementEval, outputs

# P = c0 I + c1 n⊗n for each projection; DP·ω then contributes W = −c1[(n·ω)I + n⊗ω] n̂'
# (THEORY §7 lists W for P2 (+) and P3 (−); P1 and none have W = 0).
_PROJ = {"P1": (1.0, 0.0), "P2": (1.0, -1.0), "P3": (0.0, 1.0), "none": (0.0, 0.0)}


_UNUSED = np.zeros((1, 3, 3))  # stands in for T(θ) and Ω where the kernel reads none (mode 0)


class TorsionalDamper(ConnectorKind):
    """Pure moment ``m = χ_r P (ω_B,α − ω_A,α)`` on A; the axis n rotates with body A."""

    type = "torsional_damper"

    def __init__(self, specs, index, body_index, r0, R0):
        super().__init__(specs, index, body_index, r0, R0)
        self.chi = np.array([s.damping for s in specs], dtype=float)
        cc = np.array([_PROJ[s.projection] for s in specs], dtype=float).reshape(-1, 2)
        # contiguous columns: strided ones would give the compiled kernel a second numba specialization
        self.c0, self.c1 = np.ascontiguousarray(cc[:, 0]), np.ascontiguousarray(cc[:, 1])
        axis = np.array([s.axis if s.axis is not None else np.zeros(3) for s in specs],
                        dtype=float).reshape(-1, 3)
        self.E = np.einsum("nji,nj->ni", R0[self.ia], axis)  # material axis in A's frame

    def evaluate_numpy(self, kin, tangent=None) -> ElementEval:
        ia, ib = self.ia, self.ib
        w = kin.interp(kin.w1[ib], kin.wn[ib]) - kin.interp(kin.w1[ia], kin.wn[ia])
        n1 = matvec(kin.R1[ia], self.E)
        n = n1 if kin.alpha_f == 1.0 else kin.interp(n1, matvec(kin.Rn[ia], self.E))
        I3 = np.eye(3)
        P = self.c0[:, None, None] * I3 + self.c1[:, None, None] * outer(n, n)
        Pw = matvec(P, w)
        m = self.chi[:, None] * Pw
        K = None
        if tangent is not None:
            af, chi = kin.alpha_f, self.chi[:, None, None]
            nw = np.einsum("ni,ni->n", n, w)
            W = -self.c1[:, None, None] * (nw[:, None, None] * I3 + outer(n, w)) @ skew(n1)
            if tangent == "consistent":
                MA = chi * (-P @ kin.Omega[ia] + W)
                MB = chi * (P @ kin.Omega[ib])
            else:
                MA = chi * (-kin.g * P @ kin.T[ia].transpose(0, 2, 1) + W)
                MB = chi * (kin.g * P @ kin.T[ib].transpose(0, 2, 1))
            K = np.zeros((self.n, 4, 3, 4, 3))
            K[:, 1, :, 1] = -af * MA
            K[:, 1, :, 3] = -af * MB
            K[:, 3, :, 1] = af * MA
            K[:, 3, :, 3] = af * MB
            K = K.reshape(self.n, 12, 12)
        zero = np.zeros_like(m)
        return ElementEval(
            residual=np.concatenate((zero, m, zero, -m), axis=1), tangent=K, force=zero, moment=m,
            length=np.full(self.n, np.nan), power=np.einsum("ni,ni->n", m, w),
            potential=np.zeros(self.n), degenerate=np.zeros(self.n, bool))

    def evaluate_compiled(self, kin, tangent=None) -> ElementEval:
        n = self.n
        res, K = outputs(n, tangent)
        m, pw = np.empty((n, 3)), np.empty(n)
        T, Om = (kin.T, kin.Omega) if kin.T is not None else (_UNUSED, _UNUSED)  # single state: unused
        kc.torsional(self.ia, self.ib, self.E, self.chi, self.c0, self.c1, kin.alpha_f, kin.g, kin.R1, kin.Rn,
                     kin.w1, kin.wn, T, Om, MODES[tangent], res, K, m, pw, NOPOS, NODATA, np.empty(kc.SCRATCH))
        return ElementEval(residual=res, tangent=K if tangent is not None else None, force=np.zeros_like(m),
                           moment=m, length=np.full(n, np.nan), power=pw, potential=np.zeros(n),
                           degenerate=np.zeros(n, bool))
