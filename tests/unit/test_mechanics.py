"""The mechanism at a state (THEORY §12, mbsim.mechanics): every kind's forces and their derivatives,
through the public API the step loop stands on, against finite differences and closed forms.

At a random state (positions, rotations, velocities, multipliers) of two bodies joined by one instance
of every example of every registered kind -- both moving, A the world, B a declared fixed body --
``Mechanism.evaluate`` gives f, the joints' ``Gᵀλ``, Φ and their derivatives K = ∂(Gᵀλ − f)/∂q,
C = −∂f/∂v and G = ∂Φ/∂q; central differences perturb every body's position (δr), its orientation by
a spatial rotation (Λ ← exp(δθ̂) Λ, THEORY §12) and its velocities.  The gyroscopic and inertial terms
(∂(J α)/∂θ, ∂h/∂θ, ∂h/∂ω) are checked the same way, and the mass matrix and h against their formulas.
"""
from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import pytest

from mbsim.elements import ELEMENTS
from mbsim.kernels.rotations import quat_mul, quat_to_matrix, rotvec_quat
from mbsim.mechanics import Mechanism
from mbsim.model.model import Model
from tests.builders import scenario
from tests.unit.test_joints import CASES as JOINT_CASES, _scenario as _joint_scenario
from tests.unit.test_tangents import CASES, EXAMPLES, two_bodies


def _rotate(q, theta):
    return np.array([quat_mul(rotvec_quat(t), qi) for t, qi in zip(theta, q)])


def _random_state(mech, rng, lam=True):
    m = mech.model
    n, nm = m.n_all, m.n_moving
    r = m.r0 + np.vstack((rng.normal(size=(nm, 3)) * 0.05, np.zeros((n - nm, 3))))
    q = _rotate(m.q0, np.vstack((rng.normal(size=(nm, 3)) * 0.3, np.zeros((n - nm, 3)))))
    v, w = np.zeros((n, 3)), np.zeros((n, 3))
    v[:nm], w[:nm] = rng.normal(size=(nm, 3)), rng.normal(size=(nm, 3)) * 2.0
    nu = m.elements.n_unknowns
    return mech.state(0.4, r, q, v, w, rng.normal(size=nu) * 10.0 if (lam and nu) else None)


def _perturbed(s, nm, j, eps, velocity=False):
    """The state with unknown j of the moving bodies changed by eps: [δr, δθ] (or [δv, δω])."""
    body, k = divmod(j, 6)
    r, q, v, w = s.r.copy(), s.q.copy(), s.v.copy(), s.w.copy()
    if velocity:
        (v if k < 3 else w)[body, k % 3] += eps
    elif k < 3:
        r[body, k] += eps
    else:
        th = np.zeros((len(q), 3))
        th[body, k - 3] = eps
        q = _rotate(q, th)
    return dataclasses.replace(s, r=r, q=q, v=v, w=w)


def _fd(mech, s, quantity, velocity=False, eps=1e-6):
    nm = mech.model.n_moving
    cols = []
    for j in range(6 * nm):
        p = quantity(mech.evaluate(_perturbed(s, nm, j, eps, velocity)))
        m = quantity(mech.evaluate(_perturbed(s, nm, j, -eps, velocity)))
        cols.append((p - m) / (2 * eps))
    return np.array(cols).T


def _check(K, Kfd, what, tol=1e-6):
    scale = max(np.abs(Kfd).max(), 1e-300)
    assert np.abs(K - Kfd).max() <= tol * scale, (what, np.abs(K - Kfd).max() / scale)


def _every_kind_cases():
    for kind, variant in CASES:
        for fixed_case in ("moving", "A world", "B fixed"):
            yield f"{kind}:{variant}:{fixed_case}"
    for case in JOINT_CASES:
        for fixed_a in (False, True):
            yield f"joint:{case}:{'A-fixed' if fixed_a else 'both-moving'}"


def _scenario_of(case):
    family, variant, where = case.split(":")
    if family == "joint":
        return _joint_scenario(variant, where == "A-fixed")
    bodies, (A, B) = two_bodies(where)
    return scenario(bodies, [EXAMPLES[family][variant](A, B)], gravity=(0, 0, -9.81))


@pytest.mark.parametrize("case", list(_every_kind_cases()))
def test_every_kinds_state_derivatives_match_finite_differences(case):
    """K = ∂(Gᵀλ − f)/∂q (the geometric stiffness of the reactions included), C = −∂f/∂v and G = ∂Φ/∂q
    of one instance of every kind and variant, through Mechanism.evaluate."""
    sc = _scenario_of(case)
    mech = Mechanism(Model(sc))
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    s = _random_state(mech, rng)
    ev = mech.evaluate(s, derivatives=True)
    nm = mech.model.n_moving
    # the inertial and gyroscopic parts are checked apart (test_the_inertial_terms...): here the elements'
    J = _inertia(mech, s)
    K_el = ev.K.toarray() - _inertial_stiffness(J, s.w[:nm], np.zeros((nm, 3)))
    C_el = ev.C.toarray() - _gyroscopic_damping(J, s.w[:nm])
    K_fd = _fd(mech, s, lambda e: e.constraint - e.f)
    C_fd = -_fd(mech, s, lambda e: e.f - e.constraint, velocity=True)  # (a joint's stops are in its forces)
    # (what is left of K and C once the bodies' terms are taken out is the elements' to round-off)
    for name, X, X_fd, total in (("K", K_el, K_fd, ev.K), ("C", C_el, C_fd, ev.C)):
        if np.abs(X_fd).max() > 1e-9 * max(1.0, np.abs(total.toarray()).max()):
            _check(X, X_fd, name)
        else:
            assert np.abs(X).max() <= 1e-12 * max(1.0, np.abs(total.toarray()).max()), name
    if mech.model.elements.n_unknowns:
        _check(ev.G.toarray(), _fd(mech, s, lambda e: e.phi), "G", 1e-7)


def _inertia(mech, s):
    m = mech.model
    nm = m.n_moving
    R = quat_to_matrix(s.q[:nm])
    return R @ m.inertia[:nm] @ R.transpose(0, 2, 1)


def _skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


def _inertial_stiffness(J, w, al):
    """∂(J α + ω × J ω)/∂θ per body (THEORY §12), as the module docstring says; a block matrix."""
    nm = len(J)
    K = np.zeros((6 * nm, 6 * nm))
    for i in range(nm):
        Jw, Ja = J[i] @ w[i], J[i] @ al[i]
        K[6 * i + 3:6 * i + 6, 6 * i + 3:6 * i + 6] = (J[i] @ _skew(al[i]) - _skew(Ja)
                                                      + _skew(w[i]) @ (J[i] @ _skew(w[i]) - _skew(Jw)))
    return K


def _gyroscopic_damping(J, w):
    nm = len(J)
    C = np.zeros((6 * nm, 6 * nm))
    for i in range(nm):
        C[6 * i + 3:6 * i + 6, 6 * i + 3:6 * i + 6] = _skew(w[i]) @ J[i] - _skew(J[i] @ w[i])
    return C


def test_the_inertial_and_gyroscopic_terms_match_finite_differences():
    """M = blockdiag(m I, J), h = [0, ω × Jω]; ∂(M v̇ + h)/∂q about given accelerations and ∂h/∂ω, by
    central differences of M v̇ + h, on bodies with full inertia matrices and no elements."""
    from tests.builders import body
    J = np.array([[0.05, 0.01, -0.004], [0.01, 0.03, 0.002], [-0.004, 0.002, 0.04]])
    sc = scenario([body("a", 1.3, J, (0.1, 0.2, 0.3), (0.3, -0.2, 0.5)), body("b", 0.7, (0.01, 0.02, 0.015))],
                  gravity=(0, 0, -9.81))
    mech = Mechanism(Model(sc))
    rng = np.random.default_rng(4)
    s = _random_state(mech, rng)
    nm = mech.model.n_moving
    acc = np.zeros((mech.model.n_all, 3)), np.vstack((rng.normal(size=(nm, 3)), np.zeros((1, 3))))
    ev = mech.evaluate(s, derivatives=True, accelerations=acc)
    vdot = np.concatenate((acc[0][:nm], acc[1][:nm]), axis=1).ravel()
    inertial = lambda e: e.M @ vdot + e.h  # noqa: E731
    _check(ev.K.toarray(), _fd(mech, s, inertial), "K (inertial)")
    _check(ev.C.toarray(), _fd(mech, s, lambda e: e.h, velocity=True), "C (gyroscopic)")
    Jw = _inertia(mech, s)
    for i in range(nm):
        blk = ev.M.toarray()[6 * i:6 * i + 6, 6 * i:6 * i + 6]
        assert np.allclose(blk[:3, :3], mech.model.mass[i] * np.eye(3)) and np.allclose(blk[3:, 3:], Jw[i])
        assert np.allclose(ev.h[6 * i + 3:6 * i + 6], np.cross(s.w[i], Jw[i] @ s.w[i]), rtol=1e-14)


def test_a_compound_pendulum_gets_its_stiffness_from_the_reaction():
    """THEORY §12: a body hanging from a revolute joint at rest, its multipliers those of equilibrium: the
    reduced stiffness NᵀKN over the reduced mass NᵀMN is m g d / I_pivot (N the null space of G), and K
    without the reactions' geometric stiffness (λ = 0) gives zero."""
    import scipy.linalg as sla
    from tests.builders import body, joint
    m_, d, g = 2.0, 0.7, 9.81
    Jc = np.array([0.05, 0.08, 0.03])
    sc = scenario([body("bob", m_, Jc, (0.0, 0.0, -d))], gravity=(0, 0, -g),
                  joints=[joint("hinge", "revolute", "world", "bob", point=(0, 0, 0), axis=(0, 1, 0))])
    mech = Mechanism(Model(sc))
    s0 = mech.state()
    _, _, lam = mech.accelerations(s0)
    for lam_, expected in ((lam, m_ * g * d / (Jc[1] + m_ * d * d)), (np.zeros_like(lam), 0.0)):
        ev = mech.evaluate(dataclasses.replace(s0, lam=lam_), derivatives=True)
        N = sla.null_space(ev.G.toarray())
        assert N.shape[1] == 1
        k_r = (N.T @ ev.K.toarray() @ N).item()
        m_r = (N.T @ ev.M.toarray() @ N).item()
        assert k_r / m_r == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_every_registered_kind_is_covered():
    covered = {c.split(":")[0] for c in _every_kind_cases()} | {k.type for k in ELEMENTS if k.section == "joints"}
    assert {k.type for k in ELEMENTS} <= covered | {"joint"}


@pytest.mark.parametrize("d, axis", [(0.5, [0, 1, 0]), (1.2, [0.6, 0.0, 0.8])])
def test_the_reactions_stiffness_gives_a_compound_pendulum_its_frequency(d, axis):
    """THEORY §12: a body hanging at rest from a revolute joint, linearized through the public API (the
    multipliers from Mechanism.constrained, K and G from Mechanism.evaluate, K reduced on G's null space)
    has ω² = m g d / I_pivot: its whole restoring stiffness is the geometric stiffness of the reaction,
    ∂(Gᵀλ)/∂q; without it the frequency would be zero."""
    import scipy.linalg as sl
    from mbsim.scenario import scenario_from_dict
    m, g = 2.0, 9.81
    inertia = np.array([0.03, 0.05, 0.04])  # principal, body axes = world axes
    sc = scenario_from_dict({
        "mbsim": 1, "name": "compound", "gravity": [0, 0, -g], "time": {"end": 0.01, "step": 0.001},
        "bodies": [{"name": "b", "mass": m, "inertia": inertia.tolist(), "position": [0, 0, -d]}],
        "joints": [{"name": "h", "type": "revolute", "bodies": ["world", "b"], "point": [0, 0, 0], "axis": axis}]})
    mech = Mechanism(Model(sc))
    a, lam = mech.constrained(mech.state())
    assert np.abs(a).max() < 1e-12  # an equilibrium: at rest, no acceleration
    ev = mech.evaluate(mech.state(lam=lam), derivatives=True)
    N = sl.null_space(ev.G.toarray())
    assert N.shape[1] == 1  # one degree of freedom
    w2 = sl.eigh(N.T @ ev.K.toarray() @ N, N.T @ ev.M.toarray() @ N, eigvals_only=True)
    u = np.asarray(axis, float) / np.linalg.norm(axis)
    i_pivot = u @ np.diag(inertia) @ u + m * d * d * (1.0 - u[2] ** 2)  # about the axis through the pivot
    d_eff = d * np.sqrt(1.0 - u[2] ** 2)  # the arm perpendicular to the axis
    assert w2[0] == pytest.approx(m * g * d_eff * np.sqrt(1.0 - u[2] ** 2) / i_pivot, rel=1e-12)
    without = N.T @ (ev.K.toarray() - _reaction_stiffness(mech, lam)) @ N
    assert abs(without[0, 0]) < 1e-9 * abs((N.T @ ev.K.toarray() @ N)[0, 0])


def _reaction_stiffness(mech, lam):
    """∂(G(q)ᵀλ)/∂q by central differences of ``Evaluation.constraint`` (Gᵀλ) at fixed λ (the rest of K is
    zero for a body under gravity alone)."""
    s0 = mech.state(lam=lam)
    n = 6 * mech.model.n_moving
    K = np.zeros((n, n))
    h = 1e-6
    for j in range(n):
        cols = []
        for sign in (1.0, -1.0):
            r, q = s0.r.copy(), s0.q.copy()
            body, k = divmod(j, 6)
            if k < 3:
                r[body, k] += sign * h
            else:
                th = np.zeros((len(q), 3))
                th[body, k - 3] = sign * h
                q = _rotate(q, th)
            cols.append(mech.evaluate(dataclasses.replace(s0, r=r, q=q)).constraint)
        K[:, j] = (cols[0] - cols[1]) / (2 * h)
    return K
