#!/usr/bin/env python3
"""mbsim against Exudyn on the same N-body chain: wall time, steps/s, Newton iterations, agreement.

The chain is the one of ``benchmarks/chain.py`` (its ``chain_dict``): bodies
of mass 1 and inertia diag(0.01, 0.02, 0.03) at x = 1 … N, each linked to the
previous one (``world``, at the origin, for the first) by a spring (k = 1e4,
rest length = initial distance 0.5 m) and a damper (c = 10, on the full
relative velocity) between the points 0.25 m either side of the midpoint of
the two centres, and a P1 torsional damper (χ = 1); gravity [0, 0, −9.81],
Δt = 1e-3, ρ∞ = 0.9, bodies at rest at t = 0, physical initial accelerations.

Exudyn runs the same physics (``benchmarks/_exudyn_chain.py``):
``ObjectConnectorSpringDamper`` (damping 0, reference length 0.5) for the
spring, ``ObjectConnectorCartesianSpringDamper`` (stiffness 0, damping
[c, c, c]) for the damper, ``ObjectConnectorRigidBodySpringDamper`` with only
the rotational damping block χ·I for the torsional damper, gravity by
``LoadMassProportional``, Euler-parameter nodes, generalized-α with spectral
radius 0.9 and computed initial accelerations, EigenSparse, one thread, no
output.  Both codes are second-order but not the same scheme (mbsim:
Chung–Hulbert with forces at n+α_f and Cayley rotation updates; Exudyn: the
Arnold–Brüls form with Euler parameters and their norm constraint), so their
final states differ by O(Δt²), not by round-off.

Exudyn is never a dependency of mbsim and is never imported here: it runs in
its own virtual environment, as a subprocess, with the Python given by
``--exudyn-python``, else ``$MBSIM_EXUDYN_PYTHON``, else ``.venv-exudyn/bin/python``
in the repository.  Create that one with::

    python -m venv .venv-exudyn && .venv-exudyn/bin/pip install 'exudyn==1.13.*' numpy

Runs are interleaved (mbsim, Exudyn, mbsim, Exudyn, … per N) and the table
gives medians over ``--repeats``; the ratio is the median of the per-pair
ratios mbsim/Exudyn (each pair ran back to back, under the same machine load).
Wall time is the solve only: for mbsim the driver's time loop (initial
accelerations, stepping, two frames of diagnostics), for Exudyn
``SolveDynamic`` (solver initialisation, initial accelerations, stepping);
model building (validation and set-up, resp. creating the items and
``Assemble``) is reported separately with ``--json``.

Usage::

    python benchmarks/vs_exudyn.py                          # N = 100, 1000
    python benchmarks/vs_exudyn.py --n 100 1000 10000 --repeats 3
    python benchmarks/vs_exudyn.py --n 100 --exudyn-newton full --json
    python benchmarks/vs_exudyn.py --process                # whole processes, N = 1, 10, 100, 1000

``--process`` times whole processes instead, as a user meets them: ``python
-m mbsim run CHAIN.yaml --quiet`` (validating the scenario, building the
model, loading the compiled kernels from numba's cache, running, writing the
HDF5 file with two frames) against the Exudyn script in its own interpreter
(importing Exudyn, building the model, solving, printing its final state
digest).  Steps per N (unless ``--steps``): 20 000, 5 000, 300 and 100 for
N = 1, 10, 100 and 1000, else 200 000/N.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

# a cold numba cache compiles in the foreground (not the plain-Python first run of mbsim.compiling):
# these figures are of the compiled code
os.environ.setdefault("MBSIM_FIRST_RUN", "compile")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Run from a checkout without installing: the repository root holds the package.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import scipy  # noqa: E402

import mbsim  # noqa: E402
from mbsim import driver  # noqa: E402
from mbsim.scenario import scenario_from_dict  # noqa: E402

from chain import DT, RHO_INF, chain_dict  # noqa: E402  (the one chain model of the benchmarks)

EXUDYN_SCRIPT = HERE / "_exudyn_chain.py"
ENV_VAR = "MBSIM_EXUDYN_PYTHON"
DEFAULT_VENV_PYTHON = ROOT / ".venv-exudyn" / "bin" / "python"
HOW_TO_INSTALL = (
    "Exudyn runs in its own virtual environment (it is not a dependency of mbsim). Create one in the\n"
    "repository with\n\n"
    "    python -m venv .venv-exudyn && .venv-exudyn/bin/pip install 'exudyn==1.13.*' numpy\n\n"
    f"or point --exudyn-python (or the environment variable {ENV_VAR}) at the Python of an existing one."
)


class SetupError(Exception):
    """No usable Exudyn interpreter; the message says what to do."""


# ----------------------------------------------------------------------------------------------
# The two sides
# ----------------------------------------------------------------------------------------------
def default_steps(n: int) -> int:
    """Steps per run: about 2e5 body-steps (≥ ~2 s for either code at N ≥ 100), between 50 and 2000."""
    return int(min(2000, max(50, 200_000 // n)))


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (…, 3, 3) of unit quaternions (…, 4) ``[w, x, y, z]``."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def run_mbsim(n: int, steps: int) -> dict:
    """One mbsim run of the chain, in this process; frames only at t = 0 and at the end."""
    d = chain_dict(n, steps)
    d["output"] = {"interval": d["time"]["end"]}  # two frames: the initial and the final state
    t0 = time.perf_counter()
    sc = scenario_from_dict(d)
    summary = driver.run(sc, None, write=False, keep_frames=True)
    total = time.perf_counter() - t0
    if summary.status != "completed":
        raise RuntimeError(f"mbsim, N = {n}: run {summary.status}: {summary.message}")
    fr = summary.frames_data
    return {
        "code": "mbsim", "version": mbsim.__version__, "n": n, "steps": int(summary.steps),
        "t_end": float(summary.t_end), "build_s": total - summary.wall_time_s, "solve_s": float(summary.wall_time_s),
        "newton_iterations": int(summary.newton_iterations), "linear_solver": summary.linear_solver,
        # per-phase seconds of the time loop, when this mbsim reports them (for --json only)
        "timing": {k: float(v) for k, v in (getattr(summary, "timing", None) or {}).items()},
        "position": np.asarray(fr["bodies/position"][-1], dtype=float),
        "rotation": quat_to_matrix(np.asarray(fr["bodies/orientation"][-1], dtype=float)),
    }


def run_exudyn(python: str, n: int, steps: int, newton: str, timeout: float | None = None) -> dict:
    """One Exudyn run of the chain in a subprocess of the Exudyn interpreter; its JSON line as a dict."""
    cmd = [python, str(EXUDYN_SCRIPT), "--n", str(n), "--steps", str(steps), "--newton", newton]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"Exudyn, N = {n}: {' '.join(cmd)} exited with {r.returncode}:\n{tail}")
    out = json.loads(lines[-1])
    out["position"] = np.asarray(out["position"], dtype=float).reshape(-1, 3)
    out["rotation"] = np.asarray(out["rotation"], dtype=float).reshape(-1, 3, 3)
    return out


def agreement(a: dict, b: dict) -> dict:
    """Max position difference [m] and max rotation angle between the final states [rad]."""
    dp = np.linalg.norm(a["position"] - b["position"], axis=1)
    rel = np.einsum("nji,njk->nik", a["rotation"], b["rotation"])  # Ra^T Rb
    sin = 0.5 * np.linalg.norm(np.stack([rel[:, 2, 1] - rel[:, 1, 2], rel[:, 0, 2] - rel[:, 2, 0],
                                         rel[:, 1, 0] - rel[:, 0, 1]], -1), axis=1)
    cos = 0.5 * (np.trace(rel, axis1=1, axis2=2) - 1.0)
    angle = np.arctan2(sin, cos)
    return {"position_m": float(dp.max()), "rotation_rad": float(angle.max()),
            "worst_body_position": int(dp.argmax()) + 1, "worst_body_rotation": int(angle.argmax()) + 1}


def motion(state: dict, n: int) -> dict:
    """How far the chain moved (to judge the agreement against): max displacement and rotation angle."""
    x0 = np.zeros((n, 3))
    x0[:, 0] = np.arange(1, n + 1)
    rot = state["rotation"]
    cos = 0.5 * (np.trace(rot, axis1=1, axis2=2) - 1.0)
    return {"max_displacement_m": float(np.linalg.norm(state["position"] - x0, axis=1).max()),
            "max_rotation_rad": float(np.arccos(np.clip(cos, -1.0, 1.0)).max())}


# ----------------------------------------------------------------------------------------------
# Exudyn interpreter
# ----------------------------------------------------------------------------------------------
def find_exudyn_python(given: str | None) -> tuple[str, str]:
    """The Exudyn interpreter and where it came from; :class:`SetupError` if there is none."""
    if given:
        cand, src = given, "--exudyn-python"
    elif os.environ.get(ENV_VAR):
        cand, src = os.environ[ENV_VAR], f"${ENV_VAR}"
    elif DEFAULT_VENV_PYTHON.exists():
        cand, src = str(DEFAULT_VENV_PYTHON), "the repository's .venv-exudyn"
    else:
        raise SetupError(f"No Exudyn interpreter: no --exudyn-python, no ${ENV_VAR}, no {DEFAULT_VENV_PYTHON}.\n\n"
                         + HOW_TO_INSTALL)
    if not os.path.exists(cand):
        raise SetupError(f"{cand} (from {src}) does not exist.\n\n" + HOW_TO_INSTALL)
    return cand, src


def exudyn_version(python: str) -> str:
    """Exudyn's version in that interpreter (SetupError if it cannot import exudyn)."""
    try:
        r = subprocess.run([python, "-c", "import exudyn, numpy; print(exudyn.__version__)"],
                           capture_output=True, text=True, timeout=120)
    except OSError as exc:
        raise SetupError(f"cannot run {python}: {exc}\n\n" + HOW_TO_INSTALL) from None
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise SetupError(f"{python} cannot import exudyn and numpy: {last}\n\n" + HOW_TO_INSTALL)
    return r.stdout.strip().splitlines()[-1]


# ----------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------
def _median(xs):
    return float(statistics.median(xs))


def bench_one(n: int, steps: int, repeats: int, python: str, newton: str, log) -> dict:
    """Interleaved runs for one N; medians, ratio and agreement."""
    mb_runs, ex_runs = [], []
    for r in range(repeats):
        mb = run_mbsim(n, steps)
        log(f"  N = {n}, repeat {r + 1}/{repeats}: mbsim  {mb['solve_s']:.3f} s")
        ex = run_exudyn(python, n, steps, newton)
        log(f"  N = {n}, repeat {r + 1}/{repeats}: Exudyn {ex['solve_s']:.3f} s")
        if ex["steps"] != steps or abs(ex["t_end"] - steps * DT) > 1e-9 or not ex["ok"]:
            raise RuntimeError(f"Exudyn, N = {n}: took {ex['steps']} steps to t = {ex['t_end']} "
                               f"(asked: {steps} steps of {DT}), ok = {ex['ok']}")
        if mb["steps"] != steps:
            raise RuntimeError(f"mbsim, N = {n}: took {mb['steps']} steps, asked {steps}")
        mb_runs.append(mb)
        ex_runs.append(ex)
    agree = [agreement(m, e) for m, e in zip(mb_runs, ex_runs)]
    mw = [m["solve_s"] for m in mb_runs]
    ew = [e["solve_s"] for e in ex_runs]
    return {
        "n": n, "steps": steps, "repeats": repeats,
        "mbsim": {"wall_s": _median(mw), "wall_s_all": mw, "build_s": _median([m["build_s"] for m in mb_runs]),
                  "steps_per_s": steps / _median(mw),
                  "iterations_per_step": mb_runs[-1]["newton_iterations"] / steps,
                  "newton_iterations": mb_runs[-1]["newton_iterations"],
                  "linear_solver": mb_runs[-1]["linear_solver"], "timing": mb_runs[-1]["timing"]},
        "exudyn": {"wall_s": _median(ew), "wall_s_all": ew, "build_s": _median([e["build_s"] for e in ex_runs]),
                   "steps_per_s": steps / _median(ew),
                   "iterations_per_step": ex_runs[-1]["newton_iterations"] / steps,
                   "newton_iterations": ex_runs[-1]["newton_iterations"],
                   "jacobians": ex_runs[-1]["jacobians"],
                   "jacobians_per_step": ex_runs[-1]["jacobians"] / steps,
                   "settings": ex_runs[-1]["settings"]},
        "ratio": _median([m / e for m, e in zip(mw, ew)]),
        "ratio_all": [m / e for m, e in zip(mw, ew)],
        "ratio_of_medians": _median(mw) / _median(ew),
        "agreement": max(agree, key=lambda a: (a["position_m"], a["rotation_rad"])),
        "motion": motion(mb_runs[-1], n),
    }


def default_process_steps(n: int) -> int:
    """Steps of a --process run: those of issue 12's targets for N = 1, 10, 100, 1000."""
    return {1: 20_000, 10: 5_000, 100: 300, 1000: 100}.get(n, max(50, 200_000 // n))


def process_seconds(cmd: list, env: dict) -> float:
    """Wall time [s] of one whole process; raises RuntimeError if it fails."""
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited with {r.returncode}:\n{tail}")
    return elapsed


def bench_process(n: int, steps: int, repeats: int, python: str, newton: str, tmp: Path, log) -> dict:
    """Interleaved whole-process runs for one N: `python -m mbsim run` against the Exudyn script."""
    import yaml
    d = chain_dict(n, steps)
    d["output"] = {"interval": d["time"]["end"]}  # two frames, as in the in-process comparison
    scen = tmp / f"chain{n}.yaml"
    scen.write_text(yaml.safe_dump(d, sort_keys=False))
    mb_cmd = [sys.executable, "-m", "mbsim", "run", str(scen), "-o", str(tmp / f"chain{n}.h5"), "--quiet",
              "--overwrite"]
    mb_env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ex_cmd = [python, str(EXUDYN_SCRIPT), "--n", str(n), "--steps", str(steps), "--newton", newton, "--no-state"]
    ex_env = dict(os.environ, OMP_NUM_THREADS="1")
    mw, ew = [], []
    for r in range(repeats):
        mw.append(process_seconds(mb_cmd, mb_env))
        log(f"  N = {n}, repeat {r + 1}/{repeats}: mbsim process  {mw[-1]:.3f} s")
        ew.append(process_seconds(ex_cmd, ex_env))
        log(f"  N = {n}, repeat {r + 1}/{repeats}: Exudyn process {ew[-1]:.3f} s")
    return {"n": n, "steps": steps, "repeats": repeats, "mbsim_s": _median(mw), "exudyn_s": _median(ew),
            "mbsim_s_all": mw, "exudyn_s_all": ew, "ratio": _median([m / e for m, e in zip(mw, ew)])}


PROCESS_HEADER = f"{'N':>6} {'steps':>6} | {'mbsim s':>8} | {'Exudyn s':>8} | {'mbsim/Exudyn':>12}"


def process_row(res: dict) -> str:
    return (f"{res['n']:>6} {res['steps']:>6} | {res['mbsim_s']:>8.3f} | {res['exudyn_s']:>8.3f} | "
            f"{res['ratio']:>12.2f}")


HEADER = (f"{'N':>6} {'steps':>6} | {'mbsim s':>8} {'steps/s':>8} {'it/step':>7} | {'Exudyn s':>8} {'steps/s':>8} "
          f"{'it/step':>7} {'jac/step':>8} | {'mbsim/Exudyn':>12} | {'max |dx| m':>10} {'max dangle rad':>14}")


def row(res: dict) -> str:
    m, e, a = res["mbsim"], res["exudyn"], res["agreement"]
    return (f"{res['n']:>6} {res['steps']:>6} | {m['wall_s']:>8.3f} {m['steps_per_s']:>8.1f} "
            f"{m['iterations_per_step']:>7.2f} | {e['wall_s']:>8.3f} {e['steps_per_s']:>8.1f} "
            f"{e['iterations_per_step']:>7.2f} {e['jacobians_per_step']:>8.3f} | {res['ratio']:>12.2f} | "
            f"{a['position_m']:>10.2e} {a['rotation_rad']:>14.2e}")


def table(args, header: str, row_of, steps_of, bench) -> list | None:
    """``bench(n, steps)`` for every N of ``args.n``, each row printed as it comes (unless --json);
    the results, or None after printing why a run failed."""
    if not args.json:
        print(header)
        print("-" * len(header), flush=True)
    results = []
    for n in args.n:
        steps = args.steps if args.steps is not None else steps_of(n)
        try:
            res = bench(n, steps)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"vs_exudyn: {exc}", file=sys.stderr)
            return None
        results.append(res)
        if not args.json:
            print(row_of(res), flush=True)
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--n", type=int, nargs="+", metavar="N",
                    help="chain lengths (default: 100 1000; with --process 1 10 100 1000)")
    ap.add_argument("--steps", type=int, metavar="S",
                    help="time steps per run, for every N (default: 200000/N, between 50 and 2000: "
                         "2000 for N = 100, 200 for N = 1000, 50 for N = 10000)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved runs per code and N (default 3); medians")
    ap.add_argument("--exudyn-python", metavar="PATH",
                    help=f"Python of the Exudyn virtual environment "
                         f"(default: ${ENV_VAR}, else .venv-exudyn/bin/python)")
    ap.add_argument("--exudyn-newton", choices=("default", "full"), default="default",
                    help="Exudyn's Newton: its defaults (modified Newton: the Jacobian is kept over steps and "
                         "only recomputed when the contraction is poor) or full Newton (a Jacobian every iteration)")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    ap.add_argument("--process", action="store_true",
                    help="time whole processes (mbsim run of a scenario file against the Exudyn script), "
                         "default N = 1 10 100 1000")
    args = ap.parse_args(argv)
    if args.n is None:
        args.n = [1, 10, 100, 1000] if args.process else [100, 1000]
    if any(n < 1 for n in args.n):
        ap.error("--n: every chain length must be >= 1")
    if args.steps is not None and args.steps < 1:
        ap.error("--steps must be >= 1")
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")

    try:
        python, src = find_exudyn_python(args.exudyn_python)
        exu_version = exudyn_version(python)
    except SetupError as exc:
        print(f"vs_exudyn: {exc}", file=sys.stderr)
        return 2

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    info = {
        "mbsim": mbsim.__version__, "exudyn": exu_version, "exudyn_python": python, "exudyn_python_from": src,
        "numpy": np.__version__, "scipy": scipy.__version__, "python": platform.python_version(),
        "machine": platform.machine(), "cpus": os.cpu_count(), "load_average": list(load),
        "dt": DT, "rho_inf": RHO_INF, "exudyn_newton": args.exudyn_newton, "repeats": args.repeats,
    }
    if args.process:
        return main_process(args, python, exu_version, info, log)
    if not args.json:
        print(f"mbsim {info['mbsim']} (numpy {info['numpy']}, scipy {info['scipy']}, Python {info['python']}) vs "
              f"Exudyn {exu_version} ({python}); {info['machine']}, {info['cpus']} CPUs, "
              f"load average {load[0]:.2f}")
        print(f"chain: dt = {DT:g} s, rho_inf = {RHO_INF}; Exudyn: {args.exudyn_newton} Newton, EigenSparse, "
              f"1 thread; wall = solve only, median of {args.repeats} interleaved runs; "
              f"ratio = median of per-pair mbsim/Exudyn")

    # Warm-up (imports, first-call costs of numpy/scipy/SuperLU), not measured.
    run_mbsim(2, 5)
    run_exudyn(python, 2, 5, args.exudyn_newton)

    results = table(args, HEADER, row, default_steps,
                    lambda n, steps: bench_one(n, steps, args.repeats, python, args.exudyn_newton, log))
    if results is None:
        return 1
    if args.json:
        print(json.dumps({"info": info, "results": results}, indent=1))
    else:
        print("wall: solve only (s); it/step: Newton iterations per step; jac/step: Exudyn's Jacobian "
              "computations per step; max |dx|, max dangle: largest position difference and rotation angle "
              "between the two codes' final states (both O(dt^2) schemes, not the same one)")
    return 0


def main_process(args, python: str, exu_version: str, info: dict, log) -> int:
    """--process: whole-process times, interleaved, medians; the table or one JSON document."""
    import tempfile
    if not args.json:
        print(f"mbsim {info['mbsim']} (Python {info['python']}) vs Exudyn {exu_version} ({python}); "
              f"{info['machine']}, {info['cpus']} CPUs")
        print(f"chain: dt = {DT:g} s, rho_inf = {RHO_INF}; whole processes (mbsim run of a scenario file, writing "
              f"two frames; the Exudyn script in its interpreter), median of {args.repeats} interleaved runs; "
              f"ratio = median of per-pair mbsim/Exudyn")
    with tempfile.TemporaryDirectory() as tmp:
        # warm-up, not measured: numba's cache filled, the file system's caches warm for both interpreters
        bench_process(2, 5, 1, python, args.exudyn_newton, Path(tmp), lambda msg: None)
        results = table(args, PROCESS_HEADER, process_row, default_process_steps,
                        lambda n, steps: bench_process(n, steps, args.repeats, python, args.exudyn_newton, Path(tmp),
                                                       log))
    if results is None:
        return 1
    if args.json:
        print(json.dumps({"info": info, "process": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
