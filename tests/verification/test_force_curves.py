"""A spring's force curve (THEORY §13, SCENARIO.md ``force_curve``) against references written here: SciPy's
PCHIP interpolant (continued linearly) in an independent ODE solution, its root and derivative for the
statics and the modes, and the same spring with ``stiffness`` for a linear curve.  The tangent's
derivatives against finite differences are tests/unit/test_tangents.py's ("force curve" variants)."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.interpolate import PchipInterpolator
from scipy.optimize import brentq

import mbsim
from mbsim.scenario import ScenarioError, scenario_from_dict

HARD = [[-0.2, -10.0], [0.0, 0.0], [0.1, 8.0], [0.2, 25.0], [0.3, 60.0]]  # a hardening bump stop [m, N]


def curve_force(points):
    """The curve as the test states it: PCHIP inside, linear with the end slopes outside."""
    pts = np.asarray(points, float)
    p = PchipInterpolator(pts[:, 0], pts[:, 1], extrapolate=False)
    dp = p.derivative()
    lo, hi = pts[0, 0], pts[-1, 0]
    s_lo, s_hi = float(dp(lo)), float(dp(hi))

    def f(x):
        if x < lo:
            return pts[0, 1] + s_lo * (x - lo)
        if x > hi:
            return pts[-1, 1] + s_hi * (x - hi)
        return float(p(x))

    def df(x):
        return s_lo if x < lo else s_hi if x > hi else float(dp(x))
    return f, df


def _line(curve=None, k=None, m=2.0, x0=1.25, v0=0.0, gravity=(0, 0, 0), end=1.0, step=0.01, rho=0.9):
    """A block on a spring from the world's origin along x (L0 = 1), on a prismatic joint along x."""
    spring = {"name": "k", "type": "spring", "bodies": ["world", "m"], "points": [[0, 0, 0], [x0, 0, 0]],
              "rest_length": 1.0}
    spring.update({"force_curve": curve} if curve is not None else {"stiffness": k})
    return {"mbsim": 1, "name": "curve", "gravity": list(gravity), "time": {"end": end, "step": step},
            "integrator": {"rho_inf": rho},
            "bodies": [{"name": "m", "mass": m, "inertia": [0.1, 0.1, 0.1], "position": [x0, 0, 0],
                        "velocity": [v0, 0, 0]}],
            "joints": [{"type": "prismatic", "bodies": ["world", "m"], "point": [x0, 0, 0], "axis": [1, 0, 0]}],
            "connectors": [spring]}


def test_a_linear_curve_moves_the_bodies_exactly_as_the_same_stiffness():
    spatial = {"mbsim": 1, "name": "free", "gravity": [0, 0, -9.81], "time": {"end": 1.0, "step": 0.005},
               "bodies": [{"name": "m", "mass": 2.0, "inertia": [0.1, 0.2, 0.3], "position": [0.2, 0, -1.0],
                           "velocity": [0.3, 0.4, 0.5], "angular_velocity": [1, 2, 3]}]}
    runs = []
    for given in ({"force_curve": [[-1.0, -100.0], [0.0, 0.0], [2.0, 200.0]]}, {"stiffness": 100.0}):
        sc = dict(spatial, connectors=[{"name": "k", "type": "spring", "bodies": ["world", "m"],
                                        "points": [[0, 0, 0], [0.2, 0.1, -0.9]], "rest_length": 0.8, **given}])
        runs.append(mbsim.simulate(sc).raise_for_status())
    a, b = runs
    scale = np.abs(a["bodies/position"]).max()
    assert np.abs(a["bodies/position"] - b["bodies/position"]).max() <= 1e-13 * scale
    assert np.abs(a["energy/potential"] - b["energy/potential"]).max() <= 1e-12 * np.abs(b["energy/potential"]).max()


def test_a_hardening_curve_follows_an_independent_ode_solution_to_second_order():
    f, _ = curve_force(HARD)
    m, x0, v0, end = 2.0, 1.25, 0.4, 1.0

    def rhs(t, y):
        return [y[1], -f(y[0] - 1.0) / m]  # the tension pulls the block back towards the origin
    ref = solve_ivp(rhs, (0, end), [x0, v0], method="DOP853", rtol=1e-12, atol=1e-13, dense_output=True)
    errors = []
    for step in (0.01, 0.005, 0.0025):
        res = mbsim.simulate(_line(HARD, x0=x0, v0=v0, end=end, step=step)).raise_for_status()
        x = res.body("m").position[:, 0]
        errors.append(np.abs(x - ref.sol(res.time)[0]).max())
    assert errors[0] < 1e-3
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(orders - 2.0) < 0.1), orders


def test_its_energy_is_conserved_to_second_order_at_rho_1():
    """Without dampers at ρ∞ = 1 the energy balance's drift is the scheme's O(Δt²) (the potential is the
    curve's exact integral: a wrong one would not fall by 4 per halving): 1e-3 of the 5 J exchanged at 10 ms, 6e-5 at 2.5 ms."""
    drifts = []
    for step in (0.01, 0.005, 0.0025):
        res = mbsim.simulate(_line(HARD, x0=1.28, v0=0.3, end=2.0, step=step, rho=1.0)).raise_for_status()
        drifts.append(abs(res.energy.drift))
    assert drifts[0] < 2e-3 * 5.0
    assert drifts[0] / drifts[1] == pytest.approx(4.0, rel=0.05) and drifts[1] / drifts[2] == pytest.approx(4.0, rel=0.05)


def test_statics_and_modes_on_a_curve():
    """Hanging under gravity: the deflection where the curve carries the weight (brentq on PCHIP), and the
    vertical frequency √(T'(δ*)/m) and the pendulum frequency √(T/(L m)) on top of it."""
    f, df = curve_force(HARD)
    m, L0 = 2.0, 0.9
    sc = {"mbsim": 1, "name": "hang", "gravity": [0, 0, -9.81],
          "bodies": [{"name": "m", "mass": m, "inertia": [0.1, 0.1, 0.1], "position": [0, 0, -1.0]}],
          "connectors": [{"name": "k", "type": "spring", "bodies": ["world", "m"], "points": [[0, 0, 0], [0, 0, -1.0]],
                          "rest_length": L0, "force_curve": HARD}]}
    delta = brentq(lambda x: f(x) - m * 9.81, 0.0, 0.3, xtol=1e-15)
    res = mbsim.statics(sc).raise_for_status()
    assert res.body("m").position[0] == pytest.approx([0, 0, -(L0 + delta)], abs=1e-10)
    assert res.connector("k").force[0] == pytest.approx([0, 0, -m * 9.81], abs=1e-9)  # on A (world): pulled down
    modes = mbsim.modes(sc)
    freq = np.sort(modes.frequency[~modes.rigid_body])
    pendulum = np.sqrt(m * 9.81 / (L0 + delta) / m) / (2 * np.pi)
    vertical = np.sqrt(df(delta) / m) / (2 * np.pi)
    np.testing.assert_allclose(freq, [pendulum, pendulum, vertical], rtol=1e-8)


@pytest.mark.parametrize("curve, words", (
    ([[0.0, 0.0]], "needs 2 to 32 points"),
    ([[0.0, 0.0], [0.0, 1.0]], "must increase strictly"),
    ([[0.0, 0.0], [0.1, "a"]], "must be a number"),
    ([[0.0, 0.0, 1.0], [0.1, 2.0]], "must have 2 entries"),
    ([[float(i), float(i)] for i in range(40)], "needs 2 to 32 points"),
))
def test_a_bad_curve_is_refused_with_its_key_path(curve, words):
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(_line(curve))
    text = str(err.value)
    assert "connectors[0].force_curve" in text and words in text


def test_stiffness_and_force_curve_exclude_each_other():
    sc = _line(HARD)
    sc["connectors"][0]["stiffness"] = 5.0
    with pytest.raises(ScenarioError, match="give exactly one of stiffness, force_curve"):
        scenario_from_dict(sc)
    del sc["connectors"][0]["stiffness"], sc["connectors"][0]["force_curve"]
    with pytest.raises(ScenarioError, match="must give one of stiffness, force_curve"):
        scenario_from_dict(sc)
