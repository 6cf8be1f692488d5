"""User force laws on a spring (THEORY §13, SCENARIO.md: ``law``, ``parameters``; docs/user-laws.md).

A law identical to the built-in spring moves the bodies as the spring does (to round-off with its
derivatives, to Newton's tolerance with central differences); the energy of a law without a potential is
external work, with one its stored energy, and the balance holds to O(Δt²); the independent reference
solver (the user's function run as plain Python) agrees; the same run as plain Python and compiled agree;
statics and modes see the law; every way a law can be wrong is refused before the run with its key path and
line, or ends the run as a clean failure naming the element, the time and the values.  The derivatives of
the law kind are checked by finite differences with every kind's (tests/unit/test_tangents.py and
test_mechanics.py, EXAMPLES["spring_law"])."""
import math
import textwrap
import warnings

import numpy as np
import pytest

import mbsim
from mbsim.driver import ElementWarning
from mbsim.scenario import ScenarioError, load_scenario, scenario_from_dict

M, K, L0 = 2.0, 200.0, 1.0
W = math.sqrt(K / M)


def _oscillator(law=None, step=0.001, end=1.0, v0=0.5, rho=0.9, damping=None):
    spring = {"name": "s", "type": "spring", "bodies": ["world", "m"], "points": [[0, 0, 0], [1.2, 0, 0]]}
    if law is None:
        spring.update(stiffness=K, rest_length=L0)
    else:
        spring.update(law=law, parameters={"k": K, "rest": L0})
    sc = {"mbsim": 1, "name": "osc", "time": {"end": end, "step": step}, "integrator": {"rho_inf": rho},
          "bodies": [{"name": "m", "mass": M, "inertia": [0.1, 0.1, 0.1], "position": [1.2, 0, 0],
                      "velocity": [v0, 0.3, 0]}],
          "connectors": [spring]}
    if damping is not None:
        sc["connectors"].append({"name": "d", "type": "damper", "bodies": ["world", "m"],
                                 "points": [[0, 0, 0], [1.2, 0, 0]], "damping": damping, "axial": True})
    return sc


@pytest.mark.parametrize("law,tol", [("tests.user_laws:linear", 1e-13), ("tests.user_laws:linear_stored", 1e-13),
                                     ("tests.user_laws:linear_tension", 1e-8)])
def test_a_law_identical_to_the_spring_moves_the_bodies_as_the_spring(law, tol):
    """A 2D swing on a spring (stretch and turn of the line): the user law and the built-in spring give the
    same trajectory -- to round-off when the law gives its derivatives, to Newton's tolerance when they
    are central differences (a slightly different tangent converges to the same step)."""
    ref = mbsim.simulate(_oscillator()).raise_for_status()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = mbsim.simulate(_oscillator(law)).raise_for_status()
    x, xr = res.body("m").position, ref.body("m").position
    assert np.abs(x - xr).max() <= tol * np.abs(xr).max(), np.abs(x - xr).max()
    np.testing.assert_allclose(res.connector("s").force, ref.connector("s").force, atol=tol * 1e3)
    said = [str(w.message) for w in caught if issubclass(w.category, ElementWarning)]
    assert bool(said) == law.endswith("linear_tension"), said  # the run says when it forms differences
    if said:
        assert "central differences" in said[0] and "spring 's'" in said[0]
    e, er = res.energy, ref.energy
    if law.endswith("stored"):  # stored: the same potential as the spring's, nothing external
        np.testing.assert_allclose(e.potential, er.potential, atol=1e-12)
        assert np.abs(e.external_work).max() == 0.0 and np.abs(e.dissipated).max() < 1e-12
    else:  # its work is external work: W = −(½ k ΔL²) back to the start, to O(Δt²) of the trapezoid rule
        # that integrates the power ((ω Δt)² = 1e-4 of the energy)
        scale = np.abs(er.potential).max()
        np.testing.assert_allclose(e.external_work, -(er.potential - er.potential[0]), atol=1e-4 * scale)
        assert np.abs(e.potential).max() == 0.0


def test_the_energy_balance_of_a_law_holds_to_second_order():
    """The tendon (tests/user_laws.py: slack, toe region, damped while taut, activated in time) pulling a
    swinging mass: kinetic + potential + dissipated − external work stays at its start to O(Δt²), at
    ρ∞ = 1; the law's work is all external (no potential declared)."""
    drifts = []
    for step in (0.002, 0.001, 0.0005):
        sc = _oscillator(step=step, rho=1.0, v0=1.5)
        sc["connectors"][0].pop("stiffness"), sc["connectors"][0].pop("rest_length")
        sc["connectors"][0].update(law="tests.user_laws:tendon",
                                   parameters={"k": 400.0, "rest": 1.1, "toe": 0.05, "c": 4.0, "a": 0.2, "w": 3.0})
        res = mbsim.simulate(sc).raise_for_status()
        e = res.energy
        assert np.abs(e.external_work).max() > 0.05
        drifts.append(np.abs(e.balance - e.balance[0]).max())
    # (the tendon's slack onset is a kink, a contact: one halving divides the drift by 3.0, the next by 5.3;
    # docs/scenario.md, joint stops) -- two halvings by 16 ± 30 %
    drifts = np.array(drifts)
    assert drifts[-1] < 1e-4 and drifts[0] / drifts[-1] > 11.0, drifts


def test_a_law_follows_the_reference_solver_to_second_order():
    """The tendon on a body hanging from two points, under gravity: mbsim verify (the reference solver
    calls the user's function as plain Python; none of the compiled wrapper)."""
    from mbsim.verify import verify
    sc = scenario_from_dict({
        "mbsim": 1, "name": "tendons", "gravity": [0, 0, -9.81], "time": {"end": 0.5, "step": 0.001},
        "bodies": [{"name": "m", "mass": 1.5, "inertia": [0.02, 0.03, 0.025], "position": [0, 0, -1.0],
                    "velocity": [0.4, 0.2, 0.0], "angular_velocity": [0.5, -1.0, 2.0]}],
        "connectors": [
            {"name": "left", "type": "spring", "bodies": ["world", "m"], "points": [[-0.6, 0, 0], [-0.1, 0, -0.95]],
             "law": "tests.user_laws:smooth", "parameters": {"k": 800.0, "rest": 0.7, "k3": 400.0, "c": 3.0,
                                                            "c3": 0.5, "a": 0.3}},
            {"name": "right", "type": "spring", "bodies": ["world", "m"], "points": [[0.6, 0, 0], [0.1, 0, -0.95]],
             "law": "tests.user_laws:linear_stored", "parameters": {"k": 900.0, "rest": 0.7}}]})
    rep = verify(sc)
    assert rep.passed, [q.verdict for q in rep.quantities]


def test_a_law_runs_as_plain_python_as_it_runs_compiled():
    from mbsim.kernels import plain_python
    sc = _oscillator("tests.user_laws:smooth", end=0.1)
    sc["connectors"][0]["parameters"] = {"k": K, "rest": L0, "k3": 50.0, "c": 1.0, "c3": 0.2, "a": 0.3}
    compiled = mbsim.simulate(sc).raise_for_status()
    with plain_python():
        plain = mbsim.simulate(sc).raise_for_status()
    np.testing.assert_allclose(plain.body("m").position, compiled.body("m").position, rtol=0, atol=1e-14)


def test_statics_and_modes_see_a_law():
    """A mass hanging on the smooth law: its equilibrium stretch solves k x + k3 x³ = m g, and its
    frequency along the line is √(T′(x)/m)."""
    g, k, k3 = 9.81, 300.0, 5000.0
    sc = {"mbsim": 1, "name": "hang", "gravity": [0, 0, -g],
          "bodies": [{"name": "m", "mass": M, "inertia": [0.1, 0.1, 0.1], "position": [0, 0, -1.0]}],
          "connectors": [{"name": "s", "type": "spring", "bodies": ["world", "m"], "points": [[0, 0, 0], [0, 0, -1.0]],
                          "law": "tests.user_laws:smooth", "parameters": {"k": k, "rest": 1.0, "k3": k3, "c": 0.0,
                                                                         "c3": 0.0, "a": 0.0}}],
          "joints": [{"name": "rail", "type": "prismatic", "bodies": ["world", "m"], "point": [0, 0, -1.0],
                      "axis": [0, 0, 1]}]}
    x = float(np.roots([k3, 0.0, k, -M * g])[np.argmin(np.abs(np.roots([k3, 0.0, k, -M * g]).imag))].real)
    res = mbsim.statics(sc).raise_for_status()
    assert res.body("m").position[-1, 2] == pytest.approx(-1.0 - x, rel=1e-10)
    modes = mbsim.modes(sc, count=1)
    assert modes.frequency[0] * 2 * np.pi == pytest.approx(math.sqrt((k + 3 * k3 * x * x) / M), rel=1e-8)


def _scenario_file(tmp_path, connector: str, module: str = "") -> str:
    if module:
        (tmp_path / "mylaws.py").write_text(textwrap.dedent(module))
    text = textwrap.dedent("""\
        mbsim: 1
        name: bad
        time: {end: 0.5, step: 0.001}
        bodies:
          - {name: m, mass: 1, inertia: [1, 1, 1], position: [1, 0, 0]}
        connectors:
        """) + textwrap.indent(textwrap.dedent(connector), "  ")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    return str(path)


MODULE = """\
    import math
    def good(length, rate, time, params):
        return params[0] * (length - 1.0), params[0], 0.0
    def two(length, rate, time, params):
        return length, 1.0
    def untyped(length, rate, time, params):
        return "T" + length
    def raises(length, rate, time, params):
        raise ValueError("no")
    def nan_at_start(length, rate, time, params):
        return math.nan
    def blows_up(length, rate, time, params):
        return 0.0 if time < 0.1 else math.inf, 0.0, 0.0
    value = 3.0
"""


@pytest.mark.parametrize("law,extra,expected", [
    ("mylaws:good", "", None),
    ("no_such_module_here:f", "", "cannot find module 'no_such_module_here': not beside the scenario"),
    ("mylaws:absent", "", "has no function 'absent'"),
    ("mylaws:value", "", "is not a function"),
    ("mylaws:two", "", "returns 2 values; expected the tension alone"),
    ("mylaws:untyped", "", "does not compile with numba"),
    ("mylaws:raises", "", "raised ValueError: no"),
    ("mylaws:nan_at_start", "", "gives a value that is not finite at the initial length 1 m"),
    ("mylaws.good", "", "must be 'module:function'"),
    ("mylaws:good", ", rest_length: 1.0", "rest_length (line 7): has no meaning with a law"),
    ("mylaws:good", ", stiffness: 3", "exactly one of"),
])
def test_a_wrong_law_is_refused_before_the_run_with_its_key_and_line(tmp_path, law, extra, expected):
    path = _scenario_file(tmp_path, f"- {{name: u, type: spring, bodies: [world, m], points: [[0, 0, 0], [1, 0, 0]], "
                                    f"law: '{law}', parameters: {{k: 10}}{extra}}}\n", MODULE)
    if expected is None:
        sc = load_scenario(path)  # found beside the scenario file, not on sys.path
        assert sc.connectors[0].params["law"].reference == "mylaws:good"
        return
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    msg = str(err.value)
    assert expected in msg and "connectors[0]" in msg and "(line 7)" in msg, msg


def test_parameters_without_a_law_are_refused(tmp_path):
    path = _scenario_file(tmp_path, "- {name: u, type: spring, bodies: [world, m], points: [[0, 0, 0], [1, 0, 0]], "
                                    "stiffness: 3, parameters: {k: 10}}\n")
    with pytest.raises(ScenarioError, match=r"connectors\[0\].parameters \(line 7\): belongs to a law"):
        load_scenario(path)


def test_a_law_that_turns_non_finite_ends_the_run_cleanly_naming_it(tmp_path):
    path = _scenario_file(tmp_path, "- {name: u, type: spring, bodies: [world, m], points: [[0, 0, 0], [1, 0, 0]], "
                                    "law: 'mylaws:blows_up'}\n", MODULE)
    out = tmp_path / "bad.h5"
    res = mbsim.simulate(path, output=out)
    assert res.status == "failed"
    assert "spring 'u'" in res.message and "inf" in res.message and "t = 0.1" in res.message, res.message
    assert mbsim.load(out).status == "failed"  # the file is readable and says so


def test_a_result_with_a_law_reads_back_without_its_module(tmp_path):
    """The stored scenario of a run with a user law is read (to draw it, to inspect it) where the law's
    module is not at hand: the law is kept by name, not imported."""
    from mbsim.io.reader import read_trajectory
    from mbsim.viz.geometry import connector_geometry, scenario_of
    path = _scenario_file(tmp_path, "- {name: u, type: spring, bodies: [world, m], points: [[0, 0, 0], [1, 0, 0]], "
                                    "law: 'mylaws:good', parameters: {k: 10}}\n", MODULE)
    out = tmp_path / "run.h5"
    mbsim.simulate(path, output=out, end=0.01).raise_for_status()
    (tmp_path / "mylaws.py").unlink()
    traj = read_trajectory(str(out))
    sc = scenario_of(traj)
    assert sc is not None and sc.connectors[0].params["law"].reference == "mylaws:good"
    assert connector_geometry(traj, sc) is not None
