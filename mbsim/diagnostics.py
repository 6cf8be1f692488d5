"""Per-frame physical quantities: connector actions, energies and momenta (THEORY §9).

Everything is evaluated at a single state (no α-interpolation), in scenario
order, as OUTPUT.md stores it.
"""
from __future__ import annotations

import numpy as np

from .model.model import Model
from .model.rotations import cross, matvec


def frame_quantities(model: Model, s) -> dict:
    """OUTPUT.md per-frame arrays of state ``s`` (an integrator State), keyed by dataset path."""
    o = model.order
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
    return {
        "time": s.t,
        "bodies/position": s.r[o],
        "bodies/orientation": s.q[o],
        "bodies/velocity": s.v[o],
        "bodies/angular_velocity": s.w[o],
        "bodies/acceleration": s.a[o],
        "bodies/angular_acceleration": s.al[o],
        "connectors/force": force,
        "connectors/moment": moment,
        "connectors/length": length,
        "energy/kinetic": 0.5 * float(np.sum(mv * s.v) + np.sum(s.w * Jw)),
        "energy/potential": spring_energy - float(np.sum(m[:, None] * model.gravity * s.r)),
        "energy/dissipated": s.dissipated,
        "energy/external_work": s.external_work,
        "momentum/linear": mv.sum(axis=0),
        "momentum/angular": (cross(s.r, mv) + Jw).sum(axis=0),
    }


def energy_balance(kinetic, potential, dissipated, external_work):
    """``kinetic + potential + dissipated − external`` (constant for the exact motion, THEORY §9)."""
    return np.asarray(kinetic) + np.asarray(potential) + np.asarray(dissipated) - np.asarray(external_work)


def energy_drift(kinetic, potential, dissipated, external_work) -> tuple[float, float]:
    """Largest departure of the energy balance from its initial value, absolute [J] and
    relative to the largest energy magnitude seen (kinetic, potential or work)."""
    bal = energy_balance(kinetic, potential, dissipated, external_work)
    if len(bal) == 0:
        return 0.0, 0.0
    drift = float(np.max(np.abs(bal - bal[0])))
    scale = max(float(np.max(np.abs(kinetic))), float(np.max(np.abs(np.asarray(potential) - potential[0]))),
                float(np.max(np.abs(dissipated))), float(np.max(np.abs(external_work))), 0.0)
    return drift, (drift / scale if scale > 0 else 0.0)
