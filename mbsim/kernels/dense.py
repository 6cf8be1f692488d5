"""Dense LU with partial pivoting for the compiled step loop (small systems that are not a forest).

The Python-driven step uses LAPACK (:mod:`mbsim.linalg`); numba cannot call
``getrf`` directly, and for the ≤ 120 unknowns of the dense strategy a
plain compiled LU costs less than a call into SciPy.  Same algorithm as
``getrf`` (row pivoting on the largest entry of the column), so results
agree with LAPACK's to round-off.
"""
from __future__ import annotations

import numpy as np

from . import njit


@njit(cache=True)
def lu_in_place(A, piv):
    """LU of the square matrix ``A`` in place, rows interchanged as recorded in ``piv``.

    Returns −1, or the column with a zero pivot.  (Also the 6×6 block LU of
    :mod:`mbsim.kernels.tree`.)
    """
    n = A.shape[0]
    for k in range(n):
        p = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                big = abs(A[i, k])
                p = i
        piv[k] = p
        if big == 0.0:
            return k
        if p != k:
            for j in range(n):
                A[k, j], A[p, j] = A[p, j], A[k, j]
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            A[i, k] *= inv
            f = A[i, k]
            if f != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= f * A[k, j]
    return -1


@njit(cache=True)
def lu_solve_in_place(A, piv, b):
    """Overwrite ``b`` with the solution of the system factorized by :func:`lu_in_place`."""
    n = A.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= A[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= A[i, j] * b[j]
        b[i] = s / A[i, i]


@njit(cache=True)
def factorize(data, flat, n, lu, piv):
    """LU of the matrix whose entries ``data[j]`` sit at row-major position ``flat[j]``.

    ``lu`` (at least n² values) receives the factors, ``piv`` (n) the row
    interchanges.  Returns −1, or the column with a zero pivot.
    """
    A = lu[:n * n].reshape(n, n)
    for i in range(n):
        for j in range(n):
            A[i, j] = 0.0
    for k in range(data.shape[0]):
        lu[flat[k]] = data[k]
    return lu_in_place(A, piv)


@njit(cache=True)
def solve(lu, n, piv, rhs):
    """x with A x = rhs, from the factors of :func:`factorize`."""
    x = rhs.copy()
    lu_solve_in_place(lu[:n * n].reshape(n, n), piv, x)
    return x
