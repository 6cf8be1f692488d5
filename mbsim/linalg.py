"""The one place that decides how the Newton system ``K Δu = R`` is solved.

Small systems go to LAPACK (dense LU); larger ones to SuperLU on the CSC
pattern from :mod:`mbsim.assembly` with a COLAMD fill-reducing ordering.
The tangent is not symmetric (THEORY §5), so no Cholesky.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla

# Up to this many unknowns a dense LU beats SuperLU's per-call overhead
# (measured with benchmarks/chain.py: crossover near 15–25 bodies).
DENSE_MAX_DOFS = 120


class SingularMatrix(Exception):
    """The tangent could not be factorized."""


class LinearSolver:
    """Factorize-and-solve for a fixed CSC pattern; counts factorizations (``nlu``)."""

    def __init__(self, ndof: int, indptr: np.ndarray, indices: np.ndarray):
        self.ndof = ndof
        self.indptr = indptr
        self.indices = indices
        self.dense = ndof <= DENSE_MAX_DOFS
        if self.dense:
            cols = np.repeat(np.arange(ndof), np.diff(indptr))
            self._flat = indices.astype(np.int64) * ndof + cols  # row-major position
        self.nlu = 0

    @property
    def kind(self) -> str:
        return "dense LU (LAPACK)" if self.dense else "sparse LU (SuperLU, COLAMD)"

    def solve(self, data: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """Solve ``K x = rhs`` with K given by its CSC ``data``; raise SingularMatrix on failure."""
        self.nlu += 1
        n = self.ndof
        try:
            if self.dense:
                A = np.zeros(n * n)
                A[self._flat] = data
                lu = scipy.linalg.lu_factor(A.reshape(n, n), check_finite=False)
                if np.any(np.diag(lu[0]) == 0.0):
                    raise SingularMatrix("zero pivot in dense LU")
                return scipy.linalg.lu_solve(lu, rhs, check_finite=False)
            K = sp.csc_matrix((data, self.indices, self.indptr), shape=(n, n))
            return spla.splu(K, permc_spec="COLAMD").solve(rhs)
        except (RuntimeError, np.linalg.LinAlgError, ValueError) as exc:
            raise SingularMatrix(str(exc)) from exc
