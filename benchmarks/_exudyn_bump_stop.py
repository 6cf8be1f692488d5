#!/usr/bin/env python3
"""The Exudyn side of ``benchmarks/adaptive.py --figure``: ``scenarios/bump_stop.yaml`` in Exudyn at fixed
steps, one JSON line (the hub's height at every step, the wall time).

Run ONLY by the Python of an Exudyn virtual environment (never imported by mbsim; Exudyn is not a
dependency of mbsim)::

    /work/exu/bin/python benchmarks/_exudyn_bump_stop.py --step 1e-3 --end 1.0

The model: the 25 kg hub as an ``ObjectMassPoint`` at (0, 0, 0.3) moving down at 3 m/s, under gravity
(``LoadMassProportional``); from the ground at the origin the coil spring (k = 20 000 N/m, rest length
0.31226 m) and the damper (400 N s/m along the line) as ``ObjectConnectorSpringDamper``, and the bump stop
as a third one whose ``springForceUserFunction`` is the scenario's force curve (tension against L − 0.3 m,
as mbsim reads it: SciPy's PCHIP between its points, linear with the end slopes beyond them).  Every force acts along z, so the point moves along z
only, as the hub does on its prismatic strut in mbsim (which also keeps it from turning: the point has
no rotation).  Generalized-α with spectral radius 0.9 (mbsim's default), initial accelerations computed,
Exudyn's default Newton; the hub's height recorded by a node sensor kept in memory at every step.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

CURVE = np.array([[-0.10, -22000.0], [-0.08, -6000.0], [-0.07, -1200.0], [-0.06, 0.0], [0.50, 0.0]])


def tension_curve():
    """The force curve as mbsim reads it (docs/scenario.md): the monotone cubic of Fritsch and Carlson
    (SciPy's PchipInterpolator) between the points, linear with the end slopes beyond them."""
    from scipy.interpolate import PchipInterpolator
    p = PchipInterpolator(CURVE[:, 0], CURVE[:, 1])
    dp = p.derivative()
    x0, x1 = CURVE[0, 0], CURVE[-1, 0]

    def tension(d: float) -> float:
        if d < x0:
            return float(CURVE[0, 1] + dp(x0) * (d - x0))
        if d > x1:
            return float(CURVE[-1, 1] + dp(x1) * (d - x1))
        return float(p(d))
    return tension


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", type=float, required=True)
    ap.add_argument("--end", type=float, default=1.0)
    args = ap.parse_args(argv)
    import exudyn as exu
    from exudyn.itemInterface import (LoadMassProportional, MarkerBodyMass, MarkerBodyPosition, MarkerNodePosition,
                                      NodePoint, ObjectConnectorSpringDamper, ObjectGround, ObjectMassPoint,
                                      SensorNode)
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    ground = mbs.AddObject(ObjectGround(referencePosition=[0, 0, 0]))
    node = mbs.AddNode(NodePoint(referenceCoordinates=[0, 0, 0.3], initialVelocities=[0, 0, -3.0]))
    hub = mbs.AddObject(ObjectMassPoint(mass=25.0, nodeNumber=node))
    m_ground = mbs.AddMarker(MarkerBodyPosition(bodyNumber=ground, localPosition=[0, 0, 0]))
    m_hub = mbs.AddMarker(MarkerNodePosition(nodeNumber=node))
    mbs.AddLoad(LoadMassProportional(markerNumber=mbs.AddMarker(MarkerBodyMass(bodyNumber=hub)), loadVector=[0, 0, -9.81]))
    mbs.AddObject(ObjectConnectorSpringDamper(markerNumbers=[m_ground, m_hub], stiffness=20000.0,
                                              referenceLength=0.31226, damping=0.0))
    mbs.AddObject(ObjectConnectorSpringDamper(markerNumbers=[m_ground, m_hub], stiffness=0.0, referenceLength=0.3,
                                              damping=400.0))

    tension = tension_curve()

    def stop(mbs_, t, item, deltaL, deltaL_t, stiffness, damping, f0):
        return tension(deltaL)
    mbs.AddObject(ObjectConnectorSpringDamper(markerNumbers=[m_ground, m_hub], stiffness=0.0, referenceLength=0.3,
                                              damping=0.0, springForceUserFunction=stop))
    sensor = mbs.AddSensor(SensorNode(nodeNumber=node, storeInternal=True, writeToFile=False,
                                      outputVariableType=exu.OutputVariableType.Position))
    mbs.Assemble()
    s = exu.SimulationSettings()
    ti = s.timeIntegration
    ti.numberOfSteps = int(round(args.end / args.step))
    ti.endTime = args.end
    ti.verboseMode = 0
    ti.generalizedAlpha.spectralRadius = 0.9
    ti.generalizedAlpha.computeInitialAccelerations = True
    s.solution.file.write = False
    s.solution.sensors.writePeriod = args.step
    s.show.computationTime = False
    s.show.statistics = False
    t0 = time.perf_counter()
    ok = mbs.SolveDynamic(s)
    wall = time.perf_counter() - t0
    data = np.asarray(mbs.GetSensorStoredData(sensor))
    out = {"code": "exudyn", "version": exu.__version__, "ok": bool(ok), "step": args.step,
           "steps": ti.numberOfSteps, "wall_s": wall, "time": data[:, 0].tolist(), "z": data[:, 3].tolist()}
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
