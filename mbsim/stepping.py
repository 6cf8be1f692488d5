"""Step-size controllers: which step to try next, and what to do when one fails.

The driver asks a controller for the next target time, hands the step to
the integrator, and reports the outcome back.  Two controllers:

- :class:`FixedSteps` — ``t_k = k·step`` (computed by multiplication, so
  times never drift), a last shorter step to reach ``time.end``, a frame every
  ``output.interval / step`` steps.  A failed step ends the run.
- :class:`AdaptiveSteps` — ``time.adaptive: true``.  A failed step (Newton
  iteration limit, non-finite or growing residual, singular tangent, a
  collapsed spring) is retried from the same state with half the step, down
  to ``time.min_step``; after :data:`GROW_AFTER` consecutive easy steps
  (at most :data:`EASY_ITERATIONS` Newton iterations each) the step doubles
  again, never beyond ``time.step``.  Steps are shortened to land exactly on
  every frame time ``j·output.interval`` and on ``time.end``.
"""
from __future__ import annotations

import math
from typing import Optional

GROW_AFTER = 4
EASY_ITERATIONS = 4
# A step that has collapsed: this many accepted steps in a row, every one below COLLAPSED_FRACTION of
# time.step, and at that pace more than COLLAPSED_REMAINING steps still to go, end the run (issue 15: a
# stiff model crawled through 2.5e-9 s of 0.05 s in 20 s with nothing telling the user).
COLLAPSED_STEPS = 100_000
COLLAPSED_FRACTION = 1e-3
COLLAPSED_REMAINING = 1e9


def collapse_threshold(step: float) -> float:
    """Accepted steps below this, for a run of ``time.step`` = ``step``, count towards a collapse."""
    return COLLAPSED_FRACTION * step


def step_schedule(end: float, step: float, interval: float):
    """Steps and frames of a fixed-step run.

    Returns ``(n_full, last, every)``: ``n_full`` steps of size ``step`` (a
    remainder below 1e-9 of a step is absorbed), an optional final shorter
    step of size ``last`` (0 if none), and a frame every ``every`` steps.  The
    final state is always a frame.
    """
    ratio = end / step
    n_full = int(math.floor(ratio + 1e-9))
    last = end - n_full * step
    if last <= 1e-9 * step:
        last = 0.0
    every = max(1, int(round(interval / step)))
    return n_full, last, every


class FixedSteps:
    """The fixed step sequence of a scenario, optionally continued from ``t0`` (resume).

    ``t0`` must be a time of the sequence (a stored frame of an earlier run).
    """

    adaptive = False

    def __init__(self, end: float, step: float, interval: float, t0: float = 0.0):
        self.end, self.step = end, step
        self.n_full, last, self.every = step_schedule(end, step, interval)
        self.n_total = self.n_full + (1 if last else 0)
        self.k = int(round(t0 / step)) if t0 < end else self.n_total
        self.rejected = 0

    def done(self, t: float) -> bool:
        return self.k >= self.n_total

    def target(self, t: float) -> tuple[float, bool]:
        """Next target time and whether it is a frame."""
        k = self.k + 1
        t1 = k * self.step if k <= self.n_full else self.end
        return t1, (k % self.every == 0 or k == self.n_total)

    def accepted(self, res, t: float = 0.0, dt: float = 0.0) -> None:
        self.k += 1

    def full_steps_to_frame(self) -> int:
        """Steps of exactly ``step`` from here up to the next frame (or the last full step):
        what can be taken as one block.  0 when the next step is the shorter last one."""
        if self.k >= self.n_full:
            return 0
        return min((self.k // self.every + 1) * self.every, self.n_full) - self.k

    def full_frames_ahead(self) -> int:
        """At a frame: how many whole frames of ``every`` full steps follow (what
        can be taken in one compiled call); 0 elsewhere."""
        if self.k % self.every or self.k >= self.n_full:
            return 0
        return (self.n_full - self.k) // self.every

    def is_frame(self, k: int) -> bool:
        return k % self.every == 0 or k == self.n_total

    def rejected_step(self, res, t: float, dt: float) -> Optional[str]:
        """A fixed-step run cannot retry: the run ends (the returned text says so)."""
        return "fixed time steps (time.adaptive is off)"


class AdaptiveSteps:
    """Halve on failure, grow after easy steps, land exactly on frames (see module docstring)."""

    adaptive = True

    def __init__(self, end: float, step: float, interval: float, min_step: float, t0: float = 0.0):
        self.end, self.max_step, self.interval, self.min_step = end, step, interval, min_step
        self.dt = step
        self.easy = 0
        self.rejected = 0
        self.j = int(math.floor(t0 / interval + 1e-9)) + 1  # index of the next frame time
        self._at_frame = False
        self.small, self.small_t0 = 0, t0  # accepted steps in a row below COLLAPSED_FRACTION · step, since
        self.why_small = ""  # what the last rejected step said

    def _frame_time(self) -> float:
        return min(self.j * self.interval, self.end)

    def done(self, t: float) -> bool:
        return t >= self.end

    def target(self, t: float) -> tuple[float, bool]:
        tf = self._frame_time()
        self._at_frame = tf - t <= self.dt * (1 + 1e-9)
        return (tf if self._at_frame else t + self.dt), self._at_frame

    def accepted(self, res, t: float = 0.0, dt: float = 0.0) -> None:
        """Step ``t`` → ``t + dt`` was accepted (``t, dt`` feed :meth:`collapsed`)."""
        if dt < collapse_threshold(self.max_step):
            if self.small == 0:
                self.small_t0 = t
            self.small += 1
        else:
            self.small = 0
        if self._at_frame:
            self.j += 1
        self.easy = self.easy + 1 if res.iterations <= EASY_ITERATIONS else 0
        if self.easy >= GROW_AFTER and self.dt < self.max_step:
            self.dt = min(2.0 * self.dt, self.max_step)
            self.easy = 0

    def rejected_step(self, res, t: float, dt: float) -> Optional[str]:
        """Halve the step and retry (None), or give up below ``min_step`` (the reason)."""
        self.rejected += 1
        self.easy = 0
        self.why_small = getattr(res, "message", "") or ""
        half = 0.5 * min(self.dt, dt)
        if half < self.min_step:
            return (f"the step was cut to {dt:.3g} s and half of it would fall below "
                    f"time.min_step = {self.min_step:.3g} s")
        self.dt = half
        return None


CONTROLLERS = ("pi", "elementary")  # (mbsim.scenario.spec.STEP_CONTROLLERS: the loader's; a test checks)


class ErrorControl:
    """Steps chosen by their local error (``time.tolerance``, THEORY §14): what the driver and the summary
    read of the controller.  The rules themselves -- the step size, the error norm, the PI or elementary
    rule, the cut after a failed Newton iteration -- are compiled functions of the controller's memory
    (:mod:`mbsim.integrators.controlled`: ``step_size``, ``steps_expected``, ``error_norm``, ``judge``,
    ``newton_cut``), which both error-controlled loops call; this record is set from that memory after each
    step or call.

    The step is judged by its error times the run's expected number of steps, ``E = ‖e‖ · N``, N = T over
    the mean step so far (T = ``time.end``): accepted when E ≤ 1, so that the local errors of all the steps
    add up to at most the tolerance and the global error is proportional to it (with ‖e‖ ≤ 1 alone, as
    THEORY §14 writes it, the global error goes as tol^(2/3): measured, docs/stepping.md), and each step
    is allowed the same error -- which, for a given number of steps, makes their sum the smallest
    (docs/stepping.md).  E is O(h³), so the next step is ``h · 0.9 E^(−1/3)`` (``elementary``) or, with
    the last accepted step's E too, ``h · 0.9 E^(−0.7/3) E_prev^(0.4/3)`` (``pi``, the default), never
    more than 2× nor less than 0.2×, and no larger after a rejection.
    Steps are not shortened to land on frames (frames are interpolated), only to end at ``time.end``;
    ``time.max_step`` and ``time.min_step`` bound them."""

    adaptive = True
    controlled = True

    def __init__(self, tm, t0: float = 0.0, controller: str = "pi"):
        if controller not in CONTROLLERS:
            raise ValueError(f"controller must be one of {CONTROLLERS}, got {controller!r}")
        self.end, self.min_step, self.controller = tm.end, tm.min_step, controller
        self.max_step = tm.step  # (the reference of collapsed(): the step the user gave)
        self.largest = tm.max_step if tm.max_step is not None else math.inf
        self.dt = min(tm.step, self.largest)  # the next step
        self.err_prev = 1.0  # the last accepted step's error norm (1: none yet)
        self.after_reject = False
        self.rejected = self.accepted_steps = 0
        self.h_min, self.h_max = math.inf, 0.0  # the smallest and largest accepted step
        self.small, self.small_t0, self.why_small = 0, t0, ""

    @property
    def small_below(self) -> float:
        """Accepted steps below this count towards a collapse (:func:`collapsed`)."""
        return collapse_threshold(self.max_step)

    def done(self, t: float) -> bool:
        return t >= self.end

    def too_small(self, culprit: str = "") -> Optional[str]:
        """Why the run ends when the next step falls below ``time.min_step`` (None: it does not)."""
        if self.dt >= self.min_step:
            return None
        self.dt = self.min_step
        by = f" (the error of {culprit} set it)" if culprit else ""
        return (f"the tolerance asks for a step below time.min_step = {self.min_step:.3g} s{by}; a larger "
                f"tolerance, or a smaller time.min_step, lets the run go on")


def collapsed(ctl, t: float) -> Optional[str]:
    """Why an adaptive run should stop because its step has collapsed (see COLLAPSED_STEPS), or None."""
    if not getattr(ctl, "adaptive", False) or ctl.small < COLLAPSED_STEPS:
        return None
    pace = (t - ctl.small_t0) / ctl.small  # the mean step of the stretch
    remaining = (ctl.end - t) / pace if pace > 0 else math.inf
    if remaining <= COLLAPSED_REMAINING:
        return None
    why = f" (the last larger step failed: {ctl.why_small})" if ctl.why_small else ""
    return (f"the step has collapsed: the last {ctl.small} steps were all below {COLLAPSED_FRACTION:g} × time.step "
            f"= {collapse_threshold(ctl.max_step):.3g} s, {pace:.3g} s on average, and took t only from "
            f"{ctl.small_t0:.9g} s to {t:.9g} s; at that pace time.end = {ctl.end:g} s is {remaining:.3g} steps away"
            f"{why}. A larger time.min_step ends such a run at once; the model may have an element far stiffer or "
            f"faster than the rest (look at the largest residual named above), or need a smaller time.step")


def controller_for(scenario, t0: float = 0.0):
    """The controller a scenario asks for."""
    tm = scenario.time
    if tm.controlled:
        return ErrorControl(tm, t0, tm.controller)
    if tm.adaptive:
        return AdaptiveSteps(tm.end, tm.step, scenario.output.interval, tm.min_step, t0)
    return FixedSteps(tm.end, tm.step, scenario.output.interval, t0)
