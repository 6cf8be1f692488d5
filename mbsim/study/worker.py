"""What runs on a Dask worker: one case, and the warm-up of mbsim's compiled kernels.

:func:`run_case` validates the case's scenario again (from its values: a
pickled Scenario would lose the read-only flags numba types its arrays by),
runs it through :func:`mbsim.simulate` with the case's file as output -- the
same driver and writer ``mbsim run`` uses, crash-safe, named
``case_00042.h5`` -- and returns the case's row of the summary table: a small
dict, never the arrays.  A solver failure, or any exception, is a row with
status ``failed`` and the message; it never ends the study.

:class:`WarmUp` is a worker plugin: when a worker joins (or the plugin is
registered), it loads mbsim's kernels from numba's on-disk cache (compiling
them once if the cache is cold) by running a few steps of the study's first
case, stops distributed's statistical profiler, which samples every
thread's stack every 10 ms while holding the GIL, and gives glibc back its
default handling of large arrays (:func:`heap_for_arrays`).  The kernels then stay in
the worker process for every case it runs.
"""
from __future__ import annotations

import math
import os
import sys
import time
from typing import Optional

# A test hook (tests/integration/test_sweep.py): a worker process whose environment has this variable
# exits at once when it is given a case whose file path ends with its value, as a worker killed by the
# operating system (out of memory, say) would.
TEST_EXIT_ENV = "MBSIM_SWEEP_TEST_EXIT"


def run_case(index: int, data: dict, path: str, metrics: tuple, base: Optional[str] = None) -> dict:
    """Run one case and return its row: status (``ok`` or ``failed``), message, counters, metrics.

    Parameters
    ----------
    index : int
        The case index (for the row).
    data : dict
        The case's scenario values (validated by the study already; validated again here).
    path : str
        The case's result file (replaced if it exists: the study decided to run it).
    metrics : tuple of Metric
        What to keep from the result.
    """
    die = os.environ.get(TEST_EXIT_ENV)
    if die and path.endswith(die):
        os._exit(17)
    from ..api import simulate
    from ..scenario import scenario_from_dict
    start = time.perf_counter()
    row = {"case": index, "status": "failed", "message": "", "steps": 0, "newton_iterations": 0,
           "wall_time_s": math.nan, "metrics": {m.name: math.nan for m in metrics}}
    try:
        res = simulate(scenario_from_dict(data, base=base), output=path, overwrite=True)
    except Exception as exc:  # noqa: BLE001 - any trouble with one case is that case's row, not the study's end
        row["message"] = f"{type(exc).__name__}: {exc}"
        row["wall_time_s"] = time.perf_counter() - start
        return row
    return fill_row(row, res, metrics)


def fill_row(row: dict, res, metrics: tuple) -> dict:
    """The row of a case from its :class:`mbsim.api.Result` (run now, or read back by ``--resume``)."""
    a = res.attrs
    row["steps"] = int(a.get("steps", 0))
    row["newton_iterations"] = int(a.get("newton_iterations", 0))
    row["wall_time_s"] = float(a.get("wall_time_s", math.nan))
    if res.status == "completed":
        row["status"], row["message"] = "ok", ""
        from .metrics import evaluate_all
        row["metrics"] = evaluate_all(metrics, res)
    else:
        row["status"], row["message"] = "failed", f"{res.status}: {res.message}"
    return row


def warm_up(data: dict, base: Optional[str] = None) -> float:
    """Load (or compile) the kernels a case of this scenario needs, in this process; returns seconds."""
    os.environ.setdefault("MBSIM_FIRST_RUN", "compile")  # a worker compiles in the foreground, once
    from .. import driver
    from ..scenario import scenario_from_dict
    start = time.perf_counter()
    try:
        sc = scenario_from_dict(data, base=base)
        driver.run(sc, None, write=False, end=min(sc.time.end, 2 * sc.time.step))
    except Exception:  # noqa: BLE001 - a case that cannot run says so in its own row, not in the warm-up
        pass
    return time.perf_counter() - start


# glibc's malloc parameters (mallopt): M_MMAP_THRESHOLD is -3
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024**2


def heap_for_arrays() -> bool:
    """Let glibc keep arrays up to 32 MiB on the heap, as it does by default, where Dask's nanny turned
    that off.

    The nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_`` set (to return freed memory to the
    system sooner); setting any such parameter also freezes glibc's mmap threshold at 128 kB, so every
    larger array a case allocates and frees is a fresh ``mmap`` whose pages the kernel zeroes again --
    measured: a case's time loop 7 % slower than in a plain process.  Raising the threshold again keeps
    the trimming.  Returns whether it was raised (Linux with glibc, the variable set)."""
    if not sys.platform.startswith("linux") or "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        return False
    try:
        import ctypes
        return bool(ctypes.CDLL("libc.so.6").mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (OSError, AttributeError):  # not glibc
        return False


def quiet_worker(worker) -> None:
    """Stop distributed's statistical profiler in this worker (a thread that samples every thread's
    stack every 10 ms, holding the GIL: ~10 % of a case's time loop)."""
    for name in ("profile", "profile-cycle"):
        pc = getattr(worker, "periodic_callbacks", {}).get(name)
        if pc is not None:
            pc.stop()


try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # pragma: no cover - only the study engine creates a WarmUp, after checking for dask
    WorkerPlugin = object


class WarmUp(WorkerPlugin):
    """Worker plugin: quiet the profiler and warm up the kernels of the study's scenario, once per worker."""

    name = "mbsim-warm-up"

    def __init__(self, data: dict, base: Optional[str] = None):
        self.data = data
        self.base = base

    async def setup(self, worker):
        import asyncio
        quiet_worker(worker)
        heap_for_arrays()
        # in a thread, so that the worker keeps talking to the scheduler while numba loads or compiles
        await asyncio.get_running_loop().run_in_executor(None, warm_up, self.data, self.base)
