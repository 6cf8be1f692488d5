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
from ..kernels.vec import cross, dot, mv, put, row

CHUNK = 32  # instances gathered, evaluated and used at a time


@njit(cache=True)
def _own(el, e, own, x):
    """The instance's own unknowns and the values their rows hold into x[e] (``own`` = (lam, target))."""
    first, count = el[7], el[8]
    lam, target = own
    j0 = first[e]
    for i in range(count[e]):
        x[e, X_LAM + i] = lam[j0 + i]
        x[e, X_TARGET + i] = target[j0 + i]


@njit(cache=True)
def at_state(el, kind, lo, hi, bodies, own, x, arms, gamma):
    """The state of the instances ``lo … hi−1`` of kind ``kind`` at one physical state into ``x`` and ``arms[:, 0:6]``
    (module docstring: the lever arms are the arms the unknowns turn); ``bodies`` = (R, r, dr, v, w):
    rotation matrices, positions, the step's increments of the positions (empty (0, 3) outside a step:
    then r holds the positions themselves), velocities and angular velocities of every body (n_all, ·);
    ``own`` = (lam, target) of every own unknown.  ḋ, ω_A and ω_B are gathered for a kind whose values
    depend on them (it declares a derivative block with respect to them) and, with ``gamma``, for a
    constraint's γ; an axis's motion (X_MOVES) for a kind evaluated at the α-interpolated state in a step
    (which reads it)."""
    body, P = el[1], el[3]
    axes, side, n_axes = el[4], el[5], el[6]
    rates = gamma or rates_of(el[9][kind])
    moves = el[10][kind] == 0  # (mbsim.elements.base.INTERPOLATE["state"])
    R, r, dr, v, w = bodies
    steps = dr.shape[0] > 0
    for e in range(lo, hi):
        a, b = body[e, 0], body[e, 1]
        ZA, ZB = row(P, e, 0), row(P, e, 3)
        zA, zB = mv(R, a, ZA), mv(R, b, ZB)
        longer, shorter = (-zA[0], -zA[1], -zA[2]), zB  # −z_A and z_B, the longer first (negation is exact)
        if dot(ZA, ZA) < dot(ZB, ZB):
            longer, shorter = zB, (-zA[0], -zA[1], -zA[2])
        if steps:
            inc = (dr[b, 0] - dr[a, 0], dr[b, 1] - dr[a, 1], dr[b, 2] - dr[a, 2])
        else:
            inc = (0.0, 0.0, 0.0)
        put(x, e, X_D, ((((r[b, 0] - r[a, 0]) + longer[0]) + shorter[0]) + inc[0],
                        (((r[b, 1] - r[a, 1]) + longer[1]) + shorter[1]) + inc[1],
                        (((r[b, 2] - r[a, 2]) + longer[2]) + shorter[2]) + inc[2]))
        if rates:
            wa, wb = row(w, a, 0), row(w, b, 0)
            ta, tb = cross(wa, zA), cross(wb, zB)
            put(x, e, X_DV, ((v[b, 0] + tb[0]) - (v[a, 0] + ta[0]), (v[b, 1] + tb[1]) - (v[a, 1] + ta[1]),
                             (v[b, 2] + tb[2]) - (v[a, 2] + ta[2])))
            put(x, e, X_WA, wa)
            put(x, e, X_WB, wb)
        for k in range(n_axes[e]):
            n = mv(R, b if side[e, k] else a, (axes[e, k, 0], axes[e, k, 1], axes[e, k, 2]))
            put(x, e, X_AXES + 3 * k, n)
            if moves:
                put(x, e, X_MOVES + 3 * k, n)
        _own(el, e, own, x)
        put(arms, e, 0, zA)
        put(arms, e, 3, zB)


@njit(cache=True)
def rates_of(mask):
    """Whether a kind's values depend on the rates (ḋ, ω_A, ω_B): a derivative block with respect to them
    declared (:func:`mbsim.elements.base.block_mask`)."""
    return (mask >> 9) != 0


@njit(cache=True)
def interpolated(el, lo, hi, bodies, af, own, x, arms):
    """The state of instances ``lo … hi−1`` at the α-interpolated state of a step (module docstring);
    ``bodies`` = (R1, Rn, r1, rn, v1, vn, w1, wn) at t_{n+1} and t_n, ``af`` = α_f."""
    body, P = el[1], el[3]
    axes, side, n_axes = el[4], el[5], el[6]
    R1, Rn, r1, rn, v1, vn, w1, wn = bodies
    bf = 1.0 - af
    for e in range(lo, hi):
        a, b = body[e, 0], body[e, 1]
        ZA, ZB = row(P, e, 0), row(P, e, 3)
        zA1, zAn = mv(R1, a, ZA), mv(Rn, a, ZA)
        zB1, zBn = mv(R1, b, ZB), mv(Rn, b, ZB)
        zAa = (af * zA1[0] + bf * zAn[0], af * zA1[1] + bf * zAn[1], af * zA1[2] + bf * zAn[2])
        zBa = (af * zB1[0] + bf * zBn[0], af * zB1[1] + bf * zBn[1], af * zB1[2] + bf * zBn[2])
        xA = (af * r1[a, 0] + bf * rn[a, 0] + zAa[0], af * r1[a, 1] + bf * rn[a, 1] + zAa[1],
              af * r1[a, 2] + bf * rn[a, 2] + zAa[2])
        xB = (af * r1[b, 0] + bf * rn[b, 0] + zBa[0], af * r1[b, 1] + bf * rn[b, 1] + zBa[1],
              af * r1[b, 2] + bf * rn[b, 2] + zBa[2])
        put(x, e, X_D, (xB[0] - xA[0], xB[1] - xA[1], xB[2] - xA[2]))
        wA1, wB1 = row(w1, a, 0), row(w1, b, 0)
        t1, t2 = cross(wB1, zB1), cross(row(wn, b, 0), zBn)
        u1, u2 = cross(wA1, zA1), cross(row(wn, a, 0), zAn)
        put(x, e, X_DV, ((af * (v1[b, 0] + t1[0]) + bf * (vn[b, 0] + t2[0])) - (af * (v1[a, 0] + u1[0]) + bf * (vn[a, 0] + u2[0])),
                         (af * (v1[b, 1] + t1[1]) + bf * (vn[b, 1] + t2[1])) - (af * (v1[a, 1] + u1[1]) + bf * (vn[a, 1] + u2[1])),
                         (af * (v1[b, 2] + t1[2]) + bf * (vn[b, 2] + t2[2])) - (af * (v1[a, 2] + u1[2]) + bf * (vn[a, 2] + u2[2]))))
        put(x, e, X_WA, (af * w1[a, 0] + bf * wn[a, 0], af * w1[a, 1] + bf * wn[a, 1], af * w1[a, 2] + bf * wn[a, 2]))
        put(x, e, X_WB, (af * w1[b, 0] + bf * wn[b, 0], af * w1[b, 1] + bf * wn[b, 1], af * w1[b, 2] + bf * wn[b, 2]))
        for k in range(n_axes[e]):
            c = b if side[e, k] else a
            E = (axes[e, k, 0], axes[e, k, 1], axes[e, k, 2])
            n1, nn = mv(R1, c, E), mv(Rn, c, E)
            put(x, e, X_AXES + 3 * k, (af * n1[0] + bf * nn[0], af * n1[1] + bf * nn[1], af * n1[2] + bf * nn[2]))
            put(x, e, X_MOVES + 3 * k, n1)
        _own(el, e, own, x)
        put(arms, e, 0, zAa)
        put(arms, e, 3, zBa)
        put(arms, e, 6, zA1)
        put(arms, e, 9, zB1)
