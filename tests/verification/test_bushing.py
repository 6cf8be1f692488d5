"""The bushing and the torsional spring (THEORY §13) against closed forms: a block on a bushing along and
about each axis, a bushing with turned axes exciting two frequencies, a damped bushing's decay, a 2 rad
oscillation about a skew axis, the energy balance with large rotations and an anisotropic stiffness, and
the derivatives at a large rotation (the logarithm map's closed-form branch) against central differences.
tests/unit/test_tangents.py and test_mechanics.py check every derivative block at moderate rotations."""
import numpy as np
import pytest

import mbsim
from mbsim.kernels.rotations import quat_mul, quat_conj, rotvec_quat
from mbsim.mechanics import Mechanism
from mbsim.model.model import Model
from mbsim.scenario import ScenarioError, scenario_from_dict

M, J = 3.0, [0.2, 0.3, 0.4]
K6 = [2000.0, 3000.0, 4000.0, 50.0, 80.0, 120.0]


def _block(K=K6, C=None, axes=None, velocity=(0, 0, 0), angular_velocity=(0, 0, 0), end=1.0, step=0.002,
           rho=0.9, inertia=J, preload=None):
    b = {"name": "mount", "type": "bushing", "bodies": ["world", "block"], "point": [0.0, 0.0, 0.0],
         "stiffness": K}
    if C is not None:
        b["damping"] = C
    if axes is not None:
        b["axes"] = axes
    if preload is not None:
        b["preload"] = preload
    return {"mbsim": 1, "name": "bushing", "time": {"end": end, "step": step}, "integrator": {"rho_inf": rho},
            "bodies": [{"name": "block", "mass": M, "inertia": list(inertia), "position": [0, 0, 0],
                        "velocity": list(velocity), "angular_velocity": list(angular_velocity)}],
            "connectors": [b]}


def test_a_block_on_a_bushing_has_its_six_frequencies_along_and_about_each_axis():
    modes = mbsim.modes(_block(), count=6)
    expected = np.sort([np.sqrt(K6[i] / M) for i in range(3)] + [np.sqrt(K6[3 + i] / J[i]) for i in range(3)])
    np.testing.assert_allclose(np.sort(modes.frequency * 2 * np.pi), expected, rtol=1e-10)
    for k in range(6):  # each mode along or about one axis alone
        shape = np.abs(modes.shape[k, 0])
        assert np.sort(shape)[-2] < 1e-9


def test_a_bushing_with_turned_axes_excites_two_frequencies():
    """Axes turned by 30° about z, kx ≠ ky; a velocity along world x: x(t) = v0 (cos²30° sin(ω₁t)/ω₁ +
    sin²30° sin(ω₂t)/ω₂), second order in Δt."""
    c, s = np.cos(np.pi / 6), np.sin(np.pi / 6)
    axes = [[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]]
    v0 = 0.3
    w1, w2 = np.sqrt(K6[0] / M), np.sqrt(K6[1] / M)
    errors = []
    for step in (0.002, 0.001):
        res = mbsim.simulate(_block(axes=axes, velocity=(v0, 0, 0), step=step)).raise_for_status()
        t = res.time
        exact = v0 * (c * c * np.sin(w1 * t) / w1 + s * s * np.sin(w2 * t) / w2)
        errors.append(np.abs(res.body("block").position[:, 0] - exact).max())
    assert errors[0] < 1e-2 * v0 / w1 and errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)


def test_a_damped_bushing_decays_with_its_damping_ratio():
    c = 40.0
    zeta = c / (2 * np.sqrt(K6[2] * M))
    modes = mbsim.modes(_block(C=[0, 0, c, 0, 0, 0]), count=6)
    k = int(np.argmin(np.abs(modes.frequency * 2 * np.pi - np.sqrt(K6[2] / M))))
    assert modes.damping_ratio[k] == pytest.approx(zeta, rel=1e-10)
    wn = np.sqrt(K6[2] / M)
    wd = wn * np.sqrt(1 - zeta ** 2)
    res = mbsim.simulate(_block(C=[0, 0, c, 0, 0, 0], velocity=(0, 0, 0.2), step=0.0005)).raise_for_status()
    z = res.body("block").position[:, 2]
    exact = 0.2 / wd * np.exp(-zeta * wn * res.time) * np.sin(wd * res.time)
    assert np.abs(z - exact).max() < 1e-4 * 0.2 / wd


def test_a_torsional_spring_swings_2_rad_about_a_skew_axis_on_that_axis():
    """A body of isotropic inertia j, at rest at its reference, given ω₀ = 2Ω n about a skew axis n: its
    rotation stays on n, and its angle is 2 sin(Ωt), Ω = √(κ/j) (second order in Δt; the free axes of a
    rotation vector 2 rad long: the logarithm map's derivatives, not the identity)."""
    kappa, j = 8.0, 0.5
    n = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    om = np.sqrt(kappa / j)
    errors = []
    for step in (0.004, 0.002):
        sc = {"mbsim": 1, "name": "twist", "time": {"end": 2 * np.pi / om, "step": step},
              "bodies": [{"name": "b", "mass": 1.0, "inertia": [j, j, j], "angular_velocity": (2 * om * n).tolist()}],
              "connectors": [{"name": "s", "type": "torsional_spring", "bodies": ["world", "b"], "stiffness": kappa}]}
        res = mbsim.simulate(sc).raise_for_status()
        q = res.body("b").orientation
        theta = np.array([2 * np.arctan2(np.linalg.norm(x[1:]), x[0]) * x[1:] / max(np.linalg.norm(x[1:]), 1e-300)
                          for x in q])
        across = theta - np.outer(theta @ n, n)
        assert np.abs(across).max() < 1e-9
        errors.append(np.abs(theta @ n - 2 * np.sin(om * res.time)).max())
    assert errors[0] < 2e-3 and errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)
    modes = mbsim.modes(sc, count=6)
    np.testing.assert_allclose(np.sort(modes.frequency)[3:], om / (2 * np.pi), rtol=1e-10)  # 3 rigid translations


def test_the_energy_balance_closes_to_second_order_with_large_rotations_and_an_anisotropic_stiffness():
    """ρ∞ = 1, no damping: a skew frame, a full symmetric K coupling translation and rotation, rotations of
    more than 1.5 rad: the drift falls by 4 per halving (a moment applied without J_l⁻ᵀ would not be
    conservative and drift at first order)."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(6, 6))
    K = (a @ a.T + np.diag([3000.0, 4000.0, 5000.0, 20.0, 30.0, 25.0])).tolist()
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    axes = (q * np.sign(np.linalg.det(q))).tolist()
    drifts, turned = [], 0.0
    for step in (0.002, 0.001, 0.0005):
        res = mbsim.simulate(_block(K=K, axes=axes, velocity=(0.2, -0.1, 0.3), angular_velocity=(13.0, -10.0, 11.0),
                                    rho=1.0, end=0.5, step=step)).raise_for_status()
        drifts.append(abs(res.energy.drift))
        qs = res.body("block").orientation
        turned = max(turned, float(np.max(2 * np.arccos(np.clip(np.abs(qs[:, 0]), 0, 1)))))
    assert 1.5 < turned < 3.0  # (the rotation vector is valid below π)
    assert drifts[0] / drifts[1] == pytest.approx(4.0, rel=0.1) and drifts[1] / drifts[2] == pytest.approx(4.0, rel=0.1)


def test_a_non_symmetric_stiffness_does_external_work_and_the_balance_holds_to_second_order():
    """K with an antisymmetric (circulatory) part, turning by more than 1.5 rad about a skew axis at ρ∞ = 1:
    its symmetric part stores energy, the antisymmetric part's work −∫(K_a δ)·δ̇ dt is external work, and
    kinetic + potential − external stays at its start to O(Δt²) (counted as stored, the balance would drift
    by the external work itself, ~1 J here); against the reference solver too."""
    rng = np.random.default_rng(5)
    a = rng.normal(size=(6, 6))
    b = rng.normal(size=(6, 6))
    K = a @ a.T + np.diag([3000.0, 4000.0, 5000.0, 20.0, 30.0, 25.0]) + 0.3 * (b - b.T) * np.array(
        [300.0] * 3 + [6.0] * 3)[:, None]
    assert np.abs(K - K.T).max() > 10.0
    drifts, work = [], 0.0
    for step in (0.002, 0.001, 0.0005):
        res = mbsim.simulate(_block(K=K.tolist(), velocity=(0.2, -0.1, 0.3), angular_velocity=(13.0, -10.0, 11.0),
                                    rho=1.0, end=0.5, step=step)).raise_for_status()
        e = res.energy
        work = max(work, float(np.abs(e.external_work).max()))
        drifts.append(np.abs(e.balance - e.balance[0]).max())
    assert work > 0.05, work
    assert drifts[-1] < 1e-3 * work and drifts[0] / drifts[1] > 3.2 and drifts[1] / drifts[2] > 3.2, drifts
    from mbsim.verify import verify
    rep = verify(scenario_from_dict(_block(K=K.tolist(), velocity=(0.2, -0.1, 0.3),
                                           angular_velocity=(13.0, -10.0, 11.0), end=0.3, step=0.001)))
    assert rep.passed, [q.verdict for q in rep.quantities]


@pytest.mark.parametrize("kind", ("bushing", "torsional_spring"))
def test_the_derivatives_at_a_rotation_of_2_5_rad_match_finite_differences(kind):
    from tests.unit.test_mechanics import _fd, _gyroscopic_damping, _inertia, _inertial_stiffness
    from mbsim.kernels.rotations import quat_to_matrix  # noqa: F401
    rng = np.random.default_rng(9)
    a = rng.normal(size=(6, 6))
    conn = ({"name": "c", "type": "bushing", "bodies": ["a", "b"], "point": [0.3, 0.1, 0.2],
             "stiffness": (a @ a.T + 50 * np.eye(6)).tolist(), "damping": [1, 2, 3, 0.4, 0.5, 0.6],
             "preload": [1, -2, 3, 0.1, 0.2, -0.3], "axes": [[0, 0.6, 0.8], [0, -0.8, 0.6], [1, 0, 0]]}
            if kind == "bushing" else {"name": "c", "type": "torsional_spring", "bodies": ["a", "b"], "stiffness": 7.0,
                                       "damping": 0.3})
    sc = scenario_from_dict({"mbsim": 1, "name": "fd", "time": {"end": 1, "step": 0.1},
                             "bodies": [{"name": "a", "mass": 1.0, "inertia": [0.1, 0.2, 0.3], "position": [0, 0, 0]},
                                        {"name": "b", "mass": 2.0, "inertia": [0.3, 0.2, 0.4], "position": [0.5, 0.2, 0.1]}],
                             "connectors": [conn]})
    mech = Mechanism(Model(sc))
    s0 = mech.state()
    turn = rotvec_quat(2.5 * np.array([0.6, 0.0, 0.8]))
    q = s0.q.copy()
    q[1] = quat_mul(turn, q[1])  # B turned by 2.5 rad relative to A
    r = s0.r.copy()
    r[1] += [0.05, -0.03, 0.02]
    v, w = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    v[2:] = w[2:] = 0.0
    import dataclasses
    s = dataclasses.replace(s0, r=r, q=q, v=v, w=w)
    ev = mech.evaluate(s, derivatives=True)
    Jm = _inertia(mech, s)
    K_el = ev.K.toarray() - _inertial_stiffness(Jm, s.w[:2], np.zeros((2, 3)))
    C_el = ev.C.toarray() - _gyroscopic_damping(Jm, s.w[:2])
    for X, X_fd in ((K_el, _fd(mech, s, lambda e: e.constraint - e.f)), (C_el, -_fd(mech, s, lambda e: e.f, True))):
        assert np.abs(X - X_fd).max() <= 1e-6 * np.abs(X_fd).max()
    _ = quat_conj


@pytest.mark.parametrize("change, words", (
    ({"stiffness": [1, 2, 3]}, "must have 6 entries"),
    ({"axes": [[1, 0, 0], [1, 1, 0], [0, 0, 1]]}, "perpendicular"),
    ({"axes": [[1, 0, 0], [0, 0, 1], [0, 1, 0]]}, "right-handed"),
    ({"preload": [1, 2]}, "must have 6 entries"),
    ({"point": None}, "point"),
    ({"damping": [0, 0, -2, 0, 0, 0]}, "positive semi-definite"),
))
def test_a_bad_bushing_is_refused_with_its_key_path(change, words):
    sc = _block()
    b = sc["connectors"][0]
    for key, value in change.items():
        if value is None:
            del b[key]
        else:
            b[key] = value
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(sc)
    assert "connectors[0]" in str(err.value) and words in str(err.value)


def _wind(axis=(0.0, 0.0, 1.0), joint=True, step=0.001, end=3.2, w0=10.0, damping=None, inertia=(0.5, 0.5, 0.5)):
    """A rotor (inertia 0.5 about the axis) given ω₀ about a torsional spring's axis, κ = 2: Ω = 2 rad/s,
    the spring wound up to ω₀/Ω = 5 rad (beyond a half turn) and back."""
    n = np.asarray(axis, float) / np.linalg.norm(axis)
    spring = {"name": "coil", "type": "torsional_spring", "bodies": ["world", "rotor"], "axis": list(axis),
              "stiffness": 2.0}
    if damping is not None:
        spring["damping"] = damping
    sc = {"mbsim": 1, "name": "wind", "time": {"end": end, "step": step},
          "bodies": [{"name": "rotor", "mass": 2.0, "inertia": list(inertia), "position": [0, 0, 0],
                      "angular_velocity": (w0 * n).tolist()}],
          "connectors": [spring]}
    if joint:
        sc["joints"] = [{"name": "hinge", "type": "revolute", "bodies": ["world", "rotor"], "point": [0, 0, 0],
                         "axis": list(axis)}]
    return sc


@pytest.mark.parametrize("joint", [True, False], ids=["on a hinge", "free"])
def test_a_torsional_spring_about_an_axis_winds_through_full_turns(joint):
    """φ(t) = (ω₀/Ω) sin Ωt, 5 rad at the most: the angular velocity, the moment κφ n on A and the energy
    ½κφ² follow it through full turns, second order in Δt -- on a hinge, and free (a skew axis, the
    rotor's inertia isotropic: it stays on the axis)."""
    axis = (0.0, 0.0, 1.0) if joint else (0.3, -0.5, 0.8)
    n = np.asarray(axis) / np.linalg.norm(axis)
    errors = []
    for step in (0.002, 0.001):
        res = mbsim.simulate(_wind(axis, joint, step)).raise_for_status()
        t = res.time
        phi = 5.0 * np.sin(2.0 * t)
        w = res.body("rotor").angular_velocity @ n
        m = res.connector("coil").moment @ n
        np.testing.assert_allclose(res.energy.potential, 0.5 * 2.0 * phi ** 2, atol=5e-3)
        errors.append((np.abs(w - 10.0 * np.cos(2.0 * t)).max(), np.abs(m - 2.0 * phi).max()))
    errors = np.array(errors)
    assert errors[-1, 0] < 1e-3 and errors[-1, 1] < 1e-3, errors
    np.testing.assert_allclose(errors[0] / errors[1], 4.0, rtol=0.1)


def test_a_torsional_spring_about_an_axis_follows_the_reference_solver():
    """Damped, on a hinge whose axis is skew, the rotor anisotropic (the hinge carries its gyroscopic
    moments), wound beyond a half turn: mbsim verify (the reference counts the turns along its own
    integration)."""
    from mbsim.verify import verify
    rep = verify(scenario_from_dict(_wind((0.3, -0.5, 0.8), True, 0.002, 2.0, damping=0.2, inertia=(0.3, 0.4, 0.5))))
    assert rep.passed, [q.verdict for q in rep.quantities]


def test_a_run_that_turns_a_bushing_past_a_half_turn_is_warned():
    import warnings
    from mbsim.driver import ElementWarning
    sc = _block(angular_velocity=(0, 0, 60.0), end=0.3, step=0.002)  # 60 rad/s on 120 N m/rad, 0.4 kg m²: 3.5 rad
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mbsim.simulate(sc)
    said = [str(w.message) for w in caught if issubclass(w.category, ElementWarning)]
    assert len(said) == 1 and "bushing 'mount' has turned by" in said[0] and "half turn" in said[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mbsim.simulate(_block(angular_velocity=(0, 0, 1.0), end=0.3, step=0.002))
    assert not [w for w in caught if issubclass(w.category, ElementWarning)]


def test_a_sweeps_key_path_reaches_one_entry_of_a_bushings_stiffness():
    """``connectors[mount].stiffness[5]`` (the issue's example of a sweep key path): the yaw stiffness alone,
    and the yaw frequency √(k/J₃) follows it."""
    from mbsim.study import keypaths
    data = _block()
    keypaths.assign(data, keypaths.parse("connectors[mount].stiffness[5]"), 480.0)
    assert data["connectors"][0]["stiffness"] == K6[:5] + [480.0]
    modes = mbsim.modes(data, count=6)
    assert np.sqrt(480.0 / J[2]) / (2 * np.pi) == pytest.approx(float(np.max(modes.frequency[np.abs(modes.shape[:, 0, 5]) == 1.0])),
                                                               rel=1e-10)


def test_a_run_that_counts_turns_resumes_from_the_turns_it_kept(tmp_path, capsys):
    """A torsional spring about an axis counts the turns of its angle, which the frames do not hold: a
    fixed-step run keeps them at each frame in its checkpoint (/checkpoint, docs/output.md), so a run
    stopped at 0.5 s, the spring wound to 4.2 rad (beyond a half turn), resumes to the frames of the
    uninterrupted run -- without the kept turns its moment would be 2π κ off; a file without a
    checkpoint (an earlier version's) is refused, saying why (exit status 2)."""
    import h5py
    import yaml
    from mbsim.cli import main
    from mbsim.io.writer import FRAME_DATASETS
    p = tmp_path / "wind.yaml"
    p.write_text(yaml.safe_dump(_wind(end=1.0)))
    whole, out = tmp_path / "whole.h5", tmp_path / "wind.h5"
    assert main(["run", str(p), "-o", str(whole), "--quiet"]) == 0
    assert main(["run", str(p), "-o", str(out), "--quiet", "--end", "0.5"]) == 0
    with h5py.File(out, "r+") as f:
        f.attrs["status"] = "interrupted"
        assert abs(f["connectors/moment"][-1, 0, 2]) > 2.0 * np.pi  # (κ φ, φ beyond a half turn)
    bare = tmp_path / "bare.h5"
    bare.write_bytes(out.read_bytes())
    assert main(["run", str(p), "--resume", str(out), "--quiet"]) == 0
    with h5py.File(whole) as a, h5py.File(out) as b:
        assert b.attrs["status"] == "completed" and a["time"].shape == b["time"].shape
        for k in FRAME_DATASETS:
            if not k.startswith("solver/"):
                assert np.array_equal(a[k][:], b[k][:], equal_nan=True), k
    with h5py.File(bare, "r+") as f:
        del f["checkpoint"]
    capsys.readouterr()
    assert main(["run", str(p), "--resume", str(bare)]) == 2
    err = capsys.readouterr().err
    assert "torsional_spring 'coil'" in err and "turns" in err and "no checkpoint" in err


def test_a_torsional_spring_about_an_axis_gives_its_mode():
    """At rest (φ = 0, no moment) its stiffness is still there: the balance wheel's one mode is
    √(κ/I) with ζ = χ/(2√(κI)) (scenarios/balance_wheel.yaml)."""
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "scenarios" / "balance_wheel.yaml"
    modes = mbsim.modes(str(path), count=1)
    kappa, inertia, chi = 0.08, 0.002, 2.0e-5
    assert modes.frequency[0] * 2 * np.pi == pytest.approx(np.sqrt(kappa / inertia), rel=1e-9)  # (undamped)
    assert modes.damping_ratio[0] == pytest.approx(chi / (2 * np.sqrt(kappa * inertia)), rel=1e-9)
