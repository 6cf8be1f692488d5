"""The Python API (:mod:`mbsim.api`) end to end: simulate, load, Result, save, to_xarray, run --json.

Reference values come from the scenario texts (initial states, time grids,
the overrides passed), from closed forms (free fall, the spring force
k (L − L0) at t = 0, generalized-α parameters from ρ∞), from the files the
command line writes, and from the independent OUTPUT.md checker in
``/work/shared/tools/check_output.py``.
"""
from __future__ import annotations

import dataclasses
import doctest
import importlib.util
import json
import math
import os
import re
import sys
import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest

import mbsim
import mbsim.api
from mbsim.cli import main
from mbsim.io.reader import ResultFileError, UnequalLengthsWarning, read_trajectory
from mbsim.io.writer import FRAME_DATASETS
from mbsim.scenario import ScenarioError, load_scenario
from tests import contract

ROOT = Path(__file__).resolve().parents[2]
PENDULUM = ROOT / "scenarios" / "pendulum.yaml"
# One body on a spring, a damper and a torsional damper under gravity: 10 steps, a frame every 2.
HANGING = {
    "mbsim": 1, "name": "hanging", "gravity": [0, 0, -9.81],
    "time": {"end": 0.05, "step": 0.005},
    "output": {"interval": 0.01},
    "bodies": [{"name": "bob", "mass": 1.0, "inertia": [0.01, 0.02, 0.03], "position": [0, 0, -1],
                "angular_velocity": [0, 0, 2.0]}],
    "connectors": [
        {"name": "hanger", "type": "spring", "bodies": ["world", "bob"], "points": [[0, 0, 0], [0, 0, -1]],
         "stiffness": 200.0, "rest_length": 0.9},
        {"name": "shock", "type": "damper", "bodies": ["world", "bob"], "points": [[0, 0, 0], [0, 0, -1]],
         "damping": 1.5},
        {"name": "swivel", "type": "torsional_damper", "bodies": ["world", "bob"], "damping": 0.05,
         "projection": "P1"},
    ],
}

# A force-free puck at 1 m/s through the anchor of a spring with rest length 1.0625 (stiffness 0): with
# rho_inf = 1 the spring is evaluated at t = 1.0625 in step 9, where its length is zero: the step fails.
COLLAPSE = {
    "mbsim": 1, "name": "collapse", "time": {"end": 2.0, "step": 0.125}, "integrator": {"rho_inf": 1.0},
    "bodies": [{"name": "puck", "mass": 1.0, "inertia": [0.1, 0.1, 0.1], "position": [1.0625, 0, 0],
                "velocity": [-1, 0, 0]}],
    "connectors": [{"name": "tether", "type": "spring", "bodies": ["world", "puck"],
                    "points": [[0, 0, 0], [1.0625, 0, 0]], "stiffness": 0.0}],
}

# Free flight: x = x0 + v t exactly, a frame every step unless told otherwise.
FLIGHT = {
    "mbsim": 1, "name": "flight", "time": {"end": 0.1, "step": 0.01},
    "bodies": [{"name": "puck", "mass": 2.0, "inertia": [0.1, 0.2, 0.3], "position": [1, 2, 3],
                "velocity": [0.5, -1.0, 0.25]}],
}


@pytest.fixture(scope="module")
def check_output():
    return contract.check_output()


@pytest.fixture(scope="module")
def hanging():
    return mbsim.simulate(HANGING)


def assert_same_frames(a, b):
    for k in FRAME_DATASETS:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


# --------------------------------------------------------------------------
# two lines from a scenario to named arrays

def test_two_lines_from_a_scenario_file_to_named_arrays():
    res = mbsim.simulate(PENDULUM, end=0.1)
    x = res.body("bob").position
    assert x.shape == (11, 3)
    np.testing.assert_allclose(res.time, np.linspace(0.0, 0.1, 11), atol=1e-12)
    np.testing.assert_array_equal(x[0], [0.3, 0.0, -0.95])  # bodies[0].position in the file
    # orientation {axis_angle: {axis: z, angle: 0.3}} -> [cos 0.15, 0, 0, sin 0.15]
    np.testing.assert_allclose(res.body("bob").orientation[0], [math.cos(0.15), 0, 0, math.sin(0.15)],
                               atol=1e-15)
    R = res.body("bob").rotation_matrices()
    assert R.shape == (11, 3, 3)
    c, s = math.cos(0.3), math.sin(0.3)
    np.testing.assert_allclose(R[0], [[c, -s, 0], [s, c, 0], [0, 0, 1]], atol=1e-15)
    np.testing.assert_allclose(R @ R.transpose(0, 2, 1), np.broadcast_to(np.eye(3), R.shape), atol=1e-12)
    np.testing.assert_array_equal(res.body("bob").velocity[0], [0, 0.5, 0])
    np.testing.assert_array_equal(res.body("bob").angular_velocity[0], [0.5, 0, 2.0])
    assert res.status == "completed" and res.path is None and res.scenario_name == "pendulum"
    assert res.scenario_text == PENDULUM.read_text()
    assert res.bodies == ["bob"] and res.connectors == ["string", "shock", "swivel"]


def test_named_access_matches_the_stacked_arrays(hanging):
    res = hanging
    assert len(res) == 6
    bob, hanger = res.body("bob"), res.connector("hanger")
    assert (bob.name, bob.index, bob.mass, bob.fixed) == ("bob", 0, 1.0, False)
    assert (hanger.type, hanger.body_a, hanger.body_b) == ("spring", "world", "bob")
    assert res.connector("shock").type == "damper"
    for attr in ("position", "velocity", "angular_velocity", "acceleration", "angular_acceleration",
                 "orientation"):
        a = getattr(bob, attr)
        assert np.shares_memory(a, res[f"bodies/{attr}"]), attr  # a view, not a copy
        np.testing.assert_array_equal(a, res[f"/bodies/{attr}"][:, 0])
    for attr in ("force", "moment", "length"):
        np.testing.assert_array_equal(getattr(res.connector("shock"), attr), res[f"connectors/{attr}"][:, 1])
    # spring at t = 0: length 1, force k (L - L0) n on A (world), n from A to B = -z
    assert hanger.length[0] == 1.0
    np.testing.assert_allclose(hanger.force[0], [0, 0, -200.0 * 0.1], atol=1e-12)
    assert np.isnan(res.connector("swivel").length).all()
    e = res.energy
    np.testing.assert_array_equal(e.kinetic, res["energy/kinetic"])
    np.testing.assert_allclose(e.balance, e.kinetic + e.potential + e.dissipated - e.external_work, rtol=0)
    assert e.drift == pytest.approx(np.max(np.abs(e.balance - e.balance[0])), abs=0)
    assert 0 <= e.relative_drift < 1e-3
    np.testing.assert_array_equal(res.momentum.linear, res["momentum/linear"])
    np.testing.assert_array_equal(res.momentum.angular, res["momentum/angular"])
    np.testing.assert_allclose(res.solver.step, [0.0] + [0.005] * 5, rtol=1e-12)
    assert res.solver.iterations[0] == 0 and (res.solver.iterations[1:] >= 1).all()
    assert res.solver.residual_norm.shape == (6,)
    assert "bodies/position" in res and "/time" in res and "bodies/nothing" not in res
    assert set(FRAME_DATASETS) <= set(res.keys())


def test_arrays_are_read_only(hanging):
    with pytest.raises(ValueError):
        hanging.body("bob").position[0, 0] = 1.0
    with pytest.raises(ValueError):
        hanging.time[0] = 1.0
    with pytest.raises(ValueError):
        hanging.energy.balance[0] = 1.0
    attrs = hanging.attrs
    attrs["status"] = "meddled"
    assert hanging.status == "completed"


def test_repr_names_the_run(hanging):
    assert repr(hanging) == "<Result 'hanging' completed: 6 frames, t = 0 … 0.05 s, 1 body, 3 connectors>"
    assert repr(hanging.body("bob")) == "<BodyTrajectory 'bob': mass 1 kg, 6 frames>"
    assert "spring world → bob" in repr(hanging.connector("hanger"))


def test_unknown_names_raise_key_error_with_did_you_mean(hanging):
    with pytest.raises(KeyError, match=r"no body 'bobb' in 'hanging' \(did you mean 'bob'\?\); its bodies: bob"):
        hanging.body("bobb")
    with pytest.raises(KeyError, match=r"did you mean 'hanger'.*its connectors: hanger, shock, swivel"):
        hanging.connector("hangr")
    with pytest.raises(KeyError, match=r"no dataset 'bodies/positon' \(did you mean 'bodies/position'\?\)"):
        hanging["bodies/positon"]
    with pytest.raises(mbsim.UnknownNameError, match="it has no connectors"):
        mbsim.simulate(FLIGHT, end=0.01).connector("k")


# --------------------------------------------------------------------------
# input forms and overrides

def test_dict_file_and_scenario_inputs_give_the_same_run(tmp_path, hanging):
    import yaml
    path = tmp_path / "hanging.yaml"
    path.write_text(yaml.safe_dump(HANGING, sort_keys=False))
    from_file = mbsim.simulate(path)
    from_spec = mbsim.simulate(load_scenario(path))
    assert_same_frames(from_file, hanging)
    assert_same_frames(from_spec, hanging)
    assert from_file.scenario_text == path.read_text()


def test_invalid_scenarios_raise_scenario_error(tmp_path):
    bad = dict(HANGING, bodies=[dict(HANGING["bodies"][0], mass=-1.0)])
    with pytest.raises(ScenarioError, match=r"bodies\[0\]\.mass.*must be > 0"):
        mbsim.simulate(bad)
    with pytest.raises(mbsim.ScenarioError, match="cannot read"):
        mbsim.simulate(tmp_path / "missing.yaml")
    with pytest.raises(TypeError, match="file path, a dict or a Scenario"):
        mbsim.simulate(42)


def test_every_override_takes_effect():
    base = mbsim.simulate(FLIGHT)
    res = mbsim.simulate(FLIGHT, end=0.06, step=0.002, interval=0.02)
    np.testing.assert_allclose(res.time, [0, 0.02, 0.04, 0.06], atol=1e-12)
    np.testing.assert_allclose(res.solver.step[1:], 0.002, rtol=1e-12)
    x0, v = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 0.25])
    np.testing.assert_allclose(res.body("puck").position, x0 + np.outer(res.time, v), atol=1e-12)
    a = res.attrs
    assert (a["time_end"], a["time_step"], a["output_interval"]) == (0.06, 0.002, 0.02)
    assert (base.attrs["time_end"], base.attrs["time_step"]) == (0.1, 0.01)

    rho = 0.5
    a = mbsim.simulate(FLIGHT, end=0.02, rho_inf=rho, tangent="seed", adaptive=True, min_step=1e-4,
                       max_iterations=7, rtol=1e-6, atol=1e-9).attrs
    assert a["rho_inf"] == rho and a["alpha_f"] == pytest.approx(1 / (1 + rho))
    assert a["alpha_m"] == pytest.approx((2 - rho) / (1 + rho))
    assert a["tangent"] == "seed" and bool(a["time_adaptive"]) is True and a["time_min_step"] == 1e-4
    assert (a["newton_max_iterations"], a["newton_rtol"], a["newton_atol"]) == (7, 1e-6, 1e-9)
    assert base.attrs["tangent"] == "consistent" and bool(base.attrs["time_adaptive"]) is False


def test_overrides_leave_the_given_scenario_alone():
    sc = load_scenario(PENDULUM)
    res = mbsim.simulate(sc, end=0.02, rho_inf=0.5)
    assert sc.time.end == 5.0 and sc.integrator.rho_inf == 0.9
    assert res.scenario.time.end == 0.02 and res.scenario.integrator.rho_inf == 0.5
    assert res.scenario.bodies is sc.bodies and res.scenario.text == sc.text
    assert mbsim.api.apply_overrides(sc) is sc


def test_a_new_step_carries_default_interval_and_min_step_along():
    # FLIGHT has no output.interval: a frame every step, also at the new step
    res = mbsim.simulate(FLIGHT, step=0.02)
    np.testing.assert_allclose(res.time, np.arange(6) * 0.02, atol=1e-12)
    assert res.attrs["output_interval"] == 0.02 and res.attrs["time_min_step"] == pytest.approx(2e-8)
    # pendulum: interval 0.01 written out, kept with a step it is a multiple of
    res = mbsim.simulate(PENDULUM, end=0.02, step=0.002)
    assert res.attrs["output_interval"] == 0.01 and len(res) == 3


def test_unknown_override_is_a_type_error_naming_the_valid_ones():
    with pytest.raises(TypeError, match=r"'ends' \(did you mean 'end'\?\).* end, step, adaptive, min_step, "
                                        r"tolerance, max_step, rho_inf, tangent, max_iterations, rtol, atol, modified, interval"):
        mbsim.simulate(FLIGHT, ends=1.0)
    with pytest.raises(TypeError, match="arguments 'gravity', 'rho'"):
        mbsim.simulate(FLIGHT, gravity=[0, 0, -1], rho=0.5)


@pytest.mark.parametrize("overrides, where, message", [
    (dict(end=-1.0), "time.end", "must be > 0"),
    (dict(end=0.005), "time.step", "must not exceed time.end"),
    (dict(end="soon"), "time.end", "must be a number"),
    (dict(step=0.0), "time.step", "must be > 0"),
    (dict(interval=0.015), "output.interval", r"must be a whole multiple of time.step \(0.01\)"),
    (dict(step=0.03), "output.interval", "whole multiple"),  # the written interval 0.02 is kept
    (dict(rho_inf=1.5), "integrator.rho_inf", r"must be in \[0, 1\]"),
    (dict(tangent="exact"), "integrator.tangent", "consistent, seed"),
    (dict(adaptive="yes"), "time.adaptive", "yes"),
    (dict(min_step=0.5), "time.min_step", "must not exceed time.step"),
    (dict(max_iterations=0), "integrator.newton.max_iterations", "positive integer"),
    (dict(rtol=-1e-8), "integrator.newton.rtol", "must be > 0"),
])
def test_invalid_override_values_are_refused_by_the_loader_rules(overrides, where, message):
    with pytest.raises(ValueError) as info:
        mbsim.simulate(dict(FLIGHT, output={"interval": 0.02}), **overrides)
    exc = info.value
    assert isinstance(exc, mbsim.OverrideError) and isinstance(exc, ScenarioError)
    assert [p.path for p in exc.problems] == [where]
    assert exc.problems[0].line is None  # lines of the probe would mean nothing to the caller
    assert str(exc).startswith(f"overrides ({', '.join(f'{k}={v!r}' for k, v in overrides.items())}): 1 problem")
    assert re.search(message, exc.problems[0].message)


# --------------------------------------------------------------------------
# files: output=, load, save

def test_in_memory_and_file_output_agree(tmp_path, hanging):
    out = tmp_path / "sub" / "hanging.h5"
    res = mbsim.simulate(HANGING, output=out)
    assert res.path == str(out) and out.is_file()
    assert_same_frames(res, hanging)
    stored = read_trajectory(out)
    assert_same_frames(stored, hanging)
    for k in ("bodies/name", "connectors/name", "connectors/type", "connectors/body_a", "connectors/body_b"):
        assert list(stored[k]) == list(hanging[k])
    np.testing.assert_array_equal(stored["bodies/mass"], hanging["bodies/mass"])
    # every root attribute mbsim run writes is in the in-memory result with the same value
    mem = hanging.attrs
    for k, v in stored["attrs"].items():
        if k in ("created_utc", "wall_time_s"):
            continue
        assert k in mem, f"root attribute {k!r} missing from the in-memory result"
        assert mem[k] == v, k
    assert set(mem) == set(stored["attrs"])


def test_output_never_replaces_a_file_unless_asked(tmp_path):
    out = tmp_path / "flight.h5"
    out.write_bytes(b"precious")
    with pytest.raises(mbsim.OutputFileError, match="overwrite=True"):
        mbsim.simulate(FLIGHT, output=out)
    assert out.read_bytes() == b"precious"
    res = mbsim.simulate(FLIGHT, output=out, overwrite=True)
    assert mbsim.load(out).status == "completed" and len(res) == 11
    with pytest.raises(mbsim.OutputFileError, match="directory"):
        mbsim.simulate(FLIGHT, output=tmp_path)


def test_load_round_trip_equals_the_in_memory_result(tmp_path, hanging):
    out = tmp_path / "hanging.h5"
    assert main(["run", str(_yaml(tmp_path, HANGING)), "-o", str(out), "--quiet"]) == 0
    back = mbsim.load(out)
    assert back.path == str(out) and back.scenario is None
    assert_same_frames(back, hanging)
    assert (back.bodies, back.connectors) == (hanging.bodies, hanging.connectors)
    assert back.status == "completed" and back.message == hanging.message
    assert back.body("bob").mass == 1.0 and back.connector("swivel").type == "torsional_damper"
    assert back.time.flags.writeable is False
    assert repr(back) == repr(hanging)


def test_save_writes_a_conforming_file(tmp_path, hanging, check_output):
    path = hanging.save(tmp_path / "saved.h5")
    assert check_output(path) == []
    back = mbsim.load(path)
    assert_same_frames(back, hanging)
    assert back.scenario_text == hanging.scenario_text and back.status == "completed"
    for k in ("steps", "newton_iterations", "rejected_steps", "rho_inf", "tangent", "time_step"):
        assert back.attrs[k] == hanging.attrs[k], k
    with pytest.raises(mbsim.OutputFileError, match="exists"):
        hanging.save(path)
    # a loaded result saves too (a copy of a file), and a failed one keeps its status
    failed = mbsim.simulate(COLLAPSE)
    copy = mbsim.load(failed.save(tmp_path / "failed.h5")).save(tmp_path / "copy.h5")
    assert check_output(copy) == []
    assert mbsim.load(copy).status == "failed" and len(mbsim.load(copy)) == len(failed)
    # no connectors
    assert check_output(mbsim.simulate(FLIGHT, end=0.02).save(tmp_path / "flight.h5")) == []


def test_load_refuses_what_is_not_a_trajectory(tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"not hdf5")
    with pytest.raises(ResultFileError, match="cannot open as HDF5"):
        mbsim.load(junk)
    out = mbsim.simulate(FLIGHT, end=0.02).save(tmp_path / "partial.h5")
    with h5py.File(out, "a") as f:
        del f["bodies/position"]
    with pytest.raises(mbsim.ResultFileError, match="/bodies/position is missing"):
        mbsim.load(out)


def test_a_killed_run_loads_up_to_the_common_length(tmp_path, hanging):
    out = tmp_path / "killed.h5"
    mbsim.simulate(HANGING, output=out)
    with h5py.File(out, "a") as f:  # as a writer killed between resizing two datasets leaves it
        f["energy/kinetic"].resize(4, axis=0)
        f["bodies/velocity"].resize(8, axis=0)
        f.attrs["status"] = "running"
    with pytest.warns(UnequalLengthsWarning, match=r"unequal lengths \(4 to 8 frames; shortest: "
                                                   r"energy/kinetic\).*reading the first 4 frames"):
        res = mbsim.load(out)
    assert len(res) == 4 and res.status == "running"
    for k in FRAME_DATASETS:
        assert len(res[k]) == 4, k
        np.testing.assert_array_equal(res[k], hanging[k][:4], err_msg=k)
    with pytest.raises(mbsim.SimulationError, match="running"):
        res.raise_for_status()
    with warnings.catch_warnings():  # the plain reader keeps reading everything as stored
        warnings.simplefilter("error")
        assert len(read_trajectory(out)["bodies/velocity"]) == 8


# --------------------------------------------------------------------------
# failures

def test_solver_failure_returns_a_failed_result_with_its_frames(tmp_path):
    res = mbsim.simulate(COLLAPSE)  # does not raise
    assert res.status == "failed"
    assert "step 9" in res.message and "t = 1" in res.message
    np.testing.assert_array_equal(res.time, 0.125 * np.arange(9))  # every frame before the failing step
    np.testing.assert_allclose(res.body("puck").position[:, 0], 1.0625 - res.time, atol=1e-12)
    with pytest.raises(mbsim.SimulationError) as info:
        res.raise_for_status()
    assert info.value.result is res and info.value.status == "failed"
    assert "9 frames kept, last frame at t = 1 s" in str(info.value)
    # the same outcome through a file
    back = mbsim.load(mbsim.simulate(COLLAPSE, output=tmp_path / "c.h5").path)
    assert back.status == "failed" and len(back) == 9
    assert mbsim.simulate(COLLAPSE, end=1.0).raise_for_status().status == "completed"


# --------------------------------------------------------------------------
# xarray

def test_to_xarray_labels_dimensions_and_units(hanging):
    xr = pytest.importorskip("xarray")
    ds = hanging.to_xarray()
    assert isinstance(ds, xr.Dataset)
    assert dict(ds.sizes) == {"time": 6, "body": 1, "connector": 3, "xyz": 3, "quat": 4}
    assert list(ds["xyz"].values) == ["x", "y", "z"] and list(ds["quat"].values) == ["w", "x", "y", "z"]
    assert list(ds["body"].values) == ["bob"] and list(ds["connector"].values) == ["hanger", "shock", "swivel"]
    assert list(ds["connector_type"].values) == ["spring", "damper", "torsional_damper"]
    assert ds["position"].dims == ("time", "body", "xyz") and ds["position"].attrs["units"] == "m"
    assert ds["orientation"].dims == ("time", "body", "quat")
    assert ds["connector_force"].dims == ("time", "connector", "xyz") and ds["connector_force"].attrs["units"] == "N"
    assert ds["connector_length"].dims == ("time", "connector")
    assert ds["energy_kinetic"].dims == ("time",) and ds["energy_kinetic"].attrs["units"] == "J"
    assert ds["momentum_linear"].dims == ("time", "xyz")
    assert ds["time"].attrs["units"] == "s" and float(ds["mass"].sel(body="bob")) == 1.0
    for name, var in ds.data_vars.items():
        assert var.attrs.get("units") and var.attrs.get("description"), name
    np.testing.assert_array_equal(ds["position"].sel(body="bob").values, hanging.body("bob").position)
    np.testing.assert_array_equal(ds["connector_force"].sel(connector="shock").values,
                                  hanging.connector("shock").force)
    np.testing.assert_array_equal(ds["energy_balance"].values, hanging.energy.balance)
    assert ds.attrs["status"] == "completed" and ds.attrs["scenario_name"] == "hanging"
    assert ds.attrs["scenario"] == hanging.scenario_text


def test_to_xarray_without_xarray_says_how_to_install(hanging, monkeypatch):
    monkeypatch.setitem(sys.modules, "xarray", None)  # import xarray -> ImportError
    with pytest.raises(ImportError, match=r"needs xarray, which is not installed: pip install xarray$"):
        hanging.to_xarray()


# --------------------------------------------------------------------------
# mbsim run --json

def test_run_json_prints_one_object_and_nothing_else(tmp_path, capsys):
    out = tmp_path / "hanging.h5"
    assert main(["run", str(_yaml(tmp_path, HANGING)), "-o", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)  # the whole of stdout is the object
    assert captured.out.count("\n") == 1
    assert summary["status"] == "completed" and summary["exit_code"] == 0
    assert summary["output"] == str(out) and summary["frames"] == 6 and summary["steps"] == 10
    assert summary["t_end"] == pytest.approx(0.05) and summary["rejected_steps"] == 0
    assert summary["newton_iterations"] >= 10 and summary["wall_time_s"] > 0
    info = mbsim.load(out)
    assert summary["energy_drift_J"] == pytest.approx(info.energy.drift, rel=1e-12)
    assert summary["message"] == info.message and summary["scenario"] == "hanging"
    assert "\r" not in captured.err  # no progress bar


def test_run_json_reports_a_failure_and_explains_it_on_stderr(tmp_path, capsys):
    out = tmp_path / "collapse.h5"
    assert main(["run", str(_yaml(tmp_path, COLLAPSE)), "-o", str(out), "--json"]) == 3
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["status"] == "failed" and summary["exit_code"] == 3 and summary["frames"] == 9
    assert summary["failure"] == "degenerate"
    assert "FAILED" in captured.err and "what to try" in captured.err


# --------------------------------------------------------------------------
# the package surface and the documented examples

def test_a_run_too_large_raises_the_documented_resource_error():
    """issue 15: ``end=1e9`` (1e11 steps) is refused before anything runs, with an exception the
    package exports and ``simulate`` documents."""
    with pytest.raises(mbsim.ResourceError, match=r"steps.*allow_large=True from Python"):
        mbsim.simulate(FLIGHT, end=1e9)
    assert "ResourceError" in mbsim.simulate.__doc__ and "JointError" in mbsim.simulate.__doc__
    from mbsim.mechanics.joints import JointError
    from mbsim.resources import ResourceError
    assert mbsim.ResourceError is ResourceError and mbsim.JointError is JointError


def test_the_default_output_stays_in_outputs(tmp_path, monkeypatch):
    """issue 15: a scenario named ``../../x`` (received from someone else) writes outputs/_.._x.h5 when
    run without -o, not two directories up."""
    from mbsim.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep").mkdir()
    monkeypatch.chdir(tmp_path / "deep")
    text = "mbsim: 1\nname: ../../x\ntime: {end: 0.02, step: 0.01}\nbodies:\n  - {name: a, mass: 1, inertia: [1, 1, 1]}\n"
    (tmp_path / "deep" / "evil.yaml").write_text(text)
    assert main(["run", "evil.yaml", "--quiet"]) == 0
    assert (tmp_path / "deep" / "outputs" / "_.._x.h5").is_file()
    assert not (tmp_path / "x.h5").exists() and not (tmp_path.parent / "x.h5").exists()


def test_package_exports():
    assert mbsim.simulate is mbsim.api.simulate and mbsim.load is mbsim.api.load
    assert mbsim.Result is mbsim.api.Result and mbsim.SimulationError is mbsim.api.SimulationError
    assert mbsim.ScenarioError is ScenarioError
    assert {"simulate", "load", "Result", "ScenarioError", "SimulationError"} <= set(dir(mbsim))
    with pytest.raises(AttributeError):
        mbsim.no_such_thing


def test_docstring_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples must not depend on (or litter) the working directory
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    has_xarray = importlib.util.find_spec("xarray") is not None
    tests = [t for t in finder.find(mbsim.api) if t.examples]
    assert len(tests) >= 7
    for t in tests:
        if t.name.endswith("to_xarray") and not has_xarray:
            continue
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0


def _yaml(tmp_path, data) -> Path:
    import yaml
    path = tmp_path / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_scenario_a_result_carries_runs_again(hanging):
    sc = dataclasses.replace(hanging.scenario, name="renamed")
    assert mbsim.simulate(sc).scenario_name == "renamed"
