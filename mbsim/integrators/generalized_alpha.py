"""Generalized-α on rigid bodies with Cayley rotation increments (THEORY §2, §4, §5, §10).

:class:`GeneralizedAlpha` owns the time-discrete residual and tangent of one
step and the Newton iteration that solves it.  It never raises on numerical
trouble: :meth:`GeneralizedAlpha.step` returns a :class:`StepResult` whose
``status`` says what happened, and the driver decides (stop, or later cut
the step).

Unknowns.  Each moving body's unknowns are the step's increments
themselves: the translation ``d = r' − r_n`` and the Cayley step vector
``θ = cayvec(Λ'Λ_nᵀ)`` (THEORY §4), not the absolute position and
orientation.  ``r' = r_n + d`` and ``Λ' = cay(θ)Λ_n`` are formed for the
forces, while a', v', ω', α' are computed from d and θ directly, so the
factor 1/(βΔt²) never multiplies the cancellation ``r' − r_n``.  A Newton
correction (Δr, Δθ) is the spatial one of THEORY §1: ``d ← d + Δr`` and
``θ ← cayvec(cay(Δθ)cay(θ))`` (the exact composition, ``(Δθ + θ + ½Δθ×θ) /
(1 − ¼Δθ·θ)``), so the tangent K = −∂R/∂u is unchanged.

The Newton iteration exists once, in the compiled step loop
(:func:`mbsim.kernels.stepper.run`): :meth:`GeneralizedAlpha.step` takes one
step through it and :meth:`GeneralizedAlpha.advance_frames` whole frames, for
every linear solver.  What it does:

Newton stopping test (documented for users in docs/newton.md).  Every
iteration k ≥ 1 evaluates the residual R_k at the iterate u_k and solves
for the next correction Δu_k = K⁻¹R_k with the factorization in use.  With
the contraction rate ρ_k = ‖Δu_k‖/‖Δu_{k−1}‖ (in the max-norm that weighs
each body's translation and rotation by its tolerance), the distance from u_k to the
solution of the step is at most ‖Δu_k‖/(1 − ρ_k) (a contraction's
a-posteriori bound), and u_k -- whose residual was evaluated -- is accepted
when that bound is within tolerance, body by body and kind by kind; or, when
ρ_k‖Δu_k‖/(1 − ρ_k) is (the bound of u_k + Δu_k, with every unknown weighed,
those of rows at round-off too), Δu_k is applied and the step stops, without
another residual (SciPy's BDF, RADAU5):

    translation: |e| ≤ min(tol(r'), tol(v')/g, tol(a')/c_a)         [m]
    rotation:    |e| ≤ min(tol(1 rad), tol(ω')/G, tol(α')/C)         [rad]
    tol(x) = atol + rtol·|x|,  g = γ/(βΔt),  c_a = 1/(βΔt²),
    where, inside tol(a'), |a'| stands for max(|a'|, |Q_r|/(α_m m)) (the forces acting per
    unit mass) and, inside tol(α'), |α'| for max(|α'|, |Q_θ|/(α_m J_max)),
    G = g·t + |ω'|,  C = c_a·t + |α'|,  t = 1 + |θ|/2 + |θ|²/4 ≥ ‖T(θ)‖

because an error e of the unknowns is an error e, g·e and c_a·e of the
position, velocity and acceleration written (Dv' = gΔr, Da' = c_aΔr;
|Dω'| ≤ G|Δθ|, |Dα'| ≤ C|Δθ|, THEORY §4).  The acceleration bound is the
one that matters at small steps: an acceleration error δa held over the
run moves velocities by about t·δa whatever Δt, where a bound on the
increments alone would let velocities drift as 1/Δt.  A body's force or
moment rows whose residual is within :data:`ROUNDOFF_FACTOR`·ε of the
magnitudes that cancel in them (see :func:`mbsim.kernels.stepper._tolerances`)
are converged as far as floating point allows and drop out of the test;
an element's own unknowns (λ̃ = λ/k, a length or an angle, see
:mod:`mbsim.elements.base`) are weighed against the tolerance of the bodies
it joins, and their rows must hold in their own units, |Φ| ≤ tol;
and a correction below :data:`NOISE_SIZE` of the tolerance ends the
iteration, since the rate measured between such corrections is noise.
Where the joints' equations are nearly dependent (a dead point), ε in their
rows moves the bodies by ε/σ, above the tolerance: a correction that, with a
tangent factorized in the step, shrank by less than 4× and is no larger than
the solve of the rows' round-off (:func:`mbsim.kernels.stepper._noise_size`)
ends the iteration too (counted in ``n_floor``, docs/newton.md).

Modified Newton keeps a factorization while ρ ≤ :data:`CONTRACTION_LIMIT`
and refreshes it at the current iterate otherwise (the bound is then
taken from two corrections of the new factorization).  A step fails when
the iteration limit is reached, when R or Δu is not finite, when the
residual has grown in 3 consecutive iterations or exceeds 1e8 times its
initial value, when the tangent is singular, or when a connector is
degenerate (a spring with L0 > 0 collapsed to L = 0).
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from ..assembly import Assembler, unknown_blocks
from ..diagnostics import FRAME_BUFFER_KEYS, frame_buffers
from ..linalg import LinearSolver
from ..model.kinematics import Kinematics
from ..model.model import Model
from ..model.rotations import (cay, cay_compose, cayvec_quat, cross, matvec, quat_conj, quat_mul, quat_to_matrix,
                               tmatvec)
from ..scenario.spec import IntegratorSpec


# Round-off floor of the stopping test: an iterate whose residual rows are within
# ROUNDOFF_FACTOR·ε of the magnitudes that cancel in them (the forces summed into the row
# and the inertia of the terms that form the new accelerations) is converged to machine
# precision (see GeneralizedAlpha._tolerances).
ROUNDOFF_FACTOR = 16.0
_EPS = float(np.finfo(float).eps)

# A correction at most this fraction of the tolerance ends the iteration whatever the measured
# rate: that small, a correction is dominated by round-off and the rate measured between two
# of them is noise, while any contraction faster than 0.99 still bounds the error by the tolerance.
NOISE_SIZE = 0.01

# A step that evaluated this many residuals or more hands the next step a fresh
# factorization (made with its first residual, at no extra evaluation): the kept one
# contracts too slowly for the motion, where a fresh tangent takes two.
SLOW_STEP = 3

# So does a step that stopped after two residuals on a thin margin, its error bound
# ρ‖Δu‖/(1 − ρ) above this fraction of the tolerance: the kept factorization contracts more
# slowly every step as the bodies turn, and the next step would need a third residual or,
# worse, a refresh in the middle (two more evaluations).  On the revolute chain of
# benchmarks/joint_chain.py 0.5 gave the fewest evaluations for the factorizations it costs
# (docs/newton.md, "Modified Newton").
THIN_MARGIN = 0.5

# Modified Newton keeps a factorization while each correction is at most this
# fraction of the one before; a slower contraction means the tangent has
# drifted too far, and it is recomputed at the current iterate.
CONTRACTION_LIMIT = 0.05


class SingularJoints(RuntimeError):
    """The joints' equations are dependent at a state (a redundant joint, or a lock-up)."""


@dataclass(frozen=True)
class AlphaParameters:
    """Generalized-α parameters from ρ∞ (THEORY §2)."""

    rho_inf: float
    alpha_f: float
    alpha_m: float
    beta: float
    gamma: float

    @classmethod
    def from_rho(cls, rho: float) -> "AlphaParameters":
        af = 1.0 / (1.0 + rho)
        am = (2.0 - rho) / (1.0 + rho)
        return cls(rho_inf=rho, alpha_f=af, alpha_m=am,
                   beta=0.25 * (1.0 + am - af) ** 2, gamma=0.5 + am - af)


@dataclass(frozen=True, eq=False)
class State:
    """Integrator state at time ``t`` for all bodies (internal order, ``(n_all, ·)``).

    ``dissipated`` and ``external_work`` are the energy integrals of THEORY §9
    since t = 0; ``power_diss``/``power_ext`` the rates at this state (for the
    trapezoidal rule of the next step).  ``a_prev``/``al_prev`` are the
    accelerations one step earlier and ``dt_prev`` that step's size, ``a_prev2``/``al_prev2``/``dt_prev2``
    the same one step further back: only the Newton predictor reads them
    (:meth:`GeneralizedAlpha.predict`), and :meth:`GeneralizedAlpha.restart` drops them (and
    ``lam_prev``, ``lam_gap``: the own unknowns of the step before and how long before ``lam``'s they
    belong, ``lam_prev2``, ``lam_gap2`` the same one step further back, the start of the next step's
    own unknowns, docs/newton.md).  ``lam`` holds the elements' own
    unknowns (a joint's multipliers, physical: N or N·m) of the step that led here,
    which belong to t − Δt + α_f Δt (THEORY §11), or, at t = 0 and after a restart,
    those of the constrained equations at t (:meth:`GeneralizedAlpha.multipliers`);
    the residual does not read them, only the Newton start of the next step and the
    drives' work, so the steps after a stored frame still depend on that frame alone.
    """

    t: float
    r: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    w: np.ndarray
    al: np.ndarray
    dissipated: float = 0.0
    external_work: float = 0.0
    power_diss: float = 0.0
    power_ext: float = 0.0
    a_prev: Optional[np.ndarray] = None
    al_prev: Optional[np.ndarray] = None
    dt_prev: float = 0.0
    lam: Optional[np.ndarray] = None  # None: zero
    lam_prev: Optional[np.ndarray] = None  # lam of the step before (None: no history)
    lam_gap: float = 0.0  # the time from lam_prev's to lam's (0: no history)
    a_prev2: Optional[np.ndarray] = None  # the accelerations two steps back (None: not known)
    al_prev2: Optional[np.ndarray] = None
    dt_prev2: float = 0.0  # the size of the step before the last one (0: not known)
    lam_prev2: Optional[np.ndarray] = None  # lam two steps back (None: not known)
    lam_gap2: float = 0.0  # the time from lam_prev2's to lam_prev's (0: not known)

    def kinematics(self) -> Kinematics:
        return Kinematics.at_state(self.r, self.q, self.v, self.w)


class StepStatus(enum.Enum):
    CONVERGED = "converged"
    MAX_ITERATIONS = "max_iterations"
    DIVERGED = "diverged"
    NONFINITE = "nonfinite"
    SINGULAR = "singular"
    DEGENERATE = "degenerate"


@dataclass(eq=False)
class StepResult:
    """Outcome of one step: ``state`` is the new state when ``status`` is CONVERGED."""

    status: StepStatus
    iterations: int
    residual_norm: float
    message: str = ""
    state: Optional[State] = None
    history: list = field(default_factory=list)  # residual norms, one per iterate

    @property
    def ok(self) -> bool:
        return self.status is StepStatus.CONVERGED


class GeneralizedAlpha:
    """One generalized-α step of a :class:`Model`, solved by Newton–Raphson.

    Counters: ``n_steps``, ``n_iterations`` (Newton corrections applied), ``n_assemblies``,
    ``n_floor`` (steps whose iteration stopped at the round-off floor of the joints' equations:
    docs/newton.md) and the linear solver's ``nlu``.
    """

    name = "generalized-alpha"

    def __init__(self, model: Model, spec: IntegratorSpec):
        self.model = model
        self.spec = spec
        self.params = AlphaParameters.from_rho(spec.rho_inf)
        asm = self.assembler = Assembler(model)
        blocks, last = unknown_blocks(model) if model.elements.n_unknowns else (None, ())
        self.solver = LinearSolver(model.ndof, asm.indptr, asm.indices, asm.rows, asm.cols, asm.coupling,
                                   blocks=blocks, last=last)
        asm.use_storage(self.solver.storage_map, self.solver.storage_size)
        self.n_steps = 0
        self.n_iterations = 0
        self.n_assemblies = 0
        self.n_floor = 0  # steps ended at the round-off floor of the joints' equations (docs/newton.md)
        # largest principal moment of inertia and longest connector arm |Z| of each moving body
        # (the rotational rows of _tolerances and their round-off)
        nm = model.n_moving
        self._j_max = model.j_max
        el = model.elements
        arm = np.zeros(model.n_all)
        for side in range(2):
            np.maximum.at(arm, el.body[:, side], el.arm[:, side])
        self._arm = arm[:nm]
        self._fused = None  # arguments of the compiled step loop, built at its first use
        # wall time per phase of the Newton iteration [s] (benchmarks/chain.py --profile)
        self.timing = {k: 0.0 for k in ("bodies", "elements", "assembly", "factorization", "solve", "energy")}
        self.clock = time.perf_counter

    # ------------------------------------------------------------------
    def initial_state(self) -> State:
        """State at t = 0 with the physical initial accelerations (THEORY §4); with joints those
        of the constrained equations, and their multipliers (THEORY §11, initial conditions: the
        model has made the velocities consistent with the joints, :mod:`mbsim.model.constraints`)."""
        m = self.model
        if not m.elements.n_unknowns:
            a, al = m.initial_accelerations(0.0)
            s = State(0.0, m.r0.copy(), m.q0.copy(), m.v0.copy(), a, m.w0.copy(), al)
        else:
            nm = m.n_moving
            x, lam = self.constrained(0.0, m.r0, m.q0, m.v0, m.w0)
            a, al = np.zeros_like(m.v0), np.zeros_like(m.w0)
            a[:nm], al[:nm] = x[:, :3], x[:, 3:]
            s = State(0.0, m.r0.copy(), m.q0.copy(), m.v0.copy(), a, m.w0.copy(), al, lam=lam)
        pd, pe = self.powers(s)
        return replace(s, power_diss=pd, power_ext=pe)

    def constrained(self, t: float, r, q, v, w, velocities: bool = False):
        """The joints' constrained equations at one state (:func:`mbsim.kernels.stepper.constrained`):
        ``(x, lam)`` with ``x`` (n_moving, 6) the accelerations [a, α] and ``lam`` the multipliers, or
        with ``velocities`` the velocities [v, ω] closest to ``v, w`` that satisfy the joints.  Raises
        SingularJoints when the joints' equations are dependent there."""
        from ..kernels import stepper
        m = self.model
        if self._fused is None:
            self._fused = self._fused_arguments()
        f = self._fused
        F, M, _, _ = (x[0] for x in m.external_many(np.array([t])))  # as the compiled loop's frames
        target = m.targets([t])[0, 1 if velocities else 2]
        x, lam, bad = stepper.constrained(-2 if velocities else -1, m.n_moving, r, q, v, w, m.mass, m.inertia, F, M,
                                          target, f["elements"], self.assembler.body_pos, self.assembler.size,
                                          f["structure"], f["lu_data"], f["lu_piv"], f["lu_state"])
        if bad >= 0:
            raise SingularJoints(f"the joints' equations are singular at t = {t:g} "
                                 f"(zero pivot in {self._pivot_block(bad)})")
        return x, lam

    def multipliers(self, s: State) -> Optional[np.ndarray]:
        """The joints' multipliers of state ``s`` from the constrained equations (THEORY §11,
        reactions), None without joints."""
        if not self.model.elements.n_unknowns:
            return None
        return self.constrained(s.t, s.r, s.q, s.v, s.w)[1]

    def powers(self, s: State) -> tuple[float, float]:
        """Dissipated power of the dampers and power of the loads at a state [W]."""
        power, start = self.model.element_actions(s.kinematics()).power, self.model.elements.start
        pd = sum(float(power[lo:hi].sum()) for lo, hi in zip(start[:-1], start[1:]))  # kind by kind
        _, _, FL, ML = self.model.external(s.t)
        pe = float(np.sum(FL * s.v) + np.sum(ML * s.w))
        return pd, pe

    # ------------------------------------------------------------------
    def prepare(self, s: State, dt: float) -> "_StepContext":
        """Per-step constants: external loads at n+α, material inertia terms at n, predictors."""
        m, p = self.model, self.params
        nm = m.n_moving
        af, am, beta, gamma = p.alpha_f, p.alpha_m, p.beta, p.gamma
        Rn = quat_to_matrix(s.q)
        F1, M1, _, _ = m.external(s.t + dt)
        Fn, Mn, _, _ = m.external(s.t)
        Jb = m.inertia[:nm]
        Wn = tmatvec(Rn[:nm], s.w[:nm])
        An = tmatvec(Rn[:nm], s.al[:nm])
        c_a = 1.0 / (beta * dt * dt)
        return _StepContext(
            s=s, dt=dt, g=gamma / (beta * dt), c_a=c_a, Rn=Rn,
            F_ext=(af * F1 + (1 - af) * Fn)[:nm], M_ext=(af * M1 + (1 - af) * Mn)[:nm],
            Xn=(1 - am) * matvec(Jb, An) + (1 - af) * cross(Wn, matvec(Jb, Wn)),
            a_pred=-s.v / (beta * dt) + (1 - 0.5 / beta) * s.a,
            w_pred=(1 - gamma / beta) * s.w + dt * (1 - 0.5 * gamma / beta) * s.al,
            al_pred=-s.w / (beta * dt) + (1 - 0.5 / beta) * s.al,
            Krr=(am * m.mass[:nm] * c_a)[:, None, None] * np.eye(3))

    def evaluate(self, ctx: "_StepContext", d: np.ndarray, th: np.ndarray,
                 tangent: Optional[str] = None, lam: Optional[np.ndarray] = None) -> "_Iterate":
        """Residual (and tangent data if ``tangent``) at the iterate with increments ``(d, th)``
        and element-owned unknowns ``lam`` (physical; zero when not given) (THEORY §4–7, §11; see
        :meth:`predict` for what they are), from the compiled kernels: the body terms
        (:mod:`mbsim.kernels.bodies`) and every element's law (:mod:`mbsim.elements.engine`)."""
        from ..elements.engine import evaluate_at
        from ..kernels import bodies as kb
        from ..kernels import connectors as kc
        self.n_assemblies += 1
        m, p, clock, asm = self.model, self.params, self.clock, self.assembler
        nm, n = m.n_moving, m.n_all
        s = ctx.s
        t0 = clock()
        R1, T, Om = np.empty((n, 3, 3)), np.empty((n, 3, 3)), np.empty((n, 3, 3))
        r1, v1, a1, w1, al1 = (np.empty((n, 3)) for _ in range(5))
        q1 = np.empty((n, 4))
        kb.kinematics(d, th, s.q, s.r, s.v, s.a, s.w, s.al, ctx.dt, ctx.c_a, ctx.g, p.gamma, ctx.a_pred,
                      ctx.w_pred, ctx.al_pred, r1, q1, R1, T, Om, v1, a1, w1, al1, True)
        kin = Kinematics(alpha_f=p.alpha_f, R1=R1, Rn=ctx.Rn, r1=r1, rn=s.r, v1=v1, vn=s.v, w1=w1, wn=s.w,
                         g=ctx.g, T=T, Omega=Om, dr=np.ascontiguousarray(d, dtype=float))
        R, Q = np.zeros(asm.ndof), np.zeros(asm.ndof)  # the rows of own unknowns: the elements' alone
        Ktt = np.empty((nm, 3, 3)) if tangent is not None else np.empty((1, 3, 3))
        kb.residual(nm, m.mass, m.inertia, R1, ctx.Rn, T, a1, s.a, w1, al1, ctx.F_ext[None], ctx.M_ext[None], 0,
                    ctx.Xn, p.alpha_f, p.alpha_m, ctx.c_a, ctx.g, tangent is not None, R, Q, Ktt,
                    np.empty(kc.SCRATCH))
        t1 = clock()
        ev = evaluate_at(m.elements, kin, tangent, lam, m.unknown_reference * ctx.c_a, m.targets([s.t + ctx.dt])[0, 0])
        t2 = clock()
        kb.scatter_residual(asm.el_dofs, ev.residual, R, Q)
        data = None
        if tangent is not None:
            data = np.zeros(asm.size)
            kb.scatter_bodies(asm.body_pos, ctx.Krr[:, 0, 0].copy(), Ktt, data)
            kb.scatter_tangent(asm.el_pos, ev.tangent, data)
        self.timing["bodies"] += t1 - t0
        self.timing["elements"] += t2 - t1
        self.timing["assembly"] += clock() - t2
        return _Iterate(R=R, Q=Q, data=data, elements=ev, d=d, theta=th, r1=r1, q1=q1, a1=a1, v1=v1, w1=w1,
                        al1=al1)

    def step(self, s: State, dt: float) -> StepResult:
        """Advance ``s`` by ``dt``; never raises on numerical trouble.

        The step is the compiled loop's (:mod:`mbsim.kernels.stepper`, one step): the one
        Newton iteration of mbsim, for every linear solver and every stepping mode.  With
        modified Newton the factorization in use is kept from step to step while Δt does not
        change, and a step that fails while reusing an old factorization is tried once more
        with a fresh tangent at every iteration before it is reported as failed.
        """
        res = self._one_step(s, dt, modified=self.spec.modified)
        if not res.ok and self.spec.modified and res.status is not StepStatus.DEGENERATE:
            res = self._one_step(s, dt, modified=False)
        return res

    def _one_step(self, s: State, dt: float, modified: bool) -> StepResult:
        from ..kernels import stepper
        times = s.t + dt * np.arange(2)
        b = self._block(s, times[None, :], 1, keep_factorization=True, modified=modified)
        status = np.zeros(6, np.int64)
        taken = stepper.advance(1, dt, status, *self._arguments(b))
        new = self._after_block(s, b, float(times[taken]), taken)
        k, nh = int(status[3]), int(status[5])
        history = [float(x) for x in b["hist"][:nh]]
        residual = history[-1] if history else np.nan
        if taken == 1:
            return StepResult(StepStatus.CONVERGED, k, residual, "", new, history)
        status_, message = self._failure(int(status[2]), int(status[4]), b["R"])
        return StepResult(status_, k, residual, message, None, history)

    def _failure(self, reason: int, culprit: int, R: np.ndarray) -> tuple:
        """StepStatus and message of a step the compiled loop gave up (``reason``: a code of
        :mod:`mbsim.kernels.stepper`; ``culprit`` the element or body it names; ``R`` the last residual)."""
        from ..kernels import stepper as st
        m = self.model
        if reason == st.DEGENERATE:
            return StepStatus.DEGENERATE, m.elements.failure(culprit)
        if reason == st.SINGULAR:
            return StepStatus.SINGULAR, f"the tangent matrix is singular (zero pivot in {self._pivot_block(culprit)})"
        if reason == st.NONFINITE_RESIDUAL:
            return StepStatus.NONFINITE, "the residual is not finite"
        if reason == st.NONFINITE_CORRECTION:
            return StepStatus.NONFINITE, "the Newton correction is not finite"
        status, msg = {st.MAX_ITERATIONS: (StepStatus.MAX_ITERATIONS,
                                           f"no convergence in {self.spec.max_iterations} Newton iterations"),
                       st.GREW: (StepStatus.DIVERGED, "the residual grew in 3 consecutive iterations"),
                       st.BLEW_UP: (StepStatus.DIVERGED, "the residual grew by more than 1e8")}[reason]
        return status, msg + "; " + self._culprit(R)

    # ------------------------------------------------------------------
    def warm_up(self, s: State, dt: float, frame_every: int) -> None:
        """Call every compiled kernel a run from ``s`` will use, so that numba
        compiles them (the first run on a machine: about a minute) or loads
        them from its cache now rather than inside the timed time loop.

        One Python-driven step of ``dt`` and, when ``frame_every`` (steps
        between frames) is not 0, empty calls of the compiled loops; the
        integrator's counters, timings and factorization are put back as they
        were, so the run that follows is unchanged.
        """
        kept = None if self._fused is None else {k: self._fused[k].copy() for k in ("lu_state", "lu_data", "lu_piv")}
        saved = (self.n_steps, self.n_iterations, self.n_assemblies, self.n_floor, self.solver.nlu, dict(self.timing))
        try:
            with np.errstate(all="ignore"):
                self.step(s, dt)
                if frame_every and self.can_advance:
                    self.advance(s, dt, 0)
                    self.advance_frames(s, dt, 0, 0, frame_every,
                                        frame_buffers(self.model.n_bodies, self.model.n_connectors, 1,
                                                  self.model.n_joints))
        finally:
            (self.n_steps, self.n_iterations, self.n_assemblies, self.n_floor, self.solver.nlu, timing) = saved
            if kept is not None:  # the factorization in use, as it was
                for k, v in kept.items():
                    self._fused[k][:] = v
            elif self._fused is not None:
                self._fused["lu_state"][:] = 0.0
            self.timing.clear()
            self.timing.update(timing)

    def continue_counts(self, steps: int, iterations: int) -> None:
        """Count on from a resumed run's ``steps`` and Newton ``iterations`` (the file's counters)."""
        self.n_steps = int(steps)
        self.n_iterations = int(iterations)

    @property
    def can_advance(self) -> bool:
        """Whether :meth:`advance` and :meth:`advance_frames` can take blocks of steps in compiled
        code: with every linear solver (block tree LU, dense LU, block sparse LU), when a body moves."""
        return self.model.n_moving > 0

    def advance(self, s: State, dt: float, nsteps: int):
        """Up to ``nsteps`` steps of size ``dt`` in one compiled loop (:mod:`mbsim.kernels.stepper`).

        The same steps as :meth:`step` (the Python code is the specification);
        a step that does not converge is not taken, and the caller redoes it
        with :meth:`step`, which diagnoses it.  Starts with a fresh tangent.

        Returns
        -------
        state : State
            After the steps taken (``t`` = s.t + taken·dt).
        taken : int
        iterations, residuals : arrays (nsteps,)
            Newton iterations and final residual norm of each step taken.
        """
        from ..kernels import stepper
        times = s.t + dt * np.arange(nsteps + 1)
        b = self._block(s, times[None, :], nsteps)
        taken = stepper.advance(nsteps, dt, np.zeros(6, np.int64), *self._arguments(b))
        new = self._after_block(s, b, float(times[taken]), taken)
        return new, taken, b["iterations"][:taken], b["residuals"][:taken]

    def advance_frames(self, s: State, dt: float, k0: int, nframes: int, spf: int, buffers: dict):
        """Up to ``nframes`` output frames of ``spf`` steps each in one compiled call
        (:func:`mbsim.kernels.stepper.advance_frames`), the frame quantities written
        to row ``f`` of ``buffers`` (see :func:`frame_buffers`).

        ``s`` is the state at step ``k0`` (``t = k0·dt``); the steps are the ones
        :meth:`advance` takes one frame at a time, to the last bit.

        Returns
        -------
        state : State
            After the steps taken (``t`` = (k0 + steps)·dt).
        frames : int
            Frames completed (their rows in ``buffers`` are filled).
        steps : int
            Steps taken in all (``frames·spf`` plus those of an unfinished frame).
        flag : int
            0, or why fewer than ``nframes`` frames were completed:
            1 -- the state at the end of the next frame was not finite (the
            steps of that frame are not counted and ``state`` is its start);
            2 -- its connector actions, energies or momenta were not finite
            (``state`` is the frame's state).  With 0 and ``frames < nframes``
            a step did not converge: ``state`` is the one before it.
        iterations, residuals : arrays (steps,)
        """
        from ..kernels import stepper
        nsteps = nframes * spf
        # t_k = k·dt by multiplication at every frame start, as the driver computes it
        starts = (k0 + spf * np.arange(nframes)) * dt
        times = starts[:, None] + dt * np.arange(spf + 1)
        b = self._block(s, times, nsteps, ends=(k0 + spf * np.arange(1, nframes + 1)) * dt)
        status = np.zeros(6, np.int64)
        o = self.model.order
        frames = stepper.advance_frames(
            nframes, spf, dt, *self._arguments(b),
            o if o.dtype == np.int64 else o.astype(np.int64),
            *(buffers[k] for k in FRAME_BUFFER_KEYS), status)
        steps = frames * spf + (int(status[0]) if status[1] != 1 else 0)
        new = self._after_block(s, b, (k0 + steps) * dt, steps)
        return new, frames, steps, int(status[1]), b["iterations"][:steps], b["residuals"][:steps]

    def _block(self, s: State, times: np.ndarray, nsteps: int, keep_factorization: bool = False,
               modified: Optional[bool] = None, ends=None) -> dict:
        """The arguments of the compiled loops for ``nsteps`` steps from ``s``.

        ``times`` is ``(blocks, steps per block + 1)``: the step ends of each
        block, at which the loads are evaluated (at n+α between two of them).
        ``ends`` are the times of the frames' states as the driver gives them (k·Δt; default the
        blocks' last step ends), at which the joints' reactions are solved for.
        A block starts with a fresh tangent unless ``keep_factorization`` (:meth:`step`: the
        loop reuses the factorization in use if it was made for the same Δt); ``modified``
        overrides the scenario's choice of modified Newton.
        """
        t0 = self.clock()
        m, p = self.model, self.params
        nm, af = m.n_moving, p.alpha_f
        F, M, FL, ML = m.external_many(times.ravel())
        nb, w = times.shape
        F, M, FL, ML = (x.reshape((nb, w) + x.shape[1:]) for x in (F, M, FL, ML))
        F_alpha = np.ascontiguousarray((af * F[:, 1:] + (1 - af) * F[:, :-1])[:, :, :nm].reshape(nsteps, nm, 3))
        M_alpha = np.ascontiguousarray((af * M[:, 1:] + (1 - af) * M[:, :-1])[:, :, :nm].reshape(nsteps, nm, 3))
        FL = np.ascontiguousarray(FL[:, 1:].reshape((nsteps,) + FL.shape[2:]))
        ML = np.ascontiguousarray(ML[:, 1:].reshape((nsteps,) + ML.shape[2:]))
        # the drives' values at the step ends, and the loads and drives at the frames (mbsim.kernels.stepper.run)
        n_own = m.elements.n_unknowns
        TG = m.targets(times.ravel()).reshape(nb, w, 3, n_own)
        ends = times[:, -1] if ends is None else np.asarray(ends, dtype=float)
        if n_own:
            FE, ME, _, _ = m.external_many(ends)
            FE, TGE = np.concatenate((FE, ME), axis=2), m.targets(ends)
        else:
            FE, TGE = np.zeros((nb, m.n_all, 6)), np.zeros((nb, 3, 0))
        if self._fused is None:
            self._fused = self._fused_arguments()
        f = self._fused
        energy = np.array([s.dissipated, s.external_work, s.power_diss, s.power_ext])
        history = self._history(s)
        if not keep_factorization:
            f["lu_state"][0] = 0.0  # a fresh tangent at the start of every block (= after every frame)
        spec = self.spec
        modified = spec.modified if modified is None else modified
        iterations, residuals = np.zeros(nsteps, dtype=np.int64), np.zeros(nsteps)
        counters = np.zeros(4, dtype=np.int64)
        return {
            "t0": t0,
            "state": tuple(x.copy() for x in (s.r, s.q, s.v, s.a, s.w, s.al)) + history + (energy, self._lam(s))
            + self._lam_history(s),
            "model": (nm, m.mass, m.inertia, self._j_max, self._arm, af, p.alpha_m, p.beta, p.gamma),
            "loads": (F_alpha, M_alpha, FL, ML, TG, FE, TGE),
            "elements": f["elements"],
            "solver": (self.assembler.body_pos, self.assembler.size, *f["structure"],
                       {"consistent": 1, "seed": 2}[spec.tangent], modified, spec.max_iterations, spec.rtol,
                       spec.atol, ROUNDOFF_FACTOR, NOISE_SIZE, CONTRACTION_LIMIT, SLOW_STEP,
                       THIN_MARGIN),
            "work": (f["lu_data"], f["lu_piv"], f["lu_state"], iterations, residuals, counters, f["hist"], f["R"]),
            "iterations": iterations, "residuals": residuals, "counters": counters, "hist": f["hist"], "R": f["R"],
        }

    def _arguments(self, b: dict) -> tuple:
        """The arguments of :func:`mbsim.kernels.stepper.run` from ``r`` to ``R_out``."""
        return (*b["state"], self.model.gravity, *b["model"], *b["loads"], *b["elements"], *b["solver"], *b["work"])

    def _after_block(self, s: State, b: dict, t: float, steps: int) -> State:
        """Count the work of a compiled block (``steps`` steps kept) and return its final state at time ``t``."""
        counters = b["counters"]
        self.n_steps += steps
        self.n_iterations += int(counters[0])
        self.solver.nlu += int(counters[1])
        self.n_assemblies += int(counters[2])
        self.n_floor += int(counters[3])
        r, q, v, a, w, al, a_prev, al_prev, prev_dt, energy, lam, lam_prev, lam_gap = b["state"]
        dt_prev, dt_prev2 = (float(x) for x in prev_dt)
        dt_prev2 = dt_prev2 if dt_prev > 0.0 else 0.0
        own = len(lam) > 0
        gap, gap2 = (float(x) if own else 0.0 for x in lam_gap)
        gap2 = gap2 if gap > 0.0 else 0.0
        new = State(t, r, q, v, a, w, al, float(energy[0]), float(energy[1]), float(energy[2]), float(energy[3]),
                    a_prev[0] if dt_prev > 0.0 else None, al_prev[0] if dt_prev > 0.0 else None, dt_prev,
                    lam if own else None, lam_prev[0] if gap > 0.0 else None, gap,
                    a_prev[1] if dt_prev2 > 0.0 else None, al_prev[1] if dt_prev2 > 0.0 else None, dt_prev2,
                    lam_prev[1] if gap2 > 0.0 else None, gap2)
        self.timing["compiled steps"] = self.timing.get("compiled steps", 0.0) + self.clock() - b["t0"]
        return new

    @staticmethod
    def _levels(shape, pairs) -> tuple:
        """Up to two levels of history ``[(values, time), …]`` (the newest first) as the compiled loop's
        ``(2, *shape)`` values and ``(2,)`` times; a level is kept only when it and every newer one are
        known (values not None, time > 0), and an unknown one is zeros (the loop then extrapolates
        through fewer points, docs/newton.md)."""
        values, times = np.zeros((2, *shape)), np.zeros(2)
        for k, (x, h) in enumerate(pairs):
            if x is None or not h > 0.0:
                break
            values[k], times[k] = x, h
        return values, times

    def _history(self, s: State) -> tuple:
        """``(a_prev, al_prev, prev_dt)`` of ``s`` for the compiled loop: the accelerations one and two
        steps back and those steps' sizes (see :meth:`_levels`)."""
        a, dt = self._levels(s.a.shape, [(s.a_prev, s.dt_prev), (s.a_prev2, s.dt_prev2)])
        al, _ = self._levels(s.al.shape, [(s.al_prev, s.dt_prev), (s.al_prev2, s.dt_prev2)])
        return a, al, dt

    def _lam_history(self, s: State) -> tuple:
        """``(lam_prev, lam_gap)`` of ``s`` for the compiled loop: the own unknowns of the step before and
        the one before that, and how long before the newer values they belong (see :meth:`_levels`)."""
        return self._levels((self.model.elements.n_unknowns,), [(s.lam_prev, s.lam_gap), (s.lam_prev2, s.lam_gap2)])

    def _lam(self, s: State) -> np.ndarray:
        """A copy of the elements' own unknowns of ``s`` (zero when it has none)."""
        n = self.model.elements.n_unknowns
        return np.zeros(n) if s.lam is None else np.array(s.lam, dtype=float)

    def _fused_arguments(self) -> dict:
        """The packed elements for the compiled loop, and its factorization storage."""
        from ..kernels import stepper
        none = np.zeros(0, np.int64)
        solver = self.solver
        if solver.strategy == "tree":  # (parent, order, dense positions, sym): which LU the loop runs
            structure, size = (*solver.tree, none, none), self.assembler.size
        elif solver.strategy == "block":
            structure, size = (none, none, none, solver.sym), self.assembler.size
        else:
            structure, size = (none, none, solver.dense_positions, none), self.model.ndof ** 2
        return {"elements": stepper.element_arguments(self.model, self.assembler), "structure": structure,
                "lu_data": np.zeros(size),
                "lu_piv": np.zeros(self.model.ndof, np.int64), "lu_state": np.zeros(2),
                "hist": np.zeros(2 * self.spec.max_iterations + 2), "R": np.zeros(self.model.ndof)}

    def predict(self, s: State, dt: float):
        """Start of the Newton iteration, as increments ``(d, θ)`` (``(n_all, 3)`` each, zero for
        fixed bodies).

        Newmark's own relations with the new accelerations extrapolated from the
        last three steps, ``a'`` the parabola through ``a_n``, ``a_prev`` and
        ``a_prev2`` (at t_n, t_n − Δt_prev and t_n − Δt_prev − Δt_prev2) at
        t_n + Δt, the line through the first two when only they are known:
        ``d = Δt v_n + Δt²((½−β) a_n + β a')`` and, since Newmark holds for the
        material vectors (THEORY §4), ``θ = Δt ω_n + Δt²((½−β) α_n + β cay(θ₀)ᵀα')``
        with ``θ₀ = Δt ω_n + ½Δt² α_n``.  Without a previous step (t = 0, after
        :meth:`restart`) a' = a_n, the constant-acceleration Taylor step.
        THEORY §4 starts from ``r' = r_n``, ``Λ' = Λ_n``; any start converges to
        the same solution, and this one is within O(Δt⁵) of it (O(Δt⁴) with one
        previous step, O(Δt³) without), which saves about one Newton iteration
        per step on smooth motion.
        """
        from ..kernels.stepper import _extrapolation
        nm, beta = self.model.n_moving, self.params.beta
        d, th = np.zeros_like(s.r), np.zeros_like(s.r)
        v, a, w, al = s.v[:nm], s.a[:nm], s.w[:nm], s.al[:nm]
        th0 = dt * w + 0.5 * dt * dt * al
        if s.a_prev is None or not s.dt_prev > 0.0:
            d[:nm] = dt * v + 0.5 * dt * dt * a
            th[:nm] = th0
            return d, th
        a_hist, al_hist, (h1, h2) = self._history(s)
        e0, e1, e2 = _extrapolation(dt, 0.0, -h1, -h1 - h2, True, h2 > 0.0)
        a1 = e0 * a + e1 * a_hist[0, :nm] + e2 * a_hist[1, :nm]
        al1 = e0 * al + e1 * al_hist[0, :nm] + e2 * al_hist[1, :nm]
        d[:nm] = dt * v + dt * dt * ((0.5 - beta) * a + beta * a1)
        th[:nm] = dt * w + dt * dt * ((0.5 - beta) * al + beta * tmatvec(cay(th0), al1))
        return d, th

    def restart(self, s: State) -> State:
        """``s`` without the history the next step would use: the previous accelerations of the
        predictor and the factorization in use.  The driver restarts at every stored frame, so
        that the steps after a frame depend on that frame alone (a resumed run repeats them to
        the last bit)."""
        if self._fused is not None:
            self._fused["lu_state"][0] = 0.0
        return replace(s, a_prev=None, al_prev=None, dt_prev=0.0, lam=self.multipliers(s), lam_prev=None, lam_gap=0.0,
                       a_prev2=None, al_prev2=None, dt_prev2=0.0, lam_prev2=None, lam_gap2=0.0)

    def update(self, d: np.ndarray, th: np.ndarray, du: np.ndarray):
        """Newton update of the increments of the moving bodies: ``d ← d + Δr`` and ``θ`` such that
        ``cay(θ) = cay(Δθ)cay(θ)`` (the left update ``Λ' ← cay(Δθ)Λ'`` of THEORY §1).  ``du`` holds the
        bodies' corrections only, ``du[:6·n_moving]`` (an element's own unknowns: λ += k·Δλ̃)."""
        nm = self.model.n_moving
        du = du.reshape(nm, 6)
        d, th = d.copy(), th.copy()
        d[:nm] += du[:, :3]
        th[:nm] = cay_compose(du[:, 3:], th[:nm])
        return d, th

    def increments(self, s: State, r1: np.ndarray, q1: np.ndarray):
        """The increments ``(d, θ)`` of an iterate given by positions and orientations (for tests)."""
        return r1 - s.r, cayvec_quat(quat_mul(q1, quat_conj(s.q)))

    def tangent_matrix(self, data: np.ndarray):
        """The global tangent as a scipy CSC matrix (for tests and diagnostics)."""
        import scipy.sparse as sp
        a = self.assembler
        return sp.csc_matrix((self.solver.to_csc(data), a.indices, a.indptr), shape=(a.ndof, a.ndof))

    def _pivot_block(self, culprit: int) -> str:
        """What a singular pivot block of the compiled loop (``culprit``) is: a moving body's, or an
        element's own unknowns (the dense LU: ``n_moving`` + the unknown; the block LU: the block)."""
        m = self.model
        nm = m.n_moving
        if culprit < nm:
            return f"the block of moving body '{m.names[culprit]}'"
        if self.solver.strategy == "block":
            u = int(np.flatnonzero(self.solver.blocks == culprit)[0]) - 6 * nm
        else:
            u = culprit - nm
        return f"the own unknowns of {m.elements.describe(int(m.elements.unknown_element[u]))}"

    def _culprit(self, R: np.ndarray) -> str:
        """Name the body and component with the largest residual entry."""
        i = int(np.argmax(np.abs(R)))
        nm = self.model.n_moving
        if i >= 6 * nm:
            e = int(self.model.elements.unknown_element[i - 6 * nm])
            return (f"largest residual: the equation of an own unknown of {self.model.elements.describe(e)} "
                    f"({abs(R[i]):.3e}, scaled)")
        body = self.model.names[i // 6]
        part = "force" if i % 6 < 3 else "moment"
        return f"largest residual: {part} on body '{body}' ({abs(R[i]):.3e})"


@dataclass(frozen=True, eq=False)
class _StepContext:
    """Constants of one step (see :meth:`GeneralizedAlpha.prepare`)."""

    s: State
    dt: float
    g: float
    c_a: float
    Rn: np.ndarray
    F_ext: np.ndarray
    M_ext: np.ndarray
    Xn: np.ndarray
    a_pred: np.ndarray
    w_pred: np.ndarray
    al_pred: np.ndarray
    Krr: np.ndarray


@dataclass(frozen=True, eq=False)
class _Iterate:
    """Residual, force scale, tangent data and kinematics at one Newton iterate."""

    R: np.ndarray
    Q: np.ndarray
    data: Optional[np.ndarray]
    elements: object  # ElementEval of every element instance
    d: np.ndarray
    theta: np.ndarray
    r1: np.ndarray
    q1: np.ndarray
    a1: np.ndarray
    v1: np.ndarray
    w1: np.ndarray
    al1: np.ndarray
