"""The scenario's time functions (SCENARIO.md: constant, ramp, smooth_ramp, sine, table) at any time inside
compiled code: the loads and the drives' targets of a step whose times are not known in advance (the
error-controlled loop, docs/stepping.md).  Each evaluates as its class in :mod:`mbsim.scenario.spec` does
(its ``__call__`` and ``derivative``), operation for operation.

The functions come packed (:meth:`mbsim.model.model.Model.time_functions`) as ``fns = (kind (nf,),
params (nf, 4), start (nf,), count (nf,), table_t (K,), table_v (K,))``: a constant's value; a ramp's and
a smooth ramp's t0, t1, from, to; a sine's amplitude, frequency, phase, offset; a table's rows
``table_t[start:start+count]``, ``table_v[…]``.
"""
from __future__ import annotations

import math

import numpy as np

from . import njit

CONSTANT, RAMP, SMOOTH_RAMP, SINE, TABLE = 0, 1, 2, 3, 4


@njit(cache=True)
def value(fns, i, t, order):
    """d^order s_i/dt^order at t (order 0, 1 or 2) of packed time function ``i``."""
    kind, p = fns[0][i], fns[1][i]
    if kind == CONSTANT:
        return p[0] if order == 0 else 0.0
    if kind == RAMP:
        t0, t1, u, w = p[0], p[1], p[2], p[3]
        if order == 0:
            s = min(max((t - t0) / (t1 - t0), 0.0), 1.0)
            return u + (w - u) * s
        if order == 2:
            return 0.0
        return (w - u) / (t1 - t0) if (t > t0 and t <= t1) else 0.0
    if kind == SMOOTH_RAMP:
        t0, t1, u, w = p[0], p[1], p[2], p[3]
        h = t1 - t0
        tau = min(max((t - t0) / h, 0.0), 1.0)
        if order == 0:
            return u + (w - u) * (tau ** 3 * (10.0 - 15.0 * tau + 6.0 * tau * tau))
        if order == 1:
            return (w - u) * (30.0 * tau ** 2 * (1.0 - tau) ** 2 / h)
        return (w - u) * (60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau) / (h * h))
    if kind == SINE:
        amp, f, ph, off = p[0], p[1], p[2], p[3]
        if order == 0:
            return off + amp * math.sin(2.0 * math.pi * f * t + ph)
        w_ = 2.0 * math.pi * f
        x = w_ * t + ph
        if order == 1:
            return amp * w_ * math.cos(x)
        return -amp * w_ * w_ * math.sin(x)
    # a table: linear between its rows, held outside (np.interp); the slope of the segment (t_k, t_k+1]
    start, count = fns[2][i], fns[3][i]
    tt, tv = fns[4][start:start + count], fns[5][start:start + count]
    if order == 2:
        return 0.0
    if order == 0:
        if t <= tt[0]:
            return tv[0]
        if t >= tt[count - 1]:
            return tv[count - 1]
    seg = np.searchsorted(tt, t) - 1  # (side left: t in (tt[seg], tt[seg + 1]])
    if order == 1:
        if seg < 0 or seg >= count - 1:
            return 0.0
        return (tv[seg + 1] - tv[seg]) / (tt[seg + 1] - tt[seg])
    if tt[seg + 1] == t:
        return tv[seg + 1]
    return tv[seg] + (t - tt[seg]) * ((tv[seg + 1] - tv[seg]) / (tt[seg + 1] - tt[seg]))


@njit(cache=True)
def loads_at(t, fns, loads, mass, gravity, out):
    """The external forces and moments at ``t`` (:meth:`mbsim.model.model.Model.external`): ``loads`` =
    (body (nl,), vector (nl, 3), is_torque (nl,), fn (nl,)); ``out`` = (F, M, F_loads, M_loads), each
    (n_all, 3): totals (gravity m·g in F) and the loads alone."""
    body, vector, torque, fn = loads
    F, M, FL, ML = out
    FL[:] = 0.0
    ML[:] = 0.0
    for i in range(body.shape[0]):
        s = value(fns, fn[i], t, 0)
        b = body[i]
        for k in range(3):
            if torque[i]:
                ML[b, k] += s * vector[i, k]
            else:
                FL[b, k] += s * vector[i, k]
    for b in range(F.shape[0]):
        for k in range(3):
            F[b, k] = FL[b, k] + mass[b] * gravity[k]
            M[b, k] = ML[b, k]


@njit(cache=True)
def targets_at(t, fns, drive, out):
    """The values the own rows hold at ``t`` (:meth:`mbsim.model.model.Model.targets`): ``out`` (3,
    n_own) ← the drives' F, Ḟ, F̈ (``drive[j]``: its function, −1 for a row without a drive: 0)."""
    for j in range(drive.shape[0]):
        for order in range(3):
            out[order, j] = value(fns, drive[j], t, order) if drive[j] >= 0 else 0.0
