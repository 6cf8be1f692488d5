"""The linearized equations about a state (THEORY §12).

About (q₀, v₀, λ₀, v̇₀), with δq = [δr, δθ] and δv = [δṙ, δω] per moving body (δθ spatial):

    M δv̇ + C δv + K δq + Gᵀ δλ = B u        G δq = 0
    δq̇ = δv + S δq,   S = blockdiag(0, ω̂₀) per body     (δω = δθ̇ − ω₀ × δθ)
    K = ∂(M v̇₀ + h + Gᵀλ₀ − f)/∂q,   C = ∂(h − f)/∂v

(:meth:`mbsim.mechanics.Mechanism.evaluate`); u are named loads' scale factors (each load's vector
times u: its column of B).  In independent coordinates δq = N z (N an orthonormal basis of G's null
space) and δv = N w − S N z (so that G(δv + S δq) = 0 and ż = w):

    M_r ẇ + C_r w + K_r z = Nᵀ B u,    M_r = NᵀMN,  C_r = Nᵀ(C − MS)N,  K_r = Nᵀ(K − CS)N

and the first-order form x = [z; w], ẋ = A x + B_x u, A = [[0, I], [−M_r⁻¹K_r, −M_r⁻¹C_r]].  At rest
S = 0 and these are the usual M_r, C_r, K_r.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..kernels.rotations import skew


@dataclass(frozen=True, eq=False)
class Linearization:
    """The linearized equations of a mechanism about a state (the module docstring).

    Attributes
    ----------
    bodies : list of str
        The moving bodies, in the order of the unknowns (6 each: [δr, δθ], world axes).
    M, C, K, G, S : scipy.sparse.csr_matrix
        Mass, damping (dampers and gyroscopic terms), stiffness (springs and the joints' reaction
        stiffness), constraint Jacobian (n_own × 6 n_moving) and the kinematic term S (zero at rest).
    state : mbsim.mechanics.mechanism.State
        The state linearized about (with the joints' multipliers).
    accelerations : (n_moving, 6)
        v̇₀ = [a, α] per moving body at that state: zero at an equilibrium.
    inputs : list of str
        The loads chosen as inputs (names), one column each of ``input_forces``.
    input_forces : (6 n_moving, n_inputs)
        The generalized force of a unit scale factor of each input load.
    about : str
        ``equilibrium`` or ``initial``.
    """

    bodies: list
    M: object
    C: object
    K: object
    G: object
    S: object
    state: object
    accelerations: np.ndarray
    inputs: list = field(default_factory=list)
    input_forces: Optional[np.ndarray] = None
    about: str = "equilibrium"

    @property
    def at_rest(self) -> bool:
        """Whether the state is at rest (S = 0)."""
        return self.S.nnz == 0

    @property
    def n(self) -> int:
        """Unknowns of the bodies, 6 n_moving."""
        return self.M.shape[0]

    def null_space(self) -> np.ndarray:
        """An orthonormal basis N (dense, 6 n_moving × dof) of the null space of G (the identity without
        joints): δq = N z are the motions the joints allow."""
        import scipy.linalg as sl
        if self.G.shape[0] == 0:
            return np.eye(self.n)
        return sl.null_space(self.G.toarray())

    def effective(self) -> tuple:
        """(K − C S, C − M S): the stiffness and damping of the independent form (equal to K, C at rest)."""
        if self.at_rest:
            return self.K, self.C
        return (self.K - self.C @ self.S).tocsr(), (self.C - self.M @ self.S).tocsr()

    def reduced(self, N: Optional[np.ndarray] = None) -> tuple:
        """(N, M_r, C_r, K_r) on the null space basis N (computed when not given)."""
        if N is None:
            N = self.null_space()
        K, C = self.effective()
        return N, N.T @ (self.M @ N), N.T @ (C @ N), N.T @ (K @ N)

    def state_space(self, N: Optional[np.ndarray] = None) -> tuple:
        """(A, B, N): the first-order form ẋ = A x + B u in the independent coordinates x = [z; ż]
        (2 dof), δq = N z; B has a column per input load."""
        import scipy.linalg as sl
        N, Mr, Cr, Kr = self.reduced(N)
        d = N.shape[1]
        lu = sl.cho_factor(Mr)
        A = np.zeros((2 * d, 2 * d))
        A[:d, d:] = np.eye(d)
        A[d:, :d] = -sl.cho_solve(lu, Kr)
        A[d:, d:] = -sl.cho_solve(lu, Cr)
        F = self.input_forces if self.input_forces is not None else np.zeros((self.n, 0))
        B = np.zeros((2 * d, F.shape[1]))
        if F.shape[1]:
            B[d:] = sl.cho_solve(lu, N.T @ F)
        return A, B, N


def linearize_state(mech, state, accelerations=None, inputs=(), about: str = "equilibrium") -> Linearization:
    """The :class:`Linearization` of mechanism ``mech`` about ``state`` (its ``lam``: the joints' multipliers)
    with the accelerations ``accelerations`` = (a, α) (n_all, 3) each (None: zero, a state at rest in
    equilibrium); ``inputs`` are names of the scenario's loads."""
    import scipy.sparse as sp
    m = mech.model
    nm = m.n_moving
    ev = mech.evaluate(state, derivatives=True, accelerations=accelerations)
    w = np.asarray(state.w, dtype=float)[:nm]
    blocks = [sp.block_diag((np.zeros((3, 3)), skew(w[i]))) for i in range(nm)]
    S = sp.block_diag(blocks, format="csr") if nm and np.any(w) else sp.csr_matrix((6 * nm, 6 * nm))
    S.eliminate_zeros()
    acc = np.zeros((nm, 6))
    if accelerations is not None:
        acc[:, :3], acc[:, 3:] = np.asarray(accelerations[0])[:nm], np.asarray(accelerations[1])[:nm]
    names = {ld.name: i for i, ld in enumerate(m.scenario.loads)}
    F = np.zeros((6 * nm, len(inputs)))
    for j, name in enumerate(inputs):
        ld = m.scenario.loads[names[name]]
        b = m.index[ld.body]
        rows = slice(6 * b + 3, 6 * b + 6) if ld.type == "torque" else slice(6 * b, 6 * b + 3)
        F[rows, j] = ld.vector
    return Linearization(bodies=list(m.names[:nm]), M=ev.M, C=ev.C, K=ev.K, G=ev.G, S=S, state=state,
                         accelerations=acc, inputs=list(inputs), input_forces=F, about=about)
