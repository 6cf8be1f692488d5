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

Newton stopping test (documented for users in docs/newton.md).  Every
iteration k ≥ 1 evaluates the residual R_k at the iterate u_k and solves
for the next correction Δu_k = K⁻¹R_k with the factorization in use.  With
the contraction rate ρ_k = ‖Δu_k‖/‖Δu_{k−1}‖ (in the max-norm that weighs
each body's translation and rotation by its tolerance), the distance from u_k to the
solution of the step is at most ‖Δu_k‖/(1 − ρ_k) (a contraction's
a-posteriori bound), and u_k -- whose residual was evaluated -- is accepted
when that bound is within tolerance, body by body and kind by kind:

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
magnitudes that cancel in them (see :meth:`GeneralizedAlpha._tolerances`)
are converged as far as floating point allows and drop out of the test;
and a correction below :data:`NOISE_SIZE` of the tolerance ends the
iteration, since the rate measured between such corrections is noise.

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

from ..assembly import Assembler
from ..linalg import LinearSolver, SingularMatrix
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

# A step that needed this many corrections or more hands the next step a fresh
# factorization (made with its first residual, at no extra evaluation): the kept one
# contracts too slowly for the motion, where a fresh tangent takes about two.
SLOW_STEP = 3

# Modified Newton keeps a factorization while each correction is at most this
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
    trapezoidal rule of the next step).  ``a_prev``/``al_prev`` are the
    accelerations one step earlier and ``dt_prev`` that step's size: only the
    Newton predictor reads them (:meth:`GeneralizedAlpha.predict`), and
    :meth:`GeneralizedAlpha.restart` drops them.
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
    and the linear solver's ``nlu``.
    """

    name = "generalized-alpha"

    def __init__(self, model: Model, spec: IntegratorSpec):
        self.model = model
        self.spec = spec
        self.params = AlphaParameters.from_rho(spec.rho_inf)
        asm = self.assembler = Assembler(model)
        self.solver = LinearSolver(model.ndof, asm.indptr, asm.indices, asm.rows, asm.cols, asm.coupling)
        asm.use_storage(self.solver.storage_map, self.solver.storage_size)
        self.n_steps = 0
        self.n_iterations = 0
        self.n_assemblies = 0
        self.lu = None  # the factorization in use (modified Newton keeps it across iterations and steps)
        self.lu_dt = None
        # largest principal moment of inertia and longest connector arm |Z| of each moving body
        # (the rotational rows of _tolerances and their round-off)
        nm = model.n_moving
        # contiguous: a strided column would give the compiled loop a second numba specialization
        self._j_max = np.ascontiguousarray(np.linalg.eigvalsh(model.inertia[:nm])[:, -1]) if nm else np.zeros(0)
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
        """State at t = 0 with the physical initial accelerations (THEORY §4)."""
        m = self.model
        a, al = m.initial_accelerations(0.0)
        s = State(0.0, m.r0.copy(), m.q0.copy(), m.v0.copy(), a, m.w0.copy(), al)
        pd, pe = self.powers(s)
        return replace(s, power_diss=pd, power_ext=pe)

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
            Krr=(am * m.mass[:nm] * c_a)[:, None, None] * np.eye(3), stiff=self._spring_scale(s.r))

    def _spring_scale(self, r: np.ndarray) -> np.ndarray:
        """Per moving body, Σ k·(|x_A| + |x_B|) over its springs at positions ``r`` [N/1]: times ε, the
        round-off of their forces k(L − L0), formed from points that far from the origin."""
        out = np.zeros(self.model.n_all)
        el = self.model.elements
        springy = el.stiff != 0.0
        ia, ib, arm = el.body[springy, 0], el.body[springy, 1], el.arm[springy]
        norms = np.linalg.norm(r, axis=1)
        kx = el.stiff[springy] * (norms[ia] + norms[ib] + arm[:, 0] + arm[:, 1])
        np.add.at(out, ia, kx)
        np.add.at(out, ib, kx)
        return out[:self.model.n_moving]

    def evaluate(self, ctx: "_StepContext", d: np.ndarray, th: np.ndarray,
                 tangent: Optional[str] = None) -> "_Iterate":
        """Residual (and tangent data if ``tangent``) at the iterate with increments ``(d, th)``
        (THEORY §4–7; see :meth:`predict` for what they are), from the compiled kernels: the body
        terms (:mod:`mbsim.kernels.bodies`) and every element's law (:mod:`mbsim.elements.engine`)."""
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
                      ctx.w_pred, ctx.al_pred, r1, q1, R1, T, Om, v1, a1, w1, al1)
        kin = Kinematics(alpha_f=p.alpha_f, R1=R1, Rn=ctx.Rn, r1=r1, rn=s.r, v1=v1, vn=s.v, w1=w1, wn=s.w,
                         g=ctx.g, T=T, Omega=Om)
        R, Q = np.empty(asm.ndof), np.empty(asm.ndof)
        Ktt = np.empty((nm, 3, 3)) if tangent is not None else np.empty((1, 3, 3))
        kb.residual(nm, m.mass, m.inertia, R1, ctx.Rn, T, a1, s.a, w1, al1, ctx.F_ext[None], ctx.M_ext[None], 0,
                    ctx.Xn, p.alpha_f, p.alpha_m, ctx.c_a, ctx.g, tangent is not None, R, Q, Ktt,
                    np.empty(kc.SCRATCH))
        t1 = clock()
        ev = evaluate_at(m.elements, kin, tangent)
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

    def _tolerances(self, ctx: "_StepContext", it: "_Iterate") -> np.ndarray:
        """How far the unknowns may be from the step's solution, per moving body and kind
        (translation, rotation), ``(nm, 2)`` in m and rad (see the module docstring); ``inf`` for
        the rows whose residual is at round-off.

        A body's force (moment) residual is at round-off when it is within ``ROUNDOFF_FACTOR·ε``
        of the magnitudes that cancel in it: the forces (moments) summed into the rows (``Q``);
        its springs' ``Σ k(|x_A| + |x_B|)`` (a force k(L − L0) formed from points far from the
        origin); for the moments, ℓ times both (ℓ the body's longest connector arm: z×f rounds
        like |z||f|, not |z×f|); and the inertia of the terms that cancel in the new
        accelerations and angular velocity, ``α_m m (c_a|d| + |a_pred|)`` and ``J_max (α_m (c_a|θ|
        + |α_pred|) + 2α_f|ω'|(g|θ| + |ω_pred|))``.  Closer to the solution than that, the
        iterate cannot be told from it in floating point, whatever the stiffness, and its
        correction is noise.
        """
        m, p, spec = self.model, self.params, self.spec
        nm = m.n_moving
        rt, at = spec.rtol, spec.atol
        g, c_a, am = ctx.g, ctx.c_a, p.alpha_m

        def nrm(x):
            return np.sqrt(np.einsum("ij,ij->i", x[:nm], x[:nm]))

        th = nrm(it.theta)
        t = 1.0 + 0.5 * th + 0.25 * th * th  # ≥ ‖T(θ)‖
        w, al = nrm(it.w1), nrm(it.al1)
        Q = it.Q.reshape(nm, 2, 3)
        qr, qt = nrm(Q[:, 0]), nrm(Q[:, 1])
        tol = np.empty((nm, 2))
        tol[:, 0] = np.minimum(np.minimum(at + rt * nrm(it.r1), (at + rt * nrm(it.v1)) / g),
                               (at + rt * np.maximum(nrm(it.a1), qr / (am * m.mass[:nm]))) / c_a)
        tol[:, 1] = np.minimum(np.minimum(at + rt, (at + rt * w) / (g * t + w)),
                               (at + rt * np.maximum(al, qt / (am * self._j_max))) / (c_a * t + al))
        R = np.linalg.norm(it.R.reshape(nm, 2, 3), axis=2)
        floor_r = qr + ctx.stiff + am * m.mass[:nm] * (c_a * nrm(it.d) + nrm(ctx.a_pred))
        floor_t = qt + self._arm * (qr + ctx.stiff) + self._j_max * (
            am * (c_a * th + nrm(ctx.al_pred)) + 2 * p.alpha_f * w * (g * th + nrm(ctx.w_pred)))
        tol[R[:, 0] <= ROUNDOFF_FACTOR * _EPS * floor_r, 0] = np.inf
        tol[R[:, 1] <= ROUNDOFF_FACTOR * _EPS * floor_t, 1] = np.inf
        return tol

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
        d, th = self.predict(s, dt)
        history: list[float] = []
        status, msg = None, ""
        last = np.inf  # weighted size of the previous correction (‖Δu_{k−1}‖ in units of the tolerance)
        if not modified or self.lu_dt is None or abs(self.lu_dt - dt) > 1e-12 * dt:
            self.lu = None  # the mass terms m/(βΔt²) change with Δt: never reuse across a new step size
        k = 0  # corrections applied
        while True:
            fresh = self.lu is None
            it = self.evaluate(ctx, d, th, spec.tangent if fresh else None)
            if it.elements.failed >= 0:
                status, msg = StepStatus.DEGENERATE, m.elements.failure(it.elements.failed)
                break
            rnorm = float(np.linalg.norm(it.R))
            history.append(rnorm)
            if not np.isfinite(rnorm):
                status, msg = StepStatus.NONFINITE, "the residual is not finite"
                break
            if len(history) >= 4 and history[-1] > history[-2] > history[-3] > history[-4]:
                status, msg = StepStatus.DIVERGED, "the residual grew in 3 consecutive iterations"
                break
            if rnorm > 1e8 * max(history[0], np.finfo(float).tiny):
                status, msg = StepStatus.DIVERGED, "the residual grew by more than 1e8"
                break
            tol = self._tolerances(ctx, it)
            du, status, msg = self._correction(it, dt, fresh)
            if status is not None:
                break
            size = self._size(du, tol)
            rate = size / last if last > 0.0 else np.inf  # (a correction of 0 ends the iteration as noise)
            if k > 0 and (size <= NOISE_SIZE or rate < 1.0 and size <= 1.0 - rate):
                status = StepStatus.CONVERGED  # ‖u_k − u*‖ ≤ ‖Δu_k‖/(1 − ρ) ≤ tol, or Δu_k is noise
                break
            if k == spec.max_iterations:
                status, msg = StepStatus.MAX_ITERATIONS, (
                    f"no convergence in {spec.max_iterations} Newton iterations")
                break
            if not fresh and k > 0 and rate > CONTRACTION_LIMIT:
                # the old factorization no longer contracts fast enough: refresh it here, and measure
                # the rate afresh from two corrections of the new one
                it = self.evaluate(ctx, d, th, spec.tangent)
                du, status, msg = self._correction(it, dt, True)
                if status is not None:
                    break
                size = self._size(du, tol)
            if not modified:
                self.lu = None
            self.n_iterations += 1
            k += 1
            last = size
            d, th = self.update(d, th, du)

        if status is not StepStatus.CONVERGED:
            if status in (StepStatus.MAX_ITERATIONS, StepStatus.DIVERGED) and nm:
                msg += "; " + self._culprit(it.R)
            return StepResult(status, k, history[-1] if history else np.nan, msg, None, history)

        self.n_steps += 1
        if k >= SLOW_STEP:
            self.lu = None  # the factorization contracts too slowly for this motion: a fresh one for the next step
        new = State(s.t + dt, it.r1, it.q1, it.v1, it.a1, it.w1, it.al1, s.dissipated, s.external_work,
                    a_prev=s.a, al_prev=s.al, dt_prev=dt)
        t0 = self.clock()
        pd, pe = self.powers(new)
        self.timing["energy"] += self.clock() - t0
        # trapezoidal rule on the power along the discrete trajectory: O(Δt²), like the scheme
        new = replace(new, power_diss=pd, power_ext=pe,
                      dissipated=s.dissipated + 0.5 * dt * (s.power_diss + pd),
                      external_work=s.external_work + 0.5 * dt * (s.power_ext + pe))
        return StepResult(status, k, history[-1], "", new, history)

    def _correction(self, it: "_Iterate", dt: float, fresh: bool):
        """Δu = K⁻¹R with the factorization in use, factorizing ``it.data`` first if ``fresh``.

        Returns ``(du, None, "")``, or ``(None, status, message)`` when the tangent is singular or
        the correction not finite."""
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
            return None, StepStatus.SINGULAR, f"the tangent matrix is singular ({exc})"
        if not np.all(np.isfinite(du)):
            return None, StepStatus.NONFINITE, "the Newton correction is not finite"
        return du, None, ""

    @staticmethod
    def _size(du: np.ndarray, tol: np.ndarray) -> float:
        """The correction's size in units of the tolerance: max over bodies and kinds."""
        return float(np.max(np.linalg.norm(du.reshape(-1, 2, 3), axis=2) / tol, initial=0.0))

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
        taken = stepper.advance(nsteps, dt, *b["state"], self.model.gravity, *b["model"], *b["loads"], *b["elements"],
                                *b["solver"], *b["work"])
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
            nframes, spf, dt, *b["state"], self.model.gravity, *b["model"], *b["loads"], *b["elements"], *b["solver"],
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
        if s.a_prev is not None and s.dt_prev > 0.0:  # the predictor's history (see State)
            history = (s.a_prev.copy(), s.al_prev.copy(), np.array([s.dt_prev]))
        else:
            history = (np.zeros_like(s.a), np.zeros_like(s.al), np.zeros(1))
        f["lu_state"][0] = 0.0  # a fresh tangent at the start of every block (= after every frame)
        self.lu = None
        spec = self.spec
        iterations, residuals = np.zeros(nsteps, dtype=np.int64), np.zeros(nsteps)
        counters = np.zeros(3, dtype=np.int64)
        return {
            "t0": t0,
            "state": tuple(x.copy() for x in (s.r, s.q, s.v, s.a, s.w, s.al)) + history + (energy,),
            "model": (nm, m.mass, m.inertia, self._j_max, self._arm, af, p.alpha_m, p.beta, p.gamma),
            "loads": (F_alpha, M_alpha, FL, ML),
            "elements": f["elements"],
            "solver": (self.assembler.body_pos, self.assembler.size, *f["structure"],
                       {"consistent": 1, "seed": 2}[spec.tangent], spec.modified, spec.max_iterations, spec.rtol,
                       spec.atol, ROUNDOFF_FACTOR, NOISE_SIZE, CONTRACTION_LIMIT, SLOW_STEP),
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
        r, q, v, a, w, al, a_prev, al_prev, prev_dt, energy = b["state"]
        dt_prev = float(prev_dt[0])
        new = State(t, r, q, v, a, w, al, float(energy[0]), float(energy[1]), float(energy[2]), float(energy[3]),
                    a_prev if dt_prev > 0.0 else None, al_prev if dt_prev > 0.0 else None, dt_prev)
        self.timing["compiled steps"] = self.timing.get("compiled steps", 0.0) + self.clock() - b["t0"]
        return new

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
                "lu_piv": np.zeros((self.model.n_moving, 6), np.int64), "lu_state": np.zeros(2)}

    def predict(self, s: State, dt: float):
        """Start of the Newton iteration, as increments ``(d, θ)`` (``(n_all, 3)`` each, zero for
        fixed bodies).

        Newmark's own relations with the new accelerations extrapolated linearly
        from the last two steps, ``a' ≈ a_n + (Δt/Δt_prev)(a_n − a_prev)``:
        ``d = Δt v_n + Δt²((½−β) a_n + β a')`` and, since Newmark holds for the
        material vectors (THEORY §4), ``θ = Δt ω_n + Δt²((½−β) α_n + β cay(θ₀)ᵀα')``
        with ``θ₀ = Δt ω_n + ½Δt² α_n``.  Without a previous step (t = 0, after
        :meth:`restart`) a' = a_n, the constant-acceleration Taylor step.
        THEORY §4 starts from ``r' = r_n``, ``Λ' = Λ_n``; any start converges to
        the same solution, and this one is within O(Δt⁴) of it (O(Δt³) without
        a previous step), which saves about one Newton iteration per step on
        smooth motion.
        """
        nm, beta = self.model.n_moving, self.params.beta
        d, th = np.zeros_like(s.r), np.zeros_like(s.r)
        v, a, w, al = s.v[:nm], s.a[:nm], s.w[:nm], s.al[:nm]
        th0 = dt * w + 0.5 * dt * dt * al
        if s.a_prev is None or not s.dt_prev > 0.0:
            d[:nm] = dt * v + 0.5 * dt * dt * a
            th[:nm] = th0
            return d, th
        ratio = dt / s.dt_prev
        a1 = a + ratio * (a - s.a_prev[:nm])
        al1 = al + ratio * (al - s.al_prev[:nm])
        d[:nm] = dt * v + dt * dt * ((0.5 - beta) * a + beta * a1)
        th[:nm] = dt * w + dt * dt * ((0.5 - beta) * al + beta * tmatvec(cay(th0), al1))
        return d, th

    def restart(self, s: State) -> State:
        """``s`` without the history the next step would use: the previous accelerations of the
        predictor and the factorization in use.  The driver restarts at every stored frame, so
        that the steps after a frame depend on that frame alone (a resumed run repeats them to
        the last bit)."""
        self.lu = None
        return replace(s, a_prev=None, al_prev=None, dt_prev=0.0)

    def update(self, d: np.ndarray, th: np.ndarray, du: np.ndarray):
        """Newton update of the increments of the moving bodies: ``d ← d + Δr`` and ``θ`` such that
        ``cay(θ) = cay(Δθ)cay(θ)`` (the left update ``Λ' ← cay(Δθ)Λ'`` of THEORY §1)."""
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
    F_ext: np.ndarray
    M_ext: np.ndarray
    Xn: np.ndarray
    a_pred: np.ndarray
    w_pred: np.ndarray
    al_pred: np.ndarray
    Krr: np.ndarray
    stiff: np.ndarray  # Σ k·(|x_A| + |x_B|) of each moving body's springs (see GeneralizedAlpha._spring_scale)


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
