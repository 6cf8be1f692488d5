"""Compiling the kernels for a run, and the first run on a machine: plain Python while numba compiles
in the background.

Compiling the kernels a run needs takes about a minute (numba: type inference,
lowering and LLVM for ~120 functions), longer than a small model takes to run
as plain Python (``scenarios/pendulum.yaml``: ~4 s).  So when numba's cache
holds no kernels of these sources yet, :meth:`FirstRun.start` launches one
background process that compiles them into the cache (``python -m
mbsim.compiling``: the :func:`warm_up` of the same scenario) and runs this run's
kernels as plain Python (:func:`mbsim.kernels.plain_python`, in this run's
context only: a simulation in another thread keeps its own choice);
:meth:`FirstRun.poll`, called between blocks of steps, switches the run back
to the compiled kernels as soon as the background process is done -- a long
run then continues compiled, loaded from the cache.  The same source runs
either way, with the same arithmetic: the same results.

The driver holds one :class:`FirstRun` per run, as a ``with`` block around it:
nothing outside the run (no module global, no other thread) sees its choice.

``MBSIM_FIRST_RUN=compile`` compiles in the foreground (the default on a
machine with a single CPU, where the two would share it, and off POSIX
systems); ``MBSIM_FIRST_RUN=interpret`` interprets on a cold cache even with
one CPU; ``auto``, the default, decides as said.  :func:`policy` sets the same
for the runs started in one context (a thread), over the environment variable.

The background process writes ``mbsim-ready-KEY`` next to numba's cache entries
of :func:`mbsim.integrators.step.run` when it is done, ``KEY`` a digest of the
compiled sources, numba's version and the CPU (what numba's cache entries
depend on); a warm cache is one with that file.  ``mbsim-compiling-KEY`` (its
pid) keeps concurrent first runs from starting more than one compilation.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

from . import kernels
from .stepping import collapse_threshold, step_schedule

DELAY_S = 10.0  # the background compilation waits this long for the run that started it to end
STALE_S = 900.0  # a compiling-lock older than this is a dead compilation's
POLL_S = 0.5  # the marker is looked for at most this often
MODES = ("auto", "compile", "interpret")

_POLICY: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("mbsim_first_run", default=None)
_launching = threading.Lock()  # two threads on a cold cache start one background compilation


@contextlib.contextmanager
def policy(mode: str) -> Iterator[None]:
    """The first-run policy (``auto``, ``compile`` or ``interpret``, as ``MBSIM_FIRST_RUN``) of the runs
    started within the block in this context (this thread), over the environment variable."""
    if mode not in MODES:
        raise ValueError(f"the first-run policy is one of {', '.join(MODES)}, not {mode!r}")
    token = _POLICY.set(mode)
    try:
        yield
    finally:
        _POLICY.reset(token)


def _mode() -> str:
    mode = _POLICY.get()
    return mode if mode is not None else os.environ.get("MBSIM_FIRST_RUN", "auto")


def warm_up(scenario, model, integ, state, watched: bool = False) -> None:
    """Compile (or load from numba's cache) every kernel a run of ``scenario`` from ``state`` calls:
    those of the integrator's steps, of its compiled loops (fixed steps, unless ``watched``: a caller
    that sees every step), and of the frame quantities."""
    every = 0 if scenario.time.adaptive or watched else \
        step_schedule(scenario.time.end, scenario.time.step, scenario.output.interval)[2]
    integ.warm_up(state, scenario.time.step, every)
    integ.frame(state)  # the frame kernel too: frame 0 is written in the timed loop
    if scenario.time.controlled and not watched and getattr(integ, "can_advance", False):
        tm = scenario.time  # the error-controlled loop too (called to take no step)
        integ.warm_up_controlled(state, (tm.rtol, tm.atol, tm.min_step, tm.step, tm.end, 1.0,
                                         scenario.output.interval, collapse_threshold(tm.step)))


def _paths():
    """(marker, lock) for these sources, numba and CPU; None if numba keeps no cache here."""
    kernels.prepare()
    import llvmlite.binding as ll
    import numba
    from numba.core import config

    from .integrators import step
    from .kernels import _StampedLocator
    py = step.run.py_func
    loc = _StampedLocator.from_function(py, py.__code__.co_filename)
    if loc is None:
        return None
    try:
        loc.ensure_cache_path()
    except OSError:
        return None
    cpu = config.CPU_NAME or ll.get_host_cpu_name()
    features = config.CPU_FEATURES if config.CPU_FEATURES is not None else ll.get_host_cpu_features().flatten()
    key = hashlib.blake2b(f"{kernels.sources_digest()}|{numba.__version__}|{sys.version}|{cpu}|{features}".encode(),
                          digest_size=8).hexdigest()
    d = Path(loc.get_cache_path())
    return d / f"mbsim-ready-{key}", d / f"mbsim-compiling-{key}"


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _compiling(lock: Path) -> bool:
    """Whether a live background compilation holds ``lock``."""
    try:
        pid = int(lock.read_text() or 0)
        if time.time() - lock.stat().st_mtime > STALE_S:
            return False
        os.kill(pid, 0)
        return True
    except (OSError, ValueError):
        return False


def _launch(scenario, marker: Path, lock: Path) -> bool:
    """Start the background compilation of the kernels of ``scenario``, unless one runs already;
    whether one runs now."""
    with _launching:
        if _compiling(lock):
            return True
        try:
            fd, job = tempfile.mkstemp(prefix="mbsim-firstrun-", suffix=".yaml")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(scenario.text)  # the text, not a pickle: numpy drops the read-only flag numba types
            env = dict(os.environ, MBSIM_FIRST_RUN="compile")
            proc = subprocess.Popen([sys.executable, "-m", "mbsim.compiling", job, str(marker), str(lock),
                                     str(os.getpid())],
                                    env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
            lock.write_text(str(proc.pid))
        except Exception:  # noqa: BLE001 - whatever stops us, compile as before
            return False
        return True


class FirstRun:
    """The compile policy of one run: a ``with`` block around the run, in which :meth:`start` (before the
    warm-up) may run the kernels as plain Python, in this context only, until :meth:`poll` finds the
    background compilation done; the block's end restores what the context had before."""

    def __init__(self):
        self.plain = False  # whether this run's kernels run as plain Python now (by this policy)
        self._marker: Optional[Path] = None  # what poll() waits for
        self._token = None  # to restore kernels.PLAIN at the end of the run
        self._last_poll = 0.0

    def __enter__(self) -> FirstRun:
        return self

    def __exit__(self, *exc) -> None:
        if self._token is not None:
            kernels.PLAIN.reset(self._token)
            self._token = None
        self.plain, self._marker = False, None

    def _plain(self, on: bool) -> None:
        if self._token is None:
            self._token = kernels.PLAIN.set(on)
        else:
            kernels.PLAIN.set(on)
        self.plain = on

    def start(self, scenario) -> bool:
        """Before the warm-up of a run of ``scenario``: on a cold cache, start the background compilation
        (unless one runs already) and run this run's kernels as plain Python; returns whether it does."""
        if kernels.PLAIN.get():  # the caller asked for plain Python (kernels.plain_python): nothing to decide
            return False
        mode = _mode()
        if not kernels.NUMBA or mode == "compile" or os.name != "posix":  # (os.kill(pid, 0): POSIX only)
            return False
        from numba.core import config
        if config.DISABLE_JIT:
            return False
        if mode != "interpret" and _cpus() < 2:
            return False
        try:
            paths = _paths()
        except Exception:  # noqa: BLE001 - whatever stops us, compile as before
            return False
        if paths is None:
            return False
        marker, lock = paths
        if marker.exists() or not _launch(scenario, marker, lock):
            return False
        self._marker = marker
        self._plain(True)
        return True

    def mark_ready(self) -> None:
        """After a warm-up that ran compiled (the kernels are in numba's cache now): say so for the next
        runs."""
        if not kernels.NUMBA or self.plain or kernels.PLAIN.get():
            return
        try:
            from numba.core import config
            if config.DISABLE_JIT:
                return
            paths = _paths()
            if paths is not None and not paths[0].exists():
                paths[0].write_text("")
        except Exception:  # noqa: BLE001 - only a hint for the next run
            pass

    def poll(self) -> bool:
        """Between blocks of steps: switch a run that started as plain Python to the compiled kernels once
        the background compilation is done; returns whether this run's kernels run compiled now."""
        if not self.plain:
            return not kernels.PLAIN.get()
        now = time.monotonic()
        if now - self._last_poll < POLL_S:
            return False
        self._last_poll = now
        if not self._marker.exists():
            return False
        self._marker = None
        self._plain(False)
        return True


def _main(job: str, marker: str, lock: str, parent: str) -> int:
    """The background compilation: the warm-up of the scenario in ``job`` (compiles, or loads, every
    kernel a run of it uses into numba's cache), then the marker.

    It starts when the run that launched it (pid ``parent``) has ended, or after :data:`DELAY_S`: a
    short run is over before (two processes on two CPUs that share a core -- virtual machines --
    slow each other down by half), a long one switches to the compiled kernels a little later."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < DELAY_S:
        try:
            os.kill(int(parent), 0)
        except OSError:
            break
        time.sleep(0.2)
    try:
        try:  # the run that started us comes first: take only CPU time nobody else wants
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except (AttributeError, OSError):  # pragma: no cover - not Linux
            try:
                os.nice(19)
            except OSError:
                pass
        from .integrators import INTEGRATORS
        from .model.model import Model
        from .scenario import load_scenario
        scenario = load_scenario(job)
        model = Model(scenario)
        integ = INTEGRATORS["generalized-alpha"](model, scenario.integrator)
        state = integ.initial_state()
        try:
            warm_up(scenario, model, integ, state)
        except Exception:  # noqa: BLE001 - as a run's warm-up: the runs meet (and report) the same trouble
            pass
        Path(marker).write_text("")
        return 0
    finally:
        for path in (job, lock):
            try:
                os.unlink(path)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(_main(*sys.argv[1:5]))
