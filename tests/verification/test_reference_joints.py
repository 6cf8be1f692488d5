"""Verification of the reference solver's kinematic joints (mbsim.reference, THEORY §11).

Every reference value is independent of the solver's constraint code: closed
forms (the elliptic-integral period of a pendulum, a slider-crank's piston
position, a four-bar's loop closure, prescribed drive motions and their
forces), conservation laws, a rigid composite body solved without joints, and
finite differences of the constraint functions along a motion.  Scenarios
are built from the frozen specs (tests.builders); orientations are read back
with SciPy's `Rotation`.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import cumulative_simpson
from scipy.linalg import null_space
from scipy.spatial.transform import Rotation
from scipy.special import ellipk

from mbsim.reference import equations_of_motion, solve_reference
from mbsim.reference.equations import quat_from_rotvec, quat_mul
from mbsim.scenario.spec import Sine, SmoothRamp
from tests.builders import body, joint, scenario

G = 9.81


def rotations(sol, i):
    """Rotation matrices (T, 3, 3) of body i of a solution."""
    return Rotation.from_quat(np.roll(sol.orientation[:, i], -1, axis=-1)).as_matrix()


def planar_angle(sol, i):
    """Angle about z of body i's x axis (T,), unwrapped."""
    m = rotations(sol, i)
    return np.unwrap(np.arctan2(m[:, 1, 0], m[:, 0, 0]))


# --------------------------------------------------------------------------
# 0. G and γ of every row kind against finite differences along a motion
# --------------------------------------------------------------------------
KINDS = {
    "spherical": dict(point=(0.4, 0.1, 0.2)),
    "revolute": dict(point=(0.4, 0.1, 0.2), axis=(0.2, -0.4, 0.9)),
    "prismatic": dict(point=(0.4, 0.1, 0.2), axis=(0.2, -0.4, 0.9)),
    "cylindrical": dict(point=(0.4, 0.1, 0.2), axis=(0.2, -0.4, 0.9)),
    "planar": dict(point=(0.4, 0.1, 0.2), axis=(0.2, -0.4, 0.9)),
    "universal": dict(point=(0.4, 0.1, 0.2), axes=[(0.0, 0.6, 0.8), (1.0, 0.0, 0.0)]),
    "lock": dict(point=(0.4, 0.1, 0.2)),
    "distance": dict(points=[(0.1, 0.2, 0.3), (0.9, -0.2, 0.5)]),
    "revolute+angle": dict(point=(0.4, 0.1, 0.2), axis=(0.2, -0.4, 0.9), angle=Sine(0.7, 0.3)),
    "prismatic+displacement": dict(point=(0.4, 0.1, 0.2), axis=(0.2, -0.4, 0.9), displacement=Sine(0.2, 0.4)),
    "cylindrical+both": dict(point=(0.4, 0.1, 0.2), axis=(0.2, -0.4, 0.9), angle=Sine(0.7, 0.3),
                             displacement=Sine(0.2, 0.4)),
}


def two_bodies(kind, a="a", velocities=False):
    rng = np.random.default_rng(7)
    vel = (lambda s: tuple(rng.normal(size=3) * s)) if velocities else (lambda s: (0, 0, 0))
    return [body("a", mass=1.3, inertia=(0.1, 0.2, 0.3), position=(0, 0, 0), rotvec=(0.3, 0.2, -0.1),
                 velocity=vel(0.5) if a == "a" else (0, 0, 0), angular_velocity=vel(2.0) if a == "a" else (0, 0, 0)),
            body("b", mass=0.7, inertia=(0.05, 0.04, 0.03), position=(0.8, 0.1, 0.4), rotvec=(-0.2, 0.5, 0.1),
                 velocity=vel(0.5), angular_velocity=vel(2.0))]


@pytest.mark.parametrize("a", ["a", "world"])
@pytest.mark.parametrize("kind", KINDS)
def test_jacobian_and_gamma_match_finite_differences(kind, a):
    """Off the manifold (random state), along r(s) = r + s v, Λ(s) = exp(s ω̂) Λ (u̇ = 0):
    dΦ/ds = G u and d²Φ/ds² = γ, by 5-point differences at fixed t."""
    sc = scenario(two_bodies(kind), joints=[joint("j", kind.split("+")[0], a, "b", **KINDS[kind])])
    eom = equations_of_motion(sc)
    rng = np.random.default_rng(3)
    y = eom.y0.copy()
    r, q, v, w, _, _ = eom.split(y)
    n = eom.n_moving
    r += rng.normal(size=r.shape) * 0.1
    q[:] = quat_mul(quat_from_rotvec(rng.normal(size=(n, 3)) * 0.3), q)
    v[:], w[:] = rng.normal(size=v.shape), rng.normal(size=w.shape) * 2.0
    t, h = 0.37, 1e-3

    def residual(s):
        ys = y.copy()
        rs, qs, _, _, _, _ = eom.split(ys)
        rs += s * v
        qs[:] = quat_mul(quat_from_rotvec(s * w), q)
        return eom.constraints(ys, t).residual

    f = {k: residual(k * h) for k in (-2, -1, 0, 1, 2)}
    d1 = (8.0 * (f[1] - f[-1]) - (f[2] - f[-2])) / (12.0 * h)
    d2 = (-f[2] + 16.0 * f[1] - 30.0 * f[0] + 16.0 * f[-1] - f[-2]) / (12.0 * h * h)
    c = eom.constraints(y, t)
    u = np.concatenate([v, w], axis=1).ravel()
    scale = max(1.0, np.abs(c.gamma).max())
    assert np.abs(c.residual).max() > 1e-3  # really off the manifold
    np.testing.assert_allclose(c.jacobian @ u, d1, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(c.gamma, d2, rtol=0, atol=1e-7 * scale)


# --------------------------------------------------------------------------
# 1. revolute pendulum: period (elliptic integral) and reactions
# --------------------------------------------------------------------------
def test_revolute_pendulum_period_and_reaction():
    m, l, jy, th0 = 1.5, 0.8, 0.03, np.radians(120.0)
    sc = scenario([body("bob", mass=m, inertia=(0.02, jy, 0.04), position=(l * np.sin(th0), 0, -l * np.cos(th0)),
                        rotvec=(0, -th0, 0))],
                  joints=[joint("hinge", "revolute", "world", "bob", point=(0, 0, 0), axis=(0, 1, 0))],
                  gravity=(0, 0, -G))
    w0 = np.sqrt(m * G * l / (jy + m * l * l))
    period = 4.0 * ellipk(np.sin(th0 / 2) ** 2) / w0
    times = np.concatenate([np.linspace(0.0, period, 41), [period]])[:-1]
    sol = solve_reference(sc, times)
    x, z = sol.position[:, 0, 0], sol.position[:, 0, 2]
    th = np.arctan2(x, -z)
    np.testing.assert_allclose(np.hypot(x, z), l, rtol=0, atol=1e-12)
    np.testing.assert_allclose(th[[0, 10, 20, 30, 40]], [th0, 0, -th0, 0, th0], rtol=0, atol=1e-9)
    # the period: the zero of θ̇ nearest t = T, one Newton step from T (θ̇ = −ω_y)
    measured = period - sol.angular_velocity[-1, 0, 1] / sol.angular_acceleration[-1, 0, 1]
    assert abs(measured / period - 1.0) < 1e-8

    # force on A = world: −(m a − m g), a from the closed forms θ̇² = 2ω0²(cos θ − cos θ0), θ̈ = −ω0² sin θ
    thd2, thdd = 2 * w0 ** 2 * (np.cos(th) - np.cos(th0)), -w0 ** 2 * np.sin(th)
    acc = l * (thdd[:, None] * np.stack([np.cos(th), 0 * th, np.sin(th)], axis=1)
               + thd2[:, None] * np.stack([-np.sin(th), 0 * th, np.cos(th)], axis=1))
    np.testing.assert_allclose(sol.joint_force[:, 0], -(m * acc - m * np.array([0, 0, -G])),
                               rtol=0, atol=1e-8 * m * G)
    # principal axis along the hinge: no moment about the joint point at all
    np.testing.assert_allclose(sol.joint_moment[:, 0], 0.0, atol=1e-9)
    assert sol.joint_names == ("hinge",) and sol.joint_force.shape == (41, 1, 3)
    assert sol.joint_position_error.max() < 1e-13 and sol.joint_angle_error.max() < 1e-13
    energy = sol.kinetic + sol.potential
    np.testing.assert_allclose(energy, energy[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(sol.external_work, 0.0, atol=1e-12)


@pytest.mark.parametrize("order", ["world-bob", "bob-world"])
def test_revolute_reaction_at_rest_carries_the_weight(order):
    """Hanging straight down at rest: the joint holds m g.  Its force is reported on body A:
    for [world, bob] it is the bob's pull on the world, m g = (0, 0, −m g) (down); for
    [bob, world] it is the force on the bob, (0, 0, +m g) (up)."""
    m = 2.5
    pair = ("world", "bob") if order == "world-bob" else ("bob", "world")
    sc = scenario([body("bob", mass=m, position=(0, 0, -0.7))],
                  joints=[joint("hinge", "revolute", *pair, point=(0, 0, 0), axis=(1, 0, 0))],
                  gravity=(0, 0, -G), end=0.5, interval=0.1)
    sol = solve_reference(sc)
    sign = -1.0 if order == "world-bob" else 1.0
    np.testing.assert_allclose(sol.joint_force[:, 0], np.broadcast_to([0, 0, sign * m * G], (6, 3)),
                               rtol=1e-14, atol=1e-12)
    np.testing.assert_allclose(sol.joint_moment[:, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(sol.acceleration, 0.0, atol=1e-13)
    np.testing.assert_allclose(sol.position[:, 0], np.broadcast_to([0, 0, -0.7], (6, 3)), atol=1e-14)


# --------------------------------------------------------------------------
# 2. spherical pendulum (a 3D heavy rigid body on a ball joint)
# --------------------------------------------------------------------------
def test_spherical_pendulum_conserves_vertical_angular_momentum_and_energy():
    sc = scenario([body("bob", mass=1.2, inertia=(0.03, 0.05, 0.02), position=(0.3, 0.2, -0.8),
                        rotvec=(0.2, -0.4, 0.3), velocity=(0.4, -1.1, 0.2), angular_velocity=(1.0, -2.0, 3.0))],
                  joints=[joint("ball", "spherical", "world", "bob", point=(0, 0, 0))],
                  gravity=(0, 0, -G), end=3.0, interval=0.01)
    sol = solve_reference(sc)
    hz = sol.angular_momentum[:, 2]  # about the world origin = the pivot
    assert abs(hz[0]) > 0.1 and np.ptp(sol.angular_momentum[:, 0]) > 0.1  # not trivial
    np.testing.assert_allclose(hz, hz[0], rtol=1e-9)
    energy = sol.kinetic + sol.potential
    np.testing.assert_allclose(energy, energy[0], rtol=0, atol=1e-9 * abs(energy).max())
    np.testing.assert_allclose(sol.joint_moment[:, 0], 0.0, atol=1e-12)  # a ball joint holds no moment
    assert sol.joint_position_error.max() < 1e-13
    # the initial velocity was made consistent: the pivot point of the bob is at rest
    eom = equations_of_motion(sc)
    _, _, v, w, _, _ = eom.split(eom.y0)
    np.testing.assert_allclose(v[0] + np.cross(w[0], -np.array([0.3, 0.2, -0.8])), 0.0, atol=1e-14)


def test_initial_velocity_projection_is_the_smallest_kinetic_energy_change():
    """Velocities violating a revolute between two free bodies: the projected u satisfies G u = 0
    and M (u − u₀) is orthogonal to every admissible motion (null space of G)."""
    sc = scenario(two_bodies("revolute", velocities=True),
                  joints=[joint("j", "revolute", "a", "b", **KINDS["revolute"])])
    eom = equations_of_motion(sc)
    u0 = np.concatenate([np.array([b.velocity, b.angular_velocity]).reshape(6) for b in sc.bodies])
    _, _, v, w, _, _ = eom.split(eom.y0)
    u = np.concatenate([v, w], axis=1).ravel()
    c = eom.constraints(eom.y0, 0.0)
    blocks = []
    for b in sc.bodies:
        rot = Rotation.from_quat(np.roll(b.orientation, -1)).as_matrix()
        blocks += [b.mass * np.eye(3), rot @ b.inertia @ rot.T]
    mass = np.zeros((12, 12))
    for k, blk in enumerate(blocks):
        mass[3 * k:3 * k + 3, 3 * k:3 * k + 3] = blk
    assert np.abs(c.jacobian @ u0).max() > 0.1
    np.testing.assert_allclose(c.jacobian @ u, 0.0, atol=1e-14)
    np.testing.assert_allclose(null_space(c.jacobian).T @ mass @ (u - u0), 0.0, atol=1e-14)


# --------------------------------------------------------------------------
# 3. driven slider-crank (angle drive), non-redundant and redundant
# --------------------------------------------------------------------------
R_CRANK, L_ROD = 0.3, 0.9
TURNS = SmoothRamp(0.0, 1.5, 0.0, 4.0 * np.pi)  # two turns: the drive angle passes ±π


def slider_crank(redundant):
    r, l = R_CRANK, L_ROD
    bodies = [body("crank", mass=1.0, inertia=(0.001, 0.008, 0.008), position=(r / 2, 0, 0)),
              body("rod", mass=0.5, inertia=(0.001, 0.034, 0.034), position=(r + l / 2, 0, 0)),
              body("piston", mass=2.0, inertia=(0.01, 0.01, 0.01), position=(r + l, 0, 0))]
    pin, wrist = (r, 0, 0), (r + l, 0, 0)
    if redundant:  # all-revolute planar loop in 3D: 20 equations, rank 17
        mid = [joint("pin", "revolute", "crank", "rod", point=pin, axis=(0, 0, 1)),
               joint("wrist", "revolute", "rod", "piston", point=wrist, axis=(0, 0, 1))]
    else:  # R-S-U-P: 17 independent equations
        mid = [joint("pin", "spherical", "crank", "rod", point=pin),
               joint("wrist", "universal", "rod", "piston", point=wrist, axes=[(0, 0, 1), (0, 1, 0)])]
    joints = [joint("motor", "revolute", "world", "crank", point=(0, 0, 0), axis=(0, 0, 1), angle=TURNS),
              *mid, joint("slide", "prismatic", "world", "piston", point=wrist, axis=(1, 0, 0))]
    return scenario(bodies, joints=joints, gravity=(0, -G, 0), end=1.6, interval=0.01)


@pytest.fixture(scope="module")
def crank_runs():
    return {red: solve_reference(slider_crank(red)) for red in (False, True)}


@pytest.mark.parametrize("redundant", [False, True], ids=["R-S-U-P", "R-R-R-P"])
def test_slider_crank_piston_follows_closed_form(crank_runs, redundant):
    sol = crank_runs[redundant]
    assert equations_of_motion(slider_crank(redundant)).n_dependent == (3 if redundant else 0)
    phi = TURNS(sol.time)
    x = R_CRANK * np.cos(phi) + np.sqrt(L_ROD ** 2 - (R_CRANK * np.sin(phi)) ** 2)
    np.testing.assert_allclose(sol.position[:, 2, 0], x, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sol.position[:, 2, 1:], 0.0, atol=1e-12)
    np.testing.assert_allclose(planar_angle(sol, 0), phi, rtol=0, atol=1e-10)  # the crank follows F(t)
    assert sol.joint_position_error.max() < 1e-12 and sol.joint_angle_error.max() < 1e-12
    # 5. the drive's work closes the energy balance
    balance = sol.kinetic + sol.potential - sol.external_work
    assert np.ptp(sol.external_work) > 1.0
    np.testing.assert_allclose(balance, balance[0], rtol=0, atol=1e-8)


def test_slider_crank_reactions_agree_between_redundant_and_not(crank_runs):
    """In-plane loads on a planar mechanism: the in-plane reactions are statically determined, so
    the min-norm split of the redundant model must give those of the non-redundant one, with no
    out-of-plane force; the motor torque (about z) is the same too."""
    a, b = crank_runs[False], crank_runs[True]
    scale = np.abs(a.joint_force).max()
    assert scale > 10.0
    np.testing.assert_allclose(b.joint_force, a.joint_force, rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(b.joint_moment[:, 0, 2], a.joint_moment[:, 0, 2], rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(b.joint_force[..., 2], 0.0, atol=1e-9 * scale)
    # the motor torque's power is the drive's power: τ_z φ̇ on the crank = −τ_A,z φ̇; integrated by
    # Simpson's rule on the 0.01 s frames (its error, O(Δt⁴), measured 4e-4 of the work)
    power = -a.joint_moment[:, 0, 2] * TURNS.derivative(a.time, 1)
    work = cumulative_simpson(power, x=a.time, initial=0.0)
    np.testing.assert_allclose(work, a.external_work, rtol=0, atol=1e-3 * np.ptp(a.external_work))


# --------------------------------------------------------------------------
# 4. redundant planar four-bar (four revolutes)
# --------------------------------------------------------------------------
GROUND, CRANK, COUPLER, ROCKER = 1.0, 0.4, 1.0, 0.8


def loop_point(phi):
    """B (the coupler-rocker pin) for crank angle φ: circle intersection, the upper branch."""
    a = CRANK * np.stack([np.cos(phi), np.sin(phi)], axis=-1)
    d = np.array([GROUND, 0.0]) - a
    dist = np.linalg.norm(d, axis=-1, keepdims=True)
    along = (COUPLER ** 2 - ROCKER ** 2 + dist ** 2) / (2 * dist)
    perp = np.sqrt(COUPLER ** 2 - along ** 2)
    e = d / dist
    return a, a + along * e + perp * np.stack([-e[..., 1], e[..., 0]], axis=-1)


def bar(name, p, q, mass):
    p, q = np.asarray(p, float), np.asarray(q, float)
    length, ang = np.linalg.norm(q - p), np.arctan2(q[1] - p[1], q[0] - p[0])
    j = mass * length ** 2 / 12
    return body(name, mass=mass, inertia=(j / 50, j, j), position=(*(0.5 * (p + q)), 0.0), rotvec=(0, 0, ang))


def test_redundant_four_bar():
    a, b = loop_point(np.radians(70.0))
    d = (GROUND, 0.0)
    bodies = [bar("crank", (0, 0), a, 0.8), bar("coupler", a, b, 1.5), bar("rocker", d, b, 1.1)]
    z = (0, 0, 1)
    joints = [joint("O", "revolute", "world", "crank", point=(0, 0, 0), axis=z),
              joint("A", "revolute", "crank", "coupler", point=(*a, 0), axis=z),
              joint("B", "revolute", "coupler", "rocker", point=(*b, 0), axis=z),
              joint("D", "revolute", "rocker", "world", point=(*d, 0), axis=z)]
    sc = scenario(bodies, joints=joints, gravity=(0, -G, 0), end=2.0, interval=0.02)
    assert equations_of_motion(sc).n_dependent == 3
    sol = solve_reference(sc)
    assert sol.joint_position_error.max() < 1e-12 and sol.joint_angle_error.max() < 1e-12
    energy = sol.kinetic + sol.potential
    assert sol.kinetic.max() > 1.0
    np.testing.assert_allclose(energy, energy[0], rtol=0, atol=1e-9)
    # coupler angle from the loop closure at the measured crank angle
    phi = planar_angle(sol, 0)
    assert np.ptp(phi) > 1.0
    pa, pb = loop_point(phi)
    expected = np.unwrap(np.arctan2(pb[:, 1] - pa[:, 1], pb[:, 0] - pa[:, 0]))
    np.testing.assert_allclose(planar_angle(sol, 1), expected, rtol=0, atol=1e-9)
    # minimum-norm split: in-plane loads give no out-of-plane force and no moment at all
    scale = np.abs(sol.joint_force).max()
    np.testing.assert_allclose(sol.joint_force[..., 2], 0.0, atol=1e-9 * scale)
    np.testing.assert_allclose(sol.joint_moment, 0.0, atol=1e-9 * scale)
    # Newton on the coupler, with the reactions as reported (A: crank→coupler on crank, B on coupler)
    m = 1.5
    f = -sol.joint_force[:, 1] + sol.joint_force[:, 2] + m * np.array([0, -G, 0])
    np.testing.assert_allclose(f, m * sol.acceleration[:, 1], rtol=0, atol=1e-9 * scale)


# --------------------------------------------------------------------------
# 5. drives with closed-form forces and work
# --------------------------------------------------------------------------
def test_displacement_drive_lifts_against_gravity():
    """A box on a vertical prismatic joint lifted by F(t): joint force on A = world is
    −m (F̈ + g) e_z, and the drive's work is m g F + ½ m Ḟ².  The given velocities
    (sliding, spinning) violate the joint and are projected away."""
    m = 3.0
    lift = SmoothRamp(0.2, 1.2, 0.0, 0.5)
    sc = scenario([body("box", mass=m, inertia=(0.1, 0.2, 0.3), position=(0.1, 0.2, 0.3), rotvec=(0.3, 0, 0),
                        velocity=(0.5, 0.0, 0.2), angular_velocity=(0.3, 0.2, 0.1))],
                  joints=[joint("lift", "prismatic", "world", "box", point=(0, 0, 0), axis=(0, 0, 1),
                                displacement=lift)],
                  gravity=(0, 0, -G), end=1.5, interval=0.05)
    sol = solve_reference(sc)
    t = sol.time
    np.testing.assert_allclose(sol.position[:, 0], np.stack([0.1 + 0 * t, 0.2 + 0 * t, 0.3 + lift(t)], 1),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(sol.angular_velocity[:, 0], 0.0, atol=1e-13)
    force = np.zeros((len(t), 3))
    force[:, 2] = -m * (lift.derivative(t, 2) + G)
    np.testing.assert_allclose(sol.joint_force[:, 0], force, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sol.external_work, m * G * lift(t) + 0.5 * m * lift.derivative(t, 1) ** 2,
                               rtol=0, atol=1e-9)
    balance = sol.kinetic + sol.potential - sol.external_work
    np.testing.assert_allclose(balance, balance[0], rtol=0, atol=1e-9)


def test_cylindrical_with_both_drives_on_a_skew_axis():
    """A body on a skew shaft, sliding F_d(t) along it and turning F_a(t) (beyond ±π) about it,
    its principal axis along the shaft: drive force m F̈_d, drive torque J F̈_a, both on A = world
    with the opposite sign; work ½ m Ḟ_d² + ½ J Ḟ_a² less its value at t = 0 (Ḟ_d(0) ≠ 0: the
    body at rest is given the drive's initial velocity by the projection)."""
    n = np.array([1.0, 2.0, 2.0]) / 3.0
    base = Rotation.align_vectors([n], [[1.0, 0, 0]])[0]  # body x → n
    m, jn = 2.0, 0.05
    slide, turn = Sine(0.3, 0.7), SmoothRamp(0.0, 1.0, 0.0, 5.0)
    sc = scenario([body("b", mass=m, inertia=(jn, 0.2, 0.3), position=(1, 1, 1), rotvec=base.as_rotvec())],
                  joints=[joint("shaft", "cylindrical", "world", "b", point=(1, 1, 1), axis=n, angle=turn,
                                displacement=slide)], end=1.2, interval=0.05)
    sol = solve_reference(sc)
    t = sol.time
    np.testing.assert_allclose(sol.position[:, 0], 1.0 + slide(t)[:, None] * n, rtol=0, atol=1e-12)
    expected = (Rotation.from_rotvec(turn(t)[:, None] * n) * base).as_matrix()
    np.testing.assert_allclose(rotations(sol, 0), expected, rtol=0, atol=1e-11)
    np.testing.assert_allclose(sol.joint_force[:, 0], -m * slide.derivative(t, 2)[:, None] * n, atol=1e-10)
    np.testing.assert_allclose(sol.joint_moment[:, 0], -jn * turn.derivative(t, 2)[:, None] * n, atol=1e-10)
    kinetic = 0.5 * m * slide.derivative(t, 1) ** 2 + 0.5 * jn * turn.derivative(t, 1) ** 2
    np.testing.assert_allclose(sol.kinetic, kinetic, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sol.external_work, kinetic - kinetic[0], rtol=0, atol=1e-10)


# --------------------------------------------------------------------------
# every kind between two free bodies: conservation; lock, distance, planar by closed forms
# --------------------------------------------------------------------------
@pytest.mark.parametrize("kind", [k for k in KINDS if "+" not in k])
def test_free_pair_conserves_momentum_and_energy(kind):
    sc = scenario(two_bodies(kind, velocities=True), joints=[joint("j", kind, "a", "b", **KINDS[kind])],
                  end=1.0, interval=0.02)
    sol = solve_reference(sc)
    for series, tol in ((sol.linear_momentum, 1e-11), (sol.angular_momentum, 1e-10)):
        np.testing.assert_allclose(series, np.broadcast_to(series[0], series.shape), rtol=0, atol=tol)
    energy = sol.kinetic + sol.potential
    assert sol.kinetic[0] > 0.1
    np.testing.assert_allclose(energy, energy[0], rtol=0, atol=1e-10)
    assert sol.joint_position_error.max() < 1e-13 and sol.joint_angle_error.max() < 1e-13


def test_locked_pair_moves_as_one_rigid_body():
    """Two bodies locked together, torque-free, against the composite body solved without joints."""
    bodies = two_bodies("lock")
    ra, rb = bodies[0].position, bodies[1].position
    ma, mb = bodies[0].mass, bodies[1].mass
    com = (ma * ra + mb * rb) / (ma + mb)
    inertia = np.zeros((3, 3))
    for b in bodies:
        rot = Rotation.from_quat(np.roll(b.orientation, -1)).as_matrix()
        s = b.position - com
        inertia += rot @ b.inertia @ rot.T + b.mass * (s @ s * np.eye(3) - np.outer(s, s))
    vc, omega = np.array([0.2, -0.1, 0.3]), np.array([1.5, -2.0, 0.7])
    moving = [body(b.name, mass=b.mass, inertia=np.asarray(b.inertia), position=b.position,
                   rotvec=Rotation.from_quat(np.roll(b.orientation, -1)).as_rotvec(),
                   velocity=vc + np.cross(omega, b.position - com), angular_velocity=omega) for b in bodies]
    sol = solve_reference(scenario(moving, joints=[joint("weld", "lock", "a", "b", point=(0.4, 0.1, 0.2))],
                                   end=2.0, interval=0.05))
    one = solve_reference(scenario([body("c", mass=ma + mb, inertia=inertia, position=com, velocity=vc,
                                         angular_velocity=omega)], end=2.0, interval=0.05))
    rot = rotations(one, 0)  # composite: identity at t = 0, so it is each body's rotation since t = 0
    for i, b in enumerate(bodies):
        np.testing.assert_allclose(sol.position[:, i], one.position[:, 0] + np.einsum("tij,j->ti", rot, b.position - com),
                                   rtol=0, atol=1e-9)
        np.testing.assert_allclose(sol.angular_velocity[:, i], one.angular_velocity[:, 0], rtol=0, atol=1e-9)


def test_distance_joint_uniform_circular_motion():
    """Two bodies (points at their centres) on a distance joint, relative velocity ⊥ the link:
    the link turns uniformly at |Δv|/L and its tension is μ|Δv|²/L, pulling A towards B."""
    ma, mb, length, dv = 1.0, 3.0, 0.8, np.array([0.0, 1.2, 0.0])
    mu = ma * mb / (ma + mb)
    sc = scenario([body("a", mass=ma, position=(0, 0, 0), velocity=-mb / (ma + mb) * dv),
                   body("b", mass=mb, position=(length, 0, 0), velocity=ma / (ma + mb) * dv)],
                  joints=[joint("rope", "distance", "a", "b", points=[(0, 0, 0), (length, 0, 0)])],
                  end=3.0, interval=0.05)
    sol = solve_reference(sc)
    rate = np.linalg.norm(dv) / length
    th = rate * sol.time
    link = length * np.stack([np.cos(th), np.sin(th), 0 * th], axis=1)
    np.testing.assert_allclose(sol.position[:, 1] - sol.position[:, 0], link, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sol.joint_force[:, 0], mu * rate ** 2 * link, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sol.joint_moment[:, 0], 0.0, atol=1e-12)


def test_planar_slider_reaction_passes_through_the_centre():
    """A spinning puck sliding on the plane z = 0 of world, gravity ⊥ the plane: uniform motion;
    the plane carries the weight, and its moment about the joint's point is that of the weight
    through the puck's centre, (r − X) × f_A."""
    m, v, spin = 0.7, np.array([0.4, -0.3, 0.0]), 3.0
    sc = scenario([body("puck", mass=m, inertia=(0.02, 0.02, 0.03), position=(0.2, 0.1, 0.05), velocity=v,
                        angular_velocity=(0, 0, spin))],
                  joints=[joint("floor", "planar", "world", "puck", point=(0, 0, 0), axis=(0, 0, 1))],
                  gravity=(0, 0, -G), end=1.0, interval=0.05)
    sol = solve_reference(sc)
    t = sol.time[:, None]
    np.testing.assert_allclose(sol.position[:, 0], np.array([0.2, 0.1, 0.05]) + v * t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sol.angular_velocity[:, 0], np.broadcast_to([0, 0, spin], (len(t), 3)), atol=1e-12)
    f_a = np.broadcast_to([0, 0, -m * G], (len(t), 3))
    np.testing.assert_allclose(sol.joint_force[:, 0], f_a, rtol=0, atol=1e-11)
    np.testing.assert_allclose(sol.joint_moment[:, 0], np.cross(sol.position[:, 0], f_a), rtol=0, atol=1e-11)


# --------------------------------------------------------------------------
# outputs
# --------------------------------------------------------------------------
def test_frames_list_joint_datasets_only_with_joints():
    sc = scenario([body("bob", position=(0, 0, -1))],
                  joints=[joint("hinge", "revolute", "world", "bob", point=(0, 0, 0), axis=(1, 0, 0))],
                  gravity=(0, 0, -G), end=0.2, interval=0.1)
    frames = solve_reference(sc).frames()
    for key, shape in (("joints/force", (3, 1, 3)), ("joints/moment", (3, 1, 3)),
                       ("joints/position_error", (3, 1)), ("joints/angle_error", (3, 1))):
        assert frames[key].shape == shape
    plain = solve_reference(scenario([body("bob")], end=0.2, interval=0.1))
    assert not any(k.startswith("joints/") for k in plain.frames())
    assert plain.joint_force.shape == (3, 0, 3) and plain.joint_names == ()


def test_drift_stays_at_round_off_with_projection():
    """A double revolute pendulum: unprojected, the index-1 equations drift; with the projection
    at every output time |Φ| stays at round-off, and energy is kept better."""
    th = np.radians(100.0)
    p1 = np.array([np.sin(th), 0, -np.cos(th)])
    sc = scenario([body("l1", mass=1.0, inertia=(0.1, 0.1, 0.01), position=0.5 * p1, rotvec=(0, -th, 0)),
                   body("l2", mass=0.6, inertia=(0.05, 0.05, 0.005), position=p1 + (0, 0, -0.4), velocity=(1, 0, 0))],
                  joints=[joint("j1", "revolute", "world", "l1", point=(0, 0, 0), axis=(0, 1, 0)),
                          joint("j2", "revolute", "l1", "l2", point=tuple(p1), axis=(0, 1, 0))],
                  gravity=(0, 0, -G), end=3.0, interval=0.05)
    free = solve_reference(sc, project=False)
    held = solve_reference(sc)
    assert held.joint_position_error.max() < 1e-13 and held.joint_angle_error.max() < 1e-13
    assert free.joint_position_error[-1].max() > 10 * held.joint_position_error[-1].max()
    for s in (free, held):
        e = s.kinetic + s.potential
        np.testing.assert_allclose(e, e[0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(held.position, free.position, rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["iftomm_a02_four_bars", "iftomm_a03_andrews", "iftomm_a04_bricard"])
def test_dependent_rows_minimum_norm_multipliers_match_the_svd(name):
    """With dependent rows the reference takes the minimum-norm λ of (G M⁻¹ Gᵀ) λ = rhs from a complete
    orthogonal decomposition (pivoted QR), not the SVD: the same λ to round-off, for a right-hand side in
    G's range and for one that is not (the least-squares one), at the example's initial state."""
    from pathlib import Path

    from mbsim.scenario import load_scenario
    eom = equations_of_motion(load_scenario(str(Path(__file__).resolve().parents[2] / "scenarios" / f"{name}.yaml")))
    assert eom.n_dependent > 0
    kin = eom._kinematics(eom.y0)
    g = eom._jacobian(eom._joint_rows(kin, 0.0)[0])
    w = eom._metric(kin)
    rng = np.random.default_rng(3)
    for rhs in (g @ rng.normal(size=g.shape[1]), rng.normal(size=g.shape[0])):
        cod = eom._multipliers(g, w, rhs)
        n_dependent, eom.n_dependent = eom.n_dependent, -1  # a rank the decomposition never finds: the SVD
        try:
            svd = eom._multipliers(g, w, rhs)
        finally:
            eom.n_dependent = n_dependent
        assert np.abs(cod - svd).max() <= 1e-11 * np.abs(svd).max()
