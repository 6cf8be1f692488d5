"""The one place that decides how the Newton system ``K Δu = R`` is solved.

Three strategies, chosen once per model from its coupling graph and size:

- **tree** — the moving bodies joined by connectors form a forest (a chain,
  a rope, a tree; any number of bodies): block LU without fill in O(N)
  (:mod:`mbsim.kernels.tree`, compiled).
- **dense** — other small systems (≤ DENSE_MAX_DOFS unknowns): LU with
  partial pivoting (LAPACK in the Python step, :mod:`mbsim.kernels.dense`
  in the compiled step loop).
- **sparse** — other large systems: SuperLU on the CSC pattern of
  :mod:`mbsim.assembly` with a COLAMD fill-reducing ordering, computed at
  the first factorization and reused for every later one.

The tangent is not symmetric (THEORY §5), so no Cholesky.  Each strategy
says where every entry of the tangent pattern lives in its own storage
(:attr:`LinearSolver.storage_map`), so the assembler scatters straight into
it.
"""
from __future__ import annotations

import numpy as np

# scipy (~0.25 s to import) is imported by the strategies that use it: a run whose steps all go
# through the compiled block tree LU never needs it.

# Up to this many unknowns a dense LU beats SuperLU's per-call overhead
# (measured with benchmarks/chain.py: crossover near 15–25 bodies).
DENSE_MAX_DOFS = 120


class SingularMatrix(Exception):
    """The tangent could not be factorized."""


class LinearSolver:
    """Factorize-and-solve for a fixed tangent pattern; counts factorizations (``nlu``).

    Parameters
    ----------
    ndof : int
    indptr, indices : int arrays
        CSC pattern of the tangent.
    rows, cols : int arrays
        The same pattern entry by entry (CSC order).
    coupling : (m, 2) int array, optional
        Pairs of moving bodies joined by an element; enables the tree strategy.
    allow_tree : bool
        Whether the tree strategy may be chosen (False: dense or sparse, as for a graph with loops).
    """

    def __init__(self, ndof: int, indptr, indices, rows=None, cols=None, coupling=None, allow_tree=True):
        self.ndof = ndof
        self.indptr = indptr
        self.indices = indices
        self.nlu = 0
        self._perm = None  # sparse strategy: column ordering found by the first factorization
        nm = ndof // 6
        self.tree = None
        if allow_tree and coupling is not None and nm > 0:
            from .kernels import tree
            self.tree = tree.forest(nm, np.asarray(coupling, dtype=np.int64).reshape(-1, 2))
        if self.tree is not None:
            from .kernels import tree
            self.strategy = "tree"
            self.nm = nm
            self.storage_size = 3 * 36 * nm
            self.storage_map = tree.block_position(np.asarray(rows), np.asarray(cols), nm, self.tree[0])
            self._piv = np.zeros((nm, 6), dtype=np.int64)
        else:
            self.strategy = "dense" if ndof <= DENSE_MAX_DOFS else "sparse"
            self.storage_size = len(indices)
            self.storage_map = np.arange(len(indices), dtype=np.int64)  # CSC data order itself
            if self.strategy == "dense":
                cols_ = np.repeat(np.arange(ndof), np.diff(indptr))
                self._flat = indices.astype(np.int64) * ndof + cols_  # row-major position

    @property
    def dense(self) -> bool:
        return self.strategy == "dense"

    @property
    def dense_positions(self) -> np.ndarray:
        """Dense strategy: row-major position in the n×n matrix of each entry of the storage."""
        return self._flat

    @property
    def kind(self) -> str:
        return {"tree": "block tree LU (no fill)", "dense": "dense LU (partial pivoting)",
                "sparse": "sparse LU (SuperLU, COLAMD)"}[self.strategy]

    def to_csc(self, data: np.ndarray) -> np.ndarray:
        """CSC data of the pattern from data in this solver's storage (tests, diagnostics)."""
        return np.asarray(data)[self.storage_map]

    def factorize(self, data: np.ndarray):
        """Factorize K given in this solver's storage; return ``solve(rhs)``.  Raise SingularMatrix.

        The tree strategy factorizes ``data`` in place.
        """
        self.nlu += 1
        n = self.ndof
        if self.strategy == "tree":
            from .kernels import tree
            parent, order = self.tree
            piv = self._piv.copy()
            bad = tree.factorize(data, self.nm, parent, order, piv)
            if bad >= 0:
                raise SingularMatrix(f"singular diagonal block of moving body {bad} (internal order)")
            return lambda rhs: tree.solve(data, self.nm, parent, order, piv, rhs)
        try:
            if self.dense:
                import scipy.linalg
                A = np.zeros(n * n)
                A[self._flat] = data
                lu = scipy.linalg.lu_factor(A.reshape(n, n), check_finite=False)
                if np.any(np.diag(lu[0]) == 0.0):
                    raise SingularMatrix("zero pivot in dense LU")
                return lambda rhs: scipy.linalg.lu_solve(lu, rhs, check_finite=False)
            import scipy.sparse as sp
            import scipy.sparse.linalg as spla
            K = sp.csc_matrix((data, self.indices, self.indptr), shape=(n, n))
            if self._perm is None:  # the first factorization finds the fill-reducing ordering ...
                lu = spla.splu(K, permc_spec="COLAMD")
                self._perm = lu.perm_c.copy()
                return lu.solve
            # ... later ones reuse it: factorize K P in natural order, and x = P (K P)⁻¹ b
            lu = spla.splu(K[:, self._perm], permc_spec="NATURAL")
            perm = self._perm

            def solve(rhs):
                x = np.empty_like(rhs)
                x[perm] = lu.solve(rhs)
                return x
            return solve
        except (RuntimeError, np.linalg.LinAlgError, ValueError) as exc:
            raise SingularMatrix(str(exc)) from exc

    def solve(self, data: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """Solve ``K x = rhs`` with K given in this solver's storage; raise SingularMatrix on failure."""
        return self.factorize(np.array(data))(rhs)
