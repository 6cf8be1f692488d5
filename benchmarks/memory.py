#!/usr/bin/env python3
"""Peak memory of mbsim on the N-body chain of benchmarks/chain.py, per N.

Each N runs in its own Python process (``chain.py --n N --steps S``, which
writes the HDF5 file to a temporary directory as a user's run does), whose peak resident set size the operating system reports after
it exits; the baseline is the same process for N = 1.  Figures only.

Usage::

    python benchmarks/memory.py                  # N = 1, 100, 1000, 10000
    python benchmarks/memory.py --n 1 1000 --steps 20
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def peak_rss_mib(n: int, steps: int) -> float:
    """Peak RSS [MiB] of a fresh process that builds and runs an N-body chain."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run([sys.executable, str(HERE / "chain.py"), "--n", str(n), "--steps", str(steps)],
                   check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the largest child so far (KiB on Linux): run in increasing N
    return max(after, before) / 1024.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1, 100, 1000, 10000])
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args(argv)
    ns = sorted(args.n)
    print(f"{'N':>7} {'peak RSS MiB':>13} {'above N = ' + str(ns[0]):>14} {'KiB per body':>13}")
    base = None
    for n in ns:
        mib = peak_rss_mib(n, args.steps)
        base = mib if base is None else base
        extra = mib - base
        per = 1024.0 * extra / (n - ns[0]) if n > ns[0] else float("nan")
        print(f"{n:>7} {mib:>13.1f} {extra:>14.1f} {per:>13.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
