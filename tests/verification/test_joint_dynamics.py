"""Jointed mechanisms against closed forms and independent solutions (THEORY §11; issue 13).

- a revolute pendulum released from horizontal against the pendulum equation (SciPy, rtol 1e-12):
  positions *and* reactions at the frames second order for ρ∞ = 0, 0.5, 0.9 and 1 (the reactions
  come from the constrained equations at the frame, not from the step's multiplier);
- a body hanging at rest: the reaction is its weight, to round-off;
- a slider-crank whose crank angle is prescribed by an angle drive: the piston follows the closed
  form x = r cos φ + √(l² − r² sin² φ) to the Newton tolerance;
- the same driven mechanism: kinetic + potential − external work (the drive's) is constant to
  O(Δt²) at ρ∞ = 1;
- a planar four-bar of four revolutes (3D: three redundant equations): found at t = 0, named,
  removed (or refused), and the mechanism runs closed;
- initial velocities that violate the joints: projected (and reported) or refused.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import tests.builders as b
from mbsim import driver
from mbsim.mechanics.joints import JointError
from mbsim.model.model import Model
from mbsim.scenario.spec import Sine

G = 9.81


def _run(sc):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", driver.JointWarning)
        return driver.run(sc, write=False, keep_frames=True)


# ------------------------------------------------------------------------------------------------
M_BOB, L_BOB, J_BOB = 2.0, 1.0, 0.02


def _pendulum(dt, rho, end=1.0):
    bob = b.body("bob", mass=M_BOB, inertia=(0.01, J_BOB, 0.03), position=(L_BOB, 0, 0))
    hinge = b.joint("hinge", "revolute", "world", "bob", point=(0, 0, 0), axis=(0, 1, 0))
    return b.scenario([bob], gravity=(0, 0, -G), joints=[hinge], end=end, step=dt, rho_inf=rho, interval=0.1)


@pytest.fixture(scope="module")
def pendulum_reference():
    ip = J_BOB + M_BOB * L_BOB ** 2  # about the hinge; φ the rotation about +y, x = L(cos φ, 0, −sin φ)
    return solve_ivp(lambda t, y: [y[1], M_BOB * G * L_BOB * np.cos(y[0]) / ip], (0, 1), [0.0, 0.0],
                     rtol=1e-12, atol=1e-12, dense_output=True), ip


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9, 1.0])
def test_revolute_pendulum_second_order_positions_and_reactions(rho, pendulum_reference):
    ref, ip = pendulum_reference
    pos, force = [], []
    for dt in (4e-3, 2e-3, 1e-3):
        fr = _run(_pendulum(dt, rho)).frames_data
        t = fr["time"]
        phi, om = ref.sol(t)
        al = M_BOB * G * L_BOB * np.cos(phi) / ip
        x = L_BOB * np.stack([np.cos(phi), 0 * t, -np.sin(phi)], 1)
        a = L_BOB * np.stack([-np.sin(phi) * al - np.cos(phi) * om ** 2, 0 * t,
                              -np.cos(phi) * al + np.sin(phi) * om ** 2], 1)
        on_bob = M_BOB * a - M_BOB * np.array([0, 0, -G])  # what the hinge does to the bob
        pos.append(np.abs(fr["bodies/position"][:, 0] - x).max())
        force.append(np.abs(fr["joints/force"][:, 0] + on_bob).max())  # the force on A = world: −on_bob
        assert fr["joints/position_error"].max() < 1e-9
        # the moment about the hinge point on A: only about the axis is free, and there it is 0
        assert np.abs(fr["joints/moment"][:, 0, 1]).max() < 1e-9
    for e in (pos, force):
        ratios = [e[i] / e[i + 1] for i in range(2)]
        assert all(3.6 < r < 4.4 for r in ratios), (e, ratios)


def test_reaction_of_a_body_hanging_at_rest():
    bob = b.body("bob", mass=3.0, inertia=(0.1, 0.2, 0.3), position=(0, 0, -1.0), rotvec=(0.3, -0.2, 0.5))
    sc = b.scenario([bob], gravity=(0, 0, -G), end=0.05, step=0.01,
                    joints=[b.joint("ball", "spherical", "world", "bob", point=(0, 0, 0))])
    fr = _run(sc).frames_data
    assert np.allclose(fr["joints/force"][:, 0], [0, 0, -3.0 * G], rtol=0, atol=1e-12)
    assert np.allclose(fr["joints/moment"][:, 0], 0.0, atol=1e-12)
    assert np.allclose(fr["bodies/position"][:, 0], [0, 0, -1.0], atol=1e-12)


# ------------------------------------------------------------------------------------------------
R_CRANK, L_ROD = 0.3, 0.8


def _slider_crank(dt, rho=0.9, end=1.0, amplitude=0.8):
    A, P = np.array([R_CRANK, 0, 0]), np.array([R_CRANK + L_ROD, 0, 0])
    bodies = [b.body("crank", mass=1.0, inertia=(0.01, 0.01, 0.01), position=A / 2),
              b.body("rod", mass=2.0, inertia=(0.02, 0.12, 0.12), position=(A + P) / 2),
              b.body("piston", mass=1.5, inertia=(0.01, 0.01, 0.01), position=P)]
    y = (0, 1, 0)
    joints = [b.joint("O", "revolute", "world", "crank", point=(0, 0, 0), axis=y, angle=Sine(amplitude, 1.0)),
              b.joint("A", "revolute", "crank", "rod", point=A, axis=y),
              b.joint("P", "revolute", "rod", "piston", point=P, axis=y),
              b.joint("slide", "prismatic", "world", "piston", point=P, axis=(1, 0, 0))]
    return b.scenario(bodies, gravity=(0, 0, -G), joints=joints, end=end, step=dt, rho_inf=rho, interval=0.05)


def test_slider_crank_follows_its_driven_crank():
    fr = _run(_slider_crank(2e-3)).frames_data
    phi = 0.8 * np.sin(2 * np.pi * fr["time"])
    x = R_CRANK * np.cos(phi) + np.sqrt(L_ROD ** 2 - (R_CRANK * np.sin(phi)) ** 2)
    assert np.abs(fr["bodies/position"][:, 2, 0] - x).max() < 1e-9
    assert np.abs(fr["bodies/position"][:, 2, 1:]).max() < 1e-9
    assert fr["joints/position_error"].max() < 1e-9 and fr["joints/angle_error"].max() < 1e-9


def test_drive_work_closes_the_energy_balance_to_second_order():
    drift = []
    for dt in (4e-3, 2e-3, 1e-3):
        fr = _run(_slider_crank(dt, rho=1.0)).frames_data
        balance = fr["energy/kinetic"] + fr["energy/potential"] - fr["energy/external_work"]
        assert np.abs(fr["energy/external_work"]).max() > 1.0  # the drive does work
        drift.append(np.abs(balance - balance[0]).max())
    ratios = [drift[i] / drift[i + 1] for i in range(2)]
    assert all(3.5 < r < 4.5 for r in ratios), (drift, ratios)


# ------------------------------------------------------------------------------------------------
def _four_bar(redundant="remove", velocities="project", crank_speed=0.0):
    A, B, C = np.array([0.0, 0, 0.3]), np.array([0.8, 0, 0.5]), np.array([1.0, 0, 0])

    def bar(name, p, q, w=(0, 0, 0), v=(0, 0, 0)):
        L = np.linalg.norm(q - p)
        return b.body(name, mass=1.0, inertia=(L * L / 12 + 1e-3, L * L / 12 + 1e-3, 1e-3), position=(p + q) / 2,
                      angular_velocity=w, velocity=v)

    w = np.array([0, crank_speed, 0])
    bodies = [bar("crank", np.zeros(3), A, w, np.cross(w, A / 2)), bar("coupler", A, B), bar("rocker", C, B)]
    y = (0, 1, 0)
    joints = [b.joint("O", "revolute", "world", "crank", point=(0, 0, 0), axis=y),
              b.joint("A", "revolute", "crank", "coupler", point=A, axis=y),
              b.joint("B", "revolute", "coupler", "rocker", point=B, axis=y),
              b.joint("C", "revolute", "world", "rocker", point=C, axis=y)]
    return b.scenario(bodies, gravity=(0, 0, -G), joints=joints, end=1.0, step=1e-3, interval=0.05, rho_inf=1.0,
                      redundant=redundant, velocities=velocities)


def test_four_bar_redundant_equations_removed_and_named():
    sc = _four_bar()
    model = Model(sc)
    assert len(model.joint_notes) == 1 and "3 redundant joint equations" in model.joint_notes[0]
    assert "joint 'C'" in model.joint_notes[0] and "joint 'B'" not in model.joint_notes[0]
    assert model.elements.n_unknowns == 17  # 4 × 5 − 3: a mechanism of one degree of freedom
    with pytest.warns(driver.JointWarning, match="redundant"):
        fr = driver.run(sc, write=False, keep_frames=True).frames_data
    assert fr["joints/position_error"].max() < 1e-9 and fr["joints/angle_error"].max() < 1e-9
    assert np.ptp(fr["bodies/position"][:, 0, 0]) > 0.05  # it moves
    E = fr["energy/kinetic"] + fr["energy/potential"]
    assert np.ptp(E) < 1e-3 * np.ptp(fr["energy/kinetic"])
    with pytest.raises(JointError, match="joint 'C'.*refuse|refuse.*joint 'C'"):
        Model(_four_bar(redundant="refuse"))


def test_inconsistent_initial_velocities_projected_or_refused():
    sc = _four_bar(crank_speed=2.0)  # the crank turns, the coupler and rocker are given none
    model = Model(sc)
    assert set(model.velocity_projection) == {"crank", "coupler", "rocker"}
    assert any("initial velocities made consistent" in n for n in model.joint_notes)
    # what is left satisfies the joints, and the change is the smallest in kinetic energy: the projected
    # velocities are M-orthogonal to the change
    from mbsim.mechanics.joints import jacobian
    nm = model.n_moving
    Gm = jacobian(model, model.r0, model.q0, model.v0, model.w0)
    u = np.concatenate((model.v0[:nm], model.w0[:nm]), axis=1).ravel()
    assert np.abs(Gm @ u).max() < 1e-12
    du = np.concatenate([np.concatenate(model.velocity_projection[n]) for n in ("crank", "coupler", "rocker")])
    Mu = np.concatenate([np.concatenate((model.mass[i] * model.v0[i],
                                         model.rotations0[i] @ model.inertia[i] @ model.rotations0[i].T @ model.w0[i]))
                         for i in range(nm)])
    assert abs(Mu @ du) < 1e-12 * np.linalg.norm(Mu) * np.linalg.norm(du)
    with pytest.raises(JointError, match="violate joint 'A'"):
        Model(_four_bar(crank_speed=2.0, velocities="refuse"))


# ------------------------------------------------------------------------------------------------
def _period(th0, dt, J=J_BOB):
    """Period of the revolute pendulum released from rest at θ0 from the lowest point, from
    mbsim's frames: twice the time between the bob's first two passes under the hinge (x = 0,
    linear interpolation between frames, one frame per step)."""
    bob = b.body("bob", mass=M_BOB, inertia=(0.01, J, 0.03),
                 position=(L_BOB * np.sin(th0), 0, -L_BOB * np.cos(th0)), rotvec=(0, -th0, 0))
    hinge = b.joint("hinge", "revolute", "world", "bob", point=(0, 0, 0), axis=(0, 1, 0))
    sc = b.scenario([bob], gravity=(0, 0, -G), joints=[hinge], end=2.6, step=dt, rho_inf=0.9, interval=dt)
    fr = _run(sc).frames_data
    t, x = fr["time"], fr["bodies/position"][:, 0, 0]
    k = np.flatnonzero(np.sign(x[1:]) != np.sign(x[:-1]))[:2]
    cross = t[k] - x[k] * (t[k + 1] - t[k]) / (x[k + 1] - x[k])
    return 2.0 * (cross[1] - cross[0])


def test_large_amplitude_period_is_the_elliptic_integrals():
    """Released at θ0 = 2 rad (115°): T = 4 K(sin²(θ0/2)) / ω0 with ω0² = m g L / (J + m L²)
    (complete elliptic integral of the first kind; the small-angle period is 27 % shorter).  mbsim's
    period converges to it at second order."""
    from scipy.special import ellipk
    th0 = 2.0
    exact = 4.0 * ellipk(np.sin(th0 / 2) ** 2) / np.sqrt(M_BOB * G * L_BOB / (J_BOB + M_BOB * L_BOB ** 2))
    err = [abs(_period(th0, dt) - exact) for dt in (2e-3, 1e-3)]
    assert 3.4 < err[0] / err[1] < 4.6, err
    assert err[1] < 1e-5 * exact, (err, exact)


def test_spherical_pendulum_keeps_its_vertical_angular_momentum():
    """A bob on a ball joint at the origin, pushed sideways: gravity and the joint's reaction have no
    moment about the vertical through the joint, so L_z (about the origin, /momentum/angular) is
    conserved while the bob swings in and out (L_x, L_y change).  Generalized-α keeps it to O(Δt²) (its
    α-weighted forces and moments are not the discrete momentum map's), so halving Δt divides the
    largest deviation by about 4, at every ρ∞."""
    p = np.array([0.6, 0.0, -0.8])
    w = np.array([0.5, 2.0, 1.5])
    for rho in (0.5, 1.0):
        dev = []
        for dt in (2e-3, 1e-3):
            bob = b.body("bob", mass=1.3, inertia=(0.02, 0.03, 0.025), position=p, velocity=np.cross(w, p),
                         angular_velocity=w)
            sc = b.scenario([bob], gravity=(0, 0, -G), end=2.0, step=dt, rho_inf=rho, interval=0.02,
                            joints=[b.joint("ball", "spherical", "world", "bob", point=(0, 0, 0))])
            L = _run(sc).frames_data["momentum/angular"]
            assert np.ptp(L[:, 0]) > 0.1 and np.ptp(L[:, 1]) > 0.1
            dev.append(np.abs(L[:, 2] - L[0, 2]).max() / np.abs(L[0, 2]))
        assert 3.5 < dev[0] / dev[1] < 4.5 and dev[1] < 3e-6, (rho, dev)


def test_a_slider_crank_pushed_through_its_dead_point_fails_naming_the_joints():
    """The piston driven 2 cm beyond the reach r + l of crank and rod: as crank and rod straighten the
    joints' equations become dependent, Newton fails, and the message names the joints of the loop
    and says what happened; at t = 0 (or in a healthy mechanism) nothing is claimed."""
    from mbsim.mechanics.joints import lock_up
    from mbsim.scenario.spec import SmoothRamp
    ph = 0.5
    A = np.array([R_CRANK * np.cos(ph), 0, R_CRANK * np.sin(ph)])
    P = np.array([A[0] + np.sqrt(L_ROD ** 2 - A[2] ** 2), 0, 0])
    bodies = [b.body("crank", 1.0, (0.01, 0.01, 0.01), A / 2), b.body("rod", 2.0, (0.02, 0.12, 0.12), (A + P) / 2),
              b.body("piston", 1.5, (0.01, 0.01, 0.01), P)]
    y = (0, 1, 0)
    push = SmoothRamp(0.0, 1.0, 0.0, R_CRANK + L_ROD - P[0] + 0.02)
    joints = [b.joint("O", "revolute", "world", "crank", point=(0, 0, 0), axis=y),
              b.joint("A", "revolute", "crank", "rod", point=A, axis=y),
              b.joint("P", "revolute", "rod", "piston", point=P, axis=y),
              b.joint("slide", "prismatic", "world", "piston", point=P, axis=(1, 0, 0), displacement=push)]
    sc = b.scenario(bodies, gravity=(0, 0, -G), joints=joints, end=1.0, step=1e-3, interval=0.01)
    res = _run(sc)
    assert res.status == "failed"
    assert "joints 'O', 'A', 'P', 'slide' are nearly dependent" in res.message and "dead point" in res.message
    model = Model(sc)
    assert lock_up(model, model.r0, model.q0, model.v0, model.w0) == ""
