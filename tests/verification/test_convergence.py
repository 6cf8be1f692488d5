"""Observed order of accuracy, Newton's quadratic convergence, and ``tangent: seed``.

The reference trajectory comes from mbsim's independent continuous-time
solver (:mod:`mbsim.reference`: DOP853 on the equations of motion at
rtol 1e-11), which shares no code with the generalized-α path.
"""
import dataclasses

import numpy as np
import pytest

from mbsim.driver import run
from mbsim.integrators import GeneralizedAlpha
from mbsim.model.model import Model
from mbsim.kernels.rotations import quat_angle
from mbsim.reference import solve_reference
from tests.builders import nonlinear_3d

SPAN = 0.5
STEPS = (4e-3, 2e-3, 1e-3)


def errors(sc):
    f = run(sc, write=False, keep_frames=True).frames_data
    ref = solve_reference(sc, times=f["time"])
    return np.array([
        np.abs(f["bodies/position"] - ref.position).max(),
        quat_angle(f["bodies/orientation"], ref.orientation).max(),
        np.abs(f["bodies/velocity"] - ref.velocity).max(),
        np.abs(f["bodies/angular_velocity"] - ref.angular_velocity).max(),
    ])


@pytest.mark.parametrize("rho", [0.0, 0.5, 1.0])
def test_second_order_for_every_rho(rho):
    """Position, rotation angle, velocity and angular velocity all converge at order 2 ± 0.15
    on two spinning bodies with springs, dampers, P1/P2/P3 torsional dampers, gravity and a
    sine torque.  (FEBio's inertia term would give order 1 in rotation for ρ∞ < 1, THEORY §5.)"""
    e = np.array([errors(nonlinear_3d(rho, end=SPAN, step=dt)) for dt in STEPS])
    order = np.log2(e[-2] / e[-1])
    assert np.all(np.abs(order - 2.0) <= 0.15), (order, e)


def first_step(tangent, dt, rho=0.5, to_roundoff=False):
    sc = nonlinear_3d(rho, tangent=tangent, modified=False)  # full Newton: a fresh tangent every iteration
    if to_roundoff:  # tolerances below what double precision resolves: Newton stops at round-off
        sc = dataclasses.replace(sc, integrator=dataclasses.replace(sc.integrator, rtol=1e-16, atol=1e-30))
    ga = GeneralizedAlpha(Model(sc), sc.integrator)
    return ga.step(ga.initial_state(), dt)


@pytest.mark.parametrize("dt", [0.02, 0.1, 0.15])
def test_newton_converges_quadratically_with_the_consistent_tangent(dt):
    """Large steps (ωΔt up to 0.6 on spinning bodies) from a 3D state: the observed rate
    log(r_{k+1}/r_k)/log(r_k/r_{k−1}) reaches 2 before the residual meets round-off
    (taken as 100× the last residual), where a linearly convergent iteration stays at 1."""
    res = first_step("consistent", dt, to_roundoff=True)
    assert res.ok
    r = np.array(res.history)
    k = np.flatnonzero(r > 100 * r[-1])[-1]  # last iterate clearly above round-off
    assert k >= 2, r
    rates = np.log(r[2:k + 1] / r[1:k]) / np.log(r[1:k] / r[:k - 1])
    assert rates.max() > 1.8, (rates, r)
    assert res.iterations <= 8


@pytest.mark.parametrize("dt", [0.02, 0.05])
def test_seed_tangent_converges_only_linearly(dt):
    cons, seed = first_step("consistent", dt), first_step("seed", dt)
    assert seed.ok
    assert seed.iterations >= cons.iterations + 2
    r = np.array(seed.history)
    ratios = r[2:] / r[1:-1]
    assert np.all(ratios > 1e-3), r  # no quadratic collapse
    # the last residual is of the iterate before the last correction, which the step applied: the
    # state's own is about one contraction (the last ratio) smaller
    assert r[-1] * ratios[-1] < 1e-8 * r[0]


def test_seed_tangent_gives_the_same_trajectory_with_more_iterations():
    a = run(nonlinear_3d(0.9, end=0.5, step=1e-2, modified=False), write=False, keep_frames=True)
    b = run(nonlinear_3d(0.9, end=0.5, step=1e-2, tangent="seed", modified=False), write=False, keep_frames=True)
    pa, pb = a.frames_data["bodies/position"], b.frames_data["bodies/position"]
    assert np.abs(pa - pb).max() < 1e-8
    qa, qb = a.frames_data["bodies/orientation"], b.frames_data["bodies/orientation"]
    assert quat_angle(qa, qb).max() < 1e-8
    assert b.newton_iterations > a.newton_iterations


@pytest.mark.parametrize("tangent", ["consistent", "seed"])
def test_modified_newton_gives_the_full_newton_trajectory(tangent):
    """Reusing a factorization changes how Newton gets there, not where: both trajectories agree
    to the Newton tolerance, and modified Newton factorizes far less often."""
    runs = {}
    for modified in (False, True):
        sc = nonlinear_3d(0.8, end=0.3, step=2e-3, tangent=tangent, modified=modified)
        from mbsim.integrators import GeneralizedAlpha as GA
        ga = GA(Model(sc), sc.integrator)
        s = ga.initial_state()
        for k in range(150):
            res = ga.step(s, 2e-3)
            assert res.ok
            s = res.state
        runs[modified] = (s, ga.solver.nlu, ga.n_iterations)
    (a, lu_full, it_full), (b, lu_mod, it_mod) = runs[False], runs[True]
    assert np.abs(a.r - b.r).max() < 1e-8 and np.abs(a.w - b.w).max() < 1e-6
    assert lu_mod < 0.5 * lu_full
