"""What every connector kind shares: the evaluation record, point kinematics,
and the generic 12×12 assembly of THEORY §6.

A connector kind holds the parameters of *all* its instances in arrays and
evaluates them in one call.  Local unknown order per instance is
``[Δr_A, Δθ_A, Δr_B, Δθ_B]`` (12 entries).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

import numpy as np

from ..model.kinematics import Kinematics
from ..model.rotations import cross, matvec, skew


@dataclass(frozen=True, eq=False)
class ElementEval:
    """Result of evaluating all instances of one connector kind.

    Attributes
    ----------
    residual : (n, 12)
        Local residual contributions (THEORY §6), at n+α.
    tangent : (n, 12, 12) or None
        Local tangent ``K = −∂R/∂u``; None when not requested.
    force, moment : (n, 3)
        Force and pure moment on body A at n+α [N, N·m].
    length : (n,)
        Distance between the insertion points [m] (NaN where none).
    power : (n,)
        Dissipated power [W] (≥ 0 at a single state).
    potential : (n,)
        Stored elastic energy [J].
    degenerate : (n,) bool
        Instances whose force is undefined (a spring with L0 > 0 at L = 0).
    """

    residual: np.ndarray
    tangent: Optional[np.ndarray]
    force: np.ndarray
    moment: np.ndarray
    length: np.ndarray
    power: np.ndarray
    potential: np.ndarray
    degenerate: np.ndarray


class ConnectorKind:
    """Base of the batched connector kinds.

    Parameters
    ----------
    specs : sequence of ConnectorSpec
        The instances of this kind, in scenario order.
    index : sequence of int
        Their positions in the scenario's connector list.
    body_index : mapping str -> int
        Internal body index of every body name (``world`` included).
    r0 : (n_all, 3), R0 : (n_all, 3, 3)
        Initial centre positions and rotation matrices of all bodies.
    """

    type: ClassVar[str] = ""
    compiled: bool = False  # set by the Model: evaluate with the numba kernel of the kind

    def __init__(self, specs, index, body_index, r0, R0):
        self.names = [s.name for s in specs]
        self.index = np.asarray(index, dtype=np.intp)
        self.ia = np.array([body_index[s.body_a] for s in specs], dtype=np.intp)
        self.ib = np.array([body_index[s.body_b] for s in specs], dtype=np.intp)
        self.n = len(specs)

    def __len__(self):
        return self.n

    def evaluate(self, kin: Kinematics, tangent: Optional[str] = None) -> ElementEval:
        """Evaluate every instance; ``tangent`` is None, ``'consistent'`` or ``'seed'``."""
        if self.compiled:
            return self.evaluate_compiled(kin, tangent)
        return self.evaluate_numpy(kin, tangent)

    def evaluate_numpy(self, kin: Kinematics, tangent: Optional[str] = None) -> ElementEval:
        """The batched numpy kernel: the readable reference implementation."""
        raise NotImplementedError

    def evaluate_compiled(self, kin: Kinematics, tangent: Optional[str] = None) -> ElementEval:
        """The same quantities from the compiled kernel (:mod:`mbsim.kernels.connectors`)."""
        raise NotImplementedError


def material_arms(points: np.ndarray, ia, ib, r0, R0) -> tuple[np.ndarray, np.ndarray]:
    """Material arms ``Z = Λ_0ᵀ (X − r_0)`` of the insertion points (THEORY §6)."""
    ZA = np.einsum("nji,nj->ni", R0[ia], points[:, 0] - r0[ia])
    ZB = np.einsum("nji,nj->ni", R0[ib], points[:, 1] - r0[ib])
    return ZA, ZB


@dataclass(frozen=True, eq=False)
class PointKinematics:
    """Arms and points of one side of a batch of connectors (THEORY §6)."""

    z1: np.ndarray  # z' = Λ' Z
    za: np.ndarray  # z_α
    xa: np.ndarray  # x_α = r_α + z_α

    @classmethod
    def of(cls, kin: Kinematics, ib: np.ndarray, Z: np.ndarray) -> "PointKinematics":
        z1 = matvec(kin.R1[ib], Z)
        zn = z1 if kin.alpha_f == 1.0 else matvec(kin.Rn[ib], Z)
        za = kin.interp(z1, zn)
        xa = kin.interp(kin.r1[ib], kin.rn[ib]) + za
        return cls(z1=z1, za=za, xa=xa)

    def velocity(self, kin: Kinematics, ib: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """Point velocity at n+α: ``α_f (v'+ω'×z') + (1−α_f)(v_n+ω_n×z_n)``."""
        v1 = kin.v1[ib] + cross(kin.w1[ib], self.z1)
        if kin.alpha_f == 1.0:
            return v1
        zn = matvec(kin.Rn[ib], Z)
        return kin.interp(v1, kin.vn[ib] + cross(kin.wn[ib], zn))


def pair_residual(f, m, pA: PointKinematics, pB: PointKinematics) -> np.ndarray:
    """``[f, z_A×f + m, −f, −(z_B×f + m)]`` as ``(n, 12)`` (THEORY §6)."""
    mA = cross(pA.za, f) + m
    mB = cross(pB.za, f) + m
    return np.concatenate((f, mA, -f, -mB), axis=1)


def pair_tangent(alpha_f, f, F, M, pA: PointKinematics, pB: PointKinematics, geometric: bool):
    """Generic consistent 12×12 block of THEORY §6.

    Parameters
    ----------
    F : (n, 4, 3, 3)
        ``[F_rA, F_θA, F_rB, F_θB]`` with ``Df = α_f Σ F_j Δ_j``.
    M : (n, 4, 3, 3) or None
        The same for the pure moment (None: m does not depend on the state).
    geometric : bool
        Add the ``f̂ ẑ'`` terms from the rotation of the arms (the excerpts
        omit them; ``tangent: seed`` reproduces that).
    """
    n = f.shape[0]
    ZA, ZB = skew(pA.za), skew(pB.za)
    zAF = np.einsum("nik,njkl->njil", ZA, F)
    zBF = np.einsum("nik,njkl->njil", ZB, F)
    if M is not None:
        zAF = zAF + M
        zBF = zBF + M
    K = np.empty((n, 4, 3, 4, 3))
    K[:, 0] = -alpha_f * F.transpose(0, 2, 1, 3)
    K[:, 1] = -alpha_f * zAF.transpose(0, 2, 1, 3)
    K[:, 2] = alpha_f * F.transpose(0, 2, 1, 3)
    K[:, 3] = alpha_f * zBF.transpose(0, 2, 1, 3)
    if geometric:
        fhat = skew(f)
        K[:, 1, :, 1, :] -= alpha_f * fhat @ skew(pA.z1)
        K[:, 3, :, 3, :] += alpha_f * fhat @ skew(pB.z1)
    return K.reshape(n, 12, 12)


MODES = {None: 0, "consistent": 1, "seed": 2}  # tangent argument -> kernel mode
NOPOS, NODATA = np.zeros((0, 144), np.int32), np.zeros(0)  # compiled kernels: return blocks, no direct scatter


def outputs(n: int, tangent: Optional[str]):
    """Fresh output arrays for a compiled kernel: residual, tangent (or a 1-row dummy)."""
    return np.empty((n, 12)), np.empty((n, 12, 12) if tangent is not None else (1, 12, 12))
