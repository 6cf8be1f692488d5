"""Small vectors and 3×3 matrices as tuples, for compiled code (THEORY §1: ``â b = a × b``).

A 3-vector is a tuple of three floats and a 3×3 matrix a tuple of nine, row by row: values that
live in registers.  Rows of the state arrays are read by index (``row(x, i, c)``), never taken as
array views: a view or a slice costs two atomic reference-count updates in numba, and a compiled
function that takes arrays pays them on every call unless numba can prove them unneeded (measured
in issue 11: a spring's residual 310 ns with views, 95 ns without).  Every function here is small
enough for the compiler to inline where it is called.
"""
from __future__ import annotations

import numpy as np

from . import njit
from . import unsigned as _u

ZERO = (0.0, 0.0, 0.0)
ZERO33 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
EYE33 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


# ------------------------------------------------------------------------------------------------
# 3-vectors
# ------------------------------------------------------------------------------------------------
@njit(cache=True)
def row(x, i, c):
    """``x[i, c:c+3]`` as a tuple."""
    ui = _u(i)
    return (x[ui, _u(c)], x[ui, _u(c + 1)], x[ui, _u(c + 2)])


@njit(cache=True)
def put(x, i, c, a):
    """``x[i, c:c+3] = a``."""
    ui = _u(i)
    x[ui, _u(c)] = a[0]
    x[ui, _u(c + 1)] = a[1]
    x[ui, _u(c + 2)] = a[2]


@njit(cache=True)
def mv(R, a, z):
    """``R[a] z`` for R (n, 3, 3) and a tuple z."""
    ua = _u(a)
    return (R[ua, 0, 0] * z[0] + R[ua, 0, 1] * z[1] + R[ua, 0, 2] * z[2],
            R[ua, 1, 0] * z[0] + R[ua, 1, 1] * z[1] + R[ua, 1, 2] * z[2],
            R[ua, 2, 0] * z[0] + R[ua, 2, 1] * z[1] + R[ua, 2, 2] * z[2])


@njit(cache=True)
def mtv(R, a, z):
    """``R[a]ᵀ z`` for R (n, 3, 3) and a tuple z."""
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
def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(cache=True)
def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(cache=True)
def scale(f, a):
    return (f * a[0], f * a[1], f * a[2])


@njit(cache=True)
def mix(f, a, h, b):
    """``f a + h b``."""
    return (f * a[0] + h * b[0], f * a[1] + h * b[1], f * a[2] + h * b[2])


@njit(cache=True)
def norm(a):
    return np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit(cache=True)
def unit(i):
    """The i-th world axis."""
    return (1.0 if i == 0 else 0.0, 1.0 if i == 1 else 0.0, 1.0 if i == 2 else 0.0)


# ------------------------------------------------------------------------------------------------
# 3×3 matrices (row by row)
# ------------------------------------------------------------------------------------------------
@njit(cache=True)
def block(x, i, c):
    """``x[i, c:c+9]`` as a 3×3 matrix (row by row)."""
    ui = _u(i)
    return (x[ui, _u(c)], x[ui, _u(c + 1)], x[ui, _u(c + 2)], x[ui, _u(c + 3)], x[ui, _u(c + 4)],
            x[ui, _u(c + 5)], x[ui, _u(c + 6)], x[ui, _u(c + 7)], x[ui, _u(c + 8)])


@njit(cache=True)
def put_block(x, i, c, A):
    """``x[i, c:c+9] = A`` (row by row)."""
    ui = _u(i)
    for k in range(9):
        x[ui, _u(c + k)] = A[k]


@njit(cache=True)
def hat(z):
    """ẑ."""
    return (0.0, -z[2], z[1], z[2], 0.0, -z[0], -z[1], z[0], 0.0)


@njit(cache=True)
def outer(a, b):
    """a bᵀ."""
    return (a[0] * b[0], a[0] * b[1], a[0] * b[2], a[1] * b[0], a[1] * b[1], a[1] * b[2],
            a[2] * b[0], a[2] * b[1], a[2] * b[2])


@njit(cache=True)
def hat_hat(a, b):
    """â b̂ = b aᵀ − (a·b) I."""
    s = dot(a, b)
    return (b[0] * a[0] - s, b[0] * a[1], b[0] * a[2], b[1] * a[0], b[1] * a[1] - s, b[1] * a[2],
            b[2] * a[0], b[2] * a[1], b[2] * a[2] - s)


@njit(cache=True)
def mm(A, B):
    """A B."""
    return (A[0] * B[0] + A[1] * B[3] + A[2] * B[6], A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
            A[0] * B[2] + A[1] * B[5] + A[2] * B[8],
            A[3] * B[0] + A[4] * B[3] + A[5] * B[6], A[3] * B[1] + A[4] * B[4] + A[5] * B[7],
            A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[3] + A[8] * B[6], A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
            A[6] * B[2] + A[7] * B[5] + A[8] * B[8])


@njit(cache=True)
def m_hat(A, z):
    """A ẑ (columns: A ẑ e_j = A (z × e_j))."""
    return (A[1] * z[2] - A[2] * z[1], -A[0] * z[2] + A[2] * z[0], A[0] * z[1] - A[1] * z[0],
            A[4] * z[2] - A[5] * z[1], -A[3] * z[2] + A[5] * z[0], A[3] * z[1] - A[4] * z[0],
            A[7] * z[2] - A[8] * z[1], -A[6] * z[2] + A[8] * z[0], A[6] * z[1] - A[7] * z[0])


@njit(cache=True)
def hat_m(z, A):
    """ẑ A (rows: z × the columns of A)."""
    return (-z[2] * A[3] + z[1] * A[6], -z[2] * A[4] + z[1] * A[7], -z[2] * A[5] + z[1] * A[8],
            z[2] * A[0] - z[0] * A[6], z[2] * A[1] - z[0] * A[7], z[2] * A[2] - z[0] * A[8],
            -z[1] * A[0] + z[0] * A[3], -z[1] * A[1] + z[0] * A[4], -z[1] * A[2] + z[0] * A[5])


@njit(cache=True)
def madd(A, B):
    return (A[0] + B[0], A[1] + B[1], A[2] + B[2], A[3] + B[3], A[4] + B[4], A[5] + B[5], A[6] + B[6],
            A[7] + B[7], A[8] + B[8])


@njit(cache=True)
def msub(A, B):
    return (A[0] - B[0], A[1] - B[1], A[2] - B[2], A[3] - B[3], A[4] - B[4], A[5] - B[5], A[6] - B[6],
            A[7] - B[7], A[8] - B[8])


@njit(cache=True)
def mscale(f, A):
    return (f * A[0], f * A[1], f * A[2], f * A[3], f * A[4], f * A[5], f * A[6], f * A[7], f * A[8])


@njit(cache=True)
def mneg(A):
    return (-A[0], -A[1], -A[2], -A[3], -A[4], -A[5], -A[6], -A[7], -A[8])


@njit(cache=True)
def mt(A):
    """Aᵀ."""
    return (A[0], A[3], A[6], A[1], A[4], A[7], A[2], A[5], A[8])


@njit(cache=True)
def of_array(R, a):
    """``R[a]`` (R (n, 3, 3)) as a 3×3 matrix."""
    ua = _u(a)
    return (R[ua, 0, 0], R[ua, 0, 1], R[ua, 0, 2], R[ua, 1, 0], R[ua, 1, 1], R[ua, 1, 2],
            R[ua, 2, 0], R[ua, 2, 1], R[ua, 2, 2])


@njit(cache=True)
def is_zero(A):
    return (A[0] == 0.0 and A[1] == 0.0 and A[2] == 0.0 and A[3] == 0.0 and A[4] == 0.0 and A[5] == 0.0
            and A[6] == 0.0 and A[7] == 0.0 and A[8] == 0.0)
