"""Scatter of batched local residuals and tangents into the global system.

Everything structural is computed once per model: the global unknown of
every local entry, the sparsity pattern of the tangent (in CSC order, which
SuperLU factorizes directly) and, for every local tangent entry, its position
in the CSC data array.  An iteration then only runs ``np.bincount`` over
precomputed positions — no COO→CSR conversion, no Python loop over bodies or
connectors (a loop over the few connector *kinds* remains).

Local order per connector is ``[Δr_A, Δθ_A, Δr_B, Δθ_B]``; a fixed body's
entries are dropped.  Per moving body the unknowns are ``[Δr, Δθ]``.
"""
from __future__ import annotations

import numpy as np

from .model.model import Model


def connector_dofs(model: Model, kind) -> np.ndarray:
    """Global unknown of each local entry, ``(n, 12)``; −1 for a fixed body's entries."""
    nm = model.n_moving
    out = np.empty((kind.n, 12), dtype=np.int64)
    for side, body in enumerate((kind.ia, kind.ib)):
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

        # Connector blocks.
        self.kind_dofs = []
        self.kind_res_mask = []
        self.kind_res_idx = []
        self.kind_tan_mask = []
        rows_c, cols_c = [], []
        for kind in model.kinds:
            d = connector_dofs(model, kind)
            self.kind_dofs.append(d)
            rmask = (d >= 0).ravel()
            self.kind_res_mask.append(rmask)
            self.kind_res_idx.append(d.ravel()[rmask])
            R = np.broadcast_to(d[:, :, None], (kind.n, 12, 12)).ravel()
            C = np.broadcast_to(d[:, None, :], (kind.n, 12, 12)).ravel()
            tmask = (R >= 0) & (C >= 0)
            self.kind_tan_mask.append(tmask)
            rows_c.append(R[tmask])
            cols_c.append(C[tmask])

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
        # pairs of moving bodies that a connector couples (the linear solver's graph)
        pairs = [np.stack((k.ia, k.ib), axis=1) for k in model.kinds]
        pairs = np.concatenate(pairs) if pairs else np.zeros((0, 2), np.intp)
        self.coupling = pairs[(pairs < nm).all(axis=1)]
        self.use_storage(np.arange(self.nnz, dtype=np.int64), self.nnz)

    def use_storage(self, storage_map: np.ndarray, size: int) -> None:
        """Scatter into the linear solver's storage: entry j of the CSC pattern lives at
        ``storage_map[j]`` of an array of ``size`` values."""
        self.size = size
        self.positions = np.asarray(storage_map, dtype=np.int64)[self._pattern_index]
        # the same positions per block, for the compiled scatter: bodies (nm, 18) and every
        # connector kind (n, 144) with −1 where an entry is dropped (a fixed body's)
        nb = self._n_body_entries
        # int32 halves the memory read per scatter (large models are bound by memory traffic)
        self.body_pos = self.positions[:nb].reshape(-1, 18).astype(np.int32)
        self.kind_pos = []
        start = nb
        for mask in self.kind_tan_mask:
            kp = np.full(mask.size, -1, dtype=np.int32)
            count = int(mask.sum())
            kp[mask] = self.positions[start:start + count]
            start += count
            self.kind_pos.append(kp.reshape(-1, 144))

    # ------------------------------------------------------------------
    def residual(self, R_body: np.ndarray, evals) -> np.ndarray:
        """Global residual from body residuals ``(n_moving, 6)`` and element evaluations."""
        out = R_body.reshape(-1).copy()
        for idx, mask, ev in zip(self.kind_res_idx, self.kind_res_mask, evals):
            out += np.bincount(idx, weights=ev.residual.ravel()[mask], minlength=self.ndof)
        return out

    def force_scale(self, Q_body: np.ndarray, evals) -> np.ndarray:
        """Entry-wise sum of absolute contributions: the force scale of the convergence test."""
        out = np.abs(Q_body).reshape(-1)
        for idx, mask, ev in zip(self.kind_res_idx, self.kind_res_mask, evals):
            out += np.bincount(idx, weights=np.abs(ev.residual.ravel()[mask]), minlength=self.ndof)
        return out

    def tangent_data(self, K_body_rr: np.ndarray, K_body_tt: np.ndarray, evals) -> np.ndarray:
        """CSC data of the global tangent.

        Parameters
        ----------
        K_body_rr, K_body_tt : (n_moving, 3, 3)
            Translational and rotational body blocks.
        evals : list of ElementEval
            With ``tangent`` set, in ``model.kinds`` order.
        """
        nm = K_body_rr.shape[0]
        vals = [np.concatenate((K_body_rr.reshape(nm, 9), K_body_tt.reshape(nm, 9)), axis=1).ravel()]
        vals += [ev.tangent.ravel()[mask] for mask, ev in zip(self.kind_tan_mask, evals)]
        return np.bincount(self.positions, weights=np.concatenate(vals), minlength=self.size)
