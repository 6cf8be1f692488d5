#!/usr/bin/env python3
"""A user force law compiled into the step loop against the built-in spring, and against Exudyn's usual way.

The model is the N-body chain of ``benchmarks/chain.py`` (N = 100 by default: springs k = 1e4, dampers
c = 10, P1 torsional dampers χ = 1, gravity, Δt = 1e-3, ρ∞ = 0.9).  mbsim runs it twice, alternately:

- **built-in**: the springs as ``stiffness: 1e4`` (rest length: the initial distance, 0.5 m);
- **user law**: the same springs as ``law: "_user_law_spring:spring"`` with ``parameters: {k: 1e4, rest:
  0.5}``, the plain Python function of ``benchmarks/_user_law_spring.py`` returning k (L − L0) and its
  derivatives (THEORY §13, docs/user-laws.md), compiled by numba and called from the compiled loop.

Both give the same trajectory to round-off (printed: the largest difference of the final positions), and
the ratio of their solve times is the cost of the law's indirect call (the goal: within 1.3).

Exudyn (its own virtual environment, a subprocess: ``--exudyn-python`` or ``$MBSIM_EXUDYN_PYTHON``, as in
``benchmarks/vs_exudyn.py``; skipped with a note when there is none) runs the same chain with its built-in
``ObjectConnectorSpringDamper`` and with the same spring given as a Python ``springForceUserFunction``
(``benchmarks/_exudyn_user_law.py``), its usual way of writing a force law.

Usage::

    python benchmarks/user_law.py                        # N = 100, 500 steps, 3 repeats
    python benchmarks/user_law.py --n 100 --steps 2000 --repeats 5 --exudyn-python /path/to/venv/bin/python

Wall times are the solve only (mbsim: the driver's time loop; Exudyn: ``SolveDynamic``), medians over the
repeats; the ratios are medians of the per-pair ratios (each pair ran back to back).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("MBSIM_FIRST_RUN", "compile")  # the figures are of the compiled code

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))  # the law's module, _user_law_spring, is found on sys.path

import numpy as np  # noqa: E402

from mbsim import driver  # noqa: E402
from mbsim.scenario import scenario_from_dict  # noqa: E402

from chain import chain_dict  # noqa: E402

EXUDYN_SCRIPT = HERE / "_exudyn_user_law.py"
LAW = "_user_law_spring:spring"


def scenario(n: int, steps: int, law: bool):
    d = chain_dict(n, steps)
    d["output"] = {"interval": d["time"]["end"]}  # two frames
    if law:
        for c in d["connectors"]:
            if c["type"] == "spring":
                c.pop("stiffness")
                c["law"] = LAW
                c["parameters"] = {"k": 1e4, "rest": 0.5}
    return scenario_from_dict(d)


def run_mbsim(n: int, steps: int, law: bool) -> dict:
    t0 = time.perf_counter()
    sc = scenario(n, steps, law)
    build = time.perf_counter() - t0
    s = driver.run(sc, None, write=False, keep_frames=True)
    if s.status != "completed":
        raise RuntimeError(f"mbsim ({'law' if law else 'built-in'}): {s.status}: {s.message}")
    return {"solve_s": float(s.wall_time_s), "read_s": build, "newton": int(s.newton_iterations),
            "position": np.asarray(s.frames_data["bodies/position"][-1], dtype=float)}


def exudyn_python(given: str | None) -> str | None:
    for p in (given, os.environ.get("MBSIM_EXUDYN_PYTHON"), str(ROOT / ".venv-exudyn" / "bin" / "python")):
        if p and Path(p).exists():
            return p
    return None


def run_exudyn(python: str, n: int, steps: int, spring: str) -> dict:
    cmd = [python, str(EXUDYN_SCRIPT), "--n", str(n), "--steps", str(steps), "--spring", spring]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(cmd)} exited with {r.returncode}:\n{r.stderr[-2000:]}")
    out = json.loads(lines[-1])
    out["position"] = np.asarray(out["position"], dtype=float).reshape(-1, 3)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--exudyn-python", default=None)
    args = ap.parse_args(argv)
    n, steps = args.n, args.steps

    run_mbsim(n, 5, False)  # compile (or load) the engine first
    first = run_mbsim(n, 5, True)["read_s"]  # reading the scenario: importing and compiling the law, once
    built, laws = [], []
    for k in range(args.repeats):  # alternately, the order flipping
        for law in ((False, True) if k % 2 == 0 else (True, False)):
            (laws if law else built).append(run_mbsim(n, steps, law))
    ratio = statistics.median(a["solve_s"] / b["solve_s"] for a, b in zip(laws, built))
    diff = float(np.abs(laws[-1]["position"] - built[-1]["position"]).max())
    print(f"chain of {n} bodies, {steps} steps of 1 ms, {args.repeats} repeats (medians)")
    print(f"  mbsim built-in spring  {statistics.median(r['solve_s'] for r in built):8.3f} s   "
          f"({built[0]['newton']} Newton iterations)")
    print(f"  mbsim user law         {statistics.median(r['solve_s'] for r in laws):8.3f} s   "
          f"({laws[0]['newton']} Newton iterations; reading the scenario: {first:.2f} s the first time, "
          f"importing and compiling the law, then {laws[-1]['read_s']:.2f} s)")
    print(f"  user law / built-in    {ratio:8.3f}      (goal: at most 1.3)")
    print(f"  final positions differ by {diff:.2e} m")

    python = exudyn_python(args.exudyn_python)
    if python is None:
        print("Exudyn: no interpreter (--exudyn-python, $MBSIM_EXUDYN_PYTHON or .venv-exudyn): not run")
        return 0
    eb, eu = [], []
    for k in range(args.repeats):
        for spring in (("builtin", "user") if k % 2 == 0 else ("user", "builtin")):
            (eu if spring == "user" else eb).append(run_exudyn(python, n, steps, spring))
    eratio = statistics.median(a["solve_s"] / b["solve_s"] for a, b in zip(eu, eb))
    print(f"  Exudyn {eb[0]['version']} built-in     {statistics.median(r['solve_s'] for r in eb):8.3f} s   "
          f"({eb[0]['newton_iterations']} Newton iterations, {eb[0]['jacobians']} Jacobians)")
    print(f"  Exudyn Python user function {statistics.median(r['solve_s'] for r in eu):8.3f} s   "
          f"({eu[0]['newton_iterations']} Newton iterations, {eu[0]['user_calls']} calls of the function)")
    print(f"  Exudyn user / built-in {eratio:8.3f}")
    print(f"  Exudyn user function / mbsim user law  "
          f"{statistics.median(r['solve_s'] for r in eu) / statistics.median(r['solve_s'] for r in laws):8.2f}")
    d = float(np.abs(eu[-1]["position"] - laws[-1]["position"]).max())
    print(f"  final positions, Exudyn's user function against mbsim's user law: {d:.2e} m apart "
          f"(two second-order schemes: O(Δt²), not round-off)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
