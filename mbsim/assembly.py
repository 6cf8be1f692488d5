"""Scatter of batched local residuals and tangents into the global system.

Everything structural is computed once per model: the global unknown of
every local entry, the sparsity pattern of the tangent (in CSC order, which
the dense strategy reads) and, for every local tangent entry, its position
in the CSC data array.  An iteration then only runs ``np.bincount`` over
precomputed positions — no COO→CSR conversion, no Python loop over bodies or
elements.

Local order per connector is ``[Δr_A, Δθ_A, Δr_B, Δθ_B]``; a fixed body's
entries are dropped.  Per moving body the unknowns are ``[Δr, Δθ]``.
"""
from __future__ import annotations

import numpy as np

from .model.model import Model


def element_dofs(model: Model) -> np.ndarray:
    """Global unknown of each local entry of every element instance, ``(n, 12)``; −1 for a fixed
    body's entries."""
    nm = model.n_moving
    el = model.elements
    out = np.empty((el.n, 12), dtype=np.int64)
    for side, body in enumerate((el.body[:, 0], el.body[:, 1])):
        base = np.where(body < nm, 6 * body, -1)
        for j in range(6):
            out[:, 6 * side + j] = np.where(base >= 0, base + j, -1)
    return out


class Assembler:
    """Precomputed scatter maps from local blocks to the global residual and CSC tangent.

    Attributes
    ----------
    ndof : int
    indptr, indices : int arrays
        CSC structure of the tangent (column pointers, row indices).
    nnz : int
    """

    def __init__(self, model: Model):
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
        n = model.elements.n
        d = self.el_dofs = element_dofs(model)
        self._res_mask = (d >= 0).ravel()
        self._res_idx = d.ravel()[self._res_mask]
        R = np.broadcast_to(d[:, :, None], (n, 12, 12)).ravel()
        C = np.broadcast_to(d[:, None, :], (n, 12, 12)).ravel()
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
        # instances (n, 144) with −1 where an entry is dropped (a fixed body's)
        nb = self._n_body_entries
        # int32 halves the memory read per scatter (large models are bound by memory traffic)
        self.body_pos = self.positions[:nb].reshape(-1, 18).astype(np.int32)
        kp = np.full(self._tan_mask.size, -1, dtype=np.int32)
        kp[self._tan_mask] = self.positions[nb:]
        self.el_pos = kp.reshape(-1, 144)
