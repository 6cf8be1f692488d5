"""Block sparse LU for coupling graphs with cycles (closed chains, rings, loops), compiled.

The tangent is a matrix of blocks: one diagonal block per unknown group (a
moving body's 6 unknowns, or a body with the own unknowns of the element
that joins it to its parent -- a joint's multipliers --, or the own unknowns
of an element closing a loop) and an off-diagonal pair per coupled pair of
groups.  A group's unknowns need not be contiguous in the global numbering:
``sym`` holds the position of every global unknown in block order.  :func:`symbolic` picks
an elimination order once per model (minimum degree on the block graph, which
eliminates the bodies of a chain or tree leaves first with no fill and a ring
with O(N) fill), finds the fill, and lays every block of the filled pattern
out in one flat array.  :func:`factorize` is then right-looking block LU with
partial pivoting inside each diagonal block -- what :mod:`mbsim.kernels.tree`
does for forests, with fill -- and :func:`solve_into` the two block
substitutions.  The pivoting is that of the tree LU: the diagonal blocks carry
the mass terms m/(βΔt²), J/(βΔt²) and dominate.

Everything the numeric phase needs is in one int64 array ``sym`` (see
:func:`symbolic`), so the compiled step loop takes one argument for it.
"""
from __future__ import annotations

import heapq

import numpy as np

from . import dense, njit
from . import unsigned as _u  # no wrap-around test per index (mbsim.kernels.unsigned)

# Header of ``sym``: the number of blocks, of (pivot, later neighbour) pairs, of update triples.
_NB, _NL, _NU = 0, 1, 2
_HEADER = 3


def minimum_degree(nb: int, adj: list[set], sizes=None, ext: dict | None = None) -> list[int]:
    """An elimination order by minimum degree, with the fill it creates.  Ties: the pivot whose
    elimination costs the fewest multiplications, given the sizes of the blocks and the extents of
    the off-diagonal blocks ``ext`` (see :func:`symbolic`), then the lowest index.  (The cost decides
    which end of a chain of joints goes first: eliminating a body with its parent joint's multipliers
    updates the parent's 6 body unknowns, eliminating the root first updates the child's 11.)"""
    g = [set(a) for a in adj]
    ext = {} if ext is None else {key: list(v) for key, v in ext.items()}

    def cost(k):
        if sizes is None:
            return 0
        n = int(sizes[k])
        c = 0
        for i in g[k]:
            c += n * n * ext.get((k, i), (n, int(sizes[i])))[1]
            for j in g[k]:
                c += n * ext.get((i, k), (int(sizes[i]), n))[0] * ext.get((k, j), (n, int(sizes[j])))[1]
        return c

    heap = [(len(g[i]), cost(i), i) for i in range(nb)]
    heapq.heapify(heap)
    done = np.zeros(nb, dtype=bool)
    key = [(h[0], h[1]) for h in sorted(heap, key=lambda h: h[2])]
    order = []
    while heap:
        deg, c, k = heapq.heappop(heap)
        if done[k] or (deg, c) != key[k]:
            continue  # stale entry
        done[k] = True
        order.append(k)
        nbrs = g[k]
        for i in nbrs:
            g[i].discard(k)
            g[i].update(j for j in nbrs if j != i)
            if sizes is not None:
                for j in nbrs:
                    if j != i:
                        e = ext.setdefault((i, j), [0, 0])
                        e[0] = max(e[0], ext.get((i, k), (int(sizes[i]), 0))[0])
                        e[1] = max(e[1], ext.get((k, j), (0, int(sizes[j])))[1])
        for i in nbrs:
            key[i] = (len(g[i]), cost(i))
            heapq.heappush(heap, (*key[i], i))
        g[k] = set()
    return order


def symbolic(sizes, edges, order=None, last=(), dofs=None, extents=None) -> tuple[np.ndarray, int, np.ndarray]:
    """The structure of the factorization of a block matrix.

    Parameters
    ----------
    sizes : (nb,) int
        Size of each diagonal block (6 for a body).
    edges : (m, 2) int
        Coupled pairs of blocks (duplicates and self pairs allowed).
    order : sequence of int, optional
        Elimination order; minimum degree when not given.
    last : sequence of int
        Blocks that minimum degree must leave to the end (in this order): those with no
        pivot of their own (the multipliers of an element closing a loop, whose diagonal block
        is zero until a body they act on has been eliminated).
    dofs : (ndof,) int, optional
        The global unknowns of the blocks in block order (block k's are
        ``dofs[start[k]:start[k+1]]``); the identity when not given.
    extents : (m, 4) int, optional
        ``(i, j, rows, cols)``: only the first ``rows`` rows and ``cols`` columns of the
        off-diagonal block (i, j) hold nonzeros (:func:`pattern_extents`); every block is full when
        not given (or not listed).  The factorization then skips what stays zero: a body grouped
        with its parent joint's multipliers couples to its parent's block through the parent's body
        unknowns alone (the first 6 of its block), so the update of the parent is 6×6, not 11×11.

    Returns
    -------
    sym : int64 array
        ``[nb, nl, nu, order (nb), start (nb+1), diag (nb), lptr (nb+1), lblk (nl), l_ik (nl),
        u_ki (nl), uptr (nb+1), ui (nu), uj (nu), o_ik (nu), o_kj (nu), o_ij (nu), perm (ndof),
        lrows (nl), ucols (nl), urows (nu), ucols2 (nu), ld_ij (nu)]``: for the
        pivot at elimination position p (block k = order[p]), its later neighbours i are
        ``lblk[lptr[p]:lptr[p+1]]`` with blocks (i, k) at ``l_ik`` and (k, i) at ``u_ki``, and the
        updates A_ij −= A_ik U_kj are the triples ``(o_ik, o_kj, o_ij)`` of ``uptr[p]:uptr[p+1]``
        (``ui``, ``uj`` their block rows and columns).  ``start`` are the first unknowns of the
        blocks (in block order), ``diag`` the offsets of the diagonal blocks, ``perm[r]`` the
        position in block order of global unknown r; ``ld_ij`` the row length of the block each update
        writes.  Storage is compact: U_ki (k eliminated before i) keeps the ``ucols`` leading columns
        of its rows (its row length), A_ik only its ``lrows`` leading rows, so that a chain of bodies
        with their parent joints' multipliers stores 11×6 and 6×11 coupling blocks, not 11×11.
    size : int
        Values of the flat block storage.
    offsets : dict (i, j) -> (offset, row length)
        Where each block of the filled pattern lives (for :func:`block_position`).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    nb = len(sizes)
    adj = [set() for _ in range(nb)]
    for a, b in np.asarray(edges, dtype=np.int64).reshape(-1, 2):
        if a != b:
            adj[a].add(int(b))
            adj[b].add(int(a))
    # the leading rows and columns of each off-diagonal block that can be nonzero (full by default)
    ext = {}
    for i in range(nb):
        for j in adj[i]:
            ext[i, j] = [int(sizes[i]), int(sizes[j])]
    if extents is not None:
        for i, j, nr, nc in np.asarray(extents, dtype=np.int64).reshape(-1, 4):
            if (int(i), int(j)) in ext:
                ext[int(i), int(j)] = [int(nr), int(nc)]
    if order is None:
        late = [int(k) for k in last]
        skip = set(late)
        order = [k for k in minimum_degree(nb, adj, sizes, ext) if k not in skip] + late
    else:
        order = [int(k) for k in order]
    pos = np.empty(nb, dtype=np.int64)
    pos[order] = np.arange(nb)
    # symbolic elimination: the later neighbours of each pivot, fill included; A_ij −= A_ik U_kj
    # reaches the rows of A_ik and the columns of A_kj (U_kj = D_kk⁻¹ A_kj: all rows, A_kj's columns)
    g = [set(a) for a in adj]
    later = []
    for k in order:
        nbrs = sorted(g[k], key=lambda i: pos[i])
        later.append(nbrs)
        for i in nbrs:
            g[i].discard(k)
            g[i].update(j for j in nbrs if j != i)
            for j in nbrs:
                if j != i:
                    e = ext.setdefault((i, j), [0, 0])
                    e[0] = max(e[0], ext[i, k][0])
                    e[1] = max(e[1], ext[k, j][1])
    # Storage: a diagonal block whole; an off-diagonal block (i, j) with i eliminated first (a U block:
    # D_ii⁻¹ fills all its rows) all rows and its leading ext columns; with j eliminated first (an L
    # block, read as it is) its leading ext rows and all columns.  Row-major, its row length ``ld``.
    offsets, size = {}, 0

    def place(i, j):
        nonlocal size
        if (i, j) not in offsets:
            if i == j:
                nr, ld = int(sizes[i]), int(sizes[j])
            elif pos[i] < pos[j]:
                nr, ld = int(sizes[i]), int(ext[i, j][1])
            else:
                nr, ld = int(ext[i, j][0]), int(sizes[j])
            offsets[i, j] = (size, ld)
            size += nr * ld
        return offsets[i, j][0]

    def ld(i, j):
        place(i, j)
        return offsets[i, j][1]

    # laid out in elimination order, each pivot's diagonal block followed by its L blocks, and after them
    # every pivot's U blocks in reverse elimination order: the forward substitution then reads the first
    # part in one ascending sweep, and the backward one, going down the pivots, the second part in one
    # ascending sweep too (the order of the blocks in memory is what the hardware prefetches; at 10 000
    # links the 20 MB of factors are read from memory in every solve: interleaved, the solve took twice
    # as long)
    for k, nbrs in zip(order, later):
        place(k, k)
        for i in nbrs:
            place(i, k)
    for k, nbrs in zip(order[::-1], later[::-1]):
        for i in nbrs:
            place(k, i)
    diag = [place(k, k) for k in range(nb)]
    lblk, lik, uki, lptr, lrows, ucols = [], [], [], [0], [], []
    ui, uj, oik, okj, oij, uptr, urows, ucols2, ldij = [], [], [], [], [], [0], [], [], []
    for k, nbrs in zip(order, later):
        for i in nbrs:
            lblk.append(i)
            lik.append(place(i, k))
            uki.append(place(k, i))
            lrows.append(ext[i, k][0])
            ucols.append(ext[k, i][1])
        for i in nbrs:
            for j in nbrs:
                ui.append(i)
                uj.append(j)
                oik.append(place(i, k))
                okj.append(place(k, j))
                oij.append(place(i, j))
                urows.append(ext[i, k][0])
                ucols2.append(ext[k, j][1])
                ldij.append(ld(i, j))
        lptr.append(len(lblk))
        uptr.append(len(ui))
    start = np.concatenate(([0], np.cumsum(sizes)))
    ndof = int(start[-1])
    perm = np.arange(ndof)
    if dofs is not None:
        perm[np.asarray(dofs, dtype=np.int64)] = np.arange(ndof)
    parts = [[nb, len(lblk), len(ui)], order, start, diag, lptr, lblk, lik, uki, uptr, ui, uj, oik, okj, oij, perm,
             lrows, ucols, urows, ucols2, ldij]
    sym = np.concatenate([np.asarray(p, dtype=np.int64).reshape(-1) for p in parts])
    return sym, size, offsets


def pattern_extents(rows, cols, blocks) -> np.ndarray:
    """The ``extents`` of :func:`symbolic` for a tangent pattern: ``(i, j, rows, cols)`` per off-diagonal
    block, the leading rows and columns (in block order: a block's unknowns in their global order) that
    hold its entries (global unknowns ``rows``, ``cols``; ``blocks`` the block of every unknown)."""
    blocks = np.asarray(blocks, dtype=np.int64)
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    sizes = np.bincount(blocks)
    start = np.concatenate(([0], np.cumsum(sizes)))
    perm = np.empty(len(blocks), dtype=np.int64)
    perm[np.argsort(blocks, kind="stable")] = np.arange(len(blocks))
    bi, bj = blocks[rows], blocks[cols]
    off = bi != bj
    bi, bj = bi[off], bj[off]
    li, lj = perm[rows[off]] - start[bi] + 1, perm[cols[off]] - start[bj] + 1
    key = bi * len(sizes) + bj
    ukey, inv = np.unique(key, return_inverse=True)
    nr, nc = np.zeros(len(ukey), np.int64), np.zeros(len(ukey), np.int64)
    np.maximum.at(nr, inv, li)
    np.maximum.at(nc, inv, lj)
    return np.stack((ukey // len(sizes), ukey % len(sizes), nr, nc), axis=1)


def block_position(rows, cols, sizes, offsets: dict, sym=None) -> np.ndarray:
    """Position in the flat block storage of every (row, col) entry of the tangent pattern (global
    unknowns, put in block order by the ``perm`` of ``sym`` when given)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    start = np.concatenate(([0], np.cumsum(sizes)))
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    if sym is not None:
        o_perm = getattr(_parts, "py_func", _parts)(sym)[14]  # a Kernel, or its function when interpreted
        perm = sym[o_perm:o_perm + int(start[-1])]
        rows, cols = perm[rows], perm[cols]
    bi = np.searchsorted(start, rows, side="right") - 1
    bj = np.searchsorted(start, cols, side="right") - 1
    nb = len(sizes)
    keys = np.array([i * nb + j for i, j in offsets], dtype=np.int64)
    vals = np.array(list(offsets.values()), dtype=np.int64).reshape(-1, 2)
    by = np.argsort(keys)
    keys, vals = keys[by], vals[by]
    want = bi * nb + bj
    at = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
    if not np.array_equal(keys[at], want):
        raise ValueError("the tangent pattern has a block outside the symbolic structure")
    ri, cj = rows - start[bi], cols - start[bj]
    if np.any(cj >= vals[at, 1]):
        raise ValueError("the tangent pattern has an entry outside its block's extent")
    return vals[at, 0] + ri * vals[at, 1] + cj


@njit(cache=True)
def _parts(sym):
    """Offsets of the parts of ``sym`` (see :func:`symbolic`)."""
    nb, nl, nu = sym[_NB], sym[_NL], sym[_NU]
    o_order = _HEADER
    o_start = o_order + nb
    o_diag = o_start + nb + 1
    o_lptr = o_diag + nb
    o_lblk = o_lptr + nb + 1
    o_lik = o_lblk + nl
    o_uki = o_lik + nl
    o_uptr = o_uki + nl
    o_ui = o_uptr + nb + 1
    o_uj = o_ui + nu
    o_oik = o_uj + nu
    o_okj = o_oik + nu
    o_oij = o_okj + nu
    o_perm = o_oij + nu
    o_lrows = o_perm + sym[o_start + nb]
    o_ucols = o_lrows + nl
    o_urows = o_ucols + nl
    o_ucols2 = o_urows + nu
    o_ldij = o_ucols2 + nu
    return (nb, o_order, o_start, o_diag, o_lptr, o_lblk, o_lik, o_uki, o_uptr, o_ui, o_uj, o_oik, o_okj, o_oij,
            o_perm, o_lrows, o_ucols, o_urows, o_ucols2, o_ldij)


@njit(cache=True)
def factorize(data, sym, piv):
    """Block LU in place (pivot by pivot: D_kk → LU(D_kk), U_kj ← D_kk⁻¹ A_kj, A_ij −= A_ik U_kj over its
    later neighbours i, j, on the rows and columns that can be nonzero).  ``piv``: one row interchange per
    unknown.  Returns −1 on success, else the block whose diagonal block is singular."""
    (nb, o_order, o_start, o_diag, o_lptr, o_lblk, o_lik, o_uki, o_uptr, o_ui, o_uj, o_oik, o_okj,
     o_oij, _, o_lrows, o_ucols, o_urows, o_ucols2, o_ldij) = _parts(sym)
    for p in range(nb):
        k = sym[_u(o_order + p)]
        sk = sym[_u(o_start + k)]
        n = sym[_u(o_start + k + 1)] - sk
        dk = sym[_u(o_diag + k)]
        if dense.lu_block(data, dk, n, piv, sk) >= 0:
            return k
        for e in range(sym[_u(o_lptr + p)], sym[_u(o_lptr + p + 1)]):  # U_ki ← D_kk⁻¹ A_ki, its nonzero columns
            mc = sym[_u(o_ucols + e)]  # (also its row length: compact storage)
            dense.lu_block_solve_columns(data, dk, n, piv, sk, data, sym[_u(o_uki + e)], mc, mc)
        for e in range(sym[_u(o_uptr + p)], sym[_u(o_uptr + p + 1)]):  # A_ij −= A_ik U_kj
            aik, ukj, aij = sym[_u(o_oik + e)], sym[_u(o_okj + e)], sym[_u(o_oij + e)]
            nc = sym[_u(o_ucols2 + e)]  # U_kj's columns, its row length; A_ik's: n
            lj = sym[_u(o_ldij + e)]
            for r in range(sym[_u(o_urows + e)]):
                for c in range(nc):
                    s = 0.0
                    for q in range(n):
                        s += data[_u(aik + n * r + q)] * data[_u(ukj + nc * q + c)]
                    data[_u(aij + lj * r + c)] -= s
    return -1


@njit(cache=True)
def solve_into(data, sym, piv, rhs, work, out):
    """x with A x = rhs from the factors of :func:`factorize`, into ``out``; ``work``: as many values
    as unknowns."""
    (nb, o_order, o_start, o_diag, o_lptr, o_lblk, o_lik, o_uki, o_uptr, o_ui, o_uj, o_oik, o_okj,
     o_oij, o_perm, o_lrows, o_ucols, _, _, _) = _parts(sym)
    ndof = sym[_u(o_start + nb)]
    for r in range(ndof):
        work[_u(sym[_u(o_perm + r)])] = rhs[_u(r)]
    for p in range(nb):  # forward: y_k = D_kk⁻¹ b_k, b_i −= A_ik y_k
        k = sym[_u(o_order + p)]
        sk = sym[_u(o_start + k)]
        n = sym[_u(o_start + k + 1)] - sk
        dense.lu_block_solve(data, sym[_u(o_diag + k)], n, piv, sk, work, sk)
        for e in range(sym[_u(o_lptr + p)], sym[_u(o_lptr + p + 1)]):
            si = sym[_u(o_start + sym[_u(o_lblk + e)])]
            a = sym[_u(o_lik + e)]
            for r in range(sym[_u(o_lrows + e)]):  # (each sum in two chains, even and odd terms, side by side)
                ar = a + n * r
                s0 = 0.0
                s1 = 0.0
                q = 0
                while q + 1 < n:
                    s0 += data[_u(ar + q)] * work[_u(sk + q)]
                    s1 += data[_u(ar + q + 1)] * work[_u(sk + q + 1)]
                    q += 2
                if q < n:
                    s0 += data[_u(ar + q)] * work[_u(sk + q)]
                work[_u(si + r)] -= s0 + s1
    for p in range(nb - 1, -1, -1):  # backward, in place: x_k = y_k − Σ U_ki x_i
        k = sym[_u(o_order + p)]
        sk = sym[_u(o_start + k)]
        n = sym[_u(o_start + k + 1)] - sk
        for e in range(sym[_u(o_lptr + p)], sym[_u(o_lptr + p + 1)]):
            si = sym[_u(o_start + sym[_u(o_lblk + e)])]
            u = sym[_u(o_uki + e)]
            mc = sym[_u(o_ucols + e)]  # U_ki's columns, its row length
            for r in range(n):
                ur = u + mc * r
                s0 = 0.0
                s1 = 0.0
                q = 0
                while q + 1 < mc:
                    s0 += data[_u(ur + q)] * work[_u(si + q)]
                    s1 += data[_u(ur + q + 1)] * work[_u(si + q + 1)]
                    q += 2
                if q < mc:
                    s0 += data[_u(ur + q)] * work[_u(si + q)]
                work[_u(sk + r)] -= s0 + s1
    for r in range(ndof):
        out[_u(r)] = work[_u(sym[_u(o_perm + r)])]
