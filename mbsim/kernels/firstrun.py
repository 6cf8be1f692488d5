"""The first run on a machine: plain Python while numba compiles in the background.

Compiling the kernels a run needs takes about a minute (numba: type inference,
lowering and LLVM for ~120 functions), longer than a small model takes to run
as plain Python (``scenarios/pendulum.yaml``: ~9 s).  So when numba's cache
holds no kernels of these sources yet, :func:`start` launches one background
process that compiles them into the cache (``python -m mbsim.kernels.firstrun``:
the warm-up of the same scenario) and switches this process to plain Python
(:func:`mbsim.kernels.interpret`); :func:`poll`, called between blocks of
steps, switches back to the compiled kernels as soon as the background process
is done -- a long run then continues compiled, loaded from the cache.  The
same source runs either way, with the same arithmetic: the same results.

``MBSIM_FIRST_RUN=compile`` compiles in the foreground as before (the default on
a machine with a single CPU, where the two would share it, and off POSIX systems);
``MBSIM_FIRST_RUN=interpret`` interprets on a cold cache even with one CPU.

The background process writes ``mbsim-ready-KEY`` next to numba's cache entries
of :func:`mbsim.kernels.stepper.run` when it is done, ``KEY`` a digest of the
compiled sources, numba's version and the CPU (what numba's cache entries
depend on); a warm cache is one with that file.  ``mbsim-compiling-KEY`` (its
pid) keeps concurrent first runs from starting more than one compilation.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import NUMBA, _prepare, _SOURCES, interpret

DELAY_S = 10.0  # the background compilation waits this long for the run that started it to end
STALE_S = 900.0  # a compiling-lock older than this is a dead compilation's
POLL_S = 0.5  # the marker is looked for at most this often

_marker: Path | None = None
_last_poll = 0.0


def _paths():
    """(marker, lock) for these sources, numba and CPU; None if numba keeps no cache here."""
    _prepare()
    import llvmlite.binding as ll
    import numba
    from numba.core import config

    from . import _StampedLocator, stepper
    py = stepper.run.py_func
    loc = _StampedLocator.from_function(py, py.__code__.co_filename)
    if loc is None:
        return None
    try:
        loc.ensure_cache_path()
    except OSError:
        return None
    cpu = config.CPU_NAME or ll.get_host_cpu_name()
    features = config.CPU_FEATURES if config.CPU_FEATURES is not None else ll.get_host_cpu_features().flatten()
    key = hashlib.blake2b(f"{_SOURCES}|{numba.__version__}|{sys.version}|{cpu}|{features}".encode(),
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


def start(scenario) -> bool:
    """Before the warm-up of a run of ``scenario``: on a cold cache, start the background compilation
    (unless one runs already) and interpret; returns whether this run starts interpreted."""
    global _marker, _last_poll
    if _marker is not None:  # an earlier run of this process was interpreted: compiled now, if ready
        _last_poll = 0.0
        return not poll()
    mode = os.environ.get("MBSIM_FIRST_RUN", "auto")
    if not NUMBA or mode == "compile" or os.name != "posix":  # (os.kill(pid, 0) probes a process on POSIX only)
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
    if marker.exists():
        return False
    if not _compiling(lock):
        try:
            fd, job = tempfile.mkstemp(prefix="mbsim-firstrun-", suffix=".yaml")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(scenario.text)  # the text, not a pickle: numpy drops the read-only flag numba types
            env = dict(os.environ, MBSIM_FIRST_RUN="compile")
            proc = subprocess.Popen([sys.executable, "-m", "mbsim.kernels.firstrun", job, str(marker), str(lock),
                                     str(os.getpid())],
                                    env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
            lock.write_text(str(proc.pid))
        except Exception:  # noqa: BLE001
            return False
    _marker = marker
    interpret(True)
    return True


def mark_ready() -> None:
    """After a warm-up that ran compiled (the kernels are in numba's cache now): say so for the next runs."""
    if not NUMBA or _marker is not None:
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


def poll() -> bool:
    """Between blocks of an interpreted run: switch to the compiled kernels once the background
    compilation is done; returns whether the kernels run compiled now."""
    global _marker, _last_poll
    if _marker is None:
        return True
    now = time.monotonic()
    if now - _last_poll < POLL_S:
        return False
    _last_poll = now
    if not _marker.exists():
        return False
    _marker = None
    interpret(False)
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
        from ..scenario import load_scenario
        scenario = load_scenario(job)
        from .. import driver
        from ..integrators import INTEGRATORS
        from ..model.model import Model
        model = Model(scenario)
        integ = INTEGRATORS["generalized-alpha"](model, scenario.integrator)
        loop = driver._Loop(scenario, model, integ, None, False, False, None)
        loop._warm_up()
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
