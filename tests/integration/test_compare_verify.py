"""``mbsim compare`` and ``mbsim verify`` end to end, plus the library functions under them.

Expected values come from constructions whose answer is known without
mbsim: a file compared with itself or with its quaternions negated (zero
difference), a perturbation put in by the test (its size, frame and body),
a trajectory sampled on a grid and a sub-grid of it (exact interpolation),
a rotation about a fixed axis in closed form (normalised lerp at midpoints
equals slerp), free fall (reproduced exactly by the scheme, so its error is
round-off), and the order 2 of THEORY §2 measured against the independent
reference solver.
"""
from __future__ import annotations

import json
import re
import shutil
import textwrap

import h5py
import numpy as np
import pytest

from mbsim.cli import main
from mbsim.compare import (DEFAULT_ATOL, DEFAULT_RTOL, NotComparable, compare_trajectories,
                           resolve_tolerances)
from mbsim.driver import run
from mbsim.io.reader import read_trajectory
from mbsim.reference import solve_reference
from mbsim.scenario import parse_scenario
from mbsim.verify import verify

# A spinning asymmetric body hanging from world on a spring (rest length 0.9 m)
# with a damper and a P1 torsional damper, under gravity: nonlinear in 3D.
SPINNING = """\
mbsim: 1
name: spinning-bob
gravity: [0, 0, -9.81]
time: {end: 0.2, step: 0.004}
bodies:
  - name: bob
    mass: 1.0
    inertia: [0.01, 0.02, 0.03]
    position: [0.1, 0, -1]
    orientation: {rotation_vector: [0.3, -0.2, 0.1]}
    velocity: [0.3, 0.2, 0]
    angular_velocity: [3.0, -2.0, 5.0]
connectors:
  - {name: hanger, type: spring, bodies: [world, bob], points: [[0, 0, 0], [0.1, 0.02, -0.95]],
     stiffness: 200.0, rest_length: 0.9}
  - {name: shock, type: damper, bodies: [world, bob], points: [[0, 0, 0], [0.1, 0.02, -0.95]], damping: 1.5}
  - {name: swivel, type: torsional_damper, bodies: [world, bob], damping: 0.05, projection: P1}
"""

# Free flight under gravity: position quadratic in t, which generalized-α
# reproduces exactly; no rotation.
FREE_FALL = """\
mbsim: 1
name: free-fall
gravity: [0, 0, -9.81]
time: {end: 0.5, step: 0.01}
bodies:
  - {name: stone, mass: 2.0, inertia: [0.01, 0.01, 0.01], position: [0, 0, 10], velocity: [1.0, 0, 2.0]}
"""

# From test_cli: a spring of rest length 1.0625 whose anchor the puck flies
# through at t = 1.0625, where its direction is undefined: every run fails.
COLLAPSE = """\
mbsim: 1
name: collapse
time: {end: 2.0, step: 0.125}
integrator: {rho_inf: 1.0}
bodies:
  - {name: puck, mass: 1.0, inertia: [0.1, 0.1, 0.1], position: [1.0625, 0, 0], velocity: [-1, 0, 0]}
connectors:
  - {name: tether, type: spring, bodies: [world, puck], points: [[0, 0, 0], [1.0625, 0, 0]], stiffness: 0.0}
"""


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The spinning body at Δt = 4 ms (frames every 4 ms) and on a grid twice as fine (Δt = 2 ms)."""
    d = tmp_path_factory.mktemp("compare")
    sc = write(d / "spin.yaml", SPINNING)
    fine = write(d / "fine.yaml", SPINNING.replace("step: 0.004}", "step: 0.002}"))
    a, b = d / "a.h5", d / "fine.h5"
    assert main(["run", str(sc), "-o", str(a), "--quiet"]) == 0
    assert main(["run", str(fine), "-o", str(b), "--quiet"]) == 0
    return {"dir": d, "a": a, "fine": b, "scenario": sc}


def copy(files, name, edit=None):
    """A copy of the 4 ms result, edited in place by ``edit(h5file)``."""
    p = files["dir"] / name
    shutil.copy(files["a"], p)
    if edit is not None:
        with h5py.File(p, "r+") as f:
            edit(f)
    return p


def compare_json(capsys, *args):
    code = main(["compare", *map(str, args), "--json"])
    return code, json.loads(capsys.readouterr().out)


# --------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------
def test_a_file_equals_itself(files, capsys):
    code, rep = compare_json(capsys, files["a"], files["a"])
    assert code == 0 and rep["passed"] and rep["comparable"]
    assert len(rep["quantities"]) == 15
    assert all(q["max_error"] == 0 and q["rms_error"] == 0 for q in rep["quantities"].values())
    assert rep["frames"] == 51 and rep["t_last"] == pytest.approx(0.2)
    assert main(["compare", str(files["a"]), str(files["a"])]) == 0
    out = capsys.readouterr().out
    assert "same within tolerance: all 15 quantities" in out


def test_negated_quaternions_are_the_same_rotation(files, capsys):
    def negate(f):
        f["bodies/orientation"][...] = -f["bodies/orientation"][()]
    neg = copy(files, "negated.h5", negate)
    assert read_trajectory(neg)["bodies/orientation"][0, 0, 0] < 0  # the edit took
    code, rep = compare_json(capsys, neg, files["a"])
    assert code == 0
    assert rep["quantities"]["orientation"]["max_error"] == 0


def test_a_perturbation_is_named_by_quantity_body_and_time(files, capsys):
    t = read_trajectory(files["a"])["time"]

    def nudge(f):
        p = f["bodies/position"][()]
        p[17, 0, 2] += 1e-3  # 1 mm in z at frame 17
        f["bodies/position"][...] = p
    bad = copy(files, "perturbed.h5", nudge)
    assert main(["compare", str(bad), str(files["a"])]) == 1
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if s.startswith("  position [m]"))
    assert "FAIL" in line and f"t = {t[17]:.6g} s, bob" in line
    assert re.search(rf"position: max error 1\.000e-03 m at t = {t[17]:.6g} s \(body bob\)", out)
    assert "DIFFERENT: 1 of 15" in out and "--rtol position=1e-3" in out

    code, rep = compare_json(capsys, bad, files["a"])
    q = rep["quantities"]["position"]
    assert code == 1 and rep["failures"] == ["position"]
    assert q["max_error"] == pytest.approx(1e-3, rel=1e-9)
    assert q["rms_error"] == pytest.approx(1e-3 / np.sqrt(51), rel=1e-9)  # one value of 51 differs
    assert q["time"] == pytest.approx(t[17]) and q["item"] == "bob"
    assert q["tolerance"] == pytest.approx(DEFAULT_ATOL + DEFAULT_RTOL * q["scale"])
    assert not q["passed"] and rep["quantities"]["velocity"]["passed"]


def test_tolerance_overrides_flip_the_verdict(files, capsys):
    def nudge(f):
        f["bodies/velocity"][5, 0, 0] += 1e-4
        f["energy/kinetic"][5] += 1e-4
    bad = copy(files, "nudged.h5", nudge)
    a = files["a"]
    assert main(["compare", str(bad), str(a), "--json"]) == 1
    assert main(["compare", str(bad), str(a), "--rtol", "1e-3", "--json"]) == 0  # global
    assert main(["compare", str(bad), str(a), "--rtol", "velocity=1e-3", "--json"]) == 1  # kinetic still off
    assert main(["compare", str(bad), str(a), "--rtol", "velocity=1e-3", "--rtol", "energy=1e-3", "--json"]) == 0
    # A quantity's own value beats the global one, in either order on the line.
    assert main(["compare", str(bad), str(a), "--rtol", "velocity=1e-9", "--rtol", "1e-3", "--json"]) == 1
    assert main(["compare", str(bad), str(a), "--atol", "velocity=1e-3", "--atol", "kinetic=2e-4",
                 "--json"]) == 0
    capsys.readouterr()
    assert main(["compare", str(bad), str(a), "--rtol", "speed=1"]) == 2
    assert "unknown quantity 'speed'" in capsys.readouterr().err


def test_resolve_tolerances_ranks_names_over_groups_over_all():
    tol = resolve_tolerances({"position": 1e-2, "bodies": 1e-4, "all": 1e-3}, 0.5)
    assert tol["position"] == (1e-2, 0.5)
    assert tol["velocity"] == (1e-4, 0.5)
    assert tol["kinetic"] == (1e-3, 0.5)
    with pytest.raises(ValueError, match="unknown quantity"):
        resolve_tolerances({"speed": 1.0})


def test_different_time_grids_need_interpolate(files, capsys):
    a, fine = files["a"], files["fine"]
    assert main(["compare", str(a), str(fine)]) == 2
    err = capsys.readouterr().err
    assert "time grids differ" in err and "--interpolate" in err and "101 frames" in err
    # The two runs differ by their time steps' O(Δt²) error (~1e-5 rad) and generalized-α's
    # algorithmic accelerations by more (~5e-3 relative): only loose tolerances pass.
    code, rep = compare_json(capsys, a, fine, "--interpolate", "--rtol", "1e-3", "--rtol", "acceleration=1e-2",
                             "--rtol", "angular_acceleration=1e-2")
    assert code == 0 and rep["interpolated"] and rep["frames"] == 51
    assert 0 < rep["quantities"]["orientation"]["max_error"] < 1e-3
    assert main(["compare", str(a), str(fine), "--interpolate", "--json"]) == 1


def test_interpolation_onto_a_subgrid_is_exact(files):
    fine = read_trajectory(files["fine"])
    sub = {k: (v[::2] if isinstance(v, np.ndarray) and v.ndim and len(v) == len(fine["time"]) else v)
           for k, v in fine.items()}
    rep = compare_trajectories(sub, fine, interpolate=True)
    assert rep.interpolated and rep.frames == 51 and rep.passed
    assert max(q.max_error for q in rep.quantities) < 1e-14


def test_quaternions_are_interpolated_the_short_way():
    """Rotation about a fixed axis at 2 rad/s: B on a 0.1 s grid with every other quaternion
    negated, A in closed form at the midpoints, where the normalised lerp equals slerp."""
    n = np.array([1.0, 2.0, 2.0]) / 3.0

    def traj(t, flip=False):
        q = np.concatenate((np.cos(t)[:, None], np.sin(t)[:, None] * n), axis=1)[:, None, :]
        if flip:
            q[1::2] *= -1
        return {"time": t, "bodies/name": ["spinner"], "bodies/orientation": q}

    tb = np.arange(0.0, 1.01, 0.1)
    rep = compare_trajectories(traj(tb[:-1] + 0.05), traj(tb, flip=True), interpolate=True)
    assert rep["orientation"].max_error < 1e-14
    assert "position" in rep.skipped  # only what both hold is compared


def test_bodies_must_match(files, capsys):
    def rename(f):
        del f["bodies/name"]
        f.create_dataset("bodies/name", data=["rock"], dtype=h5py.string_dtype())
    other = copy(files, "renamed.h5", rename)
    assert main(["compare", str(files["a"]), str(other)]) == 2
    err = capsys.readouterr().err
    assert "not comparable" in err and "only in" in err and "bob" in err and "rock" in err
    code, rep = compare_json(capsys, files["a"], other)
    assert code == 2 and rep["comparable"] is False and "bodies differ" in rep["error"]


def test_unreadable_files_are_exit_2(files, capsys, tmp_path):
    assert main(["compare", str(files["a"]), str(tmp_path / "missing.h5")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["compare", str(files["scenario"]), str(files["a"])]) == 2
    assert "cannot open as HDF5" in capsys.readouterr().err


def test_status_other_than_completed_is_a_warning(files, capsys):
    def fail(f):
        f.attrs["status"] = "interrupted"
    cut = copy(files, "interrupted.h5", fail)
    assert main(["compare", str(cut), str(files["a"])]) == 0
    assert "warning:" in capsys.readouterr().err


def test_in_memory_frames_compare_with_the_reference():
    """frames_data (no names, no attributes) against ReferenceSolution.frames()."""
    sc = parse_scenario(SPINNING)
    f = run(sc, write=False, keep_frames=True, end=0.1).frames_data
    ref = solve_reference(sc, times=f["time"])
    # Second-order errors at 4 ms are ~1e-5 relative; the algorithmic accelerations of
    # generalized-α depart from the true ones by ~5e-3 relative after the first step.
    rep = compare_trajectories(f, ref.frames(), rtol={"all": 1e-4, "acceleration": 1e-2,
                                                      "angular_acceleration": 1e-2})
    assert rep.bodies == ["#0"] and rep.connectors == ["#0", "#1", "#2"]
    assert rep.passed, [q.name for q in rep.failures]
    assert rep["position"].max_error > 0


def test_not_comparable_without_frames():
    with pytest.raises(NotComparable, match="no frames"):
        compare_trajectories({"time": np.zeros(0)}, {"time": np.zeros(1)})


# --------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------
def test_verify_measures_second_order_on_a_nonlinear_model(tmp_path, capsys):
    p = write(tmp_path / "spin.yaml", SPINNING)
    assert main(["verify", str(p), "--end", "0.2", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["passed"] and rep["exit_code"] == 0
    assert [r["step"] for r in rep["runs"]] == pytest.approx([4e-3, 2e-3, 1e-3])
    assert all(r["status"] == "completed" and r["wall_time_s"] > 0 for r in rep["runs"])
    assert rep["reference"]["status"] == "completed"
    for name in ("position", "rotation", "velocity", "angular_velocity", "energy_balance"):
        q = rep["quantities"][name]
        assert q["status"] == "ok", q
        e = q["errors"]
        assert e[0] > e[1] > e[2] > q["floor"]
        assert all(abs(p - 2.0) <= 0.15 for p in q["orders"]), (name, q["orders"])

    assert main(["verify", str(p), "--end", "0.1"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"Δt/4\s+0\.001\s+100\s+\d+\s+\S+ s", out)  # a run line with its wall time
    assert "reference DOP853" in out
    assert re.search(r"position error at Δt = 0\.004 s: \S+ m; halving Δt divides it by 4\.\d\d, "
                     r"then by 4\.\d\d \(orders \S+ and \S+; expected 2\) — OK", out)
    assert "second order confirmed" in out


def test_verify_of_an_exactly_representable_motion_says_round_off(tmp_path, capsys):
    p = write(tmp_path / "fall.yaml", FREE_FALL)
    assert main(["verify", str(p), "--end", "0.2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"position error at Δt = 0\.01 s: \S+ m, at round-off .*order not measurable — OK", out)
    assert "every error is at round-off" in out


def test_verify_library_and_custom_steps():
    sc = parse_scenario(SPINNING)
    rep = verify(sc, end=0.08, steps=(8e-3, 4e-3))
    assert [r.label for r in rep.runs] == ["Δt", "Δt/2"]
    assert rep.interval == pytest.approx(8e-3)  # 4 ms is no multiple of 8 ms: the coarse step's
    pos = next(q for q in rep.quantities if q.name == "position")
    assert len(pos.orders) == 1 and pos.orders[0] is not None
    with pytest.raises(ValueError, match="decreasing"):
        verify(sc, steps=(1e-3, 2e-3))
    with pytest.raises(ValueError, match="shorter than the time step"):
        verify(sc, end=1e-3)


@pytest.mark.parametrize("errors, status, words", [
    ([1e-4, 5e-5, 2.5e-5], "off", "(orders 1.00 and 1.00; expected 2 ± 0.3) — NOT second order"),
    ([1e-8, 2.5e-9, 1e-13], "ok", "divides it by 4.00, then below the round-off floor of 1.00e-12 m at Δt/4 "
                                  "(order 2.00; expected 2) — OK"),
    ([1e-4, None, 6e-6], "unmeasured", "order not measured (a run in between did not complete)"),
    ([1e-13, 2e-13, 1e-13], "round-off", "at round-off (floor 1.00e-12 m); order not measurable — OK"),
])
def test_verdict_wording(errors, status, words):
    """How the measured errors (made up here: this is about the classification) are put in words."""
    from mbsim.verify import StepRun, _judge
    runs = [StepRun(h, label, "completed" if e is not None else "failed", "", 1, 1, 0.1, 3)
            for h, label, e in zip((4e-3, 2e-3, 1e-3), ("Δt", "Δt/2", "Δt/4"), errors)]
    q = _judge("position", "position", "m", runs, errors, 1e-12, 0.3)
    assert q.status == status and words in q.verdict, q.verdict


def test_the_energy_balance_may_converge_faster_than_second_order():
    """Third order on the energy balance (a conservative motion: the scheme's dissipation is O(Δt³))
    is fine; first order is not. Position errors at order 3 stay suspect."""
    from mbsim.verify import StepRun, _judge
    runs = [StepRun(h, label, "completed", "", 1, 1, 0.1, 3)
            for h, label in zip((4e-3, 2e-3, 1e-3), ("Δt", "Δt/2", "Δt/4"))]
    third, first = [8e-4, 1e-4, 1.25e-5], [1e-4, 5e-5, 2.5e-5]
    q = _judge("energy_balance", "energy balance", "J", runs, third, 1e-12, 0.3)
    assert q.status == "ok" and "(orders 3.00 and 3.00; expected at least 2) — OK" in q.verdict, q.verdict
    q = _judge("energy_balance", "energy balance", "J", runs, first, 1e-12, 0.3)
    assert q.status == "off" and "expected at least 2 − 0.3) — NOT second order" in q.verdict, q.verdict
    assert _judge("position", "position", "m", runs, third, 1e-12, 0.3).status == "off"


def test_verify_an_order_other_than_two_is_exit_1(tmp_path, capsys, monkeypatch):
    import mbsim.verify
    monkeypatch.setattr(mbsim.verify, "EXPECTED_ORDER", 3.0)  # rotation converges at 2, not 3
    p = write(tmp_path / "tumble.yaml", FREE_FALL.replace("velocity: [1.0, 0, 2.0]",
                                                          "velocity: [1.0, 0, 2.0], angular_velocity: [1, 2, 3]"))
    assert main(["verify", str(p), "--end", "0.1"]) == 1
    out = capsys.readouterr().out
    assert "rotation error" in out and "NOT second order" in out and "what to try" in out
    assert "--step 0.0025" in out


def test_verify_failed_runs_are_exit_3(tmp_path, capsys):
    p = write(tmp_path / "collapse.yaml", COLLAPSE)
    assert main(["verify", str(p)]) == 3
    cap = capsys.readouterr()
    assert "FAILED" in cap.out and "NOT VERIFIED" in cap.out
    assert "the run at Δt = 0.125 s failed" in cap.err and "mbsim run" in cap.err


def test_verify_reference_failure_is_exit_3(tmp_path, capsys, monkeypatch):
    import mbsim.verify

    def fail(*args, **kw):
        raise RuntimeError("reference solver (DOP853) failed: Required step size is less than spacing "
                           "between numbers.")
    monkeypatch.setattr(mbsim.verify, "solve_reference", fail)
    p = write(tmp_path / "fall.yaml", FREE_FALL)
    assert main(["verify", str(p), "--end", "0.05"]) == 3
    cap = capsys.readouterr()
    assert "reference DOP853 (rtol 1e-11, checked at 1e-10): FAILED" in cap.out
    assert "the reference solver failed: reference solver (DOP853) failed: Required step size" in cap.err
    assert "--reference-rtol" in cap.err and "shorter --end" in cap.err


def test_verify_invalid_scenario_and_options_are_exit_2(tmp_path, capsys):
    p = write(tmp_path / "bad.yaml", "mbsim: 1\ntime: {end: 1.0, step: 0.01}\nbodies: []\n")
    assert main(["verify", str(p)]) == 2
    assert "nothing was run" in capsys.readouterr().err
    q = write(tmp_path / "fall.yaml", FREE_FALL)
    assert main(["verify", str(q), "--end", "0.001"]) == 2
    assert "shorter than the time step" in capsys.readouterr().err


def test_help_texts_have_examples_and_exit_codes(capsys):
    for cmd in ("compare", "verify"):
        assert main([cmd, "--help"]) == 0
        out = capsys.readouterr().out
        assert "exit codes:" in out and re.search(rf"^\s+mbsim {cmd} \S", out, re.M)
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "reserved" not in out
    assert re.search(r"^\s+mbsim compare \S", out, re.M) and re.search(r"^\s+mbsim verify \S", out, re.M)
