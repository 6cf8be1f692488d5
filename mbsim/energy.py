"""The energy balance of a trajectory (THEORY §9): plain numpy, no model and no compiled code,
so that reading and post-processing a result imports neither."""
from __future__ import annotations

import numpy as np


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
