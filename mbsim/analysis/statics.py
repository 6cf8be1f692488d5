"""Static equilibrium (THEORY §12): ``f(q, 0, t) − G(q)ᵀλ = 0``, ``Φ(q, t) = 0`` at rest.

Newton on the saddle-point system

    [ K + σM   k Gᵀ ] [ Δq  ]   [  R_s ]
    [ k G      0    ] [ Δλ̃ ] = [ −k Φ ]        λ = k λ̃,  K = ∂(Gᵀλ)/∂q − ∂f/∂q

with the multipliers scaled by a reference stiffness k (the constraint rows as forces), and

- **load stepping**: gravity and loads ramped by a factor μ from 0 to 1, the increment doubled after a
  load step that took at most :data:`EASY` iterations and halved after one that failed;
- at the start of every load step, the multipliers that balance the loads at the current positions
  (``[M, Gᵀ; G, 0][a; λ] = [f; 0]``, the reactions at rest), so that the reactions' geometric stiffness
  is in K from the first iteration (without it a pendulum has no stiffness at all);
- **limits**: a correction turning a body by more than :data:`ROTATION_LIMIT` rad, or moving one by more
  than :data:`TRANSLATION_LIMIT` model sizes, is shortened;
- a **line search** on the scaled residual norm (backtracking, Armijo), with a second-order correction
  (one more correction from the trial point with the same factorization: SQP's remedy for the Maratos
  effect, a straight step stretching a stiff spring that swings on an arc) and the potential energy as a
  second test where the residual's norm is stationary without being zero;
- a **shift** σM where the stiffness along the correction is negative (a step towards a maximum of the
  potential, the top of a pendulum's swing): σ grows until the correction goes downhill, then shrinks
  by 10 per successful iteration; a floor :data:`SIGMA_FLOOR`·σ₀ keeps the matrix regular along free
  motions that nothing loads (a wheel on its axle), and does not change the solution (at it R = Φ = 0).

A correction beyond :data:`RUNAWAY` times the model's size along a motion that the reduced stiffness
does not resist, with a net load along it here and a probe step (:data:`PROBE` of the limits) further
along it, is the sign of a mechanism without equilibrium: :class:`NoEquilibrium` names the bodies, the
direction and the load.  A motion free here only (a pendulum written horizontal: its reaction, and so
its stiffness along the swing, is zero at that instant) gets a shift, and the search goes on.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

import numpy as np

from ..kernels.rotations import quat_mul, quat_normalize, rotvec_quat

ROTATION_LIMIT = 0.5  # rad: the largest rotation of a body in one correction
TRANSLATION_LIMIT = 1.0  # model sizes: the largest translation of a body in one correction
PROBE = 0.1  # a free motion is probed this fraction of the correction limits away
EASY = 4  # a load step converged in at most this many iterations doubles the next increment
MAX_ITERATIONS = 200  # per load step
MIN_INCREMENT = 2.0 ** -20  # of the load factor: below it the search gives up
MAX_TOTAL = 3000  # iterations over all load steps
SIGMA_FLOOR = 1e-10  # σ ≥ SIGMA_FLOOR·σ₀ (σ₀ = F_ref/(L m_ref), a stiffness per mass)
RUNAWAY = 1e4  # a correction beyond RUNAWAY·L (m) or RUNAWAY rad asks whether a free motion is loaded
ROUNDOFF = 64.0  # a residual within ROUNDOFF·ε of the forces that cancel in it is converged
EPS = float(np.finfo(float).eps)


class StaticsFailed(Exception):
    """The equilibrium search gave up (diverged, or the load factor could not be raised): ``load_factor``
    the fraction of the loads that was balanced, ``iterations`` the Newton iterations taken."""

    def __init__(self, message: str, load_factor: float = 0.0, iterations: int = 0):
        super().__init__(message)
        self.load_factor = load_factor
        self.iterations = iterations


class NoEquilibrium(StaticsFailed):
    """The mechanism can move freely along a direction in which a net load acts: there is no equilibrium.
    ``motion`` is that direction (6 n_moving: [δr, δθ] per moving body, unit norm), ``load`` the net
    generalized load along it."""

    def __init__(self, message: str, motion=None, load: float = 0.0, load_factor: float = 0.0, iterations: int = 0):
        super().__init__(message, load_factor, iterations)
        self.motion = motion
        self.load = load


@dataclass(frozen=True)
class Equilibrium:
    """The result of :func:`solve_statics`: the ``state`` at rest (positions, orientations and the joints'
    multipliers), ``load_steps`` load increments and ``iterations`` Newton iterations taken, the 2-norm of
    the final ``residual`` f − Gᵀλ (N, N·m) and the reduced stiffness' ``stability`` (stable, unstable, neutral; filled in by
    the caller from :func:`mbsim.analysis.modes.lowest`)."""

    state: object
    load_steps: int
    iterations: int
    residual: float
    stability: str = ""


def _scales(model) -> tuple:
    """(L, m_ref, J_ref): the model's size [m] (its bodies' spread and its connectors' arms), the mean mass
    and the mean largest moment of inertia of the moving bodies."""
    nm = model.n_moving
    r = model.r0
    spread = float(np.linalg.norm(np.ptp(r, axis=0))) if len(r) > 1 else 0.0
    arms = model.elements.arm
    L = max(spread, float(np.max(arms)) if np.size(arms) else 0.0)
    if not L > 0 or not np.isfinite(L):
        L = 1.0
    return L, float(np.mean(model.mass[:nm])), float(np.mean(model.j_max))


def external_vector(model, t: float) -> np.ndarray:
    """Gravity and loads on the moving bodies at ``t`` as one vector of the bodies' unknowns (6 n_moving)."""
    nm = model.n_moving
    F, Mo, _, _ = model.external(t)
    return np.concatenate((F[:nm], Mo[:nm]), axis=1).ravel()


def advance(state, dq: np.ndarray, nm: int):
    """The state moved by the correction ``dq`` = [δr, δθ] per moving body (δθ spatial: Λ ← exp(δθ̂) Λ)."""
    r, q = state.r.copy(), state.q.copy()
    d = dq.reshape(nm, 6)
    r[:nm] += d[:, :3]
    q[:nm] = quat_normalize(quat_mul(rotvec_quat(d[:, 3:]), q[:nm]))
    return replace(state, r=r, q=q)


def balancing_multipliers(ev, rhs) -> np.ndarray:
    """The multipliers λ of ``[M, Gᵀ; G, 0][a; λ] = [rhs; 0]``: the reactions at rest under the forces
    ``rhs`` (the M⁻¹-weighted least-squares balance of ``rhs`` by Gᵀλ)."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as sla
    n_own = ev.G.shape[0]
    if n_own == 0:
        return np.zeros(0)
    A = sp.bmat([[ev.M, ev.G.T], [ev.G, None]], format="csc")
    try:
        x = sla.splu(A).solve(np.concatenate((rhs, np.zeros(n_own))))
    except RuntimeError:  # dependent joint rows here: keep λ = 0 and let Newton find them
        return np.zeros(n_own)
    return x[ev.M.shape[0]:] if np.all(np.isfinite(x)) else np.zeros(n_own)


class _Search:
    """One equilibrium search (the module docstring); :meth:`run` returns an :class:`Equilibrium`."""

    def __init__(self, mech, t: float, first: Optional[float], rtol: float, atol: float,
                 free: Callable, explain: Callable, notify: Optional[Callable] = None):
        self.mech, self.t, self.rtol, self.atol = mech, float(t), rtol, atol
        self.first = 1.0 if first is None else float(first)
        self.free, self.explain, self.notify = free, explain, notify
        m = mech.model
        self.nm, self.n_own = m.n_moving, m.elements.n_unknowns
        self.L, self.m_ref, self.j_ref = _scales(m)
        self.ext = external_vector(m, self.t)
        self.iterations = 0

    # ---------------------------------------------------------------------------------------------
    def _at(self, s, mu: float, derivatives: bool = True):
        ev = self.mech.evaluate(s, derivatives=derivatives)
        R = ev.f - self.ext + mu * self.ext - ev.constraint
        Q = np.abs(ev.f - self.ext) + mu * np.abs(self.ext) + np.abs(ev.constraint)  # what cancels in R
        return ev, R, Q

    def _norms(self, R, phi, fref) -> float:
        """The merit: the residual scaled to a dimensionless size (forces by F_ref, moments by F_ref·L,
        the joints' rows by L (m) or 1 (rad))."""
        nm = self.nm
        Rb = R.reshape(nm, 6)
        rot = self.mech.model.elements.unknown_rotation.astype(bool)
        p = phi / np.where(rot, 1.0, self.L) if phi.size else phi
        return float(np.sqrt(np.sum((Rb[:, :3] / fref) ** 2) + np.sum((Rb[:, 3:] / (fref * self.L)) ** 2)
                             + np.sum(p ** 2)))

    def _tolerances(self, s) -> tuple:
        nm = self.nm
        tol_r = self.atol + self.rtol * np.maximum(np.linalg.norm(s.r[:nm], axis=1), self.L)
        return tol_r, self.atol + self.rtol

    # ---------------------------------------------------------------------------------------------
    def run(self) -> Equilibrium:
        m = self.mech.model
        s = self.mech.state(self.t, m.r0, m.q0, np.zeros((m.n_all, 3)), np.zeros((m.n_all, 3)),
                            np.zeros(self.n_own))
        mu, inc, steps = 0.0, self.first, 0
        while mu < 1.0:
            target = min(1.0, mu + inc)
            if 1.0 - target < 1e-12:
                target = 1.0
            new, its = self._newton(s, target)
            if new is not None:
                s, mu, steps = new, target, steps + 1
                if self.notify is not None and target < 1.0:
                    self.notify(f"load factor {target:.4g} balanced in {its} iterations")
                if its <= EASY:
                    inc *= 2.0
                continue
            inc *= 0.5
            if inc < MIN_INCREMENT or self.iterations >= MAX_TOTAL:
                raise StaticsFailed(
                    f"the equilibrium search did not converge: the loads could be balanced up to a load factor "
                    f"of {mu:.6g} of 1 ({steps} load steps, {self.iterations} Newton iterations); the "
                    f"mechanism may have no equilibrium near its initial configuration (a spring too weak for "
                    f"its load, a linkage at a dead point): start it closer to its equilibrium, or give "
                    f"statics.load_steps a smaller first increment", mu, self.iterations)
        _, R, _ = self._at(s, 1.0, derivatives=False)
        return Equilibrium(state=s, load_steps=steps, iterations=self.iterations, residual=float(np.linalg.norm(R)))

    def _newton(self, s0, mu: float):
        """Newton at load factor ``mu`` from ``s0``: (the converged state, iterations) or (None, iterations)."""
        import scipy.sparse as sp
        import scipy.sparse.linalg as sla
        nm, n_own, L = self.nm, self.n_own, self.L
        s0, ev, R, Q = self._balanced(s0, mu)  # the reactions' geometric stiffness from the start
        fref = max(float(np.max(Q)) if Q.size else 0.0, 1e-300)
        kref = max(fref / L, float(np.max(np.abs(ev.K.diagonal()))) if nm else 0.0)
        sigma0 = fref / (L * self.m_ref)
        sigma = SIGMA_FLOOR * sigma0
        s = s0
        merit = self._norms(R, ev.phi, fref)
        for it in range(1, MAX_ITERATIONS + 1):
            self.iterations += 1
            if self.iterations > MAX_TOTAL:
                return None, it
            if not (np.all(np.isfinite(R)) and np.all(np.isfinite(ev.phi))):
                return None, it
            # converged: the residual at round-off, or the last correction within the tolerance
            if np.all(np.abs(R) <= ROUNDOFF * EPS * np.maximum(Q, 1e-300)) and self._rows_hold(ev.phi, s):
                return s, it - 1
            downhill = False  # the correction was shifted because the stiffness along it was negative
            while True:
                K = ev.K + sigma * ev.M
                A = sp.bmat([[K, kref * ev.G.T], [kref * ev.G, None]], format="csc") if n_own else K.tocsc()
                rhs = np.concatenate((R, -kref * ev.phi))
                try:
                    lu = sla.splu(A)
                    x = lu.solve(rhs)
                except RuntimeError:  # exactly singular: a free motion; raise the shift
                    x = None
                if x is None or not np.all(np.isfinite(x)):
                    if sigma >= 1e6 * sigma0:
                        return None, it
                    sigma = max(sigma * 100.0, 1e-6 * sigma0)
                    continue
                dq = x[:6 * nm]
                big = max(float(np.max(np.abs(dq.reshape(nm, 6)[:, :3]))) / L,
                          float(np.max(np.abs(dq.reshape(nm, 6)[:, 3:]))))
                if big > RUNAWAY and sigma < 1e6 * sigma0:
                    self._runaway(s, R, mu)  # raises NoEquilibrium when a free motion is loaded
                    # a motion nearly free here (a body free to turn about its suspension point, a pendulum
                    # at its dead point): a shift keeps it from swamping the rest of the correction
                    sigma = max(100.0 * sigma, 1e-4 * sigma0)
                    continue
                curv = float(dq @ (ev.K @ dq))
                mass = float(dq @ (ev.M @ dq))
                if curv < 0.0 and mass > 0.0:
                    downhill = True  # the stiffness along it is negative: the shift decides the direction
                    if curv + sigma * mass <= 0.0:  # towards a maximum of the potential: shift until downhill
                        sigma = max(10.0 * sigma, 2.0 * (-curv) / mass, 1e-3 * sigma0)
                        continue
                break
            scale = self._limit(dq)
            dq = dq * scale
            dlam = kref * x[6 * nm:] * scale
            # line search (backtracking, Armijo) on the merit; a shifted correction, which goes downhill in
            # the potential rather than towards the nearest stationary point, on the potential instead
            slope = float(R @ dq)
            # after a failed line search too (σ raised): the residual's norm can be stationary where it is
            # not zero (a pendulum on a spring, written horizontal: no stiffness along its swing there)
            downhill = downhill or sigma > 1.01 * SIGMA_FLOOR * sigma0
            v0 = float(np.sum(ev.potential))
            alpha, accepted = 1.0, False
            while alpha >= 1.0 / 64:
                trial = advance(s, alpha * dq, nm)
                if n_own:
                    trial = replace(trial, lam=s.lam + alpha * dlam)
                try:
                    ev_t, R_t, Q_t = self._at(trial, mu)
                except ValueError:  # an element undefined there (a spring collapsed to zero length)
                    alpha *= 0.5
                    continue
                m_t = self._norms(R_t, ev_t.phi, fref)
                ok = np.isfinite(m_t) and m_t <= (1.0 - 1e-4 * alpha) * merit
                if not ok and alpha == 1.0 and scale == 1.0:
                    # a second-order correction (SQP's against the Maratos effect): one more correction with
                    # the same factorization from the trial point, which brings back what the curvature of
                    # a stiff direction (a stiff spring swinging, a joint's rows) made of a straight step
                    y = lu.solve(np.concatenate((R_t, -kref * ev_t.phi)))
                    if np.all(np.isfinite(y)) and self._limit(y[:6 * nm]) == 1.0:
                        soc = advance(trial, y[:6 * nm], nm)
                        if n_own:
                            soc = replace(soc, lam=trial.lam + kref * y[6 * nm:])
                        try:
                            ev_c, R_c, Q_c = self._at(soc, mu)
                            m_c = self._norms(R_c, ev_c.phi, fref)
                        except ValueError:
                            m_c = np.inf
                        if np.isfinite(m_c) and m_c <= (1.0 - 1e-4) * merit:
                            trial, ev_t, R_t, Q_t, m_t, ok = soc, ev_c, R_c, Q_c, m_c, True
                            dq = dq + y[:6 * nm]
                if np.isfinite(m_t) and slope > 0 and (downhill or not ok):
                    # or the potential falls (Armijo): where the residual's norm is no guide (a shifted
                    # correction heading downhill; a residual norm stationary where it is not zero)
                    drop = float(np.sum(ev_t.potential)) - v0 - mu * float(self.ext @ (alpha * dq))
                    ok = ok or (drop <= -1e-4 * alpha * slope and (downhill or m_t <= 10.0 * merit))
                if ok:
                    accepted = True
                    break
                alpha *= 0.5
            if not accepted:
                if self._small(dq, s) and self._rows_hold(ev.phi, s):
                    return s, it  # no progress left to make, and what is left is within the tolerance
                if sigma >= 1e6 * sigma0:
                    return None, it
                sigma = max(sigma * 10.0, 1e-2 * sigma0)  # a shorter, more cautious step (a stronger shift)
                continue
            step_small = self._small(dq * alpha, trial)
            s, ev, R, Q, merit = trial, ev_t, R_t, Q_t, m_t
            newton = sigma <= 1.01 * SIGMA_FLOOR * sigma0 or sigma * mass <= 1e-3 * abs(curv)  # a Newton correction
            if alpha == 1.0 and scale == 1.0:
                sigma = max(sigma / (10.0 if downhill else 100.0), SIGMA_FLOOR * sigma0)
            if step_small and newton and self._rows_hold(ev.phi, s):
                return s, it
        return None, MAX_ITERATIONS

    def _reach(self, dq) -> float:
        """The factor that makes ``dq`` turn a body by ROTATION_LIMIT or move one by TRANSLATION_LIMIT model
        sizes, whichever comes first (inf for a zero ``dq``)."""
        d = dq.reshape(self.nm, 6)
        turn = float(np.max(np.linalg.norm(d[:, 3:], axis=1)))
        move = float(np.max(np.linalg.norm(d[:, :3], axis=1)))
        return min(ROTATION_LIMIT / turn if turn > 0 else np.inf,
                   TRANSLATION_LIMIT * self.L / move if move > 0 else np.inf)

    def _limit(self, dq) -> float:
        """The factor (at most 1) that shortens ``dq`` to the correction limits."""
        return min(1.0, self._reach(dq))

    def _balanced(self, s, mu: float):
        """``s`` with the multipliers that balance the loads there, and its evaluation (ev, R, Q)."""
        ev, R, Q = self._at(s, mu)
        if self.n_own:
            s = replace(s, lam=balancing_multipliers(ev, ev.f - self.ext + mu * self.ext))
            ev, R, Q = self._at(s, mu)
        return s, ev, R, Q

    def _runaway(self, s, R, mu: float) -> None:
        """A correction ran away: raise NoEquilibrium if a free motion (nothing resists it) is loaded here
        and still, the same way, after a probe step along it (a pendulum written horizontal has no
        stiffness along its swing at that instant only: its reaction is zero there)."""
        hit = self.free(s, R)
        if hit is None:
            return
        d, load = hit
        probe = advance(s, d * PROBE * self._reach(d), self.nm)
        try:
            s2, _, R2, _ = self._balanced(probe, mu)
        except ValueError:  # an element undefined at the probe
            return
        again = self.free(s2, R2)
        if again is not None and abs(float(again[0] @ d)) > 0.5:
            raise self.explain(d, load, mu, self.iterations)

    def _small(self, dq, s) -> bool:
        """Whether the correction ``dq`` is within the tolerance of every body (m and rad)."""
        tol_r, tol_t = self._tolerances(s)
        d = dq.reshape(self.nm, 6)
        return bool(np.all(np.linalg.norm(d[:, :3], axis=1) <= tol_r)
                    and np.all(np.linalg.norm(d[:, 3:], axis=1) <= tol_t))

    def _rows_hold(self, phi, s) -> bool:
        """Whether the joints' rows hold within the tolerance (m or rad)."""
        if not phi.size:
            return True
        rot = self.mech.model.elements.unknown_rotation.astype(bool)
        tol = np.where(rot, self.atol + self.rtol, self.atol + self.rtol * self.L)
        return bool(np.all(np.abs(phi) <= tol))


def solve_statics(mech, t: float = 0.0, first: Optional[float] = None, rtol: float = 1e-8, atol: float = 1e-10,
                  free: Optional[Callable] = None, explain: Optional[Callable] = None,
                  notify: Optional[Callable] = None) -> Equilibrium:
    """The static equilibrium of mechanism ``mech`` (:class:`mbsim.mechanics.Mechanism`) under its gravity,
    loads and drive positions at time ``t`` (the module docstring).

    ``first`` is the first increment of the load factor (None: 1, the whole load; halved while it fails);
    ``rtol``/``atol`` the tolerances of the positions [m] and rotations [rad].  When a correction runs
    away, ``free(state, R)`` gives the free motion along which the residual ``R`` pushes, (direction,
    load) or None (:func:`mbsim.analysis.modes.free_loaded_motion`), and ``explain(direction, load, mu,
    iterations)`` the NoEquilibrium to raise; ``notify(text)`` hears of every load step.  Raises
    :class:`StaticsFailed` when the search gives up."""
    if free is None:
        def free(*args):
            return None
    return _Search(mech, t, first, rtol, atol, free, explain, notify).run()


def describe_motion(model, d: np.ndarray, L: float) -> str:
    """The motion ``d`` (6 per moving body) in words: the bodies that take part and how (translating along
    a direction, rotating about an axis), largest first."""
    nm = model.n_moving
    b = d.reshape(nm, 6)
    tr = np.linalg.norm(b[:, :3], axis=1)
    rot = np.linalg.norm(b[:, 3:], axis=1) * L  # a rotation weighed by the model's size
    top = max(float(tr.max()), float(rot.max()))
    parts = []
    for i in np.argsort(-np.maximum(tr, rot)):
        if max(tr[i], rot[i]) < 1e-3 * top:
            break
        words = []
        if tr[i] >= 1e-3 * top:
            words.append(f"translating along [{', '.join(f'{x:.3g}' for x in b[i, :3] / tr[i])}]")
        if rot[i] >= 1e-3 * top:
            u = b[i, 3:] / np.linalg.norm(b[i, 3:])
            words.append(f"rotating about [{', '.join(f'{x:.3g}' for x in u)}]")
        parts.append(f"body '{model.names[i]}' " + " and ".join(words))
        if len(parts) == 6:
            parts.append("…")
            break
    return "; ".join(parts)


def find_equilibrium(mech, spec, newton, notify: Optional[Callable] = None) -> Equilibrium:
    """The equilibrium of ``mech`` as a scenario's ``statics`` section ``spec`` asks (its time, first load
    increment and tolerances; ``newton`` the ``integrator`` spec whose tolerances are the default), with
    its stability; raises :class:`NoEquilibrium` naming a loaded free motion, :class:`StaticsFailed` when
    the search gives up."""
    from .linear import linearize_state
    from .modes import free_loaded_motion, stability
    model = mech.model
    L = _scales(model)[0]

    def free(s, R):
        return free_loaded_motion(linearize_state(mech, s), R, float(np.max(np.abs(R))) if R.size else 0.0)

    def explain(d, load, mu, iterations):
        return NoEquilibrium(
            f"no static equilibrium: the mechanism can move freely, with nothing to resist it, along a "
            f"direction in which a net load of {abs(load):.6g} (N, or N·m for a rotation) acts: "
            f"{describe_motion(model, d, L)} (the way the load pushes). Hold that motion (a joint, a spring, "
            f"a fixed body) or remove the load along it", d, load, mu, iterations)

    rtol = spec.rtol if spec.rtol is not None else newton.rtol
    atol = spec.atol if spec.atol is not None else newton.atol
    eq = solve_statics(mech, spec.time, spec.load_steps, rtol, atol, free, explain, notify)
    st, _, _ = stability(linearize_state(mech, eq.state))
    return replace(eq, stability=st)
