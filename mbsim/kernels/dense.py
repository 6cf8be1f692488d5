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
                t = A[k, j]
                A[k, j] = A[p, j]
                A[p, j] = t
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            f = A[i, k] * inv
            A[i, k] = f
            if f != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= f * A[k, j]
    return -1


@njit(cache=True)
def solve(lu, n, piv, rhs):
    """x with A x = rhs, from the factors of :func:`factorize`."""
    A = lu[:n * n].reshape(n, n)
    x = rhs.copy()
    for k in range(n):
        p = piv[k]
        if p != k:
            t = x[k]
            x[k] = x[p]
            x[p] = t
    for i in range(n):
        s = x[i]
        for j in range(i):
            s -= A[i, j] * x[j]
        x[i] = s
    for i in range(n - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, n):
            s -= A[i, j] * x[j]
        x[i] = s / A[i, i]
    return x
