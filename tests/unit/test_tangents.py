"""Finite-difference checks of every tangent (THEORY §5–7) and of the §8 seed matrices.

The residual R(u) of one generalized-α step is differentiated by central
differences along every unknown (translations additively, rotations by the
left Cayley update of THEORY §1) at random states and rotations; the
assembled consistent tangent K = −∂R/∂u must agree to a relative error of
1e-6.  Connector tangents are checked on their own contribution (full model
minus the same bodies without connectors), so the large inertia blocks cannot
hide an error in them.

The element tests iterate over the registry (``mbsim.elements.ELEMENTS``):
every registered kind must have example instances here (:data:`EXAMPLES`),
or the test that says so fails.
"""
import dataclasses
import zlib

import numpy as np
import pytest

from mbsim.elements import BY_TYPE, ELEMENTS
from mbsim.integrators import GeneralizedAlpha, State
from mbsim.model.model import Model
from mbsim.kernels.rotations import cay_quat, quat_mul, quat_normalize, skew, tmat
from tests.builders import body, bushing, damper, load, scenario, spring, spring_curve, spring_law, torsional, torsional_spring

DT = 0.02


def random_state(model, rng):
    n, nm = model.n_all, model.n_moving
    r, q = model.r0.copy(), model.q0.copy()
    v, a, w, al = (np.zeros((n, 3)) for _ in range(4))
    v[:nm], a[:nm], w[:nm], al[:nm] = (rng.normal(size=(nm, 3)) * s for s in (1.0, 3.0, 3.0, 10.0))
    return State(0.3, r, q, v, a, w, al)


def random_iterate(model, s, rng):
    """A random iterate as the step's increments (d, θ) of the moving bodies (the Newton unknowns)."""
    nm = model.n_moving
    d, th = np.zeros_like(s.r), np.zeros_like(s.r)
    d[:nm] = rng.normal(size=(nm, 3)) * 0.05
    th[:nm] = rng.normal(size=(nm, 3)) * 0.4
    return d, th


def pose(s, d, th):
    """Positions and unit quaternions of the iterate ``(d, θ)`` from ``s``: r_n + d and cay(θ)Λ_n."""
    return s.r + d, quat_normalize(quat_mul(cay_quat(th), s.q))


def fd_tangent(ga, s, d, th, eps=1e-6):
    """Central differences of the step's residual (the compiled loop's own evaluation, GeneralizedAlpha.iterate)
    along every unknown: translations additively, rotations by the left Cayley update (THEORY §1)."""
    nd = ga.model.ndof
    K = np.empty((nd, nd))
    for j in range(nd):
        du = np.zeros(nd)
        du[j] = eps
        Rp = ga.iterate(s, DT, *ga.update(d, th, du)).R
        Rm = ga.iterate(s, DT, *ga.update(d, th, -du)).R
        K[:, j] = -(Rp - Rm) / (2 * eps)
    return K


def tangents(sc, rng, mode="consistent"):
    """(analytic, finite-difference) tangents of the connectors alone and of the bodies alone."""
    full = GeneralizedAlpha(Model(sc), sc.integrator)
    bare_sc = dataclasses.replace(sc, connectors=(), loads=())
    bare = GeneralizedAlpha(Model(bare_sc), bare_sc.integrator)
    s = random_state(full.model, rng)
    d, th = random_iterate(full.model, s, rng)
    Kf = full.iterate(s, DT, d, th, tangent=mode).K.toarray()
    Kb = bare.iterate(s, DT, d, th, tangent="consistent").K.toarray()
    Kb_fd = fd_tangent(bare, s, d, th)
    return (Kf - Kb, fd_tangent(full, s, d, th) - Kb_fd), (Kb, Kb_fd)


def rel_err(K, Kfd):
    return np.abs(K - Kfd).max() / np.abs(Kfd).max()


def two_bodies(fixed_case):
    """Body pairs for the connector tests: both moving, A = world, or B a declared fixed body."""
    rng = np.random.default_rng(7)
    a = body("a", 1.3, (0.02, 0.03, 0.04), (0.1, 0.2, 0.3), rng.normal(size=3))
    b = body("b", 0.7, (0.01, 0.012, 0.02), (0.9, -0.3, 0.6), rng.normal(size=3),
             fixed=(fixed_case == "B fixed"))
    names = ("world", "b") if fixed_case == "A world" else ("a", "b")
    return [a, b], names


PA, PB = (0.2, 0.25, 0.2), (0.7, -0.2, 0.8)
CURVE = [[-0.5, -60.0], [0.0, 0.0], [0.3, 45.0], [0.45, 90.0], [0.6, 200.0], [1.0, 700.0]]
_r = np.random.default_rng(11)
_m = _r.normal(size=(6, 6))
BUSH_K = _m @ _m.T + 6 * np.diag([50.0, 40.0, 60.0, 5.0, 4.0, 6.0])  # symmetric positive definite
_m = _r.normal(size=(6, 6))
BUSH_C = _m @ _m.T * 0.3 + 0.1 * _r.normal(size=(6, 6))  # not symmetric
BUSH_KA = 30.0 * (_m - _m.T)  # antisymmetric: a circulatory stiffness
BUSH_P = _r.normal(size=6) * 3.0
_q, _ = np.linalg.qr(_r.normal(size=(3, 3)))
BUSH_AXES = _q * np.sign(np.linalg.det(_q))  # a right-handed skew triad (rows)

# Example instances of every registered element kind, by variant: the element tests below run each.
EXAMPLES = {
    "spring": {"rest length": lambda A, B: spring("k", A, B, PA, PB, 250.0, 0.4),
               "zero length": lambda A, B: spring("k", A, B, PA, PB, 250.0, 0.0),
               # a hardening force curve (PCHIP): the deflections of the tests' states, ~0.5 m, in its inside
               "force curve": lambda A, B: spring_curve("k", A, B, PA, PB, CURVE, 0.4),
               # … and on its linear continuation beyond the last point
               "force curve, continued": lambda A, B: spring_curve("k", A, B, PA, PB, CURVE[:3], 0.4)},
    "damper": {"": lambda A, B: damper("d", A, B, PA, PB, 3.0),
               "axial": lambda A, B: damper("d", A, B, PA, PB, 3.0, axial=True)},
    "torsional_damper": {p: (lambda A, B, p=p: torsional("t", A, B, 2.0, p, axis=(0.3, -0.5, 0.8)))
                         for p in ("P1", "P2", "P3", "none")},
    # a full symmetric 6×6 stiffness, damping and preload in a skew frame, the bodies turned about 0.3–1 rad
    "bushing": {"full": lambda A, B: bushing("b", A, B, (0.5, 0.1, 0.4), BUSH_K, BUSH_C, BUSH_P, BUSH_AXES),
                # a circulatory (antisymmetric) part in K
                "non-symmetric": lambda A, B: bushing("b", A, B, (0.5, 0.1, 0.4), BUSH_K + BUSH_KA, BUSH_C,
                                                      BUSH_P, BUSH_AXES),
                "diagonal": lambda A, B: bushing("b", A, B, (0.5, 0.1, 0.4), [300, 200, 500, 40, 60, 30],
                                                 [2, 3, 4, 0.5, 0.2, 0.3])},
    "torsional_spring": {"": lambda A, B: torsional_spring("s", A, B, 30.0),
                         "damped": lambda A, B: torsional_spring("s", A, B, 30.0, 1.5)},
    # about a skew axis, through full turns (the bodies turned about it and across it)
    "torsional_spring_axis": {"": lambda A, B: torsional_spring("s", A, B, 30.0, axis=(0.3, -0.5, 0.8)),
                              "damped": lambda A, B: torsional_spring("s", A, B, 30.0, 1.5, axis=(0.3, -0.5, 0.8))},
    # user laws (tests/user_laws.py): nonlinear in the length, the rate and the time, with its derivatives;
    # the tension alone (central differences); a tendon in its toe region (taut at the tests' states), damped
    "spring_law": {"smooth": lambda A, B: spring_law("u", A, B, PA, PB, "tests.user_laws:smooth",
                                                    (250.0, 0.4, 80.0, 3.0, 0.5, 0.3)),
                   "tension alone": lambda A, B: spring_law("u", A, B, PA, PB, "tests.user_laws:linear_tension",
                                                           (250.0, 0.4)),
                   "tendon": lambda A, B: spring_law("u", A, B, PA, PB, "tests.user_laws:tendon",
                                                    (400.0, 0.3, 1.0, 0.5, 0.2, 3.0))},
}
# the joints (own unknowns, their own law of constraint rows) have their finite-difference tests in
# tests/unit/test_joints.py
CONNECTORS = [k for k in ELEMENTS if k.section == "connectors"]
CASES = [(k.type, v) for k in CONNECTORS for v in EXAMPLES.get(k.type, {"(no example)": None})]


def connector_of(kind, A, B, variant):
    return EXAMPLES[kind][variant](A, B)


def test_every_registered_element_has_examples():
    assert set(EXAMPLES) == {k.type for k in CONNECTORS}, "add example instances of every registered kind to EXAMPLES"
    from tests.unit.test_joints import CASES as JOINT_CASES
    assert {k.type for k in ELEMENTS if k.section == "joints"} == {c.split("+")[0] for c in JOINT_CASES}


@pytest.mark.parametrize("rho", [0.0, 1.0])
@pytest.mark.parametrize("fixed_case", ["moving", "A world", "B fixed"])
@pytest.mark.parametrize("kind,variant", CASES)
def test_element_tangent_matches_finite_differences(kind, variant, fixed_case, rho):
    bodies, (A, B) = two_bodies(fixed_case)
    sc = scenario(bodies, [connector_of(kind, A, B, variant)], rho_inf=rho)
    rng = np.random.default_rng(zlib.crc32(repr((kind, variant, fixed_case, rho)).encode()))
    (K, Kfd), _ = tangents(sc, rng)
    if kind == "torsional_damper" and variant == "none":
        assert np.abs(K).max() == 0 and np.abs(Kfd).max() < 1e-8
        return
    assert rel_err(K, Kfd) <= 1e-6


@pytest.mark.parametrize("rho", [0.0, 0.5, 1.0])
def test_body_tangent_matches_finite_differences(rho):
    rng = np.random.default_rng(11)
    bodies = [body(f"b{i}", rng.uniform(0.5, 2), rng.uniform(0.01, 0.1, 3), rng.normal(size=3),
                   rng.normal(size=3)) for i in range(3)]
    # a full, non-diagonal inertia as well
    J = np.array([[0.05, 0.01, -0.004], [0.01, 0.03, 0.002], [-0.004, 0.002, 0.04]])
    bodies.append(body("full", 1.1, J, (0, 1, 0), (0.3, 0.2, 0.1)))
    sc = scenario(bodies, (), [load("b0", (1, 2, 3), "torque")], gravity=(0, 0, -9.81), rho_inf=rho)
    _, (Kb, Kb_fd) = tangents(sc, rng)
    assert rel_err(Kb, Kb_fd) <= 1e-6


def test_whole_system_tangent_with_many_connectors():
    """Every kind at once, shared bodies, a chain to world: the assembled global tangent."""
    from tests.builders import nonlinear_3d
    sc = nonlinear_3d(rho_inf=0.5)
    rng = np.random.default_rng(3)
    ga = GeneralizedAlpha(Model(sc), sc.integrator)
    s = random_state(ga.model, rng)
    d, th = random_iterate(ga.model, s, rng)
    K = ga.iterate(s, DT, d, th, tangent="consistent").K.toarray()
    assert rel_err(K, fd_tangent(ga, s, d, th)) <= 1e-6


# ---------------------------------------------------------------------------
# tangent: seed reproduces THEORY §8 (the excerpts' matrices), written out here
# independently of the kernels, entry block by entry block.
# ---------------------------------------------------------------------------
def _omega(ga, s, th):
    """ω' of the iterate with step vector θ (THEORY §4), written out in numpy: cay(θ)[g θ + ω_pred]."""
    from mbsim.kernels.rotations import cay
    p = ga.params
    g = p.gamma / (p.beta * DT)
    w_pred = (1 - p.gamma / p.beta) * s.w + DT * (1 - 0.5 * p.gamma / p.beta) * s.al
    return np.einsum("nij,nj->ni", cay(th), g * th + w_pred)


def seed_blocks_by_hand(kind, ga, s, d, th, conn, projection):
    """The excerpts' 12×12 matrix for one connector between two moving bodies."""
    m = ga.model
    p = ga.params
    af, g = p.alpha_f, p.gamma / (p.beta * DT)
    w1 = _omega(ga, s, th)
    r1, q1 = pose(s, d, th)
    from mbsim.kernels.rotations import quat_to_matrix
    R1, Rn = quat_to_matrix(q1), quat_to_matrix(s.q)
    ia, ib = m.index["a"], m.index["b"]
    I = np.eye(3)
    el = m.elements
    K = np.zeros((12, 12))
    blk = lambda i, j, M: K.__setitem__((slice(3 * i, 3 * i + 3), slice(3 * j, 3 * j + 3)), M)  # noqa: E731
    if kind in ("spring", "damper"):
        ZA, ZB = el.param(0, "ZA"), el.param(0, "ZB")
        z1 = [R1[ia] @ ZA, R1[ib] @ ZB]
        za = [af * z1[0] + (1 - af) * Rn[ia] @ ZA, af * z1[1] + (1 - af) * Rn[ib] @ ZB]
        zh = [skew(za[0]), skew(za[1])]
        if kind == "spring":  # eq. rbs-8, scaled by k α
            x = [af * r1[i] + (1 - af) * s.r[i] + za[j] for j, i in enumerate((ia, ib))]
            c = x[1] - x[0]
            L = np.linalg.norm(c)
            n = c / L
            P = (1 - conn.rest_length / L) * I + conn.rest_length / L * np.outer(n, n)
            A, B1, B2 = P, P @ skew(z1[0]), P @ skew(z1[1])
            sc = conn.stiffness * af
        else:  # eq. rbd-7/8 with the body index restored on ω̂
            A = g * I
            B1 = g * skew(z1[0]) @ tmat(th[ia]).T + skew(w1[ia]) @ skew(z1[0])
            B2 = g * skew(z1[1]) @ tmat(th[ib]).T + skew(w1[ib]) @ skew(z1[1])
            sc = conn.damping * af
        rowsA = [A, -B1, -A, B2]
        for j, M in enumerate(rowsA):
            blk(0, j, sc * M)
            blk(1, j, sc * zh[0] @ M)
            blk(2, j, -sc * M)
            blk(3, j, -sc * zh[1] @ M)
        return K
    # torsional damper: C_X = g P T(θ_X)ᵀ, K_mθA = χ(−C_A + W), K_mθB = χ C_B (eq. td-*)
    E = el.param(0, "E")
    n1 = R1[ia] @ E
    n = af * n1 + (1 - af) * Rn[ia] @ E
    w = (af * w1[ib] + (1 - af) * s.w[ib]) - (af * w1[ia] + (1 - af) * s.w[ia])
    P = {"P1": I, "P2": I - np.outer(n, n), "P3": np.outer(n, n), "none": 0 * I}[projection]
    Wb = ((n @ w) * I + np.outer(n, w)) @ skew(n1)
    W = {"P1": 0 * I, "P2": Wb, "P3": -Wb, "none": 0 * I}[projection]
    CA, CB = g * P @ tmat(th[ia]).T, g * P @ tmat(th[ib]).T
    KmA, KmB = conn.damping * (-CA + W), conn.damping * CB
    blk(1, 1, -af * KmA)
    blk(1, 3, -af * KmB)
    blk(3, 1, af * KmA)
    blk(3, 3, af * KmB)
    return K


SEED_BY_HAND = ("spring", "damper", "torsional_damper")  # the kinds whose §8 matrices are written out above


@pytest.mark.parametrize("kind,variant", CASES)
def test_seed_tangent_reproduces_the_excerpts_matrices(kind, variant):
    """``tangent: seed`` is THEORY §8's matrix for the kinds it gives one for, and the consistent
    tangent for every other registered kind and variant (the axial damper, a spring's force curve)."""
    if kind == "torsional_damper" and variant == "none":
        pytest.skip("no moment, no tangent: nothing to compare")
    bodies, (A, B) = two_bodies("moving")
    conn = connector_of(kind, A, B, variant)
    sc = scenario(bodies, [conn], rho_inf=0.6, tangent="seed")
    ga = GeneralizedAlpha(Model(sc), sc.integrator)
    rng = np.random.default_rng(5)
    s = random_state(ga.model, rng)
    d, th = random_iterate(ga.model, s, rng)
    K_local = local_tangent(ga, s, d, th, "seed")
    K_cons = local_tangent(ga, s, d, th, "consistent")
    if kind not in SEED_BY_HAND or variant == "axial" or variant.startswith("force curve"):
        assert np.array_equal(K_local, K_cons)
        return
    K_hand = seed_blocks_by_hand(kind.split("_")[0], ga, s, d, th, conn, variant)
    assert np.allclose(K_local, K_hand, rtol=1e-12, atol=1e-12 * np.abs(K_hand).max())
    # and it differs from the consistent tangent (the excerpts' are not exact)
    assert np.abs(K_cons - K_local).max() > 1e-6 * np.abs(K_cons).max()


def local_tangent(ga, s, d, th, mode):
    """The 12×12 block of the model's one element between its two moving bodies at the iterate (d, θ): the
    step's tangent less that of the bodies alone."""
    sc = ga.model.scenario
    bare_sc = dataclasses.replace(sc, connectors=(), loads=())
    bare = GeneralizedAlpha(Model(bare_sc), bare_sc.integrator)
    K = ga.iterate(s, DT, d, th, tangent=mode).K.toarray()
    Kb = bare.iterate(s, DT, d, th, tangent="consistent").K.toarray()
    return K - Kb
