"""Per-frame physical quantities: connector actions, energies and momenta (THEORY §9).

Everything is evaluated at a single state (no α-interpolation), in scenario
order, as OUTPUT.md stores it.
"""
from __future__ import annotations

import numpy as np

from .model.model import Model
from .model.rotations import cross, matvec


def frame_quantities(model: Model, s) -> dict:
    """OUTPUT.md per-frame arrays of state ``s`` (an integrator State), keyed by dataset path.

    With the compiled engine the connector actions, energies and momenta come
    from one compiled call (:func:`mbsim.kernels.stepper.frame`); the numpy
    code below is the reference it is tested against.
    """
    if model.engine == "numba":
        return _frame_compiled(model, s)
    return frame_quantities_numpy(model, s)


def _state_part(model: Model, s) -> dict:
    # scenario order: a view when it is the internal order (no fixed body before a moving one)
    o = slice(0, model.n_bodies) if model.order_is_identity else model.order
    return {
        "time": s.t,
        "bodies/position": s.r[o],
        "bodies/orientation": s.q[o],
        "bodies/velocity": s.v[o],
        "bodies/angular_velocity": s.w[o],
        "bodies/acceleration": s.a[o],
        "bodies/angular_acceleration": s.al[o],
        "energy/dissipated": s.dissipated,
        "energy/external_work": s.external_work,
    }


def _frame_compiled(model: Model, s) -> dict:
    from .kernels import stepper
    args = model.__dict__.get("_frame_args")
    if args is None:  # the connector parameters in the kernel's order, built once per model
        args = model._frame_args = stepper.kind_arguments(model)
    C = model.n_connectors
    force, moment, length, out = np.empty((C, 3)), np.empty((C, 3)), np.empty(C), np.empty(9)
    stepper.frame(s.r, s.q, s.v, s.w, model.mass, model.inertia, model.gravity, *args, force, moment, length, out)
    fr = _state_part(model, s)
    fr.update({"connectors/force": force, "connectors/moment": moment, "connectors/length": length,
               "energy/kinetic": float(out[0]), "energy/potential": float(out[1]),
               "momentum/linear": out[2:5].copy(), "momentum/angular": out[5:8].copy(),
               "_finite": bool(np.isfinite(out.sum()))})
    return fr


def frame_quantities_numpy(model: Model, s) -> dict:
    """:func:`frame_quantities` with the batched numpy kernels (the reference)."""
    kin = s.kinematics()
    C = model.n_connectors
    force, moment, length = np.zeros((C, 3)), np.zeros((C, 3)), np.full(C, np.nan)
    spring_energy = 0.0
    for kind, ev in model.connector_forces(kin):
        force[kind.index] = ev.force
        moment[kind.index] = ev.moment
        length[kind.index] = ev.length
        spring_energy += float(ev.potential.sum())

    m = model.mass
    J = model.world_inertia(kin.R1)
    Jw = matvec(J, s.w)
    mv = m[:, None] * s.v
    fr = _state_part(model, s)
    fr.update({
        "connectors/force": force,
        "connectors/moment": moment,
        "connectors/length": length,
        "energy/kinetic": 0.5 * float(np.sum(mv * s.v) + np.sum(s.w * Jw)),
        "energy/potential": spring_energy - float(np.sum(m[:, None] * model.gravity * s.r)),
        "momentum/linear": mv.sum(axis=0),
        "momentum/angular": (cross(s.r, mv) + Jw).sum(axis=0),
    })
    return fr
