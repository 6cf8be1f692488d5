"""Rotations for compiled code (THEORY §3): Cayley maps on tuples, unit quaternions to matrices."""
from __future__ import annotations

from . import njit
from .vec import cross, dot


@njit(cache=True)
def cay_mv(t, u, sign):
    """cay(t) u (``sign`` = 1) or cay(t)ᵀ u = cay(−t) u (``sign`` = −1), for tuples t and u:
    u + s (sign t×u + ½ (t (t·u) − |t|² u)), s = 4/(4+|t|²) (THEORY §3)."""
    tt = dot(t, t)
    s = 4.0 / (4.0 + tt)
    tu = dot(t, u)
    x = cross(t, u)
    return (u[0] + s * (sign * x[0] + 0.5 * (t[0] * tu - tt * u[0])),
            u[1] + s * (sign * x[1] + 0.5 * (t[1] * tu - tt * u[1])),
            u[2] + s * (sign * x[2] + 0.5 * (t[2] * tu - tt * u[2])))


@njit(cache=True)
def cay_compose(c, th, i):
    """th[i] ← the Cayley vector of cay(c)·cay(th[i]): (c + t + ½ c×t) / (1 − ¼ c·t) (the Newton
    update of θ; ``c`` a tuple)."""
    t0, t1, t2 = th[i, 0], th[i, 1], th[i, 2]
    den = 1.0 - 0.25 * (c[0] * t0 + c[1] * t1 + c[2] * t2)
    th[i, 0] = (c[0] + t0 + 0.5 * (c[1] * t2 - c[2] * t1)) / den
    th[i, 1] = (c[1] + t1 + 0.5 * (c[2] * t0 - c[0] * t2)) / den
    th[i, 2] = (c[2] + t2 + 0.5 * (c[0] * t1 - c[1] * t0)) / den


@njit(cache=True)
def matrices(q, R):
    """R[i] ← the rotation matrix of the unit quaternion q[i] = [w, x, y, z], every i."""
    for i in range(q.shape[0]):
        w, x, y, z = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        R[i, 0, 0] = 1 - 2 * (y * y + z * z); R[i, 0, 1] = 2 * (x * y - w * z); R[i, 0, 2] = 2 * (x * z + w * y)
        R[i, 1, 0] = 2 * (x * y + w * z); R[i, 1, 1] = 1 - 2 * (x * x + z * z); R[i, 1, 2] = 2 * (y * z - w * x)
        R[i, 2, 0] = 2 * (x * z - w * y); R[i, 2, 1] = 2 * (y * z + w * x); R[i, 2, 2] = 1 - 2 * (x * x + y * y)
