"""Observed order of accuracy of a scenario (what ``mbsim verify`` reports).

:func:`verify` runs a scenario at Δt, Δt/2 and Δt/4 and solves it with the
independent reference solver (:mod:`mbsim.reference`, DOP853 at tight
tolerances) at the same frame times.  Per quantity it measures the error of
each run against the reference (the largest over frames and bodies), the
observed order ``log(e(Δt)/e(Δt/2)) / log 2`` of each halving, and states a
verdict in plain words.  The generalized-α scheme with mbsim's body residual
is second order for every ρ∞ (THEORY §2), so the expected order is 2.

Measured quantities: position [m], rotation angle [rad] (the angle between
the computed and the reference orientation, sign-insensitive), velocity
[m/s], angular velocity [rad/s], the energy balance
``kinetic + potential + dissipated − external work`` [J] (constant for the
exact motion, THEORY §9; its error is its drift) and, for a scenario with
joints, the joint reaction force [N] and moment [N·m] (``/joints/force``,
``/joints/moment``: on body A, the moment about the joint's point) against
the reference solver's reactions at the same frame times.  Accelerations
are not measured: generalized-α's acceleration is an algorithmic variable
that is not second-order accurate at the frame times.  Neither are the
reactions of a model whose redundant joint equations were removed
(SCENARIO.md, joints): how a reaction splits among redundant joints is not
determined by rigid-body mechanics (mbsim reports the removed equations'
share as zero, the reference solver the minimum-norm split), so the report
says so in its ``notes`` instead.

An error can only be measured down to a *floor*, the larger of

- the reference solver's own error, estimated by solving a second time at
  ``REFERENCE_CHECK_FACTOR`` times its ``rtol`` and taking the difference
  (DOP853's global error scales about linearly with its tolerance, so the
  difference is ~10× the error of the tight solution: an error above it is
  measured to ~10 %, enough for its order to ±0.15);
- accumulated round-off, ``ROUND_OFF_FACTOR · n · ε · scale``, with ``n``
  the steps of the finest run, ε the machine epsilon and ``scale`` the
  largest magnitude of the quantity in the reference (1 rad for rotations);
- for the joint reactions, what Newton's test determines: ``rtol · scale``
  (integrator.newton.rtol); for the reaction moments ``scale`` is the
  moments' plus the forces' times the extent of the motion in both parts,
  as a moment is a sum of moments of forces (see ``_orders``).

Errors below it -- e.g. free fall, whose motion the scheme reproduces
exactly -- are reported as "at round-off" and their order as not
measurable; that is a pass.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence

import numpy as np

from . import driver
from .energy import energy_balance
from .kernels.rotations import quat_angle
from .reference import solve_reference
from .scenario.spec import Ramp, Scenario, Table

EXPECTED_ORDER = 2.0
ORDER_TOLERANCE = 0.3
# Quantities whose error may fall faster than Δt²: the energy balance of a motion that conserves
# energy (or exchanges it only with drives and loads) is a first integral of the exact flow, and
# generalized-α's leading error along it is a phase error; the energy it loses is its algorithmic
# dissipation, O(Δt³) at low frequency (Chung & Hulbert 1993). Measured: Andrews' squeezer 2.96 and
# 3.07, the IFToMM A01 pendulum 2.05 then 2.83. An order below 2 is still a defect.
SUPERCONVERGENT = ("energy_balance",)
# Accumulated round-off of n steps is bounded by ~n·ε·scale when the errors of
# the steps add up; the factor covers the operations per step and the
# reference's own round-off (observed: 5e-12 m after 200 steps of free fall
# at 10 m, i.e. 25·n·ε·scale).
ROUND_OFF_FACTOR = 1000.0
# The reference is solved again at this multiple of its rtol to estimate its error.
REFERENCE_CHECK_FACTOR = 10.0

_ENERGIES = ("energy/kinetic", "energy/potential", "energy/dissipated", "energy/external_work")


class _Completed:
    """A run (or the reference solve) with a ``status``: ``ok`` when it completed."""

    @property
    def ok(self) -> bool:
        return self.status == "completed"


class _Runs:
    """A report of ``runs`` and a ``reference``: whether one was interrupted, whether all completed."""

    @property
    def interrupted(self) -> bool:
        return any(r.status == "interrupted" for r in self.runs)

    @property
    def runs_ok(self) -> bool:
        """Every run and the reference completed."""
        return all(r.ok for r in self.runs) and self.reference.ok


@dataclass
class StepRun(_Completed):
    """One generalized-α run of :func:`verify`.

    Attributes
    ----------
    step : float
        Time step Δt [s].
    label : str
        ``"Δt"``, ``"Δt/2"``, ``"Δt/4"`` (or the value when the steps are not halvings).
    status : str
        ``completed``, ``failed`` or ``interrupted`` (``RunSummary.status``).
    message : str
        The driver's message (where and why a run failed).
    steps, newton_iterations : int
        Work counters.
    wall_time_s : float
        Wall time of the run [s].
    frames : int
        Frames stored (compared with the reference).
    """

    step: float
    label: str
    status: str
    message: str
    steps: int
    newton_iterations: int
    wall_time_s: float
    frames: int
    frames_data: Optional[dict] = field(default=None, repr=False)

    def to_dict(self) -> dict:
        return {"step": self.step, "label": self.label, "status": self.status, "message": self.message,
                "steps": self.steps, "newton_iterations": self.newton_iterations,
                "wall_time_s": self.wall_time_s, "frames": self.frames}


@dataclass
class ReferenceRun(_Completed):
    """The reference solve of :func:`verify`.

    Attributes
    ----------
    status : str
        ``completed``, ``failed`` or ``skipped`` (no generalized-α run completed).
    message : str
        Why it failed or was skipped ("" when completed).
    method : str
        ``solve_ivp`` method.
    rtol, atol : float
        Its tolerances.
    nfev : int
        Right-hand-side evaluations (both solves).
    wall_time_s : float
        Wall time of both solves [s].
    check_rtol : float
        rtol of the second, looser solve that estimates the reference's error.
    """

    status: str
    message: str
    method: str
    rtol: float
    atol: float
    nfev: int = 0
    wall_time_s: float = 0.0
    check_rtol: float = 0.0

    def to_dict(self) -> dict:
        return {"status": self.status, "message": self.message, "method": self.method, "rtol": self.rtol,
                "atol": self.atol, "check_rtol": self.check_rtol, "nfev": self.nfev,
                "wall_time_s": self.wall_time_s}


@dataclass
class QuantityOrder:
    """Errors and observed orders of one quantity.

    Attributes
    ----------
    name : str
        ``position``, ``rotation``, ``velocity``, ``angular_velocity``, ``energy_balance``.
    label : str
        Words for it (``"angular velocity"``).
    unit : str
    errors : list of float or None
        Largest error over frames and bodies of each run [unit]; None where
        the run (or the reference) did not complete.
    orders : list of float or None
        Observed order between consecutive runs; None where not measurable.
    floor : float
        Smallest measurable error [unit]: the larger of the reference's
        estimated error and accumulated round-off.
    scale : float
        Largest magnitude of the quantity in the reference [unit] (1 rad for
        rotations; the largest energy term for the energy balance).
    status : str
        ``ok`` (orders as expected), ``off`` (an order outside the expected
        band), ``round-off`` (errors at the floor) or ``unmeasured`` (runs or
        reference missing).
    verdict : str
        One plain sentence.
    """

    name: str
    label: str
    unit: str
    errors: list
    orders: list
    floor: float
    status: str
    verdict: str
    scale: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "round-off")

    def to_dict(self) -> dict:
        return {"label": self.label, "unit": self.unit, "errors": list(self.errors),
                "orders": list(self.orders), "floor": self.floor, "scale": self.scale, "status": self.status,
                "ok": self.ok, "verdict": self.verdict}


@dataclass
class VerifyReport(_Runs):
    """Outcome of :func:`verify`.

    Attributes
    ----------
    scenario : str
        Scenario name.
    end : float
        Simulated span [s].
    interval : float
        Output interval used for every run [s] (the frames compared).
    runs : list of StepRun
        One per step, coarsest first.
    reference : ReferenceRun
    quantities : list of QuantityOrder
        Empty when no error could be measured.
    expected_order, order_tolerance : float
    hints : list of str
        When a quantity is not second order: what the pattern of its errors
        points to and what to change, most likely cause first (see
        :func:`diagnose`).
    notes : list of str
        What was not measured and why (the joint reactions of a model with
        redundant joint equations).
    """

    scenario: str
    end: float
    interval: float
    runs: list
    reference: ReferenceRun
    quantities: list
    expected_order: float = EXPECTED_ORDER
    order_tolerance: float = ORDER_TOLERANCE
    hints: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every run completed and every quantity is second order (or at round-off)."""
        return self.runs_ok and bool(self.quantities) and all(q.ok for q in self.quantities)

    def to_dict(self) -> dict:
        """Plain-data form (``mbsim verify --json``)."""
        return {"scenario": self.scenario, "end": self.end, "interval": self.interval,
                "expected_order": self.expected_order, "order_tolerance": self.order_tolerance,
                "passed": self.passed, "runs": [r.to_dict() for r in self.runs],
                "reference": self.reference.to_dict(),
                "quantities": {q.name: q.to_dict() for q in self.quantities}, "hints": list(self.hints),
                "notes": list(self.notes)}


def verify(scenario: Scenario, *, end: Optional[float] = None, steps: Optional[Sequence[float]] = None,
           reference_rtol: float = 1e-11, order_tolerance: float = ORDER_TOLERANCE,
           on_run: Optional[Callable] = None) -> VerifyReport:
    """Measure the order of accuracy of ``scenario`` against the reference solver.

    Parameters
    ----------
    scenario : Scenario
        A validated scenario.
    end : float, optional
        Simulated span [s]; default ``scenario.time.end``.  Must cover at
        least one step of the coarsest Δt.
    steps : sequence of float, optional
        Time steps [s], at least two, decreasing; default ``(Δt, Δt/2,
        Δt/4)`` with Δt = ``scenario.time.step``.  Every run stores frames
        every ``interval`` seconds, the scenario's ``output.interval`` when
        every step divides it, else the multiple of the first step nearest
        to it, so that the frames of all runs coincide.
    reference_rtol : float
        Relative tolerance of the reference solver (absolute: a tenth of it).
        A second solve at ``REFERENCE_CHECK_FACTOR`` times it estimates the
        reference's error (the floor below which errors are not measured).
    order_tolerance : float
        An observed order passes within ``2 ± order_tolerance``.
    on_run : callable, optional
        ``on_run(StepRun)`` after each generalized-α run, and
        ``on_run(ReferenceRun)`` after the reference (progress output).

    Returns
    -------
    VerifyReport

    Raises
    ------
    ValueError
        Steps that are not positive and decreasing, a span shorter than the
        first step, or steps that share no output grid.
    """
    span = float(scenario.time.end if end is None else end)
    hs = tuple(float(h) for h in (steps if steps is not None else
                                  (scenario.time.step, scenario.time.step / 2, scenario.time.step / 4)))
    if len(hs) < 2 or any(not (math.isfinite(h) and h > 0) for h in hs) or any(
            b >= a for a, b in zip(hs, hs[1:])):
        raise ValueError(f"steps must be at least two positive, decreasing time steps, got {hs}")
    if not (math.isfinite(span) and span >= hs[0] * (1 - 1e-9)):
        raise ValueError(f"the span (t = 0 … {span:.6g} s) is shorter than the time step {hs[0]:.6g} s: "
                         f"choose an end time of several steps")
    interval = _common_interval(scenario.output.interval, hs)
    labels = _labels(hs)
    reactions, notes = _joint_reactions_measurable(scenario)

    runs = []
    for h, label in zip(hs, labels):
        # fixed steps even if the scenario is adaptive or error-controlled: the order is measured at known
        # step sizes (verify_tolerance measures a tolerance's proportionality)
        sc = replace(scenario, time=replace(scenario.time, step=h, end=span, adaptive=False, rtol=None, atol=None,
                                            max_step=None),
                     output=replace(scenario.output, interval=interval))
        s = driver.run(sc, write=False, keep_frames=True)
        run = StepRun(h, label, s.status, s.message, s.steps, s.newton_iterations, s.wall_time_s, s.frames,
                      s.frames_data if s.status == "completed" else None)
        runs.append(run)
        if on_run is not None:
            on_run(run)
        if s.status == "interrupted":  # the user asked to stop: do not start more work
            break

    ref_atol = reference_rtol / 10
    done = [r for r in runs if r.ok]
    if any(r.status == "interrupted" for r in runs):
        ref = ReferenceRun("skipped", "verification interrupted", "DOP853", reference_rtol, ref_atol)
    elif not done:
        ref = ReferenceRun("skipped", "no generalized-α run completed", "DOP853", reference_rtol, ref_atol)
    else:
        ref, ref_frames, check_frames = _reference(scenario, done, reference_rtol, ref_atol)
    if on_run is not None and ref.status != "skipped":
        on_run(ref)

    quantities = []
    if ref.ok:
        quantities = _orders(runs, ref_frames, check_frames, order_tolerance, reactions, scenario.integrator.rtol)
    for r in runs:  # the frames are large; the report keeps the numbers only
        r.frames_data = None
    return VerifyReport(scenario.name, span, interval, runs, ref, quantities,
                        EXPECTED_ORDER, order_tolerance, diagnose(scenario, span, runs, quantities), notes)


def _joint_reactions_measurable(scenario: Scenario) -> tuple:
    """Whether the joint reactions can be compared with the reference solver's, and notes saying why not.

    They can unless redundant joint equations are removed at t = 0 (found as the run finds them, by
    building the model): the split of a reaction among redundant joints is not determined by
    rigid-body mechanics, and mbsim and the reference solver choose differently.
    """
    if not scenario.joints:
        return False, []
    from .model.model import Model
    from .mechanics.joints import JointError
    try:
        removed = [j.name for j in Model(scenario).joints if j.removed]
    except JointError:  # refused: the runs fail and say why
        return False, []
    if not removed:
        return True, []
    return False, [f"joint reactions not measured: redundant equations of joint{'s' if len(removed) > 1 else ''} "
                   f"{', '.join(repr(n) for n in removed)} were removed at t = 0, and how a reaction splits among "
                   f"redundant joints is not determined by rigid-body mechanics (mbsim reports the removed "
                   f"equations' share as zero, the reference solver the minimum-norm split)"]


# An observed order below this, where the scheme is second order, is the signature of an
# error that does not shrink with Δt (Newton's stopping tolerance), not of the discretization.
NEWTON_SIGNATURE_ORDER = 1.5


def diagnose(scenario: Scenario, span: float, runs: Sequence[StepRun], quantities: Sequence[QuantityOrder]) -> list:
    """What the errors of the quantities that are not second order point to, in plain words.

    - An error that grows when Δt shrinks, or falls at order ~1 or less: the time
      discretization of a second-order scheme cannot do that, an error that does not
      shrink with Δt can -- Newton's stopping tolerance (integrator.newton.rtol, atol).
    - A load or a joint drive given as a ramp or a table is only piecewise smooth: its kinks
      that lie inside the verified span (0, span) lower the order; verify before the first.
    - Orders that approach 2 from one halving to the next: Δt is not yet in the
      asymptotic range.

    Returns the hints, most likely cause first; empty when every quantity passed.
    """
    off = [q for q in quantities if q.status == "off"]
    if not off:
        return []
    hints = []
    low = [(q, p) for q in off for p in q.orders if p is not None and p < NEWTON_SIGNATURE_ORDER]
    if low:
        grows = [q.label for q, p in low if p < 0]
        slow = [(q.label, p) for q, p in low if p >= 0 and q.label not in grows]
        what = "; ".join(x for x in (
            f"the {', '.join(dict.fromkeys(grows))} error grows when Δt shrinks" if grows else "",
            f"the {', '.join(dict.fromkeys(label for label, _ in slow))} error falls at an order as low as "
            f"{min(p for _, p in slow):.2g}" if slow else "") if x)
        it = scenario.integrator
        hints.append(
            f"{what}: a second-order scheme cannot do that, an error that does not shrink with Δt can -- "
            f"most likely Newton's stopping tolerance: tighten integrator.newton.rtol (now {_g(it.rtol)}) "
            f"and atol (now {_g(it.atol)}), e.g. newton: {{rtol: {_g(it.rtol / 100)}, atol: {_g(it.atol / 100)}}}, "
            f"and verify again")
    kinks = load_kinks(scenario, span)
    if kinks:
        t, which = kinks[0]
        more = f" (and {len(kinks) - 1} more)" if len(kinks) > 1 else ""
        if t > runs[0].step:
            where = f"verify over a span before it: --end {_g(t)}"
        else:
            where = "verify over a span that does not contain a kink (--end), or with a step that lands on it"
        hints.append(f"{which} has a kink at t = {_g(t)} s{more}, inside the verified span, where the order "
                     f"drops: {where}")
    measured = [[p for p in q.orders if p is not None] for q in off]
    if any(len(ps) >= 2 and abs(ps[-1] - EXPECTED_ORDER) < abs(ps[0] - EXPECTED_ORDER) for ps in measured) or not low:
        hints.append(f"if the orders move towards {_g(EXPECTED_ORDER)} from one halving to the next, Δt is too "
                     f"large to be in the asymptotic range: verify again with --step {_g(runs[-1].step)}")
    hints.append("otherwise this may be a bug: please report it with the scenario and this output")
    return hints


def load_kinks(scenario: Scenario, span: float) -> list:
    """Times in (0, span) where a ramp or table load scale, or a joint's ramp or table drive,
    changes slope, sorted, with what has them: ``[(t, "load 2 (force on 'c', ramp)"), (t, "joint
    'crank' (angle drive, table)"), ...]``.  A smooth_ramp has none (it is C² at its ends, where
    only its third derivative jumps: the second-order scheme keeps its order).  A drive prescribes a
    position, so at its kinks the velocity jumps: a stronger break than a load's."""
    out = []
    for i, ld in enumerate(scenario.loads):
        ts, kind = _kinks(ld.scale)
        name = f"load {i + 1} ({ld.type} on '{ld.body}', {kind})"
        out += [(float(x), name) for x in ts if 0.0 < x < span]
    for j in scenario.joints:
        for what in ("angle", "displacement"):
            ts, kind = _kinks(getattr(j, what))
            name = f"joint '{j.name}' ({what} drive, {kind})"
            out += [(float(x), name) for x in ts if 0.0 < x < span]
    return sorted(out)


def _kinks(f) -> tuple:
    """``(times, kind)``: where time function ``f`` changes slope (a ramp's ends, a table's
    corners), none for the smooth ones (and for None)."""
    if isinstance(f, Ramp):
        return ([f.t0, f.t1] if f.start != f.end else []), "ramp"
    if isinstance(f, Table):
        t, v = np.asarray(f.times, float), np.asarray(f.values, float)
        slopes = np.concatenate(([0.0], np.diff(v) / np.diff(t), [0.0]))
        return [float(x) for x, a, b in zip(t, slopes[:-1], slopes[1:])
                if not np.isclose(a, b, rtol=1e-9, atol=1e-12 * float(np.abs(slopes).max(initial=0.0)))], "table"
    return [], ""


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def _common_interval(interval: float, hs) -> float:
    """An output interval that is a whole multiple of every step (the scenario's when it is)."""
    def divides(h, T):
        n = T / h
        return abs(n - round(n)) <= 1e-9 * max(n, 1.0) and round(n) >= 1
    if all(divides(h, interval) for h in hs):
        return float(interval)
    candidate = hs[0] * max(1, round(interval / hs[0]))
    if all(divides(h, candidate) for h in hs):
        return float(candidate)
    raise ValueError(f"the steps {', '.join(f'{h:.6g}' for h in hs)} s share no output grid: "
                     f"each must divide the first (e.g. Δt, Δt/2, Δt/4)")


def _labels(hs) -> list:
    ratios = [hs[0] / h for h in hs]
    if all(abs(r - round(r)) < 1e-9 * r for r in ratios):
        return ["Δt" if round(r) == 1 else f"Δt/{round(r)}" for r in ratios]
    return [f"Δt = {h:.6g} s" for h in hs]


def _equilibrium_start(scenario):
    """``initial: equilibrium``: the poses (scenario order) the runs start from, for the reference to start
    there too; None for ``as_given``."""
    if scenario.initial != "equilibrium":
        return None
    from .analysis.statics import find_equilibrium
    from .mechanics import Mechanism
    from .model.model import Model
    model = Model(scenario)
    eq = find_equilibrium(Mechanism(model), scenario.statics, scenario.integrator)
    return eq.state.r[model.order], eq.state.q[model.order]


def _reference(scenario, done, rtol, atol):
    """Solve the reference at the frame times of the completed runs."""
    times = np.unique(np.concatenate([r.frames_data["time"] for r in done]))
    # Runs at different steps reach the same frame time by different sums; merge
    # times closer than round-off so that each run finds its frames.
    keep = np.concatenate(([True], np.diff(times) > 1e-9 * max(float(times[-1]), 1e-300)))
    times = times[keep]
    k = REFERENCE_CHECK_FACTOR
    check_rtol = float(f"{k * rtol:.12g}")  # 1e-10, not 9.999999999999999e-11, in reports
    try:
        start = _equilibrium_start(scenario)
        sol = solve_reference(scenario, times, rtol=rtol, atol=atol, poses=start)
        check = solve_reference(scenario, times, rtol=check_rtol, atol=k * atol, poses=start)
    except (RuntimeError, ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
        return ReferenceRun("failed", str(exc), "DOP853", rtol, atol, check_rtol=check_rtol), None, None
    return (ReferenceRun("completed", "", sol.method, rtol, atol, sol.nfev + check.nfev,
                         sol.wall_time_s + check.wall_time_s, check_rtol),
            sol.frames(), check.frames())


_QUANTITIES = (  # name, words, unit
    ("position", "position", "m"),
    ("rotation", "rotation", "rad"),
    ("velocity", "velocity", "m/s"),
    ("angular_velocity", "angular velocity", "rad/s"),
    ("energy_balance", "energy balance", "J"),
)
_JOINT_QUANTITIES = (  # measured for scenarios with joints (see _joint_reactions_measurable)
    ("joint_force", "joint force", "N"),
    ("joint_moment", "joint moment", "N*m"),
)


def _errors_and_scales(f: dict, ref: dict) -> tuple[dict, dict]:
    """Largest error over frames and bodies (joints), and the reference's magnitude, per quantity."""
    def vec(path):
        err = np.linalg.norm(f[path] - ref[path], axis=-1)
        return (float(err.max()) if err.size else 0.0,
                float(np.linalg.norm(ref[path], axis=-1).max()) if err.size else 0.0)

    e, s = {}, {}
    e["position"], s["position"] = vec("bodies/position")
    ang = quat_angle(f["bodies/orientation"], ref["bodies/orientation"])
    e["rotation"], s["rotation"] = (float(ang.max()) if ang.size else 0.0), 1.0
    e["velocity"], s["velocity"] = vec("bodies/velocity")
    e["angular_velocity"], s["angular_velocity"] = vec("bodies/angular_velocity")
    bal = energy_balance(*(f[k] for k in _ENERGIES))
    bal_ref = energy_balance(*(ref[k] for k in _ENERGIES))
    e["energy_balance"] = float(np.abs(bal - bal_ref).max())
    s["energy_balance"] = float(max(np.abs(ref[k]).max() for k in _ENERGIES))
    if "joints/force" in f and "joints/force" in ref:
        e["joint_force"], s["joint_force"] = vec("joints/force")
        e["joint_moment"], s["joint_moment"] = vec("joints/moment")
    return e, s


def _orders(runs, ref_frames, check_frames, order_tolerance, reactions: bool = False, newton_rtol: float = 0.0) -> list:
    """Errors, orders and verdicts of every quantity (with ``reactions``, the joints' too).

    The joint reactions' floor has two more parts.  A state that Newton's test accepts is the exact
    solution of the scheme with every force perturbed by up to ``rtol`` of its size (docs/newton.md),
    so its reactions are determined to ``newton_rtol`` of the forces, not better; and a reaction
    moment is a sum of moments of those forces, so its round-off and that tolerance are relative to
    the forces times the mechanism's extent ℓ (the diagonal of the box the bodies move in), not to
    the moment itself -- which may be zero by symmetry (a spinning governor's bearing) while its
    forces are not."""
    quantities = _QUANTITIES + (_JOINT_QUANTITIES if reactions and "joints/force" in ref_frames else ())
    ref_error, _ = _errors_and_scales(check_frames, ref_frames)
    n_steps = max(r.steps for r in runs if r.ok)
    errors, scale = _run_errors(runs, ref_frames, [n for n, _, _ in quantities])
    floor_scale = dict(scale)
    if "joint_moment" in scale:
        pos = np.asarray(ref_frames["bodies/position"], dtype=float).reshape(-1, 3)
        extent = float(np.linalg.norm(np.ptp(pos, axis=0))) if pos.size else 0.0
        floor_scale["joint_moment"] = scale["joint_moment"] + scale["joint_force"] * extent
    out = []
    for name, words, unit in quantities:
        floor = max(ref_error[name], ROUND_OFF_FACTOR * n_steps * np.finfo(float).eps * floor_scale[name])
        if name in ("joint_force", "joint_moment"):
            floor = max(floor, newton_rtol * floor_scale[name])
        out.append(replace(_judge(name, words, unit, runs, errors[name], floor, order_tolerance), scale=scale[name]))
    return out


def _run_errors(runs, ref_frames, names) -> tuple[dict, dict]:
    """Per quantity of ``names``, each completed run's largest error against the reference at its frame
    times (None for a run that did not complete), and the reference's largest magnitude over them."""
    t_ref = ref_frames["time"]
    errors = {n: [None] * len(runs) for n in names}
    scale = {n: 0.0 for n in names}
    for i, r in enumerate(runs):
        if not r.ok:
            continue
        f = r.frames_data
        idx = np.clip(np.searchsorted(t_ref, f["time"] - 1e-9 * max(float(t_ref[-1]), 1e-300)),
                      0, t_ref.size - 1)
        ref = {k: v[idx] for k, v in ref_frames.items() if k.startswith(("bodies/", "energy/", "joints/"))}
        e, s = _errors_and_scales(f, ref)
        for n in names:
            errors[n][i] = e[n]
            scale[n] = max(scale[n], s[n])
    return errors, scale


def _judge(name, words, unit, runs, errs, floor, tol) -> QuantityOrder:
    """Orders of consecutive runs and the plain-words verdict."""
    hs = [r.step for r in runs]
    orders = []
    for i in range(len(runs) - 1):
        a, b = errs[i], errs[i + 1]
        if a is None or b is None or a <= floor or b <= floor:
            orders.append(None)
        else:
            orders.append(math.log(a / b) / math.log(hs[i] / hs[i + 1]))
    measured = [(i, p) for i, p in enumerate(orders) if p is not None]
    first = next((i for i, e in enumerate(errs) if e is not None), None)
    sym = f"{_e(floor)} {unit}"

    if first is None or sum(e is not None for e in errs) < 2:
        return QuantityOrder(name, words, unit, errs, orders, floor, "unmeasured",
                             f"{words}: not measured (fewer than two runs completed)")
    head = f"{words} error at {runs[first].label} = {_g(hs[first])} s: {_e(errs[first])} {unit}"
    if all(e == 0 for e in errs if e is not None):  # e.g. the rotation of bodies that never turn
        return QuantityOrder(name, words, unit, errs, orders, floor, "round-off",
                             f"{words} error: exactly 0 in every run (reproduced exactly); order not "
                             f"measurable — OK")
    if errs[first] <= floor:
        return QuantityOrder(name, words, unit, errs, orders, floor, "round-off",
                             f"{head}, at round-off (floor {sym}); order not measurable — OK")
    # The error at the first run is measurable: describe each halving.
    steps_desc, reached_floor = [], False
    for i in range(first, len(runs) - 1):
        a, b = errs[i], errs[i + 1]
        if a is None or b is None:
            break
        if b <= floor:
            steps_desc.append(f"{'brings it' if not steps_desc else 'then'} below the round-off floor of {sym} "
                              f"at {runs[i + 1].label}")
            reached_floor = True
            break
        steps_desc.append(f"{'divides it' if not steps_desc else 'then'} by {a / b:.2f}")
    ratio = hs[first] / hs[first + 1] if first + 1 < len(hs) else 2.0
    verb = "halving Δt" if abs(ratio - 2.0) < 1e-9 else f"dividing Δt by {ratio:.3g}"
    text = f"{head}; {verb} " + ", ".join(steps_desc) if steps_desc else head
    expected = f"expected {_g(EXPECTED_ORDER)}"
    if not measured and reached_floor:
        return QuantityOrder(name, words, unit, errs, orders, floor, "ok",
                             f"{text} (order not measurable) — OK")
    if not measured:  # runs next to each other did not both complete
        return QuantityOrder(name, words, unit, errs, orders, floor, "unmeasured",
                             f"{text}; order not measured (a run in between did not complete)")
    ords = " and ".join(f"{p:.2f}" for _, p in measured)
    if name in SUPERCONVERGENT:  # faster than 2 is what the scheme does here, not a defect
        bad = [p for _, p in measured if p < EXPECTED_ORDER - tol]
        expected, band = f"expected at least {_g(EXPECTED_ORDER)}", f" − {_g(tol)}"
    else:
        bad = [p for _, p in measured if abs(p - EXPECTED_ORDER) > tol]
        band = f" ± {_g(tol)}"
    word = "order" if len(measured) == 1 else "orders"
    if not bad:
        return QuantityOrder(name, words, unit, errs, orders, floor, "ok", f"{text} ({word} {ords}; {expected}) — OK")
    return QuantityOrder(name, words, unit, errs, orders, floor, "off",
                         f"{text} ({word} {ords}; {expected}{band}) — NOT second order")


# ---------------------------------------------------------------------------------------------------
# error-controlled steps (time.tolerance): tolerance proportionality instead of the order in Δt
# ---------------------------------------------------------------------------------------------------
TOLERANCE_MULTIPLE = 50.0  # a run passes when its position and rotation errors are within this × its atol
SLOPE_BAND = (0.6, 1.4)  # the log-log slope of the error against the tolerance, per decade


@dataclass
class ToleranceRun(_Completed):
    """One error-controlled run of :func:`verify_tolerance` (rtol and atol of the scenario divided by
    ``divisor``)."""

    rtol: float
    atol: float
    label: str
    status: str
    message: str
    steps: int
    rejected_steps: int
    newton_iterations: int
    wall_time_s: float
    frames: int
    smallest_step: Optional[float] = None
    largest_step: Optional[float] = None
    frames_data: Optional[dict] = field(default=None, repr=False)

    def to_dict(self) -> dict:
        return {"rtol": self.rtol, "atol": self.atol, "label": self.label, "status": self.status,
                "message": self.message, "steps": self.steps, "rejected_steps": self.rejected_steps,
                "newton_iterations": self.newton_iterations, "wall_time_s": self.wall_time_s, "frames": self.frames,
                "smallest_step": self.smallest_step, "largest_step": self.largest_step}


@dataclass
class ToleranceReport(_Runs):
    """Outcome of :func:`verify_tolerance`: per run the errors of every quantity against the reference
    (``errors[name]``, as :func:`verify` measures them), the log-log slopes of the error against the
    tolerance between consecutive runs (``slopes[name]``; None below the floor), and for position and
    rotation, which the tolerance controls (atol in m and rad), the verdicts."""

    scenario: str
    end: float
    interval: float
    runs: list
    reference: ReferenceRun
    errors: dict
    slopes: dict
    floors: dict
    verdicts: list
    multiple: float = TOLERANCE_MULTIPLE
    band: tuple = SLOPE_BAND
    judged_ok: bool = False

    @property
    def passed(self) -> bool:
        return self.runs_ok and self.judged_ok

    def to_dict(self) -> dict:
        return {"scenario": self.scenario, "end": self.end, "interval": self.interval, "mode": "tolerance",
                "multiple": self.multiple, "slope_band": list(self.band), "passed": self.passed,
                "runs": [r.to_dict() for r in self.runs], "reference": self.reference.to_dict(),
                "errors": self.errors, "slopes": self.slopes, "floors": self.floors, "verdicts": list(self.verdicts)}


def verify_tolerance(scenario: Scenario, *, end: Optional[float] = None, divisors: Sequence[float] = (1, 10, 100),
                     reference_rtol: float = 1e-11, on_run: Optional[Callable] = None) -> ToleranceReport:
    """Tolerance proportionality of a scenario with error-controlled steps (``time.tolerance``,
    docs/stepping.md): runs at its rtol and atol divided by each of ``divisors`` (default tol, tol/10,
    tol/100), the reference solver at their frame times, and per quantity the largest error over frames
    and bodies.  Position and rotation (what atol bounds, in m and rad) pass when every run's error is
    within :data:`TOLERANCE_MULTIPLE` × its atol and each slope of log error against log tolerance lies
    in :data:`SLOPE_BAND` (or the errors are at the floor: the reference's own error or round-off)."""
    tm = scenario.time
    if not tm.controlled:
        raise ValueError("the scenario has no time.tolerance: verify() measures its order in Δt")
    span = float(tm.end if end is None else end)
    ds = tuple(float(d) for d in divisors)
    if len(ds) < 2 or any(not (d > 0) for d in ds) or any(b <= a for a, b in zip(ds, ds[1:])):
        raise ValueError(f"divisors must be at least two increasing positive numbers, got {ds}")
    runs = []
    for d in ds:
        label = "tol" if d == 1 else f"tol/{d:g}"
        rtol, atol = (float(f"{x / d:.12g}") for x in (tm.rtol, tm.atol))  # (1e-6, not 1.0000000000000002e-06)
        sc = replace(scenario, time=replace(tm, rtol=rtol, atol=atol, end=span))
        s = driver.run(sc, write=False, keep_frames=True)
        run = ToleranceRun(rtol, atol, label, s.status, s.message, s.steps, s.rejected_steps,
                           s.newton_iterations, s.wall_time_s, s.frames, s.smallest_step, s.largest_step,
                           s.frames_data if s.status == "completed" else None)
        runs.append(run)
        if on_run is not None:
            on_run(run)
        if s.status == "interrupted":
            break
    done = [r for r in runs if r.ok]
    ref_atol = reference_rtol / 10
    errors, slopes, floors, verdicts, ok = {}, {}, {}, [], False
    if any(r.status == "interrupted" for r in runs):
        ref = ReferenceRun("skipped", "verification interrupted", "DOP853", reference_rtol, ref_atol)
    elif not done:
        ref = ReferenceRun("skipped", "no run completed", "DOP853", reference_rtol, ref_atol)
    else:
        ref, ref_frames, check_frames = _reference(scenario, done, reference_rtol, ref_atol)
    if on_run is not None and ref.status != "skipped":
        on_run(ref)
    if ref.ok:
        ref_error, _ = _errors_and_scales(check_frames, ref_frames)
        n_steps = max(r.steps for r in done)
        errors, scale = _run_errors(runs, ref_frames, [n for n, _, _ in _QUANTITIES])
        floors = {n: max(ref_error[n], ROUND_OFF_FACTOR * n_steps * np.finfo(float).eps * scale[n]) for n in errors}
        for name in errors:
            sl = []
            for i in range(len(runs) - 1):
                a, b = errors[name][i], errors[name][i + 1]
                good = a is not None and b is not None and a > floors[name] and b > floors[name]
                sl.append(math.log(a / b) / math.log(ds[i + 1] / ds[i]) if good else None)
            slopes[name] = sl
        ok = True
        for name, words, unit in _QUANTITIES[:2]:
            errs = errors[name]
            worst = max((e / r.atol for e, r in zip(errs, runs) if e is not None), default=math.nan)
            measured = [p for p in slopes[name] if p is not None]
            within = worst <= TOLERANCE_MULTIPLE or all(e is None or e <= floors[name] for e in errs)
            proportional = all(SLOPE_BAND[0] <= p <= SLOPE_BAND[1] for p in measured)
            ok = ok and within and proportional
            sl = " and ".join(f"{p:.2f}" for p in measured) or "not measurable (at the floor)"
            verdicts.append(f"{words}: errors {', '.join(_e(e) if e is not None else '-' for e in errs)} {unit}, "
                            f"at most {worst:.3g} × atol ({'within' if within else 'beyond'} "
                            f"{TOLERANCE_MULTIPLE:g} ×); slope per decade {sl} (expected "
                            f"{SLOPE_BAND[0]:g} … {SLOPE_BAND[1]:g}) — "
                            f"{'OK' if within and proportional else 'NOT proportional' if within else 'NOT within'}")
    for r in runs:
        r.frames_data = None
    interval = scenario.output.interval
    return ToleranceReport(scenario.name, span, interval, runs, ref, errors, slopes, floors, verdicts,
                           judged_ok=ok)


def _g(x) -> str:
    return f"{float(x):.6g}"


def _e(x) -> str:
    return f"{float(x):.2g}" if x == 0 else f"{float(x):.2e}"


__all__ = ["verify", "verify_tolerance", "ToleranceReport", "ToleranceRun", "TOLERANCE_MULTIPLE", "diagnose", "load_kinks", "VerifyReport", "StepRun", "ReferenceRun", "QuantityOrder",
           "EXPECTED_ORDER",
           "ORDER_TOLERANCE", "ROUND_OFF_FACTOR", "REFERENCE_CHECK_FACTOR"]
