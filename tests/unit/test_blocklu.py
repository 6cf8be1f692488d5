"""The block sparse LU (mbsim.kernels.blocklu) against dense solves: rings, random graphs with fill,
and the saddle-point blocks joints will bring (a body and its joint's multipliers as one pivoted block)."""
import numpy as np
import pytest

from mbsim.kernels import blocklu


def assemble(sizes, blocks):
    """Dense matrix from {(i, j): block}."""
    start = np.concatenate(([0], np.cumsum(sizes)))
    A = np.zeros((start[-1], start[-1]))
    for (i, j), B in blocks.items():
        A[start[i]:start[i + 1], start[j]:start[j + 1]] = B
    return A


def factor_and_solve(sizes, blocks, edges, order=None):
    sym, size, offsets = blocklu.symbolic(sizes, edges, order)
    start = np.concatenate(([0], np.cumsum(sizes)))
    data = np.zeros(size)
    for (i, j), B in blocks.items():
        r, c = np.meshgrid(np.arange(start[i], start[i + 1]), np.arange(start[j], start[j + 1]), indexing="ij")
        data[blocklu.block_position(r.ravel(), c.ravel(), sizes, offsets)] = B.ravel()
    piv = np.zeros(start[-1], np.int64)
    assert blocklu.factorize(data, sym, piv) == -1
    rng = np.random.default_rng(0)
    b = rng.normal(size=start[-1])
    x = np.empty_like(b)
    blocklu.solve_into(data, sym, piv, b, np.empty_like(b), x)
    return b, x, size


def random_blocks(sizes, edges, rng):
    blocks = {}
    for i, n in enumerate(sizes):
        blocks[i, i] = rng.normal(size=(n, n)) + 10 * n * np.eye(n)
    for a, b in edges:
        blocks[a, b] = rng.normal(size=(sizes[a], sizes[b]))
        blocks[b, a] = rng.normal(size=(sizes[b], sizes[a]))  # not symmetric, like the tangent
    return blocks


@pytest.mark.parametrize("n", [3, 10, 57])
def test_ring_solves_like_a_dense_lu_with_linear_fill(n):
    rng = np.random.default_rng(n)
    sizes = [6] * n
    edges = [(i, (i + 1) % n) for i in range(n)]
    blocks = random_blocks(sizes, edges, rng)
    b, x, size = factor_and_solve(sizes, blocks, edges)
    A = assemble(sizes, blocks)
    assert np.allclose(A @ x, b, rtol=0, atol=1e-11 * np.abs(b).max())
    assert size <= 36 * (n + 2 * n + 2 * n)  # minimum degree keeps a ring's fill O(N)


def test_random_graph_with_variable_block_sizes_and_any_order():
    rng = np.random.default_rng(3)
    n = 25
    sizes = list(rng.integers(3, 10, size=n))
    edges = {tuple(sorted(rng.choice(n, 2, replace=False))) for _ in range(45)}
    blocks = random_blocks(sizes, edges, rng)
    A = assemble(sizes, blocks)
    for order in (None, list(range(n)), list(rng.permutation(n))):
        b, x, _ = factor_and_solve(sizes, blocks, list(edges), order)
        assert np.allclose(A @ x, b, rtol=0, atol=1e-10 * np.abs(b).max())


def test_a_chain_of_bodies_and_joint_multipliers_stays_o_n():
    """A chain of N bodies joined by spherical joints (3 multipliers each), as the saddle-point
    system [M Gᵀ; G 0]: each body with the multipliers of the joint to its parent is one 9×9 pivoted
    block (its diagonal block has a zero 3×3 corner, so pivoting inside the block is needed), coupled
    to the parent's block only.  Eliminated leaves first, there is no fill: storage 81·(3N − 2)."""
    rng = np.random.default_rng(4)
    N = 40
    sizes = [9] * N
    blocks = {}
    for i in range(N):
        M = np.diag(rng.uniform(1, 3, 6)) * 1e4  # m/(βΔt²), J/(βΔt²)
        G = np.hstack((np.eye(3), -skew(rng.normal(size=3)))) * rng.uniform(0.5, 2)  # joint rows on body i
        D = np.zeros((9, 9))
        D[:6, :6] = M + rng.normal(size=(6, 6))
        D[:6, 6:] = G.T
        D[6:, :6] = G
        blocks[i, i] = D
        if i > 0:  # the joint between i and its parent i − 1: rows of λ_i on the parent's unknowns
            Gp = np.hstack((-np.eye(3), skew(rng.normal(size=3))))
            C = np.zeros((9, 9))  # block (i, i−1): λ_i rows × parent body columns
            C[6:, :6] = Gp
            blocks[i, i - 1] = C
            Ct = np.zeros((9, 9))  # block (i−1, i): parent body rows × λ_i columns
            Ct[:6, 6:] = Gp.T
            blocks[i - 1, i] = Ct
    edges = [(i, i - 1) for i in range(1, N)]
    A = assemble(sizes, blocks)
    assert np.abs(np.diag(A)).min() == 0.0  # a saddle point: no pivoting, no LU
    b, x, size = factor_and_solve(sizes, blocks, edges)
    assert np.abs(A @ x - b).max() <= 1e-12 * np.abs(A).max() * np.abs(x).max()
    assert np.allclose(x, np.linalg.solve(A, b), rtol=1e-8, atol=1e-12)
    assert size == 81 * (N + 2 * (N - 1))


def skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def test_a_singular_diagonal_block_is_reported():
    sizes = [6, 6, 6]
    edges = [(0, 1), (1, 2), (2, 0)]
    rng = np.random.default_rng(1)
    blocks = random_blocks(sizes, edges, rng)
    blocks[1, 1] = np.zeros((6, 6))
    sym, size, offsets = blocklu.symbolic(sizes, edges, [1, 0, 2])
    data = np.zeros(size)
    start = np.arange(0, 24, 6)
    for (i, j), B in blocks.items():
        r, c = np.meshgrid(np.arange(start[i], start[i + 1]), np.arange(start[j], start[j + 1]), indexing="ij")
        data[blocklu.block_position(r.ravel(), c.ravel(), sizes, offsets)] = B.ravel()
    assert blocklu.factorize(data, sym, np.zeros(18, np.int64)) == 1
