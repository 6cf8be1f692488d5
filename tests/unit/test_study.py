"""Study files (docs/sweep.md): validation, key paths, designs and metric reductions.

No Dask here: reading and validating a study, drawing its cases and reducing a
quantity to a number are plain Python (tests/integration/test_sweep.py runs
studies on clusters).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mbsim.study import StudyError, load_study, parse_study, study_from_dict
from mbsim.study import designs, keypaths, metrics
from mbsim.study.designs import Design, ParameterSpec

REPO = Path(__file__).resolve().parents[2]
MSD = REPO / "scenarios" / "mass_spring_damper.yaml"


def study_text(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def problems(text: str, source: str | None = None) -> list:
    with pytest.raises(StudyError) as info:
        parse_study(text, source)
    return [(p.path, p.line, p.message) for p in info.value.problems]


GOOD = (
    f"scenario: {MSD}",
    "parameters:",
    "  connectors[damper-under].damping: [1, 2, 3]",
    "  bodies[underdamped].mass: {linspace: [1, 2, 2]}",
    "design: grid",
    "metrics:",
    "  peak: {quantity: 'bodies[underdamped].position[0]', reduce: max, window: [0.2, 1.0]}",
)


# ---------------------------------------------------------------------------
# the file
# ---------------------------------------------------------------------------
def test_a_valid_study_has_its_cases_in_grid_order():
    study = parse_study(study_text(*GOOD))
    assert study.parameter_names == ["connectors[damper-under].damping", "bodies[underdamped].mass"]
    assert [c.values for c in study.cases] == [(1, 1.0), (1, 2.0), (2, 1.0), (2, 2.0), (3, 1.0), (3, 2.0)]
    case = study.cases[3]
    assert case.data["connectors"][1]["damping"] == 2 and case.data["bodies"][1]["mass"] == 2.0
    # the case's scenario is the base one with exactly these two values changed
    assert "damping" in case.text and case.text != study.cases[2].text
    m = study.metrics[0]
    assert (m.name, m.reduce, m.window, m.units) == ("peak", "max", (0.2, 1.0), "m")


def test_every_problem_of_a_study_file_is_reported_at_once_with_lines_and_suggestions():
    text = study_text(
        f"scenario: {MSD}",                                        # 1
        "paramters: 1",                                            # 2
        "parameters:",                                             # 3
        "  connectors[damper-undr].damping: [1, 2]",               # 4
        "  bodies[underdamped].mas: [1.0, 2.0]",                   # 5
        "  time.end: {linspace: [1, 2]}",                          # 6
        "  time.step: [0.001, 0.001]",                             # 7
        "design: grd",                                             # 8
        "metrics:",                                                # 9
        "  a: {quantity: 'bodies[underdamp].position[0]', reduce: maximum}",   # 10
        "  b: {quantity: 'energy.kinetc', reduce: max, window: [2, 1]}",       # 11
        "  c: {quantity: 'connectors[damper-under].force[3]', reduce: max}",   # 12
        "  d: {quantity: 'bodies[wall].position', reduce: final, windw: 1}",   # 13
    )
    got = problems(text, "study.yaml")
    expected = [
        (2, "<top>", "unknown key 'paramters' (did you mean 'parameters'?)"),
        (4, "parameters.connectors[damper-undr].damping", "no item named 'damper-undr' (did you mean 'damper-under'?)"),
        (5, "parameters.bodies[underdamped].mas", "unknown key 'mas' (did you mean 'mass'?)"),
        (6, "parameters.time.end.linspace", "must have 3 entries"),
        (7, "parameters.time.step[1]", "listed twice"),
        (8, "design", "unknown design 'grd' (did you mean 'grid'?)"),
        (10, "metrics.a.quantity", "no body named 'underdamp' (did you mean 'underdamped'?)"),
        (10, "metrics.a.reduce", "unknown reduction 'maximum' (did you mean 'max'?)"),
        (11, "metrics.b.quantity", "unknown quantity 'kinetc' (did you mean 'kinetic'?)"),
        (11, "metrics.b.window", "0 <= t0 <= t1"),
        (12, "metrics.c.quantity", "components [0] … [2]"),
        (13, "metrics.d", "unknown key 'windw' (did you mean 'window'?)"),
    ]
    assert len(got) == len(expected), got
    for (path, line, message), (eline, epath, part) in zip(got, expected):
        assert (line, path) == (eline, epath) and part in message, (path, line, message)
    # the report reads like a scenario's: FILE: N problems, then one per line
    with pytest.raises(StudyError) as info:
        parse_study(text, "study.yaml")
    assert info.value.report().startswith("study.yaml: 12 problems\n  <top> (line 2): unknown key 'paramters'")


def test_an_invalid_case_is_reported_with_its_parameter_values_and_nothing_starts():
    text = study_text(
        f"scenario: {MSD}",
        "parameters:",
        "  connectors[damper-under].damping: [-1, 2]",
        "  time.step: [0.001, 0.003]",
        "design: grid",
        "metrics:",
        "  x: {quantity: 'bodies[underdamped].position[0]', reduce: final}",
    )
    got = problems(text)
    cases = {path: msg for path, _, msg in got if path.startswith("case ")}
    assert sorted(cases) == ["case 0", "case 1", "case 3"]  # case 2 (damping 2, step 0.001) is valid
    assert cases["case 0"].startswith("(connectors[damper-under].damping = -1, time.step = 0.001) is not a valid")
    assert "connectors[1].damping: must be >= 0, got -1" in cases["case 0"]
    assert "output.interval: must be a whole multiple of time.step (0.003)" in cases["case 3"]
    assert got[-1][0] == "cases" and "not started" in got[-1][2]


def test_key_paths_that_lead_nowhere_or_clash_are_refused():
    base = (f"scenario: {MSD}", "design: grid", "metrics:", "  x: {quantity: 'energy.kinetic', reduce: max}",
            "parameters:")
    cases = {
        "  bodies[underdamped].position[5]: [1]": "has 3 items: no index 5",
        "  bodies[underdamped].velocity[0]: [1]": "not given in the scenario",
        "  bodies[9].mass: [1]": "has 4 items: no index 9",
        "  loads[x].vector: [1]": "not given in the scenario",
        "  time[0]: [1]": "not a list",
        "  bodies[underdamped].name: [a]": "a name cannot be a parameter",
        "  'bodies[underdamped]..mass': [1]": "expected a key",
        "  integrator.rho_inf: {uniform: [0.5, 0.9]}": "needs a samples design",
    }
    for line, expected in cases.items():
        got = problems(study_text(*base, line))
        assert len(got) == 1 and expected in got[0][2], (line, got)
        assert got[0][1] == 6, (line, got)  # the parameter's line
    got = problems(study_text(*base, "  bodies[underdamped].mass: [1, 2]", "  bodies[1].mass: [3]"))
    assert "sets the same value as parameter 'bodies[underdamped].mass'" in got[0][2]
    got = problems(study_text(*base, "  bodies[critical].position: [1]", "  bodies[critical].position[0]: [3]"))
    assert "overlaps parameter" in got[0][2]


def test_a_missing_section_is_added_and_a_missing_base_scenario_is_named(tmp_path):
    study = parse_study(study_text(f"scenario: {MSD}", "parameters:", "  integrator.newton.rtol: [1.0e-6, 1.0e-9]",
                                   "design: grid", "metrics:", "  x: {quantity: 'solver.iterations', reduce: max}"))
    assert [c.data["integrator"]["newton"]["rtol"] for c in study.cases] == [1e-6, 1e-9]
    (tmp_path / "s.yaml").write_text(study_text("scenario: nowhere.yaml", "parameters: {time.end: [1]}",
                                                "design: grid", "metrics: {x: {quantity: energy.kinetic, reduce: max}}"))
    with pytest.raises(StudyError) as info:
        load_study(tmp_path / "s.yaml")
    (p,) = info.value.problems
    assert p.path == "scenario" and p.line == 1 and "relative to the study file" in p.message


def test_a_study_from_a_dict_equals_the_file():
    data = {"scenario": str(MSD), "parameters": {"connectors[damper-under].damping": [1.0, 2.0]},
            "design": {"samples": 3, "method": "random", "seed": 4},
            "metrics": {"x": {"quantity": "energy.dissipated", "reduce": "final"}}}
    a = study_from_dict(data)
    assert len(a.cases) == 3 and a.design == Design("samples", 3, "random", 4)
    assert all(c.values[0] in (1.0, 2.0) for c in a.cases)


# ---------------------------------------------------------------------------
# key paths
# ---------------------------------------------------------------------------
def test_key_path_parsing_and_assignment():
    segs = keypaths.parse("bodies[bob].velocity[0]")
    assert [(s.kind, s.value) for s in segs] == [("key", "bodies"), ("name", "bob"), ("key", "velocity"),
                                                   ("index", 0)]
    assert keypaths.format_path(segs) == "bodies[bob].velocity[0]"
    assert keypaths.parse("bodies['7'].mass")[1] == keypaths.Segment("name", "7")
    data = {"bodies": [{"name": "a", "velocity": [0, 0, 0]}, {"name": "bob", "velocity": [0, 0, 0]}],
            "time": {"end": 1}}
    keypaths.assign(data, segs, 2.5)
    keypaths.assign(data, keypaths.parse("integrator.newton.rtol"), 1e-9)
    keypaths.assign(data, keypaths.parse("time.end"), 3)
    assert data["bodies"][1]["velocity"] == [2.5, 0, 0] and data["bodies"][0]["velocity"] == [0, 0, 0]
    assert data["integrator"] == {"newton": {"rtol": 1e-9}} and data["time"]["end"] == 3
    with pytest.raises(keypaths.KeyPathError, match=r"no item named 'bb' \(did you mean 'bob'\?\)"):
        keypaths.resolve(data, keypaths.parse("bodies[bb].mass"))
    for bad in ("", "a.", "a[", "a[]", "a[-1]", "a b", "[0]"):
        with pytest.raises(keypaths.KeyPathError):
            keypaths.parse(bad)


def test_unnamed_connectors_are_selected_by_the_loaders_default_names(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "mbsim: 1\ntime: {end: 0.1, step: 0.01}\n"
        "bodies: [{name: b, mass: 1, inertia: [1, 1, 1], position: [1, 0, 0]}]\n"
        "connectors: [{type: spring, bodies: [world, b], points: [[0, 0, 0], [1, 0, 0]], stiffness: 10}]\n")
    study = parse_study(study_text(f"scenario: {tmp_path / 's.yaml'}", "parameters: {'connectors[spring-0].stiffness': [5]}",
                                   "design: grid", "metrics: {f: {quantity: 'connectors[spring-0].force[0]', reduce: max}}"))
    assert study.cases[0].data["connectors"][0]["stiffness"] == 5


# ---------------------------------------------------------------------------
# designs
# ---------------------------------------------------------------------------
def _p(path, **kw):
    return ParameterSpec(path=path, segments=keypaths.parse(path), **kw)


def test_grid_is_the_full_factorial_last_parameter_fastest():
    ps = [_p("a.x", values=(1, 2, 3)), _p("a.y", values=("u", "v")), _p("a.z", values=(0.5,))]
    cases = designs.cases(ps, Design("grid"))
    assert len(cases) == designs.grid_size(ps) == 6
    assert cases[:3] == [(1, "u", 0.5), (1, "v", 0.5), (2, "u", 0.5)]
    assert designs.linspace(1, 2, 3) == (1.0, 1.5, 2.0)
    assert designs.logspace(1, 100, 3) == pytest.approx((1.0, 10.0, 100.0))  # values, not exponents


def test_latin_hypercube_is_reproducible_from_its_seed_and_stratified():
    d = Design("samples", samples=20, method="lhs", seed=7)
    u = designs.unit_samples(d, 3)
    assert np.array_equal(u, designs.unit_samples(d, 3))
    assert not np.array_equal(u, designs.unit_samples(Design("samples", 20, "lhs", 8), 3))
    for k in range(3):  # exactly one draw in each of the 20 strata of every column
        assert sorted(np.floor(u[:, k] * 20).astype(int)) == list(range(20))
    ps = [_p("a.x", distribution="uniform", arguments=(2.0, 4.0)),
          _p("a.y", distribution="lognormal", arguments=(0.0, 0.5)), _p("a.z", values=(1, 2, 3, 4))]
    cases = designs.cases(ps, d)
    assert cases == designs.cases(ps, d) and len(cases) == 20
    x = np.array([c[0] for c in cases])
    assert sorted(np.floor((x - 2.0) / 2.0 * 20).astype(int)) == list(range(20))
    assert all(c[1] > 0 for c in cases)
    assert sorted(c[2] for c in cases) == [1] * 5 + [2] * 5 + [3] * 5 + [4] * 5  # a list: evenly by strata


def test_random_samples_follow_their_distribution():
    d = Design("samples", samples=4000, method="random", seed=1)
    u = designs.unit_samples(d, 1)[:, 0]
    assert np.array_equal(u, np.random.default_rng(1).random((4000, 1))[:, 0])
    normal = np.array(designs.from_unit(_p("a.x", distribution="normal", arguments=(3.0, 0.5)), u))
    assert abs(normal.mean() - 3.0) < 0.05 and abs(normal.std() - 0.5) < 0.05
    logn = np.log(designs.from_unit(_p("a.x", distribution="lognormal", arguments=(1.0, 0.2)), u))
    assert abs(logn.mean() - 1.0) < 0.02 and abs(logn.std() - 0.2) < 0.02


# ---------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------
def test_reductions_agree_with_numpy_over_a_window():
    t = np.linspace(0.0, 2.0, 201)
    v = np.sin(3 * t) + 0.1 * t
    keep = (t >= 0.5 - 1e-12) & (t <= 1.5 + 1e-12)
    w = (0.5, 1.5)
    assert metrics.reduce(v, t, "final", w) == v[keep][-1]
    assert metrics.reduce(v, t, "max", w) == v[keep].max()
    assert metrics.reduce(v, t, "min", w) == v[keep].min()
    assert metrics.reduce(v, t, "mean", w) == pytest.approx(v[keep].mean(), rel=1e-15)
    assert metrics.reduce(v, t, "rms", w) == pytest.approx(np.sqrt(np.mean(v[keep] ** 2)), rel=1e-15)
    assert metrics.reduce(v, t, "time_of_max", w) == t[keep][np.argmax(v[keep])]
    assert metrics.reduce(v, t, "time_of_min", w) == t[keep][np.argmin(v[keep])]
    assert metrics.reduce(v, t, "final") == v[-1] and metrics.reduce(v, t, "max") == v.max()
    assert math.isnan(metrics.reduce(v, t, "max", (5.0, 6.0)))
    # the window's ends are inclusive within round-off: 0.1 * 3 is not 0.3
    t3 = np.arange(5) * 0.1
    assert metrics.reduce(np.arange(5.0), t3, "final", (0.0, 0.3)) == 3.0


def test_quantities_name_what_the_result_holds():
    names = {"bodies": ["wall", "bob"], "connectors": ["k"], "joints": []}
    q = metrics.parse_quantity("bodies[bob].velocity", names)
    assert (q.dataset, q.item, q.component, q.units) == ("bodies/velocity", "bob", None, "m/s")
    assert metrics.parse_quantity("connectors[0].force[2]", names).item == "k"
    assert metrics.parse_quantity("bodies[bob].angle", names).units == "rad"
    assert metrics.parse_quantity("energy.balance", names).units == "J"
    assert metrics.parse_quantity("momentum.angular[1]", names).units == "kg*m^2/s"
    for text, message in (("joints[j].force", "has no joints"), ("bodies.position", "select one of the bodies"),
                          ("bodies[bob]", "name what"), ("solver.iterations[0]", "scalar"),
                          ("enrgy.kinetic", "did you mean 'energy'"), ("bodies[bob].position[0][1]", "nothing follows")):
        with pytest.raises(metrics.MetricError, match=message):
            metrics.parse_quantity(text, names)
