"""The joint law against finite differences (THEORY §11): for every joint type and drive, with both
bodies moving and with body A fixed, at configurations where the joint does not hold,

- the consistent tangent of the whole Newton system (its constraint Jacobian G in the multipliers'
  rows, the α-interpolated G_αᵀ in their columns, and the geometric stiffness ∂(Gᵀλ)/∂q with
  multipliers far from zero) against central differences of the residual;
- the velocity-quadratic term γ of the constrained equations, Φ̈ = G a + γ, against second
  differences of Φ along a motion with given velocities and accelerations.
"""
from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np
import pytest

import tests.builders as b
from mbsim.integrators.generalized_alpha import GeneralizedAlpha
from mbsim.mechanics import Mechanism
from mbsim.model.model import Model
from mbsim.kernels.rotations import quat_mul, rotvec_quat
from mbsim.scenario.spec import Sine, SmoothRamp

CASES = {
    "spherical": {},
    "revolute": {"axis": (0.3, -0.5, 0.8)},
    "revolute+angle": {"axis": (0.3, -0.5, 0.8), "angle": Sine(0.7, 1.3)},
    "prismatic": {"axis": (-0.6, 0.2, 0.4)},
    "prismatic+displacement": {"axis": (-0.6, 0.2, 0.4), "displacement": SmoothRamp(0.0, 1.0, 0.0, 0.3)},
    "cylindrical": {"axis": (0.1, 0.9, -0.3)},
    "cylindrical+both": {"axis": (0.1, 0.9, -0.3), "angle": Sine(0.4, 0.8), "displacement": Sine(0.2, 1.1)},
    "planar": {"axis": (0.5, 0.5, 0.2)},
    "universal": {"axes": ((1.0, 0.2, 0.0), (-0.2, 1.0, 0.5))},
    "lock": {},
    # stops in contact at the tests' states (the angle near 0, the offset near 0 ± 0.1)
    "revolute+stop": {"axis": (0.3, -0.5, 0.8), "stops": (("angle", -3.0, -0.8, 40.0, 0.3),)},
    "prismatic+stop": {"axis": (-0.6, 0.2, 0.4), "stops": (("displacement", -1.0, -0.6, 300.0, 0.5),)},
    "cylindrical+stops": {"axis": (0.1, 0.9, -0.3), "stops": (("angle", 0.9, 2.5, 30.0, 1.5),
                                                              ("displacement", 0.35, np.inf, 200.0, 3.0))},
    "distance": {"points": ((0.4, -0.1, 0.3), (1.1, 0.5, -0.6))},
}


def _scenario(case: str, fixed_a: bool):
    kind = case.split("+")[0]
    opts = dict(CASES[case])
    bodies = [b.body("b", mass=0.8, inertia=(0.05, 0.07, 0.04), position=(1.0, 0.3, -0.5), rotvec=(-0.4, 0.2, 0.9))]
    if not fixed_a:
        bodies.insert(0, b.body("a", mass=1.3, inertia=(0.1, 0.2, 0.15), position=(0.2, -0.1, 0.4),
                                rotvec=(0.5, -0.3, 0.2)))
    if kind == "universal":
        a0 = np.array(opts["axes"][0], float)
        a1 = np.array(opts["axes"][1], float)
        a1 -= a0 * (a1 @ a0) / (a0 @ a0)  # perpendicular at t = 0
        opts["axes"] = (a0, a1)
    if kind != "distance":
        opts["point"] = (0.6, 0.1, -0.1)
    j = b.joint("j", kind, "world" if fixed_a else "a", "b", **opts)
    return b.scenario(bodies, gravity=(0, 0, -9.81), joints=[j], step=0.01)


@pytest.mark.parametrize("fixed_a", [False, True], ids=["both-moving", "A-fixed"])
@pytest.mark.parametrize("case", list(CASES))
def test_tangent_against_central_differences(case, fixed_a):
    sc = _scenario(case, fixed_a)
    model = Model(sc)
    ga = GeneralizedAlpha(model, sc.integrator)
    rng = np.random.default_rng(zlib.crc32(f"{case}{fixed_a}".encode()))
    s0 = ga.initial_state()
    nm, n = model.n_moving, model.n_all
    v, a, w, al = (np.zeros((n, 3)) for _ in range(4))
    v[:nm], a[:nm], w[:nm], al[:nm] = (rng.normal(size=(nm, 3)) * f for f in (1.0, 3.0, 3.0, 10.0))
    s = replace(s0, t=0.3, v=v, a=a, w=w, al=al)
    dt = 0.01
    dd, th = np.zeros((n, 3)), np.zeros((n, 3))
    dd[:nm], th[:nm] = rng.normal(size=(nm, 3)) * 0.05, rng.normal(size=(nm, 3)) * 0.3
    nu = model.elements.n_unknowns
    lam = rng.normal(size=nu) * 20.0
    scale = model.unknown_reference / (ga.params.beta * dt * dt)
    K = ga.iterate(s, dt, dd, th, lam, "consistent").K.toarray()
    nd = model.ndof
    Kfd = np.empty((nd, nd))
    eps = 1e-6
    for j in range(nd):
        du = np.zeros(nd)
        du[j] = eps
        Rp = ga.iterate(s, dt, *ga.update(dd, th, du[:6 * nm]), lam + scale * du[6 * nm:]).R
        Rm = ga.iterate(s, dt, *ga.update(dd, th, -du[:6 * nm]), lam - scale * du[6 * nm:]).R
        Kfd[:, j] = -(Rp - Rm) / (2 * eps)
    assert np.abs(Kfd[6 * nm:]).max() > 1.0  # the joint's rows do depend on the bodies
    err = np.abs(K - Kfd).max() / np.abs(Kfd).max()
    assert err < 1e-8, err
    # the geometric stiffness alone (the bodies' blocks without it differ by about α_f λ ∂G/∂q)
    K0 = ga.iterate(s, dt, dd, th, np.zeros(nu), "consistent").K.toarray()
    geometric = np.abs((K - K0)[:6 * nm, :6 * nm]).max()
    assert np.abs((K - K0)[:6 * nm, :6 * nm] - (Kfd - K0)[:6 * nm, :6 * nm]).max() < 1e-6 * max(geometric, 1.0)


def _rotate(q, theta):
    """The orientations ``exp(θ) Λ``, per body (θ spatial)."""
    return np.array([quat_mul(rotvec_quat(t), qi) for t, qi in zip(theta, q)])


@pytest.mark.parametrize("fixed_a", [False, True], ids=["both-moving", "A-fixed"])
@pytest.mark.parametrize("case", list(CASES))
def test_gamma_against_second_differences(case, fixed_a):
    sc = _scenario(case, fixed_a)
    model = Model(sc)
    el = model.elements
    rng = np.random.default_rng(11)
    nm, n = model.n_moving, model.n_all
    v, w, a, al = (np.zeros((n, 3)) for _ in range(4))
    v[:nm], w[:nm], a[:nm], al[:nm] = (rng.normal(size=(nm, 3)) * f for f in (1.0, 2.0, 3.0, 5.0))
    r0 = model.r0 + np.vstack((rng.normal(size=(nm, 3)) * 0.05, np.zeros((n - nm, 3))))
    q0 = _rotate(model.q0, np.vstack((rng.normal(size=(nm, 3)) * 0.2, np.zeros((n - nm, 3)))))

    mech = Mechanism(model)

    def phi(t):
        r = r0 + v * t + 0.5 * a * t * t
        q = _rotate(q0, w * t + 0.5 * al * t * t)
        return mech.evaluate(mech.state(0.0, r, q, v, w)).phi

    h = 1e-4
    phidd = (phi(h) - 2 * phi(0.0) + phi(-h)) / h ** 2
    ev = mech.evaluate(mech.state(0.0, r0, q0, v, w), derivatives=True)
    G = ev.G.toarray()
    gamma = mech.quadratic(mech.state(0.0, r0, q0, v, w))  # γ: Φ̈ = G [a, α] + γ
    acc = np.concatenate([a[:nm], al[:nm]], axis=1).ravel()
    assert np.allclose(G @ acc + gamma, phidd, rtol=1e-5, atol=1e-5 * (1 + np.abs(phidd).max())), \
        (G @ acc + gamma, phidd)
