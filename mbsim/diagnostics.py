"""Per-frame physical quantities: connector actions, energies and momenta (THEORY §9).

Everything is evaluated at a single state (no α-interpolation), in scenario
order, as OUTPUT.md stores it.  tests/unit/test_model.py holds them to
independent numpy formulas.
"""
from __future__ import annotations

import numpy as np

from .model.model import Model


def frame_quantities(model: Model, s) -> dict:
    """OUTPUT.md per-frame arrays of state ``s`` (an integrator State), keyed by dataset path: the
    element actions, energies and momenta from one compiled call (:func:`mbsim.kernels.stepper.frame`)."""
    from .kernels import stepper
    args = model.__dict__.get("_frame_args")
    if args is None:  # the packed elements in the kernel's order, built once per model
        args = model._frame_args = stepper.element_arguments(model)
    C = model.n_connectors
    force, moment, length, out = np.empty((C, 3)), np.empty((C, 3)), np.empty(C), np.empty(9)
    stepper.frame(s.r, s.q, s.v, s.w, model.mass, model.inertia, model.gravity, *args, force, moment, length, out)
    fr = _state_part(model, s)
    fr.update({"connectors/force": force, "connectors/moment": moment, "connectors/length": length,
               "energy/kinetic": float(out[0]), "energy/potential": float(out[1]),
               "momentum/linear": out[2:5].copy(), "momentum/angular": out[5:8].copy(),
               "_finite": bool(np.isfinite(out.sum()))})
    return fr


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
