"""Per-body kinematic quantities that connector kernels read (THEORY §4, §6).

A :class:`Kinematics` holds, for *every* body of the model (moving, fixed and
``world``, in the model's internal order), the quantities at t_n and at the
current iterate t_{n+1} that the batched element kernels gather by body
index.  Fixed bodies simply carry their constant state: their rows and
columns are dropped at assembly, so kernels never special-case them.

The same container describes a single state (for output, energies and the
initial accelerations): then the n and n+1 quantities coincide and
``alpha_f = 1``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .rotations import quat_to_matrix, skew


@dataclass(frozen=True, eq=False)
class Kinematics:
    """Body quantities at t_n and t_{n+1}; arrays are ``(n_all, ...)``.

    Attributes
    ----------
    alpha_f : float
        Interpolation weight of t_{n+1} (THEORY §2); 1 for a single state.
    R1, Rn : (n_all, 3, 3)
        Rotation matrices Λ' and Λ_n.
    r1, rn, v1, vn, w1, wn : (n_all, 3)
        Centre positions [m], velocities [m/s], spatial angular velocities [rad/s].
    g : float
        γ/(βΔt) [1/s]; only tangents use it.
    T : (n_all, 3, 3) or None
        T(θ) with θ the Cayley step vector (THEORY §3); None for a single state.
    Omega : (n_all, 3, 3) or None
        Ω = g T(θ) − ω̂' so that Dω' = Ω Δθ (THEORY §4).
    dr : (n_all, 3) or None
        The positions' increments over the step as the solver holds them (its unknowns d:
        ``r1`` is ``rn + dr`` rounded); ``r1 − rn`` when None.  The joints form the distance
        between their points from ``rn`` and ``dr`` (docs/newton.md, far from the origin).
    """

    alpha_f: float
    R1: np.ndarray
    Rn: np.ndarray
    r1: np.ndarray
    rn: np.ndarray
    v1: np.ndarray
    vn: np.ndarray
    w1: np.ndarray
    wn: np.ndarray
    g: float = 0.0
    T: Optional[np.ndarray] = None
    Omega: Optional[np.ndarray] = None
    dr: Optional[np.ndarray] = None

    @classmethod
    def at_state(cls, r, q, v, w) -> "Kinematics":
        """Kinematics of one state (positions, unit quaternions, velocities)."""
        R = quat_to_matrix(q)
        return cls(alpha_f=1.0, R1=R, Rn=R, r1=r, rn=r, v1=v, vn=v, w1=w, wn=w)

    @classmethod
    def of_step(cls, alpha_f, g, R1, Rn, r1, rn, v1, vn, w1, wn, T) -> "Kinematics":
        """Kinematics of a generalized-α iterate; forms Ω = gT − ω̂'."""
        return cls(alpha_f=alpha_f, R1=R1, Rn=Rn, r1=r1, rn=rn, v1=v1, vn=vn, w1=w1, wn=wn,
                   g=g, T=T, Omega=g * T - skew(w1))
