#!/usr/bin/env python3
"""The Exudyn side of ``benchmarks/vs_exudyn.py``: the N-body chain in Exudyn, one run, one JSON line.

Run ONLY by the Python of an Exudyn virtual environment (never imported by
mbsim; Exudyn is not a dependency of mbsim)::

    .venv-exudyn/bin/python benchmarks/_exudyn_chain.py --n 100 --steps 2000 [--newton default|full]

The model is the chain of ``benchmarks/chain.py`` (and ``vs_exudyn.py``):
bodies of mass 1 and inertia diag(0.01, 0.02, 0.03) at x = 1 … N, each linked
to the previous one (the ground, at the origin, for the first) by

- a spring k = 1e4 between the points 0.25 m either side of the midpoint of
  the two centres, rest length = the initial distance (0.5 m):
  ``ObjectConnectorSpringDamper`` (damping 0) — force k (L − L0) along the line;
- a damper c = 10 on the full relative velocity of the same two points:
  ``ObjectConnectorCartesianSpringDamper`` (stiffness 0, damping [c, c, c]) —
  force D (v1 − v0) in global coordinates, D = c I;
- a P1 torsional damper χ = 1: ``ObjectConnectorRigidBodySpringDamper`` with
  only the rotational damping block χ I — torque A0 D A0ᵀ (ω1 − ω0) = χ (ω1 − ω0)
  (A0 the joint frame of marker 0; with D = χ I the frame drops out);

gravity [0, 0, −9.81] as ``LoadMassProportional`` (``CreateRigidBody(gravity=…)``),
generalized-α with spectral radius 0.9, initial accelerations computed
(Exudyn's default), fixed step Δt = 1e-3, EigenSparse, one thread, no file
or sensor output.

Printed (one JSON line on stdout, last line): Exudyn's version, the settings
used, ``build_s`` (creating the items and ``mbs.Assemble()``), ``solve_s``
(``SolveDynamic`` only: solver initialisation, initial accelerations, time
loop), steps, Newton iterations and Jacobian computations from the solver's
statistics (``mbs.sys['dynamicSolver'].it``), and the final positions and
rotation matrices of all bodies (with ``--no-state`` only their digest).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

DT = 1e-3
RHO_INF = 0.9
K_SPRING = 1e4
C_DAMPER = 10.0
CHI_TORSION = 1.0
MASS = 1.0
INERTIA = (0.01, 0.02, 0.03)
GRAVITY = (0.0, 0.0, -9.81)


def build(n: int):
    """Create the chain in a new system; return ``(SystemContainer, mbs, node numbers)``."""
    import exudyn as exu
    from exudyn.itemInterface import (LoadMassProportional, MarkerBodyMass, MarkerBodyPosition, MarkerBodyRigid,
                                      NodeRigidBodyEP, ObjectConnectorCartesianSpringDamper,
                                      ObjectConnectorRigidBodySpringDamper, ObjectConnectorSpringDamper,
                                      ObjectGround, ObjectRigidBody, VNodeRigidBodyEP,
                                      VObjectConnectorCartesianSpringDamper, VObjectConnectorRigidBodySpringDamper,
                                      VObjectConnectorSpringDamper, VObjectRigidBody)
    from exudyn.rigidBodyUtilities import RigidBodyInertia

    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    ground = mbs.AddObject(ObjectGround(referencePosition=[0.0, 0.0, 0.0]))
    inertia = RigidBodyInertia(mass=MASS, inertiaTensor=np.diag(INERTIA), com=np.zeros(3), inertiaTensorAtCOM=True)
    rot_damping = np.zeros((6, 6))
    rot_damping[3:, 3:] = CHI_TORSION * np.eye(3)
    nodes = []
    prev, prev_x = ground, 0.0  # previous body and its centre's x (the ground: the origin)
    for i in range(1, n + 1):
        # Euler parameters: the default node type of Exudyn's CreateRigidBody; the items are
        # created directly (what CreateRigidBody does, without its graphics).
        node = mbs.AddNode(NodeRigidBodyEP(referenceCoordinates=[float(i), 0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
                                           initialVelocities=[0.0] * 7, visualization=VNodeRigidBodyEP(show=False)))
        body = mbs.AddObject(ObjectRigidBody(mass=inertia.mass, inertia=inertia.GetInertia6D(),
                                             centerOfMass=inertia.com, nodeNumber=node,
                                             visualization=VObjectRigidBody(show=False)))
        mass_marker = mbs.AddMarker(MarkerBodyMass(bodyNumber=body))
        mbs.AddLoad(LoadMassProportional(markerNumber=mass_marker, loadVector=list(GRAVITY)))
        nodes.append(int(node))
        mid = i - 0.5  # midpoint of the centres at x = i - 1 and x = i
        xa, xb = mid - 0.25, mid + 0.25  # insertion points (world), fixed in A and in B
        ma = mbs.AddMarker(MarkerBodyPosition(bodyNumber=prev, localPosition=[xa - prev_x, 0.0, 0.0]))
        mb = mbs.AddMarker(MarkerBodyPosition(bodyNumber=body, localPosition=[xb - i, 0.0, 0.0]))
        mbs.AddObject(ObjectConnectorSpringDamper(markerNumbers=[ma, mb], referenceLength=xb - xa,
                                                  stiffness=K_SPRING, damping=0.0,
                                                  visualization=VObjectConnectorSpringDamper(show=False)))
        mbs.AddObject(ObjectConnectorCartesianSpringDamper(
            markerNumbers=[ma, mb], stiffness=[0.0, 0.0, 0.0], damping=[C_DAMPER] * 3,
            visualization=VObjectConnectorCartesianSpringDamper(show=False)))
        ra = mbs.AddMarker(MarkerBodyRigid(bodyNumber=prev, localPosition=[0.0, 0.0, 0.0]))
        rb = mbs.AddMarker(MarkerBodyRigid(bodyNumber=body, localPosition=[0.0, 0.0, 0.0]))
        mbs.AddObject(ObjectConnectorRigidBodySpringDamper(
            markerNumbers=[ra, rb], stiffness=np.zeros((6, 6)), damping=rot_damping,
            visualization=VObjectConnectorRigidBodySpringDamper(show=False)))
        prev, prev_x = body, float(i)
    mbs.Assemble()
    return sc, mbs, nodes


def _set(obj, names, value, required: bool = True) -> None:
    """Set the first of ``names`` (dotted paths) that this Exudyn has: 1.13 names first, then older ones."""
    for name in names:
        *path, last = name.split(".")
        o = obj
        try:
            for p in path:
                o = getattr(o, p)
            getattr(o, last)
        except AttributeError:
            continue
        setattr(o, last, value)
        return
    if required:
        raise AttributeError(f"this Exudyn has none of the settings {', '.join(names)}")


def settings(steps: int, newton: str, dt: float = DT):
    """Simulation settings: Exudyn's defaults plus what the benchmark fixes (see the module docstring)."""
    import exudyn as exu
    s = exu.SimulationSettings()
    ti = s.timeIntegration
    ti.numberOfSteps = steps
    ti.endTime = steps * dt
    ti.verboseMode = 0
    ti.generalizedAlpha.spectralRadius = RHO_INF
    ti.generalizedAlpha.computeInitialAccelerations = True  # also the default; mbsim does the same
    if newton == "full":
        ti.newton.useModifiedNewton = False
    elif newton != "default":
        raise ValueError(f"newton must be 'default' or 'full', not {newton!r}")
    _set(s, ("linearSolver.solverType", "linearSolverType"), exu.LinearSolverType.EigenSparse)
    s.parallel.numberOfThreads = 1
    _set(s, ("solution.file.write", "solutionSettings.writeSolutionToFile"), False)
    _set(s, ("solution.sensors.active",), False, required=False)  # the model has no sensors anyway
    _set(s, ("solution.restart.write", "solutionSettings.writeRestartFile"), False)
    _set(s, ("show.globalTimers", "displayGlobalTimers"), False)
    _set(s, ("show.computationTime", "displayComputationTime"), False)
    _set(s, ("show.statistics", "displayStatistics"), False)
    return s


def final_state(mbs, nodes):
    """Positions (N, 3) and rotation matrices (N, 3, 3) of all bodies at the end of the run."""
    import exudyn as exu
    pos = np.array([mbs.GetNodeOutput(k, exu.OutputVariableType.Position) for k in nodes], dtype=float)
    rot = np.array([np.asarray(mbs.GetNodeOutput(k, exu.OutputVariableType.RotationMatrix), dtype=float)
                    .reshape(3, 3) for k in nodes])
    return pos.reshape(-1, 3), rot


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, required=True, help="number of bodies")
    ap.add_argument("--steps", type=int, required=True, help="time steps of 1e-3 s")
    ap.add_argument("--newton", choices=("default", "full"), default="default",
                    help="default: Exudyn's defaults (modified Newton); full: useModifiedNewton = False")
    ap.add_argument("--dt", type=float, default=DT,
                    help=f"time step (default {DT:g}; other values for convergence checks)")
    ap.add_argument("--no-state", action="store_true", help="do not print the final state (only its digest)")
    args = ap.parse_args(argv)
    if args.n < 1 or args.steps < 1:
        ap.error("--n and --steps must be >= 1")

    import exudyn as exu

    t0 = time.perf_counter()
    sc, mbs, nodes = build(args.n)
    build_s = time.perf_counter() - t0
    s = settings(args.steps, args.newton, args.dt)

    t0 = time.perf_counter()
    ok = mbs.SolveDynamic(s, storeSolver=True)
    solve_s = time.perf_counter() - t0
    solver = mbs.sys["dynamicSolver"]
    it = solver.it
    pos, rot = final_state(mbs, nodes)
    newton = s.timeIntegration.newton
    out = {
        "code": "exudyn", "version": exu.__version__, "ok": bool(ok), "n": args.n,
        "steps_requested": args.steps,
        # the step index is one ahead of the steps taken when the run has ended
        "steps": int(it.currentStepIndex) - 1, "t_end": float(it.currentTime),
        "build_s": build_s, "solve_s": solve_s,
        "newton_iterations": int(it.newtonStepsCount),
        "jacobians": int(it.newtonJacobiCount),
        "rejected_modified_newton_steps": int(it.rejectedModifiedNewtonSteps),
        "settings": {
            "newton": args.newton, "useModifiedNewton": bool(newton.useModifiedNewton),
            "maxModifiedNewtonIterations": int(newton.maxModifiedNewtonIterations),
            "modifiedNewtonContractivity": float(newton.modifiedNewtonContractivity),
            "relativeTolerance": float(newton.relativeTolerance),
            "absoluteTolerance": float(newton.absoluteTolerance),
            "spectralRadius": float(s.timeIntegration.generalizedAlpha.spectralRadius),
            "alphaF": float(solver.alphaF), "alphaM": float(solver.alphaM),
            "newmarkBeta": float(solver.newmarkBeta), "newmarkGamma": float(solver.newmarkGamma),
            "linearSolver": str(s.linearSolver.solverType), "threads": int(s.parallel.numberOfThreads),
            "nodeType": "RotationEulerParameters", "dt": float(args.dt),
        },
        "digest": {"sum_position": float(pos.sum()), "sum_rotation": float(rot.sum())},
    }
    if not args.no_state:
        out["position"] = pos.tolist()
        out["rotation"] = rot.reshape(-1, 9).tolist()
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
