"""Elements with unknowns of their own (issue 12 item 4), through the whole stack, before any joint.

The test element is a rigid rod (``tests/rod.py``: THEORY §11's distance constraint with one
multiplier), registered in a process of its own that runs mbsim uncompiled (``NUMBA_DISABLE_JIT=1``:
registering a kind changes the compiled switch, and compiling it would cost a minute); the same
source is what the compiled loop runs.  References: the pendulum equation integrated by SciPy,
central differences, the dense LU, and the uninterrupted run.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("own")
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(ROOT / "tests/unit/_own_unknowns_script.py"), str(tmp)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_pendulum_on_a_rod_is_second_order_in_position_and_tension_for_every_rho(figures):
    """x(0.5 s) of the bob and the rod's tension λ (at t_n + α_f Δt, THEORY §11) against the pendulum
    equation: halving Δt divides both errors by about 4 at ρ∞ = 0, 0.8 and 1; the rod's length holds
    to the Newton tolerance at every step (the stopping test reads the rod's row in metres)."""
    rows = figures["pendulum"]
    for rho in (0.0, 0.8, 1.0):
        r = [x for x in rows if x["rho"] == rho]
        for coarse, fine in zip(r, r[1:]):
            assert 3.5 < coarse["x_error"] / fine["x_error"] < 4.5, (rho, coarse, fine)
            assert 3.5 < coarse["tension_error"] / fine["tension_error"] < 4.5, (rho, coarse, fine)
        assert max(x["phi"] for x in r) < 1e-9
        assert max(x["start"] for x in r) < 1e-12  # the rod's acceleration-level rows start it exactly
        assert max(x["iterations"] for x in r) < 3.0  # Newton converges fast with the scaled multiplier


def test_the_tangent_with_an_own_unknown_matches_central_differences(figures):
    """Two bodies, two rods (one to world) and a spring: every row and column of K, the multipliers'
    included, against central differences of the residual."""
    t = figures["tangent"]
    assert t["ndof"] == 6 * 2 + 2
    assert t["own_rows"] > 0 and t["own_cols"] > 0
    assert t["error"] < 1e-6


def test_a_chain_of_rods_eliminates_each_body_with_its_parent_rods_multiplier_without_fill(figures):
    """21 bodies hanging on rods (148 unknowns): the block LU groups each body with the multiplier of
    the rod to its parent (a 7×7 saddle-point block, pivoted inside), stores no fill, and gives the
    dense LU's answer."""
    c = figures["chain"]
    assert c["grouped_with_child"] and c["last"] == []
    assert c["storage"] == c["fill_free_storage"]
    assert c["position_difference"] < 1e-12 and c["multiplier_difference"] < 1e-9


def test_a_rod_closing_a_loop_keeps_its_multiplier_apart_and_eliminated_last(figures):
    r = figures["ring"]
    assert r["last"] == [21] and r["own_blocks"] == 22
    assert r["position_difference"] < 1e-12 and r["multiplier_difference"] < 1e-9
    assert r["length_error"] < 1e-9


def test_a_run_with_own_unknowns_writes_frames_and_resumes_to_the_last_bit(figures):
    """The driver's compiled frames path: the rod's length holds in every frame, its force on world
    points at the bob (tension), and an interrupted run resumed from its file equals the uninterrupted
    one bit for bit (own unknowns restart at every frame, like the predictor's history)."""
    r = figures["run"]
    assert (r["whole"], r["first"], r["second"]) == ("completed", "interrupted", "completed")
    assert r["identical"]
    assert r["length_error"] < 1e-9
    assert r["force_direction"] < 1e-12 and r["tension_positive"]


def test_a_model_without_such_elements_keeps_twelve_wide_blocks(figures):
    """The local width is that of the kinds a model has instances of, not of every registered kind."""
    assert figures["widths"] == [12, 13]


def test_register_refuses_a_taken_name_and_a_late_call(monkeypatch):
    import mbsim.elements as E
    from tests.rod import Rod

    class Duplicate(Rod):
        type = "spring"
    n_before = len(E.ELEMENTS)
    monkeypatch.setattr(E, "_frozen", False)
    with pytest.raises(ValueError, match="already registered"):
        E.register(Duplicate)
    monkeypatch.setattr(E, "_frozen", True)
    with pytest.raises(RuntimeError, match="before the first simulation"):
        E.register(Rod)
    assert "rod" not in E.BY_TYPE and len(E.ELEMENTS) == n_before


def test_block_lu_with_unknowns_numbered_apart_from_their_block():
    """blocklu with ``dofs``: a block's unknowns need not be contiguous (bodies first, multipliers
    after, as the model numbers them); the solution is the dense one."""
    from mbsim.kernels import blocklu
    rng = np.random.default_rng(2)
    N, m = 6, 2
    n = 6 * N + m * N
    blocks = np.concatenate((np.repeat(np.arange(N), 6), np.repeat(np.arange(N), m)))
    A = np.zeros((n, n))
    for i in range(N):
        idx = np.flatnonzero(blocks == i)
        A[np.ix_(idx, idx)] = rng.normal(size=(len(idx), len(idx)))
        A[np.ix_(idx[:6], idx[:6])] += 20 * np.eye(6)
        A[np.ix_(idx[6:], idx[6:])] = 0.0  # saddle point: zero multiplier corner
        if i:
            jdx = np.flatnonzero(blocks == i - 1)
            A[np.ix_(idx, jdx)] = rng.normal(size=(len(idx), len(jdx)))
            A[np.ix_(jdx, idx)] = rng.normal(size=(len(jdx), len(idx)))
    rows, cols = np.nonzero(A)
    sizes = np.bincount(blocks)
    sym, size, offsets = blocklu.symbolic(sizes, [(i, i - 1) for i in range(1, N)],
                                          dofs=np.argsort(blocks, kind="stable"))
    data = np.zeros(size)
    data[blocklu.block_position(rows, cols, sizes, offsets, sym)] = A[rows, cols]
    piv = np.zeros(n, np.int64)
    assert blocklu.factorize(data, sym, piv) == -1
    b = rng.normal(size=n)
    x = np.empty(n)
    blocklu.solve_into(data, sym, piv, b, np.empty(n), x)
    assert np.allclose(x, np.linalg.solve(A, b), rtol=1e-10, atol=1e-12)
