#!/usr/bin/env python3
r"""Reference natural frequencies of a planar hanging chain of rigid rods (numpy/scipy only).

Used by ``benchmarks/modes.py`` to judge ``mbsim modes`` and Exudyn's
``ComputeODE2Eigenvalues``; written independently of both (joint angles,
not bodies and constraints).

The model
---------
N identical uniform rods, each of length l and mass m, transverse moment of
inertia J about its centre (J = m l²/12 for a slender rod), hang one below
the other from a fixed hinge at the origin; every hinge is a revolute joint
whose axis is normal to the plane of motion.  Gravity g points down.  Rod k
(k = 0 … N−1) hangs from hinge k at depth k·l and has its centre at depth
(k + ½)·l when the chain hangs straight down (the static equilibrium).

Coordinates: the absolute angles θ_k of the rods from the downward vertical
(θ_k = φ_0 + … + φ_k for the relative joint angles φ; the frequencies do not
depend on that choice).  In the plane (x horizontal, z up)

    c_k = Σ_{j<k} l (sin θ_j, −cos θ_j) + (l/2)(sin θ_k, −cos θ_k)

is the centre of rod k.

Mass matrix
-----------
The kinetic energy is T = Σ_k ½ m |ċ_k|² + ½ J θ̇_k².  About θ = 0 the
vertical velocities are of second order and the horizontal ones linear,
ẋ_k = Σ_j a_kj θ̇_j with a_kj = l (j < k), l/2 (j = k), 0 (j > k), so to
second order T = ½ θ̇ᵀ M_θ θ̇ with M_θ = m AᵀA + J·I, i.e. (0-based, i ≤ j)

    (M_θ)_ij = m l² [ (N − 1 − j) + ½ ]           for i < j
    (M_θ)_ii = m l² [ (N − 1 − i) + ¼ ] + J        (= m l² (N − 1 − i + ⅓) for J = m l²/12)

(rod i carries the N − 1 − i rods below it as point-like translations of its
lower end, and its own mass about its hinge: m l²/4 + J = m l²/3).

Stiffness matrix
----------------
The potential is V = Σ_k m g z_k with z_k = −Σ_{j<k} l cos θ_j − (l/2) cos θ_k;
cos θ ≈ 1 − θ²/2 gives V = const + ½ θᵀ K_θ θ with the diagonal

    (K_θ)_ii = m g l [ (N − 1 − i) + ½ ] = m g l (N − i − ½),

the weight hanging below hinge i times the lever of each rod's centre (no
coupling: in absolute angles the gravity stiffness of each rod is its own).

The eigenproblem M_θ θ̈ + K_θ θ = 0, θ = Θ sin ωt gives K_θ Θ = ω² M_θ Θ; both
matrices are symmetric and M_θ positive definite, so ``scipy.linalg.eigh``;
f = ω / 2π in Hz.  M_θ is ill-conditioned for long chains (condition number
5e6 for N = 1000), and eigh's lowest eigenvalue is then off by 2e-10
(relative); each ω² is therefore taken as the Rayleigh quotient
ΘᵀK_θΘ / ΘᵀM_θΘ of eigh's eigenvector Θ, whose error is quadratic in the
eigenvector's: for N = 1000 it agrees with a further step of inverse
iteration to 1e-15.

Closed forms (checked by :func:`checks`)
----------------------------------------
N = 1 (a rod hinged at its end): ω² = m g (l/2) / (m l²/4 + J) = m g (l/2) / (m l²/3) = 3g / (2l).

N = 2: M_θ = m l² [[4/3, 1/2], [1/2, 1/3]], K_θ = m g l diag(3/2, 1/2); with
μ = ω² l / g, det(K_θ − ω² M_θ) = 0 is (3/2 − 4μ/3)(1/2 − μ/3) − μ²/4 = 0,
i.e. 7 μ² − 42 μ + 27 = 0, μ = 3 ∓ 6/√7 (0.7322 and 5.2678).

N → ∞ with N l = L fixed (the continuous hanging chain, Bernoulli/Euler):
ω_k = (j_{0,k} / 2) √(g / L), j_{0,k} the k-th zero of the Bessel function J0
(1.2024, 2.7600, 4.3269, … times √(g/L)).  The rods' own inertia and the
discretisation make the chain of N rods differ by O(k²/N²) for mode k.

:func:`checks` also builds M_θ and K_θ for small N a second way, by finite
differences of the exact nonlinear kinematics and potential, so the formulas
above are checked against the Lagrangian they linearise, not only against
themselves.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import eigh
from scipy.special import jn_zeros

G = 9.81  # gravity [m/s²]
LENGTH = 1.0  # total length of the chain [m]
MASS = 1.0  # total mass of the chain [kg]


def chain_matrices(n: int, length: float = LENGTH, mass: float = MASS, g: float = G,
                   inertia: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """M_θ and K_θ (N × N) of N rods of length ``length``/N and mass ``mass``/N in absolute angles;
    ``inertia``: each rod's transverse moment about its centre (default m l²/12)."""
    if n < 1:
        raise ValueError("n must be >= 1")
    l, m = length / n, mass / n
    J = m * l * l / 12.0 if inertia is None else float(inertia)
    below = (n - 1 - np.arange(n)).astype(float)  # rods below rod i
    # (M)_ij = m l² (N − 1 − max(i, j) + ½) off the diagonal
    M = m * l * l * (np.minimum.outer(below, below) + 0.5)
    M[np.diag_indices(n)] = m * l * l * (below + 0.25) + J
    K = np.diag(m * g * l * (below + 0.5))
    return M, K


def chain_frequencies(n: int, count: int = 10, length: float = LENGTH, mass: float = MASS, g: float = G,
                      inertia: float | None = None) -> np.ndarray:
    """The lowest ``count`` natural frequencies [Hz] of the hanging chain of ``n`` rods (ascending;
    fewer if ``n`` < ``count``).  See the module's docstring for M_θ and K_θ."""
    M, K = chain_matrices(n, length, mass, g, inertia)
    k = min(int(count), n)
    _, V = eigh(K, M, subset_by_index=[0, k - 1])
    w2 = np.einsum("ik,ij,jk->k", V, K, V) / np.einsum("ik,ij,jk->k", V, M, V)  # Rayleigh quotients
    return np.sqrt(np.sort(w2)) / (2.0 * math.pi)


def continuous_frequencies(count: int = 10, length: float = LENGTH, g: float = G) -> np.ndarray:
    """The lowest ``count`` frequencies [Hz] of the continuous hanging chain: (j_{0,k}/2) √(g/L) / 2π."""
    return jn_zeros(0, count) / 2.0 * math.sqrt(g / length) / (2.0 * math.pi)


# ----------------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------------
def _numeric_matrices(n: int, length: float = LENGTH, mass: float = MASS, g: float = G,
                      inertia: float | None = None, h: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """M_θ and K_θ from the exact nonlinear model: M = m JᵀJ + J_rot I with J the Jacobian of the
    rods' centres (central differences) at θ = 0, K the Hessian of the potential (central differences)."""
    l, m = length / n, mass / n
    Jr = m * l * l / 12.0 if inertia is None else float(inertia)

    def centres(theta):
        tip = np.zeros(2)
        out = np.empty((n, 2))
        for k in range(n):
            d = np.array([math.sin(theta[k]), -math.cos(theta[k])]) * l
            out[k] = tip + 0.5 * d
            tip = tip + d
        return out

    def potential(theta):
        return m * g * centres(theta)[:, 1].sum()

    z = np.zeros(n)
    E = np.eye(n)
    jac = np.stack([(centres(z + h * E[i]) - centres(z - h * E[i])).ravel() / (2 * h) for i in range(n)], axis=1)
    M = m * jac.T @ jac + Jr * np.eye(n)
    K = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            K[i, j] = (potential(z + h * (E[i] + E[j])) - potential(z + h * (E[i] - E[j]))
                       - potential(z - h * (E[i] - E[j])) + potential(z - h * (E[i] + E[j]))) / (4 * h * h)
    return M, K


def checks(length: float = LENGTH, mass: float = MASS, g: float = G, sizes=(10, 100, 1000), count: int = 10) -> dict:
    """The closed-form checks of the module's docstring, as relative errors (and, for the continuous
    chain, the relative differences of the lowest ``count`` frequencies for each N of ``sizes``)."""
    out = {}
    # N = 1: ω² = m g (l/2) / (m l²/3)
    m, l = mass, length
    f1 = math.sqrt(m * g * (l / 2) / (m * l * l / 3)) / (2 * math.pi)
    out["n1"] = abs(chain_frequencies(1, 1, length, mass, g)[0] / f1 - 1.0)
    # N = 2: ω² = (g/l)(3 ∓ 6/√7), l = length/2
    l2 = length / 2
    f2 = np.sqrt(np.array([3 - 6 / math.sqrt(7), 3 + 6 / math.sqrt(7)]) * g / l2) / (2 * math.pi)
    out["n2"] = float(np.max(np.abs(chain_frequencies(2, 2, length, mass, g) / f2 - 1.0)))
    # the matrices against the nonlinear Lagrangian, N = 2 … 6 (finite differences: ~1e-8)
    worst = 0.0
    for n in range(2, 7):
        Ma, Ka = chain_matrices(n, length, mass, g)
        Mn, Kn = _numeric_matrices(n, length, mass, g)
        worst = max(worst, np.abs(Ma - Mn).max() / np.abs(Ma).max(), np.abs(Ka - Kn).max() / np.abs(Ka).max())
    out["matrices_vs_lagrangian"] = float(worst)
    # the continuous chain (a limit, not an identity)
    out["continuous"] = {}
    for n in sizes:
        k = min(count, n)
        out["continuous"][n] = (chain_frequencies(n, k, length, mass, g)
                                / continuous_frequencies(k, length, g) - 1.0).tolist()
    return out


def _main() -> int:
    c = checks()
    print(f"N = 1 against sqrt(m g l/2 / (m l^2/3)) / 2 pi: relative error {c['n1']:.1e}")
    print(f"N = 2 against (g/l)(3 -+ 6/sqrt 7): relative error {c['n2']:.1e}")
    print(f"M_theta, K_theta against finite differences of the nonlinear Lagrangian (N = 2..6): "
          f"{c['matrices_vs_lagrangian']:.1e}")
    for n, rel in c["continuous"].items():
        print(f"N = {n:>5} against the continuous chain, modes 1..{len(rel)}: "
              + " ".join(f"{x:+.1e}" for x in rel))
    ok = c["n1"] < 1e-12 and c["n2"] < 1e-12 and c["matrices_vs_lagrangian"] < 1e-6
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(_main())
