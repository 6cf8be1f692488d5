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

import math

import numpy as np

from ..kernels import njit


@njit(cache=True)
def _qmul(a0, a1, a2, a3, b0, b1, b2, b3):
    return (a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3, a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
            a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1, a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0)


@njit(cache=True)
def _rotate_inv(q, i, v0, v1, v2):
    """Λᵀ v for the unit quaternion q[i]."""
    w, x, y, z = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
    t0, t1, t2, t3 = _qmul(w, -x, -y, -z, 0.0, v0, v1, v2)
    r = _qmul(t0, t1, t2, t3, w, x, y, z)
    return r[1], r[2], r[3]


@njit(cache=True)
def _rotate(q, i, v0, v1, v2):
    """Λ v for the unit quaternion q[i]."""
    w, x, y, z = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
    t0, t1, t2, t3 = _qmul(w, x, y, z, 0.0, v0, v1, v2)
    r = _qmul(t0, t1, t2, t3, w, -x, -y, -z)
    return r[1], r[2], r[3]


@njit(cache=True)
def _hermite(x0, d0, x1, d1, h, s):
    s2 = s * s
    s3 = s2 * s
    return (2 * s3 - 3 * s2 + 1) * x0 + (s3 - 2 * s2 + s) * h * d0 + (3 * s2 - 2 * s3) * x1 + (s3 - s2) * h * d1


@njit(cache=True)
def between(s, h, nm, x0, x1, acc0, acc1, out):
    """The state at ``t_n + s h`` (s ∈ [0, 1]) between two accepted states ``x0``, ``x1`` = (r, q, v, w) of
    the first ``nm`` bodies (the moving ones), ``acc0``, ``acc1`` (nm, 6) their true accelerations [a, α]:
    ``out`` = (r, q, v, w) ← it, rows below ``nm`` (module docstring).  The error-controlled loops' frames,
    compiled (mbsim.integrators.controlled) and step by step (the driver)."""
    r0, q0, v0, w0 = x0
    r1, q1, v1, w1 = x1
    ro, qo, vo, wo = out
    for i in range(nm):
        for k in range(3):
            ro[i, k] = _hermite(r0[i, k], v0[i, k], r1[i, k], v1[i, k], h, s)
            vo[i, k] = _hermite(v0[i, k], acc0[i, k], v1[i, k], acc1[i, k], h, s)
            wo[i, k] = _hermite(w0[i, k], acc0[i, 3 + k], w1[i, k], acc1[i, 3 + k], h, s)
        # Θ = log(Λ_nᵀ Λ_{n+1}) (material), the shorter way round
        a0, a1, a2, a3 = _qmul(q0[i, 0], -q0[i, 1], -q0[i, 2], -q0[i, 3], q1[i, 0], q1[i, 1], q1[i, 2], q1[i, 3])
        if a0 < 0.0:
            a0, a1, a2, a3 = -a0, -a1, -a2, -a3
        n = math.sqrt(a1 * a1 + a2 * a2 + a3 * a3)
        if n < 1e-8:
            c = 2.0 / max(a0, 1e-300)
        else:
            c = 2.0 * math.atan2(n, a0) / n
        th = (c * a1, c * a2, c * a3)
        W0 = _rotate_inv(q0, i, w0[i, 0], w0[i, 1], w0[i, 2])
        W1 = _rotate_inv(q1, i, w1[i, 0], w1[i, 1], w1[i, 2])
        # J_r(Θ)⁻¹ W1
        tn = math.sqrt(th[0] * th[0] + th[1] * th[1] + th[2] * th[2])
        if tn < 1e-4:
            cc = 1.0 / 12.0 + tn * tn / 720.0
        else:
            cc = 1.0 / (tn * tn) - (1.0 + math.cos(tn)) / (2.0 * tn * math.sin(tn))
        p0 = th[1] * W1[2] - th[2] * W1[1]
        p1 = th[2] * W1[0] - th[0] * W1[2]
        p2 = th[0] * W1[1] - th[1] * W1[0]
        pp0 = th[1] * p2 - th[2] * p1
        pp1 = th[2] * p0 - th[0] * p2
        pp2 = th[0] * p1 - th[1] * p0
        D1 = (W1[0] + 0.5 * p0 + cc * pp0, W1[1] + 0.5 * p1 + cc * pp1, W1[2] + 0.5 * p2 + cc * pp2)
        phi = (_hermite(0.0, W0[0], th[0], D1[0], h, s), _hermite(0.0, W0[1], th[1], D1[1], h, s),
               _hermite(0.0, W0[2], th[2], D1[2], h, s))
        a = math.sqrt(phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2])
        k = 0.5 - a * a / 48.0 if a < 1e-8 else math.sin(0.5 * a) / a
        e0, e1, e2, e3 = math.cos(0.5 * a), k * phi[0], k * phi[1], k * phi[2]
        b0, b1, b2, b3 = _qmul(q0[i, 0], q0[i, 1], q0[i, 2], q0[i, 3], e0, e1, e2, e3)
        nq = math.sqrt(b0 * b0 + b1 * b1 + b2 * b2 + b3 * b3)
        qo[i, 0], qo[i, 1], qo[i, 2], qo[i, 3] = b0 / nq, b1 / nq, b2 / nq, b3 / nq


def state_between(s: float, h: float, x0: dict, x1: dict) -> dict:
    """:func:`between` for dicts of ``r``, ``q``, ``v``, ``w`` and the true accelerations ``a``, ``al``
    (n, 3 or 4) of the two states: returns ``r``, ``q``, ``v``, ``w`` at ``t_n + s h``."""
    n = x0["r"].shape[0]
    out = (np.empty((n, 3)), np.empty((n, 4)), np.empty((n, 3)), np.empty((n, 3)))
    ends = [tuple(np.ascontiguousarray(x[k], dtype=float) for k in ("r", "q", "v", "w")) for x in (x0, x1)]
    acc = [np.ascontiguousarray(np.hstack((x["a"], x["al"])), dtype=float) for x in (x0, x1)]
    between(float(s), float(h), n, ends[0], ends[1], acc[0], acc[1], out)
    return dict(zip(("r", "q", "v", "w"), out))
