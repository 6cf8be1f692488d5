"""Step control: fixed steps unchanged, adaptive cut-back and regrowth, frames on the grid."""
from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mbsim.driver import run
from mbsim.integrators import GeneralizedAlpha
from mbsim.io.writer import FRAME_DATASETS
from mbsim.model.model import Model
from mbsim.scenario import load_scenario, parse_scenario
from mbsim.stepping import AdaptiveSteps, FixedSteps
from tests.builders import nonlinear_3d


def test_fixed_run_is_exactly_a_plain_loop_of_steps_at_k_dt(monkeypatch):
    """With adaptivity off, the driver takes the steps t_k = k·Δt and nothing else: its frames
    equal, bit for bit, a hand-written loop over the integrator (one Python step at a time; the
    compiled block loop is held to that loop in test_compiled_step_loop_follows_the_python_newton_step)."""
    monkeypatch.setattr(GeneralizedAlpha, "can_advance", False)
    sc = nonlinear_3d(0.8, end=0.05, step=5e-3)
    sc = dataclasses.replace(sc, output=dataclasses.replace(sc.output, interval=1e-2))
    f = run(sc, write=False, keep_frames=True).frames_data
    ga = GeneralizedAlpha(Model(sc), sc.integrator)
    s = ga.initial_state()
    positions = [s.r[ga.model.order]]
    for k in range(1, 11):
        s = dataclasses.replace(ga.step(s, k * 5e-3 - s.t).state, t=k * 5e-3)
        if k % 2 == 0:
            positions.append(s.r[ga.model.order])
            s = ga.restart(s)  # the driver restarts after every frame (fresh tangent, no predictor history)
    assert np.array_equal(f["bodies/position"], np.array(positions))
    assert np.array_equal(f["time"], 5e-3 * np.arange(0, 11, 2))


def test_fixed_controller_sequence():
    c = FixedSteps(end=0.035, step=0.01, interval=0.02)
    seq = []
    while not c.done(0):
        seq.append(c.target(0))
        c.accepted(None)
    assert seq == [(0.01, False), (0.02, True), (0.03, False), (0.035, True)]


class _Res:
    def __init__(self, iterations):
        self.iterations = iterations


def test_adaptive_controller_halves_grows_and_lands_on_frames():
    c = AdaptiveSteps(end=1.0, step=0.1, interval=0.25, min_step=0.01)
    t, seq = 0.0, []
    assert c.rejected_step(_Res(25), 0.0, 0.1) is None and c.dt == 0.05
    while not c.done(t):
        t1, frame = c.target(t)
        seq.append((round(t1, 12), frame))
        c.accepted(_Res(2))
        t = t1
    frames = [t1 for t1, fr in seq if fr]
    assert frames == [0.25, 0.5, 0.75, 1.0]
    steps = np.diff([0.0] + [t1 for t1, _ in seq])
    assert steps.max() <= 0.1 + 1e-15 and steps[0] == pytest.approx(0.05)
    assert np.isclose(steps[-1], 0.05) or steps[-3:].max() == pytest.approx(0.1)  # grew back
    assert c.dt == 0.1
    # giving up below min_step, with the reason
    c = AdaptiveSteps(end=1.0, step=0.1, interval=0.25, min_step=0.03)
    assert c.rejected_step(_Res(25), 0.0, 0.1) is None  # 0.05
    why = c.rejected_step(_Res(25), 0.0, 0.05)
    assert why is not None and "time.min_step" in why and c.rejected == 2


STIFF = """\
mbsim: 1
name: stiff-swing
gravity: [0, 0, -9.81]
time: {end: 0.6, step: 0.05%s}
integrator: {rho_inf: 0.5, newton: {max_iterations: 4}}
output: {interval: 0.1}
bodies:
  - {name: bob, mass: 1.0, inertia: [0.01, 0.02, 0.03], position: [1, 0, 0],
     velocity: [0, 0, 0], angular_velocity: [20, -10, 30]}
connectors:
  - {name: rod, type: spring, bodies: [world, bob], points: [[0, 0, 0], [1, 0, 0]], stiffness: 5.0e4}
  - {name: drag, type: damper, bodies: [world, bob], points: [[0, 0, 0], [1, 0, 0]], damping: 2.0}
"""


def test_adaptive_cut_back_rescues_a_run_that_fails_with_fixed_steps(tmp_path):
    """A stiff pendulum at a coarse step with a tight iteration limit: fixed steps fail; adaptive
    steps cut back, grow again, land on every frame, count the rejections, and agree with a
    fine fixed-step run to the accuracy of their largest step."""
    fixed = run(parse_scenario(STIFF % ""), write=False)
    assert fixed.status == "failed" and "time.adaptive is off" in fixed.message

    sc = parse_scenario(STIFF % ", adaptive: true")
    out = tmp_path / "adaptive.h5"
    res = run(sc, str(out), keep_frames=True)
    assert res.status == "completed", res.message
    assert res.rejected_steps > 0
    f = res.frames_data
    np.testing.assert_allclose(f["time"], 0.1 * np.arange(7), rtol=0, atol=1e-15)
    assert f["solver/step"][1:].min() < 0.05  # cut back somewhere
    import h5py
    with h5py.File(out) as h:
        assert h.attrs["rejected_steps"] == res.rejected_steps
        assert h.attrs["time_adaptive"]



def test_variable_steps_keep_the_accuracy(monkeypatch):
    """Steps forced to fail between t = 0.2 and 0.3 unless halved twice: the adaptive run cuts
    back there and grows again, and its error against the independent reference stays that of
    the fixed-step run (generalized-α carries its state across a change of step)."""
    from mbsim.integrators import StepResult, StepStatus
    from mbsim.kernels.rotations import quat_angle
    from mbsim.reference import solve_reference
    sc = nonlinear_3d(0.6, end=0.5, step=4e-3)
    sc = dataclasses.replace(sc, output=dataclasses.replace(sc.output, interval=0.02))
    fixed = run(sc, write=False, keep_frames=True).frames_data
    original = GeneralizedAlpha.step

    def fussy(self, s, dt):
        if 0.2 <= s.t < 0.3 and dt > 1.1e-3:
            return StepResult(StepStatus.MAX_ITERATIONS, 25, 1.0, "forced failure")
        return original(self, s, dt)

    monkeypatch.setattr(GeneralizedAlpha, "step", fussy)
    ada_sc = dataclasses.replace(sc, time=dataclasses.replace(sc.time, adaptive=True, min_step=1e-4))
    res = run(ada_sc, write=False, keep_frames=True)
    assert res.status == "completed" and res.rejected_steps >= 2
    ada = res.frames_data
    ref = solve_reference(sc, times=fixed["time"])
    e_fixed = np.abs(fixed["bodies/position"] - ref.position).max()
    e_ada = np.abs(ada["bodies/position"] - ref.position).max()
    assert e_ada < 1.5 * e_fixed, (e_ada, e_fixed)
    assert quat_angle(ada["bodies/orientation"], ref.orientation).max() < \
        1.5 * quat_angle(fixed["bodies/orientation"], ref.orientation).max()
    assert ada["solver/step"][1:].min() <= 1e-3 and ada["solver/step"][-1] == pytest.approx(4e-3)


def test_adaptive_gives_up_below_min_step_and_says_so():
    sc = parse_scenario(STIFF % ", adaptive: true, min_step: 0.03")
    res = run(sc, write=False)
    assert res.status == "failed" and res.exit_code == 3
    assert "time.min_step" in res.message and res.rejected_steps >= 1


def test_a_collapsed_step_is_found_and_named():
    """issue 15: COLLAPSED_STEPS accepted steps in a row below COLLAPSED_FRACTION of time.step, with more
    than COLLAPSED_REMAINING still to go at that pace, is a collapse; fewer, or near the end, is not."""
    from mbsim import stepping
    c = AdaptiveSteps(end=1.0, step=0.1, interval=0.25, min_step=1e-20)
    t = 0.0
    for k in range(stepping.COLLAPSED_STEPS - 1):
        c.accepted(_Res(2), t, 1e-12)
        t += 1e-12
    assert stepping.collapsed(c, t) is None  # one step short
    c.accepted(_Res(2), t, 1e-12)
    t += 1e-12
    why = stepping.collapsed(c, t)
    assert why is not None and f"the last {stepping.COLLAPSED_STEPS} steps were all below" in why
    assert "1e+12 steps away" in why and "time.min_step" in why
    c.accepted(_Res(2), t, 0.05)  # a normal step ends the stretch
    assert c.small == 0 and stepping.collapsed(c, t) is None
    near = AdaptiveSteps(end=1.0, step=0.1, interval=0.25, min_step=1e-20)
    t = 1.0 - 2e-7
    for k in range(stepping.COLLAPSED_STEPS):
        near.accepted(_Res(2), t, 1e-12)
        t += 1e-12
    assert stepping.collapsed(near, t) is None  # ~1e5 steps to go: slow, but it ends
    assert stepping.collapsed(FixedSteps(end=1.0, step=0.1, interval=0.1), 0.5) is None


def test_a_run_whose_step_collapses_fails_with_the_reason(monkeypatch, capsys, tmp_path):
    """The driver ends such a run (exit 3, status failed) with a message that says how far it got and
    what failed, and the command line's hints start with time.min_step."""
    from mbsim import stepping
    from mbsim.cli import main
    monkeypatch.setattr(stepping, "COLLAPSED_STEPS", 3)
    monkeypatch.setattr(stepping, "COLLAPSED_FRACTION", 0.9)  # every cut step counts as collapsed here
    monkeypatch.setattr(stepping, "COLLAPSED_REMAINING", 0.0)
    res = run(parse_scenario(STIFF % ", adaptive: true"), write=False)
    assert res.status == "failed" and "the step has collapsed: the last 3 steps" in res.message
    assert "the last larger step failed:" in res.message
    path = tmp_path / "stiff.yaml"
    path.write_text(STIFF % ", adaptive: true")
    assert main(["run", str(path), "-o", str(tmp_path / "stiff.h5"), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "what to try:\n  - a larger time.min_step (now 5e-08 s)" in err


def test_adaptive_keys_are_validated():
    from mbsim.scenario import ScenarioError
    bad = STIFF % ", adaptive: yes, min_step: 0.5"
    with pytest.raises(ScenarioError) as e:
        parse_scenario(bad)
    text = str(e.value)
    assert "time.adaptive (line 4)" in text and "true or false" in text


def test_adaptive_min_step_default_and_bound():
    sc = parse_scenario(STIFF % ", adaptive: true")
    assert sc.time.min_step == pytest.approx(0.05e-6)
    from mbsim.scenario import ScenarioError
    with pytest.raises(ScenarioError, match=r"time.min_step \(line 4\): must not exceed time.step"):
        parse_scenario(STIFF % ", min_step: 0.5")


def test_examples_still_load_with_their_defaults():
    sc = load_scenario("scenarios/pendulum.yaml")
    assert sc.time.adaptive is False and sc.time.min_step == pytest.approx(1e-6 * sc.time.step)
    assert textwrap  # (imported for readability of STIFF variants)


def ring(n):
    """``chain(n)`` closed into a ring (the last body joined to the first): not a forest, so
    the compiled loop solves with its dense LU."""
    from tests.builders import damper, spring, torsional
    from tests.unit.test_model import chain
    sc = chain(n)
    a, b = f"b{n - 1}", "b0"
    pa, pb = (float(n), 0.0, 0.0), (1.0, 0.0, 0.0)
    closing = (spring("k_ring", a, b, pa, pb, 1e3), damper("c_ring", a, b, pa, pb, 2.0),
               torsional("t_ring", a, b, 0.5, "P1", (0, 0, 1)))
    return dataclasses.replace(sc, connectors=sc.connectors + closing)


@pytest.mark.parametrize("topology", ["chain", "ring"])
@pytest.mark.parametrize("modified", [True, False])
def test_compiled_step_loop_follows_the_python_newton_step(modified, topology):
    """Blocks of steps in the compiled loop (mbsim.integrators.step) against the Python step it
    mirrors (forced by an on_step callback): the same trajectory to the Newton tolerance, the same
    work, and the same energy integrals -- with the block tree LU (a chain) and the dense LU (a ring)."""
    from tests.unit.test_model import chain
    base = chain(6) if topology == "chain" else ring(6)
    ga = GeneralizedAlpha(Model(base), base.integrator)
    assert ga.solver.strategy == ("tree" if topology == "chain" else "dense") and ga.can_advance
    sc = dataclasses.replace(base, time=dataclasses.replace(base.time, end=0.3, step=2e-3),
                             integrator=dataclasses.replace(base.integrator, modified=modified),
                             output=dataclasses.replace(base.output, interval=0.02))
    seen = []
    python = run(sc, write=False, keep_frames=True, on_step=seen.append)
    compiled = run(sc, write=False, keep_frames=True)
    assert len(seen) == python.steps == compiled.steps == 150
    a, b = python.frames_data, compiled.frames_data
    assert np.abs(a["bodies/position"] - b["bodies/position"]).max() < 1e-9
    assert np.abs(a["bodies/angular_velocity"] - b["bodies/angular_velocity"]).max() < 1e-6
    for k in ("energy/dissipated", "energy/external_work", "energy/kinetic"):
        assert np.allclose(a[k], b[k], rtol=1e-8, atol=1e-10)
    assert python.newton_iterations == compiled.newton_iterations


# A forest (the compiled loops' domain) with a fixed body declared before the moving ones (so the
# internal body order differs from the scenario's), every connector kind, and loads that vary in time.
FOREST = """\
mbsim: 1
name: forest
gravity: [0, 0, -9.81]
time: {end: 0.503, step: 1.0e-3}
output: {interval: 5.0e-3}
bodies:
  - {name: base, mass: 1, inertia: [1, 1, 1], fixed: true, position: [0, 0, 0.5]}
  - {name: a, mass: 1.2, inertia: [0.02, 0.03, 0.05], position: [0.3, 0, -1], angular_velocity: [1.5, -2, 3]}
  - {name: b, mass: 0.8, inertia: [0.01, 0.015, 0.012], position: [0.6, 0.4, -1.8], velocity: [0, -0.3, 0.2]}
  - {name: c, mass: 0.5, inertia: [0.01, 0.01, 0.02], position: [1, 0, 0.5], angular_velocity: [0, 0, 5]}
connectors:
  - {type: spring, bodies: [world, a], points: [[0, 0, 0], [0.3, 0.05, -0.9]], stiffness: 300, rest_length: 0.7}
  - {type: spring, bodies: [a, b], points: [[0.35, 0, -1.1], [0.6, 0.45, -1.7]], stiffness: 150}
  - {type: damper, bodies: [a, b], points: [[0.3, 0.1, -1.05], [0.55, 0.4, -1.75]], damping: 0.5}
  - {type: torsional_damper, bodies: [a, b], damping: 0.02, projection: P2, axis: [0.2, 0.3, 1]}
  - {type: spring, bodies: [base, c], points: [[0, 0, 0.5], [1, 0, 0.5]], stiffness: 50}
  - {type: torsional_damper, bodies: [base, c], damping: 0.01, joint: revolute, axis: [0, 0, 1]}
loads:
  - {type: torque, body: b, vector: [0, 0.05, 0.02], scale: {sine: {amplitude: 1, frequency: 1.3}}}
  - {type: force, body: c, vector: [0, 2, 0], scale: {ramp: {t0: 0.1, t1: 0.3, from: 0, to: 1}}}
"""


def _file_contents(path):
    import h5py
    with h5py.File(path) as f:
        data = {k: f[k][:] for k in FRAME_DATASETS}
        return data, {k: f.attrs[k] for k in ("steps", "newton_iterations", "status")}


# The same bodies closed into a loop a-b-c-a: not a forest, so the compiled loops use the dense LU.
LOOP = FOREST.replace("loads:", """\
  - {type: spring, bodies: [b, c], points: [[0.6, 0.4, -1.8], [1, 0, 0.5]], stiffness: 80}
  - {type: damper, bodies: [c, a], points: [[1, 0, 0.5], [0.3, 0, -1]], damping: 0.3}
loads:""")


@pytest.mark.parametrize("text, solver", [(FOREST, "block tree LU"), (LOOP, "dense LU")], ids=["forest", "loop"])
@pytest.mark.parametrize("seconds", [0.0, 1.0])
def test_whole_frames_per_compiled_call_change_nothing(tmp_path, monkeypatch, seconds, text, solver):
    """The compiled multi-frame loop (frames written from inside it) against one compiled block per
    frame with the frame computed in Python: the same file to the last bit, one frame per call
    (CALL_SECONDS = 0) or as many as fit; the final shorter step and the frame grid included."""
    import mbsim.driver as driver
    sc = parse_scenario(text)
    monkeypatch.setattr(driver, "CALL_SECONDS", seconds)
    many = run(sc, str(tmp_path / "many.h5"), keep_frames=True)
    monkeypatch.setattr(driver._Loop, "multi_frame", False)
    one = run(sc, str(tmp_path / "one.h5"), keep_frames=True)
    assert many.status == one.status == "completed"
    assert many.linear_solver.startswith(solver)
    assert many.frames == one.frames == 102  # 0, 5 ms, …, 0.5 s and the end, 0.503 s
    a, attrs_a = _file_contents(tmp_path / "many.h5")
    b, attrs_b = _file_contents(tmp_path / "one.h5")
    assert attrs_a == attrs_b
    for k in FRAME_DATASETS:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k], equal_nan=True), k
    for k, v in one.frames_data.items():
        assert np.array_equal(many.frames_data[k], v, equal_nan=True), k
    assert many.energy_drift_J == one.energy_drift_J


def test_a_step_that_fails_inside_a_multi_frame_call_is_reported_as_before(tmp_path, monkeypatch):
    """A torque spike at t = 0.2366 s that Newton cannot follow in 4 iterations: the step from
    0.236 s (the 7th of a frame) fails with the same message, the same frames on disk and the
    same work counters whichever loop took the steps before it."""
    import mbsim.driver as driver
    text = textwrap.dedent("""\
        mbsim: 1
        time: {end: 1.0, step: 1.0e-3}
        output: {interval: 1.0e-2}
        integrator: {newton: {max_iterations: 4}}
        bodies:
          - {name: a, mass: 1, inertia: [0.01, 0.02, 0.03], position: [1, 0, 0], angular_velocity: [0, 1, 20]}
        connectors:
          - {type: spring, bodies: [world, a], points: [[0, 0, 0], [0.9, 0, 0]], stiffness: 100}
        loads:
          - {type: torque, body: a, vector: [1.0e5, 1.0e5, 0], scale: {table: [[0.2365, 0], [0.2366, 1]]}}
        """)
    sc = parse_scenario(text)
    many = run(sc, str(tmp_path / "many.h5"))
    monkeypatch.setattr(driver._Loop, "multi_frame", False)
    one = run(sc, str(tmp_path / "one.h5"))
    assert many.status == one.status == "failed"
    assert many.message == one.message and many.failure == one.failure
    assert many.frames == one.frames == 24  # t = 0 … 0.23 s
    assert "step 237 from t = 0.236 s" in many.message
    a, attrs_a = _file_contents(tmp_path / "many.h5")
    b, attrs_b = _file_contents(tmp_path / "one.h5")
    assert attrs_a == attrs_b
    for k in FRAME_DATASETS:
        assert np.array_equal(a[k], b[k], equal_nan=True), k


def test_an_interrupt_inside_the_frame_bookkeeping_still_ends_cleanly(monkeypatch):
    """Ctrl-C can land between the appends of one block of frames to the driver's per-frame lists
    (seen in CI: 5214 kinetic energies against 4958 dissipated ones, then an internal error):
    the run still ends as interrupted, with the frames every list holds."""
    import mbsim.driver as driver
    frames = driver._Loop._frames
    calls = []

    def interrupted_frames(self, m, *args):
        calls.append(m)
        if len(calls) == 3:
            self.energies["kinetic"].extend([0.0] * m)  # one list has grown, the others not yet
            self.kept.setdefault("time", []).extend([0.0] * m)
            raise KeyboardInterrupt
        return frames(self, m, *args)

    monkeypatch.setattr(driver._Loop, "_frames", interrupted_frames)
    monkeypatch.setattr(driver, "CALL_SECONDS", 0.0)  # one frame per compiled call
    s = run(parse_scenario(FOREST), write=False, keep_frames=True)
    assert len(calls) == 3
    assert s.status == "interrupted" and s.exit_code == driver.EXIT_INTERRUPTED
    assert np.isfinite(s.energy_drift_J)
    lengths = {len(v) for v in s.frames_data.values()}
    assert lengths == {3}  # frame 0 and the two blocks completed before the interrupt


SPECIALIZATIONS = r"""
import dataclasses, importlib, json, pkgutil, sys
import mbsim.elements, mbsim.integrators, mbsim.kernels, mbsim.mechanics
from mbsim.kernels import Kernel
from mbsim import driver
from mbsim.driver import run
from mbsim.scenario import load_scenario

for path in sys.argv[1:]:
    sc = load_scenario(path)
    driver._Loop.multi_frame = True
    assert run(sc, None, write=False, end=0.05).status == "completed"
    driver._Loop.multi_frame = False
    assert run(sc, None, write=False, end=0.05).status == "completed"
    adaptive = dataclasses.replace(sc, time=dataclasses.replace(sc.time, adaptive=True))
    assert run(adaptive, None, write=False, end=0.05).status == "completed"
counts, differ = {}, {}
for pkg in (mbsim.kernels, mbsim.elements, mbsim.mechanics, mbsim.integrators):
  for m in pkgutil.iter_modules(pkg.__path__):
    mod = importlib.import_module(f"{pkg.__name__}.{m.name}")
    for name, obj in vars(mod).items():
        if isinstance(obj, Kernel) and obj.__module__ == mod.__name__ and obj._dispatcher is not None \
                and obj.dispatcher.overloads:
            key = f"{m.name}.{name}"
            counts[key] = len(obj.dispatcher.overloads)
            sigs = list(obj.dispatcher.overloads)
            args = obj.py_func.__code__.co_varnames
            differ[key] = sorted({f"{a}: {x} / {y}" for sig in sigs[1:] for a, x, y in zip(args, sigs[0], sig)
                                  if x != y})
print(json.dumps({"counts": counts, "differ": differ}))
"""


def test_every_compiled_entry_point_has_one_specialization():
    """Runs through every stepping path (whole frames per compiled call, one frame per call,
    Python-driven adaptive steps) of two models leave one numba specialization per kernel called
    from Python.  A second one -- from a literal
    argument, or a strided or read-only array where the other call site passes a contiguous or
    writable one -- costs up to ~25 s on a first run (the step loop was compiled twice that way;
    j_max and the torsional c0/c1 were strided columns).  In a fresh process, so that no other
    test's direct kernel calls count."""
    import json
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # one body and one torsional damper, then several of each: a column of a (1, k) array is
    # contiguous, of an (n, k) array strided -- the two models meet both
    models = [str(root / "scenarios" / name) for name in ("pendulum.yaml", "double_pendulum_3d.yaml")]
    done = subprocess.run([sys.executable, "-c", SPECIALIZATIONS, *models], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    counts, differ = out["counts"], out["differ"]
    assert "step.run" in counts and "frames.frame_row" in counts and "evaluate.at_state" in counts
    assert all(n == 1 for n in counts.values()), {k: differ[k] for k, n in counts.items() if n > 1}
