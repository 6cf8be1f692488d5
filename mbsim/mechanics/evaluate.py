"""Every element at one physical state of the bodies: the gather, the laws, and the per-instance results
the clients read (the frames of a run, the constrained equations, the mechanism at a state).

``el`` is the packed description (:meth:`mbsim.elements.base.Elements.arrays`); ``work`` = (x, y, dy,
arms) the arrays the gather and the laws write (:func:`work`).
"""
from __future__ import annotations

import numpy as np

from ..elements.base import GAMMA, N_DY, N_X, N_Y, Y_P, Y_PHI, Y_POTENTIAL, Y_POWER
from ..kernels import njit
from . import gather
from .laws import law

STATE, FORCES = 0, 1  # mbsim.elements.base.INTERPOLATE


def work(n: int) -> tuple:
    """The arrays of an evaluation of ``n`` instances: (x, y, dy, arms)."""
    return (np.zeros((n, N_X)), np.zeros((n, N_Y)), np.zeros((n, N_DY)), np.zeros((n, 12)))


@njit(cache=True)
def at_state(el, bodies, own, t, want, work, kinds):
    """Gather and evaluate the instances of every kind whose flag in ``kinds`` (n_kinds,) is set, at the
    state ``bodies`` = (R, r, dr, v, w) (see :func:`mbsim.mechanics.gather.at_state`) and time ``t``,
    with ``own`` = (lam, target); ``want``: the law's bits.  Returns the first instance a law finds
    undefined, or −1."""
    start, data = el[0], el[2]
    x, y, dy, arms = work
    failed = -1
    for kind in range(start.shape[0] - 1):
        if not kinds[kind]:
            continue
        for lo in range(start[kind], start[kind + 1], gather.CHUNK):
            hi = min(lo + gather.CHUNK, start[kind + 1])
            gather.at_state(el, kind, lo, hi, 0, bodies, own, x, arms, (want & GAMMA) != 0)
            f = law(kind, lo, hi, data, x, t, want, y, dy)
            if f >= 0 and failed < 0:
                failed = f
    return failed


@njit(cache=True)
def outputs(el, elx, y, x, out):
    """The frame quantities of every instance from an evaluation (:func:`at_state`), in scenario order
    (OUTPUT.md): ``out`` = (force (C, 3), moment (C, 3), length (C,), j_force (J, 3), j_moment (J, 3),
    j_error (J, 2)).  A connector's force on A (−p_d), its pure moment on A (p_A) and the distance
    between its points (NaN for a kind without points); a joint's force on A and moment on A about its
    point (the same), and the norms of its translational and rotational rows Φ.  Returns (stored energy,
    dissipated power) of the connectors, summed kind by kind."""
    start, first, count, kind_points = el[0], el[7], el[8], el[11]
    index, joint, rotation = elx[0], elx[1], elx[5]
    force, moment, length, j_force, j_moment, j_error = out
    energy, power = 0.0, 0.0
    for kind in range(start.shape[0] - 1):
        points = kind_points[kind] != 0
        for e in range(start[kind], start[kind + 1]):
            c = index[e]
            if joint[e]:
                et, er = 0.0, 0.0
                for i in range(count[e]):
                    phi = y[e, Y_PHI + i]
                    if rotation[first[e] + i]:
                        er += phi * phi
                    else:
                        et += phi * phi
                for j in range(3):
                    j_force[c, j] = 0.0 - y[e, Y_P + j]  # (a zero is +0)
                    j_moment[c, j] = y[e, Y_P + 3 + j]
                j_error[c, 0] = np.sqrt(et)
                j_error[c, 1] = np.sqrt(er)
                energy += y[e, Y_POTENTIAL]  # a joint's stops (THEORY §13)
                power += y[e, Y_POWER]
                continue
            for j in range(3):
                force[c, j] = 0.0 - y[e, Y_P + j]
                moment[c, j] = y[e, Y_P + 3 + j]
            if points:
                length[c] = np.sqrt(x[e, 0] * x[e, 0] + x[e, 1] * x[e, 1] + x[e, 2] * x[e, 2])
            else:
                length[c] = np.nan
            energy += y[e, Y_POTENTIAL]
            power += y[e, Y_POWER]
    return energy, power
