"""Build scenarios for tests directly from the frozen specs (no YAML involved)."""
from __future__ import annotations

import numpy as np

from mbsim.kernels.rotations import rotvec_quat
from mbsim.scenario.spec import (BodySpec, ConnectorSpec, Constant, IntegratorSpec, JointSpec, LoadSpec,
                                 OutputSpec, Scenario, TimeSpec, frozen_array as fa)


def body(name, mass=1.0, inertia=(0.01, 0.02, 0.03), position=(0, 0, 0), rotvec=(0, 0, 0),
         velocity=(0, 0, 0), angular_velocity=(0, 0, 0), fixed=False):
    J = np.diag(inertia) if np.ndim(inertia) == 1 else np.asarray(inertia, float)
    return BodySpec(name, fixed, 0.0 if fixed else float(mass), fa(J if not fixed else np.zeros((3, 3))),
                    fa(position), fa(rotvec_quat(np.asarray(rotvec, float))), fa(velocity),
                    fa(angular_velocity))


def spring(name, a, b, pa, pb, k, L0=None):
    L0 = float(np.linalg.norm(np.subtract(pb, pa))) if L0 is None else float(L0)
    return ConnectorSpec(name, "spring", a, b, points=fa([pa, pb]), stiffness=float(k), rest_length=L0)


def spring_curve(name, a, b, pa, pb, curve, L0=None):
    """A spring whose force is the curve ``[[deflection, force], …]`` (SCENARIO.md, force_curve)."""
    L0 = float(np.linalg.norm(np.subtract(pb, pa))) if L0 is None else float(L0)
    return ConnectorSpec(name, "spring", a, b, points=fa([pa, pb]), rest_length=L0,
                         params={"force_curve": np.asarray(curve, dtype=float)})


def spring_law(name, a, b, pa, pb, law, values):
    """A spring whose tension is the user law ``law`` ("module:function", found on sys.path: e.g.
    ``tests.user_laws:smooth``) with the parameters ``values`` (SCENARIO.md, law)."""
    from mbsim.elements.user_law import LawRef
    length = float(np.linalg.norm(np.subtract(pb, pa)))
    ref = LawRef(law, None, tuple(f"p{i}" for i in range(len(values))), tuple(float(v) for v in values), length)
    return ConnectorSpec(name, "spring", a, b, points=fa([pa, pb]), params={"law": ref})


def bushing(name, a, b, point, K, C=None, preload=None, axes=None):
    """A bushing at ``point`` (SCENARIO.md, bushing): K and C 6×6 (or 6 diagonal values)."""
    def six(M):
        M = np.zeros((6, 6)) if M is None else np.asarray(M, dtype=float)
        return np.diag(M) if M.ndim == 1 else M
    return ConnectorSpec(name, "bushing", a, b, points=fa([point, point]),
                         params={"bushing_axes": np.eye(3) if axes is None else np.asarray(axes, float),
                                 "bushing_stiffness": six(K), "bushing_damping": six(C),
                                 "preload": np.zeros(6) if preload is None else np.asarray(preload, float)})


def torsional_spring(name, a, b, kappa, damping=0.0, axis=None):
    """A torsional spring on the relative rotation vector, or with ``axis`` about it through full turns
    (SCENARIO.md, torsional_spring)."""
    if axis is not None:
        axis = fa(np.asarray(axis, float) / np.linalg.norm(axis))
    return ConnectorSpec(name, "torsional_spring", a, b, stiffness=float(kappa), damping=float(damping), axis=axis)


def damper(name, a, b, pa, pb, c, axial=False):
    return ConnectorSpec(name, "damper", a, b, points=fa([pa, pb]), damping=float(c),
                         params={"axial": True} if axial else {})


def torsional(name, a, b, chi, projection="P1", axis=None):
    ax = None if axis is None else fa(np.asarray(axis, float) / np.linalg.norm(axis))
    return ConnectorSpec(name, "torsional_damper", a, b, damping=float(chi), projection=projection, axis=ax)


def joint(name, kind, a, b, point=None, axis=None, axes=None, points=None, length=None, angle=None,
          displacement=None, stops=()):
    """A JointSpec as the loader makes it: axes normalised, a distance's length resolved."""
    unit = lambda v: fa(np.asarray(v, float) / np.linalg.norm(v))  # noqa: E731
    if points is not None and length is None:
        length = float(np.linalg.norm(np.subtract(points[1], points[0])))
    return JointSpec(name, kind, a, b, point=None if point is None else fa(point),
                     axis=None if axis is None else unit(axis),
                     axes=None if axes is None else fa([unit(axes[0]), unit(axes[1])]),
                     points=None if points is None else fa(points), length=length, angle=angle,
                     displacement=displacement, stops=tuple(stops))


def load(body_name, vector, kind="force", scale=None):
    return LoadSpec(kind, body_name, fa(vector), scale if scale is not None else Constant(1.0))


def scenario(bodies, connectors=(), loads=(), gravity=(0, 0, 0), end=1.0, step=1e-3, rho_inf=0.9,
             tangent="consistent", interval=None, name="test", max_iterations=25, rtol=1e-8, atol=1e-10,
             modified=None, joints=(), redundant="remove", velocities="project"):
    return Scenario(
        name=name, description="", gravity=fa(gravity), time=TimeSpec(float(end), float(step)),
        integrator=IntegratorSpec(rho_inf=rho_inf, tangent=tangent, max_iterations=max_iterations,
                                  rtol=rtol, atol=atol,
                                  modified=IntegratorSpec.modified if modified is None else modified,
                                  redundant=redundant, velocities=velocities),
        output=OutputSpec(interval=float(interval if interval is not None else step)),
        bodies=tuple(bodies), connectors=tuple(connectors), loads=tuple(loads), joints=tuple(joints))


def random_rotvec(rng, scale=1.0):
    return rng.normal(size=3) * scale


def nonlinear_3d(rho_inf=0.9, end=1.0, step=1e-3, tangent="consistent", modified=None):
    """Two spinning asymmetric bodies hanging from world: springs, dampers, torsional
    dampers with every projection, gravity and a sine torque (strongly nonlinear, 3D)."""
    from mbsim.scenario.spec import Sine
    bodies = [
        body("a", mass=1.2, inertia=(0.02, 0.03, 0.05), position=(0.3, 0.0, -1.0), rotvec=(0.2, -0.3, 0.4),
             velocity=(0.4, 0.1, 0.0), angular_velocity=(1.5, -2.0, 3.0)),
        body("b", mass=0.8, inertia=(0.01, 0.015, 0.012), position=(0.6, 0.4, -1.8), rotvec=(-0.5, 0.1, 0.2),
             velocity=(0.0, -0.3, 0.2), angular_velocity=(-2.5, 1.0, 4.0)),
    ]
    conns = [
        spring("s0", "world", "a", (0, 0, 0), (0.3, 0.05, -0.9), 300.0, 0.7),
        spring("s1", "a", "b", (0.35, 0.0, -1.1), (0.6, 0.45, -1.7), 150.0),
        damper("d0", "world", "a", (0.1, 0, 0), (0.25, 0.0, -0.95), 0.8),
        damper("d1", "a", "b", (0.3, 0.1, -1.05), (0.55, 0.4, -1.75), 0.5),
        torsional("t0", "world", "a", 0.01, "P1"),
        torsional("t1", "a", "b", 0.02, "P2", axis=(0.2, 0.3, 1.0)),
        torsional("t2", "a", "b", 0.015, "P3", axis=(1.0, -0.4, 0.3)),
    ]
    loads = [load("b", (0.0, 0.05, 0.02), "torque", Sine(1.0, 1.3, 0.2, 0.5))]
    return scenario(bodies, conns, loads, gravity=(0, 0, -9.81), end=end, step=step, rho_inf=rho_inf,
                    tangent=tangent, interval=step, name="nonlinear3d", modified=modified)


def run_text(folder, name: str, text: str):
    """``mbsim run`` of the scenario ``text`` (dedented) written to ``folder/name.yaml``: the result's path."""
    import textwrap

    from mbsim.cli import main
    scen, out = folder / f"{name}.yaml", folder / f"{name}.h5"
    scen.write_text(textwrap.dedent(text))
    assert main(["run", str(scen), "-o", str(out), "--quiet"]) == 0
    return out


# A fixed base, a bob with a full (non-diagonal) inertia hanging from world, a tip on the bob: every
# connector type, world and a declared fixed body; 11 frames (t = 0, 0.02, …, 0.2).  mbsim export's and
# the plots' tests run it (every_connector).
_EVERY_CONNECTOR = """\
mbsim: 1
name: DEMO
gravity: [0, 0, -9.81]
time: {end: 0.2, step: 0.01}
output: {interval: 0.02}
bodies:
  - {name: base, fixed: true, position: [0.5, 0, 0]}
  - name: bob
    mass: 2.0
    inertia: [[0.05, 0.01, 0], [0.01, 0.04, 0], [0, 0, 0.03]]
    position: [0, 0, -1]
    orientation: {axis_angle: {axis: [0, 1, 0], angle: 0.4}}
    velocity: [0.5, 0, 0]
    angular_velocity: [0, 1.0, 2.0]
  - name: tip
    mass: 0.5
    inertia: [0.002, 0.003, 0.004]
    position: [0.3, 0.1, -1.6]
    angular_velocity: [1, 0, 0]
connectors:
  - {name: hanger, type: spring, bodies: [world, bob], points: [[0, 0, 0], [0.05, 0, -0.9]],
     stiffness: 300.0, rest_length: 0.8}
  - {name: side, type: damper, bodies: [base, bob], points: [[0.5, 0, 0], [0.1, 0, -0.95]], damping: 2.0}
  - {name: link, type: spring, bodies: [bob, tip], points: [[0, 0.05, -1.1], [0.3, 0.1, -1.5]], stiffness: 100.0}
  - {name: elbow, type: torsional_damper, bodies: [bob, tip], damping: 0.01, joint: revolute, axis: [0, 1, 0]}
"""


def every_connector(name: str) -> str:
    """The scenario text of the model above, named ``name``."""
    return _EVERY_CONNECTOR.replace("name: DEMO\n", f"name: {name}\n", 1)
