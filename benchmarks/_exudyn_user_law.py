#!/usr/bin/env python3
"""The Exudyn side of ``benchmarks/user_law.py``: the chain of ``_exudyn_chain.py`` with its springs'
force given by a Python user function (``springForceUserFunction`` of ``ObjectConnectorSpringDamper``, the
usual way to write a force law in Exudyn), or built in; one run, one JSON line.

Run ONLY by the Python of an Exudyn virtual environment (Exudyn is not a dependency of mbsim)::

    .venv-exudyn/bin/python benchmarks/_exudyn_user_law.py --n 100 --steps 500 --spring user|builtin

The user function returns k (L − L0) (``deltaL`` = L − L0): the same force as the built-in spring.
Printed: Exudyn's version, the solve time (``SolveDynamic``), steps, Newton iterations, the number of user
function calls, and the final positions of the bodies.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _exudyn_chain as chain  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--spring", choices=("user", "builtin"), required=True)
    args = ap.parse_args(argv)
    import exudyn as exu
    from exudyn.itemInterface import ObjectConnectorSpringDamper

    sc, mbs, nodes = chain.build(args.n)
    calls = [0]
    if args.spring == "user":
        def force(mbs_, t, item, deltaL, deltaL_t, stiffness, damping, f0):
            calls[0] += 1
            return stiffness * deltaL

        for k in range(mbs.systemData.NumberOfObjects()):
            if mbs.GetObject(k)["objectType"] == "ConnectorSpringDamper":
                mbs.SetObjectParameter(k, "springForceUserFunction", force)
        mbs.Assemble()
    s = chain.settings(args.steps, "default")
    t0 = time.perf_counter()
    ok = mbs.SolveDynamic(s, storeSolver=True)
    solve_s = time.perf_counter() - t0
    it = mbs.sys["dynamicSolver"].it
    pos, _ = chain.final_state(mbs, nodes)
    out = {"code": "exudyn", "version": exu.__version__, "ok": bool(ok), "spring": args.spring, "n": args.n,
           "steps": int(it.currentStepIndex) - 1, "solve_s": solve_s, "newton_iterations": int(it.newtonStepsCount),
           "jacobians": int(it.newtonJacobiCount), "user_calls": calls[0], "position": pos.tolist()}
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
