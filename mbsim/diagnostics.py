"""Per-frame physical quantities -- connector actions, energies and momenta (THEORY §9) -- and the
one layout of a frame.

Everything is evaluated at a single state (no α-interpolation), in scenario
order, as OUTPUT.md stores it.  The compiled step loop writes frames into
buffers laid out here (:data:`FRAME_BUFFER_KEYS`, :func:`frame_buffers`) with
its own frame code (:func:`mbsim.kernels.stepper._frame_row`);
:func:`frame_quantities` runs the same code on one state, and
:func:`frames_from_buffers` turns buffer rows into OUTPUT.md datasets for
both.  tests/unit/test_model.py holds the quantities to the independent
reference solver.
"""
from __future__ import annotations

import numpy as np

from .model.model import Model

# The frame buffers, in the compiled kernels' argument order: OUTPUT.md datasets (scenario body and
# connector order), then "scalars" = per frame [kinetic, potential, dissipated, external work,
# linear momentum (3), angular momentum (3)]; "joints/errors" = per joint [position error, angle error].
FRAME_BUFFER_KEYS = ("bodies/position", "bodies/orientation", "bodies/velocity", "bodies/angular_velocity",
                     "bodies/acceleration", "bodies/angular_acceleration", "connectors/force", "connectors/moment",
                     "connectors/length", "joints/force", "joints/moment", "joints/errors", "scalars")
_SCALARS = {"energy/kinetic": 0, "energy/potential": 1, "energy/dissipated": 2, "energy/external_work": 3,
            "momentum/linear": slice(4, 7), "momentum/angular": slice(7, 10)}


def frame_buffers(n_bodies: int, n_connectors: int, capacity: int, n_joints: int = 0) -> dict:
    """Empty frame buffers for ``capacity`` frames (see :data:`FRAME_BUFFER_KEYS`)."""
    B, C, K, J = n_bodies, n_connectors, capacity, n_joints
    shapes = {"bodies/orientation": (K, B, 4), "connectors/force": (K, C, 3), "connectors/moment": (K, C, 3),
              "connectors/length": (K, C), "joints/force": (K, J, 3), "joints/moment": (K, J, 3),
              "joints/errors": (K, J, 2), "scalars": (K, 10)}
    return {k: np.empty(shapes.get(k, (K, B, 3))) for k in FRAME_BUFFER_KEYS}


def frames_from_buffers(buffers: dict, m: int, times) -> dict:
    """The first ``m`` rows of the frame buffers as OUTPUT.md datasets (views), with ``time``."""
    sc = buffers["scalars"][:m]
    fr = {"time": times}
    joints = buffers["joints/force"].shape[1] > 0  # (the /joints group exists only when there are joints)
    fr.update({k: buffers[k][:m] for k in FRAME_BUFFER_KEYS
               if k != "scalars" and (joints or not k.startswith("joints/")) and k != "joints/errors"})
    fr.update({k: sc[:, j] for k, j in _SCALARS.items()})
    if joints:
        err = buffers["joints/errors"][:m]
        fr["joints/position_error"], fr["joints/angle_error"] = err[..., 0], err[..., 1]
    return fr


def frame_quantities(model: Model, s) -> dict:
    """OUTPUT.md per-frame arrays of state ``s`` (an integrator State), keyed by dataset path, from the
    compiled loop's own frame code (:func:`mbsim.kernels.stepper.frame`); ``_finite`` says whether the
    connector actions, energies and momenta are finite."""
    from .kernels import stepper
    args = model.__dict__.get("_frame_args")
    if args is None:  # the packed elements in the kernel's order, built once per model
        o = model.order
        args = model._frame_args = (stepper.element_arguments(model), o if o.dtype == np.int64 else o.astype(np.int64))
    elements, order = args
    buffers = frame_buffers(model.n_bodies, model.n_connectors, 1, model.n_joints)
    lam = s.lam if s.lam is not None else np.zeros(model.elements.n_unknowns)
    finite = stepper.frame(s.r, s.q, s.v, s.w, s.a, s.al, np.array([s.dissipated, s.external_work]), lam,
                           model.targets([s.t])[0, 0], model.mass,
                           model.inertia, model.gravity, *elements, order, *(buffers[k] for k in FRAME_BUFFER_KEYS))
    fr = {k: v[0] for k, v in frames_from_buffers(buffers, 1, None).items() if k != "time"}
    fr["time"] = s.t
    fr = {k: float(v) if np.ndim(v) == 0 else v for k, v in fr.items()}
    fr["_finite"] = bool(finite)
    return fr
