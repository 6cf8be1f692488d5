"""Compiled building blocks of the element laws (THEORY §6–8), shared by the element kinds.

The laws themselves live in :mod:`mbsim.elements`, one file per kind; this
module holds what several of them use: 3-vector arithmetic on tuples, the
point kinematics of a connector's insertion point, the generic
``[f, z_A×f + m, −f, −(z_B×f + m)]`` residual and 12×12 tangent of a pair of
points (THEORY §6), and the scatter of one tangent block into the solver's
storage.

Tangent modes: 0 none, 1 consistent, 2 seed (THEORY §8).

A law can add its tangent blocks straight into the solver's storage: given
``pos`` (n, W·W) positions and ``data``, block e goes to ``data[pos[e]]`` and
only a one-block scratch ``K`` (1, W, W) is needed — no (n, W, W) array is
written and read back (what dominates large models).  With an empty ``pos``
the blocks are returned in ``K`` (n, W, W).  W = 12 + the most own unknowns
of a registered kind (12 without joints): a connector fills the first 12 rows
and columns, and the positions of the others are −1.

Style: 3-vectors are tuples (values in registers) and 3×3 work matrices are
rows ``S[k]`` of one scratch array passed down, addressed by index; rows of
the state arrays are read by index (``R1[a, i, j]``), never as views.  An
array view or slice costs two atomic reference-count updates in numba, and
with views these kernels spent three quarters of their time on them at
N = 1 (a spring's residual: 310 ns with views, 95 ns without).
"""
from __future__ import annotations

from . import njit
from . import unsigned as _u  # no wrap-around test per index (mbsim.kernels.unsigned)

NONE, CONSISTENT, SEED = 0, 1, 2
# The step's constants (mbsim.elements.engine.PREPARE): a law that keeps some writes them into its
# ``cache`` row at the step's start; the others are not called with it.
PREPARE = -3


# Shape of the work space a kernel of this module (or of mbsim.kernels.bodies) takes as ``scr``:
# five 3×3 matrices and a spare, so that a call allocates nothing.
SCRATCH = (6, 3, 3)


@njit(cache=True)
def row(x, i, c):
    """``x[i, c:c+3]`` as a tuple."""
    ui = _u(i)
    return (x[ui, _u(c)], x[ui, _u(c + 1)], x[ui, _u(c + 2)])


@njit(cache=True)
def mv(R, a, z):
    """R[a] z for R (n, 3, 3) and a tuple z."""
    ua = _u(a)
    return (R[ua, 0, 0] * z[0] + R[ua, 0, 1] * z[1] + R[ua, 0, 2] * z[2],
            R[ua, 1, 0] * z[0] + R[ua, 1, 1] * z[1] + R[ua, 1, 2] * z[2],
            R[ua, 2, 0] * z[0] + R[ua, 2, 1] * z[1] + R[ua, 2, 2] * z[2])


@njit(cache=True)
def mtv(R, a, z):
    """R[a]ᵀ z for R (n, 3, 3) and a tuple z."""
    ua = _u(a)
    return (R[ua, 0, 0] * z[0] + R[ua, 1, 0] * z[1] + R[ua, 2, 0] * z[2],
            R[ua, 0, 1] * z[0] + R[ua, 1, 1] * z[1] + R[ua, 2, 1] * z[2],
            R[ua, 0, 2] * z[0] + R[ua, 1, 2] * z[1] + R[ua, 2, 2] * z[2])


@njit(cache=True)
def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True)
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def skew_left(z, M, m, out, o):
    """out[o] = ẑ M[m]."""
    for j in range(3):
        out[o, 0, j] = -z[2] * M[m, 1, j] + z[1] * M[m, 2, j]
        out[o, 1, j] = z[2] * M[m, 0, j] - z[0] * M[m, 2, j]
        out[o, 2, j] = -z[1] * M[m, 0, j] + z[0] * M[m, 1, j]


@njit(cache=True)
def skew_right(M, m, z, out, o):
    """out[o] = M[m] ẑ."""
    for i in range(3):
        out[o, i, 0] = M[m, i, 1] * z[2] - M[m, i, 2] * z[1]
        out[o, i, 1] = -M[m, i, 0] * z[2] + M[m, i, 2] * z[0]
        out[o, i, 2] = M[m, i, 0] * z[1] - M[m, i, 1] * z[0]


@njit(cache=True)
def point(af, R1, Rn, r1, rn, a, Z):
    """Arm at n+1, at n, at n+α, and the point at n+α of body ``a`` (THEORY §6)."""
    z1 = mv(R1, a, Z)
    zn = mv(Rn, a, Z)
    b = 1.0 - af
    za = (af * z1[0] + b * zn[0], af * z1[1] + b * zn[1], af * z1[2] + b * zn[2])
    x = (af * r1[a, 0] + b * rn[a, 0] + za[0], af * r1[a, 1] + b * rn[a, 1] + za[1],
         af * r1[a, 2] + b * rn[a, 2] + za[2])
    return z1, zn, za, x


@njit(cache=True)
def pair_residual(f, zAa, zBa, res, e):
    """res[e] = [f, z_A×f, −f, −z_B×f]."""
    tA = cross(zAa, f)
    tB = cross(zBa, f)
    for i in range(3):
        res[e, i] = f[i]
        res[e, 3 + i] = tA[i]
        res[e, 6 + i] = -f[i]
        res[e, 9 + i] = -tB[i]


@njit(cache=True)
def pair_tangent(af, S, zAa, zBa, zA1, zB1, f, geometric, K, ke, tmp):
    """Generic 12×12 block of THEORY §6 without a moment part, into K[ke].

    S[0:4] = [F_rA, F_θA, F_rB, F_θB] with Df = α_f Σ F_j Δ_j; S[tmp] is work space.
    """
    for j in range(4):
        for r in range(3):
            for c in range(3):
                K[ke, r, 3 * j + c] = -af * S[j, r, c]
                K[ke, 6 + r, 3 * j + c] = af * S[j, r, c]
        skew_left(zAa, S, j, S, tmp)
        for r in range(3):
            for c in range(3):
                K[ke, 3 + r, 3 * j + c] = -af * S[tmp, r, c]
        skew_left(zBa, S, j, S, tmp)
        for r in range(3):
            for c in range(3):
                K[ke, 9 + r, 3 * j + c] = af * S[tmp, r, c]
    if geometric:
        # f̂ ẑ' = z' fᵀ − (f·z') I
        fzA = dot(f, zA1)
        fzB = dot(f, zB1)
        for r in range(3):
            for c in range(3):
                K[ke, 3 + r, 3 + c] -= af * (zA1[r] * f[c] - (fzA if r == c else 0.0))
                K[ke, 9 + r, 9 + c] += af * (zB1[r] * f[c] - (fzB if r == c else 0.0))


@njit(cache=True)
def add_block(K, ke, pos, e, data):
    """data[pos[e]] += K[ke] (entries −1 of pos: dropped); K (·, W, W), pos (·, W·W)."""
    w = K.shape[1]
    if w == 12:  # no element with own unknowns: constant bounds, which the compiler unrolls
        for r in range(12):
            for q in range(12):
                k = pos[e, 12 * r + q]
                if k >= 0:
                    data[k] += K[ke, r, q]
        return
    for r in range(w):
        for q in range(w):
            k = pos[e, w * r + q]
            if k >= 0:
                data[k] += K[ke, r, q]
