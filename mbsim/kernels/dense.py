"""Dense LU with partial pivoting (small systems that are not a forest), for the compiled step loop
and :class:`mbsim.linalg.LinearSolver`.

numba cannot call LAPACK's ``getrf`` directly, and for the ≤ 120 unknowns of
the dense strategy a plain compiled LU costs less than a call into SciPy.  Same algorithm as
``getrf`` (row pivoting on the largest entry of the column), so results
agree with LAPACK's to round-off.
"""
from __future__ import annotations


from . import njit
from . import unsigned as _u  # no wrap-around test per index (mbsim.kernels.unsigned)


@njit(cache=True)
def lu_block(a, off, n, piv, poff):
    """LU in place of the n×n row-major matrix ``a[off : off + n²]``, rows interchanged as
    recorded in ``piv[poff : poff + n]``: the same algorithm as ``getrf``.

    Returns −1, or the column with a zero pivot.  Works on offsets into flat
    storage rather than on views: the 6×6 blocks of :mod:`mbsim.kernels.tree`
    are factorized in place, and a view costs two atomic reference-count
    updates in numba, more than a 6×6 block's arithmetic.
    """
    for k in range(n):
        p = k
        big = abs(a[_u(off + n * k + k)])
        for i in range(k + 1, n):
            x = abs(a[_u(off + n * i + k)])
            if x > big:
                big = x
                p = i
        piv[_u(poff + k)] = p
        if big == 0.0:
            return k
        if p != k:
            for j in range(n):
                a[_u(off + n * k + j)], a[_u(off + n * p + j)] = a[_u(off + n * p + j)], a[_u(off + n * k + j)]
        inv = 1.0 / a[_u(off + n * k + k)]
        for i in range(k + 1, n):
            a[_u(off + n * i + k)] *= inv
            f = a[_u(off + n * i + k)]
            if f != 0.0:
                for j in range(k + 1, n):
                    a[_u(off + n * i + j)] -= f * a[_u(off + n * k + j)]
    return -1


@njit(cache=True)
def lu_block_solve(a, off, n, piv, poff, b, boff):
    """Overwrite ``b[boff : boff + n]`` with the solution of the system factorized by
    :func:`lu_block`."""
    for k in range(n):
        p = piv[_u(poff + k)]
        if p != k:
            b[_u(boff + k)], b[_u(boff + p)] = b[_u(boff + p)], b[_u(boff + k)]
    # each row's sum in two chains (even and odd terms): one chain waits for every multiply-add before it
    for i in range(1, n):
        ai = off + n * i
        s0 = b[_u(boff + i)]
        s1 = 0.0
        j = 0
        while j + 1 < i:
            s0 -= a[_u(ai + j)] * b[_u(boff + j)]
            s1 -= a[_u(ai + j + 1)] * b[_u(boff + j + 1)]
            j += 2
        if j < i:
            s0 -= a[_u(ai + j)] * b[_u(boff + j)]
        b[_u(boff + i)] = s0 + s1
    for i in range(n - 1, -1, -1):
        ai = off + n * i
        s0 = b[_u(boff + i)]
        s1 = 0.0
        j = i + 1
        while j + 1 < n:
            s0 -= a[_u(ai + j)] * b[_u(boff + j)]
            s1 -= a[_u(ai + j + 1)] * b[_u(boff + j + 1)]
            j += 2
        if j < n:
            s0 -= a[_u(ai + j)] * b[_u(boff + j)]
        b[_u(boff + i)] = (s0 + s1) / a[_u(ai + i)]


@njit(cache=True)
def lu_block_solve_columns(a, off, n, piv, poff, b, boff, ldb, ncols):
    """:func:`lu_block_solve` for the first ``ncols`` columns of the n×``ldb`` row-major matrix
    ``b[boff:]`` at once, in place (the same operations, column by column, in the same order)."""
    for k in range(n):
        p = piv[_u(poff + k)]
        if p != k:
            for c in range(ncols):
                b[_u(boff + ldb * k + c)], b[_u(boff + ldb * p + c)] = b[_u(boff + ldb * p + c)], b[_u(boff + ldb * k + c)]
    for i in range(n):
        for j in range(i):
            f = a[_u(off + n * i + j)]
            for c in range(ncols):
                b[_u(boff + ldb * i + c)] -= f * b[_u(boff + ldb * j + c)]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            f = a[_u(off + n * i + j)]
            for c in range(ncols):
                b[_u(boff + ldb * i + c)] -= f * b[_u(boff + ldb * j + c)]
        d = a[_u(off + n * i + i)]
        for c in range(ncols):
            b[_u(boff + ldb * i + c)] /= d


@njit(cache=True)
def factorize(data, flat, n, lu, piv):
    """LU of the matrix whose entries ``data[j]`` sit at row-major position ``flat[j]``.

    ``lu`` (at least n² values) receives the factors, ``piv`` (n) the row
    interchanges.  Returns −1, or the column with a zero pivot.
    """
    for i in range(n * n):
        lu[i] = 0.0
    for k in range(data.shape[0]):
        lu[flat[k]] = data[k]
    return lu_block(lu, 0, n, piv, 0)


@njit(cache=True, allocates=True)
def solve(lu, n, piv, rhs):
    """x with A x = rhs, from the factors of :func:`factorize`."""
    x = rhs.copy()
    lu_block_solve(lu, 0, n, piv, 0, x, 0)
    return x
