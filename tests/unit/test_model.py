"""Model set-up, assembly and linear solves, against independent implementations."""
import numpy as np
import pytest

import mbsim.linalg
from mbsim.integrators import GeneralizedAlpha
from mbsim.mechanics import Mechanism
from mbsim.model.model import Model
from mbsim.reference import equations_of_motion
from tests.builders import body, damper, nonlinear_3d, scenario, spring, torsional
from tests.unit.test_tangents import pose, random_iterate, random_state


def test_initial_accelerations_are_the_physical_ones():
    """m a_0 = f(0), J_0 α_0 = m(0) − ω_0 × J_0 ω_0 (THEORY §4), against the reference solver's forces."""
    sc = nonlinear_3d()
    model = Model(sc)
    mech = Mechanism(model)
    a, al, _ = mech.accelerations(mech.state())
    eom = equations_of_motion(sc)
    ref = eom.forces(eom.y0, 0.0)
    assert np.allclose(a[model.order], ref.acceleration, rtol=1e-12, atol=1e-12)
    assert np.allclose(al[model.order], ref.angular_acceleration, rtol=1e-12, atol=1e-10)


def chain(n, fixed_middle=False):
    bodies = [body(f"b{i}", 1.0 + 0.1 * i, (0.01, 0.02, 0.03), (i + 1.0, 0.1 * np.sin(i), 0),
                   (0.1 * i, 0, 0.2), fixed=(fixed_middle and i == n // 2)) for i in range(n)]
    conns = []
    for i in range(n):
        a = "world" if i == 0 else f"b{i - 1}"
        pa = (i + 0.25, 0, 0)
        pb = (i + 0.75, 0, 0)
        conns += [spring(f"k{i}", a, f"b{i}", pa, pb, 1e3), damper(f"c{i}", a, f"b{i}", pa, pb, 2.0),
                  torsional(f"t{i}", a, f"b{i}", 0.5, "P2", (0, 0, 1))]
    return scenario(bodies, conns, gravity=(0, 0, -9.81))


def naive_global(ga, s, d, th):
    """Global tangent by an explicit loop over connectors and bodies (the reference for the scatter maps)."""
    m = ga.model
    nd = m.ndof
    K = np.zeros((nd, nd))
    blocks = ga.iterate(s, 0.01, d, th, tangent="consistent", blocks=True).blocks
    # body blocks: recover them as the tangent of a model without connectors
    import dataclasses
    bare = GeneralizedAlpha(Model(dataclasses.replace(m.scenario, connectors=())), m.scenario.integrator)
    K += bare.iterate(s, 0.01, d, th, tangent="consistent").K.toarray()
    el = m.elements
    for c in range(el.n):
        dofs = []
        for body_ in el.body[c]:
            dofs += [6 * body_ + j if body_ < m.n_moving else -1 for j in range(6)]
        for a_, da in enumerate(dofs):
            for b_, db in enumerate(dofs):
                if da >= 0 and db >= 0:
                    K[da, db] += blocks[c, a_, b_]
    return K


@pytest.mark.parametrize("fixed_middle", [False, True])
def test_scatter_maps_match_a_naive_assembly(fixed_middle):
    sc = chain(6, fixed_middle)
    ga = GeneralizedAlpha(Model(sc), sc.integrator)
    rng = np.random.default_rng(2)
    s = random_state(ga.model, rng)
    d, th = random_iterate(ga.model, s, rng)
    K = ga.iterate(s, 0.01, d, th, tangent="consistent").K.toarray()
    assert np.allclose(K, naive_global(ga, s, d, th), rtol=1e-13, atol=1e-9)


@pytest.mark.parametrize("fixed_middle", [False, True])
def test_tree_dense_and_block_solves_give_the_same_trajectory(monkeypatch, fixed_middle):
    """The chain is a forest (two trees when its middle body is fixed): the block tree LU, the dense
    LU (LAPACK in the Python step) and the block sparse LU must give the same steps, in the Python
    step and in the compiled loop."""
    import mbsim.kernels.tree
    sc = chain(25, fixed_middle)  # 150 unknowns
    forest = mbsim.kernels.tree.forest
    results = []
    for strategy in ("tree", "dense", "block"):
        monkeypatch.setattr(mbsim.kernels.tree, "forest", forest if strategy == "tree" else (lambda *a: None))
        monkeypatch.setattr(mbsim.linalg, "DENSE_MAX_DOFS", 10**6 if strategy == "dense" else 0)
        ga = GeneralizedAlpha(Model(sc), sc.integrator)
        assert ga.solver.strategy == strategy
        s0 = s = ga.initial_state()
        for _ in range(5):
            res = ga.step(s, 1e-3)
            assert res.ok
            s = res.state
        results.append(s)
        compiled, taken, _, _ = ga.advance(s0, 1e-3, 5)
        assert taken == 5
        results.append(compiled)
    for other in results[1:]:
        assert np.allclose(results[0].r, other.r, rtol=0, atol=1e-12)
        assert np.allclose(results[0].q, other.q, rtol=0, atol=1e-12)


def test_a_cycle_is_not_a_tree():
    from mbsim.kernels.tree import forest
    assert forest(3, np.array([[0, 1], [1, 2], [2, 0]])) is None
    parent, order = forest(4, np.array([[0, 1], [1, 2], [1, 0], [3, 3]]))  # duplicates and a self pair
    assert list(parent) == [-1, 0, 1, -1] and set(order) == {0, 1, 2, 3}
    pos = {b: i for i, b in enumerate(order)}
    assert pos[2] < pos[1] < pos[0]  # children before parents


def test_block_solver_factorizes_the_tangent_exactly(monkeypatch):
    """The block sparse LU on the assembled tangent of a chain refused as a tree, factorized again
    and again in place (the symbolic structure is the model's): every solve is exact."""
    monkeypatch.setattr(mbsim.linalg, "DENSE_MAX_DOFS", 0)
    from mbsim.kernels import tree
    monkeypatch.setattr(tree, "forest", lambda *a: None)  # the chain is a tree: refuse it
    sc = chain(8)
    ga = GeneralizedAlpha(Model(sc), sc.integrator)
    assert ga.solver.strategy == "block"
    rng = np.random.default_rng(4)
    for trial in range(3):
        s = random_state(ga.model, rng)
        d, th = random_iterate(ga.model, s, rng)
        it = ga.iterate(s, 0.01, d, th, tangent="consistent")
        b = rng.normal(size=ga.model.ndof)
        x = ga.solver.solve(it.data, b)
        K = it.K.toarray()
        assert np.allclose(K @ x, b, rtol=0, atol=1e-9 * np.abs(b).max())


def test_frame_quantities_match_the_reference_solver():
    """Connector actions, energies and momenta of a frame against the independent reference solver
    (mbsim.reference), at a random 3D state with fixed bodies, every connector kind and a body declared
    after a fixed one; and the dissipated power of the integrator likewise."""
    sc = chain(7, fixed_middle=True)
    model = Model(sc)
    rng = np.random.default_rng(9)
    s = random_state(model, rng)
    r1, q1 = pose(s, *random_iterate(model, s, rng))
    s = type(s)(s.t, r1, q1, s.v, s.a, s.w, s.al, 1.5, 0.25)
    a = GeneralizedAlpha(model, sc.integrator).frame(s)
    assert a.pop("_finite") is True
    eom = equations_of_motion(sc)
    nm = model.n_moving
    y = np.concatenate([s.r[:nm].ravel(), s.q[:nm].ravel(), s.v[:nm].ravel(), s.w[:nm].ravel(), [1.5, 0.25]])
    ref, en = eom.forces(y, s.t), eom.energies(y)
    expected = {"connectors/force": ref.connector_force, "connectors/moment": ref.connector_moment,
                "connectors/length": ref.connector_length, "energy/kinetic": en.kinetic,
                "energy/potential": en.potential, "momentum/linear": en.linear_momentum,
                "momentum/angular": en.angular_momentum}
    for k, v in expected.items():
        assert np.allclose(a[k], v, rtol=1e-12, atol=1e-12 * np.abs(np.nan_to_num(v)).max(), equal_nan=True), k
    # torsional dampers have no length
    assert np.isnan(a["connectors/length"][[c.type == "torsional_damper" for c in sc.connectors]]).all()
    pd, _ = GeneralizedAlpha(model, sc.integrator).powers(s)
    assert np.isclose(pd, ref.dissipation_rate, rtol=1e-12, atol=0)


def _pattern(A):
    """A matrix as (data, row-major positions) of its nonzero entries, as the dense strategy stores it."""
    rows, cols = np.nonzero(A)
    return A[rows, cols].copy(), (rows * A.shape[0] + cols).astype(np.int64)


@pytest.mark.parametrize("seed", range(5))
def test_compiled_dense_lu_solves_like_lapack(seed):
    """mbsim.kernels.dense (the compiled step loop's LU) against numpy.linalg.solve, on random
    unsymmetric matrices with a sparse pattern and zeros on the diagonal (pivoting needed)."""
    from mbsim.kernels import dense
    rng = np.random.default_rng(seed)
    n = 6 * (1 + seed * 4)  # 6 … 102 unknowns
    A = rng.normal(size=(n, n)) * (rng.random((n, n)) < 0.3) + np.diag(rng.normal(size=n))
    A[np.arange(0, n, 3), np.arange(0, n, 3)] = 0.0
    A += np.roll(np.eye(n), 1, axis=1) * 2.0  # keep it regular with zero diagonal entries
    data, flat = _pattern(A)
    lu, piv = np.zeros(n * n), np.zeros(n, np.int64)
    assert dense.factorize(data, flat, n, lu, piv) == -1
    b = rng.normal(size=n)
    x = dense.solve(lu, n, piv, b)
    expected = np.linalg.solve(A, b)
    assert np.linalg.norm(x - expected) <= 1e-10 * np.linalg.norm(expected)
    assert np.allclose(A @ x, b, atol=1e-10 * np.abs(b).max())


def test_compiled_dense_lu_reports_a_singular_matrix():
    from mbsim.kernels import dense
    A = np.arange(1.0, 17.0).reshape(4, 4)  # rank 2
    A[:, 2] = 0.0
    data, flat = _pattern(A)
    lu, piv = np.zeros(16), np.zeros(4, np.int64)
    assert dense.factorize(data, flat, 4, lu, piv) >= 0


def test_a_closed_ring_runs_in_the_compiled_loop_with_the_block_sparse_lu(monkeypatch):
    """A ring of 24 bodies (144 unknowns: above the dense limit, not a forest) takes the block sparse
    LU in the compiled loop, with its O(N) fill, and the trajectory of the dense LU."""
    from mbsim.scenario.loader import scenario_from_dict
    from tests.integration._examples_util import REPO
    import sys
    sys.path.insert(0, str(REPO / "benchmarks"))
    from chain import chain_dict
    sc = scenario_from_dict(chain_dict(24, 40, closed=True))
    out = {}
    for limit in (mbsim.linalg.DENSE_MAX_DOFS, 10**6):
        monkeypatch.setattr(mbsim.linalg, "DENSE_MAX_DOFS", limit)
        ga = GeneralizedAlpha(Model(sc), sc.integrator)
        s, taken, _, _ = ga.advance(ga.initial_state(), sc.time.step, 40)
        assert taken == 40
        out[ga.solver.strategy] = s
        if ga.solver.strategy == "block":
            assert ga.solver.storage_size <= 36 * (24 + 2 * 2 * 24)  # diagonal + coupling and fill blocks
            assert ga.can_advance
    assert set(out) == {"block", "dense"}
    assert np.abs(out["block"].v).max() > 1e-3  # it moves
    assert np.allclose(out["block"].r, out["dense"].r, rtol=0, atol=1e-12)
    assert np.allclose(out["block"].q, out["dense"].q, rtol=0, atol=1e-12)
    assert np.allclose(out["block"].w, out["dense"].w, rtol=0, atol=1e-10)


def test_the_redundant_equations_are_said_once_per_kind_of_joint():
    """A02's 40 four-bars each give up the same three equations of one revolute joint: the note names the
    three once, with the joints summarized (it listed them for each joint: 5 kB on the terminal)."""
    from pathlib import Path

    from mbsim.scenario import load_scenario
    sc = load_scenario(str(Path(__file__).resolve().parents[2] / "scenarios" / "iftomm_a02_four_bars.yaml"))
    notes = Model(sc).joint_notes
    assert len(notes) == 1 and notes[0].startswith("120 redundant joint equations removed"), notes
    assert "revolute joints 'right00', 'right01', 'right02', …, 'right39' (40): " in notes[0], notes[0]
    assert notes[0].count("coincident points (z)") == 1 and len(notes[0]) < 300, notes[0]
