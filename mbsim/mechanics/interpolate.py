"""The state between two accepted steps (THEORY §14: frames where they were asked, never by shortening a
step): cubic Hermite in the positions and velocities, and on the rotation group for the orientations.

Between ``t_n`` and ``t_{n+1} = t_n + h``, at ``s = (t − t_n)/h``:

- the centre ``r(t)``: the cubic through ``r_n, r_{n+1}`` with slopes ``v_n, v_{n+1}``; the velocity
  ``v(t)`` the cubic through ``v_n, v_{n+1}`` with slopes the true accelerations ``a_n, a_{n+1}``
  (the same for the spatial ``ω(t)`` with ``α_n, α_{n+1}``): each O(h⁴) from the motion through the two
  states, below the step's own O(h³) error;
- the orientation ``Λ(t) = Λ_n exp(φ(t))``, ``φ`` the cubic in the material rotation vector (the tangent
  space at ``Λ_n``) with ``φ(0) = 0``, ``φ'(0) = W_n = Λ_nᵀω_n``, ``φ(h) = Θ = log(Λ_nᵀΛ_{n+1})`` and
  ``φ'(h) = J_r(Θ)⁻¹ W_{n+1}`` (J_r the right Jacobian of exp: ``Λ̇ = Λ (J_r(φ) φ̇)^``), so that
  ``Λ(t)`` meets both orientations and both angular velocities exactly.

Quaternions are [w, x, y, z] (OUTPUT.md).
"""
from __future__ import annotations

import numpy as np


def hermite(x0, d0, x1, d1, h: float, s: float):
    """The cubic Hermite interpolant at ``s`` ∈ [0, 1] of values ``x0``, ``x1`` and derivatives (per unit
    time) ``d0``, ``d1`` over a step of ``h``."""
    s2, s3 = s * s, s * s * s
    return ((2 * s3 - 3 * s2 + 1) * x0 + (s3 - 2 * s2 + s) * h * d0 + (3 * s2 - 2 * s3) * x1
            + (s3 - s2) * h * d1)


def _quat_mul(p, q):
    w1, x1, y1, z1 = np.moveaxis(p, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(q, -1, 0)
    return np.stack((w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2), axis=-1)


def _conj(q):
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def quat_exp(phi):
    """The unit quaternions of rotation vectors ``phi`` (..., 3)."""
    a = np.linalg.norm(phi, axis=-1, keepdims=True)
    small = a < 1e-8
    k = np.where(small, 0.5 - a * a / 48.0, np.sin(0.5 * a) / np.where(small, 1.0, a))
    return np.concatenate((np.cos(0.5 * a), k * phi), axis=-1)


def quat_log(q):
    """The rotation vectors (..., 3) of unit quaternions ``q``, angles in [0, π]."""
    q = np.where(q[..., :1] < 0.0, -q, q)  # the shorter way round
    v = q[..., 1:]
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    a = 2.0 * np.arctan2(n, q[..., :1])
    small = n < 1e-8
    return np.where(small, 2.0 * v / np.maximum(q[..., :1], 1e-300), a * v / np.where(small, 1.0, n))


def rotate(q, v, inverse: bool = False):
    """``Λ v`` (or ``Λᵀ v``) for unit quaternions ``q`` (..., 4) and vectors ``v`` (..., 3)."""
    qv = np.concatenate((np.zeros(v.shape[:-1] + (1,)), v), axis=-1)
    if inverse:
        return _quat_mul(_quat_mul(_conj(q), qv), q)[..., 1:]
    return _quat_mul(_quat_mul(q, qv), _conj(q))[..., 1:]


def jr_inverse(phi, w):
    """``J_r(φ)⁻¹ w`` (rows): the inverse right Jacobian of exp on SO(3),
    ``I + ½ φ̂ + (1/θ² − (1 + cos θ)/(2 θ sin θ)) φ̂²``."""
    th = np.linalg.norm(phi, axis=-1, keepdims=True)
    small = th < 1e-4
    ts = np.where(small, 1.0, th)
    c = np.where(small, 1.0 / 12.0 + th * th / 720.0, 1.0 / (ts * ts) - (1.0 + np.cos(ts)) / (2.0 * ts * np.sin(ts)))
    pw = np.cross(phi, w)
    return w + 0.5 * pw + c * np.cross(phi, pw)


def state_between(s: float, h: float, x0: dict, x1: dict) -> dict:
    """The state at ``t_n + s h`` between two accepted states ``x0``, ``x1``: dicts of ``r``, ``q``, ``v``,
    ``w`` and the true accelerations ``a``, ``al`` (n, 3 or 4); returns ``r``, ``q``, ``v``, ``w``
    (module docstring)."""
    r = hermite(x0["r"], x0["v"], x1["r"], x1["v"], h, s)
    v = hermite(x0["v"], x0["a"], x1["v"], x1["a"], h, s)
    w = hermite(x0["w"], x0["al"], x1["w"], x1["al"], h, s)
    q0, q1 = x0["q"], x1["q"]
    theta = quat_log(_quat_mul(_conj(q0), q1))  # material, in the frame of Λ_n
    W0 = rotate(q0, x0["w"], inverse=True)
    W1 = jr_inverse(theta, rotate(q1, x1["w"], inverse=True))
    phi = hermite(np.zeros_like(theta), W0, theta, W1, h, s)
    q = _quat_mul(q0, quat_exp(phi))
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return {"r": r, "q": q, "v": v, "w": w}
