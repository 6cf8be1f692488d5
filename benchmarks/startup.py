#!/usr/bin/env python3
"""Start-up of mbsim as a user meets it: whole processes, timed from outside.

Each figure is the wall time of a fresh Python process (median of
``--repeat`` runs, interleaved), run from this checkout (``python -m mbsim``
with the repository on ``PYTHONPATH``):

``import numpy, numba, h5py``
    the floor: what importing the numerical stack alone costs here;
``mbsim info RESULT`` and ``mbsim validate scenarios/pendulum.yaml``
    reading a result and checking a scenario (they import no compiled code);
``mbsim run`` (warm cache)
    a 1-body, 1000-step run with numba's cache already filled, and its ratio
    to the floor;
``mbsim run scenarios/pendulum.yaml`` (cold cache)
    the first run after ``pip install .``: numba's cache directory is a new
    empty one (``NUMBA_CACHE_DIR``).  By default the run is interpreted while
    a background process compiles the kernels (:mod:`mbsim.compiling`);
    also shown: when that compilation is done, and the next run.  With
    ``--compile``, a first run that compiles in the foreground as well
    (``MBSIM_FIRST_RUN=compile``).  Once, unless ``--no-cold`` (a minute or two).

The targets of issue 12 are printed beside the figures.  Figures only;
nothing is asserted.

Usage::

    python benchmarks/startup.py
    python benchmarks/startup.py --repeat 3 --no-cold
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# One body on a spring and a dashpot under gravity: 1000 steps of 1 ms, a frame every step.
ONE_BODY = """\
mbsim: 1
name: one-body
gravity: [0, 0, -9.81]
time: {end: 1.0, step: 1.0e-3}
bodies:
  - {name: bob, mass: 1.0, inertia: [0.01, 0.02, 0.03], position: [0, 0, -1], angular_velocity: [0, 0, 2.0]}
connectors:
  - {type: spring, bodies: [world, bob], points: [[0, 0, 0], [0, 0, -1]], stiffness: 200.0, rest_length: 0.9}
  - {type: damper, bodies: [world, bob], points: [[0, 0, 0], [0, 0, -1]], damping: 1.5}
"""


def wall(cmd: list, env: dict) -> float:
    """Wall time [s] of one process; raises if it fails."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stderr}")
    return elapsed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="runs of each warm figure (default 5; the median is shown)")
    ap.add_argument("--no-cold", dest="cold", action="store_false",
                    help="skip the first run with an empty numba cache (tens of seconds)")
    ap.add_argument("--compile", action="store_true",
                    help="also time a first run that compiles in the foreground (MBSIM_FIRST_RUN=compile, "
                         "about a minute)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    py = sys.executable
    mbsim = [py, "-m", "mbsim"]
    print(f"Python {platform.python_version()} on {platform.machine()} ({os.cpu_count()} CPUs); "
          f"whole processes, median of {args.repeat}")
    with tempfile.TemporaryDirectory() as tmp:
        scen = Path(tmp) / "one_body.yaml"
        scen.write_text(ONE_BODY)
        result = Path(tmp) / "one_body.h5"
        wall(mbsim + ["run", str(scen), "-o", str(result), "--quiet"], env)  # fills the cache, writes RESULT
        cases = {
            "import numpy, numba, h5py": [py, "-c", "import numpy, numba, h5py"],
            "mbsim info RESULT": mbsim + ["info", str(result)],
            "mbsim validate pendulum.yaml": mbsim + ["validate", str(ROOT / "scenarios" / "pendulum.yaml")],
            "mbsim run, 1 body, 1000 steps": mbsim + ["run", str(scen), "-o", str(Path(tmp) / "again.h5"),
                                                      "--quiet", "--overwrite"],
        }
        times = {k: [] for k in cases}
        for _ in range(args.repeat):  # interleaved, so that a slow moment of the machine hits every case
            for name, cmd in cases.items():
                times[name].append(wall(cmd, env))
        med = {k: statistics.median(v) for k, v in times.items()}
        floor = med["import numpy, numba, h5py"]
        targets = {"mbsim info RESULT": "<= 0.3 s", "mbsim validate pendulum.yaml": "<= 0.3 s",
                   "mbsim run, 1 body, 1000 steps": f"<= 1.4 x import = {1.4 * floor:.2f} s"}
        print(f"{'':32s} {'median s':>9} {'range s':>15}   target (issue 12)")
        for name, v in times.items():
            print(f"{name:32s} {med[name]:9.3f} {min(v):7.3f}-{max(v):<7.3f}   {targets.get(name, '')}")
        print(f"{'run / import':32s} {med['mbsim run, 1 body, 1000 steps'] / floor:9.2f}")
        if args.cold:
            pendulum = [str(ROOT / "scenarios" / "pendulum.yaml"), "--quiet", "--overwrite"]
            cache = Path(tmp) / "empty-numba-cache"
            cold_env = {k: v for k, v in env.items() if k != "MBSIM_FIRST_RUN"}  # the default: what users get
            cold_env["NUMBA_CACHE_DIR"] = str(cache)
            t0 = time.perf_counter()
            t = wall(mbsim + ["run", *pendulum, "-o", str(Path(tmp) / "cold.h5")], cold_env)
            print(f"{'first run, empty cache':32s} {t:9.3f} {'(once)':>15}   <= 10 s   (scenarios/pendulum.yaml; "
                  f"interpreted while the kernels compile in the background)")
            while not any(cache.rglob("mbsim-ready-*")) and any(cache.rglob("mbsim-compiling-*")):
                time.sleep(0.5)
            ready = time.perf_counter() - t0
            again = wall(mbsim + ["run", *pendulum, "-o", str(Path(tmp) / "cold2.h5")], cold_env)
            print(f"{'  background compile done after':32s} {ready:9.3f} {'(once)':>15}   (from the first run's start)")
            print(f"{'  the next run':32s} {again:9.3f} {'(once)':>15}")
            if args.compile:
                fg = dict(cold_env, NUMBA_CACHE_DIR=str(Path(tmp) / "empty-numba-cache-2"), MBSIM_FIRST_RUN="compile")
                t = wall(mbsim + ["run", *pendulum, "-o", str(Path(tmp) / "cold3.h5")], fg)
                print(f"{'first run, compiling first':32s} {t:9.3f} {'(once)':>15}   (MBSIM_FIRST_RUN=compile)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
