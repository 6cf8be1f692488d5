"""Second order of a 3D jointed mechanism -- positions, rotations, velocities *and* reactions -- for
ρ∞ = 0, 0.5, 0.9 and 1, against mbsim's independent reference solver (issue 13, item 6; THEORY §11).

The mechanism: three asymmetric bodies in a spatial chain -- a spherical joint to world, a revolute
about an oblique axis, a universal joint -- released tumbling under gravity (every initial velocity
satisfies the joints).  The reference (:mod:`mbsim.reference`: the index-1 equations solved for the
accelerations at every right-hand side, DOP853 at rtol 1e-12, projected onto the joints) shares no
code with the generalized-α path.  mbsim runs at Δt = 4, 2, 1 ms with its default Newton settings
(issue 7), and every quantity's error at the frames must fall by 2^(2.00 ± 0.15) per halving.

The reported reactions are those of the index-1 multipliers at the frame's own time (THEORY §11,
reactions).  The step's own multiplier belongs to t_n + α_f Δt, not t_{n+1}; taken as the frame's
reaction it is first order for α_f ≠ 1 (and alternates at ρ∞ = 1): the last test shows that the
reactions computed from it fail the same refinement test.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import tests.builders as b
from mbsim import driver
from mbsim.integrators import GeneralizedAlpha
from mbsim.model.model import Model
from mbsim.reference import solve_reference
from tests.integration._examples_util import rotation_angle

END, INTERVAL, STEPS = 0.48, 0.04, (4e-3, 2e-3, 1e-3)
QUANTITIES = {"position": "bodies/position", "rotation": "bodies/orientation", "velocity": "bodies/velocity",
              "angular velocity": "bodies/angular_velocity", "reaction force": "joints/force",
              "reaction moment": "joints/moment"}


def _unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def mechanism(dt=1e-3, rho=0.9, end=END):
    p1, c1, w1 = np.zeros(3), np.array([0.3, 0.1, -0.5]), np.array([0.5, -1.0, 2.0])
    v1 = np.cross(w1, c1 - p1)
    p2, c2, ax2 = np.array([0.5, 0.2, -1.0]), np.array([0.8, 0.2, -1.3]), _unit([0.3, 1.0, 0.2])
    w2 = w1 + 1.5 * ax2  # turning about the hinge relative to upper
    v2 = v1 + np.cross(w1, p2 - c1) + np.cross(w2, c2 - p2)
    p3, c3 = np.array([1.0, 0.3, -1.6]), np.array([1.2, 0.3, -1.9])
    w3 = w2  # no relative rotation at the start
    v3 = v2 + np.cross(w2, p3 - c2) + np.cross(w3, c3 - p3)
    bodies = [b.body("upper", 1.5, (0.05, 0.03, 0.04), c1, rotvec=(0.2, -0.1, 0.3), velocity=v1, angular_velocity=w1),
              b.body("lower", 1.0, (0.02, 0.035, 0.025), c2, rotvec=(-0.3, 0.2, 0.1), velocity=v2,
                     angular_velocity=w2),
              b.body("tip", 0.6, (0.01, 0.008, 0.012), c3, velocity=v3, angular_velocity=w3)]
    joints = [b.joint("shoulder", "spherical", "world", "upper", point=p1),
              b.joint("elbow", "revolute", "upper", "lower", point=p2, axis=ax2),
              b.joint("wrist", "universal", "lower", "tip", point=p3, axes=([0.6, 0.8, 0.0], [-0.8, 0.6, 0.0]))]
    return b.scenario(bodies, gravity=(0, 0, -9.81), joints=joints, end=end, step=dt, rho_inf=rho, interval=INTERVAL)


@pytest.fixture(scope="module")
def reference():
    times = np.round(np.arange(0.0, END + INTERVAL / 2, INTERVAL), 12)
    return solve_reference(mechanism(), times=times, rtol=1e-12, atol=1e-13).frames()


def _errors(frames, ref):
    out = {}
    for q, key in QUANTITIES.items():
        if key == "bodies/orientation":
            out[q] = float(rotation_angle(frames[key], ref[key]).max())
        else:
            out[q] = float(np.abs(np.asarray(frames[key]) - ref[key]).max())
    return out


def _run(sc, python=False):
    with warnings.catch_warnings():
        warnings.simplefilter("error", driver.JointWarning)  # nothing is projected: the velocities are consistent
        res = driver.run(sc, write=False, keep_frames=True, on_step=(lambda r: None) if python else None)
    assert res.status == "completed", res.message
    return res.frames_data


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9, 1.0])
def test_positions_velocities_and_reactions_are_second_order(rho, reference):
    errs = [_errors(_run(mechanism(dt, rho)), reference) for dt in STEPS]
    for q in QUANTITIES:
        e = [x[q] for x in errs]
        orders = np.log2(np.array(e[:-1]) / np.array(e[1:]))
        assert np.all(np.abs(orders - 2.0) < 0.15), (rho, q, e, orders)
        size = 1.0 if q == "rotation" else max(1.0, float(np.abs(reference[QUANTITIES[q]]).max()))
        assert e[-1] < 1e-3 * size, (rho, q, e)  # and small: the mechanism is resolved at these steps


def test_the_python_step_loop_reports_the_same_frames(reference):
    """Frames written by the Python loop (taken when a step callback is given, or with adaptive
    stepping) are those of the compiled loop: the same index-1 reactions, to round-off."""
    sc = mechanism(2e-3, 0.5, end=0.1)
    compiled, python = _run(sc), _run(sc, python=True)
    for key in QUANTITIES.values():
        assert np.allclose(compiled[key], python[key], rtol=0, atol=1e-9), key


def _step_multiplier_reactions(dt, rho):
    """Reaction force of every joint at the frames, from the step's own multiplier (at t_n + α_f Δt)
    taken as the frame's, and from the index-1 multipliers -- the Python stepper, frame by frame."""
    sc = mechanism(dt, rho)
    ga = GeneralizedAlpha(Model(sc), sc.integrator)
    s = ga.initial_state()
    every = int(round(INTERVAL / dt))
    own, index1 = [ga.frame(s)["joints/force"]], [ga.frame(s)["joints/force"]]
    for k in range(int(round(END / dt))):
        res = ga.step(s, dt)
        assert res.ok, res.message
        s = res.state
        if (k + 1) % every == 0:
            own.append(ga.frame(s)["joints/force"])
            s = ga.restart(s)
            index1.append(ga.frame(s)["joints/force"])
    return np.array(own), np.array(index1)


@pytest.mark.parametrize("rho", [0.5, 1.0])
def test_the_steps_own_multiplier_would_fail_the_refinement_test(rho, reference):
    ref = reference["joints/force"]
    e_own, e_idx = [], []
    for dt in STEPS[1:]:
        own, idx = _step_multiplier_reactions(dt, rho)
        e_own.append(float(np.abs(own - ref).max()))
        e_idx.append(float(np.abs(idx - ref).max()))
    assert abs(np.log2(e_idx[0] / e_idx[1]) - 2.0) < 0.15, e_idx
    assert np.log2(e_own[0] / e_own[1]) < 1.5, e_own  # first order (or worse): not the reaction to report
    assert e_own[1] > 10 * e_idx[1], (e_own, e_idx)


def test_energy_is_conserved_to_second_order_at_rho_one():
    """Ideal joints do no work and nothing dissipates: at ρ∞ = 1 (no numerical damping) kinetic +
    potential energy stays constant up to the discretization error, which falls by 4 per halving."""
    drift = []
    for dt in STEPS:
        fr = _run(mechanism(dt, 1.0))
        E = fr["energy/kinetic"] + fr["energy/potential"]
        drift.append(float(np.abs(E - E[0]).max()))
    ratios = np.array(drift[:-1]) / np.array(drift[1:])
    assert np.all((3.6 < ratios) & (ratios < 4.4)), (drift, ratios)
    assert drift[-1] < 1e-5, drift


def test_an_interrupted_jointed_run_resumes_to_the_last_bit(tmp_path, monkeypatch):
    """The example with every joint kind and both drives, interrupted after a few compiled calls and
    resumed from its file, equals the uninterrupted run bit for bit: joints and reactions included
    (the multipliers restart from the constrained equations at every frame, so a frame read back from
    the file carries everything the next step needs)."""
    import h5py

    from mbsim.scenario import load_scenario
    from tests.integration._examples_util import SCENARIO_DIR
    sc = load_scenario(str(SCENARIO_DIR / "joint_kinds.yaml"))
    sc = dataclasses.replace(sc, time=dataclasses.replace(sc.time, end=0.3))
    whole = driver.run(sc, str(tmp_path / "whole.h5"))
    monkeypatch.setattr(driver, "CALL_SECONDS", 0.0)
    calls = []
    for name in ("advance_frames", "advance", "step"):
        real = getattr(GeneralizedAlpha, name)

        def interrupting(self, *args, _real=real, **kw):
            calls.append(1)
            if len(calls) == 4:
                raise KeyboardInterrupt
            return _real(self, *args, **kw)
        monkeypatch.setattr(GeneralizedAlpha, name, interrupting)
    first = driver.run(sc, str(tmp_path / "part.h5"))
    monkeypatch.undo()
    second = driver.run(sc, str(tmp_path / "part.h5"), resume=True)
    assert (whole.status, first.status, second.status) == ("completed", "interrupted", "completed")
    with h5py.File(tmp_path / "whole.h5") as fa, h5py.File(tmp_path / "part.h5") as fb:
        assert 0 < first.frames < fa["time"].shape[0]
        for key in ("bodies/position", "bodies/orientation", "bodies/velocity", "joints/force", "joints/moment",
                    "joints/position_error", "energy/external_work"):
            assert np.array_equal(fa[key][:], fb[key][:]), key
