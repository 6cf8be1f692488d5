"""The relative rotation of two bodies as a rotation vector, and the derivatives of the logarithm map
(THEORY §13: the axis-less torsional spring, the bushing).  3-vectors and 3×3 matrices as tuples
(:mod:`mbsim.kernels.vec`).

With Q = exp(θ̂) a rotation, a left perturbation Q' = exp(ψ̂) Q changes θ by δθ = J_l(θ)⁻¹ ψ, with

    J_l(θ)⁻¹ = I − ½ θ̂ + β(φ) θ̂²,   β(φ) = 1/φ² − (1 + cos φ)/(2 φ sin φ),   φ = |θ| < π,

and a moment m conjugate to δθ acts on the bodies as J_l(θ)⁻ᵀ m = J_l(−θ)⁻¹ m (THEORY §13: so that a
stiffness is exactly conservative at any rotation).
"""
from __future__ import annotations

import numpy as np

from ..kernels import njit

_SERIES = 0.1  # below this angle [rad], β and β'/φ from their Taylor series (the closed forms cancel: 2e-11 there)


@njit(cache=True)
def log_rotation(Q):
    """The rotation vector θ (|θ| ≤ π) of the rotation matrix ``Q`` (9-tuple, row by row), through its
    unit quaternion (Shepperd's choice of the largest component)."""
    tr = Q[0] + Q[4] + Q[8]
    if tr >= Q[0] and tr >= Q[4] and tr >= Q[8]:
        w = 0.5 * np.sqrt(max(1.0 + tr, 0.0))
        f = 0.25 / w
        x, y, z = (Q[7] - Q[5]) * f, (Q[2] - Q[6]) * f, (Q[3] - Q[1]) * f
    elif Q[0] >= Q[4] and Q[0] >= Q[8]:
        x = 0.5 * np.sqrt(max(1.0 + Q[0] - Q[4] - Q[8], 0.0))
        f = 0.25 / x
        w, y, z = (Q[7] - Q[5]) * f, (Q[1] + Q[3]) * f, (Q[2] + Q[6]) * f
    elif Q[4] >= Q[8]:
        y = 0.5 * np.sqrt(max(1.0 - Q[0] + Q[4] - Q[8], 0.0))
        f = 0.25 / y
        w, x, z = (Q[2] - Q[6]) * f, (Q[1] + Q[3]) * f, (Q[5] + Q[7]) * f
    else:
        z = 0.5 * np.sqrt(max(1.0 - Q[0] - Q[4] + Q[8], 0.0))
        f = 0.25 / z
        w, x, y = (Q[3] - Q[1]) * f, (Q[2] + Q[6]) * f, (Q[5] + Q[7]) * f
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    s = np.sqrt(x * x + y * y + z * z)
    if s < 1e-8:
        k = 2.0 / w * (1.0 - s * s / (3.0 * w * w))  # 2 atan2(s, w)/s
    else:
        k = 2.0 * np.arctan2(s, w) / s
    return (k * x, k * y, k * z)


@njit(cache=True)
def beta(phi):
    """(β(φ), β'(φ)/φ) of J_l⁻¹ (the module docstring)."""
    if phi < _SERIES:
        p2 = phi * phi
        p4 = p2 * p2
        return (1.0 / 12.0 + p2 / 720.0 + p4 / 30240.0 + p4 * p2 / 1209600.0,
                1.0 / 360.0 + p2 / 7560.0 + p4 / 201600.0 + p4 * p2 / 5987520.0)
    h = 0.5 * phi
    cot = np.cos(h) / np.sin(h)
    csc2 = 1.0 / (np.sin(h) * np.sin(h))
    b = 1.0 / (phi * phi) - cot / (2.0 * phi)
    db = -2.0 / (phi * phi * phi) + csc2 / (4.0 * phi) + cot / (2.0 * phi * phi)
    return b, db / phi


@njit(cache=True)
def jinv(th, sign):
    """J_l(θ)⁻¹ (sign = 1) or its transpose J_l(θ)⁻ᵀ (sign = −1) as a 9-tuple."""
    phi = np.sqrt(th[0] * th[0] + th[1] * th[1] + th[2] * th[2])
    b, _ = beta(phi)
    x, y, z = th[0], th[1], th[2]
    h = -0.5 * sign
    # I + h θ̂ + β θ̂²,  θ̂² = θθᵀ − φ² I
    return (1.0 + b * (x * x - phi * phi), -h * z + b * x * y, h * y + b * x * z,
            h * z + b * y * x, 1.0 + b * (y * y - phi * phi), -h * x + b * y * z,
            -h * y + b * z * x, h * x + b * z * y, 1.0 + b * (z * z - phi * phi))


@njit(cache=True)
def d_jinv(th, v, sign):
    """∂(J_l(θ)⁻¹ v)/∂θ (sign = 1) or ∂(J_l(θ)⁻ᵀ v)/∂θ (sign = −1), a 9-tuple:
    −(h) v̂ + β [θ vᵀ + (θ·v) I − 2 v θᵀ] + (β'/φ) (θ×(θ×v)) θᵀ with h = −½ sign (the term h θ̂ v = −h v̂ θ)."""
    phi = np.sqrt(th[0] * th[0] + th[1] * th[1] + th[2] * th[2])
    b, bp = beta(phi)
    h = -0.5 * sign
    tv = th[0] * v[0] + th[1] * v[1] + th[2] * v[2]
    w = (th[0] * tv - v[0] * phi * phi, th[1] * tv - v[1] * phi * phi, th[2] * tv - v[2] * phi * phi)  # θ×(θ×v)
    t0, t1, t2 = th[0], th[1], th[2]
    v0, v1, v2 = v[0], v[1], v[2]
    return (b * (t0 * v0 - 2.0 * v0 * t0 + tv) + bp * w[0] * t0,
            b * (t0 * v1 - 2.0 * v0 * t1) + bp * w[0] * t1 + h * v2,
            b * (t0 * v2 - 2.0 * v0 * t2) + bp * w[0] * t2 - h * v1,
            b * (t1 * v0 - 2.0 * v1 * t0) + bp * w[1] * t0 - h * v2,
            b * (t1 * v1 - 2.0 * v1 * t1 + tv) + bp * w[1] * t1,
            b * (t1 * v2 - 2.0 * v1 * t2) + bp * w[1] * t2 + h * v0,
            b * (t2 * v0 - 2.0 * v2 * t0) + bp * w[2] * t0 + h * v1,
            b * (t2 * v1 - 2.0 * v2 * t1) + bp * w[2] * t1 - h * v0,
            b * (t2 * v2 - 2.0 * v2 * t2 + tv) + bp * w[2] * t2)
