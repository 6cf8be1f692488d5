"""Generalized-α on rigid bodies with Cayley rotation increments (THEORY §2, §4, §5, §10, §11).

:class:`GeneralizedAlpha` owns the time-discrete residual and tangent of one step and the Newton
iteration that solves it, on the mechanism at a state (:class:`mbsim.mechanics.Mechanism`).  It
never raises on numerical trouble: :meth:`GeneralizedAlpha.step` returns a :class:`StepResult` whose
``status`` says what happened, and the driver decides (stop, or cut the step).

Unknowns.  Each moving body's unknowns are the step's increments themselves: the translation ``d =
r' − r_n`` and the Cayley step vector ``θ = cayvec(Λ'Λ_nᵀ)`` (THEORY §4), not the absolute position
and orientation (docs/newton.md: the factor 1/(βΔt²) then never multiplies the cancellation ``r' −
r_n``).  A Newton correction (Δr, Δθ) is the spatial one of THEORY §1: ``d ← d + Δr`` and ``θ ←
cayvec(cay(Δθ)cay(θ))``, so the tangent K = −∂R/∂u is unchanged.

The step exists once, in the compiled loop (:mod:`mbsim.integrators.step`: its phases, and the
generalized-α combination of the elements' state derivatives); :meth:`GeneralizedAlpha.step` takes
one step through it and :meth:`GeneralizedAlpha.advance_frames` whole frames, for every linear solver.
Its stopping test and constants are :mod:`mbsim.integrators.newton`'s.
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from ..mechanics import frames as kfr
from ..mechanics.mechanism import Mechanism
from . import newton as nt
from . import step as ks


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

    ``dissipated`` and ``external_work`` are the energy integrals of THEORY §9 since t = 0;
    ``power_diss``/``power_ext`` the rates at this state (for the trapezoidal rule of the next step).
    ``a_prev``/``al_prev`` are the accelerations one step earlier and ``dt_prev`` that step's size,
    ``a_prev2``/``al_prev2``/``dt_prev2`` the same one step further back: only the Newton predictor
    reads them (docs/newton.md), and :meth:`GeneralizedAlpha.restart` drops them (and ``lam_prev``,
    ``lam_gap``: the own unknowns of the step before and how long before ``lam``'s they belong,
    ``lam_prev2``, ``lam_gap2`` the same one step further back).  ``lam`` holds the elements' own
    unknowns (a joint's multipliers, physical: N or N·m) of the step that led here, which belong to
    t − Δt + α_f Δt (THEORY §11), or, at t = 0 and after a restart, those of the constrained equations
    at t (:meth:`GeneralizedAlpha.multipliers`); the residual does not read them, only the Newton start
    of the next step and the drives' work, so the steps after a stored frame depend on that frame
    alone.  A State is a state of the mechanism too (:class:`mbsim.mechanics.State`: r, q, v, w, t, lam).
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
    """One generalized-α step of a model, solved by Newton–Raphson.

    Counters: ``n_steps``, ``n_iterations`` (Newton corrections applied), ``n_assemblies`` (residuals
    evaluated), ``n_floor`` (steps whose iteration stopped at the round-off floor of the joints'
    equations: docs/newton.md) and the linear solver's ``nlu``.
    """

    name = "generalized-alpha"

    @staticmethod
    def parameters(spec) -> AlphaParameters:
        """The parameters of an IntegratorSpec (what the result's header records)."""
        return AlphaParameters.from_rho(spec.rho_inf)

    def __init__(self, model, spec, mechanism: Optional[Mechanism] = None):
        self.model = model
        self.spec = spec
        self.params = self.parameters(spec)
        mech = self.mechanism = mechanism if mechanism is not None else Mechanism(model)
        self.solver = mech.solver
        self.n_steps = 0
        self.n_iterations = 0
        self.n_assemblies = 0
        self.n_floor = 0
        # longest connector arm |Z| of each moving body (the rotational rows' round-off, newton.tolerances)
        nm = model.n_moving
        el = model.elements
        arm = np.zeros(model.n_all)
        for side in range(2):
            np.maximum.at(arm, el.body[:, side], el.arm[:, side])
        order = model.order if model.order.dtype == np.int64 else model.order.astype(np.int64)
        self._bodies = (nm, model.mass, model.inertia, model.j_max, arm[:nm], model.gravity, order)
        self._hist = np.zeros(2 * spec.max_iterations + 2)
        self._R = np.zeros(model.ndof)
        self._work = ks.instance_work(mech.work, mech.elx[6].shape[1])
        self.timing = {"compiled steps": 0.0}  # wall time in the compiled loop [s]
        self._spec_fns = None  # the loads and drives as compiled time functions (advance_controlled)
        self.clock = time.perf_counter

    # ------------------------------------------------------------------
    def initial_state(self) -> State:
        """State at t = 0 with the physical initial accelerations (THEORY §4); with joints those of the
        constrained equations, and their multipliers (THEORY §11, initial conditions: the model has made
        the velocities consistent with the joints)."""
        s0 = self.mechanism.state()
        a, al, lam = self.mechanism.accelerations(s0)
        s = State(0.0, s0.r, s0.q, s0.v, a, s0.w, al, lam=lam)
        pd, pe = self.powers(s)
        return replace(s, power_diss=pd, power_ext=pe)

    def multipliers(self, s: State) -> Optional[np.ndarray]:
        """The joints' multipliers of state ``s`` from the constrained equations (THEORY §11, reactions),
        None without joints."""
        if not self.model.elements.n_unknowns:
            return None
        return self.mechanism.constrained(s)[1]

    def powers(self, s: State) -> tuple[float, float]:
        """Dissipated power of the elements and power of the loads at a state [W]."""
        return self.mechanism.powers(s)

    def frame(self, s: State) -> dict:
        """OUTPUT.md per-frame arrays of state ``s`` (:meth:`mbsim.mechanics.Mechanism.frame`): the loop's
        own frame code; ``_finite`` says whether the element actions, energies and momenta are finite."""
        return self.mechanism.frame(s, s.dissipated, s.external_work, s.a, s.al)

    # ------------------------------------------------------------------
    def step(self, s: State, dt: float) -> StepResult:
        """Advance ``s`` by ``dt``; never raises on numerical trouble.

        The step is the compiled loop's (one step): the one Newton iteration of mbsim, for every linear
        solver and every stepping mode.  With modified Newton the factorization in use is kept from step
        to step while Δt does not change, and a step that fails while reusing an old factorization is
        tried once more with a fresh tangent at every iteration before it is reported as failed.
        """
        res = self._one_step(s, dt, modified=self.spec.modified)
        if not res.ok and self.spec.modified and res.status is not StepStatus.DEGENERATE:
            res = self._one_step(s, dt, modified=False)
        return res

    def _one_step(self, s: State, dt: float, modified: bool) -> StepResult:
        times = s.t + dt * np.arange(2)
        b = self._block(s, times[None, :], 1, keep_factorization=True, modified=modified)
        taken = ks.run(*self._arguments(b, 1, 1, False, dt))
        taken = 1 if taken == 1 else 0
        new = self._after_block(s, b, float(times[taken]), taken)
        status = b["report"][5]
        k, nh = int(status[3]), int(status[5])
        history = [float(x) for x in self._hist[:nh]]
        residual = history[-1] if history else np.nan
        if taken == 1:
            return StepResult(StepStatus.CONVERGED, k, residual, "", new, history)
        status_, message = self._failure(int(status[2]), int(status[4]), self._R)
        return StepResult(status_, k, residual, message, None, history)

    def _failure(self, reason: int, culprit: int, R: np.ndarray) -> tuple:
        """StepStatus and message of a step the compiled loop gave up (``reason``: a code of
        :mod:`mbsim.integrators.newton`; ``culprit`` the element or block it names; ``R`` the last residual)."""
        m = self.model
        status = StepStatus(nt.REASONS[reason])
        if reason == nt.DEGENERATE:
            return status, m.elements.failure(culprit)
        if reason == nt.SINGULAR:
            return status, f"the tangent matrix is singular (zero pivot in {self.mechanism.pivot_block(culprit)})"
        if reason == nt.NONFINITE_RESIDUAL:
            return status, "the residual is not finite"
        if reason == nt.NONFINITE_CORRECTION:
            return status, "the Newton correction is not finite"
        msg = {nt.MAX_ITERATIONS: f"no convergence in {self.spec.max_iterations} Newton iterations",
               nt.GREW: "the residual grew in 3 consecutive iterations",
               nt.BLEW_UP: f"the residual grew by more than {nt.BLOW_UP:g}"}[reason]
        return status, msg + "; " + self._culprit(R)

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

    # ------------------------------------------------------------------
    def warm_up(self, s: State, dt: float, frame_every: int) -> None:
        """Call every compiled kernel a run from ``s`` will use, so that numba compiles them (the first run
        on a machine: about a minute) or loads them from its cache now rather than inside the timed time
        loop: one step of ``dt`` and, when ``frame_every`` (steps between frames) is not 0, an empty call
        of the frames loop; the counters, timings and factorization are put back as they were."""
        mech = self.mechanism
        kept = [x.copy() for x in mech.lu]
        saved = (self.n_steps, self.n_iterations, self.n_assemblies, self.n_floor, self.solver.nlu, dict(self.timing))
        try:
            with np.errstate(all="ignore"):
                self.step(s, dt)
                if frame_every and self.can_advance:
                    self.advance_frames(s, dt, 0, 0, frame_every,
                                        kfr.buffers(self.model.n_bodies, self.model.n_connectors, 1, self.model.n_joints))
        finally:
            (self.n_steps, self.n_iterations, self.n_assemblies, self.n_floor, self.solver.nlu, timing) = saved
            for x, v in zip(mech.lu, kept):
                x[:] = v
            self.timing.clear()
            self.timing.update(timing)

    def continue_counts(self, steps: int, iterations: int) -> None:
        """Count on from a resumed run's ``steps`` and Newton ``iterations`` (the file's counters)."""
        self.n_steps = int(steps)
        self.n_iterations = int(iterations)

    @property
    def can_advance(self) -> bool:
        """Whether :meth:`advance` and :meth:`advance_frames` can take blocks of steps in compiled code:
        with every linear solver, when a body moves."""
        return self.model.n_moving > 0

    def advance(self, s: State, dt: float, nsteps: int):
        """Up to ``nsteps`` steps of size ``dt`` in one compiled loop; a step that does not converge is not
        taken, and the caller redoes it with :meth:`step`, which diagnoses it.  Starts with a fresh tangent.

        Returns ``(state, taken, iterations, residuals)``: the state after the steps taken (``t`` = s.t +
        taken·dt), and the Newton iterations and final residual norm of each step taken.
        """
        times = s.t + dt * np.arange(nsteps + 1)
        b = self._block(s, times[None, :], nsteps)
        done = ks.run(*self._arguments(b, 1, nsteps, False, dt))
        taken = nsteps if done == 1 else int(b["report"][5][0])
        new = self._after_block(s, b, float(times[taken]), taken)
        return new, taken, b["report"][0][:taken], b["report"][1][:taken]

    def advance_frames(self, s: State, dt: float, k0: int, nframes: int, spf: int, buffers: dict):
        """Up to ``nframes`` output frames of ``spf`` steps each in one compiled call, the frame quantities
        written to row ``f`` of ``buffers`` (:func:`mbsim.mechanics.frames.buffers`).  ``s`` is the state
        at step ``k0`` (``t = k0·dt``); the steps are the ones :meth:`advance` takes one frame at a time,
        to the last bit.

        Returns ``(state, frames, steps, flag, iterations, residuals)``: the state after the steps taken
        (``t`` = (k0 + steps)·dt), the frames completed (their rows in ``buffers`` filled), the steps taken
        in all, and 0 or why fewer than ``nframes`` frames were completed (1: the state at the end of the
        next frame was not finite -- its steps are not counted and ``state`` is its start; 2: its
        element actions, energies or momenta were not finite -- ``state`` is the frame's; with 0 and
        fewer frames a step did not converge: ``state`` is the one before it).
        """
        # t_k = k·dt by multiplication at every frame start, as the driver computes it
        starts = (k0 + spf * np.arange(nframes)) * dt
        times = starts[:, None] + dt * np.arange(spf + 1)
        b = self._block(s, times, nframes * spf, ends=(k0 + spf * np.arange(1, nframes + 1)) * dt)
        frames = ks.run(*self._arguments(b, nframes, spf, True, dt, tuple(buffers[k] for k in kfr.BUFFERS)))
        status = b["report"][5]
        steps = frames * spf + (int(status[0]) if status[1] != 1 else 0)
        new = self._after_block(s, b, (k0 + steps) * dt, steps)
        return new, frames, steps, int(status[1]), b["report"][0][:steps], b["report"][1][:steps]

    def advance_controlled(self, s: State, ctl: np.ndarray, settings: tuple, acc0: np.ndarray, buffers: dict,
                           t_stop: float, max_steps: int):
        """Error-controlled steps from ``s`` in one compiled call (:func:`mbsim.integrators.controlled.run`)
        until ``t_stop``, ``max_steps`` accepted steps or the frame buffers' capacity, the frames that fall
        in them written to ``buffers``' rows.  ``ctl`` is the controller's memory (in/out: its ``T_NOW``
        must be ``s.t``), ``settings`` = (rtol, atol, min_step, largest step, time.end, PI (1.0) or
        elementary (0.0), output.interval, the step below which accepted steps count towards a collapse),
        ``acc0`` (n_moving, 6) the true accelerations of
        ``s`` (in/out).

        Returns ``(state, frames, (times, iterations, residuals, steps), why, status)``: the state after the
        accepted steps, the frame rows written and theirs, and why the call returned
        (:data:`mbsim.integrators.controlled.DONE` … ``SINGULAR``), ``status`` the loop's status array."""
        from . import controlled as kc
        if self._spec_fns is None:
            self._spec_fns = self.model.time_functions()
        b = self._block(s, np.array([[s.t, s.t + float(ctl[kc.H])]]), 1)
        cap = buffers["scalars"].shape[0]
        fmeta = (np.zeros(cap), np.zeros(cap, dtype=np.int64), np.zeros(cap), np.zeros(cap))
        report = b["report"] + fmeta
        rtol, atol, min_step, largest, end, pi, interval, small_below = settings
        cset = (float(rtol), float(atol), float(min_step), float(largest), float(end), float(pi), float(interval),
                float(t_stop), int(max_steps), float(small_below))
        mech = self.mechanism
        plan = (cap, 1, True, float(ctl[kc.H]), ks.TANGENTS[self.spec.tangent])
        solver = (mech.solver.lu, mech.assembler.body_pos, mech.assembler.size) + mech.lu
        nf = kc.run(plan, b["params"], (self._bodies, mech.el, mech.elx), self._spec_fns, solver, b["test"],
                    b["state"], report, tuple(buffers[k] for k in kfr.BUFFERS), self._work, (ctl, cset, acc0))
        status = report[5]
        new = self._after_block(s, b, float(ctl[kc.T_NOW]), int(status[0]))
        return new, int(nf), tuple(x[:nf] for x in fmeta), int(status[1]), status

    def warm_up_controlled(self, s: State, settings: tuple) -> None:
        """Compile (or load) :meth:`advance_controlled`'s loop: one call that takes no step."""
        from . import controlled as kc
        ctl = np.zeros(kc.N_CTL)
        ctl[kc.H], ctl[kc.T_NOW], ctl[kc.J_NEXT] = 1.0, s.t, 1.0  # (no step is taken: t_stop = s.t)
        m = self.model
        saved = (self.n_steps, self.n_iterations, self.n_assemblies, self.n_floor, dict(self.timing))
        self.advance_controlled(s, ctl, settings, np.zeros((m.n_moving, 6)),
                                kfr.buffers(m.n_bodies, m.n_connectors, 1, m.n_joints), s.t, 0)
        self.n_steps, self.n_iterations, self.n_assemblies, self.n_floor, timing = saved
        self.timing.clear()
        self.timing.update(timing)

    # ------------------------------------------------------------------
    def _block(self, s: State, times: np.ndarray, nsteps: int, keep_factorization: bool = False,
               modified: Optional[bool] = None, ends=None) -> dict:
        """The bundles of the compiled loop for ``nsteps`` steps from ``s`` (:mod:`mbsim.integrators.step`).

        ``times`` is ``(blocks, steps per block + 1)``: the step ends of each block, at which the loads are
        evaluated (at n+α between two of them).  ``ends`` are the times of the frames' states as the driver
        gives them (k·Δt; default the blocks' last step ends), at which the joints' reactions are solved
        for.  A block starts with a fresh tangent unless ``keep_factorization`` (:meth:`step`: the loop
        reuses the factorization in use if it was made for the same Δt); ``modified`` overrides the
        scenario's choice of modified Newton.
        """
        t0 = self.clock()
        m, p, mech = self.model, self.params, self.mechanism
        nm, af = m.n_moving, p.alpha_f
        F, M, FL, ML = m.external_many(times.ravel())
        nb, w = times.shape
        F, M, FL, ML = (x.reshape((nb, w) + x.shape[1:]) for x in (F, M, FL, ML))
        F_alpha = np.ascontiguousarray((af * F[:, 1:] + (1 - af) * F[:, :-1])[:, :, :nm].reshape(nsteps, nm, 3))
        M_alpha = np.ascontiguousarray((af * M[:, 1:] + (1 - af) * M[:, :-1])[:, :, :nm].reshape(nsteps, nm, 3))
        FL = np.ascontiguousarray(FL[:, 1:].reshape((nsteps,) + FL.shape[2:]))
        ML = np.ascontiguousarray(ML[:, 1:].reshape((nsteps,) + ML.shape[2:]))
        n_own = m.elements.n_unknowns
        TG = m.targets(times.ravel()).reshape(nb, w, 3, n_own)
        ends = times[:, -1] if ends is None else np.asarray(ends, dtype=float)
        if n_own:
            FE, ME, _, _ = m.external_many(ends)
            FE, TGE = np.concatenate((FE, ME), axis=2), m.targets(ends)
        else:
            FE, TGE = np.zeros((nb, m.n_all, 6)), np.zeros((nb, 3, 0))
        TT = np.ascontiguousarray(times.copy())
        TT[:, -1] = ends
        if not keep_factorization:
            mech.lu[2][0] = 0.0  # a fresh tangent at the start of every block (= after every frame)
        modified = self.spec.modified if modified is None else modified
        state = self._arrays(s)
        test = (bool(modified),) + nt.settings(self.spec)[1:]
        report = (np.zeros(nsteps, dtype=np.int64), np.zeros(nsteps), np.zeros(4, dtype=np.int64), self._hist, self._R,
                  np.zeros(6, np.int64))
        return {"t0": t0, "params": (af, p.alpha_m, p.beta, p.gamma), "loads": (F_alpha, M_alpha, FL, ML, TG, FE, TGE, TT),
                "test": test, "state": state, "report": report}

    def _arguments(self, b: dict, nframes: int, spf: int, frames: bool, dt: float, buffers=None) -> tuple:
        """The arguments of :func:`mbsim.integrators.step.run`."""
        mech = self.mechanism
        if buffers is None:
            B = 0
            buffers = (np.empty((B, B, 3)), np.empty((B, B, 4)), np.empty((B, B, 3)), np.empty((B, B, 3)),
                       np.empty((B, B, 3)), np.empty((B, B, 3)), np.empty((B, B, 3)), np.empty((B, B, 3)),
                       np.empty((B, B)), np.empty((B, B, 3)), np.empty((B, B, 3)), np.empty((B, B, 2)),
                       np.empty((B, kfr.N_SCALARS)))
        plan = (nframes, spf, frames, float(dt), ks.TANGENTS[self.spec.tangent])
        solver = (mech.solver.lu, mech.assembler.body_pos, mech.assembler.size) + mech.lu
        return (plan, b["params"], (self._bodies, mech.el, mech.elx), b["loads"], solver, b["test"], b["state"],
                b["report"], buffers, self._work)

    def _after_block(self, s: State, b: dict, t: float, steps: int) -> State:
        """Count the work of a compiled block (``steps`` steps kept) and return its final state at time ``t``."""
        counters = b["report"][2]
        self.n_steps += steps
        self.n_iterations += int(counters[0])
        self.solver.nlu += int(counters[1])
        self.n_assemblies += int(counters[2])
        self.n_floor += int(counters[3])
        new = self._state_of(t, b["state"])
        self.timing["compiled steps"] += self.clock() - b["t0"]
        return new

    # what the compiled loop's state bundle holds, in its order (and a checkpoint's names)
    CHECKPOINT = ("r", "q", "v", "a", "w", "al", "a_prev", "al_prev", "prev_dt", "energy", "lam", "lam_prev", "lam_gap")

    def _arrays(self, s: State) -> tuple:
        """``s`` as the compiled loop's state bundle (copies): :data:`CHECKPOINT`'s arrays."""
        energy = np.array([s.dissipated, s.external_work, s.power_diss, s.power_ext])
        return tuple(x.copy() for x in (s.r, s.q, s.v, s.a, s.w, s.al)) + self._history(s) + (energy, self._lam(s)) \
            + self._lam_history(s)

    def checkpoint(self, s: State) -> dict:
        """Everything the next steps read of ``s`` as named arrays (:data:`CHECKPOINT` and ``time``): the
        state with the scheme's accelerations, the energy integrals and rates, the predictor's history and
        the own unknowns with theirs, and ``elements``: the element parameter rows when a kind counts turns
        (the unwrapped angles they keep, COMMIT; else empty) -- a result file's ``/checkpoint``
        (docs/output.md), from which :meth:`from_checkpoint` makes the same state again to the last bit.
        Taken before a step, it also undoes that step (a rejected one)."""
        data = self.mechanism.el[2]
        kept = data.copy() if self.model.elements.kind_remembers.any() else np.zeros((0,) + data.shape[1:])
        return dict(zip(self.CHECKPOINT, self._arrays(s)), time=np.array(float(s.t)), elements=kept)

    def from_checkpoint(self, c: dict) -> State:
        """The state of a :meth:`checkpoint` (read back from a file, or taken before a rejected step), the
        elements' turn counts set back to it."""
        kept = np.asarray(c.get("elements", ()))
        if kept.size:
            self.mechanism.el[2][...] = kept
        return self._state_of(float(np.asarray(c["time"])), tuple(np.array(c[k], dtype=float) for k in self.CHECKPOINT))

    @staticmethod
    def _state_of(t: float, arrays: tuple) -> State:
        """The :class:`State` at time ``t`` of a state bundle (:meth:`_arrays`)."""
        r, q, v, a, w, al, a_prev, al_prev, prev_dt, energy, lam, lam_prev, lam_gap = arrays
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
        """``(a_prev, al_prev, prev_dt)`` of ``s`` for the compiled loop: the accelerations one and two steps
        back and those steps' sizes (see :meth:`_levels`)."""
        a, dt = self._levels(s.a.shape, [(s.a_prev, s.dt_prev), (s.a_prev2, s.dt_prev2)])
        al, _ = self._levels(s.al.shape, [(s.al_prev, s.dt_prev), (s.al_prev2, s.dt_prev2)])
        return a, al, dt

    def _lam_history(self, s: State) -> tuple:
        """``(lam_prev, lam_gap)`` of ``s`` for the compiled loop (see :meth:`_levels`)."""
        return self._levels((self.model.elements.n_unknowns,), [(s.lam_prev, s.lam_gap), (s.lam_prev2, s.lam_gap2)])

    def _lam(self, s: State) -> np.ndarray:
        """A copy of the elements' own unknowns of ``s`` (zero when it has none)."""
        n = self.model.elements.n_unknowns
        return np.zeros(n) if s.lam is None else np.array(s.lam, dtype=float)

    def restart(self, s: State) -> State:
        """``s`` without the history the next step would use: the previous accelerations of the predictor
        and the factorization in use.  The driver restarts at every stored frame, so that the steps after a
        frame depend on that frame alone (a resumed run repeats them to the last bit)."""
        self.mechanism.lu[2][0] = 0.0
        return replace(s, a_prev=None, al_prev=None, dt_prev=0.0, lam=self.multipliers(s), lam_prev=None, lam_gap=0.0,
                       a_prev2=None, al_prev2=None, dt_prev2=0.0, lam_prev2=None, lam_gap2=0.0)

    def accelerations(self, s: State) -> tuple:
        """The true accelerations (a, α) (n_all, 3) of every body at state ``s`` and the joints' multipliers
        (None without joints): :meth:`mbsim.mechanics.Mechanism.accelerations`."""
        return self.mechanism.accelerations(s)

    def rescaled(self, s: State, dt: float) -> State:
        """``s`` ready for a step of ``dt`` after a step of another size (THEORY §14, docs/stepping.md).

        Generalized-α's accelerations are not the true ones: a_n ≈ ẍ(t_n + δ h), δ = α_f − α_m, h the
        step that made them, to O(h²) -- and the next step's equations hold them to be that of its own h.
        When h changes, a_n (and the material angular acceleration Λ_nᵀα_n) is moved along the time by
        δ (h_new − h_old), its rate from the last step's difference, a_n − a_{n−1} (for α, the previous one
        carried into this step's body frame: α_{n−1} + h_old ω_n × α_{n−1}); without it a sequence of
        changing steps is first order for ρ∞ < 1 (tests/verification/test_error_control.py).  Jay &
        Negrut (2007) correct the HHT and generalized-α accelerations the same way.  Unchanged without a
        last step (the first, or after a restart) or when ``dt`` is that step's size."""
        h_old = s.dt_prev
        if s.a_prev is None or s.al_prev is None or not h_old > 0.0 or dt == h_old:
            return s
        p = self.params
        if p.alpha_f == p.alpha_m:
            return s
        from . import controlled as kc  # (the compiled loop's own formula)
        a, al = np.array(s.a, dtype=float), np.array(s.al, dtype=float)
        kc.rescale(float(dt), p.alpha_f, p.alpha_m, s.w, a, al, s.a_prev, s.al_prev, float(h_old))
        return replace(s, a=a, al=al)

    # ------------------------------------------------------------------
    def iterate(self, s: State, dt: float, d=None, th=None, lam=None, tangent: Optional[str] = None,
                blocks: bool = False) -> "Iterate":
        """The step from ``s`` by ``dt`` at the iterate with increments ``(d, θ)`` (n_all, 3; default: where
        Newton starts, :meth:`predict`) and own unknowns ``lam`` (physical; default those of ``s``): its
        residual, and with ``tangent`` ('consistent', 'seed') its tangent K = −∂R/∂u (scipy CSC) -- the
        compiled loop's own evaluation (:func:`mbsim.integrators.step.evaluate`), for the finite-difference
        tests and for diagnosis; with ``blocks`` each element instance's block (n, W, W) of the tangent,
        before the scatter."""
        import scipy.sparse as sp
        args, (R, Q, data, it, pred, out_blocks) = self.evaluation(s, dt, d, th, lam, tangent, blocks)
        failed = ks.evaluate(*args)
        K = None
        if tangent is not None:
            asm = self.mechanism.assembler
            K = sp.csc_matrix((self.solver.to_csc(data), asm.indices, asm.indptr), shape=(asm.ndof, asm.ndof))
        p = self.params
        d, th = args[6]
        return Iterate(R=R, Q=Q, K=K, data=data, blocks=out_blocks if blocks else None, d=d, theta=th, r1=it[0],
                       q1=it[1], v1=it[5], a1=it[6], w1=it[7], al1=it[8], a_pred=pred[0], w_pred=pred[1],
                       al_pred=pred[2], g=p.gamma / (p.beta * dt), c_a=1.0 / (p.beta * dt * dt), failed=int(failed))

    def evaluation(self, s: State, dt: float, d=None, th=None, lam=None, tangent: Optional[str] = None,
                   blocks: bool = False) -> tuple:
        """The arguments of the compiled evaluation of :meth:`iterate` (:func:`mbsim.integrators.step.evaluate`)
        and the arrays it fills, ``(R, Q, data, iterate, predictor, blocks)`` (benchmarks/chain.py times it)."""
        m = self.model
        if d is None or th is None:
            d, th = self.predict(s, dt)
        times = s.t + dt * np.arange(2)
        b = self._block(s, times[None, :], 1)
        lam1 = self._lam(s) if lam is None else np.ascontiguousarray(lam, dtype=float)
        n = m.n_all
        it = (np.empty((n, 3)), np.empty((n, 4)), np.empty((n, 3, 3)), np.empty((n, 3, 3)), np.empty((n, 3, 3)),
              np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)))
        pred = (np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)))
        R, Q, data = np.zeros(m.ndof), np.zeros(m.ndof), np.zeros(self.mechanism.assembler.size)
        args = self._arguments(b, 1, 1, False, dt)
        el = m.elements
        if blocks:  # no scatter positions: the blocks are returned
            bodies, el_arrays, elx = args[2]
            args = args[:2] + ((bodies, el_arrays, elx[:7] + (np.zeros((0, el.width ** 2), np.int32),) + elx[8:]),) \
                + args[3:]
        out = (R, Q, data, it, pred, np.zeros((el.n, el.width, el.width) if blocks else (0, el.width, el.width)))
        inc = (np.array(d, dtype=float), np.array(th, dtype=float))
        plan = args[0][:4] + (ks.TANGENTS[tangent] if tangent else ks.NO_TANGENT,)
        return (plan, *args[1:5], b["state"], inc, lam1, out, self._work), out

    def predict(self, s: State, dt: float):
        """Where the Newton iteration of the step from ``s`` by ``dt`` starts (docs/newton.md): the increments
        ``(d, θ)`` (n_all, 3), from the compiled loop's own predictor."""
        times = s.t + dt * np.arange(2)
        b = self._block(s, times[None, :], 1)
        n = self.model.n_all
        d, th = np.zeros((n, 3)), np.zeros((n, 3))
        args = self._arguments(b, 1, 1, False, dt)
        ks.predict(args[0], args[1], args[2], args[4], b["state"], (d, th), np.empty(self.model.elements.n_unknowns),
                   self._work)
        return d, th

    @staticmethod
    def increments(s: State, r1: np.ndarray, q1: np.ndarray):
        """The increments ``(d, θ)`` of the iterate with positions ``r1`` and unit quaternions ``q1`` from ``s``:
        ``r1 − r`` and the Cayley vector of ``Λ1 Λᵀ`` (THEORY §3)."""
        from ..kernels.rotations import cayvec_quat, quat_conj, quat_mul
        return r1 - s.r, cayvec_quat(quat_mul(q1, quat_conj(s.q)))

    def update(self, d: np.ndarray, th: np.ndarray, du: np.ndarray):
        """The increments after a Newton correction of the bodies ``du`` (6 n_moving): ``d + Δr`` and the
        Cayley vector of ``cay(Δθ) cay(θ)`` (THEORY §1; what the compiled loop does)."""
        from ..kernels.rotations import cay_compose
        nm = self.model.n_moving
        du = np.asarray(du, dtype=float).reshape(nm, 6)
        d, th = d.copy(), th.copy()
        d[:nm] += du[:, :3]
        th[:nm] = cay_compose(du[:, 3:], th[:nm])
        return d, th


@dataclass(frozen=True, eq=False)
class Iterate:
    """A Newton iterate of a step (:meth:`GeneralizedAlpha.iterate`): the residual ``R`` and the magnitudes
    summed into its rows ``Q`` (ndof,), the tangent ``K`` (None when not asked) and ``data`` (the same in the
    linear solver's storage), the element instances' blocks (with ``blocks``), the increments ``d``,
    ``theta``, the iterate's positions, unit quaternions, velocities, accelerations, angular velocities and
    angular accelerations (n_all, ·), the parts of a', ω', α' that do not depend on the unknowns, the
    step's g = γ/(βΔt) and c_a = 1/(βΔt²), and the first element instance undefined there (−1: none)."""

    R: np.ndarray
    Q: np.ndarray
    K: object
    data: np.ndarray
    blocks: Optional[np.ndarray]
    d: np.ndarray
    theta: np.ndarray
    r1: np.ndarray
    q1: np.ndarray
    v1: np.ndarray
    a1: np.ndarray
    w1: np.ndarray
    al1: np.ndarray
    a_pred: np.ndarray
    w_pred: np.ndarray
    al_pred: np.ndarray
    g: float
    c_a: float
    failed: int
