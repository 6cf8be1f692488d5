"""Statics, modes and linearization against closed forms (THEORY §12; issue 28, item 6).

Every reference is analytic or from an independent computation written here (a 2×2 eigenproblem in joint
angles, a potential minimized by scipy.optimize), never mbsim's own output.  The derivatives K and C of
the state API against central differences are tests/unit/test_mechanics.py's.
"""
import numpy as np
import pytest

import mbsim
from mbsim.analyses import AnalysisError

G = 9.81


def _slider(k=200.0, m=2.0, c=0.0, load=None):
    sc = {"mbsim": 1, "name": "slider", "gravity": [0, 0, -G],
          "bodies": [{"name": "cart", "mass": m, "inertia": [0.1, 0.2, 0.3], "position": [1.0, 0, 0]}],
          "joints": [{"name": "rail", "type": "prismatic", "bodies": ["world", "cart"], "point": [1.0, 0, 0],
                      "axis": [1, 0, 0]}],
          "connectors": [{"name": "k", "type": "spring", "bodies": ["world", "cart"],
                          "points": [[0, 0, 0], [1.0, 0, 0]], "stiffness": k, "rest_length": 1.0}]}
    if c:
        sc["connectors"].append({"name": "c", "type": "damper", "bodies": ["world", "cart"],
                                 "points": [[0, 0, 0], [1.0, 0, 0]], "damping": c})
    if load is not None:
        sc["loads"] = [{"name": "push", "type": "force", "body": "cart", "vector": load}]
    return sc


def test_a_slider_on_a_spring_has_frequency_sqrt_k_over_m():
    k, m = 200.0, 2.0
    modes = mbsim.modes(_slider(k, m))
    assert modes.degrees_of_freedom == 1 and len(modes) == 1
    assert modes.frequency[0] == pytest.approx(np.sqrt(k / m) / (2 * np.pi), rel=1e-12)
    assert modes.damping_ratio[0] == 0.0 and not modes.rigid_body[0]
    assert abs(modes.of(0, "cart")[0]) == 1.0 and np.abs(modes.of(0, "cart")[1:]).max() < 1e-12


def test_three_masses_between_walls_have_the_sine_law_frequencies():
    k, m, n = 150.0, 0.5, 3
    bodies = [{"name": f"m{i}", "mass": m, "inertia": [0.01, 0.01, 0.01], "position": [float(i + 1), 0, 0]}
              for i in range(n)]
    names = ["world"] + [b["name"] for b in bodies] + ["world"]
    springs = [{"type": "spring", "bodies": [names[i], names[i + 1]], "points": [[float(i), 0, 0], [float(i + 1), 0, 0]],
                "stiffness": k, "rest_length": 1.0} for i in range(n + 1)]
    joints = [{"type": "prismatic", "bodies": ["world", b["name"]], "point": b["position"], "axis": [1, 0, 0]}
              for b in bodies]
    modes = mbsim.modes({"mbsim": 1, "name": "walls", "bodies": bodies, "connectors": springs, "joints": joints})
    expected = [2 * np.sqrt(k / m) * np.sin(j * np.pi / (2 * (n + 1))) / (2 * np.pi) for j in range(1, n + 1)]
    np.testing.assert_allclose(modes.frequency, expected, rtol=1e-12)
    # the first mode moves all three masses the same way, the middle one most (sin jπ/4 pattern)
    x = modes.shape[0, :, 0].real
    np.testing.assert_allclose(x, np.sin(np.arange(1, 4) * np.pi / 4) / np.sin(np.pi / 2), rtol=1e-10)


def test_a_damped_slider_has_damping_ratio_c_over_2_sqrt_km():
    k, m, c = 200.0, 2.0, 3.0
    modes = mbsim.modes(_slider(k, m, c))
    w = np.sqrt(k / m)
    zeta = c / (2 * np.sqrt(k * m))
    assert modes.damping_ratio[0] == pytest.approx(zeta, rel=1e-12)
    assert modes.frequency[0] == pytest.approx(w / (2 * np.pi), rel=1e-12)  # |s| is the undamped frequency
    assert modes.eigenvalue[0].imag == pytest.approx(w * np.sqrt(1 - zeta ** 2), rel=1e-12)
    assert abs(modes.shape[0, 0, 0]) == 1.0


@pytest.mark.parametrize("axis", ([0, 1, 0], [0.3, 1.0, 0.2]))
def test_a_compound_pendulum_has_sqrt_mgd_over_i_pivot(axis):
    m, d = 2.0, 0.7
    inertia = np.array([0.03, 0.05, 0.04])
    sc = {"mbsim": 1, "name": "compound", "gravity": [0, 0, -G],
          "bodies": [{"name": "b", "mass": m, "inertia": inertia.tolist(), "position": [0, 0, -d]}],
          "joints": [{"name": "h", "type": "revolute", "bodies": ["world", "b"], "point": [0, 0, 0], "axis": axis}]}
    modes = mbsim.modes(sc)
    u = np.asarray(axis, float) / np.linalg.norm(axis)
    s2 = 1.0 - u[2] ** 2  # sin² of the angle between the axis and gravity
    i_pivot = u @ np.diag(inertia) @ u + m * d * d * s2
    w = np.sqrt(m * G * d * s2 / i_pivot)
    assert modes.frequency[0] == pytest.approx(w / (2 * np.pi), rel=1e-10)
    assert modes.stability == "stable"


def _double_pendulum(m1=1.5, m2=0.8, l1=0.9, a1=0.45, a2=0.35, i1=0.06, i2=0.02, phi=(0.0, 0.0)):
    """Two rods on parallel hinges (axis y), absolute angles phi; returns the scenario and the 2×2 M, K."""
    def rot(p, ang):  # a vector (x, z) hanging down, turned by ang about y
        return np.array([np.sin(ang) * p, 0.0, -np.cos(ang) * p])
    c1 = rot(a1, phi[0])
    j2 = rot(l1, phi[0])
    c2 = j2 + rot(a2, phi[1])
    sc = {"mbsim": 1, "name": "double", "gravity": [0, 0, -G],
          "bodies": [{"name": "upper", "mass": m1, "inertia": [i1, i1, 0.01], "position": c1.tolist(),
                      "orientation": {"axis_angle": {"axis": [0, 1, 0], "angle": float(phi[0])}}},
                     {"name": "lower", "mass": m2, "inertia": [i2, i2, 0.005], "position": c2.tolist(),
                      "orientation": {"axis_angle": {"axis": [0, 1, 0], "angle": float(phi[1])}}}],
          "joints": [{"name": "top", "type": "revolute", "bodies": ["world", "upper"], "point": [0, 0, 0], "axis": [0, 1, 0]},
                     {"name": "mid", "type": "revolute", "bodies": ["upper", "lower"], "point": j2.tolist(),
                      "axis": [0, 1, 0]}]}
    M = np.array([[i1 + m1 * a1 ** 2 + m2 * l1 ** 2, m2 * l1 * a2], [m2 * l1 * a2, i2 + m2 * a2 ** 2]])
    K = np.diag([(m1 * a1 + m2 * l1) * G, m2 * a2 * G])
    return sc, M, K


def test_a_double_pendulum_matches_its_joint_angle_eigenproblem():
    import scipy.linalg as sl
    sc, M, K = _double_pendulum()
    modes = mbsim.modes(sc)
    w2, phi = sl.eigh(K, M)
    np.testing.assert_allclose(modes.frequency, np.sqrt(w2) / (2 * np.pi), rtol=1e-10)
    for k in range(2):  # the shapes: the ratio of the two bodies' rotations about y
        ratio = modes.of(k, "lower")[4].real / modes.of(k, "upper")[4].real
        assert ratio == pytest.approx(phi[1, k] / phi[0, k], rel=1e-8)


def test_a_free_body_has_six_rigid_body_modes():
    sc = {"mbsim": 1, "name": "free", "bodies": [{"name": "b", "mass": 3.0, "inertia": [0.1, 0.2, 0.3]}]}
    modes = mbsim.modes(sc, count=6)
    assert modes.degrees_of_freedom == 6 and len(modes) == 6
    assert modes.rigid_body.all() and (modes.frequency == 0).all() and np.isnan(modes.damping_ratio).all()
    # together the six shapes span every motion of the body
    assert np.linalg.matrix_rank(modes.shape[:, 0, :].real, tol=1e-9) == 6
    assert modes.stability == "neutral"


def test_a_hanging_chain_of_springs_settles_where_each_spring_carries_the_weight_below():
    k, m, L0, n = 400.0, 0.7, 0.25, 3
    bodies = [{"name": f"m{i}", "mass": m, "inertia": [0.001, 0.001, 0.001], "position": [0, 0, -(i + 1) * L0]}
              for i in range(n)]
    names = ["world"] + [b["name"] for b in bodies]
    springs = [{"type": "spring", "bodies": [names[i], names[i + 1]], "points": [[0, 0, -i * L0], [0, 0, -(i + 1) * L0]],
                "stiffness": k, "rest_length": L0} for i in range(n)]
    sc = {"mbsim": 1, "name": "springs", "gravity": [0, 0, -G], "bodies": bodies, "connectors": springs,
          "statics": {"load_steps": 0.25}}
    res = mbsim.statics(sc).raise_for_status()
    z, expected = 0.0, []
    for i in range(n):
        z -= L0 + (n - i) * m * G / k
        expected.append(z)
    np.testing.assert_allclose([res.body(b["name"]).position[0, 2] for b in bodies], expected, rtol=0, atol=1e-12)
    assert res.attrs["load_factor_steps"] >= 2  # the first increment was a quarter of the load
    np.testing.assert_allclose(res.connector("spring-0").force[0], [0, 0, -n * m * G], atol=1e-9)
    # point masses on springs: free to spin (nothing resists), so the equilibrium is neutral
    assert res.attrs["stability"] == "neutral"


@pytest.mark.parametrize("degrees", (30.0, 80.0, 135.0))
def test_a_pendulum_released_at_an_angle_settles_straight_down(degrees):
    d, th = 0.5, np.radians(degrees)
    sc = {"mbsim": 1, "name": "released", "gravity": [0, 0, -G],
          "bodies": [{"name": "b", "mass": 2.0, "inertia": [0.03, 0.05, 0.04],
                      "position": [d * np.sin(th), 0, -d * np.cos(th)]}],
          "joints": [{"name": "h", "type": "revolute", "bodies": ["world", "b"], "point": [0, 0, 0], "axis": [0, 1, 0]}]}
    res = mbsim.statics(sc).raise_for_status()
    np.testing.assert_allclose(res.body("b").position[0], [0, 0, -d], atol=1e-10)
    np.testing.assert_allclose(res.joint("h").force[0], [0, 0, -2.0 * G], rtol=0, atol=1e-10)  # on A (world): the weight
    assert res.attrs["stability"] == "stable" and res.analysis == "statics"


def test_a_spring_held_pendulum_sits_at_its_potentials_minimum_with_its_curvature():
    from scipy.optimize import minimize_scalar
    m, d, ic, k, L0, wall = 1.2, 0.6, 0.02, 60.0, 0.5, np.array([1.0, 0.0, -0.6])
    sc = {"mbsim": 1, "name": "held", "gravity": [0, 0, -G],
          "bodies": [{"name": "bob", "mass": m, "inertia": [ic, ic, ic], "position": [0, 0, -d]}],
          "joints": [{"name": "h", "type": "revolute", "bodies": ["world", "bob"], "point": [0, 0, 0], "axis": [0, 1, 0]}],
          "connectors": [{"name": "k", "type": "spring", "bodies": ["world", "bob"], "points": [wall.tolist(), [0, 0, -d]],
                          "stiffness": k, "rest_length": L0}]}

    def V(th):  # the potential along the hinge angle (about +y: x = d sin th, z = −d cos th)
        r = np.array([d * np.sin(th), 0.0, -d * np.cos(th)])
        return -m * G * d * np.cos(th) + 0.5 * k * (np.linalg.norm(wall - r) - L0) ** 2

    th = minimize_scalar(V, bounds=(-1.0, 1.5), method="bounded", options={"xatol": 1e-13}).x
    h = 1e-4
    curv = (-V(th + 2 * h) + 16 * V(th + h) - 30 * V(th) + 16 * V(th - h) - V(th - 2 * h)) / (12 * h * h)
    res = mbsim.statics(sc).raise_for_status()
    np.testing.assert_allclose(res.body("bob").position[0], [d * np.sin(th), 0, -d * np.cos(th)], atol=1e-8)
    modes = mbsim.modes(sc)
    assert modes.frequency[0] == pytest.approx(np.sqrt(curv / (ic + m * d * d)) / (2 * np.pi), rel=1e-6)


def test_a_run_started_along_a_mode_oscillates_at_its_frequency():
    """Double pendulum displaced (exactly, joints closed) by 1e-4 rad along its second mode: the motion stays
    in that mode and the hinge angle crosses zero at that mode's frequency (generalized-α, 400 steps per
    period: its period error is ~(ωΔt)²/12 ≈ 2e-5)."""
    import scipy.linalg as sl
    sc0, M, K = _double_pendulum()
    w2, phi = sl.eigh(K, M)
    modes = mbsim.modes(sc0)
    k = 1
    ang = 1e-4 * np.array([modes.of(k, "upper")[4].real, modes.of(k, "lower")[4].real])
    sc, _, _ = _double_pendulum(phi=tuple(ang))
    f = modes.frequency[k]
    period = 1.0 / f
    dt = period / 400
    sc.update(time={"end": 6 * period, "step": dt})
    res = mbsim.simulate(sc).raise_for_status()
    x = res.body("upper").position[:, 0]
    t = res.time
    cross = np.flatnonzero(np.sign(x[:-1]) != np.sign(x[1:]))
    tz = t[cross] - x[cross] * (t[cross + 1] - t[cross]) / (x[cross + 1] - x[cross])
    measured = 0.5 / np.mean(np.diff(tz))
    assert measured == pytest.approx(f, rel=1e-3)
    assert f == pytest.approx(np.sqrt(w2[k]) / (2 * np.pi), rel=1e-10)
    # the other mode is not excited: the two hinge angles keep the mode's ratio
    xl = res.body("lower").position[:, 0] - res.body("upper").position[:, 0] * (0.9 / 0.45)
    assert np.abs(xl - xl[0] * x / x[0]).max() < 1e-3 * np.abs(xl).max()


def test_initial_equilibrium_starts_a_pendulum_released_at_0_4_rad_at_rest_straight_down():
    d, th = 0.5, 0.4
    sc = {"mbsim": 1, "name": "settled", "gravity": [0, 0, -G], "time": {"end": 1.0, "step": 0.01},
          "initial": "equilibrium",
          "bodies": [{"name": "b", "mass": 2.0, "inertia": [0.03, 0.05, 0.04],
                      "position": [d * np.sin(th), 0, -d * np.cos(th)]}],
          "joints": [{"name": "h", "type": "revolute", "bodies": ["world", "b"], "point": [0, 0, 0], "axis": [0, 1, 0]}]}
    res = mbsim.simulate(sc).raise_for_status()
    p = res.body("b").position
    assert np.abs(p - [0, 0, -d]).max() < 1e-8


def test_a_spinning_axisymmetric_body_precesses_at_j3_omega_over_j1():
    """About a motion (--about initial): the gyroscopic terms and the kinematic term δω = δθ̇ − ω×δθ.  A
    torque-free axisymmetric body spinning at Ω about its symmetry axis: seen in world axes its axis cones
    at J₃Ω/J₁ (the body-frame nutation (J₃ − J₁)Ω/J₁ plus the spin)."""
    notes = []
    for J, om in (([1.0, 1.0, 3.0], 5.0), ([2.0, 2.0, 1.0], -3.0)):
        sc = {"mbsim": 1, "name": "top", "bodies": [{"name": "b", "mass": 1.0, "inertia": J,
                                                      "angular_velocity": [0, 0, om]}]}
        modes = mbsim.modes(sc, about="initial", notify=notes.append)
        moving = modes.eigenvalue[~modes.rigid_body]
        assert len(moving) == 1
        assert moving[0].imag == pytest.approx(J[2] * abs(om) / J[0], rel=1e-10) and abs(moving[0].real) < 1e-9
    assert not notes  # a steady spin is not accelerating: nothing to warn about


def test_linearize_gives_the_state_space_of_a_damped_slider_with_a_load_as_input():
    k, m, c = 200.0, 2.0, 3.0
    lin = mbsim.linearize(_slider(k, m, c, load=[1.0, 0, 0]), inputs=["push"])
    A, B, N = lin.state_space()
    np.testing.assert_allclose(A, [[0, 1], [-k / m, -c / m]], atol=1e-12)
    sign = N[0, 0]  # the basis vector is ±x
    assert abs(sign) == pytest.approx(1.0)
    np.testing.assert_allclose(B[:, 0], [0, sign / m], atol=1e-14)
    assert lin.M.shape == (6, 6) and lin.G.shape == (5, 6)


def test_modes_about_a_state_that_is_not_an_equilibrium_say_so():
    th = 0.3
    sc = {"mbsim": 1, "name": "swinging", "gravity": [0, 0, -G],
          "bodies": [{"name": "b", "mass": 1.0, "inertia": [0.01, 0.01, 0.01], "position": [np.sin(th), 0, -np.cos(th)]}],
          "joints": [{"name": "h", "type": "revolute", "bodies": ["world", "b"], "point": [0, 0, 0], "axis": [0, 1, 0]}]}
    notes = []
    mbsim.modes(sc, about="initial", notify=notes.append)
    assert notes and "not an equilibrium" in notes[0] and "unbalanced" in notes[0]


def test_bad_requests_get_a_clear_answer():
    with pytest.raises(AnalysisError, match="has 1 degree of freedom"):
        mbsim.modes(_slider(), count=2)
    with pytest.raises(mbsim.ScenarioError, match="at least one body must not be fixed"):
        mbsim.modes({"mbsim": 1, "name": "still", "bodies": [{"name": "w", "fixed": True}]})
    with pytest.raises(AnalysisError, match="not a load"):
        mbsim.linearize(_slider(load=[1, 0, 0]), inputs=["pull"])


@pytest.mark.parametrize("case, words", (
    ({"bodies": [{"name": "ball", "mass": 1.0, "inertia": [0.1, 0.1, 0.1]}]}, "body 'ball' translating along [0, 0, -1]"),
    ({"bodies": [{"name": "cart", "mass": 1.0, "inertia": [0.1, 0.1, 0.1]}],
      "joints": [{"type": "prismatic", "bodies": ["world", "cart"], "point": [0, 0, 0], "axis": [1, 0, 0]}],
      "loads": [{"type": "force", "body": "cart", "vector": [-2.0, 0, 5.0]}]}, "body 'cart' translating along [-1, 0, 0]"),
))
def test_a_free_motion_under_load_has_no_equilibrium(case, words):
    sc = {"mbsim": 1, "name": "free", "gravity": [0, 0, -G], **case}
    res = mbsim.statics(sc)
    assert res.status == "failed" and "no static equilibrium" in res.message and words in res.message
    with pytest.raises(mbsim.NoEquilibrium):
        mbsim.modes(sc)


NO_EQUILIBRIUM = {  # the examples whose mechanism has none, and the motion that says so (their headers)
    "joint_kinds": "body 'puck' translating along",  # a puck free on a tilted plane
    "loads": "body 'rotor' rotating about [0, 0.6, 0.8]",  # a rotor free to turn, under a torque at t = 0
}


@pytest.mark.parametrize("name", ["car_body", "chain50", "double_pendulum_3d", "iftomm_a01_pendulum",
                                  "iftomm_a01_revolute", "iftomm_a02_four_bars", "iftomm_a03_andrews",
                                  "iftomm_a04_bricard", "iftomm_a05_governor", "joint_kinds", "loads",
                                  "mass_spring_damper", "pendulum", "spatial_linkage", "spin_down"])
def test_every_example_has_an_equilibrium_that_a_run_keeps_or_says_why_not(name):
    """The statics of every example, from its configuration as written (pendulums released from the
    horizontal on a stiff spring, spinning bodies hanging on springs, a governor, linkages): an equilibrium
    where the time integration, started there at rest, finds no acceleration (its constrained equations of
    motion, independent of the statics' residual), or no equilibrium with the free motion named."""
    from pathlib import Path
    from mbsim.scenario import load_scenario
    from tests.integration._examples_util import scene_size
    path = Path(__file__).resolve().parents[2] / "scenarios" / f"{name}.yaml"
    res = mbsim.statics(path)
    if name in NO_EQUILIBRIUM:
        assert res.status == "failed" and NO_EQUILIBRIUM[name] in res.message
        return
    res.raise_for_status()
    sc = load_scenario(path)
    import dataclasses
    sc = dataclasses.replace(sc, initial="equilibrium")
    run = mbsim.simulate(sc, end=sc.time.step, interval=sc.time.step).raise_for_status()
    # the run's initial accelerations (the constrained equations of motion, THEORY §11) vanish there
    scale = np.linalg.norm(sc.gravity) + 1.0
    assert np.abs(run["bodies/acceleration"][0]).max() < 1e-8 * scale
    assert np.abs(run["bodies/angular_acceleration"][0]).max() < 1e-8 * scale / scene_size(sc)
    np.testing.assert_allclose(run["bodies/position"][0], res["bodies/position"][0], atol=1e-12 * scene_size(sc))


def _chain(n, dampers=0.0):
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from modes import chain_dict  # the benchmark's chain: 1 m of n rods on revolute joints about y
    sc = chain_dict(n)
    if dampers:
        sc.setdefault("connectors", []).extend(
            {"type": "torsional_damper", "bodies": [j["bodies"][0], j["bodies"][1]], "damping": dampers,
             "projection": "P3", "axis": [0, 1, 0]} for j in sc["joints"])
    return sc


def test_the_sparse_shift_invert_matches_the_joint_angle_eigenproblem():
    """A chain of 250 rods (1500 unknowns of the bodies: the sparse path, no null-space basis) against the
    chain's eigenproblem in joint angles (benchmarks/chain_modes_reference.py, written independently)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from chain_modes_reference import chain_frequencies
    modes = mbsim.modes(_chain(250), count=10)
    assert "sparse" in modes.result.attrs["modes_method"]
    np.testing.assert_allclose(modes.frequency, chain_frequencies(250, 10), rtol=1e-9)


def test_the_sparse_first_order_pencil_matches_the_dense_modes_of_a_damped_chain():
    sc = _chain(12, dampers=2e-4)
    dense = mbsim.modes(sc, count=6, dense=True)
    sparse = mbsim.modes(sc, count=6, dense=False)
    assert "first order" in dense.result.attrs["modes_method"] and "first-order" in sparse.result.attrs["modes_method"]
    assert (dense.damping_ratio > 1e-5).all()  # every mode damped
    np.testing.assert_allclose(sparse.eigenvalue, dense.eigenvalue, rtol=1e-9)
    for k in range(6):  # the same shapes (each scaled to its largest entry 1)
        np.testing.assert_allclose(sparse.shape[k], dense.shape[k], atol=1e-7)


def test_verify_starts_the_reference_from_the_same_equilibrium():
    """``initial: equilibrium`` under ``mbsim verify``: the reference solver integrates from the equilibrium
    the runs start from (a spring-held ball on a spherical joint, then a sideways sine load): second order,
    and an error at Δt far below the 0.06 m the as-given start lies away."""
    from mbsim.scenario import scenario_from_dict
    from mbsim.verify import verify
    sc = scenario_from_dict({
        "mbsim": 1, "name": "held", "gravity": [0, 0, -G], "time": {"end": 0.2, "step": 0.01},
        "initial": "equilibrium",
        "bodies": [{"name": "bob", "mass": 1.2, "inertia": [0.02, 0.02, 0.02], "position": [0, 0, -0.6]}],
        "joints": [{"name": "h", "type": "spherical", "bodies": ["world", "bob"], "point": [0, 0, 0]}],
        "connectors": [{"name": "k", "type": "spring", "bodies": ["world", "bob"], "points": [[1.0, 0, -0.6], [0, 0, -0.6]],
                        "stiffness": 60.0, "rest_length": 0.5}],
        "loads": [{"type": "force", "body": "bob", "vector": [0, 3.0, 0], "scale": {"sine": {"amplitude": 1.0, "frequency": 2.0}}}]})
    report = verify(sc)
    pos = next(q for q in report.quantities if q.name == "position")
    assert pos.ok and pos.errors[0] < 1e-3
    assert all(abs(o - 2.0) < 0.1 for o in pos.orders)
