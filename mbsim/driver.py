"""The time loop: step sequence, output cadence, progress bar, stopping rules.

The driver composes a model, an integrator, a step-size controller
(:mod:`mbsim.stepping`), a writer and a progress meter, and decides what to
do with each step's outcome: accept it, let the controller retry it with a
smaller step, or end the run (status ``failed``) with a message that says
where, why and what was tried.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import numpy as np

from . import resources
from .energy import energy_drift
from .integrators import INTEGRATORS
from .integrators.generalized_alpha import StepStatus
from . import compiling
from .mechanics import frames as kfr
from .mechanics.joints import JointError, SingularJoints, lock_up  # noqa: F401  (JointError re-exported: what run() raises for refused joints)
from .analysis.statics import StaticsFailed  # noqa: F401  (re-exported: what run() raises for initial: equilibrium)
from .elements import user_law
from .model.model import Model
from .scenario.spec import Scenario
from .stepping import collapsed, controller_for, step_schedule  # noqa: F401  (step_schedule: public here too)

from .exitcodes import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_SOLVER  # noqa: E402,F401  (re-exported)


class OutputFileError(Exception):
    """The result file cannot be created (a directory, an unwritable place, a locked file).

    Raised by :func:`run` before any step is taken; nothing has been written.

    Attributes
    ----------
    path : str
        The output path as given.
    reason : str
        Short cause (``is a directory``, ``Permission denied``, ...).
    """

    def __init__(self, path: str, reason: str):
        super().__init__(f"cannot write the result file {path}: {reason}")
        self.path = path
        self.reason = reason


class JointWarning(UserWarning):
    """What the model changed at t = 0 for the joints (redundant equations removed, initial velocities
    made consistent): SCENARIO.md, joints."""


class ElementWarning(UserWarning):
    """What a run noticed of its elements: a bushing or torsional spring turned past the half turn its
    rotation vector measures (THEORY §13)."""


class _TurnWatch:
    """At every stored frame, the rotation of B relative to A since t = 0 of each element whose kind measures
    it by a rotation vector (``measures_rotation``): one ElementWarning per element beyond HALF_TURN_WARN."""

    def __init__(self, model):
        el = model.elements
        rows = [e for e in range(el.n) if getattr(el.kinds[el.kind[e]], "measures_rotation", False)]
        self.rows = rows
        if not rows:
            return
        internal_to_scenario = np.full(model.n_all, -1)
        internal_to_scenario[model.order] = np.arange(model.n_bodies)
        self.bodies = internal_to_scenario[el.body[rows]]  # scenario index of A and B (−1: world)
        self.R0 = model.rotations0[el.body[rows]]  # (n, 2, 3, 3): the configuration the elements were built in
        self.names = [el.describe(e) for e in rows]
        self.warned = set()

    def check(self, orientations, times) -> None:
        from .kernels.rotations import quat_to_matrix
        for f, t in zip(orientations, np.atleast_1d(times)):
            R = quat_to_matrix(np.asarray(f, dtype=float))
            for i, (a, b) in enumerate(self.bodies):
                if i in self.warned:
                    continue
                RA = R[a] if a >= 0 else np.eye(3)
                RB = R[b] if b >= 0 else np.eye(3)
                rel = (RB @ self.R0[i, 1].T) @ (RA @ self.R0[i, 0].T).T
                angle = float(np.arccos(np.clip((np.trace(rel) - 1.0) / 2.0, -1.0, 1.0)))
                if angle > HALF_TURN_WARN:
                    self.warned.add(i)
                    warnings.warn(f"{self.names[i]} has turned by {np.degrees(angle):.0f}° at t = {float(t):.6g} s: "
                                  f"its rotation vector measures less than a half turn, beyond which its moment "
                                  f"reverses (THEORY §13); results from there on are not what a rubber mount does",
                                  ElementWarning, stacklevel=2)


HALF_TURN_WARN = 0.9 * np.pi  # [rad]


class Interrupted(KeyboardInterrupt):
    """The run was asked to stop (SIGINT or SIGTERM); a KeyboardInterrupt, so callers treat both alike."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class RunSummary:
    """Outcome of a run (also what ``mbsim run`` prints at the end)."""

    status: str  # completed | failed | interrupted
    message: str
    output: Optional[str]
    t_end: float
    steps: int
    newton_iterations: int
    rejected_steps: int
    wall_time_s: float
    frames: int
    energy_drift_J: float
    energy_drift_relative: float
    linear_solver: str = ""
    exit_code: int = EXIT_OK
    failure: str = ""  # StepStatus value of the step that failed ("" unless status is failed)
    timing: dict = field(default_factory=dict)  # wall time per phase [s]: the integrator's, plus "output"
    compile_time_s: float = 0.0  # before the time loop: compiling the kernels, or loading them from numba's cache
    smallest_step: Optional[float] = None  # error-controlled steps (time.tolerance): the smallest accepted [s]
    largest_step: Optional[float] = None  # … and the largest
    frames_data: Optional[dict] = field(default=None, repr=False)

    @property
    def iterations_per_step(self) -> float:
        return self.newton_iterations / self.steps if self.steps else 0.0


class _SignalGuard:
    """Turn SIGINT/SIGTERM into :class:`Interrupted` while a run is in progress.

    ``signum`` remembers the signal: numba swallows an exception raised while
    it compiles inside one of its ctypes callbacks (and then fails with an
    unrelated RuntimeError), so the warm-up asks the guard rather than relying
    on the exception alone.
    """

    def __enter__(self):
        self.old = {}
        self.signum = None
        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.old[sig] = signal.signal(sig, self._raise)
        except ValueError:  # not in the main thread: leave signals alone
            self.old = {}
        return self

    def _raise(self, signum, frame):
        self.signum = signum
        raise Interrupted(signum)

    def __exit__(self, *exc):
        for sig, h in self.old.items():
            signal.signal(sig, h)
        return False


def run(scenario: Scenario, output: Optional[str] = None, *, progress: bool = False,
        end: Optional[float] = None, write: bool = True, keep_frames: bool = False,
        on_step: Optional[Callable] = None, overwrite: bool = False, resume: bool = False,
        allow_large: bool = False, notify: Optional[Callable[[str], None]] = None,
        on_frames: Optional[Callable[[dict], None]] = None) -> RunSummary:
    """Simulate ``scenario`` and write its trajectory.

    Parameters
    ----------
    scenario : Scenario
        A validated scenario.
    output : str, optional
        Result file; default ``scenario.output_file``.
    progress : bool
        Show a tqdm progress bar on stderr.
    end : float, optional
        Stop at this time instead of ``scenario.time.end`` (for tests and previews).
    write : bool
        Write the HDF5 file (False: keep frames in memory only, see ``keep_frames``).
    keep_frames : bool
        Return all frames as stacked arrays in ``RunSummary.frames_data``.
    on_step : callable, optional
        ``on_step(StepResult)`` after every step (diagnostics, tests).
    on_frames : callable, optional
        ``on_frames(frames)`` with every block of stored frames as they are computed (a live viewer):
        ``frames`` maps the OUTPUT.md per-frame dataset names (``time``, ``bodies/position``, …) to arrays
        with a first axis of the block's frames, copies the callee may keep.  Called between compiled
        blocks, never inside one: the time loop runs as fast with an observer as without (it should return
        quickly; an exception from it ends the run as failed, the file kept).
    overwrite : bool
        Replace an existing file at the output path.  Without it an existing
        file is never touched: :class:`OutputFileError` says what it holds.
    resume : bool
        Continue the unfinished run (``interrupted``, ``failed`` or killed)
        stored at the output path from its last frame, appending to that file.
        Its stored scenario text must equal ``scenario.text``
        (:class:`ResumeError` otherwise).  The continued trajectory is the one
        an uninterrupted run computes, to the last bit (error-controlled steps
        go on from the file's checkpoint, docs/output.md).
    notify : callable, optional
        ``notify(text)`` when the kernels take a while to compile before the
        time loop (the first run on a machine); the CLI prints the text.

    Raises
    ------
    StaticsFailed
        ``initial: equilibrium`` and the scenario has no equilibrium (or the search gave up).
    JointError
        The joints refuse the scenario (``integrator.joints``: redundant equations or inconsistent
        initial velocities with ``refuse``).
    OutputFileError
        The output path cannot be written, or already holds a file.
    ResumeError
        ``resume`` with a file that cannot be continued.
    mbsim.resources.ResourceError
        The run would need more steps, disk or memory than is sensible.
    """
    if end is not None:
        scenario = replace(scenario, time=replace(scenario.time, end=float(end)))
    out = output if output is not None else scenario.output_file
    if write and not resume and not overwrite and os.path.lexists(out):
        raise OutputFileError(out, _existing_reason(out))
    for w in resources.check(scenario, out if write else None, allow_large=allow_large):
        warnings.warn(w, ResourceWarning, stacklevel=2)
    model = Model(scenario)
    for note in model.joint_notes:
        warnings.warn(note, JointWarning, stacklevel=2)
    for note in user_law.notes(scenario):
        warnings.warn(note, ElementWarning, stacklevel=2)
    if scenario.initial == "equilibrium" and not resume:
        start_at_equilibrium(model, notify)
    integ = INTEGRATORS[scenario.integrator.method](model, scenario.integrator)
    loop = _Loop(scenario, model, integ, out if write else None, progress, keep_frames, on_step)
    loop.on_frames = on_frames
    loop.notify = notify
    if resume:
        loop.start = _resume_point(scenario, model, integ, out)
    return loop.run()


def start_at_equilibrium(model, notify=None) -> None:
    """``initial: equilibrium``: the static equilibrium of ``model`` (THEORY §12, the scenario's ``statics``
    section) as its initial state, at rest.  Raises :class:`mbsim.analysis.StaticsFailed` (or its
    NoEquilibrium) when there is none."""
    from .analysis.statics import find_equilibrium
    from .mechanics import Mechanism
    sc = model.scenario
    eq = find_equilibrium(Mechanism(model), sc.statics, sc.integrator)
    model.start_at(eq.state.r, eq.state.q)
    if notify is not None:
        notify(f"starting from the static equilibrium ({eq.stability}; {eq.load_steps} load steps, "
               f"{eq.iterations} Newton iterations)")


class ResumeError(Exception):
    """A result file that ``--resume`` cannot continue; the message says why and what to do."""


def _existing_reason(path: str) -> str:
    from .io.reader import being_written, result_status
    if os.path.isdir(path):
        return "it is a directory; give a file name such as DIR/result.h5"
    status = result_status(path)
    if status == "running" and being_written(path):
        return "a run is writing it now (`mbsim view` follows it); wait for it to end, or -o another path"
    if status == "completed":
        return "it holds a completed run; use --overwrite to replace it, or -o another path"
    if status in ("interrupted", "running"):
        return (f"it holds an unfinished run (status {status}); continue it with --resume, "
                f"or replace it with --overwrite")
    if status == "failed":
        return "it holds a failed run; use --overwrite to replace it (or --resume to retry from its last frame)"
    return "the file exists and is not an mbsim result; use --overwrite to replace it, or -o another path"


def _resume_point(scenario, model, integ, path: str):
    """State, counters and energy history at the last frame of an unfinished result."""
    from .io.reader import ResultFileError, read_resume_point
    from .integrators import State
    if not os.path.exists(path):
        raise ResumeError(f"cannot resume: {path} does not exist (run without --resume to start)")
    try:
        p = read_resume_point(path)
    except (ResultFileError, OSError, KeyError) as exc:
        raise ResumeError(f"cannot resume from {path}: {exc}") from None
    if p["attrs"].get("status") == "completed":
        raise ResumeError(f"cannot resume: {path} holds a completed run (t = {p['time']:.9g} s); "
                          f"nothing is left to compute")
    if p["scenario"] != scenario.text:
        raise ResumeError(f"cannot resume: {path} was computed from a different scenario "
                          f"({_first_difference(p['scenario'], scenario.text)}); resume with the "
                          f"scenario file it was made from, or start a new run")
    if p["time"] >= scenario.time.end - 1e-12 * max(1.0, scenario.time.end):
        raise ResumeError(f"cannot resume: {path} already reaches t = {p['time']:.9g} s, the end of the run")
    controlled = scenario.time.controlled
    if controlled and p["checkpoint"] is None:
        raise ResumeError(f"cannot resume: {path} holds no checkpoint of its error-controlled steps (the run "
                          f"stopped before it wrote its first, a few seconds in); run it again from the start")
    counting = _counting_turns(model)
    if counting and p["checkpoint"] is None:  # (a checkpoint keeps the turns they counted)
        raise ResumeError(f"cannot resume: {', '.join(counting)} count{'s' if len(counting) == 1 else ''} the "
                          f"turns of an angle (a torsional spring about an axis, a stop on a joint's angle), and "
                          f"{path} holds no checkpoint of them (a file of an earlier version, or a run stopped "
                          f"before its first flush); run it again from the start")
    if counting and not controlled:
        integ.from_checkpoint(p["checkpoint"])  # (the turns at the last frame; the state is the frame's)
    energies = {k: list(p[f"energy/{k}"]) for k in ("kinetic", "potential", "dissipated", "external_work")}
    if controlled:  # the state of the newest checkpoint, its controller's memory and counts
        c, ca = p["checkpoint"], p["checkpoint_attrs"]
        integ.continue_counts(int(ca.get("steps", 0)), int(ca.get("newton_iterations", 0)))
        return {"state": integ.from_checkpoint(c), "frames": p["frames"], "rejected": int(ca.get("rejected_steps", 0)),
                "wall": float(ca.get("wall_time_s", 0.0)), "control": np.array(c["control"]),
                "acceleration": np.array(c["acceleration"]), "energies": energies}
    n = model.n_all
    arrays = {}
    for k, default in (("position", 0.0), ("velocity", 0.0), ("acceleration", 0.0), ("angular_velocity", 0.0),
                       ("angular_acceleration", 0.0)):
        a = np.full((n, 3), default)
        a[model.order] = p[k]
        arrays[k] = a
    q = np.zeros((n, 4))
    q[:, 0] = 1.0
    q[model.order] = p["orientation"]
    s = State(p["time"], arrays["position"], q, arrays["velocity"], arrays["acceleration"],
              arrays["angular_velocity"], arrays["angular_acceleration"], p["dissipated"], p["external_work"])
    s = replace(s, lam=integ.multipliers(s))  # the joints' multipliers of the frame, as the run had them
    pd, pe = integ.powers(s)
    s = replace(s, power_diss=pd, power_ext=pe)
    a = p["attrs"]
    integ.continue_counts(int(a.get("steps", 0)), int(a.get("newton_iterations", 0)))
    return {"state": s, "frames": p["frames"], "rejected": int(a.get("rejected_steps", 0)),
            "wall": float(a.get("wall_time_s", 0.0)), "energies": energies}


def _counting_turns(model) -> list:
    """The element instances that count the turns of an angle (an axis torsional spring, a stop on a
    joint's angle: a kind that ``remembers``), by description: what a frame does not hold."""
    el = model.elements
    return [el.describe(e) for e in range(el.n) if el.kind_remembers[el.kind[e]]]


def _culprit(model, body: int, part) -> str:
    """Whose error set the step (the controller's memory BODY, PART), in words; "" when none."""
    return f"body '{model.names[body]}' ({'rotation' if part else 'translation'})" if body >= 0 else ""


def _first_difference(a: str, b: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb), 1):
        if x != y:
            return f"first difference at line {i}: stored {x.strip()!r}, given {y.strip()!r}"
    return f"the stored text has {len(la)} lines, the given one {len(lb)}"


# The compiled multi-frame loop (fixed steps, tree solver): at most FRAMES_PER_CALL frames and
# BLOCK_BYTES of frame buffers or of loads per call, and about CALL_SECONDS of work per call, so
# that the progress bar moves and Ctrl-C is answered promptly.
FRAMES_PER_CALL = 256
BLOCK_BYTES = 32 * 1024**2
CALL_SECONDS = 0.05
COMPILE_NOTICE_S = 1.5  # a warm-up longer than this is numba compiling: say so


class _Loop:
    multi_frame = True  # whole frames per compiled call where possible (tests switch it off to compare)

    def __init__(self, scenario, model, integ, out, progress, keep_frames, on_step):
        self.sc, self.model, self.integ = scenario, model, integ
        self.out, self.progress, self.keep, self.on_step = out, progress, keep_frames, on_step
        self.writer = None
        self.controller = None
        self.guard = None  # the run's _SignalGuard
        self.frames = 0
        self.last_frame_t = 0.0
        self.energies: dict[str, list] = {k: [] for k in ("kinetic", "potential", "dissipated", "external_work")}
        self.kept: dict[str, list] = {}
        self.start = None  # set by run(resume=True): where an unfinished run stopped
        self.output_time = 0.0
        self.wall_before = 0.0
        self.notify = None  # notify(text): tell the user something before the time loop (the CLI's stderr)
        self.compile_s = 0.0
        self._fbuf = None  # frame buffers of the compiled multi-frame loop, made at first use
        self.turns = _TurnWatch(model)  # bushings and torsional springs past a half turn
        self.counts_turns = bool(_counting_turns(model))
        self._fcap = self._fper = 1  # their capacity; frames per call (grown to about CALL_SECONDS)
        self.on_frames = None  # on_frames(frames): an observer of the frames (run's docstring)
        self.s_now = None  # the error-controlled loop's last accepted state (_controlled)

    # --------------------------------------------------------------
    def _attrs(self):
        from .io.writer import run_attributes
        return run_attributes(self.sc, self.integ.name, self.integ.params, self.integ.solver.kind,
                              self.model.velocity_projection)

    def _counters(self, wall=None):
        if wall is None:
            wall = time.monotonic() - self.t_start
        ctl = self.controller
        out = {"steps": self.integ.n_steps, "newton_iterations": self.integ.n_iterations,
               "rejected_steps": ctl.rejected if ctl else 0, "wall_time_s": self.wall_before + wall}
        if getattr(ctl, "controlled", False):  # the accepted steps, and the smallest and largest (OUTPUT.md)
            out["steps"] = ctl.accepted_steps
            if ctl.accepted_steps:
                out["smallest_step"], out["largest_step"] = float(ctl.h_min), float(ctl.h_max)
        return out

    def _warm_up(self) -> float:
        """Compile (or load from numba's cache) the kernels before the clock starts;
        says so on stderr when that takes long (the first run on a machine)."""
        t0 = time.perf_counter()
        timer = None
        interpreted = self.first_run.start(self.sc)  # a cold cache: plain Python until the background compiled
        if interpreted:
            if self.notify is not None:
                self.notify("first run on this machine: running uncompiled while the numerical kernels compile "
                            "in the background for the next runs (about a minute) …")
        elif self.notify is not None:
            timer = threading.Timer(COMPILE_NOTICE_S, self.notify,
                                    ("compiling the numerical kernels for this machine (the first run only, "
                                     "about a minute; numba caches them) …",))
            timer.daemon = True
            timer.start()
        try:
            s = self.start["state"] if self.start is not None else self.integ.initial_state()
            try:  # (the compiled loops run fixed steps only, and not when every step is watched: on_step)
                compiling.warm_up(self.sc, self.model, self.integ, s, watched=self.on_step is not None)
                self.first_run.mark_ready()
            except Exception:  # noqa: BLE001 - the time loop meets (and reports) the same trouble
                pass
        finally:
            if timer is not None:
                timer.cancel()
        # Ctrl-C while numba compiled: the handler's exception may have been swallowed, leaving the
        # compile unfinished (and the kernels unusable in this process) -- the run was interrupted
        self._check_signal()
        return time.perf_counter() - t0

    def _check_signal(self):
        """Raise :class:`Interrupted` if SIGINT/SIGTERM arrived although no exception reached the
        loop: Python ignores an exception raised where it runs callbacks (a weakref callback, a
        ``__del__``, numba's ctypes callbacks), and the signal handler may have run there."""
        guard = self.guard
        if guard is not None and guard.signum is not None:
            raise Interrupted(guard.signum)

    def _frames_block(self, s, nframes):
        """Whole frames in one compiled call (:meth:`GeneralizedAlpha.advance_frames`),
        their rows handed to the writer together.  Returns the new state and
        whether the next step must be taken in Python (to be redone and diagnosed)."""
        integ, ctl, step = self.integ, self.controller, self.sc.time.step
        if self._fbuf is None:
            B, C, J = self.model.n_bodies, self.model.n_connectors, self.model.n_joints
            row = resources.frame_bytes(B, C, J)  # bytes per frame in the buffers
            loads = 8 * 12 * self.model.n_all * ctl.every  # bytes of loads per frame
            self._fcap = int(max(1, min(FRAMES_PER_CALL, BLOCK_BYTES // row, BLOCK_BYTES // loads)))
            self._fbuf = kfr.buffers(B, C, self._fcap, J)
        nf = min(nframes, self._fcap, self._fper)
        k0 = ctl.k
        t0 = time.perf_counter()
        new, done, steps, flag, its, res = integ.advance_frames(s, step, k0, nf, ctl.every, self._fbuf)
        if done:  # aim at CALL_SECONDS per call: a responsive progress bar and Ctrl-C
            per = (time.perf_counter() - t0) / done
            self._fper = int(max(1, min(self._fcap, CALL_SECONDS / per if per > 0 else self._fcap)))
        ctl.k += steps
        s = replace(new, t=ctl.k * step)
        if done:
            ends = np.arange(1, done + 1) * ctl.every - 1  # last step of each frame
            self._frames(done, (k0 + ends + 1) * step, its[ends], res[ends], step)
        if flag == 2:  # the frame's own quantities overflow: _frame says so (of the state as stepped)
            self._frame(s, int(its[-1]), float(res[-1]), step)
        if ctl.is_frame(ctl.k):
            s = integ.restart(s)  # as after every frame of the Python loop
            self._frame_checkpoint(s)
        return s, done < nf

    def _frames(self, m, times, iterations, rnorms, dt):
        """Hand ``m`` frames from the frame buffers to the writer (and to what is kept)."""
        t0 = time.perf_counter()
        try:
            fr = kfr.datasets(self._fbuf, m, times)
            if self.turns.rows:
                self.turns.check(fr["bodies/orientation"], times)
            steps = np.full(m, dt)
            if self.writer is not None:
                self.writer.append_block(fr, iterations, rnorms, steps)
            if self.keep:
                fr.update({"solver/iterations": iterations, "solver/residual_norm": rnorms, "solver/step": steps})
                for k, v in fr.items():
                    self.kept.setdefault(k, []).extend(np.array(v, copy=True))
            for k in self.energies:
                self.energies[k].extend(fr[f"energy/{k}"].tolist())
            if self.on_frames is not None:
                self.on_frames({k: np.array(v, copy=True) for k, v in fr.items()})  # (with "time")
            self.frames += m
            self.last_frame_t = float(times[-1])
        finally:
            self.output_time += time.perf_counter() - t0

    def _frame(self, s, iterations, rnorm, dt):
        t0 = time.perf_counter()
        try:
            self._write_frame(s, iterations, rnorm, dt)
        finally:
            self.output_time += time.perf_counter() - t0

    def _write_frame(self, s, iterations, rnorm, dt):
        fr = self.integ.frame(s)
        # What can still overflow is what is computed from the state: energies, momenta, connector actions
        # and lengths (sums are finite only if every term is; a length is NaN for a torsional damper by design).
        if not fr.pop("_finite"):
            bad = [k for k, v in fr.items()
                   if (np.any(np.isinf(v)) if k == "connectors/length" else not np.all(np.isfinite(v)))]
            raise _NonFiniteFrame(f"at t = {s.t:.9g} s the frame's {', '.join(bad)} "
                                  f"{'is' if len(bad) == 1 else 'are'} not finite (magnitudes beyond double "
                                  f"precision); nothing from that frame on was written")
        if self.turns.rows:
            self.turns.check([fr["bodies/orientation"]], [s.t])
        if self.writer is not None:
            self.writer.append(fr, iterations, rnorm, dt)
        if self.keep:
            fr = dict(fr, **{"solver/iterations": iterations, "solver/residual_norm": rnorm, "solver/step": dt})
            for k, v in fr.items():
                self.kept.setdefault(k, []).append(v)
        for k in self.energies:
            self.energies[k].append(fr[f"energy/{k}"])
        if self.on_frames is not None:
            self.on_frames({"time": np.array([s.t]), **{k: np.array(v, copy=True)[None] for k, v in fr.items()}})
        self.frames += 1
        self.last_frame_t = s.t

    def _true_accelerations(self, s):
        """The true accelerations (a, α) of the moving bodies at state ``s`` and the joints' multipliers
        (THEORY §4, §11): what the error estimate and the interpolated frames use."""
        a, al, lam = self.integ.accelerations(s)
        nm = self.model.n_moving
        return a[:nm], al[:nm], lam

    def _controlled(self, s, ctl, bar):
        """The time loop with steps chosen by their local error (THEORY §14, :class:`mbsim.stepping.
        ErrorControl`): each step from a state whose accelerations are moved to its size
        (:meth:`GeneralizedAlpha.rescaled`), its error from the true accelerations at both ends, accepted
        when the weighted norm is ≤ 1; the frames at ``output.interval`` (and ``time.end``) interpolated
        between the accepted states (:func:`mbsim.mechanics.interpolate.between`), never landed on.  The
        rules are the compiled loop's own functions on the same memory (:mod:`mbsim.integrators.controlled`).  Returns the
        last state and (status, exit code, failure, message); the message of a completed run is made by
        the caller."""
        if self.on_step is None and getattr(self.integ, "can_advance", False):
            return self._controlled_compiled(s, ctl, bar)
        from .integrators import controlled as kc
        from .mechanics.interpolate import between
        integ, sc, model = self.integ, self.sc, self.model
        tm, nm = sc.time, model.n_moving
        const = kc.error_constant(integ.params.alpha_f, integ.params.alpha_m, integ.params.beta)
        interval, end = sc.output.interval, tm.end
        pi = 1.0 if ctl.controller == "pi" else 0.0
        mem, acc0 = self._control_start(s, ctl)  # (the same memory and rules as the compiled loop)
        j = int(mem[kc.J_NEXT])  # the next frame's number (time j·interval)
        k, last_bar, t_start = 0, 0.0, self.t_start

        while not ctl.done(s.t):
            self._check_signal()
            self.first_run.poll()
            h = kc.step_size(mem, s.t, end, ctl.largest)
            t1 = end if h >= end - s.t else s.t + h
            k += 1
            before = integ.checkpoint(s)  # (what the step commits -- turn counts -- is put back with it)
            res = integ.step(integ.rescaled(s, h), h)
            if self.on_step is not None:
                self.on_step(res)
            if res.ok and not _finite(res.state):
                res = replace(res, status=StepStatus.NONFINITE, message="the new state is not finite")
            if not res.ok:
                integ.from_checkpoint(before)
                cut = kc.newton_cut(mem, h, tm.min_step)
                _from_memory(ctl, mem)
                ctl.why_small = res.message or ""
                if cut:
                    continue
                message = (f"step {k} from t = {s.t:.9g} s to t = {t1:.9g} s (dt = {h:.3g} s) failed: "
                           f"{res.message}; residual norm {res.residual_norm:.3e} after {res.iterations} Newton "
                           f"iterations; the step was cut to {h:.3g} s and a quarter of it would fall below "
                           f"time.min_step = {tm.min_step:.3g} s. The last frame stored is at "
                           f"t = {self.last_frame_t:.9g} s.")
                return s, ("failed", EXIT_SOLVER, res.status.value, message)
            new = replace(res.state, t=t1)
            a1, al1, lam1 = self._true_accelerations(new)
            acc1 = np.ascontiguousarray(np.hstack((a1, al1)))
            n_steps = kc.steps_expected(mem, s.t, h, end)
            err, body, part = kc.error_norm(h, n_steps, const, nm, acc0, acc1, (s.r, s.q, s.w), (new.r, new.q),
                                            tm.rtol, tm.atol)
            mem[kc.BODY], mem[kc.PART] = body, part
            who = _culprit(model, body, part)
            ok = kc.judge(mem, err, h, s.t, pi, ctl.largest, ctl.small_below)
            _from_memory(ctl, mem)
            ctl.why_small = f"the error of {who} set the step" if who else ""
            if not ok:
                integ.from_checkpoint(before)
                stop = ctl.too_small(who)
                if stop is not None:
                    message = (f"at t = {s.t:.9g} s {stop}. The last frame stored is at "
                               f"t = {self.last_frame_t:.9g} s.")
                    return s, ("failed", EXIT_SOLVER, "collapsed", message)
                continue
            # the frames in (t_n, t_{n+1}]: interpolated, or the new state itself at its time
            while True:
                tj = min(j * interval, end)
                if tj > t1 * (1.0 + 1e-12) + 1e-300 or (tj >= end and t1 < end):
                    break
                u = (tj - s.t) / h
                if abs(tj - t1) <= 1e-9 * h:
                    frame_state = replace(new, a=np.vstack((a1, new.a[nm:])), al=np.vstack((al1, new.al[nm:])),
                                          lam=lam1)
                else:
                    x = tuple(y.copy() for y in (new.r, new.q, new.v, new.w))  # (rows below nm: interpolated)
                    between(u, h, nm, (s.r, s.q, s.v, s.w), (new.r, new.q, new.v, new.w), acc0, acc1, x)
                    frame_state = replace(new, t=tj, r=x[0], q=x[1], v=x[2], w=x[3],
                                          dissipated=s.dissipated + u * (new.dissipated - s.dissipated),
                                          external_work=s.external_work + u * (new.external_work - s.external_work))
                    a_, al_, lam_ = self._true_accelerations(frame_state)
                    frame_state = replace(frame_state, a=np.vstack((a_, new.a[nm:])),
                                          al=np.vstack((al_, new.al[nm:])), lam=lam_)
                self._frame(frame_state, res.iterations, res.residual_norm, h)
                if tj >= end:
                    break
                j += 1
            s, acc0 = new, acc1
            mem[kc.J_NEXT], mem[kc.T_NOW] = j, s.t
            self.s_now = s
            self._checkpoint(s, control=mem, acceleration=acc0)
            stop = collapsed(ctl, s.t)
            if stop is not None:
                message = f"at t = {s.t:.9g} s {stop}. The last frame stored is at t = {self.last_frame_t:.9g} s."
                return s, ("failed", EXIT_SOLVER, "collapsed", message)
            last_bar = _tick(bar, last_bar, s.t, integ, t_start, ctl)
        return s, ("completed", EXIT_OK, "", "")

    def _control_start(self, s, ctl) -> tuple:
        """The controller's memory (:mod:`mbsim.integrators.controlled`'s layout) and the true accelerations
        (n_moving, 6) to start the error-controlled loop from: a resumed run's, from its checkpoint, else
        ``ctl``'s and those of ``s``."""
        if self.start is not None and "control" in self.start:
            return self.start["control"].copy(), np.ascontiguousarray(self.start["acceleration"])
        a, al, _ = self._true_accelerations(s)
        return _memory(ctl, s.t, np.floor(s.t / self.sc.output.interval + 1e-9) + 1), \
            np.ascontiguousarray(np.hstack((a, al)))

    def _frame_checkpoint(self, s) -> None:
        """With fixed steps a run goes on from its last frame; a model whose elements count turns (an axis
        torsional spring, a stop on an angle) needs their counts at that frame too: handed as a checkpoint
        (the state at the frame, restarted) after each frame."""
        if self.counts_turns:
            self._checkpoint(s)

    def _checkpoint(self, s, **more) -> None:
        """Hand the writer the state the run can go on from (after the frames so far): ``s`` with every
        bit the next steps read, and ``more`` arrays (an error-controlled run's ``control``, the
        controller's memory, and ``acceleration``, the true accelerations: docs/output.md)."""
        if self.writer is not None:
            arrays = dict(self.integ.checkpoint(s), **{k: np.array(v) for k, v in more.items()})
            self.writer.checkpoint(arrays, dict(self._counters(), frames=self.frames, time=float(s.t)))

    def _controlled_compiled(self, s, ctl, bar):
        """:meth:`_controlled` in compiled calls (:meth:`GeneralizedAlpha.advance_controlled`), each of
        about CALL_SECONDS, the frames of each handed to the writer together; ``ctl`` (the
        :class:`mbsim.stepping.ErrorControl`) keeps the counts and says what the summary says."""
        from .integrators import controlled as kc
        integ, sc, model = self.integ, self.sc, self.model
        tm = sc.time
        nm = model.n_moving
        if self._fbuf is None:
            B, C, J = model.n_bodies, model.n_connectors, model.n_joints
            self._fcap = int(max(1, min(FRAMES_PER_CALL, BLOCK_BYTES // resources.frame_bytes(B, C, J))))
            self._fbuf = kfr.buffers(B, C, self._fcap, J)
        mem, acc0 = self._control_start(s, ctl)
        settings = (tm.rtol, tm.atol, tm.min_step, ctl.largest, tm.end, 1.0 if ctl.controller == "pi" else 0.0,
                    sc.output.interval, ctl.small_below)
        last_bar, per_step, chunk = 0.0, None, 64
        while not ctl.done(s.t):
            self._check_signal()
            self.first_run.poll()
            t0 = time.perf_counter()
            s, nf, (times, its, res, steps), why, status = integ.advance_controlled(
                s, mem, settings, acc0, self._fbuf, tm.end, chunk)
            taken = int(status[0])
            if taken:  # aim at CALL_SECONDS per call: a responsive progress bar and Ctrl-C
                per_step = (time.perf_counter() - t0) / taken
                chunk = int(max(16, min(1_000_000, CALL_SECONDS / per_step)))
            _from_memory(ctl, mem)
            s = replace(s, t=float(mem[kc.T_NOW]))
            self.s_now = s
            if nf:
                self._frames(nf, times, its, res, steps)
            self._checkpoint(s, control=mem, acceleration=acc0)
            body = int(mem[kc.BODY])
            who = _culprit(model, body, mem[kc.PART])
            if why == kc.NEWTON_FAILED:  # (taken once more step by step: the step's own diagnosis)
                h = max(float(mem[kc.H]), tm.min_step)
                res = integ.step(integ.rescaled(s, h), h)
                said = res.message if not res.ok else "the new state is not finite"
                message = (f"the step from t = {s.t:.9g} s failed: {said}; the step was cut below time.min_step = "
                           f"{tm.min_step:.3g} s. The last frame stored is at t = {self.last_frame_t:.9g} s.")
                return s, ("failed", EXIT_SOLVER, res.status.value if not res.ok else "nonfinite", message)
            if why == kc.TOO_SMALL:
                ctl.why_small = f"the error of {who} set the step" if who else ""
                message = (f"at t = {s.t:.9g} s {ctl.too_small(who) or 'the step fell below time.min_step'}. The last "
                           f"frame stored is at t = {self.last_frame_t:.9g} s.")
                return s, ("failed", EXIT_SOLVER, "collapsed", message)
            if why == kc.NOT_FINITE:
                raise _NonFiniteFrame(f"at t = {self.last_frame_t:.9g} s the frame's element actions, energies or "
                                      f"momenta are not finite (magnitudes beyond double precision)")
            if why == kc.SINGULAR:
                raise SingularJoints(f"the joints' equations are singular at t = {s.t:.9g} s")
            ctl.why_small = f"the error of {who} set the step" if who else ""
            stop = collapsed(ctl, s.t)
            if stop is not None:
                message = f"at t = {s.t:.9g} s {stop}. The last frame stored is at t = {self.last_frame_t:.9g} s."
                return s, ("failed", EXIT_SOLVER, "collapsed", message)
            last_bar = _tick(bar, last_bar, s.t, integ, self.t_start, ctl)
        return s, ("completed", EXIT_OK, "", "")

    def _open_writer(self):
        from .io.writer import TrajectoryWriter
        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.out)), exist_ok=True)
            if self.start is not None:
                return TrajectoryWriter.resume(self.out, self._attrs(), counters=self._counters,
                                               frames=self.start["frames"])
            return TrajectoryWriter(self.out, self.sc, self._attrs(), counters=self._counters)
        except OSError as exc:
            raise OutputFileError(self.out, _unwritable_reason(self.out, exc)) from exc

    def run(self) -> RunSummary:
        sc, integ = self.sc, self.integ
        t_start = self.t_start = time.monotonic()
        bar = None
        status, message, code, failure = "completed", "", EXIT_OK, ""
        s = None
        try:
            # Non-finite numbers are detected explicitly (Newton's residual, every state and
            # frame), so numpy's overflow warnings would only be noise on the user's screen.
            with _SignalGuard() as self.guard, np.errstate(all="ignore"), compiling.FirstRun() as self.first_run:
                if self.out is not None:  # inside the guard: a Ctrl-C now still leaves a clean file
                    self.writer = self._open_writer()
                self.compile_s = self._warm_up()
                t_start = self.t_start = time.monotonic()  # the run's wall time starts with the time loop
                if self.start is None:
                    s = integ.initial_state()
                    _check_initial(s)  # every later state is checked where the step is accepted
                    self._frame(s, 0, 0.0, 0.0)
                    ctl = self.controller = controller_for(sc)
                else:
                    s = self.start["state"]
                    self.frames, self.last_frame_t = self.start["frames"], s.t
                    self.energies, self.wall_before = self.start["energies"], self.start["wall"]
                    ctl = self.controller = controller_for(sc, t0=s.t)
                    ctl.rejected = self.start["rejected"]
                    if "control" in self.start:  # (error-controlled steps: the controller as it was)
                        _from_memory(ctl, self.start["control"])
                if self.progress:
                    bar = _progress_bar(sc)
                last_bar = 0.0
                k = 0  # attempted step number, for messages
                # blocks of fixed steps between frames run in one compiled loop when possible
                blocks = (not ctl.adaptive and self.on_step is None and getattr(integ, "can_advance", False))
                python_next = False  # redo a step the compiled loop handed back, in Python
                frames_blocks = blocks and self.multi_frame
                if getattr(ctl, "controlled", False):  # THEORY §14: steps chosen by their error
                    s, (status, code, failure, message) = self._controlled(s, ctl, bar)
                while not getattr(ctl, "controlled", False) and not ctl.done(s.t):
                    self._check_signal()
                    self.first_run.poll()  # a first run: compiled from here on once the background compiled
                    nf = ctl.full_frames_ahead() if frames_blocks and not python_next else 0
                    if nf:
                        s, python_next = self._frames_block(s, nf)
                        k = ctl.k
                        last_bar = _tick(bar, last_bar, s.t, integ, t_start, ctl)
                        continue
                    n = ctl.full_steps_to_frame() if blocks and not python_next else 0
                    if n:
                        new, taken, its, res_norms = integ.advance(s, sc.time.step, n)
                        if taken and not _finite(new):
                            taken, python_next = 0, True  # let the Python step report it
                        if taken:
                            k += taken
                            ctl.k += taken
                            s = replace(new, t=ctl.k * sc.time.step)
                            if ctl.is_frame(ctl.k):  # restarted first: the frame's reactions are those of
                                s = integ.restart(s)  # its multipliers (THEORY §11), not the step's own
                                self._frame(s, int(its[-1]), float(res_norms[-1]), sc.time.step)
                                self._frame_checkpoint(s)
                        python_next = taken < n
                        last_bar = _tick(bar, last_bar, s.t, integ, t_start, ctl)
                        continue
                    python_next = False
                    t_target, is_frame = ctl.target(s.t)
                    dt = t_target - s.t
                    k += 1
                    res = integ.step(s, dt)
                    if self.on_step is not None:
                        self.on_step(res)
                    if not res.ok:
                        why = ctl.rejected_step(res, s.t, dt)
                        if why is None:
                            continue  # retry with the smaller step the controller chose
                        status, code, failure = "failed", EXIT_SOLVER, res.status.value
                        # Frames are stored every few steps, so the last one may lie
                        # before s.t: name the time that is really there.
                        message = (f"step {k} from t = {s.t:.9g} s to t = {t_target:.9g} s (dt = {dt:.3g} s) "
                                   f"failed: {res.message}; residual norm {res.residual_norm:.3e} after "
                                   f"{res.iterations} Newton iterations; {why}. The last frame stored is at "
                                   f"t = {self.last_frame_t:.9g} s.")
                        stuck = lock_up(self.model, s.r, s.q, s.v, s.w)  # joints at a dead point?
                        if stuck:
                            message += f" At t = {s.t:.9g} s {stuck}."
                        break
                    if not _finite(res.state):
                        status, code, failure = "failed", EXIT_SOLVER, "nonfinite"
                        message = (f"step {k} from t = {s.t:.9g} s to t = {t_target:.9g} s produced a state that "
                                   f"is not finite; nothing after t = {self.last_frame_t:.9g} s was written")
                        break
                    s_before = s.t
                    s = replace(res.state, t=t_target)
                    ctl.accepted(res, s_before, dt)
                    stop = collapsed(ctl, s.t)
                    if stop is not None:
                        status, code, failure = "failed", EXIT_SOLVER, "collapsed"
                        message = f"at t = {s.t:.9g} s {stop}. The last frame stored is at t = {self.last_frame_t:.9g} s."
                        break
                    if is_frame:
                        # the steps that follow depend only on that frame (no predictor history, a
                        # fresh tangent), so a run resumed from it repeats them to the last bit; and
                        # the frame's reactions are those of its own multipliers (restart computes
                        # them from the constrained equations, THEORY §11), not the step's
                        s = integ.restart(s)
                        self._frame(s, res.iterations, res.residual_norm, dt)
                        self._frame_checkpoint(s)
                    last_bar = _tick(bar, last_bar, s.t, integ, t_start, ctl)
                if status == "completed" and getattr(ctl, "controlled", False):
                    message = (f"completed: {ctl.accepted_steps} steps ({ctl.rejected} rejected), Δt from "
                               f"{ctl.h_min:.3g} to {ctl.h_max:.3g} s, {integ.n_iterations} Newton iterations, "
                               f"t = {s.t:.9g} s")
                elif status == "completed":
                    message = (f"completed: {integ.n_steps} steps ({ctl.rejected} rejected), "
                               f"{integ.n_iterations} Newton iterations, t = {s.t:.9g} s")
                    if integ.n_floor:
                        message += (f"; {integ.n_floor} steps ended at the round-off floor of the joints' "
                                    f"equations (nearly dependent: a dead point): "
                                    f"converged as far as floating point allows")
        except _NonFiniteFrame as exc:
            status, code, failure, message = "failed", EXIT_SOLVER, "nonfinite", str(exc)
        except SingularJoints as exc:  # the initial accelerations (THEORY §11): no frame to write
            status, code, failure = "failed", EXIT_SOLVER, "singular"
            message = (f"{exc}: a joint locked up, or masses too far apart for double precision; nothing "
                       f"from that frame on was written")
        except Interrupted as exc:
            s = self.s_now if self.s_now is not None else s  # (the error-controlled loop's last state)
            status, code = "interrupted", EXIT_INTERRUPTED
            message = f"interrupted by {exc} at t = {s.t if s else 0.0:.9g} s"
        except KeyboardInterrupt:
            s = self.s_now if self.s_now is not None else s
            status, code = "interrupted", EXIT_INTERRUPTED
            message = f"interrupted at t = {s.t if s else 0.0:.9g} s"
        except BaseException as exc:  # a bug: record it in the file, then let it propagate
            if self.writer is not None:
                self.writer.close("failed", f"internal error: {type(exc).__name__}: {exc}",
                                  self._counters(time.monotonic() - t_start))
            raise
        finally:
            if bar is not None:
                if s is not None and status == "completed":
                    _bar_update(bar, s.t, integ, time.monotonic() - t_start, self.controller)
                bar.close()
        wall = time.monotonic() - t_start
        t0 = time.perf_counter()
        if self.writer is not None:
            self.writer.close(status, message, self._counters(wall))
        self._close_time = time.perf_counter() - t0
        # An interrupt (Ctrl-C, SIGTERM) can land between the appends of one frame's values to
        # these lists: keep the frames every list holds.
        energies = _complete_frames(self.energies)
        with np.errstate(all="ignore"):
            drift, rel = energy_drift(*(energies[k] for k in ("kinetic", "potential", "dissipated",
                                                              "external_work")))
        data = None
        if self.keep:
            data = {k: np.asarray(v) for k, v in _complete_frames(self.kept).items()}
        rejected = self.controller.rejected if self.controller else 0
        ctl = self.controller
        controlled = getattr(ctl, "controlled", False)
        steps = ctl.accepted_steps if controlled else integ.n_steps
        return RunSummary(status, message, self.out, s.t if s else 0.0, steps, integ.n_iterations, rejected,
                          wall, self.frames, drift, rel, linear_solver=integ.solver.kind, exit_code=code,
                          failure=failure, frames_data=data, compile_time_s=self.compile_s,
                          timing=dict(integ.timing, output=self.output_time + self._close_time),
                          smallest_step=float(ctl.h_min) if controlled and ctl.accepted_steps else None,
                          largest_step=float(ctl.h_max) if controlled and ctl.accepted_steps else None)


def _memory(ctl, t: float, j_next: float) -> np.ndarray:
    """The :class:`mbsim.stepping.ErrorControl` ``ctl`` at time ``t`` as the compiled loop's memory
    (:data:`mbsim.integrators.controlled.N_CTL` floats), ``j_next`` the next frame's number."""
    from .integrators import controlled as kc
    m = np.zeros(kc.N_CTL)
    m[kc.H], m[kc.ERR_PREV], m[kc.AFTER_REJECT] = ctl.dt, ctl.err_prev, float(ctl.after_reject)
    m[kc.REJECTED], m[kc.ACCEPTED], m[kc.H_MIN], m[kc.H_MAX] = ctl.rejected, ctl.accepted_steps, ctl.h_min, ctl.h_max
    m[kc.SMALL], m[kc.SMALL_T0], m[kc.J_NEXT], m[kc.BODY], m[kc.T_NOW] = ctl.small, ctl.small_t0, j_next, -1.0, t
    return m


def _from_memory(ctl, m) -> None:
    """``ctl`` (:class:`mbsim.stepping.ErrorControl`) ← the compiled loop's memory ``m``."""
    from .integrators import controlled as kc
    ctl.dt, ctl.err_prev, ctl.after_reject = float(m[kc.H]), float(m[kc.ERR_PREV]), bool(m[kc.AFTER_REJECT])
    ctl.rejected, ctl.accepted_steps = int(m[kc.REJECTED]), int(m[kc.ACCEPTED])
    ctl.h_min, ctl.h_max = float(m[kc.H_MIN]), float(m[kc.H_MAX])
    ctl.small, ctl.small_t0 = int(m[kc.SMALL]), float(m[kc.SMALL_T0])


def _complete_frames(lists: dict) -> dict:
    """The per-frame lists cut to the number of frames all of them hold."""
    n = min((len(v) for v in lists.values()), default=0)
    return {k: v[:n] for k, v in lists.items()}


class _NonFiniteFrame(Exception):
    """A frame about to be written holds inf or NaN."""


def _check_initial(s) -> None:
    """Raise _NonFiniteFrame, before frame 0 is written, if the initial state (its accelerations come
    from the loads at t = 0) is not finite, naming the quantities that are not."""
    if _finite(s):
        return
    bad = [w for w, x in (("position", s.r), ("orientation", s.q), ("velocity", s.v), ("angular velocity", s.w),
                          ("acceleration", s.a), ("angular acceleration", s.al)) if not np.all(np.isfinite(x))]
    raise _NonFiniteFrame(f"at t = {s.t:.9g} s the state's {', '.join(bad)} {'is' if len(bad) == 1 else 'are'} "
                          f"not finite (a load, force or initial value beyond double precision); nothing "
                          f"from that frame on was written")


def _finite(s) -> bool:
    """Whether a converged state is finite everywhere (never write NaN frames)."""
    return bool(np.isfinite(s.r).all() and np.isfinite(s.q).all() and np.isfinite(s.v).all()
                and np.isfinite(s.w).all() and np.isfinite(s.a).all() and np.isfinite(s.al).all())


def _unwritable_reason(path: str, exc: OSError) -> str:
    """Say in a few words why ``path`` could not be created (h5py's own text is a paragraph)."""
    if os.path.isdir(path):
        return "it is a directory; give a file name such as DIR/result.h5"
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        return f"{parent} is a file, not a directory"
    return os.strerror(exc.errno) if exc.errno else str(exc)


def _progress_bar(sc):
    from tqdm import tqdm
    return tqdm(total=sc.time.end, unit="s", unit_scale=False, file=sys.stderr, leave=True,
                desc=sc.name[:24], bar_format="{desc}: {percentage:3.0f}%|{bar}| t={n:.4g}/{total:.4g} s "
                                              "[{elapsed}<{remaining}{postfix}]")


def _tick(bar, last: float, t, integ, t_start: float, ctl) -> float:
    """Refresh the progress bar if it has not been for 0.1 s; returns when it last was."""
    now = time.monotonic()
    if bar is None or now - last <= 0.1:
        return last
    _bar_update(bar, t, integ, now - t_start, ctl)
    return now


def _bar_update(bar, t, integ, wall, ctl):
    bar.n = min(t, bar.total)
    steps = integ.n_steps
    extra = f", dt {ctl.dt:.2g} s, {ctl.rejected} rejected" if ctl.adaptive else ""
    bar.set_postfix_str(f"{steps / wall if wall > 0 else 0:.0f} steps/s, "
                        f"{integ.n_iterations / steps if steps else 0:.2f} it/step{extra}", refresh=False)
    bar.refresh()


__all__ = ["run", "RunSummary", "OutputFileError", "ResumeError", "step_schedule", "EXIT_OK", "EXIT_INVALID", "EXIT_SOLVER",
           "EXIT_INTERRUPTED"]
