#!/usr/bin/env python3
"""Linearized modes of a planar hanging chain: ``mbsim modes`` against a joint-angle reference and Exudyn.

The model (issue "linearized modes"): N rigid rods (N = 10, 100, 1000 by
default) of total length ``LENGTH`` and total mass ``MASS``, each of length
l = LENGTH/N and mass m = MASS/N, inertia diag(m l²/12, m l²/12, m (0.01 l)²/2)
about its centre in axes parallel to the world's, hanging straight down from
the world: rod k (k = 0 … N−1) has its centre at (0, 0, −(k + ½) l) and is
joined to rod k−1 (``world`` for k = 0) by a revolute joint at (0, 0, −k l)
about the y axis, so the chain swings in the x-z plane; gravity [0, 0, −9.81].
At rest, hanging straight down, it is in its static equilibrium, and its N
degrees of freedom have N natural frequencies; the lowest ``--count`` (10)
are compared.

Three computations of the same frequencies, per N:

1. **reference** -- ``benchmarks/chain_modes_reference.py``: the eigenproblem
   M_θ θ̈ + K_θ θ = 0 of the chain in the rods' absolute angles (the
   Lagrangian linearized about the hanging state; M_θ and K_θ derived in its
   docstring), ``scipy.linalg.eigh`` refined by Rayleigh quotients (for
   N = 1000 plain eigh is off by 2e-10 on the lowest mode, as M_θ is
   ill-conditioned; the quotients agree with inverse iteration to 1e-15).
   Checked against closed forms for
   N = 1 and N = 2 and against finite differences of the nonlinear
   Lagrangian; for large N its lowest frequencies approach those of the
   continuous hanging chain, ω_k = (j_{0,k}/2) √(g/L) (printed: a check,
   not a requirement).

2. **mbsim** -- the whole process ``python -m mbsim modes SCENARIO --count K
   -o OUT.h5`` on the chain written as a scenario file (bodies and revolute
   joints; the ``time`` section the loader requires is ignored by ``modes``),
   then ``/modes/frequency`` (Hz) read from OUT.h5 with h5py.  Wall time of
   the process: one warm-up run (numba's cache filled, file caches warm), then
   the best of ``--repeats``.  If the command fails (an mbsim without
   ``modes``), the mbsim columns are skipped with a note.  The process runs in
   the scenario's temporary directory, with this repository first on
   PYTHONPATH; ``--mbsim-command`` runs another mbsim instead (e.g. an
   installed ``mbsim`` executable).

3. **Exudyn** -- in its own virtual environment (never imported here; its
   interpreter is ``--exudyn-python``, else ``$MBSIM_EXUDYN_PYTHON``, else
   ``.venv-exudyn/bin/python`` in the repository, as for ``vs_exudyn.py``; it
   needs scipy besides exudyn and numpy, for ``ComputeODE2Eigenvalues``).
   This script runs itself in that interpreter as the worker
   (``modes.py --exudyn-worker MODEL.json …``, which imports neither mbsim
   nor anything of this repository but ``_exudyn_joints.py`` for the 3D
   model): it builds the chain from the same bodies and joints, computes the
   lowest K eigenfrequencies by ``mbs.ComputeODE2Eigenvalues(
   convert2Frequencies=True, numberOfEigenvalues=K)`` (dense) and prints one
   JSON line.  Models (``--exudyn-models``):

   ``tree``     ``ObjectKinematicTree`` (minimal coordinates: one
                ``RevoluteY`` angle per rod, link masses, centres and
                inertias as above, gravity of the tree): no constraints,
                so ``ComputeODE2Eigenvalues`` is a plain dense ``eigh`` of
                the mass matrix and the (numerical) Jacobian of the
                gravity forces.  The model whose frequencies are right.
   ``rigid2d``  ``NodeRigidBody2D`` + ``ObjectRigidBody2D`` per rod (the
                x-z plane as Exudyn's x-y plane, inertia I_yy) and
                ``ObjectJointRevolute2D``: 3N coordinates, 2N constraints.
   ``rigid3d``  ``NodeRigidBodyEP`` + ``ObjectRigidBody`` and
                ``ObjectJointRevoluteZ`` (the model of ``_exudyn_joints.py``):
                7N coordinates, 6N constraints (with the Euler parameters').

   For the redundant-coordinate models the joints' Lagrange multipliers in
   the hanging state come first, stored as the initial algebraic
   coordinates, where ``ComputeODE2Eigenvalues`` reads the state: by default
   from the initialization of Exudyn's implicit dynamic solver
   (``MainSolverImplicitSecondOrder.InitializeSolver`` with
   ``computeInitialAccelerations``: at rest in the equilibrium, the
   accelerations are zero and the multipliers are the static reactions);
   with ``--multipliers static`` by ``mbs.SolveStatic(updateInitialValues=True)``,
   which needs ``linearSolver.ignoreSingularJacobian = True`` and the
   ``EigenDense`` (full-pivoting LU) solver -- with its defaults it fails,
   "System Jacobian seems to be singular", as its Jacobian lacks the
   reactions' geometric stiffness (below) -- and is slow (about 95 s for
   N = 1000, 5000 unknowns, on 2 CPUs).  Both give the same multipliers.
   ``ComputeODE2Eigenvalues`` then projects M and K on the null space of the
   constraint Jacobian (a dense SVD).  **Its K is the Jacobian of the applied forces only: it leaves out
   the geometric stiffness ∂(C_qᵀλ)/∂q of the joint reactions, and gravity
   alone gives a hanging rod no stiffness about its hinge, so both
   rigid-body models give 0 Hz for every mode whatever the multipliers and
   whatever ``numericalDifferentiation`` option** (checked: ``forODE2``,
   ``forAE``, ``doSystemWideDifferentiation``, ``jacobianConnectorDerivative``).
   That is why ``tree`` is the Exudyn figure that is compared; the rigid
   models' figures show the cost of Exudyn's eigenvalue computation on a
   redundant-coordinate model (the kind ``mbsim modes`` handles), and, for
   N ≤ ``--geometric-max``, a second run adds the missing term by hand --
   central differences of Exudyn's own C_qᵀ(q)·λ (``ComputeJacobianAE``),
   projected on the same null space -- which brings them to the reference
   (column ``+Kgeo``): the term is the only thing missing.

Timing: ``eig s`` is ``ComputeODE2Eigenvalues`` alone; ``proc s`` the
whole worker process (interpreter start, importing Exudyn, building the
model, the multipliers, the eigenvalues, the JSON line), the best of
``--repeats`` after one untimed warm-up run of a small chain per model.
A worker run that takes more than ``--exudyn-timeout`` seconds (default
300) is stopped and reported as such.  Relative differences are
``max_k |f_k − f_k^ref| / f_k^ref`` over the modes compared.  BLAS threads
are the defaults of each interpreter (the same environment for both codes).

Usage::

    python benchmarks/modes.py                                   # N = 10, 100, 1000
    python benchmarks/modes.py --sizes 10 100 --count 10 --exudyn-python ~/exu/bin/python
    python benchmarks/modes.py --sizes 10 --exudyn-models tree rigid2d rigid3d --json
    python benchmarks/modes.py --no-exudyn --sizes 10 100 1000 10000
    python benchmarks/modes.py --mbsim-command "path/to/venv/bin/mbsim"     # another mbsim
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# a cold numba cache compiles in the foreground (not the plain-Python first run of mbsim.compiling):
# these figures are of the compiled code (the variable reaches the mbsim processes)
os.environ.setdefault("MBSIM_FIRST_RUN", "compile")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

LENGTH = 1.0  # total length of the chain [m]
MASS = 1.0  # total mass of the chain [kg]
G = 9.81  # gravity [m/s²], along −z
AXIAL_RADIUS = 0.01  # a rod's radius for its axial inertia m r²/2, as a fraction of its length
AXIS = [0.0, 1.0, 0.0]  # the hinges' axis: motion in the x-z plane
EXUDYN_MODELS = ("tree", "rigid2d", "rigid3d")
TIME = {"end": 1.0, "step": 1.0e-3}  # required by the scenario loader; ignored by `mbsim modes`


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------
def rod(n: int) -> tuple[float, float, list]:
    """Length [m], mass [kg] and principal inertias [kg m²] of one rod of the chain of ``n``."""
    l, m = LENGTH / n, MASS / n
    return l, m, [m * l * l / 12.0, m * l * l / 12.0, m * (AXIAL_RADIUS * l) ** 2 / 2.0]


def chain_dict(n: int) -> dict:
    """The hanging chain of ``n`` rods as a scenario mapping (SCENARIO.md keys)."""
    l, m, inertia = rod(n)
    bodies = [{"name": f"rod{k}", "mass": m, "inertia": list(inertia), "position": [0.0, 0.0, -(k + 0.5) * l]}
              for k in range(n)]
    joints = [{"name": f"hinge{k}", "type": "revolute", "bodies": ["world" if k == 0 else f"rod{k - 1}", f"rod{k}"],
               "point": [0.0, 0.0, -k * l], "axis": list(AXIS)} for k in range(n)]
    return {"mbsim": 1, "name": f"hanging-chain-{n}",
            "description": f"A planar chain of {n} rigid rods hanging from the world by revolute joints.",
            "gravity": [0.0, 0.0, -G], "time": dict(TIME), "bodies": bodies, "joints": joints}


def exudyn_model(d: dict) -> dict:
    """The scenario mapping ``d`` as the worker's JSON model (that of ``_exudyn_joints.py``: body indices,
    −1 the ground; points and axes in world coordinates, body axes the world's)."""
    index = {b["name"]: k for k, b in enumerate(d["bodies"])}
    index["world"] = -1
    return {"gravity": d["gravity"],
            "bodies": [{"position": b["position"], "mass": b["mass"], "inertia": b["inertia"]} for b in d["bodies"]],
            "joints": [{"a": index[j["bodies"][0]], "b": index[j["bodies"][1]], "point": j["point"],
                        "axis": j["axis"]} for j in d["joints"]]}


def max_rel(f, ref) -> float | None:
    """max_k |f_k − ref_k| / ref_k over the modes both have (None if there is nothing to compare)."""
    if f is None:
        return None
    k = min(len(f), len(ref))
    if k == 0:
        return None
    return float(np.max(np.abs(np.asarray(f[:k]) - ref[:k]) / ref[:k]))


# ----------------------------------------------------------------------------------------------
# mbsim: the whole `mbsim modes` process
# ----------------------------------------------------------------------------------------------
MBSIM = [sys.executable, "-m", "mbsim"]  # the mbsim command (--mbsim-command): this Python, this repository


def mbsim_command(scenario: Path, out: Path, count: int) -> list:
    return MBSIM + ["modes", str(scenario), "--count", str(count), "-o", str(out)]


def mbsim_env() -> dict:
    if MBSIM[:3] != [sys.executable, "-m", "mbsim"]:
        return dict(os.environ)
    # this repository's mbsim, installed or not
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run_mbsim_modes(scenario: Path, out: Path, count: int, timeout: float | None) -> tuple[float, np.ndarray]:
    """One ``mbsim modes`` process: its wall time [s] and ``/modes/frequency`` [Hz]; RuntimeError if it fails."""
    import h5py
    if out.exists():
        out.unlink()
    cmd = mbsim_command(scenario, out, count)
    t0 = time.perf_counter()
    # run in the scenario's directory: `python -m` puts the working directory first on sys.path
    r = subprocess.run(cmd, capture_output=True, text=True, env=mbsim_env(), timeout=timeout, cwd=str(scenario.parent))
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        last = ((r.stderr or r.stdout).strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"`mbsim modes` exited with {r.returncode}: {last}")
    with h5py.File(out, "r") as fh:
        if "modes/frequency" not in fh:
            raise RuntimeError(f"{out} has no /modes/frequency (it has: {', '.join(fh.keys())})")
        freq = np.asarray(fh["modes/frequency"][()], dtype=float).ravel()
    return elapsed, freq


def bench_mbsim(n: int, count: int, repeats: int, tmp: Path, timeout: float | None, log) -> dict:
    """Warm-up, then the best of ``repeats`` whole ``mbsim modes`` processes; {'skipped': why} if it fails."""
    import yaml
    scen = tmp / f"chain{n}.yaml"
    scen.write_text(yaml.safe_dump(chain_dict(n), sort_keys=False))
    out = tmp / f"chain{n}-modes.h5"
    try:
        run_mbsim_modes(scen, out, count, timeout)  # warm-up, not timed
        times, freq = [], None
        for r in range(repeats):
            t, freq = run_mbsim_modes(scen, out, count, timeout)
            times.append(t)
            log(f"  N = {n}, repeat {r + 1}/{repeats}: mbsim modes process {t:.3f} s")
    except subprocess.TimeoutExpired:
        return {"skipped": f"`mbsim modes` took more than {timeout:g} s (stopped)"}
    except RuntimeError as exc:
        return {"skipped": str(exc)}
    return {"process_s": min(times), "process_s_all": times, "frequency": freq.tolist()}


# ----------------------------------------------------------------------------------------------
# Exudyn: this script as the worker, in Exudyn's interpreter
# ----------------------------------------------------------------------------------------------
def run_exudyn(python: str, model_path: Path, kind: str, count: int, multipliers: str, geometric: bool,
               timeout: float | None) -> dict:
    """One worker process; its JSON line as a dict plus ``process_s`` (wall time of the whole process)."""
    cmd = [python, str(Path(__file__).resolve()), "--exudyn-worker", str(model_path), "--model", kind,
           "--count", str(count), "--multipliers", multipliers] + (["--geometric"] if geometric else [])
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(HERE))
    elapsed = time.perf_counter() - t0
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-8:])
        raise RuntimeError(f"Exudyn ({kind}): {' '.join(cmd)} exited with {r.returncode}:\n{tail}")
    out = json.loads(lines[-1])
    out["process_s"] = elapsed
    return out


def bench_exudyn(python: str, n: int, kind: str, args, tmp: Path, log) -> dict:
    """The best of ``--repeats`` worker runs for one N and model; and, for a rigid model with N ≤
    ``--geometric-max``, one more run with the reactions' geometric stiffness added."""
    path = tmp / f"chain{n}-exudyn.json"
    if not path.exists():
        path.write_text(json.dumps(exudyn_model(chain_dict(n))))
    runs = []
    try:
        for r in range(args.repeats):
            runs.append(run_exudyn(python, path, kind, args.count, args.multipliers, False, args.exudyn_timeout))
            log(f"  N = {n}, repeat {r + 1}/{args.repeats}: Exudyn {kind}: eig {runs[-1]['eig_s']:.3f} s, "
                f"process {runs[-1]['process_s']:.3f} s")
    except subprocess.TimeoutExpired:
        if not runs:
            return {"skipped": f"more than {args.exudyn_timeout:g} s (stopped)"}
    except RuntimeError as exc:
        if not runs:
            return {"skipped": str(exc)}
    best = min(runs, key=lambda x: x["process_s"])
    res = {"process_s": best["process_s"], "process_s_all": [x["process_s"] for x in runs],
           "eig_s": min(x["eig_s"] for x in runs), "eig_s_all": [x["eig_s"] for x in runs],
           "multipliers_s": min(x["multipliers_s"] for x in runs), "build_s": min(x["build_s"] for x in runs),
           "frequency": best["frequency"], "n_ode2": best["n_ode2"], "n_ae": best["n_ae"],
           "settings": best["settings"], "version": best["version"]}
    if kind != "tree" and n <= args.geometric_max:
        try:
            g = run_exudyn(python, path, kind, args.count, args.multipliers, True, args.exudyn_timeout)
            res["geometric"] = g["geometric"]
            log(f"  N = {n}: Exudyn {kind} + geometric stiffness: {g['geometric']['s']:.3f} s")
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            res["geometric"] = {"skipped": str(exc)}
    return res


# --- the worker (runs in Exudyn's interpreter: imports exudyn, numpy, scipy; never mbsim) ---
def _exudyn_settings(multipliers_static: bool = False):
    import exudyn as exu
    from _exudyn_chain import _set  # the 1.13 / older setting names
    s = exu.SimulationSettings()
    s.staticSolver.verboseMode = 0
    _set(s, ("solution.file.write", "solutionSettings.writeSolutionToFile"), False)
    _set(s, ("solution.restart.write", "solutionSettings.writeRestartFile"), False, required=False)
    if multipliers_static:
        # the static Jacobian of the hanging chain is singular (no geometric stiffness of the reactions):
        # full-pivoting dense LU, which solves it in the least-squares sense
        _set(s, ("linearSolver.ignoreSingularJacobian", "linearSolverSettings.ignoreSingularJacobian"), True)
        _set(s, ("linearSolver.solverType", "linearSolverType"), exu.LinearSolverType.EigenDense)
    return s


def _build_tree(model: dict):
    """ObjectKinematicTree of the chain: one RevoluteY angle per rod (joint k between rod k−1 and rod k)."""
    import exudyn as exu
    from exudyn.itemInterface import NodeGenericODE2, ObjectKinematicTree, VObjectKinematicTree
    bodies, joints = model["bodies"], model["joints"]
    n = len(bodies)
    for k, j in enumerate(joints):
        if j["a"] != k - 1 or j["b"] != k or not np.allclose(np.abs(j["axis"]), [0.0, 1.0, 0.0]):
            raise ValueError("the tree model needs a chain: joint k between bodies k−1 and k, axis ±y")
    points = np.array([j["point"] for j in joints], dtype=float)
    offsets = np.vstack([points[:1], np.diff(points, axis=0)])  # from the parent joint (the base: the origin)
    coms = np.array([b["position"] for b in bodies], dtype=float) - points
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    node = mbs.AddNode(NodeGenericODE2(referenceCoordinates=[0.0] * n, initialCoordinates=[0.0] * n,
                                       initialCoordinates_t=[0.0] * n, numberOfODE2Coordinates=n))
    mbs.AddObject(ObjectKinematicTree(
        nodeNumber=node, gravity=[float(x) for x in model["gravity"]],
        jointTypes=[exu.JointType.RevoluteY] * n, linkParents=list(range(-1, n - 1)),
        jointTransformations=exu.Matrix3DList([np.eye(3)] * n),
        jointOffsets=exu.Vector3DList([list(o) for o in offsets]),
        linkInertiasCOM=exu.Matrix3DList([np.diag(b["inertia"]) for b in bodies]),
        linkCOMs=exu.Vector3DList([list(c) for c in coms]),
        linkMasses=[float(b["mass"]) for b in bodies], visualization=VObjectKinematicTree(show=False)))
    mbs.Assemble()
    return sc, mbs


def _build_rigid2d(model: dict):
    """NodeRigidBody2D + ObjectRigidBody2D per body, ObjectJointRevolute2D per joint; the world's x-z plane
    as Exudyn's x-y plane (every axis ±y, every point and centre at y = 0)."""
    import exudyn as exu
    from exudyn.itemInterface import (LoadMassProportional, MarkerBodyMass, MarkerBodyPosition, NodeRigidBody2D,
                                      ObjectGround, ObjectJointRevolute2D, ObjectRigidBody2D, VNodeRigidBody2D,
                                      VObjectJointRevolute2D, VObjectRigidBody2D)

    def plane(v):  # world (x, y, z) -> Exudyn's (x, y, 0) = (x, z, 0)
        if abs(v[1]) > 1e-14:
            raise ValueError("the 2D model needs every point and centre in the x-z plane")
        return [float(v[0]), float(v[2]), 0.0]

    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    ground = mbs.AddObject(ObjectGround(referencePosition=[0.0, 0.0, 0.0]))
    gx, gy, gz = model["gravity"]
    objects, centres = [], []
    for b in model["bodies"]:
        c = plane(b["position"])
        node = mbs.AddNode(NodeRigidBody2D(referenceCoordinates=[c[0], c[1], 0.0], initialVelocities=[0.0] * 3,
                                           visualization=VNodeRigidBody2D(show=False)))
        body = mbs.AddObject(ObjectRigidBody2D(nodeNumber=node, mass=float(b["mass"]), inertia=float(b["inertia"][1]),
                                               visualization=VObjectRigidBody2D(show=False)))
        mbs.AddLoad(LoadMassProportional(markerNumber=mbs.AddMarker(MarkerBodyMass(bodyNumber=body)),
                                         loadVector=[float(gx), float(gz), 0.0]))
        objects.append(body)
        centres.append(np.array(c))
    for j in model["joints"]:
        if not np.allclose(np.abs(j["axis"]), [0.0, 1.0, 0.0]):
            raise ValueError("the 2D model needs every joint axis along ±y")
        p = np.array(plane(j["point"]))
        markers = []
        for side in ("a", "b"):
            k = int(j[side])
            body, centre = (ground, np.zeros(3)) if k < 0 else (objects[k], centres[k])
            markers.append(mbs.AddMarker(MarkerBodyPosition(bodyNumber=body, localPosition=list(p - centre))))
        mbs.AddObject(ObjectJointRevolute2D(markerNumbers=markers, visualization=VObjectJointRevolute2D(show=False)))
    mbs.Assemble()
    return sc, mbs


def _multipliers(mbs, how: str) -> float:
    """The joints' Lagrange multipliers in the initial (hanging) state, stored as the initial AE coordinates;
    returns the sign that turns them into those of the dynamic equations M q̈ + C_qᵀ λ = f."""
    import exudyn as exu
    if how == "static":
        mbs.SolveStatic(_exudyn_settings(multipliers_static=True), updateInitialValues=True)
        return -1.0  # the static solver's multipliers are the opposite of the dynamic ones (checked: N = 1)
    from _exudyn_chain import _set
    d = _exudyn_settings()
    d.timeIntegration.generalizedAlpha.computeInitialAccelerations = True
    d.timeIntegration.verboseMode = 0
    _set(d, ("linearSolver.solverType", "linearSolverType"), exu.LinearSolverType.EigenSparse)
    solver = exu.MainSolverImplicitSecondOrder()
    solver.InitializeSolver(mbs, d)  # the initial accelerations and multipliers, at rest
    mbs.systemData.SetAECoordinates(list(mbs.systemData.GetAECoordinates()),
                                    configuration=exu.ConfigurationType.Initial)
    solver.FinalizeSolver(mbs, d)
    return 1.0


def _geometric_frequencies(mbs, count: int, sign: float, h: float = 1e-6, tol: float = 1e-12) -> dict:
    """ComputeODE2Eigenvalues' projection with the reactions' geometric stiffness ∂(C_qᵀλ)/∂q added:
    central differences of Exudyn's own C_qᵀ(q) times the initial multipliers (``sign``: see _multipliers)."""
    import exudyn as exu
    from scipy.linalg import eigh, svd
    initial, current = exu.ConfigurationType.Initial, exu.ConfigurationType.Current
    s = _exudyn_settings()
    ss = exu.MainSolverStatic()
    ss.InitializeSolver(mbs, s)
    n2, nae = ss.GetODE2size(), ss.GetAEsize()
    ss.ComputeMassMatrix(mbs)
    M = np.array(ss.GetSystemMassMatrix())[:n2, :n2].copy()
    ss.ComputeJacobianODE2RHS(mbs, scalarFactor_ODE2=-1, scalarFactor_ODE2_t=0, scalarFactor_ODE1=0)
    K = np.array(ss.GetSystemJacobian())[:n2, :n2].copy()
    lam = sign * np.asarray(mbs.systemData.GetAECoordinates(configuration=initial), dtype=float)
    q0 = np.asarray(mbs.systemData.GetODE2Coordinates(configuration=current), dtype=float)

    def cqt(q):  # C_qᵀ (n2 × nae) at q
        mbs.systemData.SetODE2Coordinates(list(q), configuration=current)
        # ComputeJacobianAE adds to the stored Jacobian: the ODE2 call with factor 0 clears it first
        ss.ComputeJacobianODE2RHS(mbs, scalarFactor_ODE2=0, scalarFactor_ODE2_t=0, scalarFactor_ODE1=0)
        ss.ComputeJacobianAE(mbs, scalarFactor_ODE2=1.0, scalarFactor_ODE2_t=0.0, scalarFactor_ODE1=0.0,
                             velocityLevel=False)
        return np.array(ss.GetSystemJacobian())[:n2, n2:n2 + nae].copy()

    t0 = time.perf_counter()
    C = cqt(q0)
    Kg = np.empty((n2, n2))
    for i in range(n2):
        e = np.zeros(n2)
        e[i] = h
        Kg[:, i] = (cqt(q0 + e) - cqt(q0 - e)) @ lam / (2.0 * h)
    mbs.systemData.SetODE2Coordinates(list(q0), configuration=current)
    U, D, _ = svd(C)  # as ComputeODE2Eigenvalues: the null space of C_q from the SVD of C_qᵀ
    Z = U[:, int((np.abs(D) > tol).sum()):]
    w2 = eigh(Z.T @ (K + Kg) @ Z, Z.T @ M @ Z, eigvals_only=True)
    ss.FinalizeSolver(mbs, s)
    k = min(count, len(w2))
    return {"frequency": (np.sqrt(np.clip(w2[:k], 0.0, None)) / (2 * math.pi)).tolist(),
            "lowest_omega2": float(w2[0]), "s": time.perf_counter() - t0}


def exudyn_worker(argv) -> int:
    """``modes.py --exudyn-worker MODEL.json --model tree|rigid2d|rigid3d --count K``: one JSON line."""
    ap = argparse.ArgumentParser(prog="modes.py --exudyn-worker")
    ap.add_argument("model")
    ap.add_argument("--model", dest="kind", choices=EXUDYN_MODELS, default="tree")
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--multipliers", choices=("initial", "static"), default="initial")
    ap.add_argument("--geometric", action="store_true")
    args = ap.parse_args(argv)
    model = json.loads(Path(args.model).read_text())
    t0 = time.perf_counter()
    import exudyn as exu
    import scipy.linalg  # noqa: F401  (imported by ComputeODE2Eigenvalues: not in its time)
    import scipy.sparse  # noqa: F401
    import_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    if args.kind == "tree":
        sc, mbs = _build_tree(model)
    elif args.kind == "rigid2d":
        sc, mbs = _build_rigid2d(model)
    else:
        from _exudyn_joints import build  # Euler parameters, ObjectJointRevoluteZ
        sc, mbs, _ = build(model, "revolute")
    build_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    sign = 1.0 if args.kind == "tree" else _multipliers(mbs, args.multipliers)
    multipliers_s = time.perf_counter() - t0
    lam = np.asarray(mbs.systemData.GetAECoordinates(configuration=exu.ConfigurationType.Initial), dtype=float)

    s = _exudyn_settings()
    t0 = time.perf_counter()
    freq, _ = mbs.ComputeODE2Eigenvalues(s, useSparseSolver=False, numberOfEigenvalues=args.count,
                                         convert2Frequencies=True)
    eig_s = time.perf_counter() - t0
    out = {"code": "exudyn", "version": exu.__version__, "model": args.kind,
           "n_ode2": len(mbs.systemData.GetODE2Coordinates()),
           "n_ae": int(lam.size), "import_s": import_s, "build_s": build_s, "multipliers_s": multipliers_s,
           "eig_s": eig_s, "frequency": np.asarray(freq, dtype=float).tolist(),
           "largest_multiplier": float(np.abs(lam).max()) if lam.size else 0.0,
           "settings": {"ComputeODE2Eigenvalues": {"useSparseSolver": False, "numberOfEigenvalues": args.count,
                                                   "convert2Frequencies": True, "singularValuesTolerance": 1e-12},
                        "multipliers": None if args.kind == "tree" else args.multipliers}}
    if args.geometric:
        out["geometric"] = _geometric_frequencies(mbs, args.count, sign)
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    return 0


# ----------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------
def _f(x, fmt=".1e", width=8) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:>{width}{fmt}}"


def print_block(res: dict, models: list, count: int) -> None:
    """The per-N table: the modes side by side, then the times."""
    n, ref = res["n"], np.asarray(res["reference"])
    l, m, _ = rod(n)
    print(f"\nN = {n}: {n} rods of {l:g} m and {m:g} kg, {n} degrees of freedom; the lowest {len(ref)} modes [Hz]")
    mb = res.get("mbsim", {})
    cols = [("mbsim", mb.get("frequency"))]
    for kind in models:
        e = res.get("exudyn", {}).get(kind, {})
        cols.append((f"Exudyn {kind}", e.get("frequency")))
        if "frequency" in e.get("geometric", {}):
            cols.append((f"{kind}+Kgeo", e["geometric"]["frequency"]))
    head = f"{'mode':>4} {'reference':>10}" + "".join(f" | {name:>14} {'rel':>7}" for name, _ in cols)
    print(head)
    print("-" * len(head))
    for k in range(len(ref)):
        line = f"{k + 1:>4} {ref[k]:>10.6f}"
        for _, f in cols:
            if f is None or k >= len(f):
                line += f" | {'-':>14} {'-':>7}"
            else:
                line += f" | {f[k]:>14.6f} {abs(f[k] - ref[k]) / ref[k]:>7.1e}"
        print(line)
    cont = res["continuous"]
    print(f"reference vs the continuous chain (j0k/2 sqrt(g/L)), modes 1..{len(cont)}: "
          + " ".join(f"{x:+.1e}" for x in cont))
    if "skipped" in mb:
        print(f"mbsim: skipped -- {mb['skipped'].splitlines()[0]}")
    elif mb:
        print(f"mbsim modes: whole process {mb['process_s']:.3f} s (best of {len(mb['process_s_all'])} after a "
              f"warm-up: {', '.join(f'{t:.3f}' for t in mb['process_s_all'])})")
    for kind in models:
        e = res.get("exudyn", {}).get(kind)
        if e is None:
            continue
        if "skipped" in e:
            print(f"Exudyn {kind}: skipped -- {e['skipped'].splitlines()[0]}")
            continue
        line = (f"Exudyn {kind} ({e['n_ode2']} coordinates, {e['n_ae']} constraints): ComputeODE2Eigenvalues "
                f"{e['eig_s']:.3f} s, whole process {e['process_s']:.3f} s (build {e['build_s']:.3f} s")
        if kind != "tree":
            line += f", multipliers ({e['settings']['multipliers']}) {e['multipliers_s']:.3f} s"
        print(line + f"; best of {len(e['process_s_all'])})")
        g = e.get("geometric")
        if g and "skipped" in g:
            print(f"  {kind} + geometric stiffness: skipped -- {g['skipped'].splitlines()[0]}")
        elif g:
            print(f"  {kind} + geometric stiffness by central differences of Exudyn's C_q^T lambda: {g['s']:.3f} s, "
                  f"lowest omega^2 {g['lowest_omega2']:.6g}")


def summary(results: list, models: list) -> None:
    """One row per N: the agreement and the times."""
    print("\nSummary: max relative difference to the reference over the modes compared; times in s")
    head = f"{'N':>6} {'f1 ref Hz':>10} | {'mbsim rel':>9} {'proc s':>8}"
    for kind in models:
        head += f" | {kind + ' rel':>11}" + (f" {'+Kgeo rel':>9}" if kind != "tree" else "")
        head += f" {'eig s':>8} {'proc s':>8}"
    print(head)
    print("-" * len(head))
    for res in results:
        ref = res["reference"]
        mb = res.get("mbsim", {})
        line = f"{res['n']:>6} {ref[0]:>10.6f} | {_f(max_rel(mb.get('frequency'), np.asarray(ref)), width=9)} " \
               f"{_f(mb.get('process_s'), '.3f')}"
        for kind in models:
            e = res.get("exudyn", {}).get(kind, {})
            line += f" | {_f(max_rel(e.get('frequency'), np.asarray(ref)), width=11)}"
            if kind != "tree":
                g = e.get("geometric", {})
                line += f" {_f(max_rel(g.get('frequency'), np.asarray(ref)), width=9)}"
            line += f" {_f(e.get('eig_s'), '.3f')} {_f(e.get('process_s'), '.3f')}"
        print(line)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--exudyn-worker"]:
        return exudyn_worker(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000], metavar="N",
                    help="numbers of rods (default: 10 100 1000)")
    ap.add_argument("--count", type=int, default=10, help="modes compared (default 10)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed runs per code, model and N after the warm-up (default 3); the best of them")
    ap.add_argument("--no-mbsim", dest="mbsim", action="store_false", help="do not run `mbsim modes`")
    ap.add_argument("--mbsim-command", metavar="CMD",
                    help="the mbsim command, split as by a shell (default: this Python -m mbsim with this "
                         "repository on PYTHONPATH), e.g. /work/venv/bin/mbsim")
    ap.add_argument("--mbsim-timeout", type=float, default=600.0, metavar="S",
                    help="stop an `mbsim modes` process after S seconds (default 600)")
    ap.add_argument("--no-exudyn", dest="exudyn", action="store_false", help="do not run Exudyn")
    ap.add_argument("--exudyn-python", metavar="PATH",
                    help="Python of the Exudyn virtual environment (default: $MBSIM_EXUDYN_PYTHON, else "
                         ".venv-exudyn/bin/python); it needs scipy too")
    ap.add_argument("--exudyn-models", nargs="+", choices=EXUDYN_MODELS, default=["tree", "rigid2d"],
                    help="Exudyn models (default: tree rigid2d)")
    ap.add_argument("--multipliers", choices=("initial", "static"), default="initial",
                    help="the rigid models' multipliers: the dynamic solver's initialization (default) or "
                         "SolveStatic with a full-pivoting dense LU (slow)")
    ap.add_argument("--geometric-max", type=int, default=100, metavar="N",
                    help="add the geometric stiffness to the rigid models by hand up to N rods (default 100)")
    ap.add_argument("--exudyn-timeout", type=float, default=300.0, metavar="S",
                    help="stop an Exudyn worker after S seconds (default 300)")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the tables")
    args = ap.parse_args(argv)
    if any(n < 1 for n in args.sizes) or args.count < 1 or args.repeats < 1:
        ap.error("--sizes, --count and --repeats must be >= 1")

    if args.mbsim_command:
        MBSIM[:] = shlex.split(args.mbsim_command)
    from chain_modes_reference import checks, chain_frequencies, continuous_frequencies

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    python, exu_version, exu_note = None, None, None
    if args.exudyn:
        from vs_exudyn import SetupError, exudyn_version, find_exudyn_python
        try:
            python, _ = find_exudyn_python(args.exudyn_python)
            exu_version = exudyn_version(python)
            r = subprocess.run([python, "-c", "import scipy"], capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise SetupError(f"{python} cannot import scipy, which ComputeODE2Eigenvalues needs: "
                                 f"{python} -m pip install scipy")
        except SetupError as exc:
            exu_note = str(exc).splitlines()[0]
            python = None

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    info = {"numpy": np.__version__, "python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "load_average": list(load), "exudyn": exu_version, "exudyn_python": python,
            "length": LENGTH, "mass": MASS, "gravity": G, "count": args.count, "repeats": args.repeats,
            "mbsim_command": " ".join(mbsim_command(Path("SCENARIO.yaml"), Path("OUT.h5"), args.count))}
    c = checks(LENGTH, MASS, G, sizes=(), count=args.count)
    if not args.json:
        print(f"hanging chain: total length {LENGTH:g} m, mass {MASS:g} kg, g = {G:g} m/s^2, hinges about y; "
              f"numpy {info['numpy']}, Python {info['python']}, {info['machine']}, {info['cpus']} CPUs, "
              f"load average {load[0]:.2f}")
        print(f"reference checks: N = 1 vs sqrt(m g l/2 / (m l^2/3))/2pi {c['n1']:.1e}; N = 2 vs (g/l)(3 -+ 6/sqrt 7) "
              f"{c['n2']:.1e}; M_theta, K_theta vs the nonlinear Lagrangian (N = 2..6) "
              f"{c['matrices_vs_lagrangian']:.1e}")
        print(f"mbsim: `{info['mbsim_command']}` (whole process, best of {args.repeats} after a warm-up)"
              if args.mbsim else "mbsim: not run (--no-mbsim)")
        if python:
            print(f"Exudyn {exu_version} ({python}): models {', '.join(args.exudyn_models)}; rigid models' "
                  f"multipliers: {args.multipliers}; best of {args.repeats} after a warm-up")
        else:
            print(f"Exudyn: not run ({exu_note or '--no-exudyn'})")

    results = []
    with tempfile.TemporaryDirectory(prefix="mbsim-modes-") as tmpname:
        tmp = Path(tmpname)
        if python:  # warm-up, not timed: the interpreter, Exudyn and scipy in the file caches
            warm = tmp / "warm.json"
            warm.write_text(json.dumps(exudyn_model(chain_dict(2))))
            for kind in args.exudyn_models:
                try:
                    run_exudyn(python, warm, kind, 2, args.multipliers, False, args.exudyn_timeout)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    log(f"modes: Exudyn warm-up ({kind}) failed: {exc}")
        for n in args.sizes:
            ref = chain_frequencies(n, args.count, LENGTH, MASS, G)
            res = {"n": n, "reference": ref.tolist(),
                   "continuous": (ref / continuous_frequencies(len(ref), LENGTH, G) - 1.0).tolist()}
            if args.mbsim:
                res["mbsim"] = bench_mbsim(n, args.count, args.repeats, tmp, args.mbsim_timeout, log)
            if python:
                res["exudyn"] = {kind: bench_exudyn(python, n, kind, args, tmp, log) for kind in args.exudyn_models}
            results.append(res)
            if not args.json:
                print_block(res, args.exudyn_models if python else [], args.count)
                sys.stdout.flush()
    if args.json:
        print(json.dumps({"info": info, "checks": c, "results": results}, indent=1))
        return 0
    summary(results, args.exudyn_models if python else [])
    print("rel: max_k |f_k - f_k(reference)| / f_k(reference); eig s: ComputeODE2Eigenvalues alone; proc s: the "
          "whole process (mbsim modes; the Exudyn worker: start, import, build, multipliers, eigenvalues)")
    if python and any(k != "tree" for k in args.exudyn_models):
        print("Exudyn's rigid-body models give 0 Hz: ComputeODE2Eigenvalues leaves out the joint reactions' geometric "
              "stiffness d(C_q^T lambda)/dq; +Kgeo: that term added by hand (central differences of Exudyn's C_q^T)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
