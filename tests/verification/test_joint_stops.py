"""Joint stops (THEORY §13, SCENARIO.md joints: limits) against closed forms: an undamped stop gives a
rotor its speed back reversed after half a period of √(I/k), pressed as deep as ω₀√(I/k); a slider
resting on a stop under gravity sinks m g / k into it (statics); a damped stop takes energy out and
the balance of kinetic, potential (the stop's ½kp² included) and dissipated energy holds to O(Δt²);
a cylindrical joint with both stops on a skew axis against the independent reference solver (damped:
first order across a contact, where the force jumps).
Their derivatives are checked by finite differences with the joints' (tests/unit/test_joints.py and
test_mechanics.py: CASES with "+stop")."""
import numpy as np
import pytest

import mbsim
from mbsim.scenario import ScenarioError, load_scenario, scenario_from_dict

I_Z, K = 0.5, 200.0  # the rotor's inertia about the hinge [kg m²], the stop's stiffness [N m/rad]


def _rotor(w0=3.0, upper=0.3, damping=None, step=0.001, end=0.6, rho=1.0):
    limits = {"lower": -3.0, "upper": upper, "stiffness": K}
    if damping is not None:
        limits["damping"] = damping
    return {"mbsim": 1, "name": "rotor", "time": {"end": end, "step": step}, "integrator": {"rho_inf": rho},
            "bodies": [{"name": "rotor", "mass": 2.0, "inertia": [0.3, 0.4, I_Z], "position": [0, 0, 0],
                        "angular_velocity": [0, 0, w0]}],
            "joints": [{"name": "hinge", "type": "revolute", "bodies": ["world", "rotor"], "point": [0, 0, 0],
                        "axis": [0, 0, 1], "limits": limits}]}


def _angle(res):
    q = res.body("rotor").orientation
    return 2.0 * np.arctan2(q[:, 3], q[:, 0])


def test_an_undamped_stop_returns_a_rotor_its_speed_reversed():
    """ω₀ = 3 rad/s reaches the stop at 0.3 rad at t = 0.1 s (a grid time at every step), presses it
    ω₀√(I/k) deep, leaves it after π√(I/k) with −ω₀; second order in Δt."""
    w0, upper = 3.0, 0.3
    tau = np.sqrt(I_Z / K)
    t_out = 0.1 + np.pi * tau
    errors = []
    for step in (0.002, 0.001, 0.0005):
        res = mbsim.simulate(_rotor(w0, upper, step=step)).raise_for_status()
        t, a = res.time, _angle(res)
        w = res.body("rotor").angular_velocity[:, 2]
        after = t > t_out + 0.05
        errors.append((abs(a.max() - upper - w0 * tau), np.abs(w[after] + w0).max(),
                       np.abs(a[after] - (upper - w0 * (t[after] - t_out))).max()))
        # the stop's energy is the potential, and it is all the rotor's kinetic energy at the deepest
        e = res.energy
        deepest = int(np.argmax(a))
        assert e.potential[deepest] == pytest.approx(0.5 * K * (a[deepest] - upper) ** 2, rel=1e-9)
        assert e.kinetic[deepest] < 2e-3 * 0.5 * I_Z * w0 ** 2
        # the hinge transmits the stop's moment: −k p about the axis on the rotor, +k p on the world (A)
        mz = res.joint("hinge").moment[:, 2]
        assert mz[deepest] == pytest.approx(K * (a[deepest] - upper), rel=1e-6)
    # A contact is a kink in the force: the step across it integrates that kink with an error of order Δt²
    # whose constant depends on where in the step the contact begins or ends, so one halving divides the
    # error by anything from about 1.5 to 100 (the pressed depth, sampled at the frames, the most); two
    # halvings by about 16 or more, and the error stays within a constant times Δt².
    errors = np.array(errors)
    assert errors[-1, 0] < 2e-4 * w0 * tau and errors[-1, 1] < 1e-3 * w0, errors
    assert np.all(errors[0] / errors[-1] > 12.0), errors
    steps = np.array([0.002, 0.001, 0.0005])
    assert np.all(errors / steps[:, None] ** 2 < 1.05 * (errors / steps[:, None] ** 2)[0].max()), errors


@pytest.mark.parametrize("lower", [-3.0, None], ids=["two bounds", "upper only"])
def test_a_stop_beyond_a_half_turn_counts_the_turns(lower):
    """The rotor spins freely for more than a turn and a half before it meets its stop at 10 rad (the angle
    through full turns, THEORY §13), is thrown back with −ω₀, and (with a lower bound) meets the lower stop
    after as long again."""
    w0, upper = 3.0, 10.0
    sc = _rotor(w0, upper, step=0.001, end=8.6)
    limits = sc["joints"][0]["limits"]
    if lower is None:
        del limits["lower"]
    tau = np.sqrt(I_Z / K)
    res = mbsim.simulate(sc).raise_for_status()
    t = res.time
    w = res.body("rotor").angular_velocity[:, 2]
    t_in = upper / w0
    t_out = t_in + np.pi * tau
    assert np.abs(w[t < t_in - 1e-3] - w0).max() < 1e-9  # free before
    after = (t > t_out + 0.02) & (t < t_out + 0.02 + (upper + 3.0) / w0 - 0.05)
    assert np.abs(w[after] + w0).max() < 2e-3 * w0  # thrown back
    e = res.energy
    assert e.potential.max() == pytest.approx(0.5 * I_Z * w0 ** 2, rel=1e-3)  # all of it stored, once
    back = t > t_out + 0.02 + (upper + 3.0) / w0 + np.pi * tau + 0.02
    if lower is None:  # free ever after
        assert np.abs(w[back] + w0).max() < 2e-3 * w0
    else:  # thrown forward again by the lower stop at −3 rad
        assert np.abs(w[back] - w0).max() < 4e-3 * w0


def test_a_slider_resting_on_a_stop_sinks_mg_over_k():
    m, g, k = 4.0, 9.81, 5000.0
    sc = {"mbsim": 1, "name": "slider", "gravity": [0, 0, -g], "time": {"end": 1.0, "step": 0.001},
          "bodies": [{"name": "slider", "mass": m, "inertia": [0.1, 0.1, 0.1], "position": [0, 0, 0]}],
          "joints": [{"name": "rail", "type": "prismatic", "bodies": ["world", "slider"], "point": [0, 0, 0],
                      "axis": [0, 0, 1], "limits": {"lower": -0.05, "stiffness": k, "damping": 40.0}}]}
    res = mbsim.statics(sc).raise_for_status()
    z = res.body("slider").position[-1, 2]
    assert z == pytest.approx(-0.05 - m * g / k, rel=1e-9)
    assert res.joint("rail").force[-1, 2] == pytest.approx(-m * g, rel=1e-9)  # on A (the world): the weight
    # dropped from rest it bounces (the damping never pulls) and settles there
    run = mbsim.simulate(dict(sc, time={"end": 3.0, "step": 0.001})).raise_for_status()
    assert run.body("slider").position[-1, 2] == pytest.approx(-0.05 - m * g / k, abs=1e-6)


def test_a_damped_stop_keeps_the_energy_balance_to_second_order():
    """Kinetic + potential (the stop's ½kp²) + dissipated stays at its initial value, the error of the
    balance falling as Δt² (ρ∞ = 1, the stop's damping the only loss; the clip at separation lets the
    stored energy go into the dissipated channel)."""
    drifts = []
    for step in (0.002, 0.001, 0.0005):
        res = mbsim.simulate(_rotor(damping=2.0, step=step, end=0.8)).raise_for_status()
        e = res.energy
        assert e.dissipated[-1] > 0.3 * 0.5 * I_Z * 9.0  # it took a good part of the energy out
        drifts.append(np.abs(e.balance - e.balance[0]).max())
    drifts = np.array(drifts)
    assert drifts[-1] < 1e-3 * 0.5 * I_Z * 9.0
    assert np.all(drifts[:-1] / drifts[1:] > 3.0), drifts


def test_a_cylindrical_joint_with_both_stops_follows_the_reference_solver():
    """A body on a cylindrical joint along a skew axis, thrown along and about it against damped stops on
    both coordinates, under gravity: mbsim's run against the independent reference solver (DOP853 on the
    continuous equations, the stops written from the joint frames apart from mbsim's laws)."""
    n = np.array([0.3, -0.4, 0.85]) / np.linalg.norm([0.3, -0.4, 0.85])
    c = np.array([0.2, 0.1, 0.0])  # the sleeve's centre; the joint's point at the origin
    w = 4.0 * n
    v = 1.7 * n + np.cross(w, c)  # the joint's point slides along n, the sleeve turns about it
    sc = scenario_from_dict({
        "mbsim": 1, "name": "cylinder", "gravity": [0, 0, -9.81], "time": {"end": 0.6, "step": 0.001},
        "bodies": [{"name": "sleeve", "mass": 1.5, "inertia": [0.02, 0.03, 0.025], "position": c.tolist(),
                    "orientation": {"rotation_vector": [0.2, -0.1, 0.3]}, "velocity": v.tolist(),
                    "angular_velocity": w.tolist()}],
        "joints": [{"name": "shaft", "type": "cylindrical", "bodies": ["world", "sleeve"], "point": [0, 0, 0],
                    "axis": n.tolist(), "angle_limits": {"lower": -0.4, "upper": 0.5, "stiffness": 30.0, "damping": 0.2},
                    "displacement_limits": {"lower": -0.1, "upper": 0.15, "stiffness": 3000.0, "damping": 8.0}}]})
    from mbsim.verify import verify
    rep = verify(sc, steps=(0.001, 0.0005, 0.00025))
    errs = {q.name: np.array(q.errors) for q in rep.quantities}
    # (a motion 0.3 m and 1 rad wide; a stop's force with the wrong sign or lever is off by centimetres)
    assert errs["position"][-1] < 2e-4 and errs["rotation"][-1] < 1e-4 and errs["velocity"][-1] < 3e-3, errs
    # A damped stop's force jumps by c ṗ when the contact begins (THEORY §13): the step across the jump
    # errs by O(Δt) in the velocities, and the whole run is first order in Δt (docs/scenario.md, joints:
    # limits) -- halving Δt halves the position error.  (Undamped, second order: the test above.)
    ratios = errs["position"][:-1] / errs["position"][1:]
    assert np.all((ratios > 1.7) & (ratios < 2.5)), errs
    # the stops were pressed: energy stored beyond the weight's
    res = mbsim.simulate(sc).raise_for_status()
    stored = res.energy.potential - 1.5 * 9.81 * res.body("sleeve").position[:, 2]
    assert stored.max() > 0.05


def test_every_problem_of_a_limit_is_reported_at_once(tmp_path):
    text = """\
mbsim: 1
name: bad
time: {end: 1, step: 0.01}
bodies:
  - {name: b, mass: 1, inertia: [1, 1, 1]}
joints:
  - {name: h, type: revolute, bodies: [world, b], point: [0, 0, 0], axis: [0, 0, 1],
     limits: {lower: 0.5, upper: 0.2, stiffness: -1, damping: -2, spring: 3}}
  - {name: p, type: prismatic, bodies: [world, b], point: [0, 0, 0], axis: [1, 0, 0],
     limits: {stiffness: 10}}
  - {name: c, type: cylindrical, bodies: [world, b], point: [0, 0, 0], axis: [0, 1, 0],
     angle_limits: {upper: 4.0, stiffness: 1}, limits: {lower: 0, upper: 1, stiffness: 1}}
  - {name: s, type: spherical, bodies: [world, b], point: [0, 0, 0], limits: {lower: 0, upper: 1, stiffness: 1}}
"""
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(str(path))
    msg = str(err.value)
    for expected in ("joints[0].limits (line 8): unknown key 'spring'", "joints[0].limits.stiffness (line 8)",
                     "joints[0].limits.damping (line 8)", "joints[0].limits.upper (line 8): must be greater than lower",
                     "joints[1].limits (line 10): must give lower, upper or both",
                     "joints[2] (line 12): 'limits' is not a key of a cylindrical joint",
                     "joints[3] (line 13): 'limits' is not a key of a spherical joint"):
        assert expected in msg, (expected, msg)
    assert "7 problems" in msg  # (an angle limit with one bound, beyond π, is fine: the turns are counted)


def test_a_sweeps_key_path_moves_a_stop():
    """``joints[hinge].limits.upper``: the rotor's rebound angle follows the stop it is moved to."""
    from mbsim.study import keypaths
    data = _rotor(end=0.3)
    keypaths.assign(data, keypaths.parse("joints[hinge].limits.upper"), 0.2)
    res = mbsim.simulate(data).raise_for_status()
    assert _angle(res).max() == pytest.approx(0.2 + 3.0 * np.sqrt(I_Z / K), abs=2e-3)


def test_the_animation_draws_a_hinges_stops_as_spokes_at_its_limits(tmp_path):
    pytest.importorskip("matplotlib")
    from pathlib import Path
    from mbsim.api import apply_overrides
    from mbsim.io.reader import read_trajectory
    from mbsim.viz.animate import Scene
    door = Path(__file__).resolve().parents[2] / "scenarios" / "door.yaml"
    sc = load_scenario(str(door))
    out = tmp_path / "door.h5"
    mbsim.simulate(apply_overrides(sc, end=0.1), output=out).raise_for_status()
    traj = read_trajectory(str(out))
    scene = Scene(traj, size=(400, 300))
    thin = scene.joint_segments(3)[1]
    spokes = thin[-2:] - thin[-2:, :1]  # from the hinge's point
    d = spokes[:, 1] / np.linalg.norm(spokes[:, 1], axis=1, keepdims=True)
    np.testing.assert_allclose(d[:, 2], 0.0, atol=1e-12)  # across the hinge's axis (z)
    turn = np.arctan2(np.cross(d[0], d[1])[2], d[0] @ d[1])
    assert turn == pytest.approx(0.785 + 0.011, abs=1e-12)  # from lower to upper, about the axis
