#!/usr/bin/env python3
"""Throughput of ``mbsim sweep``: cases/s on 1 and 2 Dask workers, and Dask's overhead per case.

The study: ``--cases`` cases (default 64) of the N-body chain of
``benchmarks/chain.py`` (default N = 100, ``--steps`` 2000 steps of 1 ms:
about a second per case here), the first spring's stiffness swept by a
``linspace`` from 8e3 to 1.2e4 N/m, two metrics per case, every case writing
its HDF5 file as ``mbsim run`` does.

It is run three ways, each timed from the first case submitted to the table
written (the cluster started and its workers warmed up before, as
``mbsim sweep`` does before its first case):

- ``plain loop``: one process runs the cases one after the other, calling the
  worker's own function (:func:`mbsim.study.worker.run_case`) and writing the
  same files and table: what Dask adds nothing to;
- ``dask, 1 worker`` and ``dask, 2 workers``: :func:`mbsim.study.engine.run_study`
  on a LocalCluster of single-threaded worker processes, as ``mbsim sweep --workers N``.

Printed: wall time, cases/s, the mean time loop of a case (its file's
``wall_time_s``: the same computation everywhere, so a slower worker shows
here), the CPU other processes took meanwhile (in cores: on a shared
machine a run of 2 workers next to someone else's busy process measures
that process), the speed-up of 2 workers over 1, and Dask's overhead per
case: the 1-worker study's time over the plain loop's, minus one.  Figures only;
nothing is asserted.  Run it on a quiet machine (``flock /tmp/bench.lock``
where several people share one).

Usage::

    python benchmarks/sweep.py                         # 64 cases of the 100-body chain, 1 and 2 workers
    python benchmarks/sweep.py --cases 8 --n 10 --steps 200 --workers 1
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MBSIM_FIRST_RUN", "compile")  # a cold numba cache compiles in the foreground
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from chain import chain_dict  # noqa: E402

from mbsim.scenario.loader import to_yaml  # noqa: E402
from mbsim.study import engine, load_study, table  # noqa: E402
from mbsim.study.worker import run_case, warm_up  # noqa: E402


def write_study(folder: str, n: int, steps: int, cases: int) -> str:
    """The chain scenario and a study over it, in ``folder``; returns the study file."""
    with open(os.path.join(folder, "chain.yaml"), "w", encoding="utf-8") as f:
        f.write(to_yaml(chain_dict(n, steps)))
    study = os.path.join(folder, "chain_study.yaml")
    with open(study, "w", encoding="utf-8") as f:
        f.write("scenario: chain.yaml\n"
                "parameters:\n"
                f"  connectors[spring1].stiffness: {{linspace: [8000, 12000, {cases}]}}\n"
                "design: grid\n"
                "metrics:\n"
                f"  tip_z: {{quantity: 'bodies[b{n}].position[2]', reduce: final}}\n"
                "  first_spring: {quantity: 'connectors[spring1].force', reduce: max}\n")
    return study


def plain_loop(study, folder: str) -> tuple:
    """The cases one after the other in this process; ``(seconds, rows)``."""
    warm_up(study.cases[0].data)
    import h5netcdf  # noqa: F401  (imported before the clock starts, as in the Dask runs' process)
    import xarray  # noqa: F401
    start = time.perf_counter()
    rows = {c.index: run_case(c.index, c.data, os.path.join(folder, c.file_name), study.metrics)
            for c in study.cases}
    ordered = table.ordered(study, rows)
    table.write_csv(study, ordered, os.path.join(folder, table.CSV_NAME))
    table.write_h5(table.dataset(study, ordered), os.path.join(folder, table.H5_NAME))
    return time.perf_counter() - start, ordered


def on_dask(study, folder: str, workers: int) -> tuple:
    """The study on a LocalCluster of ``workers`` processes; ``(seconds, rows, start-up seconds)``."""
    t0 = time.perf_counter()
    client, cluster, _ = engine.connect(workers=workers)  # the LocalCluster mbsim sweep --workers N starts
    try:
        from mbsim.study.worker import WarmUp
        client.register_plugin(WarmUp(study.cases[0].data), name="mbsim-warm-up-benchmark")
        startup = time.perf_counter() - t0
        start = time.perf_counter()
        outcome = engine.run_study(study, client=client, output=folder)
        seconds = time.perf_counter() - start
    finally:
        client.close()
        cluster.close()
    bad = [r for r in outcome.rows if r["status"] != "ok"]
    if bad:
        raise SystemExit(f"{len(bad)} cases did not complete, e.g. case {bad[0]['case']}: {bad[0]['message']}")
    return seconds, outcome.rows, startup


class OtherLoad:
    """The CPU that processes other than this one and its children use while a phase runs (sampled
    twice a second, in cores): a figure taken on a machine someone else is loading is not one of mbsim."""

    def __init__(self):
        import threading
        self.samples: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        import psutil
        me, seen = psutil.Process(), {}
        while not self._stop.wait(0.5):
            ours = {me.pid} | {c.pid for c in me.children(recursive=True)}
            load = 0.0
            for p in psutil.process_iter():
                if p.pid in ours:
                    continue
                try:
                    q = seen.setdefault(p.pid, p)
                    load += q.cpu_percent() / 100.0
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    seen.pop(p.pid, None)
            self.samples.append(load)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False

    @property
    def cores(self) -> float:
        """Mean cores used by others (the first sample only primes the counters)."""
        s = self.samples[1:]
        return sum(s) / len(s) if s else 0.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=64, help="cases in the study (default 64)")
    ap.add_argument("--n", type=int, default=100, help="bodies in the chain (default 100)")
    ap.add_argument("--steps", type=int, default=2000, help="steps of 1 ms per case (default 2000)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts (default 1 2)")
    ap.add_argument("--keep", metavar="DIR", help="keep the files in DIR (default: a temporary folder, removed)")
    args = ap.parse_args(argv)
    root = args.keep or tempfile.mkdtemp(prefix="mbsim-sweep-bench-")
    os.makedirs(root, exist_ok=True)
    try:
        study = load_study(write_study(root, args.n, args.steps, args.cases))
        print(f"mbsim sweep benchmark: {args.cases} cases of the {args.n}-body chain, {args.steps} steps each, "
              f"a file per case; {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
        results = []
        with OtherLoad() as other:
            loop_s, rows = plain_loop(study, _fresh(root, "loop"))
        results.append(("plain loop, 1 process", loop_s, rows, 0.0, other.cores))
        for w in args.workers:
            with OtherLoad() as other:
                s, rows, startup = on_dask(study, _fresh(root, f"dask{w}"), w)
            results.append((f"dask, {w} worker{'' if w == 1 else 's'}", s, rows, startup, other.cores))
        print(f"\n{'':24}{'wall s':>9}{'cases/s':>9}{'time loop s/case':>18}{'cluster start s':>17}"
              f"{'others (cores)':>16}")
        for name, s, rows, startup, others in results:
            loop = sum(r["wall_time_s"] for r in rows) / len(rows)
            print(f"{name:24}{s:9.2f}{len(rows) / s:9.3f}{loop:18.3f}{startup:17.2f}{others:16.2f}")
        if max(r[4] for r in results) > 0.1:
            print("\nnote: other processes used the CPU during the runs (last column): the figures are not those "
                  "of a quiet machine")
        by = {name: s for name, s, _, _, _ in results}
        one, two = by.get("dask, 1 worker"), by.get("dask, 2 workers")
        print()
        if one:
            over = one / loop_s - 1
            print(f"Dask overhead per case (1 worker vs the plain loop): {100 * over:+.1f} % "
                  f"({(one - loop_s) / len(study.cases) * 1e3:+.1f} ms per case)")
        if one and two:
            print(f"speed-up, 2 workers over 1: {one / two:.2f}x (over the plain loop: {loop_s / two:.2f}x)")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


def _fresh(root: str, name: str) -> str:
    folder = os.path.join(root, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    return folder


if __name__ == "__main__":
    sys.exit(main())
