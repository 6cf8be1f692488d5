#!/usr/bin/env python3
"""Throughput of mbsim on an N-body chain: steps/s, Newton iterations per step, wall time.

The chain (the same model as the Exudyn comparison): bodies of mass 1 and
inertia diag(0.01, 0.02, 0.03) at x = 1 … N on the x axis.  Each body is
linked to the previous one (``world`` for the first) by a spring (k = 1e4,
rest length = initial distance) and a damper (c = 10) between the points
0.25 m either side of the midpoint of the two centres, and by a torsional
damper with projection P1 (χ = 1).  Gravity [0, 0, −9.81], Δt = 1e-3,
ρ∞ = 0.9, a frame every 10 steps.

The scenario goes through :func:`mbsim.scenario.scenario_from_dict`, i.e. the
same validation as a file.  Figures only; nothing is asserted.

Usage::

    python benchmarks/chain.py                 # N = 1, 10, 100, 1000
    python benchmarks/chain.py --n 1 10 100 --steps 200 --no-write
    python benchmarks/chain.py --closed --n 4 10 20 100   # loops: not a forest

Without ``--steps`` each N first takes a short probe run to time a step and
then runs enough steps for about ``--seconds`` (default 4 s) of wall time,
at least 20.  ``wall s`` is the time loop only (stepping, per-frame
diagnostics and, unless ``--no-write``, writing the HDF5 file, as a user's
run does); ``setup s`` is validation, model and sparsity-pattern set-up.

``--profile`` adds where the time goes: the phases of a Newton iteration,
each compiled kernel called and timed on its own at the chain's first step
(body terms, element laws, scatter, factorization, solve), against the
compiled loop's time per iteration, with its share of output: handing
frames to the HDF5 writer (timed in the run) plus the frame quantities
(connector actions, energies, momenta), which the compiled loop computes
itself and which are timed apart here.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

# a cold numba cache compiles in the foreground (not the plain-Python first run of mbsim.compiling):
# these figures are of the compiled code
os.environ.setdefault("MBSIM_FIRST_RUN", "compile")

# Run from a checkout without installing: the repository root holds the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import scipy  # noqa: E402

import mbsim  # noqa: E402
from mbsim import driver  # noqa: E402
from mbsim.scenario import scenario_from_dict  # noqa: E402

DT = 1e-3
RHO_INF = 0.9
FRAME_EVERY = 10  # steps between stored frames
MIN_STEPS = 20
PROBE_STEPS = 50


def chain_dict(n: int, steps: int, closed: bool = False) -> dict:
    """The N-body chain as a scenario mapping (SCENARIO.md keys), ``steps`` steps of ``DT``.

    Parameters
    ----------
    n : int
        Number of moving bodies (6 n unknowns).
    steps : int
        Number of time steps; ``time.end = steps * DT``.
    closed : bool
        Close the chain into a loop: the last body is linked back to the first
        (by the same three connectors, between their centres), so the coupling
        is not a forest.
    """
    end = steps * DT
    bodies = [{"name": f"b{i}", "mass": 1.0, "inertia": [0.01, 0.02, 0.03], "position": [float(i), 0.0, 0.0]}
              for i in range(1, n + 1)]
    connectors = []
    for i in range(1, n + 1):
        prev = "world" if i == 1 else f"b{i - 1}"
        mid = i - 0.5  # midpoint of the centres at x = i - 1 (world: the origin) and x = i
        points = [[mid - 0.25, 0.0, 0.0], [mid + 0.25, 0.0, 0.0]]
        connectors += [
            # rest_length left out: SCENARIO.md defaults it to the initial distance
            {"name": f"spring{i}", "type": "spring", "bodies": [prev, f"b{i}"], "points": points,
             "stiffness": 1e4},
            {"name": f"damper{i}", "type": "damper", "bodies": [prev, f"b{i}"], "points": points,
             "damping": 10.0},
            {"name": f"torsion{i}", "type": "torsional_damper", "bodies": [prev, f"b{i}"], "damping": 1.0,
             "projection": "P1"},
        ]
    if closed and n >= 3:
        ends, centres = [f"b{n}", "b1"], [[float(n), 0.0, 0.0], [1.0, 0.0, 0.0]]
        connectors += [
            {"name": "spring-loop", "type": "spring", "bodies": ends, "points": centres, "stiffness": 1e4},
            {"name": "damper-loop", "type": "damper", "bodies": ends, "points": centres, "damping": 10.0},
            {"name": "torsion-loop", "type": "torsional_damper", "bodies": ends, "damping": 1.0, "projection": "P1"},
        ]
    return {
        "mbsim": 1, "name": f"{'loop' if closed else 'chain'}-{n}", "gravity": [0.0, 0.0, -9.81],
        "time": {"end": end, "step": DT},
        "integrator": {"rho_inf": RHO_INF},
        "output": {"interval": FRAME_EVERY * DT},
        "bodies": bodies, "connectors": connectors,
    }


def run_chain(n: int, steps: int, out_dir: str | None, closed: bool = False):
    """Validate and run the chain; return ``(RunSummary, setup seconds)``."""
    t0 = time.perf_counter()
    sc = scenario_from_dict(chain_dict(n, steps, closed))
    out = os.path.join(out_dir, f"chain-{n}.h5") if out_dir else None
    # overwrite: the calibration run has already written this (temporary) file
    summary = driver.run(sc, out, write=out is not None, overwrite=True)
    total = time.perf_counter() - t0
    # Everything outside the driver's time loop: validation, model and pattern set-up, file creation.
    setup = total - summary.wall_time_s
    if summary.status != "completed":
        raise SystemExit(f"chain N = {n}: run {summary.status}: {summary.message}")
    return summary, setup


def _repeat(kernel, args, seconds: float) -> float:
    """Seconds per call of the compiled ``kernel`` (an mbsim Kernel), called from compiled code as the
    compiled loop calls it (a call from Python would add the unboxing of its arguments)."""
    from numba import njit
    fn = kernel.dispatcher

    @njit
    def repeat(reps, args):
        for _ in range(reps):
            fn(*args)

    repeat(1, args)
    reps = 1
    while True:
        t0 = time.perf_counter()
        repeat(reps, args)
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return elapsed / reps
        reps *= 4


def phase_seconds(n: int, seconds: float = 0.2, closed: bool = False) -> dict:
    """Seconds per call of each phase of a Newton iteration at the chain's first step, each compiled
    kernel called on its own: the step's residual and tangent as the loop evaluates them (bodies,
    elements, scatter: mbsim.integrators.step.evaluate), every element at the state with derivatives
    (mbsim.mechanics.evaluate.at_state), then the factorization and the solve of the linear solver."""
    from mbsim.elements.base import DERIVATIVES
    from mbsim.integrators import GeneralizedAlpha
    from mbsim.integrators import step as ks
    from mbsim.kernels import lu as klu
    from mbsim.kernels.rotations import quat_to_matrix
    from mbsim.mechanics import evaluate as kev
    from mbsim.model.model import Model
    sc = scenario_from_dict(chain_dict(n, 10, closed))
    ga = GeneralizedAlpha(Model(sc), sc.integrator)
    s = ga.initial_state()
    args, (R, Q, data, _, _, _) = ga.evaluation(s, DT, tangent="consistent")
    out = {"evaluation": _repeat(ks.evaluate, args, seconds)}
    mech = ga.mechanism
    own = (np.zeros(ga.model.elements.n_unknowns),) * 2
    out["elements"] = _repeat(kev.at_state, (mech.el, (quat_to_matrix(s.q), s.r, np.zeros((0, 3)), s.v, s.w), own, 0.0,
                                             DERIVATIVES, kev.work(ga.model.elements.n), mech._all), seconds)
    lu = ga.solver.lu
    factors, piv = np.zeros(ga.solver.factor_size), np.zeros(ga.model.ndof, np.int64)
    ks.evaluate(*args)
    work = data.copy()
    out["factorization"] = _repeat(klu.factorize, (lu, work, factors if lu[0] else work, piv), seconds)
    x, sw = np.empty(ga.model.ndof), np.empty(max(18 * ga.model.n_moving, ga.model.ndof))
    out["solve"] = _repeat(klu.solve, (lu, factors if lu[0] else work, piv, R, x, sw), seconds)
    return out


def frame_kernel_seconds(n: int, seconds: float = 0.2, closed: bool = False) -> float:
    """Time of the frame kernel for one frame of the N-body chain (mbsim.mechanics.frames.frame_row),
    called from compiled code as the compiled loop calls it."""
    from mbsim.integrators import GeneralizedAlpha
    from mbsim.mechanics import frames as kfr
    from mbsim.model.model import Model
    sc = scenario_from_dict(chain_dict(n, 10, closed))
    model = Model(sc)
    ga = GeneralizedAlpha(model, sc.integrator)
    s = ga.initial_state()
    mech = ga.mechanism
    bufs = kfr.buffers(model.n_bodies, model.n_connectors, 1)
    x, y, dy, arms = mech._work
    n_own = model.elements.n_unknowns
    args = ((model.mass, model.inertia, model.gravity, model.order.astype(np.int64)),
            (s.r, s.q, s.v, s.w, s.a, s.al, np.zeros(2)), (np.zeros(n_own), np.zeros(n_own), 0.0), mech.el, mech.elx,
            (np.empty((model.n_all, 3, 3)), x, y, dy, arms, mech._all, np.empty(9), np.zeros((0, 3))),
            tuple(bufs[k] for k in kfr.BUFFERS), 0)
    return _repeat(kfr.frame_row, args, seconds)


def choose_steps(n: int, seconds: float, out_dir: str | None, closed: bool = False) -> int:
    """Steps for about ``seconds`` of time loop, from a short probe run (at least MIN_STEPS)."""
    steps = PROBE_STEPS
    while True:  # long enough that per-run costs (file creation, first calls) do not dominate
        probe, _ = run_chain(n, steps, out_dir, closed=closed)
        if probe.wall_time_s >= 0.1 * seconds or steps >= 10**6:
            break
        steps *= 8
    per_step = probe.wall_time_s / max(probe.steps, 1)
    return max(MIN_STEPS, int(seconds / per_step) if per_step > 0 else MIN_STEPS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[1, 10, 100, 1000], metavar="N",
                    help="chain lengths (default: 1 10 100 1000)")
    ap.add_argument("--steps", type=int, metavar="S",
                    help="time steps per run (default: enough for about --seconds of wall time, at least 20)")
    ap.add_argument("--seconds", type=float, default=4.0,
                    help="target wall time per N when --steps is not given (default 4)")
    ap.add_argument("--no-write", dest="write", action="store_false",
                    help="do not write the HDF5 trajectory (by default it is written to a temporary "
                         "directory, then deleted)")
    ap.add_argument("--write", dest="write", action="store_true", help=argparse.SUPPRESS)  # the default
    ap.add_argument("--closed", action="store_true",
                    help="close each chain into a loop (the last body linked to the first): not a forest, so the "
                         "compiled loop's dense LU up to 20 bodies, the block sparse LU above")
    ap.add_argument("--profile", action="store_true",
                    help="also print where the time of a Newton iteration goes, per phase")
    args = ap.parse_args(argv)
    if any(n < 1 for n in args.n):
        ap.error("--n: every chain length must be >= 1")
    if args.steps is not None and args.steps < 1:
        ap.error("--steps must be >= 1")

    print(f"mbsim {mbsim.__version__}, numpy {np.__version__}, scipy {scipy.__version__}, "
          f"Python {platform.python_version()} on {platform.machine()} ({os.cpu_count()} CPUs)")
    print(f"{'closed chain (loop)' if args.closed else 'chain'}: dt = {DT:g} s, rho_inf = {RHO_INF}, "
          f"a frame every {FRAME_EVERY} steps, "
          f"{'writing HDF5' if args.write else 'no file written'}")
    header = (f"{'N':>6} {'unknowns':>9}  {'linear solver':<28} {'steps':>6} {'setup s':>8} {'wall s':>8} "
              f"{'steps/s':>9} {'it/step':>8}")
    print(header)
    print("-" * len(header))
    profiles = []
    with tempfile.TemporaryDirectory(prefix="mbsim-bench-") as tmp:
        out_dir = tmp if args.write else None
        run_chain(2, PROBE_STEPS, None)  # load the compiled kernels before timing
        for n in args.n:
            steps = args.steps if args.steps is not None else choose_steps(n, args.seconds, out_dir, args.closed)
            s, setup = run_chain(n, steps, out_dir, closed=args.closed)
            rate = s.steps / s.wall_time_s if s.wall_time_s > 0 else float("inf")
            print(f"{n:>6} {6 * n:>9}  {s.linear_solver:<28} {s.steps:>6} {setup:>8.3f} {s.wall_time_s:>8.3f} "
                  f"{rate:>9.1f} {s.iterations_per_step:>8.2f}", flush=True)
            if args.profile:
                profiles.append((n, s, phase_seconds(n, closed=args.closed), frame_kernel_seconds(n, closed=args.closed)))
    if args.profile:
        print_profile(profiles)
    return 0


PHASES = [("evaluation", "residual and tangent (bodies, elements, scatter)"),
          ("elements", "the elements at a state, with derivatives"), ("factorization", "LU factorization"),
          ("solve", "triangular solves")]
SUMMED = ("evaluation", "factorization", "solve")


def print_profile(profiles) -> None:
    """Per phase: µs per call, each kernel timed on its own; then the compiled loop's µs per Newton
    iteration (it runs the same kernels without the Python glue between them) and its output share."""
    print("\nwhere the time goes: the kernels of one Newton iteration with a fresh tangent, each called and "
          "timed on its own (µs)")
    print(f"{'phase':<44}" + "".join(f"{'N = ' + str(p[0]):>18}" for p in profiles))
    for key, label in PHASES:
        print(f"{key + ': ' + label:<44}" + "".join(f"{1e6 * ph[key]:>10.1f}        " for _, _, ph, _ in profiles))
    print(f"{'sum of the phases':<44}" + "".join(
        f"{1e6 * sum(ph[k] for k in SUMMED):>10.1f}        " for _, _, ph, _ in profiles))
    print(f"{'compiled loop, per Newton iteration':<44}" + "".join(
        f"{1e6 * s.wall_time_s / max(s.newton_iterations, 1):>10.1f}        " for _, s, _, _ in profiles))
    cells = []
    for _, s, _, per_frame in profiles:
        its = max(s.newton_iterations, 1)
        t = s.timing.get("output", 0.0) + s.frames * per_frame  # writing + frame quantities
        cells.append(f"{1e6 * t / its:>10.1f} ({100 * t / s.wall_time_s:>3.0f}%)")
    print(f"{'  of which output (frames and file)':<44}" + "".join(f"{c:>18}" for c in cells))
    print("(the compiled loop reuses factorizations -- modified Newton -- so most of its iterations need no "
          "factorization)")


if __name__ == "__main__":
    sys.exit(main())
