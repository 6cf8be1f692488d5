#!/usr/bin/env python3
"""The Exudyn side of ``benchmarks/joint_chain.py``: rigid bodies joined by revolute joints, one run, one JSON line.

Run ONLY by the Python of an Exudyn virtual environment (never imported by
mbsim; Exudyn is not a dependency of mbsim)::

    .venv-exudyn/bin/python benchmarks/_exudyn_joints.py MODEL.json [--newton default|full] [--joint revolute|generic]

``MODEL.json`` is written by ``joint_chain.py`` from the mbsim scenario itself
(so both codes run the same model): ``gravity``, ``dt``, ``steps``,
``rho_inf``, ``bodies`` (``position``, ``mass``, ``inertia`` — the diagonal
of the principal inertia, body frames aligned with the world at t = 0) and
``joints`` (``a``, ``b``: body indices, −1 for the ground; ``point`` and
``axis`` in world coordinates at t = 0).

Each body is a ``NodeRigidBodyEP`` (Euler parameters, the default node of
Exudyn's ``CreateRigidBody``) with an ``ObjectRigidBody`` and gravity as
``LoadMassProportional``; each joint an ``ObjectJointRevoluteZ`` (or, with
``--joint generic``, an ``ObjectJointGeneric`` with ``constrainedAxes =
[1, 1, 1, 1, 1, 0]``) between two ``MarkerBodyRigid`` at the joint's point,
whose joint frame (``rotationMarker0/1``) has the joint's axis as its local z.
Generalized-α (index-3 constraints, Exudyn's default) with spectral radius
``rho_inf`` and computed initial accelerations, fixed step, EigenSparse, one
thread, no file or sensor output: the settings of ``_exudyn_chain.py``.

Printed (one JSON line on stdout, last line): as ``_exudyn_chain.py`` —
``build_s``, ``solve_s`` (``SolveDynamic`` only), steps, Newton iterations,
Jacobians, settings — and the final positions and rotation matrices of all
bodies (with ``--no-state`` only their digest).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from _exudyn_chain import settings  # the solver settings of the spring-chain comparison


def frame_of(axis) -> np.ndarray:
    """A rotation matrix whose third column is the unit vector ``axis`` (the joint frame: local z = axis)."""
    n = np.asarray(axis, dtype=float)
    n = n / np.linalg.norm(n)
    u = np.cross(n, np.eye(3)[int(np.argmin(np.abs(n)))])
    u /= np.linalg.norm(u)
    return np.column_stack((u, np.cross(n, u), n))


def build(model: dict, joint: str):
    """Create the model in a new system; return ``(SystemContainer, mbs, node numbers)``."""
    import exudyn as exu
    from exudyn.itemInterface import (LoadMassProportional, MarkerBodyMass, MarkerBodyRigid, NodeRigidBodyEP,
                                      ObjectGround, ObjectJointGeneric, ObjectJointRevoluteZ, ObjectRigidBody,
                                      VNodeRigidBodyEP, VObjectJointGeneric, VObjectJointRevoluteZ,
                                      VObjectRigidBody)
    from exudyn.rigidBodyUtilities import RigidBodyInertia

    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    ground = mbs.AddObject(ObjectGround(referencePosition=[0.0, 0.0, 0.0]))
    gravity = [float(x) for x in model["gravity"]]
    nodes, objects, centres = [], [], []
    for b in model["bodies"]:
        inertia = RigidBodyInertia(mass=float(b["mass"]), inertiaTensor=np.diag(b["inertia"]), com=np.zeros(3),
                                   inertiaTensorAtCOM=True)
        x = [float(v) for v in b["position"]]
        node = mbs.AddNode(NodeRigidBodyEP(referenceCoordinates=x + [1.0, 0.0, 0.0, 0.0],
                                           initialVelocities=[0.0] * 7, visualization=VNodeRigidBodyEP(show=False)))
        body = mbs.AddObject(ObjectRigidBody(mass=inertia.mass, inertia=inertia.GetInertia6D(),
                                             centerOfMass=inertia.com, nodeNumber=node,
                                             visualization=VObjectRigidBody(show=False)))
        mbs.AddLoad(LoadMassProportional(markerNumber=mbs.AddMarker(MarkerBodyMass(bodyNumber=body)),
                                         loadVector=gravity))
        nodes.append(int(node))
        objects.append(body)
        centres.append(np.array(x))
    for j in model["joints"]:
        point = np.asarray(j["point"], dtype=float)
        markers = []
        for side in ("a", "b"):
            k = int(j[side])
            body, centre = (ground, np.zeros(3)) if k < 0 else (objects[k], centres[k])
            # body frames are the world's at t = 0: the local position is the world offset
            markers.append(mbs.AddMarker(MarkerBodyRigid(bodyNumber=body, localPosition=list(point - centre))))
        A = frame_of(j["axis"]).tolist()
        if joint == "generic":
            mbs.AddObject(ObjectJointGeneric(markerNumbers=markers, constrainedAxes=[1, 1, 1, 1, 1, 0],
                                             rotationMarker0=A, rotationMarker1=A,
                                             visualization=VObjectJointGeneric(show=False)))
        else:
            mbs.AddObject(ObjectJointRevoluteZ(markerNumbers=markers, rotationMarker0=A, rotationMarker1=A,
                                               visualization=VObjectJointRevoluteZ(show=False)))
    mbs.Assemble()
    return sc, mbs, nodes


def final_state(mbs, nodes):
    """Positions (N, 3) and rotation matrices (N, 3, 3) of all bodies at the end of the run."""
    import exudyn as exu
    pos = np.array([mbs.GetNodeOutput(k, exu.OutputVariableType.Position) for k in nodes], dtype=float)
    rot = np.array([np.asarray(mbs.GetNodeOutput(k, exu.OutputVariableType.RotationMatrix), dtype=float)
                    .reshape(3, 3) for k in nodes])
    return pos.reshape(-1, 3), rot


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="the model as JSON (written by joint_chain.py)")
    ap.add_argument("--newton", choices=("default", "full"), default="default",
                    help="default: Exudyn's defaults (modified Newton); full: useModifiedNewton = False")
    ap.add_argument("--joint", choices=("revolute", "generic"), default="revolute",
                    help="ObjectJointRevoluteZ (default) or ObjectJointGeneric with the rotation about z free")
    ap.add_argument("--no-state", action="store_true", help="do not print the final state (only its digest)")
    args = ap.parse_args(argv)
    with open(args.model) as fh:
        model = json.load(fh)
    steps, dt = int(model["steps"]), float(model["dt"])

    import exudyn as exu

    t0 = time.perf_counter()
    sc, mbs, nodes = build(model, args.joint)
    build_s = time.perf_counter() - t0
    s = settings(steps, args.newton, dt)
    s.timeIntegration.generalizedAlpha.spectralRadius = float(model["rho_inf"])

    t0 = time.perf_counter()
    ok = mbs.SolveDynamic(s, storeSolver=True)
    solve_s = time.perf_counter() - t0
    solver = mbs.sys["dynamicSolver"]
    it = solver.it
    pos, rot = final_state(mbs, nodes)
    newton = s.timeIntegration.newton
    out = {
        "code": "exudyn", "version": exu.__version__, "ok": bool(ok), "n": len(nodes), "joints": len(model["joints"]),
        "steps_requested": steps,
        # the step index is one ahead of the steps taken when the run has ended
        "steps": int(it.currentStepIndex) - 1, "t_end": float(it.currentTime),
        "build_s": build_s, "solve_s": solve_s,
        "newton_iterations": int(it.newtonStepsCount),
        "jacobians": int(it.newtonJacobiCount),
        "rejected_modified_newton_steps": int(it.rejectedModifiedNewtonSteps),
        "settings": {
            "newton": args.newton, "joint": args.joint, "useModifiedNewton": bool(newton.useModifiedNewton),
            "relativeTolerance": float(newton.relativeTolerance),
            "absoluteTolerance": float(newton.absoluteTolerance),
            "spectralRadius": float(s.timeIntegration.generalizedAlpha.spectralRadius),
            "useIndex2Constraints": bool(s.timeIntegration.generalizedAlpha.useIndex2Constraints),
            "linearSolver": str(s.linearSolver.solverType), "threads": int(s.parallel.numberOfThreads),
            "nodeType": "RotationEulerParameters", "dt": dt,
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
