"""The mechanism at a state: forces, stiffness, damping, mass, constraints (THEORY §12).

:class:`Mechanism` is a model with what every analysis of it shares: the scatter maps of its
unknowns (:class:`mbsim.mechanics.assembly.Assembler`), the linear solver of its Newton system
(:class:`mbsim.linalg.LinearSolver`), and the compiled evaluation of its elements at a state.  The
generalized-α integrator, the initial conditions of a run, its frames, and the analyses at a state
(statics, modes, linearization) all stand on it.

Layouts (docs/develop.md, "The mechanism at a state"):

- the *bodies' unknowns*: 6 per moving body, ``[δr, δθ]`` (δθ a spatial rotation, THEORY §1), the
  moving bodies in the model's internal order (``model.names[:model.n_moving]``); velocities alike,
  ``[δv, δω]``;
- the *own unknowns*: the multipliers of the joints, instance by instance in packed order, row by row
  (``model.elements.unknown_element``: the instance of each; ``unknown_rotation``: a moment or a force);
- a state: positions ``r`` and unit quaternions ``q`` [w, x, y, z], velocities ``v`` and spatial
  angular velocities ``w`` of every body of the model (internal order: the moving bodies first, then
  the fixed ones and ``world``), the time ``t`` and the multipliers ``lam``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..elements.base import DERIVATIVES, DG, GAMMA, JACOBIAN, VALUES, Y_GAMMA, Y_POTENTIAL, Y_POWER, Y_WORK
from ..kernels.rotations import cross, quat_to_matrix
from ..linalg import LinearSolver
from . import blocks as kbl
from . import constrained as kc
from . import evaluate as kev
from . import frames as kfr
from .assembly import Assembler, element_dofs, unknown_blocks
from .joints import SingularJoints


@dataclass(frozen=True, eq=False)
class State:
    """A state of the mechanism: every body's position ``r`` (n_all, 3), unit quaternion ``q`` (n_all, 4),
    velocity ``v`` and angular velocity ``w`` (n_all, 3), in the model's internal order; the time ``t``
    and the own unknowns ``lam`` (the joints' multipliers; None: zero)."""

    r: np.ndarray
    q: np.ndarray
    v: np.ndarray
    w: np.ndarray
    t: float = 0.0
    lam: Optional[np.ndarray] = None


@dataclass(frozen=True, eq=False)
class Evaluation:
    """The mechanism at a state (THEORY §12): ``M v̇ + h + Gᵀλ = f``, ``Φ = 0``.

    Attributes
    ----------
    f : (6 nm,)
        The applied forces and moments about the centres on the moving bodies: gravity, loads and the
        force elements (connectors) [N, N·m].
    h : (6 nm,)
        The gyroscopic terms ``[0, ω × Jω]`` per body.
    constraint : (6 nm,)
        ``Gᵀλ``: the joints' reactions (their negative acts on the bodies), with the forces of their stops
        (THEORY §13: a joint transmits its stop's contact force as part of its reaction).
    M : sparse (6 nm, 6 nm)
        ``blockdiag(m I, J)``, J = Λ J_b Λᵀ.
    K, C : sparse (6 nm, 6 nm) or None
        ``∂(M v̇ + h + Gᵀλ − f)/∂q`` and ``∂(h + Gᵀλ − f)/∂v`` (with ``derivatives``; v̇ as given, else 0): the
        joints' reaction stiffness and the gyroscopic terms included.
    phi : (n_own,)
        The joints' rows Φ − F(t) (m or rad).
    G : sparse (n_own, 6 nm) or None
        ``∂Φ/∂q`` (with ``derivatives``).
    force, moment : (n, 3); length, potential, power : (n,)
        Per element instance (packed order, ``Mechanism.model.elements``): the force on body A and its
        moment on A about its point, the distance between its points (NaN without), its stored energy,
        the power it dissipates.
    """

    f: np.ndarray
    h: np.ndarray
    constraint: np.ndarray
    M: object  # scipy.sparse.csr_matrix (SciPy's sparse matrices are imported when first needed)
    K: object
    C: object
    phi: np.ndarray
    G: object
    force: np.ndarray
    moment: np.ndarray
    length: np.ndarray
    potential: np.ndarray
    power: np.ndarray


class Mechanism:
    """A model and what every analysis of it shares (the module docstring)."""

    def __init__(self, model):
        self.model = model
        self.el = model.elements.arrays()
        self.dofs = element_dofs(model)  # the bodies' unknowns of each instance's local entries
        self._work = kev.work(model.elements.n)
        self._all = np.ones(len(model.elements.kinds), np.int64)
        self._nodr = np.zeros((0, 3))
        self._solver = None

    def _build(self):
        """The scatter maps and the linear solver (made when first needed: a state's f, K, C, Φ, G do not
        need them, the Newton system does)."""
        model = self.model
        asm = self._assembler = Assembler(model)
        blocks, last = unknown_blocks(model) if model.elements.n_unknowns else (None, ())
        self._solver = LinearSolver(model.ndof, asm.indptr, asm.indices, asm.rows, asm.cols, asm.coupling,
                                    blocks=blocks, last=last, n_moving=model.n_moving)
        asm.use_storage(self._solver.storage_map, self._solver.storage_size)
        self._elx = element_arrays(model, asm)
        self._lu = (np.zeros(self._solver.factor_size), np.zeros(model.ndof, np.int64), np.zeros(2))

    @property
    def work(self) -> tuple:
        """(x, y, dy, arms): every element instance's rows of an evaluation (:mod:`mbsim.elements.base`),
        the work arrays of :meth:`evaluate` and of the integrators' compiled loops (one thread at a time)."""
        return self._work

    @property
    def assembler(self) -> Assembler:
        """The scatter maps of the Newton system (:class:`mbsim.mechanics.assembly.Assembler`)."""
        if self._solver is None:
            self._build()
        return self._assembler

    @property
    def solver(self) -> LinearSolver:
        """The linear solver of the Newton system (:class:`mbsim.linalg.LinearSolver`)."""
        if self._solver is None:
            self._build()
        return self._solver

    @property
    def elx(self) -> tuple:
        """:func:`element_arrays` with the assembler's maps."""
        if self._solver is None:
            self._build()
        return self._elx

    @property
    def lu(self) -> tuple:
        """(factors, pivots, [1 if the factors are a factorization, its Δt]): the factorization of the
        Newton system, kept between calls (modified Newton)."""
        if self._solver is None:
            self._build()
        return self._lu

    # --------------------------------------------------------------------------------------------
    def state(self, t: float = 0.0, r=None, q=None, v=None, w=None, lam=None) -> State:
        """A state (the initial one of the model for what is not given)."""
        m = self.model
        pick = (lambda x, d: np.array(d if x is None else x, dtype=float))
        return State(pick(r, m.r0), pick(q, m.q0), pick(v, m.v0), pick(w, m.w0), float(t),
                     None if lam is None else np.asarray(lam, dtype=float))

    def _own(self, s, target=None) -> tuple:
        n = self.model.elements.n_unknowns
        lam = np.zeros(n) if getattr(s, "lam", None) is None else np.ascontiguousarray(s.lam, dtype=float)
        if target is None:
            target = self.model.targets([s.t])[0, 0]
        return lam, np.ascontiguousarray(target, dtype=float)

    def _evaluate(self, s, want, kinds=None):
        R = quat_to_matrix(np.asarray(s.q, dtype=float))
        failed = kev.at_state(self.el, (R, np.ascontiguousarray(s.r, dtype=float), self._nodr,
                                        np.ascontiguousarray(s.v, dtype=float), np.ascontiguousarray(s.w, dtype=float)),
                              self._own(s), float(s.t), want, self._work, self._all if kinds is None else kinds)
        return R, failed

    def evaluate(self, s, derivatives: bool = False, accelerations=None) -> Evaluation:
        """The mechanism at state ``s`` (:class:`Evaluation`); with ``derivatives`` its stiffness K, damping
        C and constraint Jacobian G, about the accelerations ``accelerations`` = (a, α) (n_all, 3) each
        (default zero: the state at rest, or a linearization about a motion with v̇ = 0)."""
        import scipy.sparse as sp  # (0.1 s to import: not at mbsim's import, a run needs none)
        m, el = self.model, self.model.elements
        nm, n = m.n_moving, el.n
        R, failed = self._evaluate(s, DERIVATIVES | JACOBIAN if derivatives else VALUES)
        if failed >= 0:
            raise ValueError(f"at t = {s.t:g} s {el.failure(failed)}")
        x, y, dy, arms = self._work
        Q, Kq, Kv = np.zeros((n, 12)), np.zeros((n, 12, 12)), np.zeros((n, 12, 12))
        phi, G = np.zeros(el.n_unknowns), np.zeros((el.n_unknowns, 12))
        kbl.at_state(self.el, y, dy, arms, np.ascontiguousarray(s.w, dtype=float), (Q, Kq, Kv, phi, G))
        dofs = self.dofs[:, :12]
        ndb = 6 * nm
        # the elements' forces: the force elements' into f, the joints' (−Gᵀλ) into the constraint forces
        joint = np.repeat(el.own > 0, 12)
        keep = dofs.ravel() >= 0
        f_el = np.bincount(dofs.ravel()[keep & ~joint], Q.ravel()[keep & ~joint], minlength=ndb)
        constraint = -np.bincount(dofs.ravel()[keep & joint], Q.ravel()[keep & joint], minlength=ndb)
        F, Mo, _, _ = m.external(s.t)
        f = f_el + np.concatenate((F[:nm], Mo[:nm]), axis=1).ravel()
        J = R[:nm] @ m.inertia[:nm] @ R[:nm].transpose(0, 2, 1)
        w = np.asarray(s.w, dtype=float)[:nm]
        Jw = np.einsum("nij,nj->ni", J, w)
        h = np.concatenate((np.zeros((nm, 3)), cross(w, Jw)), axis=1).ravel()
        mb = np.zeros((nm, 6, 6))
        mb[:, [0, 1, 2], [0, 1, 2]] = m.mass[:nm, None]
        mb[:, 3:, 3:] = J
        M = _block_diagonal(mb)
        K = C = Gs = None
        if derivatives:
            K = self._sparse(Kq, dofs, ndb)
            C = self._sparse(Kv, dofs, ndb)
            a, al = (np.zeros((m.n_all, 3)), np.zeros((m.n_all, 3))) if accelerations is None else accelerations
            al = np.asarray(al, dtype=float)[:nm]
            # ∂(Jα)/∂θ = J α̂ − (Jα)^, ∂h/∂θ = ω̂ (J ω̂ − (Jω)^), ∂h/∂ω = ω̂ J − (Jω)^, body by body
            Ja = np.einsum("nij,nj->ni", J, al)
            W, A, SJa, SJw = _skews(w), _skews(al), _skews(Ja), _skews(Jw)
            kb, cb = np.zeros((nm, 6, 6)), np.zeros((nm, 6, 6))
            kb[:, 3:, 3:] = J @ A - SJa + W @ (J @ W - SJw)
            cb[:, 3:, 3:] = W @ J - SJw
            if nm:
                K = (K + _block_diagonal(kb)).tocsr()
                C = (C + _block_diagonal(cb)).tocsr()
            rows = np.repeat(np.arange(el.n_unknowns), 12)
            owner_dofs = dofs[el.unknown_element] if el.n_unknowns else np.zeros((0, 12), np.int64)
            cols = owner_dofs.ravel()
            ok = cols >= 0
            Gs = sp.csr_matrix((G.ravel()[ok], (rows[ok], cols[ok])), shape=(el.n_unknowns, ndb))
        force, moment = -y[:, 0:3].copy(), y[:, 3:6].copy()
        length = np.where(el.kind_points[el.kind] != 0, np.linalg.norm(x[:, 0:3], axis=1), np.nan) if n else np.zeros(0)
        return Evaluation(f=f, h=h, constraint=constraint, M=M, K=K, C=C, phi=phi, G=Gs, force=force, moment=moment,
                          length=length, potential=y[:, Y_POTENTIAL].copy(), power=y[:, Y_POWER].copy())

    @staticmethod
    def _sparse(blocks, dofs, nd):
        """Σ over instances of their 12×12 ``blocks`` at the bodies' unknowns ``dofs`` (fixed bodies' dropped)."""
        import scipy.sparse as sp
        n = blocks.shape[0]
        r = np.broadcast_to(dofs[:, :, None], (n, 12, 12)).ravel()
        c = np.broadcast_to(dofs[:, None, :], (n, 12, 12)).ravel()
        ok = (r >= 0) & (c >= 0)
        return sp.csr_matrix((blocks.ravel()[ok], (r[ok], c[ok])), shape=(nd, nd))

    # --------------------------------------------------------------------------------------------
    def constrained(self, s):
        """The joints' constrained equations at state ``s`` (:mod:`mbsim.mechanics.constrained`): ``(x, lam)``
        with ``x`` (n_moving, 6) the accelerations [a, α] and ``lam`` the multipliers.  Raises SingularJoints
        when the joints' equations are dependent there."""
        m = self.model
        nm, n_own, n = m.n_moving, m.elements.n_unknowns, m.elements.n
        F, Mo, _, _ = (x[0] for x in m.external_many(np.array([s.t])))
        target = m.targets([s.t])[0, 2]
        W = m.elements.width
        x, y, dy, arms = self._work
        data = np.zeros(self.solver.storage_size) if self.solver.dense else self.lu[0]
        ndof = m.ndof
        work = (np.empty((m.n_all, 3, 3)), np.empty(nm), np.empty((nm, 3, 3)), np.zeros(ndof), np.zeros(ndof),
                np.zeros(ndof), np.zeros(max(18 * nm, ndof)), x, y, dy, arms, np.zeros((1, W, W)), np.zeros((n, W)),
                np.zeros((max(W - 12, 1), 12)), self._all, np.zeros(n_own), self._nodr)
        xs, lam = np.zeros((nm, 6)), np.zeros(n_own)
        bad = kc.solve((nm, m.mass, m.inertia),
                       tuple(np.ascontiguousarray(z, dtype=float) for z in (s.r, s.q, s.v, s.w)) + (float(s.t),),
                       (F, Mo, np.ascontiguousarray(target)), self.el, self.elx,
                       (self.solver.lu, self.assembler.body_pos, data, *self.lu),
                       work, (xs, lam))
        if bad >= 0:
            raise SingularJoints(f"the joints' equations are singular at t = {s.t:g} (zero pivot in "
                                 f"{self.pivot_block(bad)})")
        return xs, lam

    def accelerations(self, s):
        """The accelerations (a, α) (n_all, 3) of every body at state ``s`` and the joints' multipliers
        (None without joints): from all forces (THEORY §4), with joints from the constrained equations
        (THEORY §11)."""
        m = self.model
        nm = m.n_moving
        a, al = np.zeros((m.n_all, 3)), np.zeros((m.n_all, 3))
        if m.elements.n_unknowns:
            x, lam = self.constrained(s)
            a[:nm], al[:nm] = x[:, :3], x[:, 3:]
            return a, al, lam
        R, _ = self._evaluate(s, VALUES)  # (an element undefined here: the first step says so)
        F, M, _, _ = m.external(s.t)
        Q = _body_forces(self._work[1], self._work[3])
        el = m.elements
        for lo, hi in zip(el.start[:-1], el.start[1:]):  # kind by kind (the summation order of the results)
            ia, ib = el.body[lo:hi, 0], el.body[lo:hi, 1]
            np.add.at(F, ia, Q[lo:hi, 0:3])
            np.add.at(M, ia, Q[lo:hi, 3:6])
            np.add.at(F, ib, Q[lo:hi, 6:9])
            np.add.at(M, ib, Q[lo:hi, 9:12])
        R = R[:nm]
        J = R @ m.inertia[:nm] @ R.transpose(0, 2, 1)
        w = np.asarray(s.w, dtype=float)[:nm]
        gyro = np.cross(w, np.einsum("nij,nj->ni", J, w))
        a[:nm] = F[:nm] / m.mass[:nm, None]
        al[:nm] = np.linalg.solve(J, (M[:nm] - gyro)[..., None])[..., 0]
        return a, al, None

    def powers(self, s) -> tuple[float, float]:
        """Dissipated power of the elements and power of the loads (and of the elements whose work is external,
        THEORY §13) at state ``s`` [W]."""
        m = self.model
        self._evaluate(s, VALUES)
        y = self._work[1]
        start = m.elements.start
        pd = sum(float(y[lo:hi, Y_POWER].sum()) for lo, hi in zip(start[:-1], start[1:]))  # kind by kind
        pw = sum(float(y[lo:hi, Y_WORK].sum()) for k, (lo, hi) in enumerate(zip(start[:-1], start[1:]))
                 if m.elements.kind_works[k])
        _, _, FL, ML = m.external(s.t)
        pe = float(np.sum(FL * s.v) + np.sum(ML * s.w)) + pw
        return pd, pe

    def quadratic(self, s) -> np.ndarray:
        """γ: the part of the joints' Φ̈ quadratic in the velocities at state ``s`` (Φ̈ = G v̇ + γ, THEORY
        §11): the laws' γ_f and the arms' centripetal part ``g_d·(ω_B×(ω_B×z_B) − ω_A×(ω_A×z_A))``."""
        el = self.model.elements
        self._evaluate(s, JACOBIAN | GAMMA)
        x, y, dy, arms = self._work
        w = np.asarray(s.w, dtype=float)
        out = np.zeros(el.n_unknowns)
        for e in np.flatnonzero(el.own):
            a, b = el.body[e]
            zA, zB = arms[e, 0:3], arms[e, 3:6]
            cd = np.cross(w[b], np.cross(w[b], zB)) - np.cross(w[a], np.cross(w[a], zA))
            for i in range(el.own[e]):
                out[el.first[e] + i] = y[e, Y_GAMMA + i] + dy[e, DG + 9 * i:DG + 9 * i + 3] @ cd
        return out

    def jacobian(self, s) -> tuple:
        """The joints' rows Φ − F(t) and their Jacobian G (sparse, n_own × 6 n_moving) at state ``s``."""
        ev = self.evaluate(s, derivatives=True)
        return ev.phi, ev.G

    def frame(self, s, dissipated: float = 0.0, external_work: float = 0.0, a=None, al=None) -> dict:
        """OUTPUT.md per-frame arrays of state ``s`` (keyed by dataset path), from the compiled loop's own frame
        code (:func:`mbsim.mechanics.frames.frame_row`); ``_finite`` says whether the element actions,
        energies and momenta are finite."""
        m = self.model
        bufs = kfr.buffers(m.n_bodies, m.n_connectors, 1, m.n_joints)
        lam, target = self._own(s)
        order = m.order if m.order.dtype == np.int64 else m.order.astype(np.int64)
        x, y, dy, arms = self._work
        zero = np.zeros((m.n_all, 3))
        finite = kfr.frame_row((m.mass, m.inertia, m.gravity, order),
                               tuple(np.ascontiguousarray(z, dtype=float) for z in
                                     (s.r, s.q, s.v, s.w, zero if a is None else a, zero if al is None else al))
                               + (np.array([dissipated, external_work]),),
                               (lam, target, float(s.t)), self.el, self.elx,
                               (np.empty((m.n_all, 3, 3)), x, y, dy, arms, self._all, np.empty(9), self._nodr),
                               tuple(bufs[k] for k in kfr.BUFFERS), 0)
        fr = {k: v[0] for k, v in kfr.datasets(bufs, 1, None).items() if k != "time"}
        fr["time"] = s.t
        fr = {k: float(v) if np.ndim(v) == 0 else v for k, v in fr.items()}
        fr["_finite"] = bool(finite)
        return fr

    def pivot_block(self, culprit: int) -> str:
        """What a singular pivot block (``culprit``, :func:`mbsim.kernels.lu.factorize`) is: a moving body's,
        or an element's own unknowns (the dense LU: ``n_moving`` + the unknown; the block LU: the block)."""
        m = self.model
        nm = m.n_moving
        if culprit < nm:
            return f"the block of moving body '{m.names[culprit]}'"
        if self.solver.strategy == "block":
            u = int(np.flatnonzero(self.solver.blocks == culprit)[0]) - 6 * nm
        else:
            u = culprit - nm
        return f"the own unknowns of {m.elements.describe(int(m.elements.unknown_element[u]))}"


def _skews(v: np.ndarray) -> np.ndarray:
    """The cross-product matrices of the rows of ``v`` (n, 3) → (n, 3, 3)."""
    out = np.zeros((len(v), 3, 3))
    out[:, 0, 1], out[:, 0, 2], out[:, 1, 2] = -v[:, 2], v[:, 1], -v[:, 0]
    out[:, 1, 0], out[:, 2, 0], out[:, 2, 1] = v[:, 2], -v[:, 1], v[:, 0]
    return out


def _block_diagonal(blocks: np.ndarray):
    """The sparse (CSR) block-diagonal matrix of the 6×6 ``blocks`` (n, 6, 6), zeros dropped."""
    import scipy.sparse as sp
    n = len(blocks)
    base = 6 * np.arange(n)[:, None, None]
    r = np.broadcast_to(base + np.arange(6)[None, :, None], blocks.shape).ravel()
    c = np.broadcast_to(base + np.arange(6)[None, None, :], blocks.shape).ravel()
    v = blocks.ravel()
    keep = v != 0
    return sp.csr_matrix((v[keep], (r[keep], c[keep])), shape=(6 * n, 6 * n))


def _body_forces(y, arms) -> np.ndarray:
    """``Q = Jᵀp`` of every instance (n, 12) from an evaluation (:func:`mbsim.mechanics.chain.body_forces`,
    in numpy: a caller from Python saves the loading of one more compiled function)."""
    pd, pa, pb = y[:, 0:3], y[:, 3:6], y[:, 6:9]
    return np.concatenate((-pd, pa - np.cross(arms[:, 0:3], pd), pd, np.cross(arms[:, 3:6], pd) + pb), axis=1)


def element_arrays(model, assembler=None) -> tuple:
    """What the compiled engine needs of the elements beyond their packed description: ``(index, joint,
    stiff, ref, owner, rotation, dofs, pos, arm, dissipates, works, remembers)`` -- the scenario rows, whether
    joints, the
    stiffnesses and arm lengths (the round-off floor), the m_ref or J_ref of each own unknown
    (:attr:`mbsim.model.Model.unknown_reference`), the instance and kind of each own unknown, the
    assembler's scatter maps (empty without an assembler) and, per kind, whether its instances can dissipate,
    whether its work is external work and whether its instances count turns."""
    el = model.elements
    w = el.width
    if assembler is not None:
        maps = (assembler.el_dofs, assembler.el_pos)
    else:
        maps = (np.zeros((0, w), np.int64), np.zeros((0, w * w), np.int32))
    return (el.index, el.joint, el.stiff, np.ascontiguousarray(model.unknown_reference, dtype=float),
            el.unknown_element, el.unknown_rotation.astype(np.int64)) + maps + (el.arm, el.kind_dissipates,
                                                                               el.kind_works, el.kind_remembers)

