"""Running a study on Dask: the cluster, the submission, failures, resume, Ctrl-C, the table.

Dask (``dask.distributed``) is the engine; nothing here schedules.  By
default a :class:`~distributed.LocalCluster` of one single-threaded worker
process per core (``workers``) is started for the study and closed after it;
``scheduler`` (or Dask's ``DASK_SCHEDULER_ADDRESS``) connects to an existing
cluster instead, and ``client`` uses a :class:`~distributed.Client` the
caller already has (from Jupyter, say) and leaves it open.

Every case is one task (:func:`mbsim.study.worker.run_case`) that writes its
own file and returns its row; the rows come back as they finish
(``as_completed``), and two cases per worker thread are kept on the cluster
(see :func:`_submit_all` for why).  A task whose worker died too often
(:class:`~distributed.KilledWorker`: ``distributed.scheduler.allowed-failures``
deaths, 3 by default) is a row with status ``lost``; any other error a row
with status ``failed``; Ctrl-C (KeyboardInterrupt) cancels what has not
finished and the table is written all the same, the cases not run marked
``cancelled``.
"""
from __future__ import annotations

import glob
import logging
import math
import os
import sys
import uuid
from dataclasses import dataclass, field
from typing import Callable, Optional

from . import table
from .studyfile import Case, Study
from .worker import WarmUp, fill_row, run_case

# set for the workers of a LocalCluster before they start (and for `dask worker`, docs/sweep.md):
# one thread each for BLAS and numba (the workers are the parallelism); no statistical profiler (it
# samples every thread's stack every 10 ms holding the GIL), and the worker's own housekeeping --
# event-loop ticks every 20 ms, memory and system monitors every 0.1 and 0.5 s, each of which has to
# take the GIL from the case's time loop -- at a calmer pace
WORKER_ENVIRON = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                  "NUMBA_NUM_THREADS": "1", "MBSIM_FIRST_RUN": "compile"}
WORKER_CONFIG = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "500ms",
                 "distributed.worker.memory.monitor-interval": "1s",
                 "distributed.admin.system-monitor.interval": "2s"}


class MissingDask(ImportError):
    """dask.distributed (or xarray, h5netcdf) is not installed; the message says how to install it."""


class StudyOutputError(Exception):
    """The output folder cannot be used (it holds another study's results, or cannot be created)."""


def require() -> None:
    """Raise :class:`MissingDask` naming the install command when the sweep extra is missing."""
    missing = [name for name in ("distributed", "xarray", "h5netcdf") if not _importable(name)]
    if missing:
        raise MissingDask(f"parameter studies need {', '.join('dask.distributed' if m == 'distributed' else m for m in missing)}, "
                          f"which {'is' if len(missing) == 1 else 'are'} not installed: pip install 'mbsim[sweep]' "
                          f"(in a clone of mbsim: pip install '.[sweep]')")


def _importable(name: str) -> bool:
    import importlib
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


@dataclass
class Outcome:
    """What a study did: the rows (case order), the folder, and what ran."""

    rows: list
    folder: str
    ran: list = field(default_factory=list)  # case indices run now
    reused: list = field(default_factory=list)  # case indices whose completed file was kept (--resume)
    interrupted: bool = False
    workers: int = 0
    dataset: object = None

    def count(self, status: str) -> int:
        return sum(r["status"] == status for r in self.rows)


def output_folder(study: Study, output: Optional[str] = None) -> str:
    """Where the study's files go: ``output``, else the study's ``output:``, else ``outputs/<study name>``
    (relative paths from the current directory, as a scenario's ``output.file``)."""
    from ..scenario.spec import safe_file_name
    folder = output or study.output or os.path.join("outputs", safe_file_name(study.name))
    return os.path.abspath(os.path.expanduser(folder))


def prepare_folder(folder: str, resume: bool) -> None:
    """Create the folder; refuse one that holds results when not resuming."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise StudyOutputError(f"cannot write the study to {folder}: it is a file, not a folder; choose another "
                               f"folder with -o DIR")
    held = sorted(glob.glob(os.path.join(folder, "case_*.h5"))) + \
        [p for p in (os.path.join(folder, table.CSV_NAME), os.path.join(folder, table.H5_NAME)) if os.path.exists(p)]
    if held and not resume:
        raise StudyOutputError(f"{folder} already holds the results of a study ({len(held)} files); --resume "
                               f"continues it (runs only the cases without a completed file of the same scenario), "
                               f"or choose another folder with -o DIR")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise StudyOutputError(f"cannot create the folder {folder} ({exc.strerror or exc}); choose another with "
                               f"-o DIR") from None


def reusable(case: Case, path: str, metrics) -> Optional[dict]:
    """The row of a case whose file holds a completed run of exactly its scenario (None otherwise)."""
    if not os.path.isfile(path):
        return None
    from ..api import load
    from ..io.reader import ResultFileError
    try:
        res = load(path)
    except (ResultFileError, OSError, KeyError, ValueError):
        return None
    if res.status != "completed" or res.scenario_text != case.text:
        return None
    return fill_row(_empty_row(case.index, metrics), res, metrics)


def _empty_row(index: int, metrics, status: str = "failed", message: str = "") -> dict:
    return {"case": index, "status": status, "message": message, "steps": 0, "newton_iterations": 0,
            "wall_time_s": math.nan, "metrics": {m.name: math.nan for m in metrics}}


def connect(client=None, scheduler: Optional[str] = None, workers: Optional[int] = None, n_cases: int = 1):
    """``(client, cluster, owned)``: the given client, one connected to ``scheduler`` (or Dask's
    ``scheduler-address`` config, which ``DASK_SCHEDULER_ADDRESS`` sets), or a new LocalCluster of
    ``workers`` single-threaded processes (default: one per core, at most one per case)."""
    import dask
    from distributed import Client, LocalCluster
    if client is not None:
        return client, None, False
    address = scheduler or dask.config.get("scheduler-address", None)
    if address:
        return Client(address, timeout="10s"), None, True
    n = workers or max(1, min(_cores(), n_cases))
    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **WORKER_ENVIRON}
    with dask.config.set({**WORKER_CONFIG, "distributed.nanny.pre-spawn-environ": environ}):
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                               silence_logs=logging.ERROR)
    return Client(cluster), cluster, True


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def run_study(study: Study, *, client=None, scheduler: Optional[str] = None, workers: Optional[int] = None,
              output: Optional[str] = None, resume: bool = False, progress: bool = False,
              notify: Optional[Callable[[str], None]] = None) -> Outcome:
    """Run every case of ``study`` (those with a reusable file skipped when ``resume``), write the table.

    KeyboardInterrupt during the run cancels the cases not finished, writes the table and returns an
    Outcome with ``interrupted`` set (it is not re-raised).
    """
    require()
    folder = output_folder(study, output)
    prepare_folder(folder, resume)
    rows: dict = {}
    todo: list = []
    for case in study.cases:
        row = reusable(case, os.path.join(folder, case.file_name), study.metrics) if resume else None
        if row is not None:
            rows[case.index] = row
        else:
            todo.append(case)
    outcome = Outcome(rows=[], folder=folder, reused=sorted(rows))
    if todo:
        if notify is not None and resume:
            notify(f"resuming: {len(rows)} of {len(study.cases)} cases already completed, running {len(todo)}")
        _submit_all(study, todo, folder, rows, outcome, client, scheduler, workers, progress, notify)
    for case in study.cases:
        rows.setdefault(case.index, _empty_row(case.index, study.metrics, "cancelled",
                                               "not finished when the study was interrupted (--resume runs it)"))
    outcome.rows = table.ordered(study, rows)
    table.write_csv(study, outcome.rows, os.path.join(folder, table.CSV_NAME))
    outcome.dataset = table.dataset(study, outcome.rows)
    table.write_h5(outcome.dataset, os.path.join(folder, table.H5_NAME))
    return outcome


def _submit_all(study, todo, folder, rows, outcome, client, scheduler, workers, progress, notify) -> None:
    """Run the cases ``todo`` (rows into ``rows``): each worker thread runs one case and has one more
    waiting, no more.

    A worker holding few cases matters when a worker process dies: the scheduler counts that death
    against every case assigned to the dying worker, running or waiting (``allowed-failures``), so a
    case that kills its workers must not take many others with it; one waiting case per thread is
    the least that keeps a worker from idling while the next case travels to it (the round trip of
    a finished case's row, the next submission and its scenario: tens of milliseconds).  The next
    case is submitted as soon as one finishes, before that one's row is fetched; rows are fetched as
    the cases finish, so that a worker that dies later loses none.  A case declared lost nevertheless
    (it shared a worker with the one that killed it) runs once more at the end, alone on the cluster,
    and is ``lost`` only if its worker dies then too.
    """
    from collections import deque

    from distributed import as_completed, wait
    from distributed.scheduler import KilledWorker
    client, cluster, owned = connect(client, scheduler, workers, len(todo))
    bar = None
    waiting = deque(todo)
    in_flight: dict = {}  # future key -> (future, case index)
    try:
        threads = sum(client.nthreads().values())
        outcome.workers = len(client.nthreads())
        if notify is not None:
            where = "a local cluster" if cluster is not None else f"the cluster at {client.scheduler.address}"
            notify(f"running {len(todo)} case{'' if len(todo) == 1 else 's'} on {where} "
                   f"({outcome.workers} worker{'' if outcome.workers == 1 else 's'}, {threads} thread"
                   f"{'' if threads == 1 else 's'}) → {folder}")
        # one name: a client that runs many studies (Jupyter) keeps one warm-up, the latest study's
        client.register_plugin(WarmUp(todo[0].data, study.base), name=WarmUp.name)
        token = uuid.uuid4().hex[:8]
        done = as_completed([])

        def submit_next():
            case = waiting.popleft()
            f = client.submit(run_case, case.index, case.data, os.path.join(folder, case.file_name), study.metrics,
                              study.base, key=f"mbsim-case-{case.index:05d}-{token}", pure=False)
            in_flight[f.key] = (f, case.index)
            done.add(f)

        for _ in range(min(_slots(client), len(waiting))):
            submit_next()
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=len(todo), unit="case", file=sys.stderr, desc=study.name, dynamic_ncols=True)
        counts = {"ok": 0, "failed": 0, "lost": 0}
        for f in done:
            _, index = in_flight.pop(f.key)
            if waiting:  # the next case first, then this one's row
                slots = _slots(client)  # a cluster may grow or shrink
                while waiting and len(in_flight) < slots:
                    submit_next()
            row = _row_of(f, index, study.metrics, KilledWorker)
            f.release()
            rows[index] = row
            outcome.ran.append(index)
            counts[row["status"]] = counts.get(row["status"], 0) + 1
            if bar is not None:
                bar.set_postfix_str(f"ok {counts['ok']}, failed {counts['failed']}, lost {counts['lost']}, "
                                    f"running {len(in_flight)}", refresh=False)
                bar.update(1)
        # A case whose workers died may have been one that shared a worker with the case that killed
        # them: each gets one more run alone on the cluster, where no other case's death counts.
        by_index = {c.index: c for c in todo}
        for index in [i for i in outcome.ran if rows[i]["status"] == "lost"]:
            if bar is not None:
                bar.set_postfix_str(f"ok {counts['ok']}, failed {counts['failed']}, lost {counts['lost']}; "
                                    f"running case {index} again, alone", refresh=True)
            case = by_index[index]
            f = client.submit(run_case, case.index, case.data, os.path.join(folder, case.file_name), study.metrics,
                              study.base, key=f"mbsim-case-{case.index:05d}-{token}-alone", pure=False)
            in_flight[f.key] = (f, index)
            wait(f)
            in_flight.pop(f.key)
            row = _row_of(f, index, study.metrics, KilledWorker, alone=True)
            f.release()
            counts["lost"] -= 1
            counts[row["status"]] = counts.get(row["status"], 0) + 1
            rows[index] = row
    except KeyboardInterrupt:
        outcome.interrupted = True
        try:
            client.cancel([f for f, _ in in_flight.values()])
        except Exception:  # noqa: BLE001 - shutting down anyway
            pass
    finally:
        if bar is not None:
            bar.close()
        if owned:
            _close(client, cluster)


def _row_of(f, index: int, metrics, killed_worker, alone: bool = False) -> dict:
    """The row of a finished future: the worker's own row, or ``lost`` (its workers died) or ``failed``."""
    if f.status == "finished":
        return f.result()
    exc = f.exception() if f.status == "error" else None
    if isinstance(exc, killed_worker) or f.status in ("lost", "cancelled"):
        when = "each time it ran, also alone on the cluster" if alone else "while running it"
        return _empty_row(index, metrics, "lost", f"its worker process died {when} ({_killed(exc)}); the case may "
                                                  f"crash its process (out of memory?)")
    return _empty_row(index, metrics, "failed", f"{type(exc).__name__}: {exc}")


def _slots(client) -> int:
    """Cases to keep on the cluster: two per worker thread (one running, one waiting), at least one;
    from the client's own copy of the scheduler's state (no round trip)."""
    try:
        threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
    except Exception:  # noqa: BLE001 - ask the scheduler, then
        threads = sum(client.nthreads().values())
    return max(1, 2 * threads)


def _killed(exc) -> str:
    if exc is None:
        return "the scheduler lost it"
    return f"{type(exc).__name__}: {exc}"


def _close(client, cluster) -> None:
    try:
        client.close()
    finally:
        if cluster is not None:
            cluster.close()


def sweep(study, *, client=None, output=None, workers: Optional[int] = None, resume: bool = False,
          scheduler: Optional[str] = None, progress: bool = False):
    """Run a parameter study and return its summary table as an :class:`xarray.Dataset`.

    Parameters
    ----------
    study : str, os.PathLike, dict or Study
        A study file (docs/sweep.md), the same content as a dict (a relative ``scenario`` path is
        then taken from the current directory), or a validated :class:`~mbsim.study.Study`.
    client : distributed.Client, optional
        Run on this client's cluster (left open).  Default: a LocalCluster for the study
        (``workers`` processes), or the cluster at ``scheduler`` / ``DASK_SCHEDULER_ADDRESS``.
    output : str or os.PathLike, optional
        The folder for ``case_NNNNN.h5``, ``summary.csv`` and ``summary.h5``; default the study's
        ``output:``, else ``outputs/<study name>``.
    workers : int, optional
        Worker processes of the LocalCluster (default: one per core, at most one per case).
    resume : bool
        Keep the cases whose file holds a completed run of the same scenario; run the rest.
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``).
    progress : bool
        A progress bar on stderr.

    Returns
    -------
    xarray.Dataset
        One entry per case: ``case``, ``status``, ``message``, ``steps``, ``newton_iterations``,
        ``wall_time_s`` and the metrics (with ``units``); for a grid one dimension per parameter,
        else the dimension ``case`` with the parameters as coordinates.  ``.to_dataframe()`` gives
        the pandas table.  ``attrs["interrupted"]`` is 1 when Ctrl-C stopped the study.

    Raises
    ------
    StudyError
        The study file, or one of its cases, is invalid (nothing is run).
    StudyOutputError
        The output folder holds another study's results (and ``resume`` is False) or cannot be made.
    MissingDask
        dask.distributed, xarray or h5netcdf is not installed.
    """
    from .studyfile import load_study, study_from_dict
    require()
    if isinstance(study, dict):
        study = study_from_dict(study)
    elif not isinstance(study, Study):
        study = load_study(study)
    outcome = run_study(study, client=client, scheduler=scheduler, workers=workers,
                        output=None if output is None else os.fspath(output), resume=resume, progress=progress)
    ds = outcome.dataset
    ds.attrs.update(folder=outcome.folder, interrupted=int(outcome.interrupted), cases_run=len(outcome.ran),
                    cases_reused=len(outcome.reused))
    return ds
