"""mbsim against closed-form solutions, an independent solve_ivp of Euler's equations,
and conservation laws (THEORY §9).  Every reference here is analytic or independent.

Where a test bounds an error at one Δt, the bound is the scheme's O(Δt²) error
estimate for that problem (stated next to it), and the same test checks that
halving Δt divides the error by about 4, so a bound can never hide a wrong
order.
"""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mbsim.energy import energy_drift
from mbsim.driver import run
from mbsim.kernels.rotations import quat_to_matrix
from tests.builders import body, damper, scenario, spring, torsional


def frames(sc, end=None):
    res = run(sc, write=False, keep_frames=True, end=end)
    assert res.status == "completed", res.message
    return res.frames_data


def msd(dt, rho=0.9):
    # m = 1, k = 100, c = 2: ω0 = 10 rad/s, ζ = 0.1; released from x = 1.1 (stretch 0.1)
    b = body("m", 1.0, (0.1, 0.1, 0.1), position=(1.1, 0, 0))
    return scenario([b], [spring("k", "world", "m", (0, 0, 0), (1.1, 0, 0), 100.0, 1.0),
                          damper("c", "world", "m", (0, 0, 0), (1.1, 0, 0), 2.0)],
                    end=1.0, step=dt, rho_inf=rho)


def msd_exact(t, x0=0.1, m=1.0, k=100.0, c=2.0):
    w0 = np.sqrt(k / m)
    z = c / (2 * np.sqrt(k * m))
    wd = w0 * np.sqrt(1 - z * z)
    return x0 * np.exp(-z * w0 * t) * (np.cos(wd * t) + z * w0 / wd * np.sin(wd * t))


@pytest.mark.parametrize("rho", [0.0, 0.9, 1.0])
def test_mass_spring_damper_matches_closed_form(rho):
    errs = []
    for dt in (2e-3, 1e-3):
        f = frames(msd(dt, rho))
        x = f["bodies/position"][:, 0, 0] - 1.0
        errs.append(np.abs(x - msd_exact(f["time"])).max())
        assert np.abs(f["bodies/position"][:, 0, 1:]).max() < 1e-12  # stays on the line
    # phase error of a second-order scheme: ~ x0 (ω0Δt)² ω0 t / 12 ≈ 0.1 · 1e-2 · 10 / 12 ≈ 1e-4 at Δt = 1e-3
    assert errs[1] < 2e-4
    assert 3.5 < errs[0] / errs[1] < 4.5


def spin(projection, axis, w0, A="world", B="s", chi=0.05, J=0.1, dt=1e-3, end=1.0):
    bodies = [body("s", 2.0, (J, J, J), angular_velocity=w0, rotvec=(0.3, -0.2, 0.5))]
    return scenario(bodies, [torsional("td", A, B, chi, projection, axis)], end=end, step=dt)


def test_torsional_P1_spin_down_is_exponential():
    w0 = np.array([1.0, -2.0, 3.0])
    errs = []
    for dt in (2e-3, 1e-3):
        f = frames(spin("P1", None, w0, dt=dt))
        exact = w0 * np.exp(-0.05 * f["time"] / 0.1)[:, None]
        errs.append(np.abs(f["bodies/angular_velocity"][:, 0] - exact).max())
    # relative error of the trapezoid-like decay e^{-λt}: ~ (λΔt)²λt/12 · |ω0| ≈ 1e-7
    assert errs[1] < 1e-6 * np.linalg.norm(w0)
    assert 3.5 < errs[0] / errs[1] < 4.5


@pytest.mark.parametrize("projection,damped,free", [("P2", [0, 1], [2]), ("P3", [2], [0, 1])])
def test_P2_damps_across_the_axis_and_P3_about_it(projection, damped, free):
    """World-fixed axis z: P2 leaves spin about z alone and damps spin across it; P3 the reverse."""
    w0 = np.array([1.5, -1.0, 4.0])
    f = frames(spin(projection, (0, 0, 1), w0))
    w = f["bodies/angular_velocity"][:, 0]
    exact = w0 * np.exp(-0.05 * f["time"] / 0.1)[:, None]
    assert np.abs(w[:, damped] - exact[:, damped]).max() < 1e-6
    # undamped, up to the scheme's O(Δt²) coupling through Λ_α (measured 1e-8 at Δt = 1e-3)
    assert np.abs(w[:, free] - w0[free]).max() < 1e-6 * np.linalg.norm(w0)


@pytest.mark.parametrize("projection", ["P2", "P3"])
def test_axis_rotates_with_body_A(projection):
    """A spinning body is A and carries the axis; spinning about that axis, P2 leaves the spin
    alone (no relative rotation across the axis) and P3 damps it."""
    axis = np.array([0.3, -0.4, 0.866])
    axis /= np.linalg.norm(axis)
    w0 = 6.0 * axis  # isotropic inertia: spins steadily about the (moving) axis
    sc = spin(projection, axis, w0, A="s", B="world")
    f = frames(sc)
    w = f["bodies/angular_velocity"][:, 0]
    if projection == "P2":
        assert np.abs(w - w0).max() < 1e-6 * np.linalg.norm(w0)
    else:
        exact = w0 * np.exp(-0.05 * f["time"] / 0.1)[:, None]
        assert np.abs(w - exact).max() < 1e-6


# ---------------------------------------------------------------------------
# torque-free asymmetric body
# ---------------------------------------------------------------------------
J_BODY = np.array([0.1, 0.2, 0.3])
W0 = np.array([1.0, 0.3, 4.0])  # near the stable axis 3 with a strong off-axis part


def euler_reference(t_eval, R0):
    """Independent solution: body-frame Euler equations and dΛ/dt = Λ Ŵ, by DOP853."""
    def rhs(t, y):
        W = y[:3]
        R = y[3:].reshape(3, 3)
        dW = np.cross(J_BODY * W, W) / J_BODY
        What = np.array([[0, -W[2], W[1]], [W[2], 0, -W[0]], [-W[1], W[0], 0]])
        return np.concatenate((dW, (R @ What).ravel()))
    W0b = R0.T @ W0
    sol = solve_ivp(rhs, (0, t_eval[-1]), np.concatenate((W0b, R0.ravel())), method="DOP853",
                    t_eval=t_eval, rtol=1e-12, atol=1e-12)
    W = sol.y[:3].T
    R = sol.y[3:].T.reshape(-1, 3, 3)
    return np.einsum("nij,nj->ni", R, W), R


def torque_free(dt, rho=1.0, end=2.0):
    b = body("top", 1.0, J_BODY, rotvec=(0.4, 0.1, -0.3), angular_velocity=W0)
    return scenario([b], end=end, step=dt, rho_inf=rho)


def rotation_error(R, Rref):
    c = (np.einsum("nij,nij->n", R, Rref) - 1) / 2
    return np.arccos(np.clip(c, -1, 1))


@pytest.mark.parametrize("rho", [1.0, 0.5])
def test_torque_free_body_follows_euler_equations(rho):
    errs = []
    for dt in (4e-3, 2e-3):
        f = frames(torque_free(dt, rho))
        R = quat_to_matrix(f["bodies/orientation"][:, 0])
        w_ref, R_ref = euler_reference(f["time"], R[0])
        errs.append((np.abs(f["bodies/angular_velocity"][:, 0] - w_ref).max(), rotation_error(R, R_ref).max()))
    errs = np.array(errs)
    assert np.all(errs[1] < 5e-3)
    assert np.all((errs[0] / errs[1] > 3.4) & (errs[0] / errs[1] < 4.6))


def test_torque_free_body_keeps_energy_and_angular_momentum_to_second_order():
    drift = []
    for dt in (4e-3, 2e-3):
        f = frames(torque_free(dt, 1.0))
        ke = f["energy/kinetic"]
        H = np.linalg.norm(f["momentum/angular"], axis=1)
        drift.append((np.abs(ke - ke[0]).max() / ke[0], np.abs(H - H[0]).max() / H[0]))
    drift = np.array(drift)
    assert np.all(drift[1] < 1e-4)
    assert np.all(drift[0] / drift[1] > 3.4)


# ---------------------------------------------------------------------------
# momentum and energy of free systems with internal connectors only
# ---------------------------------------------------------------------------
def free_pair(dt, with_damper, rho=1.0, end=1.0):
    a = body("a", 1.5, (0.03, 0.05, 0.04), (0, 0, 0), (0.2, 0.1, 0), (0.3, -0.1, 0.2), (2.0, -1.0, 3.0))
    b = body("b", 0.7, (0.01, 0.02, 0.015), (0.8, 0.3, -0.2), (-0.3, 0.5, 0.1), (-0.5, 0.4, 0.0), (-1.0, 4.0, 0.5))
    conns = [spring("k", "a", "b", (0.1, 0.05, 0), (0.7, 0.2, -0.15), 200.0, 0.5),
             torsional("t1", "a", "b", 0.01, "P2", (0, 0, 1)),
             torsional("t2", "a", "b", 0.02, "P3", (1, 0, 0))]
    if with_damper:
        conns.append(damper("d", "a", "b", (0.05, -0.05, 0.05), (0.75, 0.3, -0.1), 0.8))
    return scenario([a, b], conns, end=end, step=dt, rho_inf=rho, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("with_damper", [False, True])
def test_linear_momentum_is_conserved_to_solver_tolerance(with_damper):
    f = frames(free_pair(2e-3, with_damper, rho=0.7))
    p = f["momentum/linear"]
    assert np.abs(p - p[0]).max() < 1e-10 * np.abs(p[0]).max()


def test_angular_momentum_conserved_without_damper_to_second_order():
    drift = []
    for dt in (2e-3, 1e-3):
        H = frames(free_pair(dt, False))["momentum/angular"]
        drift.append(np.abs(H - H[0]).max() / np.linalg.norm(H[0]))
    assert drift[1] < 1e-4
    assert drift[0] / drift[1] > 3.4


def test_angular_momentum_balance_with_damper():
    """dH/dt = Σ (x_A − x_B) × f_damper (THEORY §9): H(t) − H(0) against the trapezoidal
    integral of that moment over the stored frames (every step)."""
    errs = []
    for dt in (2e-3, 1e-3):
        sc = free_pair(dt, True)
        f = frames(sc)
        from mbsim.model.model import Model
        Mdl = Model(sc)
        el = Mdl.elements
        e = el.of_kind("damper")[0]
        R = quat_to_matrix(f["bodies/orientation"])
        ia, ib = [list(Mdl.order).index(i) for i in el.body[e]]
        xA = f["bodies/position"][:, ia] + np.einsum("nij,j->ni", R[:, ia], el.param(e, "ZA"))
        xB = f["bodies/position"][:, ib] + np.einsum("nij,j->ni", R[:, ib], el.param(e, "ZB"))
        ci = sc.connectors.index(next(c for c in sc.connectors if c.type == "damper"))
        moment = np.cross(xA - xB, f["connectors/force"][:, ci])
        integral = np.concatenate(([np.zeros(3)], np.cumsum(0.5 * dt * (moment[1:] + moment[:-1]), axis=0)))
        H = f["momentum/angular"]
        assert np.abs(H[-1] - H[0]).max() > 1e-3 * np.linalg.norm(H[0])  # the damper really acts
        errs.append(np.abs((H - H[0]) - integral).max() / np.linalg.norm(H[0]))
    assert errs[1] < 1e-4
    assert errs[0] / errs[1] > 3.4


@pytest.mark.parametrize("with_damper", [False, True])
def test_energy_balance_holds_to_second_order(with_damper):
    drift = []
    for dt in (2e-3, 1e-3):
        f = frames(free_pair(dt, with_damper))
        drift.append(energy_drift(*(f[f"energy/{k}"] for k in ("kinetic", "potential", "dissipated",
                                                                "external_work")))[1])
        if with_damper:
            assert f["energy/dissipated"][-1] > 1e-3 * f["energy/kinetic"][0]
    # relative to the largest energy exchanged; measured ~1e-4 at Δt = 1e-3 (ρ∞ = 1)
    assert drift[1] < 2e-4
    assert 3.4 < drift[0] / drift[1] < 4.6


# --------------------------------------------------------------------------
# axial damper (damper with axial: true): a force along the line of its points only
# --------------------------------------------------------------------------
def axial_pair(dt, vt, rho=0.9, end=1.0, axial=True):
    """A ball (m = 2) at x = 1 joined to the world's origin by a damper c = 3 (no gravity), moving
    outwards at 0.5 m/s and across the line at ``vt``."""
    b = body("m", 2.0, (0.1, 0.1, 0.1), position=(1.0, 0, 0), velocity=(0.5, vt, 0.0))
    return scenario([b], [damper("c", "world", "m", (0, 0, 0), (1.0, 0, 0), 3.0, axial=axial)],
                    end=end, step=dt, rho_inf=rho)


@pytest.mark.parametrize("rho", [0.0, 1.0])
def test_axial_damper_on_its_line_is_exponential(rho):
    """Along the line, m ẍ = −c ẋ: x = 1 + v0 (m/c)(1 − e^(−ct/m)); error ~ v0 (c/m)² Δt² t e^(−ct/m)/12
    ≈ 3e-7 m at Δt = 1e-3, order 2."""
    errs = []
    for dt in (2e-3, 1e-3):
        f = frames(axial_pair(dt, 0.0, rho))
        t = f["time"]
        x = 1.0 + 0.5 * (2.0 / 3.0) * (1.0 - np.exp(-1.5 * t))
        errs.append(np.abs(f["bodies/position"][:, 0, 0] - x).max())
        np.testing.assert_allclose(f["connectors/force"][:, 0, 0], 3.0 * f["bodies/velocity"][:, 0, 0], atol=1e-9)
    assert errs[1] < 1e-6
    assert 3.5 < errs[0] / errs[1] < 4.5


def test_axial_damper_is_a_central_force_and_the_full_one_is_not():
    """A ball circling the damper's fixed end: the axial damper's force is central, so the angular
    momentum about that end is conserved (to the solver's tolerance: the force at n+α acts along the
    line at n+α; measured 3e-9 relative, the scheme's O(Δt²) part) while the energy it removes is the
    ∫ c L̇² dt of the frames; the full damper (the same points and c) also brakes the circling, and
    loses most of that angular momentum."""
    f = frames(axial_pair(1e-3, 2.0, end=2.0))
    r, v = f["bodies/position"][:, 0], f["bodies/velocity"][:, 0]
    h = 2.0 * np.cross(r, v)[:, 2]
    assert np.abs(h - h[0]).max() < 1e-7 * abs(h[0])
    L = np.linalg.norm(r, axis=1)
    Ldot = np.einsum("ij,ij->i", r, v) / L
    force = f["connectors/force"][:, 0]
    np.testing.assert_allclose(np.cross(force, r), 0.0, atol=1e-12)  # along the line …
    np.testing.assert_allclose(np.einsum("ij,ij->i", force, r) / L, 3.0 * Ldot, atol=1e-9)  # … and c L̇
    ke = f["energy/kinetic"]
    assert np.abs(ke[0] - ke - f["energy/dissipated"]).max() < 1e-5 * ke[0]
    full = frames(axial_pair(1e-3, 2.0, end=2.0, axial=False))
    hf = 2.0 * np.cross(full["bodies/position"][:, 0], full["bodies/velocity"][:, 0])[:, 2]
    assert hf[-1] < 0.2 * hf[0]


def test_axial_damper_in_3d_converges_to_the_reference_solver():
    """Two tumbling bodies joined by a spring and an axial damper between off-centre points (and one
    hung from the world by another), against mbsim.reference (the same law written independently):
    error at Δt = 1 ms below 1e-5 m, falling 4x on halving."""
    from mbsim.reference import solve_reference

    def scene(dt):
        a = body("a", 1.5, (0.02, 0.03, 0.04), position=(0.0, 0.0, -1.0), rotvec=(0.2, 0.1, 0.0),
                 angular_velocity=(1.0, -2.0, 3.0), velocity=(0.3, 0.0, 0.0))
        b = body("b", 0.8, (0.01, 0.02, 0.015), position=(0.6, 0.2, -1.3), angular_velocity=(-2.0, 1.0, 0.5))
        cons = [spring("s0", "world", "a", (0, 0, 0), (0.05, 0.02, -0.9), 200.0),
                damper("d0", "world", "a", (0.1, 0, 0.1), (0.05, 0.02, -0.9), 4.0, axial=True),
                spring("s1", "a", "b", (0.1, 0.0, -1.05), (0.55, 0.25, -1.25), 300.0),
                damper("d1", "a", "b", (0.1, 0.0, -1.05), (0.55, 0.25, -1.25), 2.0, axial=True)]
        return scenario([a, b], cons, gravity=(0, 0, -9.81), end=0.5, step=dt, interval=0.01)

    ref = solve_reference(scene(1e-3))
    errs = []
    for dt in (2e-3, 1e-3):
        f = frames(scene(dt))
        errs.append(np.abs(f["bodies/position"] - ref.position).max())
    assert errs[1] < 1e-5
    assert 3.5 < errs[0] / errs[1] < 4.5
