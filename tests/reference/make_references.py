#!/usr/bin/env python3
"""Regenerate the reference trajectories of the regression suite.

For every example ``scenarios/*.yaml`` this solves the continuous equations
of motion with mbsim's independent reference solver (``mbsim.reference``:
SciPy's DOP853 at rtol 1e-11, atol 1e-12; it shares no code with the
generalized-α integrator) over the example's test span (at most 1 s, 0.25 s
for models with more than 20 moving bodies) on its output grid, and writes
``tests/reference/<example>.h5`` in the OUTPUT.md layout (at most 21 frames,
fewer for large models, on a whole multiple of the example's output
interval), gzip-compressed,
with root attributes saying how it was made.

Usage (from the repository root)::

    python tests/reference/make_references.py            # all examples
    python tests/reference/make_references.py pendulum   # some of them

Regenerate after changing an example: the regression suite refuses a
reference whose stored scenario text differs from the example file.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import mbsim  # noqa: E402
from mbsim.io.writer import write_trajectory  # noqa: E402
from mbsim.reference import solve_reference  # noqa: E402
from mbsim.reference.solve import output_times  # noqa: E402
from mbsim.scenario import load_scenario  # noqa: E402
from tests.integration._examples_util import example_paths, span_for  # noqa: E402

HERE = Path(__file__).resolve().parent
RTOL, ATOL, METHOD = 1e-11, 1e-12, "DOP853"


MAX_INTERVALS = 20  # frames per file at most MAX_INTERVALS + 1 ...
FRAME_BUDGET = 48_000  # ... and about this many bytes of frame data: tens of KB per file


def reference_interval(sc, span: float) -> float:
    """A whole multiple of the example's output interval: at most MAX_INTERVALS
    intervals over the span, fewer for large models (at least 2)."""
    per_frame = 8 * (19 * len(sc.bodies) + 7 * len(sc.connectors) + 12)
    n = max(2, min(MAX_INTERVALS, FRAME_BUDGET // per_frame - 1))
    k = max(1, math.ceil(span / n / sc.output.interval - 1e-9))
    return k * sc.output.interval


def make(path: Path) -> Path:
    sc = load_scenario(str(path))
    span = span_for(sc)
    times = output_times(span, reference_interval(sc, span))
    start = time.perf_counter()
    sol = solve_reference(sc, times=times, method=METHOD, rtol=RTOL, atol=ATOL)
    wall = time.perf_counter() - start
    nan = float("nan")
    attrs = {
        "rho_inf": nan, "alpha_f": nan, "alpha_m": nan, "beta": nan, "gamma": nan, "tangent": "none",
        "integrator": f"reference: scipy.integrate.solve_ivp {METHOD}",
        "reference_method": METHOD, "reference_rtol": RTOL, "reference_atol": ATOL,
        "reference_nfev": int(sol.nfev), "reference_span_s": span,
        "reference_command": f"python tests/reference/make_references.py {path.stem}",
        "reference_created_utc": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "scenario_file": f"scenarios/{path.name}",
        "scenario_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }
    out = HERE / f"{path.stem}.h5"
    write_trajectory(out, sc, sol.frames(), attrs, message=f"reference solution over 0 … {span} s",
                     counters={"steps": 0, "newton_iterations": 0, "rejected_steps": 0, "wall_time_s": wall},
                     compression="gzip")
    print(f"{out.relative_to(REPO)}: {len(times)} frames, span {span} s, {sol.nfev} RHS evaluations, "
          f"{wall:.1f} s, {out.stat().st_size / 1024:.0f} KiB  (mbsim {mbsim.__version__})")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples", nargs="*", help="example names (default: all)")
    args = ap.parse_args(argv)
    paths = example_paths()
    if args.examples:
        paths = [p for p in paths if p.stem in args.examples]
    for p in paths:
        make(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
