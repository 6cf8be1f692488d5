"""The scatter of the elements' and bodies' local residuals and tangent blocks into the global system.

Everything structural is computed once per model: the global unknown of
every local entry, the sparsity pattern of the tangent (in CSC order, which
the dense strategy reads) and, for every local tangent entry, its position
in the CSC data array.  An iteration then only runs ``np.bincount`` over
precomputed positions — no COO→CSR conversion, no Python loop over bodies or
elements.

Local order per element instance is ``[Δr_A, Δθ_A, Δr_B, Δθ_B]`` and then its
own unknowns (:mod:`mbsim.elements.base`); a fixed body's entries are dropped.
Per moving body the unknowns are ``[Δr, Δθ]``; the elements' own unknowns
follow those of all moving bodies.
"""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels import unsigned as _u


def element_dofs(model) -> np.ndarray:
    """Global unknown of each local entry of every element instance, ``(n, W)`` (W =
    ``model.elements.width``); −1 for a fixed body's entries and past an instance's own unknowns."""
    nm = model.n_moving
    el = model.elements
    out = np.full((el.n, el.width), -1, dtype=np.int64)
    for side, body in enumerate((el.body[:, 0], el.body[:, 1])):
        base = np.where(body < nm, 6 * body, -1)
        for j in range(6):
            out[:, 6 * side + j] = np.where(base >= 0, base + j, -1)
    e = el.unknown_element  # own unknown u of instance e is global unknown 6·nm + u
    local = np.arange(el.n_unknowns) - el.first[e]
    out[e, 12 + local] = 6 * nm + np.arange(el.n_unknowns)
    return out


def unknown_blocks(model) -> tuple[np.ndarray, list]:
    """The diagonal block of every unknown for the block LU, and the blocks to eliminate last.

    A moving body's 6 unknowns are a block, together with the own unknowns of the element that
    joins it to its parent (a joint's multipliers): the elements with own unknowns are oriented
    from the bodies they tie to a fixed body (or world), breadth first, each given to the body it
    reaches first; a group of bodies tied to nothing fixed starts from its first element's body B.
    An element that closes a loop (both its bodies already have one) keeps its own unknowns as a
    block of their own, eliminated last (its diagonal block is zero).  Returns ``(blocks, last)``:
    ``blocks`` (ndof,) block ids, bodies' first (block i = moving body i).
    """
    from collections import deque
    nm, el = model.n_moving, model.elements
    counts = np.bincount(el.unknown_element, minlength=el.n)
    owners = [int(e) for e in np.flatnonzero(counts)]  # in the order their unknowns are numbered
    group = {}  # element -> body whose block takes its own unknowns
    taken = np.zeros(nm, dtype=bool)
    at = [[] for _ in range(nm)]
    for e in owners:
        for b in el.body[e]:
            if b < nm:
                at[b].append(e)
    queue = deque()

    def give(e, b):
        group[e] = int(b)
        taken[b] = True
        queue.append(int(b))

    def spread():
        while queue:
            u = queue.popleft()
            for e in at[u]:
                if e in group:
                    continue
                for b in el.body[e]:
                    if b < nm and not taken[b]:
                        give(e, b)
                        break

    for e in owners:  # tied to a fixed body: the moving side is the child
        a, b = el.body[e]
        moving = [x for x in (b, a) if x < nm]
        if len(moving) == 1 and not taken[moving[0]] and e not in group:
            give(e, moving[0])
    spread()
    for e in owners:  # groups tied to nothing fixed
        if e not in group:
            for b in el.body[e][::-1]:
                if b < nm and not taken[b]:
                    give(e, b)
                    spread()
                    break
    blocks, last = [np.repeat(np.arange(nm), 6)], []
    for e in owners:
        if e not in group:
            last.append(nm + len(last))
        blocks.append(np.full(counts[e], group.get(e, nm + len(last) - 1)))
    return np.concatenate(blocks).astype(np.int64), last


class Assembler:
    """Precomputed scatter maps from local blocks to the global residual and CSC tangent.

    Attributes
    ----------
    ndof : int
    indptr, indices : int arrays
        CSC structure of the tangent (column pointers, row indices).
    nnz : int
    """

    def __init__(self, model):
        self.model = model
        ndof = self.ndof = model.ndof
        nm = model.n_moving

        # Body blocks: the translational 3×3 and rotational 3×3 diagonal blocks.
        base = 6 * np.arange(nm)
        ii, jj = np.meshgrid(np.arange(3), np.arange(3), indexing="ij")
        rows_b = np.concatenate([(base[:, None, None] + ii).reshape(nm, 9),
                                 (base[:, None, None] + 3 + ii).reshape(nm, 9)], axis=1)
        cols_b = np.concatenate([(base[:, None, None] + jj).reshape(nm, 9),
                                 (base[:, None, None] + 3 + jj).reshape(nm, 9)], axis=1)

        # Element blocks.
        n, w = model.elements.n, model.elements.width
        d = self.el_dofs = element_dofs(model)
        R = np.broadcast_to(d[:, :, None], (n, w, w)).ravel()
        C = np.broadcast_to(d[:, None, :], (n, w, w)).ravel()
        self._tan_mask = (R >= 0) & (C >= 0)
        rows_c, cols_c = [R[self._tan_mask]], [C[self._tan_mask]]

        rows = np.concatenate([rows_b.ravel()] + rows_c)
        cols = np.concatenate([cols_b.ravel()] + cols_c)
        key = cols.astype(np.int64) * ndof + rows  # CSC order: by column, then row
        ukey, pos = np.unique(key, return_inverse=True)
        self.nnz = len(ukey)
        self.indices = (ukey % ndof).astype(np.int32) if ndof else np.zeros(0, np.int32)
        ucol = ukey // ndof if ndof else ukey
        self.indptr = np.searchsorted(ucol, np.arange(ndof + 1)).astype(np.int32)
        self.rows = self.indices.astype(np.int64)
        self.cols = ucol.astype(np.int64)
        # one position array for all contributions, in the order values are concatenated
        self._pattern_index = pos.ravel()
        self._n_body_entries = rows_b.size
        # pairs of moving bodies that an element couples (the linear solver's graph)
        pairs = model.elements.body
        self.coupling = pairs[(pairs < nm).all(axis=1)]
        self.use_storage(np.arange(self.nnz, dtype=np.int64), self.nnz)

    def use_storage(self, storage_map: np.ndarray, size: int) -> None:
        """Scatter into the linear solver's storage: entry j of the CSC pattern lives at
        ``storage_map[j]`` of an array of ``size`` values."""
        self.size = size
        self.positions = np.asarray(storage_map, dtype=np.int64)[self._pattern_index]
        # the same positions per block, for the compiled scatter: bodies (nm, 18) and element
        # instances (n, W·W) with −1 where an entry is dropped (a fixed body's, or past the own unknowns)
        nb = self._n_body_entries
        # int32 halves the memory read per scatter (large models are bound by memory traffic)
        self.body_pos = self.positions[:nb].reshape(-1, 18).astype(np.int32)
        kp = np.full(self._tan_mask.size, -1, dtype=np.int32)
        kp[self._tan_mask] = self.positions[nb:]
        self.el_pos = kp.reshape(-1, self.model.elements.width ** 2)


# ------------------------------------------------------------------------------------------------
# compiled scatter
# ------------------------------------------------------------------------------------------------
@njit(cache=True)
def add_block(K, ke, pos, e, data):
    """``data[pos[e]] += K[ke]`` (entries −1 of pos: dropped); K (·, W, W), pos (·, W·W)."""
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


@njit(cache=True)
def scatter_one(dofs, e, res, i, R, Q):
    """R[dofs[e]] += res[i] and Q[dofs[e]] += |res[i]| (−1: dropped): instance e, whose rows are row i of
    ``res``, as soon as they are known (they are still in the processor's cache then)."""
    ue, ui = _u(e), _u(i)
    for j in range(dofs.shape[1]):
        d = dofs[ue, _u(j)]
        if d >= 0:
            v = res[ui, _u(j)]
            R[_u(d)] += v
            Q[_u(d)] += abs(v)


@njit(cache=True)
def scatter_forces(dofs, e, F, R, Q):
    """R[dofs[e, 0:12]] += F and Q[…] += |F| (−1: dropped): the forces about the centres of instance e
    (four 3-tuples, :func:`mbsim.mechanics.chain.body_forces`), straight from the registers."""
    ue = _u(e)
    for k in range(4):
        f = F[k]
        for j in range(3):
            d = dofs[ue, _u(3 * k + j)]
            if d >= 0:
                R[_u(d)] += f[j]
                Q[_u(d)] += abs(f[j])


@njit(cache=True)
def scatter_residual(dofs, res, R, Q):
    """R[dofs] += res and Q[dofs] += |res| for the local entries of the element instances (dofs, res:
    (n, W); −1: dropped)."""
    w = dofs.shape[1]
    if w == 12:  # no element with own unknowns: a constant bound, which the compiler unrolls
        for e in range(dofs.shape[0]):
            for j in range(12):
                d = dofs[e, j]
                if d >= 0:
                    R[d] += res[e, j]
                    Q[d] += abs(res[e, j])
        return
    for e in range(dofs.shape[0]):
        for j in range(w):
            d = dofs[e, j]
            if d >= 0:
                R[d] += res[e, j]
                Q[d] += abs(res[e, j])


@njit(cache=True)
def scatter_bodies(pos, krr, Ktt, data):
    """data[pos] += the body blocks: k_rr·I (krr (nm,)) and K_θθ (nm, 3, 3); pos (nm, 18)."""
    for i in range(pos.shape[0]):
        for r in range(3):
            for q in range(3):
                data[pos[i, 3 * r + q]] += krr[i] if r == q else 0.0
                data[pos[i, 9 + 3 * r + q]] += Ktt[i, r, q]
