"""Hostile input: mutated scenarios either run or are refused cleanly — never a traceback.

Property-based (hypothesis): a valid scenario is mutated — wrong types,
missing and extra keys, NaN/inf, huge and tiny numbers, negative masses,
degenerate inertias, unicode names, empty lists, deeply nested junk — and
files that are not UTF-8 or not YAML at all are thrown at ``mbsim run``.
Each outcome must be one of

- exit 0: the run completed and its file conforms (status ``completed``);
- exit 2: refused with a located message (key path and line, or the file),
  and no output file written;
- exit 3: a clear solver failure, with a ``failed`` file and no non-finite
  frame in it.

Exit 4 (an internal error) or any exception fails the test.
"""
from __future__ import annotations

import copy
import re

import h5py
import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mbsim.cli import main
from mbsim.io.writer import FRAME_DATASETS
from mbsim.scenario import ScenarioError, parse_scenario

BASE = {
    "mbsim": 1,
    "name": "hostile",
    "gravity": [0, 0, -9.81],
    "time": {"end": 0.02, "step": 0.002},
    "integrator": {"rho_inf": 0.8, "tangent": "consistent", "newton": {"max_iterations": 25}},
    "output": {"interval": 0.004},
    "bodies": [
        {"name": "base", "fixed": True, "position": [0, 0, 0]},
        {"name": "bob", "mass": 1.0, "inertia": [0.01, 0.02, 0.03], "position": [0, 0, -1],
         "orientation": {"axis_angle": {"axis": [0, 0, 1], "angle": 0.3}}, "velocity": [0.5, 0, 0],
         "angular_velocity": [0, 0, 2.0]},
        {"name": "tip", "mass": 0.5, "inertia": [[0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.01]],
         "position": [0, 0, -2], "orientation": {"quaternion": [1, 0, 0, 0]}},
    ],
    "connectors": [
        {"name": "hanger", "type": "spring", "bodies": ["base", "bob"], "points": [[0, 0, 0], [0, 0, -0.9]],
         "stiffness": 200.0, "rest_length": 0.8},
        {"name": "shock", "type": "damper", "bodies": ["world", "bob"], "points": [[0, 0, 0], [0, 0, -0.9]],
         "damping": 1.5},
        {"name": "swivel", "type": "torsional_damper", "bodies": ["bob", "tip"], "damping": 0.05,
         "joint": "revolute", "axis": [0, 0, 1]},
        {"type": "spring", "bodies": ["bob", "tip"], "points": [[0, 0, -1], [0, 0, -2]], "stiffness": 50.0},
    ],
    "loads": [
        {"type": "force", "body": "bob", "vector": [1, 0, 0], "scale": {"sine": {"amplitude": 1.0, "frequency": 0.5}}},
        {"type": "torque", "body": "tip", "vector": [0, 0, 0.1], "scale": {"table": [[0, 0], [0.01, 1]]}},
    ],
}

# junk values: every kind of thing that does not belong somewhere
JUNK = st.one_of(
    st.none(), st.booleans(), st.sampled_from(["yes", "off", "NaN", ".inf", "-.inf", "", "P4", "world"]),
    st.integers(min_value=-10**400, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e-320, 1e-300, 1e300, -1.0, 0.0, -0.0, 1e-12, 1e12, 1e-100, 1e150, 1e308, 2**63, 2**64]),
    # vectors of extreme magnitudes (issue 15: principal moments [1e-300, 1, 1e300], points 1e200 apart)
    st.lists(st.sampled_from([1e-300, 1.0, 1e300, 1e308, -1e308, 1e-320, 1e200, -1e200]), min_size=3, max_size=3),
    st.text(min_size=0, max_size=12),
    st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), max_size=5),
    st.just([]), st.just({}),
    st.recursive(st.integers(0, 3), lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c,
                                                                                       max_size=3), max_leaves=8),
)


def paths(node, prefix=()):
    """Every (path, value) in a nested dict/list."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


ALL_PATHS = [p for p, _ in paths(BASE) if p]


def mutate(doc, path, action, junk, key):
    doc = copy.deepcopy(doc)
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    last = path[-1]
    if action == "replace":
        parent[last] = junk
    elif action == "delete":
        del parent[last]
    elif action == "add" and isinstance(parent[last], dict):
        parent[last][key] = junk
    elif action == "add" and isinstance(parent[last], list):
        parent[last].append(junk)
    else:
        parent[last] = junk
    return doc


def dump(doc) -> str:
    try:
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, ValueError, OverflowError):  # e.g. an int too long for the emitter
        return str(doc)


LOCATED = re.compile(r"\(line \d+\)|<file>|<yaml>|<top>")


def run_and_judge(tmp_path, data: bytes, capsys):
    scen = tmp_path / "s.yaml"
    scen.write_bytes(data)
    out = tmp_path / "out.h5"
    if out.exists():
        out.unlink()
    args = ["run", str(scen), "-o", str(out), "--quiet", "--no-progress"]
    try:  # keep valid runs short whatever step the mutation chose
        sc = parse_scenario(data.decode("utf-8"))
        args += ["--end", repr(min(sc.time.end, 10 * sc.time.step))]
    except (ScenarioError, UnicodeDecodeError):
        pass
    code = main(args)
    err = capsys.readouterr().err
    assert code in (0, 2, 3), f"exit {code}:\n{err}"
    if code == 2:
        assert not out.exists(), "a refused scenario must not leave an output file"
        assert LOCATED.search(err) or "not run:" in err, err
    else:
        with h5py.File(out) as f:
            assert f.attrs["status"] == ("completed" if code == 0 else "failed")
            for k in FRAME_DATASETS:  # never a NaN or inf frame on disk
                if k == "connectors/length":  # NaN for torsional dampers by design; inf never
                    assert not np.isinf(f[k][:]).any(), k
                elif k != "solver/residual_norm":
                    assert np.isfinite(f[k][:]).all(), k
    return code


FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])


@FUZZ
@given(path=st.sampled_from(ALL_PATHS), action=st.sampled_from(["replace", "delete", "add"]), junk=JUNK,
       key=st.text(min_size=1, max_size=10))
def test_mutated_scenarios_run_or_are_refused_cleanly(tmp_path, capsys, path, action, junk, key):
    run_and_judge(tmp_path, dump(mutate(BASE, path, action, junk, key)).encode("utf-8"), capsys)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=200),
                      st.text(max_size=200).map(lambda s: s.encode("utf-8")),
                      st.sampled_from([b"", b"\xff\xfe\x00", b"{{{", b"- - -\n\t:", b"mbsim: 1\n\x00",
                                       b"%YAML 9.9\n---\n", b"a: &x [*x]\n", b"[" * 5000])))
def test_files_that_are_not_scenarios_are_refused(tmp_path, capsys, data):
    assert run_and_judge(tmp_path, data, capsys) == 2


@pytest.mark.parametrize("edit,expect", [
    (lambda d: d["bodies"][1].update(mass=-1.0), "mass"),
    (lambda d: d["bodies"][1].update(inertia=[[1, 2, 0], [2, 1, 0], [0, 0, 1]]), "positive definite"),
    (lambda d: d["bodies"][1].update(inertia=[0, 0.02, 0.03]), "inertia"),
    (lambda d: d["bodies"][1].update(name="bøb ☃"), None),  # unicode names are fine ...
    (lambda d: d.update(connectors=[]), None),               # ... and so are empty lists
    (lambda d: d["time"].update(step=float("nan")), "finite"),
    (lambda d: d.update(gravity=[0, 0, float("inf")]), "finite"),
    (lambda d: d["time"].update(end=1e300, step=1e-300), "must be at least 1e-100 s"),  # βΔt² underflows
    (lambda d: d["time"].update(end=1e300, step=1e-3), "steps"),  # 1e303 steps
])
def test_named_hostile_cases(tmp_path, capsys, edit, expect):
    doc = copy.deepcopy(BASE)
    edit(doc)
    if expect is None:  # valid: must run (names referring to the renamed body are fixed up)
        text = dump(doc).replace("- bob\n", "- bøb ☃\n").replace("body: bob", "body: bøb ☃")
        code = run_and_judge(tmp_path, text.encode(), capsys)
        assert code in (0, 2)
        return
    scen = tmp_path / "s.yaml"
    scen.write_text(dump(doc))
    out = tmp_path / "o.h5"
    assert main(["run", str(scen), "-o", str(out), "--quiet"]) == 2
    assert expect in capsys.readouterr().err
    assert not out.exists()


def test_numerical_trouble_ends_in_a_clear_failure_not_nan_frames(tmp_path, capsys):
    """Exploding stiffness at a huge step: a failure (exit 3) with finite frames only, or a cut-back."""
    doc = copy.deepcopy(BASE)
    doc["connectors"][0]["stiffness"] = 1e15
    doc["time"] = {"end": 0.5, "step": 0.25}
    doc["output"] = {"interval": 0.25}
    doc["integrator"]["newton"]["max_iterations"] = 3
    code = run_and_judge(tmp_path, dump(doc).encode(), capsys)
    assert code in (0, 3)
    doc["time"]["adaptive"] = True
    assert run_and_judge(tmp_path, dump(doc).encode(), capsys) in (0, 3)


def test_a_non_finite_initial_state_fails_before_anything_is_stored(tmp_path, capsys):
    """issue 15: a finite load on a tiny mass (1e300 N on 1e-10 kg) gives infinite accelerations at
    t = 0; frame 0 used to be stored with them. Now the run fails (exit 3) saying where and why, and
    the file holds no frame at all."""
    doc = copy.deepcopy(BASE)
    doc["bodies"][1]["mass"] = 1e-10
    doc["loads"][0] = {"type": "force", "body": "bob", "vector": [1e300, 0, 0]}
    assert run_and_judge(tmp_path, dump(doc).encode("utf-8"), capsys) == 3
    with h5py.File(tmp_path / "out.h5") as f:
        assert f["time"].shape == (0,)
        assert "at t = 0 s the state's acceleration" in f.attrs["message"]


# issue 27: a body of mass 1e308 hanging on a revolute joint from a 1 kg link made the joints'
# equations singular at t = 0, and SingularJoints (a RuntimeError) escaped mbsim.simulate (exit 4
# from mbsim run).  Such values are now refused by the loader with the other bounds.
HEAVY = {
    "mbsim": 1, "name": "heavy", "gravity": [0, 0, -9.81], "time": {"end": 0.05, "step": 0.005},
    "bodies": [{"name": "link", "mass": 1.0, "inertia": [0.01, 0.01, 0.01], "position": [0.5, 0, 0]},
               {"name": "weight", "mass": 1e308, "inertia": [0.01, 0.01, 0.01], "position": [1.5, 0, 0]}],
    "joints": [{"name": "shoulder", "type": "revolute", "bodies": ["world", "link"], "point": [0, 0, 0],
                "axis": [0, 1, 0]},
               {"name": "elbow", "type": "revolute", "bodies": ["link", "weight"], "point": [1, 0, 0],
                "axis": [0, 1, 0]}],
}


@pytest.mark.parametrize("edit,where,expect", [
    (lambda d: None, "bodies[1].mass", "must be between 1e-100 and 1e+100, got 1"),  # the fuzz case
    (lambda d: d["bodies"][1].update(mass=1e-300), "bodies[1].mass", "must be between 1e-100 and 1e+100"),
    (lambda d: d["bodies"][1].update(mass=1.0, inertia=[1e308, 1e308, 1e308]), "bodies[1].inertia",
     "principal moments must be between 1e-100 and 1e+100, got 1e+308 to 1e+308"),
    (lambda d: d["bodies"][1].update(mass=1.0, inertia=[[1e-101, 0, 0], [0, 1e-101, 0], [0, 0, 1e-101]]),
     "bodies[1].inertia", "principal moments must be between 1e-100 and 1e+100, got 1e-101 to 1e-101"),
    # a body 1e200 m from its joint made the joints' equations singular too (found with the above)
    (lambda d: d["bodies"][1].update(mass=1.0, position=[1e200, 0, 0]), "bodies[1].position",
     "too large: farther than 1e+150 from the origin"),
    (lambda d: (d["bodies"][1].update(mass=1.0), d["joints"][1].update(point=[0, 0, 1e200])), "joints[1].point",
     "too large: farther than 1e+150 from the origin"),
])
def test_absurd_masses_inertias_and_positions_are_refused_before_the_engine(tmp_path, capsys, edit, where, expect):
    doc = copy.deepcopy(HEAVY)
    edit(doc)
    with pytest.raises(ScenarioError) as err:  # from Python: the scenario's error, with key path and line
        import mbsim
        mbsim.simulate(doc)
    found = [p for p in err.value.problems if p.path == where and expect in p.message]
    assert found and found[0].line is not None, str(err.value)
    scen = tmp_path / "s.yaml"
    scen.write_text(dump(doc))
    out = tmp_path / "o.h5"
    assert main(["run", str(scen), "-o", str(out), "--quiet"]) == 2
    err_text = capsys.readouterr().err
    assert where in err_text and expect in err_text and "(line " in err_text, err_text
    assert not out.exists()


def test_the_bounds_leave_physical_extremes_running(tmp_path, capsys):
    """The bounds are far outside physics: a micro-mechanism in SI units (1e-12 kg, 1e-24 kg·m²) and a
    star-sized body (2e30 kg, 6e46 kg·m²), on the same joints, and the bounds themselves, run."""
    import mbsim
    for (m1, j1), (m2, j2) in [((1e-12, 1e-24), (2e-12, 1e-24)), ((2e30, 6e46), (1e30, 6e46)),
                               ((1e-100, 1e-100), (1e-100, 1e-100)), ((1e100, 1e100), (1e100, 1e100))]:
        doc = copy.deepcopy(HEAVY)
        doc["bodies"][0].update(mass=m1, inertia=[j1] * 3)
        doc["bodies"][1].update(mass=m2, inertia=[j2] * 3)
        assert mbsim.simulate(doc).status in ("completed", "failed")  # never an exception


def test_joints_singular_at_the_start_fail_the_run_and_say_so(tmp_path, capsys):
    """issue 27: within the bounds, a 1e20 kg weight on a 1 kg link still makes the joints' equations
    singular at t = 0 in double precision (the link's pivot drowns in the weight's); SingularJoints
    escaped mbsim.simulate.  Now the run fails (exit 3) and its file says why."""
    import mbsim
    doc = copy.deepcopy(HEAVY)
    doc["bodies"][1]["mass"] = 1e20
    out = tmp_path / "o.h5"
    summary = mbsim.simulate(doc, output=str(out))
    assert summary.status == "failed", summary.message
    assert "the joints' equations are singular at t = 0" in summary.message
    with h5py.File(out) as f:
        assert f.attrs["status"] == "failed" and f["time"].shape == (0,)
        assert "revolute 'elbow'" in f.attrs["message"]
    scen = tmp_path / "s.yaml"
    scen.write_text(dump(doc))
    assert main(["run", str(scen), "-o", str(tmp_path / "c.h5"), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "singular" in err and "masses many orders of magnitude apart" in err, err
    from mbsim.mechanics import SingularJoints
    from mbsim import JointError
    assert issubclass(SingularJoints, JointError)  # from the mechanism's own API: a documented error
