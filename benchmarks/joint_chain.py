#!/usr/bin/env python3
"""mbsim against Exudyn on a 3D pendulum chain of revolute joints: steps/s, Newton iterations, agreement.

The chain (issue 13, item 7): N links, bodies of mass 1 and inertia
diag(0.01, 0.02, 0.03) at x = 1 … N, at rest, each joined to the previous
one (``world`` for the first) by a revolute joint at x = i − ½ whose axis
alternates between the horizontal y (odd i) and x (even i) axes; gravity
[0, 0, −9.81], Δt = 1e-3, ρ∞ = 0.9.  Released horizontal, it falls and
folds in 3D (the x hinges start to turn as soon as the chain has bent).

mbsim runs in this process (compiled; the kernels are loaded and a short
warm-up run is made before timing), Exudyn 1.13 in its own virtual
environment as a subprocess (``benchmarks/_exudyn_joints.py``: Euler-parameter
rigid bodies, ``ObjectJointRevoluteZ`` — or ``ObjectJointGeneric`` with
``--exudyn-joint generic`` —, generalized-α with the same ρ∞ and computed
initial accelerations, EigenSparse, one thread, no output), on the same
model: the Exudyn script reads the bodies and joints of the mbsim scenario
from a JSON file.  Exudyn is never imported here; its interpreter is
``--exudyn-python``, else ``$MBSIM_EXUDYN_PYTHON``, else ``.venv-exudyn/bin/python``
in the repository (see ``benchmarks/vs_exudyn.py`` for how to create it).

Timing: wall time of the solve only (mbsim: the driver's time loop —
initial accelerations, stepping, two frames; Exudyn: ``SolveDynamic``),
runs interleaved (mbsim, Exudyn, mbsim, …) and the **best** of ``--repeats``
of each code (the machine is shared: the best run is the one least disturbed);
``speed-up`` = mbsim steps/s ÷ Exudyn steps/s.

Accuracy: both codes are second-order but not the same scheme (mbsim:
Chung–Hulbert with the multipliers at n+α_f and Cayley rotation updates;
Exudyn: the Arnold–Brüls form, index-3 constraints, Euler parameters), so
their final states differ by O(Δt²).  Unless ``--no-accuracy``, each code
also runs once at Δt/2: the table then gives the difference between the two
codes' final states at Δt and at Δt/2 (it should fall about 4×), and each
code's own error estimate at Δt, ``4/3·|x(Δt) − x(Δt/2)|`` (Richardson): the
two codes agree to their discretization error when the difference is of the
size of those estimates.  Differences are the largest over the bodies of the
position difference [m] and of the relative rotation angle [rad].

Closed loop (``--ring``, default N = 100): a ring of N links — a regular
N-gon of unit edges in the horizontal plane, the links its edges, hinges at
its vertices with axes alternating between the polygon's horizontal tangent
and the vertical, hung from the world by the first hinge, the last link
joined back to the first (5 more equations, a closed loop: not a forest, so
the block LU has fill) — against the same polygon left open (N hinges).
The issue's target: the ring within 2× of the open chain's steps/s.

Usage::

    python benchmarks/joint_chain.py                               # N = 10, 100, 1000; the ring of 100
    python benchmarks/joint_chain.py --n 10 100 1000 10000 --repeats 3
    python benchmarks/joint_chain.py --n 100 --no-ring --exudyn-joint generic --json
    python benchmarks/joint_chain.py --mbsim-only --n 10 100 1000 10000
    python benchmarks/joint_chain.py --ring 100 --n                 # only the closed-loop figure

Steps per N (unless ``--steps``): 200 000/N, between 50 and 2000 (2000 for
N ≤ 100, 200 for N = 1000, 50 for N = 10 000).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# a cold numba cache compiles in the foreground (not the plain-Python first run of mbsim.compiling):
# these figures are of the compiled code
os.environ.setdefault("MBSIM_FIRST_RUN", "compile")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import mbsim  # noqa: E402
from mbsim import driver  # noqa: E402
from mbsim.scenario import scenario_from_dict  # noqa: E402

from vs_exudyn import SetupError, agreement, exudyn_version, find_exudyn_python, quat_to_matrix  # noqa: E402

DT = 1e-3
RHO_INF = 0.9
MASS = 1.0
INERTIA = [0.01, 0.02, 0.03]
GRAVITY = [0.0, 0.0, -9.81]
EXUDYN_SCRIPT = HERE / "_exudyn_joints.py"


# ----------------------------------------------------------------------------------------------
# The models
# ----------------------------------------------------------------------------------------------
def _scenario(name: str, centres, joints, steps: int, dt: float) -> dict:
    bodies = [{"name": f"b{i}", "mass": MASS, "inertia": list(INERTIA), "position": [float(x) for x in c]}
              for i, c in enumerate(centres, start=1)]
    return {
        "mbsim": 1, "name": name, "gravity": list(GRAVITY),
        "time": {"end": steps * dt, "step": dt},
        "integrator": {"rho_inf": RHO_INF},
        "output": {"interval": steps * dt},  # two frames: the initial and the final state
        "bodies": bodies, "joints": joints,
    }


def chain_dict(n: int, steps: int, dt: float = DT) -> dict:
    """The N-link revolute chain as a scenario mapping (SCENARIO.md keys), ``steps`` steps of ``dt``."""
    joints = [{"name": f"j{i}", "type": "revolute", "bodies": ["world" if i == 1 else f"b{i - 1}", f"b{i}"],
               "point": [i - 0.5, 0.0, 0.0], "axis": [0.0, 1.0, 0.0] if i % 2 else [1.0, 0.0, 0.0]}
              for i in range(1, n + 1)]
    return _scenario(f"revolute-chain-{n}", [(float(i), 0.0, 0.0) for i in range(1, n + 1)], joints, steps, dt)


def ring_dict(n: int, steps: int, closed: bool = True, dt: float = DT) -> dict:
    """N links on the edges of a regular N-gon (unit edges, horizontal, vertex 0 at the origin), hinged at
    its vertices -- axes alternating between the horizontal tangent and the vertical --, hung from the world
    at vertex 0; ``closed``: link N joined back to link 1 at vertex 0 (a closed loop)."""
    if n < 6:
        raise ValueError("a ring of revolute joints needs at least 6 links to move")
    rho = 0.5 / np.sin(np.pi / n)
    phi = -0.5 * np.pi + 2.0 * np.pi * np.arange(n + 1) / n
    radial = np.stack((np.cos(phi), np.sin(phi), np.zeros(n + 1)), axis=1)
    vertex = np.array([0.0, rho, 0.0]) + rho * radial
    vertex[0] = vertex[n] = 0.0
    tangent = np.stack((-radial[:, 1], radial[:, 0], np.zeros(n + 1)), axis=1)  # z × radial

    def hinge(k, a, b):  # the hinge at vertex k (k = 0 and k = n are the same vertex)
        axis = tangent[k] if k % 2 == 0 else np.array([0.0, 0.0, 1.0])
        return {"name": f"j{k}" if k < n else "closing", "type": "revolute", "bodies": [a, b],
                "point": vertex[k].tolist(), "axis": axis.tolist()}

    joints = [hinge(0, "world", "b1")] + [hinge(k, f"b{k}", f"b{k + 1}") for k in range(1, n)]
    if closed:
        joints.append(hinge(n, f"b{n}", "b1"))
    centres = 0.5 * (vertex[:-1] + vertex[1:])
    return _scenario(f"revolute-{'ring' if closed else 'open-polygon'}-{n}", centres, joints, steps, dt)


def exudyn_model(d: dict) -> dict:
    """The scenario mapping ``d`` as the JSON model of ``_exudyn_joints.py`` (body indices, −1 the ground)."""
    index = {b["name"]: k for k, b in enumerate(d["bodies"])}
    index["world"] = -1
    dt = d["time"]["step"]
    return {
        "gravity": d["gravity"], "dt": dt, "steps": int(round(d["time"]["end"] / dt)),
        "rho_inf": d["integrator"]["rho_inf"],
        "bodies": [{"position": b["position"], "mass": b["mass"], "inertia": b["inertia"]} for b in d["bodies"]],
        "joints": [{"a": index[j["bodies"][0]], "b": index[j["bodies"][1]], "point": j["point"], "axis": j["axis"]}
                   for j in d["joints"]],
    }


# ----------------------------------------------------------------------------------------------
# The two codes
# ----------------------------------------------------------------------------------------------
def run_mbsim(d: dict) -> dict:
    """One mbsim run of scenario mapping ``d`` in this process; the final state and the figures."""
    steps = int(round(d["time"]["end"] / d["time"]["step"]))
    t0 = time.perf_counter()
    sc = scenario_from_dict(d)
    summary = driver.run(sc, None, write=False, keep_frames=True)
    total = time.perf_counter() - t0
    if summary.status != "completed":
        raise RuntimeError(f"mbsim, {d['name']}: run {summary.status}: {summary.message}")
    if summary.steps != steps:
        raise RuntimeError(f"mbsim, {d['name']}: took {summary.steps} steps, asked {steps}")
    fr = summary.frames_data
    return {"code": "mbsim", "steps": steps, "build_s": total - summary.wall_time_s,
            "solve_s": float(summary.wall_time_s), "newton_iterations": int(summary.newton_iterations),
            "linear_solver": summary.linear_solver,
            "position": np.asarray(fr["bodies/position"][-1], dtype=float),
            "rotation": quat_to_matrix(np.asarray(fr["bodies/orientation"][-1], dtype=float))}


def run_exudyn(python: str, d: dict, newton: str, joint: str, tmp: Path) -> dict:
    """One Exudyn run of scenario mapping ``d`` in a subprocess of the Exudyn interpreter."""
    path = tmp / f"{d['name']}-{d['time']['step']:g}.json"
    if not path.exists():
        path.write_text(json.dumps(exudyn_model(d)))
    cmd = [python, str(EXUDYN_SCRIPT), str(path), "--newton", newton, "--joint", joint]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"Exudyn, {d['name']}: {' '.join(cmd)} exited with {r.returncode}:\n{tail}")
    out = json.loads(lines[-1])
    steps = int(round(d["time"]["end"] / d["time"]["step"]))
    if not out["ok"] or out["steps"] != steps or abs(out["t_end"] - d["time"]["end"]) > 1e-9:
        raise RuntimeError(f"Exudyn, {d['name']}: took {out['steps']} steps to t = {out['t_end']} "
                           f"(asked: {steps} to {d['time']['end']}), ok = {out['ok']}")
    out["position"] = np.asarray(out["position"], dtype=float).reshape(-1, 3)
    out["rotation"] = np.asarray(out["rotation"], dtype=float).reshape(-1, 3, 3)
    return out


def default_steps(n: int) -> int:
    """About 2e5 body-steps per run, between 50 and 2000."""
    return int(min(2000, max(50, 200_000 // n)))


def _difference(a: dict, b: dict) -> tuple[float, float]:
    g = agreement(a, b)
    return g["position_m"], g["rotation_rad"]


def bench_chain(n: int, steps: int, args, python: str | None, tmp: Path, log) -> dict:
    """Interleaved runs of both codes for one N (best of the repeats), then the accuracy runs at Δt/2."""
    d = chain_dict(n, steps)
    mb, ex = [], []
    for r in range(args.repeats):
        mb.append(run_mbsim(d))
        log(f"  N = {n}, repeat {r + 1}/{args.repeats}: mbsim  {mb[-1]['solve_s']:.3f} s")
        if python:
            ex.append(run_exudyn(python, d, args.exudyn_newton, args.exudyn_joint, tmp))
            log(f"  N = {n}, repeat {r + 1}/{args.repeats}: Exudyn {ex[-1]['solve_s']:.3f} s")
    m = min(mb, key=lambda x: x["solve_s"])
    res = {"n": n, "steps": steps, "repeats": args.repeats,
           "mbsim": {"solve_s": m["solve_s"], "solve_s_all": [x["solve_s"] for x in mb],
                     "steps_per_s": steps / m["solve_s"], "iterations_per_step": m["newton_iterations"] / steps,
                     "linear_solver": m["linear_solver"], "build_s": m["build_s"]}}
    if python:
        e = min(ex, key=lambda x: x["solve_s"])
        res["exudyn"] = {"solve_s": e["solve_s"], "solve_s_all": [x["solve_s"] for x in ex],
                         "steps_per_s": steps / e["solve_s"], "iterations_per_step": e["newton_iterations"] / steps,
                         "jacobians_per_step": e["jacobians"] / steps, "build_s": e["build_s"],
                         "settings": e["settings"]}
        res["speedup"] = res["mbsim"]["steps_per_s"] / res["exudyn"]["steps_per_s"]
        res["difference"] = _difference(m, e)
        if args.accuracy:
            d2 = chain_dict(n, 2 * steps, DT / 2)
            m2 = run_mbsim(d2)
            e2 = run_exudyn(python, d2, args.exudyn_newton, args.exudyn_joint, tmp)
            log(f"  N = {n}, dt/2: mbsim {m2['solve_s']:.3f} s, Exudyn {e2['solve_s']:.3f} s")
            res["difference_half_dt"] = _difference(m2, e2)
            res["mbsim"]["error_estimate"] = tuple(4 / 3 * x for x in _difference(m, m2))
            res["exudyn"]["error_estimate"] = tuple(4 / 3 * x for x in _difference(e, e2))
    return res


def bench_ring(n: int, steps: int, repeats: int, log) -> dict:
    """The ring of N links against the same polygon left open, mbsim only, interleaved, best of the repeats."""
    out = {"n": n, "steps": steps, "repeats": repeats}
    runs = {"open": [], "ring": []}
    for r in range(repeats):
        for key in runs:
            runs[key].append(run_mbsim(ring_dict(n, steps, closed=key == "ring")))
            log(f"  {key} {n}, repeat {r + 1}/{repeats}: {runs[key][-1]['solve_s']:.3f} s")
    for key, rs in runs.items():
        b = min(rs, key=lambda x: x["solve_s"])
        out[key] = {"solve_s": b["solve_s"], "steps_per_s": steps / b["solve_s"],
                    "iterations_per_step": b["newton_iterations"] / steps, "linear_solver": b["linear_solver"],
                    "seconds_per_iteration": b["solve_s"] / max(b["newton_iterations"], 1)}
    out["ratio"] = out["open"]["steps_per_s"] / out["ring"]["steps_per_s"]
    out["ratio_per_iteration"] = out["ring"]["seconds_per_iteration"] / out["open"]["seconds_per_iteration"]
    return out


# ----------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------
def _fmt_pair(p) -> str:
    return f"{p[0]:.1e} {p[1]:.1e}" if p is not None else "-"


def chain_header(accuracy: bool) -> str:
    head = (f"{'N':>6} {'steps':>5} | {'mbsim st/s':>10} {'it/st':>5} | {'Exudyn st/s':>11} {'it/st':>5} "
            f"{'jac/st':>6} | {'speed-up':>8} | {'diff dx, dangle':>15}")
    if accuracy:
        head += f" | {'diff at dt/2':>15} | {'mbsim err est':>15} | {'Exudyn err est':>15}"
    return head


def chain_row(r: dict, accuracy: bool) -> str:
    m, e = r["mbsim"], r.get("exudyn")
    line = f"{r['n']:>6} {r['steps']:>5} | {m['steps_per_s']:>10.1f} {m['iterations_per_step']:>5.2f} | "
    if e is None:
        return line + f"{'-':>11} {'-':>5} {'-':>6} | {'-':>8} | {'-':>15}"
    line += (f"{e['steps_per_s']:>11.1f} {e['iterations_per_step']:>5.2f} {e['jacobians_per_step']:>6.2f} | "
             f"{r['speedup']:>8.2f} | {_fmt_pair(r['difference']):>15}")
    if accuracy:
        line += (f" | {_fmt_pair(r.get('difference_half_dt')):>15} | "
                 f"{_fmt_pair(m.get('error_estimate')):>15} | {_fmt_pair(e.get('error_estimate')):>15}")
    return line


def print_ring(r: dict) -> None:
    print(f"\nclosed loop: a ring of {r['n']} links closed by a revolute joint against the same polygon left open "
          f"(mbsim, {r['steps']} steps, best of {r['repeats']})")
    for key, label in (("open", "open polygon"), ("ring", "closed ring")):
        x = r[key]
        print(f"  {label:<13} {x['steps_per_s']:>9.1f} steps/s  {x['iterations_per_step']:.2f} it/step  "
              f"{1e6 * x['seconds_per_iteration']:.0f} µs/iteration  ({x['linear_solver']})")
    print(f"  open/ring steps/s: {r['ratio']:.2f} (target: within 2); per Newton iteration: "
          f"{r['ratio_per_iteration']:.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--n", type=int, nargs="*", default=[10, 100, 1000], metavar="N",
                    help="chain lengths (default: 10 100 1000; the issue's 10000 too by asking)")
    ap.add_argument("--steps", type=int, metavar="S", help="steps per run for every N (default: 200000/N in [50, 2000])")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved runs per code and N (default 3); best of them")
    ap.add_argument("--ring", type=int, default=100, metavar="N", help="links of the closed-loop figure (default 100)")
    ap.add_argument("--no-ring", dest="ring", action="store_const", const=0, help="no closed-loop figure")
    ap.add_argument("--ring-steps", type=int, default=1000, metavar="S", help="steps of the closed-loop runs (1000)")
    ap.add_argument("--no-accuracy", dest="accuracy", action="store_false",
                    help="do not run both codes again at dt/2 to estimate their discretization errors")
    ap.add_argument("--mbsim-only", action="store_true", help="do not run Exudyn")
    ap.add_argument("--exudyn-python", metavar="PATH",
                    help="Python of the Exudyn virtual environment (default: $MBSIM_EXUDYN_PYTHON, else "
                         ".venv-exudyn/bin/python)")
    ap.add_argument("--exudyn-newton", choices=("default", "full"), default="default",
                    help="Exudyn's Newton: its defaults (modified Newton) or full Newton")
    ap.add_argument("--exudyn-joint", choices=("revolute", "generic"), default="revolute",
                    help="ObjectJointRevoluteZ (default) or ObjectJointGeneric")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the tables")
    args = ap.parse_args(argv)
    if any(n < 1 for n in args.n) or (args.ring and args.ring < 6):
        ap.error("--n: every chain length must be >= 1; --ring: at least 6 links")
    if args.repeats < 1 or (args.steps is not None and args.steps < 1):
        ap.error("--repeats and --steps must be >= 1")

    python, exu_version = None, None
    if not args.mbsim_only and args.n:
        try:
            python, _ = find_exudyn_python(args.exudyn_python)
            exu_version = exudyn_version(python)
        except SetupError as exc:
            print(f"joint_chain: {exc}\n(or run with --mbsim-only)", file=sys.stderr)
            return 2

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    info = {"mbsim": mbsim.__version__, "exudyn": exu_version, "exudyn_python": python, "numpy": np.__version__,
            "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "load_average": list(load), "dt": DT, "rho_inf": RHO_INF, "repeats": args.repeats,
            "exudyn_newton": args.exudyn_newton, "exudyn_joint": args.exudyn_joint}
    if not args.json:
        print(f"mbsim {info['mbsim']} (numpy {info['numpy']}, Python {info['python']})"
              + (f" vs Exudyn {exu_version} ({python})" if python else "")
              + f"; {info['machine']}, {info['cpus']} CPUs, load average {load[0]:.2f}")
        print(f"revolute chain: dt = {DT:g} s, rho_inf = {RHO_INF}; "
              + (f"Exudyn: {args.exudyn_newton} Newton, {args.exudyn_joint} joints, EigenSparse, 1 thread; "
                 if python else "")
              + f"wall = solve only, best of {args.repeats} interleaved runs")

    results, ring = [], None
    with tempfile.TemporaryDirectory(prefix="mbsim-joints-") as tmpname:
        tmp = Path(tmpname)
        try:
            run_mbsim(chain_dict(3, 20))  # warm-up, not timed: the compiled kernels loaded
            if python and args.n:
                run_exudyn(python, chain_dict(3, 20), args.exudyn_newton, args.exudyn_joint, tmp)
            if args.n and not args.json:
                print()
            accuracy = args.accuracy and python is not None
            for n in args.n:
                results.append(bench_chain(n, args.steps or default_steps(n), args, python, tmp, log))
                if not args.json:
                    if len(results) == 1:
                        print(head := chain_header(accuracy))
                        print("-" * len(head))
                    print(chain_row(results[-1], accuracy), flush=True)
            if args.ring:
                ring = bench_ring(args.ring, args.ring_steps, args.repeats, log)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"joint_chain: {exc}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps({"info": info, "chain": results, "ring": ring}, indent=1))
        return 0
    if results:
        print("st/s: steps per second (solve only); it/st: Newton iterations per step; jac/st: Exudyn's Jacobians "
              "per step; speed-up: mbsim steps/s / Exudyn steps/s;\ndiff: largest position difference [m] and "
              "relative rotation [rad] between the two codes' final states; err est: 4/3 |x(dt) - x(dt/2)| of "
              "each code")
    if ring:
        print_ring(ring)
    return 0


if __name__ == "__main__":
    sys.exit(main())
