#!/usr/bin/env python3
"""Two checkouts of mbsim against each other, alternately, in one run on one machine.

Each repeat runs, from each checkout in turn (the order flips every repeat), its own
``benchmarks/chain.py`` (the connector chain, writing its HDF5 file as a user's run does) and
``benchmarks/joint_chain.py --mbsim-only`` (the revolute chain), with the checkout first on
``PYTHONPATH``; the table gives the best steps/s of each over the repeats and their ratio, then every
run.  The machine's speed drifts by several per cent within minutes: alternating is what makes the
ratio mean something.  A change of the engine must keep both within 10 % at every N (issue 27).
Figures only; nothing is asserted.

Usage::

    git worktree add ../old <commit>      # the old code beside this checkout
    python benchmarks/old_vs_new.py ../old .
    python benchmarks/old_vs_new.py ../old . --n 1 10 --repeats 3 --seconds 1

Each checkout compiles its kernels into numba's cache on its first run (a minute or two, not timed:
the scripts time the loop only).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
from pathlib import Path

JOINT_STEPS = {1: 100_000, 10: 20_000, 100: 2000, 1000: 200, 10_000: 50}


def _chain(root: Path, ns, seconds: float) -> dict:
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "chain.py"), "--n", *map(str, ns),
                          "--seconds", str(seconds)], capture_output=True, text=True, env=_env(root), check=True,
                         cwd=root).stdout
    rates = {}
    for line in out.splitlines():
        if re.match(r"\s*\d+\s+\d+\s+\D", line):  # N, unknowns, linear solver, steps, setup, wall, steps/s, it/step
            row = line.split()
            rates[int(row[0])] = float(row[-2])
    return rates


def _joints(root: Path, n: int, steps: int) -> float:
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "joint_chain.py"), "--mbsim-only", "--no-ring",
                          "--no-accuracy", "--n", str(n), "--steps", str(steps), "--repeats", "1", "--json"],
                         capture_output=True, text=True, env=_env(root), check=True, cwd=root).stdout
    return float(json.loads(out[out.index("{"):])["chain"][0]["mbsim"]["steps_per_s"])


def _env(root: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                MBSIM_FIRST_RUN="compile")  # a cold cache compiles before the timed loop, not beside it


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path, help="the checkout measured first in the first repeat")
    ap.add_argument("new", type=Path)
    ap.add_argument("--n", type=int, nargs="+", default=[1, 10, 100, 1000], help="chain lengths")
    ap.add_argument("--repeats", type=int, default=5, help="alternations (default 5)")
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds of each chain.py run (default 3)")
    ap.add_argument("--steps-scale", type=float, default=1.0,
                    help="scales the joint chain's steps per N (100 000 at N = 1 ... 200 at N = 1000)")
    args = ap.parse_args(argv)
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    for name, root in trees.items():
        if not (root / "benchmarks" / "chain.py").is_file():
            ap.error(f"{name}: {root} is not a checkout of mbsim (no benchmarks/chain.py)")
    runs = collections.defaultdict(list)
    for rep in range(args.repeats):
        order = list(trees.items()) if rep % 2 == 0 else list(trees.items())[::-1]
        for name, root in order:
            for n, rate in _chain(root, args.n, args.seconds).items():
                runs[("chain", name, n)].append(rate)
            for n in args.n:
                steps = max(5, int(JOINT_STEPS.get(n, max(50, 200_000 // n)) * args.steps_scale))
                runs[("joint chain", name, n)].append(_joints(root, n, steps))
        print(f"repeat {rep + 1}/{args.repeats} done", file=sys.stderr, flush=True)
    print(f"old: {trees['old']}\nnew: {trees['new']}\nsteps/s, best of {args.repeats} alternated runs")
    print(f"{'':14s}{'N':>6s} {'old':>11s} {'new':>11s} {'new/old':>8s}   every run (old | new)")
    for bench in ("chain", "joint chain"):
        for n in args.n:
            old, new = runs[(bench, "old", n)], runs[(bench, "new", n)]
            print(f"{bench:14s}{n:6d} {max(old):11.1f} {max(new):11.1f} {max(new) / max(old):8.3f}   "
                  f"{' '.join(f'{x:.0f}' for x in old)} | {' '.join(f'{x:.0f}' for x in new)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
