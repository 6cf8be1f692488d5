"""What a force element written outside mbsim gets, in a fresh process (tests/fresh.py, which imports numba
before mbsim and loads a scenario before it calls :func:`register_kind`: what a plug-in's user does; its
numba cache is its own, as registering a kind changes the compiled switch from kind id to law).  Then
:func:`checks`, through the public API only:

- the example (tests/plugin/hardening.yaml) runs compiled, the kind's law and the step loop included;
- a one-dimensional Duffing oscillator on it, against SciPy's solution of m ẍ = −(k s + k₃ s³) written
  here, at Δt and Δt/2 (the error divided by about 4);
- ``mbsim.verify`` of the example against the reference solver (which evaluates the kind's law at its own
  kinematics): second order;
- the kind's stiffness through the mechanism at a state (Mechanism.evaluate) against central differences
  of its forces;
- the tools: ``mbsim animate`` draws it as a line between its points (its ``draw`` trait), ``mbsim plot``
  shows it among the forces (its ``outputs``), the VTK export and ``mbsim info`` list it.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def register_kind():
    """Register the hardening spring (before the first simulation of the process)."""
    from mbsim.elements import register
    from tests.plugin.hardening_spring import HardeningSpring
    register(HardeningSpring)


def checks() -> dict:
    """The figures tests/integration/test_plugin.py asserts on."""
    import mbsim
    from mbsim.scenario import load_scenario, scenario_from_dict
    from tests.plugin.hardening_spring import HardeningSpring

    out = {}
    tmp = Path(tempfile.mkdtemp(prefix="mbsim-plugin-"))
    example = ROOT / "tests" / "plugin" / "hardening.yaml"
    sc = load_scenario(str(example))

    # -- the example, compiled, written to a file -----------------------------------------------------------
    res = mbsim.simulate(sc, output=str(tmp / "hardening.h5"))
    from mbsim.integrators import step

    out["status"] = res.status
    out["compiled"] = {"law": len(HardeningSpring.law.dispatcher.signatures) > 0,
                       "step loop": len(step.run.dispatcher.signatures) > 0}
    drift = res.energy.drift
    out["energy drift relative"] = float(abs(np.asarray(drift)).max() / max(abs(res["energy/kinetic"]).max(), 1e-300))

    # -- a Duffing oscillator against SciPy -------------------------------------------------------------------
    M, K, K3, L0, X0 = 2.0, 400.0, 20000.0, 1.0, 1.3
    duffing = {"mbsim": 1, "name": "duffing", "gravity": [0, 0, 0], "time": {"end": 0.5, "step": 0.002},
               "bodies": [{"name": "block", "mass": M, "inertia": [0.02, 0.02, 0.02], "position": [X0, 0, 0]}],
               "connectors": [{"name": "d", "type": "hardening_spring", "bodies": ["world", "block"],
                               "points": [[0, 0, 0], [X0, 0, 0]], "stiffness": K, "cubic": K3, "rest_length": L0}]}
    from scipy.integrate import solve_ivp

    exact = solve_ivp(lambda t, u: [u[1], -(K * (u[0] - L0) + K3 * (u[0] - L0) ** 3) / M], (0.0, 0.5), [X0, 0.0],
                      method="DOP853", rtol=1e-13, atol=1e-14, dense_output=True)
    errors = []
    for dt in (0.002, 0.001, 0.0005):
        duffing["time"]["step"] = dt
        r = mbsim.simulate(scenario_from_dict(duffing))
        t, x = np.asarray(r["time"]), np.asarray(r["bodies/position"])[:, 0, 0]
        errors.append(float(np.abs(x - exact.sol(t)[0]).max()))
    out["duffing errors"] = errors

    # -- mbsim verify: the reference solver evaluates the kind through its law ------------------------------
    from mbsim.verify import verify

    rep = verify(sc, end=0.4)
    out["verify"] = {"passed": bool(rep.passed), "orders": {q.name: [float(o) for o in q.orders if o is not None]
                                                            for q in rep.quantities}}

    # -- the mechanism at a state: its stiffness against central differences ------------------------------
    from mbsim.mechanics import Mechanism
    from mbsim.model.model import Model
    from tests.unit.test_mechanics import _fd, _inertia, _inertial_stiffness, _random_state

    mech = Mechanism(Model(sc))
    s = _random_state(mech, np.random.default_rng(3))
    ev = mech.evaluate(s, derivatives=True)
    nm = mech.model.n_moving
    K_el = ev.K.toarray() - _inertial_stiffness(_inertia(mech, s), s.w[:nm], np.zeros((nm, 3)))
    K_fd = _fd(mech, s, lambda e: e.constraint - e.f)
    out["stiffness error"] = float(np.abs(K_el - K_fd).max() / np.abs(K_fd).max())

    # -- the tools, through the kind's traits -------------------------------------------------------------
    from mbsim.io.reader import read_summary, read_trajectory
    from mbsim.viz.animate import Scene
    from mbsim.viz.plot import plot_forces

    traj = read_trajectory(str(tmp / "hardening.h5"))
    scene = Scene(traj, size=(400, 300))
    last = len(scene.time) - 1
    scene.update(last)
    seg = scene.line_segments(last)
    out["animate"] = {"lines": [int(i) for i in scene.lines], "springs": [int(i) for i in scene.springs],
                      "segment length": float(np.linalg.norm(seg[0, 1] - seg[0, 0])),
                      "stored length": float(traj["connectors/length"][last, 0]),
                      "key": [t.get_text() for t in scene.fig.legends[0].get_texts()]}
    fig = plot_forces(traj)
    out["plot"] = sorted(line.get_label() for ax in fig.axes if ax.get_title(loc="left") == "Connector forces"
                         for line in ax.get_lines())
    from mbsim.cli import main

    out["vtk exit"] = main(["export", str(tmp / "hardening.h5"), "--vtk", str(tmp / "vtk"), "--quiet"])
    out["info"] = read_summary(str(tmp / "hardening.h5"))["connectors"]
    return out
