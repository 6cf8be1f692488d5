"""Generalized-α on rigid bodies with Cayley rotation increments (THEORY §2, §4, §5, §10).

:class:`GeneralizedAlpha` owns the time-discrete residual and tangent of one
step and the Newton iteration that solves it.  It never raises on numerical
trouble: :meth:`GeneralizedAlpha.step` returns a :class:`StepResult` whose
``status`` says what happened, and the driver decides (stop, or later cut
the step).

Newton convergence test (documented for users in the README): after each
correction Δu_k the residual R_k of the new iterate is evaluated and the
step is converged when both

    ‖R_k‖₂  ≤ atol + rtol · ‖Q_k‖₂       (Q: entry-wise sum of |terms| summed into R —
                                           inertia, external and connector forces)
    ‖Δu_k‖₂ ≤ atol + rtol · ‖u_{n+1} − u_n‖₂   (u: [r, θ] of all moving bodies)

hold, each plus a round-off floor (100 ε times the magnitudes that cancel
in it, see ``_ROUNDOFF``) so that a tolerance tighter than the arithmetic
allows does not fail steps that are converged to machine precision.  Q is the size of the forces being balanced, so the test is
relative where forces are large and falls back to ``atol`` where they vanish.
A step fails when the iteration limit is reached, when R or Δu is not
finite, when the residual has grown in 3 consecutive iterations or exceeds
1e8 times its initial value, when the tangent is singular, or when a
connector is degenerate (a spring with L0 > 0 collapsed to L = 0).
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from ..assembly import Assembler
from ..linalg import LinearSolver, SingularMatrix
from ..model.kinematics import Kinematics
from ..model.model import Model
from ..model.rotations import (cay, cay_quat, cayvec_quat, cross, matvec, quat_conj, quat_mul,
                               quat_normalize, quat_to_matrix, skew, tmat, tmatvec)
from ..scenario.spec import IntegratorSpec


# The residual cannot be computed more accurately than the round-off in its
# largest terms: the inertia m/(βΔt²)·(r' − r_n) cancels digits of r (and J/(βΔt²)
# those of the rotation).  Tolerances below that floor are unreachable, so the
# test adds 100·ε times those magnitudes (and 100·ε·|r| to the increment test).
_ROUNDOFF = 100 * np.finfo(float).eps

# Modified Newton keeps a factorization while each residual is at most this
# fraction of the one before; a slower contraction means the tangent has
# drifted too far, and it is recomputed at the current iterate.
CONTRACTION_LIMIT = 0.05

# The frame buffers of :meth:`GeneralizedAlpha.advance_frames`, in the compiled kernel's argument
# order: OUTPUT.md datasets (scenario body and connector order), then "scalars" = per frame
# [kinetic, potential, dissipated, external work, linear momentum (3), angular momentum (3)].
FRAME_BUFFER_KEYS = ("bodies/position", "bodies/orientation", "bodies/velocity", "bodies/angular_velocity",
                     "bodies/acceleration", "bodies/angular_acceleration", "connectors/force", "connectors/moment",
                     "connectors/length", "scalars")


def frame_buffers(n_bodies: int, n_connectors: int, capacity: int) -> dict:
    """Empty frame buffers for ``capacity`` frames (see :data:`FRAME_BUFFER_KEYS`)."""
    B, C, K = n_bodies, n_connectors, capacity
    shapes = {"bodies/orientation": (K, B, 4), "connectors/force": (K, C, 3), "connectors/moment": (K, C, 3),
              "connectors/length": (K, C), "scalars": (K, 10)}
    return {k: np.empty(shapes.get(k, (K, B, 3))) for k in FRAME_BUFFER_KEYS}


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
    trapezoidal rule of the next step).
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

    Counters: ``n_steps``, ``n_iterations`` (linear solves), ``n_assemblies``,
    and the linear solver's ``nlu``.
    """

    name = "generalized-alpha"

    def __init__(self, model: Model, spec: IntegratorSpec):
        self.model = model
        self.spec = spec
        self.params = AlphaParameters.from_rho(spec.rho_inf)
        asm = self.assembler = Assembler(model)
        self.solver = LinearSolver(model.ndof, asm.indptr, asm.indices, asm.rows, asm.cols, asm.coupling,
                                   compiled=model.engine == "numba")
        asm.use_storage(self.solver.storage_map, self.solver.storage_size)
        self.n_steps = 0
        self.n_iterations = 0
        self.n_assemblies = 0
        self.lu = None  # the factorization in use (modified Newton keeps it across iterations and steps)
        self.lu_dt = None
        self._fused = None  # arguments of the compiled step loop, built at its first use
        # wall time per phase of the Newton iteration [s] (benchmarks/chain.py --profile)
        self.timing = {k: 0.0 for k in ("bodies", "elements", "assembly", "factorization", "solve", "energy")}
        self.clock = time.perf_counter

    # ------------------------------------------------------------------
    def initial_state(self) -> State:
        """State at t = 0 with the physical initial accelerations (THEORY §4)."""
        m = self.model
        a, al = m.initial_accelerations(0.0)
        s = State(0.0, m.r0.copy(), m.q0.copy(), m.v0.copy(), a, m.w0.copy(), al)
        pd, pe = self.powers(s)
        return replace(s, power_diss=pd, power_ext=pe)

    def powers(self, s: State) -> tuple[float, float]:
        """Dissipated power of the dampers and power of the loads at a state [W]."""
        pd = sum(float(ev.power.sum()) for _, ev in self.model.connector_forces(s.kinematics()))
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
            s=s, dt=dt, g=gamma / (beta * dt), c_a=c_a, Rn=Rn, qn_conj=quat_conj(s.q),
            F_ext=(af * F1 + (1 - af) * Fn)[:nm], M_ext=(af * M1 + (1 - af) * Mn)[:nm],
            Xn=(1 - am) * matvec(Jb, An) + (1 - af) * cross(Wn, matvec(Jb, Wn)),
            a_pred=-s.v / (beta * dt) + (1 - 0.5 / beta) * s.a,
            w_pred=(1 - gamma / beta) * s.w + dt * (1 - 0.5 * gamma / beta) * s.al,
            al_pred=-s.w / (beta * dt) + (1 - 0.5 / beta) * s.al,
            Krr=(am * m.mass[:nm] * c_a)[:, None, None] * np.eye(3),
            r_floor=_ROUNDOFF * c_a * float(np.sqrt(np.sum((m.mass[:nm, None] * (np.abs(s.r[:nm]) + 1.0)) ** 2)
                                                      + np.sum(np.trace(Jb, axis1=1, axis2=2) ** 2))),
            u_floor=_ROUNDOFF * float(np.sqrt(np.sum((np.abs(s.r[:nm]) + 1.0) ** 2) + 3 * nm)))

    def evaluate(self, ctx: "_StepContext", r1: np.ndarray, q1: np.ndarray,
                 tangent: Optional[str] = None) -> "_Iterate":
        """Residual (and tangent data if ``tangent``) at the iterate ``(r1, q1)`` (THEORY §4–7)."""
        self.n_assemblies += 1
        if self.model.engine == "numba":
            return self._evaluate_compiled(ctx, r1, q1, tangent)
        return self._evaluate_numpy(ctx, r1, q1, tangent)

    def _evaluate_numpy(self, ctx, r1, q1, tangent):
        """The batched numpy path: readable, and the reference for the compiled one."""
        m, p, clock = self.model, self.params, self.clock
        nm = m.n_moving
        af, am, gamma = p.alpha_f, p.alpha_m, p.gamma
        s, dt, g, c_a, Rn = ctx.s, ctx.dt, ctx.g, ctx.c_a, ctx.Rn
        Jb, mass = m.inertia[:nm], m.mass[:nm]

        t0 = clock()
        R1 = quat_to_matrix(q1)
        theta = cayvec_quat(quat_mul(q1, ctx.qn_conj))
        C = cay(theta)
        T = tmat(theta)
        a1 = c_a * (r1 - s.r) + ctx.a_pred
        v1 = s.v + dt * ((1 - gamma) * s.a + gamma * a1)
        w1 = matvec(C, g * theta + ctx.w_pred)
        al1 = matvec(C, c_a * theta + ctx.al_pred)
        kin = Kinematics.of_step(af, g, R1, Rn, r1, s.r, v1, s.v, w1, s.w, T)

        # body residual (THEORY §5)
        inert_r = mass[:, None] * (am * a1[:nm] + (1 - am) * s.a[:nm])
        W1 = tmatvec(R1[:nm], w1[:nm])
        A1 = tmatvec(R1[:nm], al1[:nm])
        JW1 = matvec(Jb, W1)
        X = am * matvec(Jb, A1) + ctx.Xn + af * cross(W1, JW1)
        R1X = matvec(R1[:nm], X)
        inert_t = af * R1X + (1 - af) * matvec(Rn[:nm], X)
        R_body = np.concatenate((ctx.F_ext - inert_r, ctx.M_ext - inert_t), axis=1)
        Ktt = None
        if tangent is not None:
            S = Rn[:nm].transpose(0, 2, 1) @ T[:nm].transpose(0, 2, 1)
            Lam_a = af * R1[:nm] + (1 - af) * Rn[:nm]
            inner = am * c_a * Jb + af * g * (skew(W1) @ Jb - skew(JW1))
            Ktt = -af * skew(R1X) + Lam_a @ inner @ S
        t1 = clock()
        evals = [kind.evaluate(kin, tangent) for kind in m.kinds]
        t2 = clock()
        R = self.assembler.residual(R_body, evals)
        Q = self.assembler.force_scale(
            np.concatenate((np.abs(ctx.F_ext) + np.abs(inert_r), np.abs(ctx.M_ext) + np.abs(inert_t)), axis=1),
            evals)
        data = self.assembler.tangent_data(ctx.Krr, Ktt, evals) if tangent is not None else None
        self.timing["bodies"] += t1 - t0
        self.timing["elements"] += t2 - t1
        self.timing["assembly"] += clock() - t2
        return _Iterate(R=R, Q=Q, data=data, evals=evals, theta=theta, a1=a1, v1=v1, w1=w1, al1=al1)

    def _evaluate_compiled(self, ctx, r1, q1, tangent):
        """The same quantities from the compiled kernels (:mod:`mbsim.kernels`)."""
        from ..kernels import bodies as kb
        m, p, clock, asm = self.model, self.params, self.clock, self.assembler
        nm, n = m.n_moving, m.n_all
        s = ctx.s
        t0 = clock()
        R1, T, Om = np.empty((n, 3, 3)), np.empty((n, 3, 3)), np.empty((n, 3, 3))
        theta, v1, a1, w1, al1 = (np.empty((n, 3)) for _ in range(5))
        kb.kinematics(q1, s.q, r1, s.r, s.v, s.a, s.w, s.al, ctx.dt, ctx.c_a, ctx.g, p.gamma, ctx.a_pred,
                      ctx.w_pred, ctx.al_pred, R1, theta, T, Om, v1, a1, w1, al1)
        kin = Kinematics(alpha_f=p.alpha_f, R1=R1, Rn=ctx.Rn, r1=r1, rn=s.r, v1=v1, vn=s.v, w1=w1, wn=s.w,
                         g=ctx.g, T=T, Omega=Om)
        R, Q = np.empty(asm.ndof), np.empty(asm.ndof)
        Ktt = np.empty((nm, 3, 3)) if tangent is not None else np.empty((1, 3, 3))
        kb.residual(nm, m.mass, m.inertia, R1, ctx.Rn, T, a1, s.a, w1, al1, ctx.F_ext, ctx.M_ext, ctx.Xn,
                    p.alpha_f, p.alpha_m, ctx.c_a, ctx.g, tangent is not None, R, Q, Ktt)
        t1 = clock()
        evals = [kind.evaluate(kin, tangent) for kind in m.kinds]
        t2 = clock()
        for dofs, ev in zip(asm.kind_dofs, evals):
            kb.scatter_residual(dofs, ev.residual, R, Q)
        data = None
        if tangent is not None:
            data = np.zeros(asm.size)
            kb.scatter_bodies(asm.body_pos, ctx.Krr[:, 0, 0].copy(), Ktt, data)
            for pos, ev in zip(asm.kind_pos, evals):
                kb.scatter_tangent(pos, ev.tangent, data)
        self.timing["bodies"] += t1 - t0
        self.timing["elements"] += t2 - t1
        self.timing["assembly"] += clock() - t2
        return _Iterate(R=R, Q=Q, data=data, evals=evals, theta=theta, a1=a1, v1=v1, w1=w1, al1=al1)

    def step(self, s: State, dt: float) -> StepResult:
        """Advance ``s`` by ``dt``; never raises on numerical trouble.

        With modified Newton a step that fails while reusing an old
        factorization is tried once more with a fresh tangent at every
        iteration before it is reported as failed.
        """
        res = self._newton(s, dt, modified=self.spec.modified)
        if not res.ok and self.spec.modified and res.status is not StepStatus.DEGENERATE:
            self.lu = None
            res = self._newton(s, dt, modified=False)
        return res

    def _newton(self, s: State, dt: float, modified: bool) -> StepResult:
        m, spec = self.model, self.spec
        nm = m.n_moving
        ctx = self.prepare(s, dt)
        r1, q1 = self.predict(s, dt)
        history: list[float] = []
        du_norm = np.inf
        status, msg = None, ""
        if not modified or self.lu_dt is None or abs(self.lu_dt - dt) > 1e-12 * dt:
            self.lu = None  # the mass terms m/(βΔt²) change with Δt: never reuse across a new step size
        for k in range(spec.max_iterations + 1):
            fresh = self.lu is None
            it = self.evaluate(ctx, r1, q1, spec.tangent if fresh else None)
            bad = [(kind, ev) for kind, ev in zip(m.kinds, it.evals) if ev.degenerate.any()]
            if bad:
                kind, ev = bad[0]
                name = kind.names[int(np.flatnonzero(ev.degenerate)[0])]
                status, msg = StepStatus.DEGENERATE, (
                    f"spring '{name}' collapsed to zero length with a positive rest length; "
                    "its direction is undefined")
                break
            rnorm = float(np.linalg.norm(it.R))
            history.append(rnorm)
            if not np.isfinite(rnorm):
                status, msg = StepStatus.NONFINITE, "the residual is not finite"
                break
            if k > 0:
                u_step = np.concatenate(((r1 - s.r)[:nm], it.theta[:nm]), axis=1)
                if (rnorm <= spec.atol + spec.rtol * np.linalg.norm(it.Q) + ctx.r_floor
                        and du_norm <= spec.atol + spec.rtol * np.linalg.norm(u_step) + ctx.u_floor):
                    status = StepStatus.CONVERGED
                    break
                if len(history) >= 4 and history[-1] > history[-2] > history[-3] > history[-4]:
                    status, msg = StepStatus.DIVERGED, "the residual grew in 3 consecutive iterations"
                    break
                if rnorm > 1e8 * max(history[0], np.finfo(float).tiny):
                    status, msg = StepStatus.DIVERGED, "the residual grew by more than 1e8"
                    break
            if k == spec.max_iterations:
                status, msg = StepStatus.MAX_ITERATIONS, (
                    f"no convergence in {spec.max_iterations} Newton iterations")
                break
            if not fresh and k > 0 and rnorm > CONTRACTION_LIMIT * history[-2]:
                # the old factorization no longer contracts fast enough: refresh it here
                it = self.evaluate(ctx, r1, q1, spec.tangent)
                fresh = True
            try:
                t0 = self.clock()
                if fresh:
                    self.lu = self.solver.factorize(it.data)
                    self.lu_dt = dt
                t1 = self.clock()
                du = self.lu(it.R)
                self.timing["factorization"] += t1 - t0
                self.timing["solve"] += self.clock() - t1
            except (SingularMatrix, RuntimeError) as exc:
                self.lu = None
                status, msg = StepStatus.SINGULAR, f"the tangent matrix is singular ({exc})"
                break
            if not modified:
                self.lu = None
            self.n_iterations += 1
            du_norm = float(np.linalg.norm(du))
            if not np.isfinite(du_norm):
                status, msg = StepStatus.NONFINITE, "the Newton correction is not finite"
                break
            r1, q1 = self.update(r1, q1, du)

        if status is not StepStatus.CONVERGED:
            if status in (StepStatus.MAX_ITERATIONS, StepStatus.DIVERGED) and nm:
                msg += "; " + self._culprit(it.R)
            return StepResult(status, k, history[-1] if history else np.nan, msg, None, history)

        self.n_steps += 1
        new = State(s.t + dt, r1, q1, it.v1, it.a1, it.w1, it.al1, s.dissipated, s.external_work)
        t0 = self.clock()
        pd, pe = self.powers(new)
        self.timing["energy"] += self.clock() - t0
        # trapezoidal rule on the power along the discrete trajectory: O(Δt²), like the scheme
        new = replace(new, power_diss=pd, power_ext=pe,
                      dissipated=s.dissipated + 0.5 * dt * (s.power_diss + pd),
                      external_work=s.external_work + 0.5 * dt * (s.power_ext + pe))
        return StepResult(status, k, history[-1], "", new, history)

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
        if self.model.engine != "numba":
            return
        saved = (self.n_steps, self.n_iterations, self.n_assemblies, self.solver.nlu, dict(self.timing), self.lu,
                 self.lu_dt)
        try:
            with np.errstate(all="ignore"):
                self.step(s, dt)
                if frame_every and self.can_advance:
                    self.advance(s, dt, 0)
                    self.advance_frames(s, dt, 0, 0, frame_every,
                                        frame_buffers(self.model.n_bodies, self.model.n_connectors, 1))
        finally:
            (self.n_steps, self.n_iterations, self.n_assemblies, self.solver.nlu, timing, self.lu,
             self.lu_dt) = saved
            self.timing.clear()
            self.timing.update(timing)

    @property
    def can_advance(self) -> bool:
        """Whether :meth:`advance` and :meth:`advance_frames` can take blocks of steps in compiled
        code (numba; the block tree LU, or a dense LU for other small systems -- SuperLU stays
        with the Python step)."""
        return (self.model.engine == "numba" and self.model.n_moving > 0
                and self.solver.strategy in ("tree", "dense"))

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
        t0 = self.clock()
        times = s.t + dt * np.arange(nsteps + 1)
        b = self._block(s, times[None, :], nsteps)
        taken = stepper.advance(nsteps, dt, *b["state"], *b["model"], *b["loads"], *b["kinds"], *b["solver"],
                                *b["work"])
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
        b = self._block(s, times, nsteps)
        status = np.zeros(2, np.int64)
        o = self.model.order
        frames = stepper.advance_frames(
            nframes, spf, dt, *b["state"], self.model.gravity, *b["model"], *b["loads"], *b["kinds"], *b["solver"],
            *b["work"],
            o if o.dtype == np.int64 else o.astype(np.int64),
            *(buffers[k] for k in FRAME_BUFFER_KEYS), status)
        steps = frames * spf + (int(status[0]) if status[1] != 1 else 0)
        new = self._after_block(s, b, (k0 + steps) * dt, steps)
        return new, frames, steps, int(status[1]), b["iterations"][:steps], b["residuals"][:steps]

    def _block(self, s: State, times: np.ndarray, nsteps: int) -> dict:
        """The arguments of the compiled loops for ``nsteps`` steps from ``s``.

        ``times`` is ``(blocks, steps per block + 1)``: the step ends of each
        block, at which the loads are evaluated (at n+α between two of them).
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
        if self._fused is None:
            self._fused = self._fused_arguments()
        f = self._fused
        energy = np.array([s.dissipated, s.external_work, s.power_diss, s.power_ext])
        f["lu_state"][0] = 0.0  # a fresh tangent at the start of every block (= after every frame)
        self.lu = None
        spec = self.spec
        iterations, residuals = np.zeros(nsteps, dtype=np.int64), np.zeros(nsteps)
        counters = np.zeros(3, dtype=np.int64)
        return {
            "t0": t0,
            "state": tuple(x.copy() for x in (s.r, s.q, s.v, s.a, s.w, s.al)) + (energy,),
            "model": (nm, m.mass, m.inertia, af, p.alpha_m, p.beta, p.gamma),
            "loads": (F_alpha, M_alpha, FL, ML),
            "kinds": f["kinds"],
            "solver": (self.assembler.body_pos, self.assembler.size, *f["structure"],
                       {"consistent": 1, "seed": 2}[spec.tangent], spec.modified, spec.max_iterations, spec.rtol,
                       spec.atol, CONTRACTION_LIMIT),
            "work": (f["lu_data"], f["lu_piv"], f["lu_state"], iterations, residuals, counters),
            "iterations": iterations, "residuals": residuals, "counters": counters,
        }

    def _after_block(self, s: State, b: dict, t: float, steps: int) -> State:
        """Count the work of a compiled block (``steps`` steps kept) and return its final state at time ``t``."""
        counters = b["counters"]
        self.n_steps += steps
        self.n_iterations += int(counters[0])
        self.solver.nlu += int(counters[1])
        self.n_assemblies += int(counters[2])
        r, q, v, a, w, al, energy = b["state"]
        new = State(t, r, q, v, a, w, al, float(energy[0]), float(energy[1]), float(energy[2]), float(energy[3]))
        self.timing["compiled steps"] = self.timing.get("compiled steps", 0.0) + self.clock() - b["t0"]
        return new

    def _fused_arguments(self) -> dict:
        """Connector arrays for the compiled loop, and its factorization storage."""
        from ..kernels import stepper
        none = np.zeros(0, np.int64)
        if self.solver.strategy == "tree":  # (parent, order, dense positions): which LU the loop runs
            structure, size = (*self.solver.tree, none), self.assembler.size
        else:
            structure, size = (none, none, self.solver.dense_positions), self.model.ndof ** 2
        return {"kinds": stepper.kind_arguments(self.model, self.assembler), "structure": structure,
                "lu_data": np.zeros(size),
                "lu_piv": np.zeros((self.model.n_moving, 6), np.int64), "lu_state": np.zeros(2)}

    def predict(self, s: State, dt: float):
        """Start of the Newton iteration: the constant-acceleration Taylor step.

        THEORY §4 starts from ``r' = r_n``, ``Λ' = Λ_n``; any start converges to
        the same solution, and ``r' = r_n + Δt v_n + ½Δt² a_n``,
        ``Λ' = cay(Δt ω_n + ½Δt² α_n) Λ_n`` is within O(Δt³) of it, which saves
        about one Newton iteration per step on smooth motion.
        """
        nm = self.model.n_moving
        r1, q1 = s.r.copy(), s.q.copy()
        r1[:nm] += dt * s.v[:nm] + 0.5 * dt * dt * s.a[:nm]
        q1[:nm] = quat_normalize(quat_mul(cay_quat(dt * s.w[:nm] + 0.5 * dt * dt * s.al[:nm]), q1[:nm]))
        return r1, q1

    def update(self, r1: np.ndarray, q1: np.ndarray, du: np.ndarray):
        """Newton update ``r ← r + Δr``, ``Λ ← cay(Δθ) Λ`` (THEORY §1) of the moving bodies."""
        nm = self.model.n_moving
        du = du.reshape(nm, 6)
        r1 = r1.copy()
        q1 = q1.copy()
        r1[:nm] += du[:, :3]
        q1[:nm] = quat_normalize(quat_mul(cay_quat(du[:, 3:]), q1[:nm]))
        return r1, q1

    def tangent_matrix(self, data: np.ndarray):
        """The global tangent as a scipy CSC matrix (for tests and diagnostics)."""
        import scipy.sparse as sp
        a = self.assembler
        return sp.csc_matrix((self.solver.to_csc(data), a.indices, a.indptr), shape=(a.ndof, a.ndof))

    def _culprit(self, R: np.ndarray) -> str:
        """Name the body and component with the largest residual entry."""
        i = int(np.argmax(np.abs(R)))
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
    qn_conj: np.ndarray
    F_ext: np.ndarray
    M_ext: np.ndarray
    Xn: np.ndarray
    a_pred: np.ndarray
    w_pred: np.ndarray
    al_pred: np.ndarray
    Krr: np.ndarray
    r_floor: float  # round-off level of the residual norm (see _ROUNDOFF)
    u_floor: float  # round-off level of the increment norm


@dataclass(frozen=True, eq=False)
class _Iterate:
    """Residual, force scale, tangent data and kinematics at one Newton iterate."""

    R: np.ndarray
    Q: np.ndarray
    data: Optional[np.ndarray]
    evals: list
    theta: np.ndarray
    a1: np.ndarray
    v1: np.ndarray
    w1: np.ndarray
    al1: np.ndarray
