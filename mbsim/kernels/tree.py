"""Block LU without fill for bodies coupled as a forest (chains, ropes, trees).

When the graph of moving bodies joined by connectors has no cycle, the
tangent's 6×6 block structure is that of a tree: eliminating each body
after all of its children (leaves first) creates no fill, so the
factorization costs O(N) — about a thousand flops per body — instead of a
general sparse LU's symbolic work.  Pivoting is partial, within each 6×6
diagonal block (the diagonal blocks carry the mass terms m/(βΔt²) and
J/(βΔt²) and dominate).

Storage: one flat array ``data`` of ``3 · nm · 36`` values: the diagonal
blocks ``D[i]``, then ``U[c] = K[c, parent(c)]`` and ``L[c] = K[parent(c), c]``
per child body c (row-major 6×6 each; unused for roots).
"""
from __future__ import annotations

import numpy as np

from . import dense, njit
from . import unsigned as _u  # no wrap-around test per index (mbsim.kernels.unsigned)


def forest(nm: int, edges: np.ndarray):
    """Parent of every body and a leaves-first elimination order, or None if there is a cycle.

    Parameters
    ----------
    nm : int
        Number of moving bodies.
    edges : (m, 2) int
        Pairs of moving bodies joined by at least one connector (duplicates allowed).

    Returns
    -------
    (parent, order) : (nm,) int arrays, parent −1 for a root; or None.
    """
    adj = [[] for _ in range(nm)]
    seen = set()
    for a, b in edges:
        a, b = int(a), int(b)
        key = (min(a, b), max(a, b))
        if a == b or key in seen:
            continue
        seen.add(key)
        adj[a].append(b)
        adj[b].append(a)
    if len(seen) > nm - 1:
        return None  # more distinct couplings than a forest can have
    parent = np.full(nm, -1, dtype=np.int64)
    visited = np.zeros(nm, dtype=bool)
    bfs = []
    for root in range(nm):
        if visited[root]:
            continue
        visited[root] = True
        queue = [root]
        while queue:
            i = queue.pop()
            bfs.append(i)
            for j in adj[i]:
                if not visited[j]:
                    visited[j] = True
                    parent[j] = i
                    queue.append(j)
                elif parent[i] != j:
                    return None  # a second path to j: a cycle
    order = np.array(bfs[::-1], dtype=np.int64)  # children before parents
    return parent, order


def block_position(rows: np.ndarray, cols: np.ndarray, nm: int, parent: np.ndarray) -> np.ndarray:
    """Position in the flat block storage of every (row, col) entry of the tangent pattern."""
    bi, bj = rows // 6, cols // 6
    ri, cj = rows % 6, cols % 6
    within = 6 * ri + cj
    pos = np.full(rows.shape, -1, dtype=np.int64)
    diag = bi == bj
    pos[diag] = 36 * bi[diag] + within[diag]
    up = ~diag & (parent[bi] == bj)  # K[c, parent(c)]
    pos[up] = 36 * (nm + bi[up]) + within[up]
    lo = ~diag & (parent[bj] == bi)  # K[parent(c), c]
    pos[lo] = 36 * (2 * nm + bj[lo]) + within[lo]
    if np.any(pos < 0):
        raise ValueError("the tangent pattern is not that of the forest")
    return pos


@njit(cache=True, allocates=True)
def factorize(data, nm, parent, order, piv):
    """Block LU in place: D[c] → LU(D[c]), U[c] → D[c]⁻¹U[c], D[p] −= L[c] D[c]⁻¹ U[c].

    ``piv``: (6·nm,) row interchanges.  Returns −1 on success, else
    the body whose diagonal block is singular.  Blocks are addressed by offset
    into ``data`` (D[c] at 36c, U[c] at 36(nm + c), L[c] at 36(2nm + c)), not
    as views (see :func:`mbsim.kernels.dense.lu_block`).
    """
    pv = piv
    col = np.empty(6)
    for k in range(order.shape[0]):
        c = order[_u(k)]
        dc = 36 * c
        if dense.lu_block(data, dc, 6, pv, 6 * c) >= 0:
            return c
        p = parent[_u(c)]
        if p < 0:
            continue
        uc, lc, dp = 36 * (nm + c), 36 * (2 * nm + c), 36 * p
        for j in range(6):  # U[c] ← D[c]⁻¹ U[c], column by column
            for r in range(6):
                col[_u(r)] = data[_u(uc + 6 * r + j)]
            dense.lu_block_solve(data, dc, 6, pv, 6 * c, col, 0)
            for r in range(6):
                data[_u(uc + 6 * r + j)] = col[_u(r)]
        for r in range(6):  # D[p] −= L[c] U[c]
            for j in range(6):
                s = 0.0
                for q in range(6):
                    s += data[_u(lc + 6 * r + q)] * data[_u(uc + 6 * q + j)]
                data[_u(dp + 6 * r + j)] -= s
    return -1


@njit(cache=True, allocates=True)
def solve(data, nm, parent, order, piv, rhs):
    """Solve with the factors of :func:`factorize`; returns x."""
    x = np.empty(6 * nm)
    solve_into(data, nm, parent, order, piv, rhs, np.empty(18 * nm), x)
    return x


@njit(cache=True)
def solve_into(data, nm, parent, order, piv, rhs, work, out):
    """:func:`solve` into ``out`` (6·nm,), with ``work`` (18·nm values) as its scratch (flat arrays:
    a reshape in compiled code costs seconds of compilation)."""
    pv = piv
    wk = work
    n6 = 6 * nm
    b, y = 0, n6  # offsets of b and y in wk
    for i in range(n6):
        wk[_u(b + i)] = rhs[_u(i)]
    for k in range(order.shape[0]):  # forward: b[p] −= L[c] D[c]⁻¹ b[c]
        c = order[_u(k)]
        for r in range(6):
            wk[_u(y + 6 * c + r)] = wk[_u(b + 6 * c + r)]
        dense.lu_block_solve(data, 36 * c, 6, pv, 6 * c, wk, y + 6 * c)
        p = parent[_u(c)]
        if p >= 0:
            lc = 36 * (2 * nm + c)
            for r in range(6):
                s = 0.0
                for q in range(6):
                    s += data[_u(lc + 6 * r + q)] * wk[_u(y + 6 * c + q)]
                wk[_u(b + 6 * p + r)] -= s
    for k in range(order.shape[0] - 1, -1, -1):  # backward: x[c] = D[c]⁻¹b[c] − (D[c]⁻¹U[c]) x[p]
        c = order[_u(k)]
        p = parent[_u(c)]
        uc = 36 * (nm + c)
        for r in range(6):
            s = wk[_u(y + 6 * c + r)]
            if p >= 0:
                for q in range(6):
                    s -= data[_u(uc + 6 * r + q)] * out[_u(6 * p + q)]
            out[_u(6 * c + r)] = s
