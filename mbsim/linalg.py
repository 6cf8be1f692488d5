"""The one place that decides how the Newton system ``K Δu = R`` is solved.

Three strategies, chosen once per model from its coupling graph and size, all
compiled:

- **tree** — the moving bodies joined by connectors form a forest (a chain,
  a rope, a tree; any number of bodies): block LU without fill in O(N)
  (:mod:`mbsim.kernels.tree`, compiled).
- **dense** — other small systems (≤ DENSE_MAX_DOFS unknowns): LU with
  partial pivoting (:mod:`mbsim.kernels.dense`).
- **block** — other large systems (closed chains, rings, loops, and every
  large system with element-owned unknowns; chains and trees of joints from
  about 30 unknowns, :data:`FOREST_DENSE_FRACTION`): block sparse LU
  (:mod:`mbsim.kernels.blocklu`, compiled) with a minimum-degree ordering and
  symbolic structure computed once per model; the pivoting of the tree LU,
  within each diagonal block.  Its blocks are the caller's (``blocks``): a
  moving body, or a body with the multipliers of the joint to its parent --
  one pivoted saddle-point block, so a chain of joints is still eliminated
  leaf first without fill, in O(N).

The tangent is not symmetric (THEORY §5), so no Cholesky.  Each strategy
says where every entry of the tangent pattern lives in its own storage
(:attr:`LinearSolver.storage_map`), so the assembler scatters straight into
it.
"""
from __future__ import annotations

import numpy as np

# Up to this many unknowns a dense LU (partial pivoting over all rows, the most robust choice) is used;
# above, the block sparse LU (measured with benchmarks/chain.py when SuperLU was the alternative:
# crossover near 15–25 bodies).
DENSE_MAX_DOFS = 120

# Models whose unknowns come in blocks of a body and its parent joint's multipliers coupled as a forest
# (chains and trees of joints) factorize block by block without fill: the block LU is faster than the
# dense one from about 30 unknowns (a chain of three revolute joints; at ten, 110 unknowns, one
# factorization costs 20 µs against 93 µs), so such models use it above this fraction of DENSE_MAX_DOFS.
FOREST_DENSE_FRACTION = 0.25


class SingularMatrix(Exception):
    """The tangent could not be factorized."""


def _is_forest(blocks, rows, cols) -> bool:
    """Whether the blocks of the unknowns (``blocks``: the block of each) are coupled as a forest by the
    tangent pattern ``rows``, ``cols``: no cycle, so the block LU eliminates them without fill."""
    blocks = np.asarray(blocks, dtype=np.int64)
    pairs = np.sort(np.stack((blocks[np.asarray(rows)], blocks[np.asarray(cols)]), axis=1), axis=1)
    pairs = np.unique(pairs[pairs[:, 0] != pairs[:, 1]], axis=0)
    root = list(range(int(blocks.max()) + 1 if len(blocks) else 0))

    def find(i):
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i
    for a, b in pairs:
        ra, rb = find(int(a)), find(int(b))
        if ra == rb:
            return False
        root[ra] = rb
    return True


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
    blocks : (ndof,) int array, optional
        The diagonal block of each unknown for the block strategy (default: unknown // 6, one per
        moving body); given, the unknowns are not all bodies' (element-owned unknowns), and the
        tree strategy is not used.
    last : sequence of int
        Blocks without a pivot of their own, eliminated last (see :func:`mbsim.kernels.blocklu.symbolic`).
    n_moving : int, optional
        The moving bodies (their unknowns come first, 6 each); default ``ndof // 6``.
    """

    def __init__(self, ndof: int, indptr, indices, rows=None, cols=None, coupling=None, allow_tree=True,
                 blocks=None, last=(), n_moving=None):
        self.ndof = ndof
        self.indptr = indptr
        self.indices = indices
        self.nlu = 0
        nm = self.n_moving = ndof // 6 if n_moving is None else int(n_moving)
        self.tree = None
        if blocks is None:
            blocks = np.arange(ndof) // 6
        elif ndof:
            allow_tree = False
        if allow_tree and coupling is not None and nm > 0:
            from .kernels import tree
            self.tree = tree.forest(nm, np.asarray(coupling, dtype=np.int64).reshape(-1, 2))
        if self.tree is not None:
            from .kernels import tree
            self.strategy = "tree"
            self.nm = nm
            self.storage_size = 3 * 36 * nm
            self.storage_map = tree.block_position(np.asarray(rows), np.asarray(cols), nm, self.tree[0])
            self._piv = np.zeros(ndof, dtype=np.int64)
        elif nm > 0 and rows is not None and (
                ndof > DENSE_MAX_DOFS or (not allow_tree and not len(last) and ndof > FOREST_DENSE_FRACTION * DENSE_MAX_DOFS
                                          and _is_forest(blocks, rows, cols))):
            from .kernels import blocklu
            self.strategy = "block"
            blocks = np.asarray(blocks, dtype=np.int64)
            sizes = np.bincount(blocks)
            dofs = np.argsort(blocks, kind="stable")  # the unknowns block by block
            rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
            pairs = np.unique(np.stack((blocks[rows], blocks[cols]), axis=1), axis=0)
            self.sym, self.storage_size, offsets = blocklu.symbolic(
                sizes, pairs, last=last, dofs=dofs, extents=blocklu.pattern_extents(rows, cols, blocks))
            self.storage_map = blocklu.block_position(rows, cols, sizes, offsets, self.sym)
            self.blocks = blocks
            self._piv = np.zeros(ndof, dtype=np.int64)
        else:
            self.strategy = "dense"
            self.storage_size = len(indices)
            self.storage_map = np.arange(len(indices), dtype=np.int64)  # CSC data order itself
            cols_ = np.repeat(np.arange(ndof), np.diff(indptr))
            self._flat = indices.astype(np.int64) * ndof + cols_  # row-major position in the n×n matrix

    @property
    def dense(self) -> bool:
        return self.strategy == "dense"

    @property
    def kind(self) -> str:
        return {"tree": "block tree LU (no fill)", "dense": "dense LU (partial pivoting)",
                "block": "block sparse LU (minimum degree)"}[self.strategy]

    @property
    def lu(self) -> tuple:
        """The strategy as the compiled code takes it (:mod:`mbsim.kernels.lu`): ``(dense, nm, ndof, parent,
        order, flat, sym)``, the unused parts empty."""
        none = np.zeros(0, np.int64)
        nm = self.n_moving
        if self.strategy == "tree":
            return (False, nm, self.ndof, self.tree[0], self.tree[1], none, none)
        if self.strategy == "block":
            return (False, nm, self.ndof, none, none, none, self.sym)
        return (True, nm, self.ndof, none, none, self._flat, none)

    @property
    def factor_size(self) -> int:
        """Values of the factorization's storage (the block LUs factorize the tangent in place; the dense
        LU keeps the full n² factors)."""
        return self.ndof ** 2 if self.strategy == "dense" else self.storage_size

    def to_csc(self, data: np.ndarray) -> np.ndarray:
        """CSC data of the pattern from data in this solver's storage (tests, diagnostics)."""
        return np.asarray(data)[self.storage_map]

    def factorize(self, data: np.ndarray):
        """Factorize K given in this solver's storage; return ``solve(rhs)``.  Raise SingularMatrix.

        The block LUs factorize a copy of ``data``; the one compiled dispatch of the step loop
        (:mod:`mbsim.kernels.lu`) does the work."""
        from .kernels import lu as klu
        self.nlu += 1
        n = self.ndof
        lu = self.lu
        factors = np.zeros(self.factor_size) if self.strategy == "dense" else np.array(data, dtype=float)
        piv = np.zeros(n, dtype=np.int64)
        bad = klu.factorize(lu, np.ascontiguousarray(data, dtype=float), factors, piv)
        if bad >= 0:
            raise SingularMatrix(f"singular pivot block {bad} ({self.strategy} LU)")

        def solve(rhs):
            x = np.empty(n)
            klu.solve(lu, factors, piv, np.ascontiguousarray(rhs, dtype=float), x, np.empty(max(18 * (n // 6), n, 1)))
            return x
        return solve

    def solve(self, data: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """Solve ``K x = rhs`` with K given in this solver's storage; raise SingularMatrix on failure."""
        return self.factorize(np.array(data))(rhs)
