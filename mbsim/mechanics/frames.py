"""A frame of a run: the quantities of one state (THEORY §9) in the one layout of a frame.

OUTPUT.md stores, per frame, the bodies' state in scenario order, the connectors' and joints' actions,
energies and momenta.  The compiled step loop writes frames into the buffers laid out here
(:data:`BUFFERS`, :func:`buffers`) with :func:`frame_row`, the same code :func:`quantities` runs on
one state; :func:`datasets` turns buffer rows into OUTPUT.md datasets for both.  Everything is
evaluated at the state itself (no α-interpolation).
"""
from __future__ import annotations

import numpy as np

from ..elements.base import VALUES
from ..kernels import njit
from ..kernels.so3 import matrices
from ..kernels.vec import mtv, mv, row
from . import evaluate

# The frame buffers, in the order the compiled code takes them: OUTPUT.md datasets (scenario body,
# connector and joint order), then "scalars" = per frame [kinetic, potential, dissipated, external work,
# linear momentum (3), angular momentum (3)]; "joints/errors" = per joint [position error, angle error].
BUFFERS = ("bodies/position", "bodies/orientation", "bodies/velocity", "bodies/angular_velocity",
           "bodies/acceleration", "bodies/angular_acceleration", "connectors/force", "connectors/moment",
           "connectors/length", "joints/force", "joints/moment", "joints/errors", "scalars")
SCALARS = {"energy/kinetic": 0, "energy/potential": 1, "energy/dissipated": 2, "energy/external_work": 3,
           "momentum/linear": slice(4, 7), "momentum/angular": slice(7, 10)}
N_SCALARS = 10


def buffers(n_bodies: int, n_connectors: int, capacity: int, n_joints: int = 0) -> dict:
    """Empty frame buffers for ``capacity`` frames (see :data:`BUFFERS`)."""
    B, C, K, J = n_bodies, n_connectors, capacity, n_joints
    shapes = {"bodies/orientation": (K, B, 4), "connectors/force": (K, C, 3), "connectors/moment": (K, C, 3),
              "connectors/length": (K, C), "joints/force": (K, J, 3), "joints/moment": (K, J, 3),
              "joints/errors": (K, J, 2), "scalars": (K, N_SCALARS)}
    return {k: np.empty(shapes.get(k, (K, B, 3))) for k in BUFFERS}


def datasets(bufs: dict, m: int, times) -> dict:
    """The first ``m`` rows of the frame buffers as OUTPUT.md datasets (views), with ``time``."""
    sc = bufs["scalars"][:m]
    fr = {"time": times}
    joints = bufs["joints/force"].shape[1] > 0  # (the /joints group exists only when there are joints)
    fr.update({k: bufs[k][:m] for k in BUFFERS
               if k != "scalars" and (joints or not k.startswith("joints/")) and k != "joints/errors"})
    fr.update({k: sc[:, j] for k, j in SCALARS.items()})
    if joints:
        err = bufs["joints/errors"][:m]
        fr["joints/position_error"], fr["joints/angle_error"] = err[..., 0], err[..., 1]
    return fr


@njit(cache=True)
def frame_row(bodies, state, own, el, elx, work, bufs, f):
    """Row ``f`` of the frame buffers ``bufs`` (:data:`BUFFERS`, as a tuple) from one state; returns False
    if the element actions, energies or momenta are not finite (the row is written all the same).

    ``bodies`` = (mass, J_b, gravity, order): ``order[j]`` the internal index of scenario body j;
    ``state`` = (r, q, v, w, a, α, energy): ``energy`` = [dissipated, external work, …]; ``own`` = (λ,
    target, t): the elements' own unknowns at the state, the values their rows hold and the time;
    ``work`` = (R (n_all, 3, 3), x, y, dy, arms, kinds (n_kinds,) ones, out (9,), nodr (0, 3))."""
    mass, Jb, gravity, order = bodies
    r, q, v, w, a, al, energy = state
    lam, target, t = own
    R, x, y, dy, arms, kinds, out, nodr = work
    f_r, f_q, f_v, f_w, f_a, f_al, f_force, f_moment, f_length, f_jforce, f_jmoment, f_jerror, f_scalars = bufs
    matrices(q, R)
    evaluate.at_state(el, (R, r, nodr, v, w), (lam, target), t, VALUES, (x, y, dy, arms), kinds)
    spring_energy, _ = evaluate.outputs(el, elx, y, x, (f_force[f], f_moment[f], f_length[f], f_jforce[f],
                                                         f_jmoment[f], f_jerror[f]))
    kinetic, grav = 0.0, 0.0
    for j in range(2, 8):
        out[j] = 0.0
    for i in range(r.shape[0]):
        mi = mass[i]
        W = mtv(R, i, row(w, i, 0))  # J ω = Λ J_b Λᵀ ω
        Jw = mv(R, i, mv(Jb, i, W))
        for j in range(3):
            kinetic += 0.5 * (mi * v[i, j] * v[i, j] + w[i, j] * Jw[j])
            grav += mi * gravity[j] * r[i, j]
            out[2 + j] += mi * v[i, j]
        out[5] += (r[i, 1] * mi * v[i, 2] - r[i, 2] * mi * v[i, 1]) + Jw[0]
        out[6] += (r[i, 2] * mi * v[i, 0] - r[i, 0] * mi * v[i, 2]) + Jw[1]
        out[7] += (r[i, 0] * mi * v[i, 1] - r[i, 1] * mi * v[i, 0]) + Jw[2]
    out[0] = kinetic
    out[1] = spring_energy - grav
    total = 0.0
    force, moment, length = f_force[f], f_moment[f], f_length[f]
    for c in range(force.shape[0]):
        for j in range(3):
            total += force[c, j] + moment[c, j]
    jf, jm = f_jforce[f], f_jmoment[f]
    for c in range(jf.shape[0]):
        for j in range(3):
            total += jf[c, j] + jm[c, j]
    for c in range(length.shape[0]):  # NaN by design for torsional dampers; inf never
        if np.isinf(length[c]):
            total += np.inf
    out[8] = total
    for j in range(order.shape[0]):
        i = order[j]
        for c in range(3):
            f_r[f, j, c] = r[i, c]
            f_v[f, j, c] = v[i, c]
            f_w[f, j, c] = w[i, c]
            f_a[f, j, c] = a[i, c]
            f_al[f, j, c] = al[i, c]
        for c in range(4):
            f_q[f, j, c] = q[i, c]
    f_scalars[f, 0] = out[0]
    f_scalars[f, 1] = out[1]
    f_scalars[f, 2] = energy[0]
    f_scalars[f, 3] = energy[1]
    for c in range(6):
        f_scalars[f, 4 + c] = out[2 + c]
    for j in range(9):
        if not np.isfinite(out[j]):
            return False
    return True
