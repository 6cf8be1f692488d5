"""The kinematics of points and axes: the state each law sees (:mod:`mbsim.elements.base`), gathered
from the bodies' state once, for every kind.

Two ways to gather (THEORY §6, §11, §12):

- :func:`at_state` -- at one physical state of the bodies (r, Λ, v, ω): the mechanism at a state, the
  frames of a run, and the kinds the generalized-α step evaluates at t_{n+1} and t_n (``interpolate =
  "forces"``, the joints).  ``d = x_B − x_A`` is formed as ``(((r_B − r_A) + z_long) + z_short) + (δ_B −
  δ_A)`` from the positions and, inside a step, the step's increments δ as the solver holds them: what
  cancels then cancels first, and far from the origin d rounds by ε times the arms and increments,
  not by ε times the distance from the origin (docs/newton.md, "Joints far from the origin").
- :func:`interpolated` -- at the α-interpolated state of a generalized-α step, for the kinds that are
  evaluated there (``interpolate = "state"``, THEORY §6): ``x_α = α_f r' + (1−α_f) r_n + z_α`` with
  ``z_α = α_f Λ'Z + (1−α_f) Λ_n Z`` (not renormalised), the points' velocities, angular velocities
  and axes interpolated the same way; an axis turns with its body as the one at t_{n+1} does
  (``X_MOVES``).

Each also writes, per instance, the arms the engine's chain rule uses (:mod:`mbsim.mechanics.chain`):
``arms[e, 0:6] = (z_A, z_B)``, the lever arms of the forces (at the state, or interpolated), and, for the
interpolated state, ``arms[e, 6:12] = (z_A', z_B')``, the arms whose rotation the unknowns' increments move
(at t_{n+1}; at a physical state they are the lever arms themselves).

The clients take the instances of a kind in chunks of :data:`CHUNK`: gathered, evaluated and used one
chunk at a time, the rows of the state stay in the processor's first-level cache however many instances
there are.
"""
from __future__ import annotations

from ..elements.base import X_AXES, X_D, X_DV, X_LAM, X_MOVES, X_TARGET, X_WA, X_WB
from ..kernels import njit
from ..kernels.vec import add, cross, dot, mix, mv, put, row, scale

CHUNK = 64  # instances gathered, evaluated and used at a time


@njit(cache=True)
def _own(el, e, i, own, x):
    """Instance e's own unknowns and the values their rows hold into x[i] (``own`` = (lam, target))."""
    first, count = el[7], el[8]
    lam, target = own
    j0 = first[e]
    for k in range(count[e]):
        x[i, X_LAM + k] = lam[j0 + k]
        x[i, X_TARGET + k] = target[j0 + k]


@njit(cache=True)
def at_state(el, kind, lo, hi, o, bodies, own, x, arms, gamma):
    """The state of the instances ``lo … hi−1`` of kind ``kind`` at one physical state into the rows ``e − o``
    of ``x`` and ``arms[:, 0:6]`` (module docstring: the lever arms are the arms the unknowns turn); ``bodies`` = (R, r, dr, v, w):
    rotation matrices, positions, the step's increments of the positions (empty (0, 3) outside a step:
    then r holds the positions themselves), velocities and angular velocities of every body (n_all, ·);
    ``own`` = (lam, target) of every own unknown.  ḋ is gathered for a kind whose values depend on it
    (it declares a derivative block with respect to it), ω_A and ω_B for one that declares a block with
    respect to either, and all three, with ``gamma``, for a constraint's γ; an axis's motion (X_MOVES) for a kind evaluated at the α-interpolated state in a step
    (which reads it)."""
    body, P = el[1], el[3]
    axes, side, n_axes = el[4], el[5], el[6]
    dv, ws = rates_of(el[9][kind])
    dv, ws = dv or gamma, ws or gamma
    moves = el[10][kind] == 0  # (mbsim.elements.base.INTERPOLATE["state"])
    R, r, dr, v, w = bodies
    steps = dr.shape[0] > 0
    for e in range(lo, hi):
        a, b = body[e, 0], body[e, 1]
        i = e - o
        ZA, ZB = row(P, e, 0), row(P, e, 3)
        zA, zB = mv(R, a, ZA), mv(R, b, ZB)
        longer, shorter = (-zA[0], -zA[1], -zA[2]), zB  # −z_A and z_B, the longer first (negation is exact)
        if dot(ZA, ZA) < dot(ZB, ZB):
            longer, shorter = zB, (-zA[0], -zA[1], -zA[2])
        if steps:
            inc = (dr[b, 0] - dr[a, 0], dr[b, 1] - dr[a, 1], dr[b, 2] - dr[a, 2])
        else:
            inc = (0.0, 0.0, 0.0)
        put(x, i, X_D, ((((r[b, 0] - r[a, 0]) + longer[0]) + shorter[0]) + inc[0],
                        (((r[b, 1] - r[a, 1]) + longer[1]) + shorter[1]) + inc[1],
                        (((r[b, 2] - r[a, 2]) + longer[2]) + shorter[2]) + inc[2]))
        if dv:
            ta, tb = cross(row(w, a, 0), zA), cross(row(w, b, 0), zB)
            put(x, i, X_DV, ((v[b, 0] + tb[0]) - (v[a, 0] + ta[0]), (v[b, 1] + tb[1]) - (v[a, 1] + ta[1]),
                             (v[b, 2] + tb[2]) - (v[a, 2] + ta[2])))
        if ws:
            put(x, i, X_WA, row(w, a, 0))
            put(x, i, X_WB, row(w, b, 0))
        for k in range(n_axes[e]):
            n = mv(R, b if side[e, k] else a, (axes[e, k, 0], axes[e, k, 1], axes[e, k, 2]))
            put(x, i, X_AXES + 3 * k, n)
            if moves:
                put(x, i, X_MOVES + 3 * k, n)
        _own(el, e, i, own, x)
        put(arms, i, 0, zA)
        put(arms, i, 3, zB)


# the bits of :func:`mbsim.elements.base.block_mask` of the blocks with respect to ḋ (p_d, p_A, p_B by
# ḋ: bits 9, 12, 15) and to ω_A or ω_B (the others from bit 9 on)
_BY_DV = (1 << 9) | (1 << 12) | (1 << 15)
_BY_W = ((1 << 18) - (1 << 9)) & ~_BY_DV


@njit(cache=True)
def rates_of(mask):
    """Which rates a kind's values depend on, (ḋ, (ω_A, ω_B)): those it declares a derivative block with
    respect to (:func:`mbsim.elements.base.block_mask`)."""
    return (mask & _BY_DV) != 0, (mask & _BY_W) != 0


@njit(cache=True)
def interpolated(el, kind, lo, hi, o, bodies, af, start, own, x, arms):
    """The state of instances ``lo … hi−1`` of kind ``kind`` at the α-interpolated state of a step into the
    rows ``e − o`` of ``x`` and ``arms`` (module docstring); ``bodies`` = (Λ', r', v', ω') at t_{n+1},
    ``start`` = (Λ_n, r_n, v_n, ω_n) at t_n, ``af`` = α_f.  ḋ and (ω_A, ω_B) only for a kind whose values
    depend on them (:func:`rates_of`); a kind without points (it acts at the centres) has zero arms.  The
    t_n halves are formed again at every iterate, from the bodies' rows (which stay in cache at any
    size), not read from a per-instance copy (which at a thousand bodies does not)."""
    body, P = el[1], el[3]
    axes, side, n_axes = el[4], el[5], el[6]
    R1, r1, v1, w1 = bodies
    Rn, rn, vn, wn = start
    bf = 1.0 - af
    dv, ws = rates_of(el[9][kind])
    points = el[11][kind] != 0
    zero = (0.0, 0.0, 0.0)
    for e in range(lo, hi):
        a, b = body[e, 0], body[e, 1]
        i = e - o
        zA1 = zB1 = zAn = zBn = zAa = zBa = zero
        if points:
            ZA, ZB = row(P, e, 0), row(P, e, 3)
            zA1, zB1 = mv(R1, a, ZA), mv(R1, b, ZB)
            zAn, zBn = mv(Rn, a, ZA), mv(Rn, b, ZB)
            zAa = mix(af, zA1, 1.0, scale(bf, zAn))
            zBa = mix(af, zB1, 1.0, scale(bf, zBn))
        rA = mix(af, row(r1, a, 0), 1.0, scale(bf, row(rn, a, 0)))
        rB = mix(af, row(r1, b, 0), 1.0, scale(bf, row(rn, b, 0)))
        xA = (rA[0] + zAa[0], rA[1] + zAa[1], rA[2] + zAa[2])
        xB = (rB[0] + zBa[0], rB[1] + zBa[1], rB[2] + zBa[2])
        put(x, i, X_D, (xB[0] - xA[0], xB[1] - xA[1], xB[2] - xA[2]))
        wA1, wB1 = row(w1, a, 0), row(w1, b, 0)
        wAn, wBn = row(wn, a, 0), row(wn, b, 0)
        if dv:
            uA = mix(af, add(row(v1, a, 0), cross(wA1, zA1)), 1.0, scale(bf, add(row(vn, a, 0), cross(wAn, zAn))))
            uB = mix(af, add(row(v1, b, 0), cross(wB1, zB1)), 1.0, scale(bf, add(row(vn, b, 0), cross(wBn, zBn))))
            put(x, i, X_DV, (uB[0] - uA[0], uB[1] - uA[1], uB[2] - uA[2]))
        if ws:
            put(x, i, X_WA, mix(af, wA1, 1.0, scale(bf, wAn)))
            put(x, i, X_WB, mix(af, wB1, 1.0, scale(bf, wBn)))
        for k in range(n_axes[e]):
            c = b if side[e, k] else a
            m = (axes[e, k, 0], axes[e, k, 1], axes[e, k, 2])
            n1 = mv(R1, c, m)
            put(x, i, X_AXES + 3 * k, mix(af, n1, 1.0, scale(bf, mv(Rn, c, m))))
            put(x, i, X_MOVES + 3 * k, n1)
        _own(el, e, i, own, x)
        put(arms, i, 0, zAa)
        put(arms, i, 3, zBa)
        put(arms, i, 6, zA1)
        put(arms, i, 9, zB1)
