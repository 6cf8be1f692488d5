#!/usr/bin/env python3
"""Error-controlled steps (``time.tolerance``, THEORY §14, docs/stepping.md) against fixed steps, on the
examples: the error against the independent reference solver, the steps, the wall time.

For every example (``scenarios/*.yaml``) over ``--end`` seconds (default: its own end, at most 1 s):

- the reference: :func:`mbsim.reference.solve_reference` (DOP853, rtol 1e-11) at the frame times;
- fixed steps: the example's Δt, Δt/2, Δt/4 (``--halvings``);
- error-controlled: ``rtol = atol = tol`` for every tol of ``--tols`` (default 1e-4 … 1e-8), the
  example's Δt as the first step.

The error of a run is the largest over frames and bodies of the position error [m] and the rotation
angle [rad] (as ``mbsim verify`` measures them).  Printed per example: the runs, the log-log slope of the
error against the tolerance, the largest error / tol, and for each tolerance the fixed steps that reach
the same error (from the fixed runs' own error ∝ Δt² line, interpolated in log-log) over the
error-controlled steps.  ``--figure PATH`` draws the work-precision diagram (error against wall time) of
the examples named by ``--figure-examples``, with Exudyn at fixed steps where ``--exudyn-python`` is given
(the chain of ``benchmarks/chain.py``).

Usage::

    python benchmarks/adaptive.py                                  # every example (minutes)
    python benchmarks/adaptive.py --only iftomm_a03_andrews pendulum --tols 1e-5 1e-6 1e-7
    python benchmarks/adaptive.py --controller elementary          # the other controller (time.controller)
    python benchmarks/adaptive.py --figure docs/adaptive.png --exudyn-python /work/exu/bin/python
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("MBSIM_FIRST_RUN", "compile")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

from mbsim import driver  # noqa: E402
from mbsim.stepping import CONTROLLERS  # noqa: E402
from mbsim.reference import solve_reference  # noqa: E402
from mbsim.scenario import load_scenario  # noqa: E402
from mbsim.verify import _equilibrium_start, _errors_and_scales  # noqa: E402  (mbsim verify's own measures)

SKIP = ("mass_spring_damper_study",)  # a study file, not a scenario
# the default span of an example whose reference over 1 s takes too long (A02: its chaotic motion, DOP853 at
# rtol 1e-11 did not finish in 17 CPU minutes; its first 0.3 s in about a minute)
SPANS = {"iftomm_a02_four_bars": 0.3}


def error_of(frames: dict, ref: dict) -> float:
    e, _ = _errors_and_scales(frames, ref)
    return max(e["position"], e["rotation"])


def run(sc):
    t0 = time.perf_counter()
    s = driver.run(sc, write=False, keep_frames=True)
    return s, time.perf_counter() - t0


def fixed_steps_for(error: float, fixed: list) -> float:
    """Steps a fixed-step run needs for ``error``: the log-log line through the fixed runs (nearest pair)."""
    pts = sorted((math.log(e), math.log(n)) for n, e in fixed if e > 0)
    if len(pts) < 2:
        return math.nan
    le = math.log(error)
    (x0, y0), (x1, y1) = (pts[0], pts[1]) if le < pts[0][0] else (pts[-2], pts[-1]) if le > pts[-1][0] else \
        next((a, b) for a, b in zip(pts, pts[1:]) if a[0] <= le <= b[0])
    return math.exp(y0 + (y1 - y0) * (le - x0) / (x1 - x0))


def study(path: Path, args) -> dict:
    sc = load_scenario(path)
    span = min(sc.time.end, args.end) if args.end else min(sc.time.end, SPANS.get(path.stem, 1.0))
    sc = replace(sc, time=replace(sc.time, end=span))
    interval = sc.output.interval
    times = np.append(np.arange(0.0, span - 1e-9 * span, interval), span)
    ref = solve_reference(sc, times, rtol=1e-11, atol=1e-12, poses=_equilibrium_start(sc)).frames()
    out = {"name": sc.name, "fixed": [], "tol": []}
    for k in range(args.halvings + 1):
        h = sc.time.step / 2 ** k
        s, wall = run(replace(sc, time=replace(sc.time, step=h, adaptive=False)))
        if s.status != "completed":
            print(f"  fixed {h:.3g} s: {s.message}")
            continue
        out["fixed"].append((s.steps, error_of(s.frames_data, ref), wall))
    for tol in args.tols:
        t = replace(sc.time, rtol=tol, atol=tol, adaptive=True, max_step=None, controller=args.controller)
        s, wall = run(replace(sc, time=t))
        if s.status != "completed":
            print(f"  tol {tol:g}: {s.message}")
            continue
        f = s.frames_data
        assert np.allclose(f["time"], ref["time"]), "frames where asked"
        out["tol"].append((tol, s.steps, s.rejected_steps, error_of(f, ref), wall, s.smallest_step, s.largest_step))
    return out


def report(r: dict) -> dict:
    print(f"\n{r['name']}")
    for n, e, w in r["fixed"]:
        print(f"  fixed     {n:>8} steps  error {e:9.2e}  wall {w:7.3f} s")
    rows = r["tol"]
    for tol, n, rej, e, w, hmin, hmax in rows:
        nf = fixed_steps_for(e, [(a, b) for a, b, _ in r["fixed"]])
        print(f"  tol {tol:7.0e} {n:>8} steps ({rej:>4} rejected, Δt {hmin:.2e} … {hmax:.2e} s)  error {e:9.2e} "
              f"= {e / tol:7.2f} tol  wall {w:7.3f} s  fixed steps for that error {nf:10.0f} ({nf / n:5.2f}×)")
    slope = math.nan
    if len(rows) >= 2:
        slope = float(np.polyfit(np.log10([x[0] for x in rows]), np.log10([max(x[3], 1e-300) for x in rows]), 1)[0])
    worst = max((x[3] / x[0] for x in rows), default=math.nan)
    gain = min((fixed_steps_for(x[3], [(a, b) for a, b, _ in r["fixed"]]) / x[1] for x in rows), default=math.nan)
    print(f"  slope {slope:.2f} (target 0.6 … 1.4), largest error/tol {worst:.1f} (target < 50), "
          f"fixed/adaptive steps at equal error ≥ {gain:.2f}")
    return {"name": r["name"], "slope": slope, "worst": worst, "gain": gain}


def figure(path: str, args) -> None:
    """The work-precision diagram of bump_stop: the error against the wall time of the time loop, for fixed
    steps (Δt … Δt/32), error-controlled steps (``--tols``) and, with ``--exudyn-python``, Exudyn at fixed
    steps on the same model (benchmarks/_exudyn_bump_stop.py: the hub's height at the frame times)."""
    import json
    import subprocess
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sc = load_scenario(HERE.parent / "scenarios" / "bump_stop.yaml")
    times = np.append(np.arange(0.0, sc.time.end - 1e-9, sc.output.interval), sc.time.end)
    ref = solve_reference(sc, times, rtol=1e-11, atol=1e-12).frames()
    curves = {"mbsim, fixed steps": [], "mbsim, time.tolerance": [], "Exudyn 1.13, fixed steps": []}
    for k in range(6):
        s, _ = run(replace(sc, time=replace(sc.time, step=sc.time.step / 2 ** k)))
        curves["mbsim, fixed steps"].append((s.wall_time_s, error_of(s.frames_data, ref)))
    for tol in args.tols:
        s, _ = run(replace(sc, time=replace(sc.time, rtol=tol, atol=tol, adaptive=True)))
        curves["mbsim, time.tolerance"].append((s.wall_time_s, error_of(s.frames_data, ref)))
    if args.exudyn_python:
        zref = ref["bodies/position"][:, 0, 2]
        for k in range(6):
            h = sc.time.step / 2 ** k
            out = subprocess.run([args.exudyn_python, str(HERE / "_exudyn_bump_stop.py"), "--step", repr(h)],
                                 capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
            r = json.loads(out)
            t, z = np.asarray(r["time"]), np.asarray(r["z"])
            zi = np.interp(times, t, z)  # (the frames are at steps: this picks them)
            curves["Exudyn 1.13, fixed steps"].append((r["wall_s"], float(np.abs(zi - zref).max())))
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for (label, pts), style in zip(curves.items(), ("o-", "s-", "^--")):
        if pts:
            w, e = zip(*pts)
            ax.loglog(w, e, style, label=label)
    ax.set_xlabel("wall time of the time loop [s]")
    ax.set_ylabel("largest position error [m]")
    ax.set_title("bump_stop: error against work (2 cores, one used)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    for label, pts in curves.items():
        print(f"{label}: " + ", ".join(f"({w:.3g} s, {e:.2e} m)" for w, e in pts))
    print(f"wrote {path}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", help="example names (default: every scenarios/*.yaml)")
    ap.add_argument("--tols", nargs="+", type=float, default=[1e-4, 1e-5, 1e-6, 1e-7, 1e-8])
    ap.add_argument("--end", type=float, default=None, help="simulated span [s] (default: the example's, ≤ 1 s)")
    ap.add_argument("--halvings", type=int, default=2, help="fixed runs at Δt, Δt/2, … (default 2 halvings)")
    ap.add_argument("--controller", choices=CONTROLLERS, default="pi")
    ap.add_argument("--figure", metavar="PATH", help="draw the work-precision diagram of bump_stop to PATH and stop")
    ap.add_argument("--exudyn-python", metavar="PY", help="the Python of an Exudyn environment (for --figure)")
    args = ap.parse_args(argv)
    if args.figure:
        figure(args.figure, args)
        return 0
    names = args.only or sorted(p.stem for p in (HERE.parent / "scenarios").glob("*.yaml") if p.stem not in SKIP)
    summary = []
    for name in names:
        summary.append(report(study(HERE.parent / "scenarios" / f"{name}.yaml", args)))
    print(f"\n{'example':<28} {'slope':>6} {'max err/tol':>12} {'fixed/adaptive steps':>21}")
    for s in summary:
        print(f"{s['name']:<28} {s['slope']:6.2f} {s['worst']:12.1f} {s['gain']:21.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
