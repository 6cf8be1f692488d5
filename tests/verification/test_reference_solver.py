"""Verification of the reference solver (mbsim.reference) against closed forms and conservation laws.

Every reference value comes from an analytic solution, a matrix exponential
of a linear ODE, or a conservation/balance law of THEORY §9.  Scenarios are
built straight from the frozen specs, with SciPy's `Rotation` for
orientations, so nothing here shares code with the generalized-α path.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

from mbsim.reference import equations_of_motion, output_times, solve_reference
from mbsim.scenario.spec import (BodySpec, ConnectorSpec, Constant, IntegratorSpec, LoadSpec,
                                 OutputSpec, Ramp, Scenario, Sine, Table, TimeSpec)
from mbsim.scenario.spec import frozen_array as fa


# --------------------------------------------------------------------------
# scenario builders (own helpers: the YAML loader is not needed)
# --------------------------------------------------------------------------
def _quat(rotvec):
    x, y, z, w = Rotation.from_rotvec(rotvec).as_quat()  # SciPy is scalar-last
    return [w, x, y, z]


def body(name, mass=1.0, inertia=(1.0, 1.0, 1.0), position=(0, 0, 0), rotvec=(0, 0, 0),
         velocity=(0, 0, 0), angular_velocity=(0, 0, 0), fixed=False):
    J = np.diag(inertia) if np.ndim(inertia) == 1 else np.asarray(inertia, float)
    return BodySpec(name, fixed, 0.0 if fixed else mass, fa(np.zeros((3, 3)) if fixed else J),
                    fa(position), fa(_quat(rotvec)), fa(velocity), fa(angular_velocity))


def spring(name, a, b, pa, pb, k, L0=None):
    L0 = np.linalg.norm(np.subtract(pb, pa)) if L0 is None else L0
    return ConnectorSpec(name, "spring", a, b, points=fa([pa, pb]), stiffness=k,
                         rest_length=float(L0))


def damper(name, a, b, pa, pb, c, axial=False):
    return ConnectorSpec(name, "damper", a, b, points=fa([pa, pb]), damping=c,
                         params={"axial": True} if axial else {})


def torsional(name, a, b, chi, projection, axis=None):
    axis = None if axis is None else fa(np.asarray(axis, float) / np.linalg.norm(axis))
    return ConnectorSpec(name, "torsional_damper", a, b, damping=chi, projection=projection,
                         axis=axis)


def scenario(bodies, connectors=(), loads=(), gravity=(0, 0, 0), end=1.0, interval=0.01):
    return Scenario("ref", "", fa(gravity), TimeSpec(end, 1e-3), IntegratorSpec(),
                    OutputSpec(interval), tuple(bodies), tuple(connectors), tuple(loads))


def world_points(sol, spec_scene, k, which):
    """World position (T, 3) of end `which` (0: A, 1: B) of connector k, via SciPy rotations."""
    c = spec_scene.connectors[k]
    name = (c.body_a, c.body_b)[which]
    i = [b.name for b in spec_scene.bodies].index(name)
    b0 = spec_scene.bodies[i]
    rot0 = Rotation.from_quat(np.roll(b0.orientation, -1))
    Z = rot0.inv().apply(c.points[which] - b0.position)
    rot = Rotation.from_quat(np.roll(sol.orientation[:, i], -1, axis=-1))
    return sol.position[:, i] + rot.apply(Z)


# --------------------------------------------------------------------------
# 1. mass–spring–damper along x
# --------------------------------------------------------------------------
def test_mass_spring_damper_matches_underdamped_closed_form():
    m, k, c, L0, u0, v0 = 2.0, 50.0, 1.5, 2.0, 0.1, 0.3
    sc = scenario([body("bob", mass=m, position=(L0 + u0, 0, 0), velocity=(v0, 0, 0))],
                  [spring("s", "world", "bob", (0, 0, 0), (L0 + u0, 0, 0), k, L0),
                   damper("d", "world", "bob", (-1, 0, 0), (L0 + u0, 0, 0), c)], end=3.0)
    sol = solve_reference(sc)
    t = sol.time
    wn = np.sqrt(k / m)
    zeta = c / (2 * np.sqrt(k * m))
    wd = wn * np.sqrt(1 - zeta ** 2)
    decay = np.exp(-zeta * wn * t)
    u = decay * (u0 * np.cos(wd * t) + (v0 + zeta * wn * u0) / wd * np.sin(wd * t))
    du = decay * (v0 * np.cos(wd * t) - (wn * u0 + zeta * v0) / np.sqrt(1 - zeta ** 2)
                  * np.sin(wd * t))
    assert t[-1] == 3.0 and len(t) == 301
    np.testing.assert_allclose(sol.position[:, 0, 0], L0 + u, rtol=0, atol=1e-8)
    np.testing.assert_allclose(sol.velocity[:, 0, 0], du, rtol=0, atol=1e-8)
    np.testing.assert_allclose(sol.acceleration[:, 0, 0], -(k * u + c * du) / m, rtol=0, atol=1e-8)
    np.testing.assert_allclose(sol.position[:, 0, 1:], 0.0, atol=1e-12)
    # force on A (world) pulls towards B when stretched; the damper's on A is ε (v_B − v_A)
    np.testing.assert_allclose(sol.connector_force[:, 0, 0], k * u, atol=1e-7)
    np.testing.assert_allclose(sol.connector_force[:, 1, 0], c * du, atol=1e-7)
    np.testing.assert_allclose(sol.connector_length[:, 0], L0 + u, atol=1e-8)
    # all energy lost is in `dissipated`
    e0 = 0.5 * m * v0 ** 2 + 0.5 * k * u0 ** 2
    np.testing.assert_allclose(sol.dissipated, e0 - 0.5 * m * du ** 2 - 0.5 * k * u ** 2,
                               atol=1e-9)


def test_axial_damper_closed_form_and_central_force():
    """Along its line an axial damper is m ẍ = −c ẋ; across it, it does nothing: a ball circling its
    fixed end keeps its angular momentum about that end, and loses energy at c L̇² alone."""
    m, c, v0 = 2.0, 3.0, 0.5
    sc = scenario([body("bob", mass=m, position=(1, 0, 0), velocity=(v0, 0, 0))],
                  [damper("d", "world", "bob", (0, 0, 0), (1, 0, 0), c, axial=True)], end=2.0)
    sol = solve_reference(sc)
    x = 1.0 + v0 * (m / c) * (1.0 - np.exp(-c * sol.time / m))
    np.testing.assert_allclose(sol.position[:, 0, 0], x, rtol=0, atol=1e-9)
    sc = scenario([body("bob", mass=m, position=(1, 0, 0), velocity=(v0, 2.0, 0))],
                  [damper("d", "world", "bob", (0, 0, 0), (1, 0, 0), c, axial=True)], end=2.0)
    sol = solve_reference(sc)
    r, v = sol.position[:, 0], sol.velocity[:, 0]
    h = m * np.cross(r, v)[:, 2]
    np.testing.assert_allclose(h, h[0], rtol=1e-9)
    L = np.linalg.norm(r, axis=1)
    np.testing.assert_allclose(sol.connector_force[:, 0], (c * np.einsum("ij,ij->i", r, v) / L ** 2)[:, None] * r,
                               atol=1e-9)
    ke = 0.5 * m * np.einsum("ij,ij->i", v, v)
    np.testing.assert_allclose(sol.dissipated, ke[0] - ke, atol=1e-9)


# --------------------------------------------------------------------------
# 2. free fall
# --------------------------------------------------------------------------
def test_free_fall_is_an_exact_parabola():
    g = np.array([0.0, 0.0, -9.81])
    r0, v0 = np.array([0.1, 0.2, 0.3]), np.array([1.0, 2.0, 3.0])
    sc = scenario([body("b", mass=3.0, inertia=(1, 2, 3), position=r0, velocity=v0,
                        angular_velocity=(0.5, -1.0, 2.0))], gravity=g, end=1.0)
    sol = solve_reference(sc)
    t = sol.time[:, None]
    np.testing.assert_allclose(sol.position[:, 0], r0 + v0 * t + 0.5 * g * t ** 2, atol=1e-10)
    np.testing.assert_allclose(sol.velocity[:, 0], v0 + g * t, atol=1e-10)
    np.testing.assert_allclose(sol.acceleration[:, 0], np.broadcast_to(g, (len(t), 3)), atol=1e-12)
    total = sol.kinetic + sol.potential
    np.testing.assert_allclose(total, total[0], rtol=1e-11)
    np.testing.assert_allclose(sol.external_work, 0.0, atol=0)


# --------------------------------------------------------------------------
# 3.–4. torsional dampers on an isotropic body (components decouple)
# --------------------------------------------------------------------------
def test_torsional_damper_P1_exponential_decay():
    J, chi, w0 = 2.0, 0.7, np.array([0.3, -0.5, 1.2])
    sc = scenario([body("b", inertia=(J, J, J), rotvec=(0.3, 0.1, -0.2), angular_velocity=w0)],
                  [torsional("t", "world", "b", chi, "P1")], end=3.0)
    sol = solve_reference(sc)
    t = sol.time
    w = w0 * np.exp(-chi * t / J)[:, None]
    np.testing.assert_allclose(sol.angular_velocity[:, 0], w, atol=1e-10)
    np.testing.assert_allclose(sol.angular_acceleration[:, 0], -chi / J * w, atol=1e-10)
    np.testing.assert_allclose(sol.connector_moment[:, 0], chi * w, atol=1e-10)  # on A = world
    np.testing.assert_allclose(sol.connector_force[:, 0], 0.0, atol=0)
    assert np.isnan(sol.connector_length).all()
    np.testing.assert_allclose(sol.dissipated, 0.5 * J * w0 @ w0 * (1 - np.exp(-2 * chi * t / J)),
                               atol=1e-10)


@pytest.mark.parametrize("base_fixed", [False, True], ids=["world", "rotated-fixed-base"])
@pytest.mark.parametrize("projection", ["P2", "P3"])
def test_torsional_damper_P2_P3_damp_across_or_about_axis(projection, base_fixed):
    J, chi, w0 = 1.5, 0.6, np.array([1.0, 0.4, 2.0])
    bodies = [body("b", inertia=(J, J, J), angular_velocity=w0)]
    base = "world"
    if base_fixed:  # the axis is stored in the base's material frame: must come back as z
        bodies.insert(0, body("base", fixed=True, position=(1, 2, 3), rotvec=(0.4, -0.7, 0.2)))
        base = "base"
    sc = scenario(bodies, [torsional("t", base, "b", chi, projection, axis=(0, 0, 1))], end=2.0)
    sol = solve_reference(sc)
    decay = np.exp(-chi * sol.time / J)[:, None]
    damped = np.array([True, True, False]) if projection == "P2" else np.array([False, False, True])
    expected = np.where(damped, w0 * decay, w0)
    np.testing.assert_allclose(sol.angular_velocity[:, -1], expected, atol=1e-10)
    if base_fixed:
        np.testing.assert_allclose(sol.position[:, 0], np.broadcast_to([1, 2, 3], (len(sol.time), 3)))
        np.testing.assert_allclose(sol.velocity[:, 0], 0.0, atol=0)


def test_torsional_axis_rotates_with_body_A():
    """A (huge isotropic inertia) spins about x at rate s, so n(t) = R_x(s t) e_z; a P3 damper
    brakes B's spin about n.  In the basis (n, e_x × n) B's angular velocity obeys the linear
    ODE ṗ = s q − (χ/J) p, q̇ = −s p, solved by a matrix exponential."""
    s, J, chi, big = 3.0, 0.5, 0.4, 1e9
    wb0 = np.array([0.0, 0.7, -1.1])
    sc = scenario([body("a", mass=big, inertia=(big, big, big), angular_velocity=(s, 0, 0)),
                   body("b", inertia=(J, J, J), position=(1, 0, 0), angular_velocity=wb0)],
                  [torsional("t", "a", "b", chi, "P3", axis=(0, 0, 1))], end=2.0)
    sol = solve_reference(sc)
    th = s * sol.time
    n = np.stack([0 * th, -np.sin(th), np.cos(th)], axis=1)
    e = np.stack([0 * th, -np.cos(th), -np.sin(th)], axis=1)  # e_x × n
    M = np.array([[-chi / J, s], [-s, 0.0]])
    pq = np.array([expm(M * t) @ [wb0[2], -wb0[1]] for t in sol.time])  # p0 = ω·e_z, q0 = ω·(−e_y)
    expected = pq[:, :1] * n + pq[:, 1:] * e
    np.testing.assert_allclose(sol.angular_velocity[:, 1], expected, atol=1e-8)
    assert np.abs(expected - wb0).max() > 0.5  # the test would notice a non-rotating axis


# --------------------------------------------------------------------------
# 5. torque-free asymmetric rigid body; 8. unit quaternions
# --------------------------------------------------------------------------
def torque_free_scene(full_inertia):
    """Asymmetric body; with `full_inertia` the same physical body, described in body axes
    turned by Q (J_b = Q D Qᵀ, Λ_0 = Λ_0,diag Qᵀ), so both move identically in space."""
    J, rot0 = np.diag([1.0, 2.0, 3.0]), Rotation.from_rotvec([0.4, -0.3, 0.2])
    if full_inertia:
        Q = Rotation.from_rotvec([0.3, -0.6, 0.9])
        J, rot0 = Q.as_matrix() @ J @ Q.as_matrix().T, rot0 * Q.inv()
    return scenario([body("b", inertia=J, position=(1, -1, 2), rotvec=rot0.as_rotvec(),
                          velocity=(0.2, 0.1, -0.3), angular_velocity=(0.7, 1.1, -0.5))],
                    end=10.0, interval=0.05)


@pytest.mark.parametrize("full_inertia", [False, True], ids=["diagonal", "full-matrix"])
def test_torque_free_body_conserves_energy_and_angular_momentum(full_inertia):
    sol = solve_reference(torque_free_scene(full_inertia))
    H = sol.angular_momentum
    np.testing.assert_allclose(sol.kinetic, sol.kinetic[0], rtol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(H, axis=1), np.linalg.norm(H[0]), rtol=1e-9)
    np.testing.assert_allclose(H, np.broadcast_to(H[0], H.shape), rtol=0,
                               atol=1e-9 * np.linalg.norm(H[0]))
    # the body really tumbles: ω is far from constant
    assert np.ptp(sol.angular_velocity[:, 0], axis=0).max() > 0.5
    # 8. orientation stays a unit quaternion with the documented sign
    np.testing.assert_allclose(np.linalg.norm(sol.orientation, axis=-1), 1.0, atol=1e-14)
    assert (sol.orientation[..., 0] >= 0).all()


def test_full_inertia_matrix_equals_rotated_principal_axes():
    diag, full = (solve_reference(torque_free_scene(f)) for f in (False, True))
    np.testing.assert_allclose(full.angular_velocity, diag.angular_velocity, rtol=0, atol=1e-9)
    np.testing.assert_allclose(full.angular_acceleration, diag.angular_acceleration, atol=1e-9)


def test_isotropic_spin_rotates_by_spatial_angular_velocity():
    """Constant spatial ω: Λ(t) = exp(ω̂ t) Λ_0 (left multiplication; THEORY §1)."""
    w, rv0 = np.array([0.3, -1.2, 2.0]), np.array([0.5, 0.2, -0.4])
    sc = scenario([body("b", rotvec=rv0, angular_velocity=w)], end=4.0, interval=0.1)
    sol = solve_reference(sc)
    expected = Rotation.from_rotvec(sol.time[:, None] * w) * Rotation.from_rotvec(rv0)
    got = Rotation.from_quat(np.roll(sol.orientation[:, 0], -1, axis=-1))
    np.testing.assert_allclose(got.as_matrix(), expected.as_matrix(), atol=1e-10)


# --------------------------------------------------------------------------
# 6. two free bodies: momentum and energy balances
# --------------------------------------------------------------------------
def two_body_scene(with_damper, end=2.0, interval=0.01):
    Q = Rotation.from_rotvec([0.2, 0.5, -0.3]).as_matrix()
    bodies = [
        body("a", mass=1.5, inertia=(0.2, 0.3, 0.4), rotvec=(0.1, 0.2, 0.3),
             velocity=(0.1, -0.2, 0.05), angular_velocity=(1.0, -0.5, 2.0)),
        body("b", mass=0.8, inertia=Q @ np.diag([0.1, 0.25, 0.15]) @ Q.T, position=(1.0, 0.3, -0.2),
             rotvec=(-0.3, 0.1, 0.4), velocity=(-0.2, 0.1, 0.3), angular_velocity=(-1.5, 0.8, 0.3)),
    ]
    conns = [
        spring("s1", "a", "b", (0.1, 0.05, 0.0), (0.9, 0.35, -0.1), 20.0),
        spring("s2", "a", "b", (-0.05, 0.1, 0.1), (1.1, 0.2, -0.25), 10.0, 0.5),
        spring("s0", "a", "b", (0.0, -0.1, 0.0), (1.0, 0.3, -0.1), 3.0, 0.0),
        torsional("t2", "a", "b", 0.05, "P2", axis=(0, 0.6, 0.8)),
        torsional("t3", "a", "b", 0.03, "P3", axis=(1, 0, 0)),
        torsional("t1", "a", "b", 0.02, "P1"),
        torsional("tn", "a", "b", 0.5, "none"),
    ]
    if with_damper:
        conns.insert(1, damper("d", "a", "b", (0.1, 0.0, 0.05), (0.95, 0.25, -0.1), 0.4))
    return scenario(bodies, conns, end=end, interval=interval)


@pytest.mark.parametrize("with_damper", [False, True], ids=["no-damper", "damper"])
def test_two_bodies_momentum_and_energy_balance(with_damper):
    sc = two_body_scene(with_damper)
    sol = solve_reference(sc)
    energy = sol.kinetic + sol.potential + sol.dissipated - sol.external_work
    np.testing.assert_allclose(energy, energy[0], rtol=0, atol=1e-8 * sol.kinetic.max())
    assert sol.dissipated[-1] > 1e-2 and (np.diff(sol.dissipated) >= 0).all()
    p = sol.linear_momentum
    np.testing.assert_allclose(p, np.broadcast_to(p[0], p.shape), rtol=0, atol=1e-10)
    H = sol.angular_momentum
    if not with_damper:
        np.testing.assert_allclose(H, np.broadcast_to(H[0], H.shape), rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(sol.orientation, axis=-1), 1.0, atol=1e-14)


def test_damper_angular_momentum_balance():
    """dH/dt = (x_A − x_B) × f for the damper (THEORY §9), H differenced at 4th order."""
    h = 1e-3
    sc = two_body_scene(True)
    sol = solve_reference(sc, np.arange(2001) * h)
    f = sol.connector_force[:, 1]
    moment = np.cross(world_points(sol, sc, 1, 0) - world_points(sol, sc, 1, 1), f)
    H = sol.angular_momentum
    dH = (-H[4:] + 8 * H[3:-1] - 8 * H[1:-3] + H[:-4]) / (12 * h)
    scale = np.abs(moment).max()
    assert scale > 1e-2 and np.abs(H[-1] - H[0]).max() > 1e-3  # not vacuous
    np.testing.assert_allclose(dH, moment[2:-2], rtol=0, atol=1e-6 * scale)


# --------------------------------------------------------------------------
# 7. loads with every time function
# --------------------------------------------------------------------------
def _pl_integral(knots_t, knots_s, t):
    """Exact ∫_0^t of the piecewise-linear function np.interp(·, knots_t, knots_s), t (T,)."""
    out = np.empty_like(t)
    for i, ti in enumerate(t):
        pts = np.unique(np.concatenate([[0.0, ti], knots_t[(knots_t > 0) & (knots_t < ti)]]))
        out[i] = np.trapezoid(np.interp(pts, knots_t, knots_s), pts)
    return out


def test_loads_with_every_time_function():
    m, J, end = 2.0, 0.5, 1.5
    tab_t, tab_s = np.array([0.1, 0.4, 0.9, 1.2]), np.array([0.0, 2.0, -1.0, 0.5])
    ramp, sine = Ramp(0.2, 0.7, 0.5, -1.0), Sine(1.5, 1.3, 0.4, 0.2)
    scales = {
        "constant": (Constant(0.7), lambda t: 0.7 * t),
        "ramp": (ramp, lambda t: _pl_integral(np.array([0.2, 0.7]), np.array([0.5, -1.0]), t)),
        "sine": (sine, lambda t: 0.2 * t + 1.5 / (2 * np.pi * 1.3)
                 * (np.cos(0.4) - np.cos(2 * np.pi * 1.3 * t + 0.4))),
        "table": (Table(fa(tab_t), fa(tab_s)), lambda t: _pl_integral(tab_t, tab_s, t)),
    }
    fvec, tvec, v0 = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.2, -0.6]), np.array([0.1, 0, -0.2])
    bodies, loads = [], []
    for i, name in enumerate(scales):
        bodies.append(body(name, mass=m, inertia=(J, J, J), position=(i, 0, 0), velocity=v0))
        loads += [LoadSpec("force", name, fa(fvec), scales[name][0]),
                  LoadSpec("torque", name, fa(tvec), scales[name][0])]
    sol = solve_reference(scenario(bodies, loads=loads, end=end, interval=0.05))
    t = sol.time
    for i, (scale, integral) in enumerate(scales.values()):
        S = integral(t)[:, None]
        np.testing.assert_allclose(sol.velocity[:, i], v0 + S * fvec / m, rtol=0, atol=1e-8)
        np.testing.assert_allclose(sol.angular_velocity[:, i], S * tvec / J, rtol=0, atol=1e-8)
        np.testing.assert_allclose(sol.acceleration[:, i], scale(t)[:, None] * fvec / m, atol=1e-12)
    # with loads only, the work of the loads is the kinetic energy gained
    np.testing.assert_allclose(sol.external_work, sol.kinetic - sol.kinetic[0], atol=1e-9)


# --------------------------------------------------------------------------
# API details
# --------------------------------------------------------------------------
def test_output_grid_and_fixed_bodies():
    np.testing.assert_allclose(output_times(1.0, 0.3), [0, 0.3, 0.6, 0.9, 1.0])
    t = output_times(1.0, 0.1)
    assert len(t) == 11 and t[-1] == 1.0 and np.all(np.diff(t) > 0.09)
    sc = scenario([body("base", fixed=True, position=(0, 0, 1), rotvec=(0, 0, 3.0)),
                   body("bob", position=(0, 0, 0), velocity=(1, 0, 0))],
                  [spring("s", "base", "bob", (0, 0, 1), (0, 0, 0), 4.0)],
                  gravity=(0, 0, -9.81), end=0.25, interval=0.1)
    sol = solve_reference(sc)
    np.testing.assert_allclose(sol.time, [0, 0.1, 0.2, 0.25])
    assert sol.position.shape == (4, 2, 3) and sol.orientation.shape == (4, 2, 4)
    assert sol.connector_force.shape == (4, 1, 3) and sol.connector_length.shape == (4, 1)
    np.testing.assert_allclose(sol.position[:, 0], np.broadcast_to([0, 0, 1], (4, 3)))
    np.testing.assert_allclose(sol.orientation[:, 0], np.broadcast_to(_quat([0, 0, 3.0]), (4, 4)))
    assert not sol.velocity[:, 0].any() and not sol.acceleration[:, 0].any()
    assert sol.nfev > 0 and sol.method == "DOP853" and sol.body_names == ("base", "bob")
    with pytest.raises(ValueError):
        solve_reference(sc, [0.0, 0.1], end=0.2)


def test_forces_at_initial_state_by_hand():
    """Signs of THEORY §6 (A gets f and z_A × f, B gets −f and −z_B × f) and J ω̇ = τ − ω × Jω."""
    k, L0 = 10.0, 0.5
    pa, pb = np.array([0.2, 0.1, 0.0]), np.array([1.0, -0.3, 0.4])
    ra, rb = np.zeros(3), np.array([1.2, 0.0, 0.0])
    wa = np.array([1.0, -0.5, 3.0])  # off-axis: ω × Jω ≠ 0
    Ja = np.diag([1.0, 2.0, 4.0])
    sc = scenario([body("a", mass=2.0, inertia=np.diag(Ja), position=ra, angular_velocity=wa),
                   body("b", mass=1.0, position=rb)],
                  [spring("s", "a", "b", pa, pb, k, L0)], gravity=(0, 0, -1.0))
    eom = equations_of_motion(sc)
    out = eom.forces(eom.y0, 0.0)
    c = pb - pa
    f = k * (np.linalg.norm(c) - L0) * c / np.linalg.norm(c)
    np.testing.assert_allclose(out.connector_force[0], f, rtol=1e-14)
    np.testing.assert_allclose(out.force, [f + [0, 0, -2.0], -f + [0, 0, -1.0]], rtol=1e-14)
    np.testing.assert_allclose(out.torque, [np.cross(pa - ra, f), -np.cross(pb - rb, f)],
                               rtol=1e-14)
    alpha_a = np.linalg.solve(Ja, np.cross(pa - ra, f) - np.cross(wa, Ja @ wa))
    np.testing.assert_allclose(out.angular_acceleration[0], alpha_a, rtol=1e-14)
    np.testing.assert_allclose(out.connector_length[0], np.linalg.norm(c), rtol=1e-15)
    # a spring with rest length > 0 and coincident points has no direction
    bad = scenario([body("b")], [spring("s", "world", "b", (0, 0, 0), (0, 0, 0), 1.0, 0.5)])
    eom = equations_of_motion(bad)
    with pytest.raises(RuntimeError, match="'s'"):
        eom.forces(eom.y0, 0.0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_integrator_failure_raises_with_solve_ivp_message():
    blowup = Table(fa([0.0, 0.5, 0.6]), fa([0.0, 0.0, np.inf]))  # non-finite force after t = 0.5
    sc = scenario([body("b")], loads=[LoadSpec("force", "b", fa([1.0, 0, 0]), blowup)])
    with pytest.raises(RuntimeError, match="DOP853.*failed: Required step size"):
        solve_reference(sc)
