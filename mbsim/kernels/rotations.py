"""Batched SO(3) helpers: skew matrices, Cayley maps, quaternions (THEORY §3).

Every function works on stacks: a leading shape ``(...)`` is carried
through.  Quaternions are ``[w, x, y, z]``, body-to-world.
"""
from __future__ import annotations

import numpy as np


# skew(v) = v @ _SKEW reshaped: one matmul instead of six strided assignments.
_SKEW = np.zeros((3, 9))
_SKEW[2, 1], _SKEW[1, 2], _SKEW[2, 3] = -1.0, 1.0, 1.0
_SKEW[0, 5], _SKEW[1, 6], _SKEW[0, 7] = -1.0, -1.0, 1.0


def skew(v: np.ndarray) -> np.ndarray:
    """``(..., 3) -> (..., 3, 3)`` with ``skew(a) @ b == cross(a, b)``."""
    v = np.asarray(v, dtype=float)
    return (v @ _SKEW).reshape(v.shape[:-1] + (3, 3))


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product of stacks of 3-vectors (faster than ``np.cross`` on small trailing axes)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), axis=-1)


def matvec(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``A @ x`` for stacks: ``(..., 3, 3), (..., 3) -> (..., 3)``."""
    return np.einsum("...ij,...j->...i", A, x)


def tmatvec(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``A.T @ x`` for stacks."""
    return np.einsum("...ji,...j->...i", A, x)


def outer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a ⊗ b`` for stacks of 3-vectors."""
    return a[..., :, None] * b[..., None, :]


def cay(c: np.ndarray) -> np.ndarray:
    """Cayley map ``I + 4/(4+|c|²) (ĉ + ½ ĉ²)``: rotation by 2·atan(|c|/2) about c."""
    c = np.asarray(c, dtype=float)
    C = skew(c)
    s = 4.0 / (4.0 + np.einsum("...i,...i->...", c, c))
    return np.eye(3) + s[..., None, None] * (C + 0.5 * C @ C)


def tmat(c: np.ndarray) -> np.ndarray:
    """``T(c) = I + ½ ĉ + ¼ c⊗c`` (THEORY §3): ``Dθ = T(θ)ᵀ Δθ`` for a left update."""
    c = np.asarray(c, dtype=float)
    return np.eye(3) + 0.5 * skew(c) + 0.25 * outer(c, c)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(..., 4)`` → rotation matrix ``(..., 3, 3)``."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    out = np.empty(q.shape[:-1] + (3, 3))
    out[..., 0, 0] = 1 - 2 * (y * y + z * z)
    out[..., 0, 1] = 2 * (x * y - w * z)
    out[..., 0, 2] = 2 * (x * z + w * y)
    out[..., 1, 0] = 2 * (x * y + w * z)
    out[..., 1, 1] = 1 - 2 * (x * x + z * z)
    out[..., 1, 2] = 2 * (y * z - w * x)
    out[..., 2, 0] = 2 * (x * z - w * y)
    out[..., 2, 1] = 2 * (y * z + w * x)
    out[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def quat_mul(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hamilton product ``p ⊗ q`` (rotation q first, then p)."""
    pw, pv = p[..., :1], p[..., 1:]
    qw, qv = q[..., :1], q[..., 1:]
    w = pw * qw - np.sum(pv * qv, axis=-1, keepdims=True)
    v = pw * qv + qw * pv + cross(pv, qv)
    return np.concatenate((w, v), axis=-1)


def quat_conj(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def quat_normalize(q: np.ndarray) -> np.ndarray:
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def cay_quat(c: np.ndarray) -> np.ndarray:
    """Unit quaternion of ``cay(c)``: ``(1, c/2) / sqrt(1 + |c|²/4)``."""
    c = np.asarray(c, dtype=float)
    q = np.concatenate((np.ones(c.shape[:-1] + (1,)), 0.5 * c), axis=-1)
    return quat_normalize(q)


def cay_compose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Cayley vector ``c`` of ``cay(a)·cay(b)``: ``(a + b + ½ a×b) / (1 − ¼ a·b)``.

    Exact (the quaternions of cay(a), cay(b) are (1, a/2), (1, b/2) up to
    scale, and their product is (1 − a·b/4, (a + b)/2 + a×b/4)); formed from
    the vectors themselves, so a small step vector keeps its relative
    precision.  Singular when the product is a half turn.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    den = 1.0 - 0.25 * np.einsum("...i,...i->...", a, b)
    return (a + b + 0.5 * cross(a, b)) / den[..., None]


def cayvec_quat(q: np.ndarray) -> np.ndarray:
    """Inverse of :func:`cay` from a quaternion: ``2 q_vec / q_w`` (singular at a half turn)."""
    return 2.0 * q[..., 1:] / q[..., :1]


def rotvec_quat(phi: np.ndarray) -> np.ndarray:
    """Quaternion of the rotation vector ``phi`` (angle |phi| about phi/|phi|)."""
    phi = np.asarray(phi, dtype=float)
    ang = np.linalg.norm(phi, axis=-1, keepdims=True)
    half = 0.5 * ang
    # sin(x/2)/x written with sinc to stay smooth at 0
    k = 0.5 * np.sinc(half / np.pi)
    return np.concatenate((np.cos(half), k * phi), axis=-1)


def quat_angle(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Angle (rad) of the rotation taking q to p, insensitive to quaternion sign.

    Uses ``atan2`` of the relative quaternion's parts, accurate for tiny angles
    where ``arccos`` of the dot product is not.
    """
    r = quat_mul(quat_normalize(p), quat_conj(quat_normalize(q)))
    return 2.0 * np.arctan2(np.linalg.norm(r[..., 1:], axis=-1), np.abs(r[..., 0]))
