"""Modes of the linearized equations (THEORY §12).

Small models (at most :data:`DENSE_LIMIT` unknowns of the bodies) are reduced on a dense basis N of
the constraint null space: undamped at rest, ``K_r φ = ω² M_r φ`` (symmetric, ``scipy.linalg.eigh``);
otherwise the first-order ``[ż; ẇ] = [[0, I], [−M_r⁻¹K_r, −M_r⁻¹C_r]] [z; w]`` (``scipy.linalg.eig``).
Large models never form N: undamped at rest, the lowest modes of the symmetric saddle-point pencil

    [[K, Gᵀ], [G, 0]] x = ω² [[M, 0], [0, 0]] x

by shift-invert Lanczos (ARPACK through ``scipy.sparse.linalg.eigsh``; the shifted matrix is factorized
once by SuperLU); damped or about a motion, the first-order pencil

    [[S, I, 0], [−K, −C, −Gᵀ], [G, 0, 0]] y = s [[I, 0, 0], [0, M, 0], [0, 0, 0]] y,   y = [δq, δv, δλ]

by shift-invert Arnoldi (``eigs``), whose infinite eigenvalues (the algebraic rows) the shift-invert
maps to zero and so never returns.

Per mode: the eigenvalue s (one of each complex-conjugate pair, Im s > 0, and every real one; for an
undamped unstable direction the growing root), the natural frequency |s|/(2π) [Hz], the damping ratio
−Re s/|s|, and the shape δq (6 per moving body, complex, its entry of largest modulus exactly 1).  A
rigid-body mode (|s| at round-off: a motion nothing resists) is reported once per free degree of
freedom, frequency 0, damping ratio NaN, its shape real.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DENSE_LIMIT = 1200  # unknowns of the bodies (6 per moving body) up to which N is formed
ZERO = 1e-9  # an ω² within ZERO of the largest |ω²| is zero (a rigid-body mode)


@dataclass(frozen=True, eq=False)
class ModeSet:
    """Modes of a :class:`mbsim.analysis.linear.Linearization` (the module docstring): ``eigenvalue``
    (K,) complex [1/s], ``frequency`` (K,) [Hz], ``damping_ratio`` (K,), ``rigid_body`` (K,) bool,
    ``shape`` (K, 6 n_moving) complex, ``degrees_of_freedom``, and ``method`` (how they were computed)."""

    eigenvalue: np.ndarray
    frequency: np.ndarray
    damping_ratio: np.ndarray
    rigid_body: np.ndarray
    shape: np.ndarray
    degrees_of_freedom: int
    method: str


def degrees_of_freedom(lin) -> int:
    """6 × moving bodies − independent joint equations (the model has removed the dependent ones)."""
    return lin.n - lin.G.shape[0]


def _normalized(v: np.ndarray) -> np.ndarray:
    """The shape ``v`` scaled so that its entry of largest modulus is exactly 1."""
    v = np.asarray(v, dtype=complex)
    k = int(np.argmax(np.abs(v)))
    if abs(v[k]) == 0:
        return v
    out = v / v[k]
    out[k] = 1.0
    return out


def _undamped(lin) -> bool:
    """Whether the linearization is undamped and conservative at rest: C = 0 and K symmetric (to round-off)."""
    if not lin.at_rest:
        return False
    scale = max(abs(lin.K).max() if lin.K.nnz else 0.0, 1e-300)
    if lin.C.nnz and abs(lin.C).max() > 0:
        return False
    asym = abs(lin.K - lin.K.T).max() if lin.K.nnz else 0.0
    return asym <= 1e-8 * scale


def _assemble(s_list, shapes, rigid, dof, method) -> ModeSet:
    s = np.array(s_list, dtype=complex)
    order = np.lexsort((np.abs(s), ~np.array(rigid, dtype=bool)))  # rigid-body modes first, then by |s|
    s = s[order]
    rigid = np.array(rigid, dtype=bool)[order]
    shapes = np.array([_normalized(shapes[i]) for i in order]) if len(order) else np.zeros((0, 0), complex)
    mag = np.abs(s)
    with np.errstate(invalid="ignore", divide="ignore"):
        zeta = np.where(rigid, np.nan, -s.real / np.where(mag > 0, mag, 1.0) + 0.0)  # (+0.0: no −0)
    freq = np.where(rigid, 0.0, mag / (2 * np.pi))
    s = np.where(rigid, 0.0, s)
    return ModeSet(eigenvalue=s, frequency=freq, damping_ratio=zeta, rigid_body=rigid, shape=shapes,
                   degrees_of_freedom=dof, method=method)


# ------------------------------------------------------------------------------------------------
def _dense(lin, count: int) -> ModeSet:
    import scipy.linalg as sl
    N, Mr, Cr, Kr = lin.reduced()
    d = N.shape[1]
    dof = d
    Ks = 0.5 * (Kr + Kr.T)
    w2, phi = sl.eigh(Ks, Mr)
    scale = float(np.max(np.abs(w2))) if d else 0.0
    zero = np.abs(w2) <= ZERO * scale if scale > 0 else np.ones(d, bool)
    s_list, shapes, rigid = [], [], []
    if _undamped(lin):
        for i in np.flatnonzero(zero):  # rigid-body modes: the null space of the reduced stiffness
            s_list.append(0.0)
            shapes.append(N @ phi[:, i])
            rigid.append(True)
        for i in np.flatnonzero(~zero):
            s_list.append(1j * np.sqrt(w2[i]) if w2[i] > 0 else np.sqrt(-w2[i]))
            shapes.append(N @ phi[:, i])
            rigid.append(False)
        method = "dense, undamped: K_r φ = ω² M_r φ on the constraint null space"
    else:
        lu = sl.cho_factor(Mr)
        A = np.zeros((2 * d, 2 * d))
        A[:d, d:] = np.eye(d)
        A[d:, :d] = -sl.cho_solve(lu, Kr)
        A[d:, d:] = -sl.cho_solve(lu, Cr)
        s, V = sl.eig(A)
        smax = float(np.max(np.abs(s))) if s.size else 0.0
        # rigid-body modes: the null space of A (a free motion: s = 0 with the eigenvector [z; 0], once,
        # however many times s = 0 repeats), its z parts as their shapes
        null = sl.null_space(A, rcond=1e-9) if smax > 0 else np.eye(2 * d)[:, :d]
        for i in range(null.shape[1]):
            s_list.append(0.0)
            shapes.append(N @ null[:d, i])
            rigid.append(True)
        for i in range(s.size):
            if abs(s[i]) <= 1e-6 * smax or smax == 0:
                continue  # (a rigid-body mode's eigenvalue: reported above)
            if s[i].imag < -1e-12 * abs(s[i]):
                continue
            s_i = complex(s[i].real, 0.0) if abs(s[i].imag) <= 1e-12 * abs(s[i]) else s[i]
            s_list.append(s_i)
            shapes.append(N @ V[:d, i])
            rigid.append(False)
        method = "dense, first order: [[0, I], [−M_r⁻¹K_r, −M_r⁻¹C_r]] on the constraint null space"
    ms = _assemble(s_list, shapes, rigid, dof, method)
    return _first(ms, count)


def _first(ms: ModeSet, count: int) -> ModeSet:
    k = min(count, len(ms.eigenvalue))
    return ModeSet(ms.eigenvalue[:k], ms.frequency[:k], ms.damping_ratio[:k], ms.rigid_body[:k], ms.shape[:k],
                   ms.degrees_of_freedom, ms.method)


def _sparse(lin, count: int) -> ModeSet:
    import scipy.sparse as sp
    import scipy.sparse.linalg as sla
    n, n_own = lin.n, lin.G.shape[0]
    dof = degrees_of_freedom(lin)
    kdiag = np.abs(lin.K.diagonal())
    mdiag = lin.M.diagonal()
    ref = float(np.max(kdiag / mdiag)) if n else 1.0
    ref = ref if ref > 0 else 1.0
    if _undamped(lin):
        Ks = (0.5 * (lin.K + lin.K.T)).tocsr()
        A = sp.bmat([[Ks, lin.G.T], [lin.G, None]], format="csc") if n_own else Ks.tocsc()
        B = sp.block_diag((lin.M, sp.csr_matrix((n_own, n_own))), format="csc") if n_own else lin.M.tocsc()
        sigma = -1e-6 * ref
        k = min(count, dof)
        op = sla.splu((A - sigma * B).tocsc())
        OPinv = sla.LinearOperator(A.shape, matvec=op.solve, dtype=float)
        w2, X = sla.eigsh(A, k=k, M=B, sigma=sigma, which="LM", OPinv=OPinv, tol=1e-13)
        scale = max(float(np.max(np.abs(w2))), 1e-300)
        zero = np.abs(w2) <= ZERO * max(scale, ref * 1e-6)
        s_list = [0.0 if z else (1j * np.sqrt(v) if v > 0 else np.sqrt(-v)) for v, z in zip(w2, zero)]
        ms = _assemble(s_list, [X[:n, i] for i in range(k)], list(zero), dof,
                       "sparse shift-invert Lanczos on the saddle-point pencil [[K, Gᵀ], [G, 0]] x = ω² [[M, 0], [0, 0]] x")
        return _first(ms, count)
    # damped, or about a motion: the first-order pencil
    I = sp.identity(n, format="csr")
    Z = sp.csr_matrix((n_own, n_own))
    A = sp.bmat([[lin.S, I, None], [-lin.K, -lin.C, -lin.G.T], [lin.G, None, Z if n_own else None]], format="csc")
    B = sp.block_diag((I, lin.M, Z), format="csc") if n_own else sp.block_diag((I, lin.M), format="csc")
    sigma = -1e-3 * np.sqrt(ref)
    k = min(2 * count + 2, A.shape[0] - 2)
    op = sla.splu((A - sigma * B).tocsc())
    OPinv = sla.LinearOperator(A.shape, matvec=op.solve, dtype=float)
    s, Y = sla.eigs(A, k=k, M=B, sigma=sigma, which="LM", OPinv=OPinv, tol=1e-13)
    smax = float(np.max(np.abs(s))) if s.size else 0.0
    zero = np.abs(s) <= 1e-6 * max(smax, np.sqrt(ref))
    s_list, shapes, rigid = [], [], []
    if zero.any():  # the free motions: as many as independent positions among the s = 0 eigenvectors
        U, sv, _ = np.linalg.svd(np.real_if_close(Y[:n, zero]), full_matrices=False)
        for i in np.flatnonzero(sv > 1e-6 * sv[0]):
            s_list.append(0.0)
            shapes.append(U[:, i].real)
            rigid.append(True)
    for i in np.flatnonzero(~zero):
        if s[i].imag < -1e-12 * abs(s[i]):
            continue
        s_list.append(complex(s[i].real, 0.0) if abs(s[i].imag) <= 1e-12 * abs(s[i]) else s[i])
        shapes.append(Y[:n, i])
        rigid.append(False)
    ms = _assemble(s_list, shapes, rigid, dof, "sparse shift-invert Arnoldi on the first-order pencil")
    return _first(ms, count)


def compute_modes(lin, count: int, dense=None) -> ModeSet:
    """The ``count`` lowest modes of linearization ``lin`` (rigid-body modes first, then by natural
    frequency); ``dense`` forces (True) or forbids (False) the dense path (None: by size)."""
    if dense is None:
        dense = lin.n <= DENSE_LIMIT
    return _dense(lin, count) if dense else _sparse(lin, count)


# ------------------------------------------------------------------------------------------------
def stiffness_spectrum(lin, k: int = 6) -> tuple:
    """The ``k`` eigenvalues ω² of the reduced stiffness (``K_r φ = ω² M_r φ``, K symmetrized) nearest zero
    from below (dense: the lowest), their shapes (6 n_moving each), the scale they are measured against,
    and (sparse) whether the number of eigenvalues below the shift is odd: (w2, shapes, scale, odd)."""
    import scipy.linalg as sl
    if lin.n <= DENSE_LIMIT:
        N, Mr, _, Kr = lin.reduced()
        if N.shape[1] == 0:
            return np.zeros(0), np.zeros((0, lin.n)), 1.0, False
        w2, phi = sl.eigh(0.5 * (Kr + Kr.T), Mr)
        scale = float(np.max(np.abs(w2)))
        return w2[:k], (N @ phi[:, :k]).T, scale, bool(np.count_nonzero(w2 < -ZERO * scale) % 2)
    import scipy.sparse as sp
    import scipy.sparse.linalg as sla
    n_own = lin.G.shape[0]
    Ks = (0.5 * (lin.K + lin.K.T)).tocsr()
    A = sp.bmat([[Ks, lin.G.T], [lin.G, None]], format="csc") if n_own else Ks.tocsc()
    B = sp.block_diag((lin.M, sp.csr_matrix((n_own, n_own))), format="csc") if n_own else lin.M.tocsc()
    ref = float(np.max(np.abs(lin.K.diagonal()) / lin.M.diagonal()))
    ref = ref if ref > 0 else 1.0
    k = min(k, degrees_of_freedom(lin))
    sigma = -1e-6 * ref
    op = sla.splu((A - sigma * B).tocsc())
    OPinv = sla.LinearOperator(A.shape, matvec=op.solve, dtype=float)
    w2, X = sla.eigsh(A, k=k, M=B, sigma=sigma, which="LM", OPinv=OPinv, tol=1e-12)
    order = np.argsort(w2)
    # Sylvester: the saddle-point matrix has n_own negative eigenvalues of its own, the rest are those of
    # K_r − σM_r; the sign of its determinant (from the LU) gives the parity of the ω² below σ
    odd = (_determinant_sign(op) * (-1) ** n_own) < 0
    return w2[order], X[:lin.n, order].T, max(ref, float(np.max(np.abs(w2)))), bool(odd)


def _determinant_sign(lu) -> int:
    """The sign of the determinant of a matrix from its SuperLU factorization (Pr A Pc = L U, L unit lower)."""
    d = lu.U.diagonal()
    sign = -1 if np.count_nonzero(d < 0) % 2 else 1
    for perm in (lu.perm_r, lu.perm_c):
        sign *= _permutation_sign(perm)
    return sign


def _permutation_sign(p: np.ndarray) -> int:
    """+1 for an even permutation, −1 for an odd one (from its cycles)."""
    p = np.asarray(p)
    seen = np.zeros(len(p), bool)
    transpositions = 0
    for i in range(len(p)):
        if seen[i]:
            continue
        j, length = i, 0
        while not seen[j]:
            seen[j] = True
            j = p[j]
            length += 1
        transpositions += length - 1
    return -1 if transpositions % 2 else 1


def stability(lin) -> tuple:
    """(``stable`` | ``unstable`` | ``neutral``, the lowest ω² found, the scale): from the reduced stiffness
    (THEORY §12): all eigenvalues > 0, one < 0, one zero to round-off.  Large models: the eigenvalues
    nearest zero, and the parity of the count below zero from the factorization (an even number of
    negative eigenvalues all far from zero, none near it, would pass unnoticed)."""
    w2, _, scale, odd = stiffness_spectrum(lin, 6)
    if w2.size == 0:
        return "stable", np.inf, scale  # nothing can move
    tol = ZERO * scale if scale > 0 else 0.0
    lowest = float(w2[0])
    if lowest < -tol or odd:
        return "unstable", lowest, scale
    if abs(lowest) <= tol or scale == 0:
        return "neutral", lowest, scale
    return "stable", lowest, scale


def free_loaded_motion(lin, R: np.ndarray, force_scale: float):
    """The free motion (a null vector of the reduced stiffness) along which the residual forces ``R`` (6
    n_moving) have a net component, as (direction δq of unit norm, pushed the way R pushes, the net load
    Rᵀδq); None when every free motion is unloaded (or there is none)."""
    w2, shapes, scale, _ = stiffness_spectrum(lin, lin.n if lin.n <= DENSE_LIMIT else 12)  # every free motion
    if w2.size == 0:
        return None
    zero = np.abs(w2) <= ZERO * scale if scale > 0 else np.ones(w2.size, bool)
    if not zero.any():
        return None
    V = shapes[zero].T  # 6 n_moving × n_free
    Qv, _ = np.linalg.qr(V)
    p = Qv.T @ R
    d = Qv @ p
    norm = float(np.linalg.norm(d))
    if norm == 0 or abs(float(R @ (d / norm))) <= 1e-6 * force_scale:
        return None
    d = d / norm
    return d, float(R @ d)


@dataclass(frozen=True, eq=False)
class Modes:
    """The modes of a mechanism (THEORY §12, OUTPUT.md ``/modes``): K modes, rigid-body modes first, then by
    natural frequency.

    Attributes
    ----------
    bodies : list of str
        Every body of the scenario, in scenario order (fixed bodies' shapes are zero).
    eigenvalue : (K,) complex
        s [1/s]: one of each complex-conjugate pair (Im s > 0) and every real one; 0 for a rigid-body mode.
    frequency : (K,)
        Natural frequency |s|/(2π) [Hz]; 0 for a rigid-body mode.
    damping_ratio : (K,)
        −Re s/|s| (0 undamped; NaN for a rigid-body mode; −1 for an unstable real root).
    rigid_body : (K,) bool
    shape : (K, B, 6) complex
        Per body [δr (m), δθ (rad)] in world axes, the entry of largest modulus exactly 1.
    degrees_of_freedom : int
    linearized_about : str
        ``equilibrium`` or ``initial``.
    stability : str
        Of the state linearized about, from its reduced stiffness: stable, unstable or neutral.
    result : Result
        The one-frame result of that state (positions, reactions, connector forces).
    """

    bodies: list
    eigenvalue: np.ndarray
    frequency: np.ndarray
    damping_ratio: np.ndarray
    rigid_body: np.ndarray
    shape: np.ndarray
    degrees_of_freedom: int
    linearized_about: str
    stability: str
    result: object = None  # the mbsim.api.Result of the state

    def __len__(self) -> int:
        return len(self.frequency)

    def __repr__(self) -> str:
        return (f"<Modes of '{self.result.scenario_name if self.result else ''}': {len(self)} of "
                f"{self.degrees_of_freedom} degrees of freedom, about the {self.linearized_about} state>")

    def of(self, k: int, body: str) -> np.ndarray:
        """Mode ``k``'s (0-based) complex [δr, δθ] of ``body``."""
        return self.shape[k, self.bodies.index(body)]

    def moves_most(self, k: int) -> tuple:
        """(body, 'translation along D' | 'rotation about D'): where mode ``k`` has its entry of largest
        modulus, D the world axis (x, y, z) of that entry."""
        b, j = np.unravel_index(int(np.argmax(np.abs(self.shape[k]))), self.shape[k].shape)
        return self.bodies[b], (f"translation along {'xyz'[j]}" if j < 3 else f"rotation about {'xyz'[j - 3]}")

    def table(self) -> str:
        """The mode table ``mbsim modes`` and ``mbsim info`` print."""
        lines = [f"{'mode':>4}  {'frequency [Hz]':>14}  {'damping ratio':>13}  {'Re s [1/s]':>11}  "
                 f"{'Im s [1/s]':>11}  moves most"]
        for k in range(len(self)):
            body, how = self.moves_most(k)
            if self.rigid_body[k]:
                f, z = "0 (rigid)", "-"
            else:
                f, z = f"{self.frequency[k]:.6g}", f"{self.damping_ratio[k]:.4g}"
            lines.append(f"{k + 1:>4}  {f:>14}  {z:>13}  {self.eigenvalue[k].real:>11.5g}  "
                         f"{self.eigenvalue[k].imag:>11.5g}  {body} ({how})")
        return "\n".join(lines)

    @classmethod
    def _from_data(cls, data: dict, attrs: dict, result=None) -> "Modes":
        ev = np.asarray(data["modes/eigenvalue"], dtype=float)
        return cls(bodies=list(data["bodies/name"]), eigenvalue=ev[:, 0] + 1j * ev[:, 1],
                   frequency=np.asarray(data["modes/frequency"]), damping_ratio=np.asarray(data["modes/damping_ratio"]),
                   rigid_body=np.asarray(data["modes/rigid_body"], dtype=bool),
                   shape=np.asarray(data["modes/shape"]) + 1j * np.asarray(data["modes/shape_imag"]),
                   degrees_of_freedom=int(attrs.get("degrees_of_freedom", -1)),
                   linearized_about=str(attrs.get("linearized_about", "")), stability=str(attrs.get("stability", "")),
                   result=result)
