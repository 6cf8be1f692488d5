"""Kinematic joints: ideal constraints with Lagrange multipliers (THEORY §11; SCENARIO.md, joints).

The eight joint types are element kinds of the ``joints`` section that share one law: an instance is a
list of constraint rows, each one of THEORY §11's primitives, and it brings one multiplier (an own
unknown, :mod:`mbsim.elements.base`) per row.  Its parameter row holds the distance of a distance
joint, the number of rows and one code per row, ``16·primitive + 4·i + j``; its points are the
joint's point in both bodies, its axes the joint's triad ``(n, u, w)`` as material vectors of A and of
B (axes 0–2 and 3–5 of the state the engine gathers):

==========  ===========================  ========================================================
primitive   Φ                            i, j
==========  ===========================  ========================================================
POINT       d_i  (d = x_B − x_A)         i the world component
PERP        a_i · b_j                    i: n, u, w of A (a universal's axes[0]); j: of B
OFFSET      a_i · d − F(t)               i: n, u, w of A; F a displacement drive's, else 0
DISTANCE    |d| − L
ANGLE       atan2(w_A·u_B, u_A·u_B) − F  wrapped to (−π, π] (the rotation about n, an angle drive's)
==========  ===========================  ========================================================

The law is evaluated at physical states only (``interpolate = "forces"``: the generalized-α step
interpolates the Jacobians, THEORY §11), so it differentiates through its axes itself, δa = δθ × a =
−â δθ for a = Λ a₀ under the spatial rotation increment δθ (THEORY §1).  Per row, with its
multiplier λ (state ``X_LAM``) and the value its row holds F (``X_TARGET``), it returns Φ − F, and the
generalized force ``p = −G_fᵀλ`` summed over its rows, ``G_f = [g_d, g_A, g_B]`` the row's Jacobian in
the frame coordinates ``(d, θ_A, θ_B)``; with JACOBIAN every row's ``G_f``, with DERIVATIVES ``∂p/∂(d, θ_A,
θ_B)`` (minus Σλ times the derivatives of the rows' Jacobians: the geometric stiffness without the
arms', which the engine adds); with GAMMA the part γ_f of every row's Φ̈ quadratic in the rates of the frame
coordinates (the engine adds ``g_d·(ω_B×(ω_B×z_B) − ω_A×(ω_A×z_A))``, the arms' centripetal part).
tests/unit/test_joints.py checks every G, geometric stiffness and γ against finite differences.
"""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels.vec import ZERO, add, cross, dot, hat, hat_hat, madd, mneg, mscale, msub, outer, put, row, scale, sub, unit
from .base import COMMIT, DERIVATIVES, DG, DQ, DV, GAMMA, JACOBIAN, X_AXES, X_D, X_DV, X_LAM, X_TARGET, X_WA, X_WB, Y_GAMMA, Y_P, \
    Y_PHI, Y_POTENTIAL, Y_POWER, ElementKind, offsets

MAX_ROWS = 6
# stops: [angle on, lower, upper, stiffness, damping, displacement on, lower, upper, stiffness, damping];
# turn: the joint's angle at the last accepted state, through full turns (an angle stop's: unwrapped_angle)
FIELDS = (("ZA", 3), ("ZB", 3), ("NA", 3), ("UA", 3), ("WA", 3), ("NB", 3), ("UB", 3), ("WB", 3), ("L", 1),
          ("rows", 1), ("code", MAX_ROWS), ("stops", 10), ("turn", 1))
_L, _ROWS, _CODE, _STOPS, _TURN = offsets(FIELDS)[8:]
_FAR = 1e300  # an absent bound
POINT, PERP, OFFSET, DISTANCE, ANGLE = range(5)


def code(primitive: int, i: int = 0, j: int = 0) -> int:
    return 16 * primitive + 4 * i + j


def is_rotation(c: int) -> bool:
    """Whether the row of code ``c`` is rotational (its Φ in radians, its multiplier in N·m)."""
    return c // 16 in (PERP, ANGLE)


# ----------------------------------------------------------------------------------------------
# compiled helpers: 3-vectors are tuples; each small enough for the compiler to inline where the law
# picks it (one function of all five primitives is too big for that, and a call costs more than a
# revolute's rows)
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def _angle(TA, TB):
    """The vectors and trigonometry of an ANGLE row: u_A, w_A, u_B, s = w_A·u_B, c = u_A·u_B, ρ² and
    ∂s/∂θ_A = w_A × u_B, ∂c/∂θ_A = u_A × u_B (their θ_B parts: the opposite)."""
    uA, wA, uB = TA[1], TA[2], TB[1]
    s, co = dot(wA, uB), dot(uA, uB)
    return uA, wA, uB, s, co, s * s + co * co, cross(wA, uB), cross(uA, uB)


# Φ (for ANGLE the raw atan2) and G_f = [g_d, g_A, g_B] of a row at one state, one function per primitive
@njit(cache=True)
def _row_perp(u, v):
    g = cross(u, v)
    return dot(u, v), ZERO, g, scale(-1.0, g)


@njit(cache=True)
def _row_offset(u, d):
    return dot(u, d), u, cross(u, d), ZERO


@njit(cache=True)
def _row_distance(d, L):
    Ld = np.sqrt(dot(d, d))
    return Ld - L, scale(1.0 / Ld, d), ZERO, ZERO


@njit(cache=True)
def _row_angle(TA, TB):
    _, _, _, s, co, rho2, gs, gc = _angle(TA, TB)
    g = ((co * gs[0] - s * gc[0]) / rho2, (co * gs[1] - s * gc[1]) / rho2, (co * gs[2] - s * gc[2]) / rho2)
    return np.arctan2(s, co), ZERO, g, scale(-1.0, g)


# The derivatives of a row's G_f with respect to (d, θ_A, θ_B), one function per primitive, added times
# −λ into the 3×3 blocks of ∂p/∂(d, θ_A, θ_B) in dy[e] (block (r, c) at DQ + 9 (3r + c): 0 dd, 1 dA, 2 dB,
# 3 Ad, 4 AA, 5 AB, 6 Bd, 7 BA, 8 BB)
@njit(cache=True)
def _add(dy, e, k, A):
    """dy[e, block k] += A."""
    o = DQ + 9 * k
    for i in range(9):
        dy[e, o + i] += A[i]


@njit(cache=True)
def _stiffness_perp(dy, e, lm, u, v):
    # ∂(a×b)/∂θ_A = b̂ â, ∂(a×b)/∂θ_B = −â b̂; g_B = −g_A
    AA = mscale(-lm, hat_hat(v, u))
    AB = mscale(lm, hat_hat(u, v))
    _add(dy, e, 4, AA)
    _add(dy, e, 5, AB)
    _add(dy, e, 7, mneg(AA))
    _add(dy, e, 8, mneg(AB))


@njit(cache=True)
def _stiffness_offset(dy, e, lm, u, d):
    # g_d = a: ∂a/∂θ_A = −â;  g_A = a × d: ∂/∂d = â, ∂/∂θ_A = d̂ â
    ah = hat(u)
    _add(dy, e, 1, mscale(lm, ah))
    _add(dy, e, 3, mscale(-lm, ah))
    _add(dy, e, 4, mscale(-lm, hat_hat(d, u)))


@njit(cache=True)
def _stiffness_distance(dy, e, lm, d):
    L = np.sqrt(dot(d, d))
    ev = scale(1.0 / L, d)
    _add(dy, e, 0, mscale(-lm / L, (1.0 - ev[0] * ev[0], -ev[0] * ev[1], -ev[0] * ev[2], -ev[1] * ev[0],
                                     1.0 - ev[1] * ev[1], -ev[1] * ev[2], -ev[2] * ev[0], -ev[2] * ev[1],
                                     1.0 - ev[2] * ev[2])))


@njit(cache=True)
def _angle_dg(TA, TB):
    """The ANGLE row's g (G_f = [0, g, −g]) and its derivatives ∂g/∂θ_A, ∂g/∂θ_B."""
    # g = (c g_s − s g_c)/ρ²:
    # ∂g/∂θ_A = [g_s g_cᵀ − g_c g_sᵀ + c û_B ŵ_A − s û_B û_A]/ρ² − g hᵀ,
    # ∂g/∂θ_B = −[g_s g_cᵀ − g_c g_sᵀ + c ŵ_A û_B − s û_A û_B]/ρ² + g hᵀ,  h = ∂(ρ²)/∂θ_A / ρ²
    uA, wA, uB, s, co, rho2, gs, gc = _angle(TA, TB)
    g = ((co * gs[0] - s * gc[0]) / rho2, (co * gs[1] - s * gc[1]) / rho2, (co * gs[2] - s * gc[2]) / rho2)
    h = (2.0 * (s * gs[0] + co * gc[0]) / rho2, 2.0 * (s * gs[1] + co * gc[1]) / rho2,
         2.0 * (s * gs[2] + co * gc[2]) / rho2)
    base = msub(outer(gs, gc), outer(gc, gs))
    gh = outer(g, h)
    dA = msub(mscale(1.0 / rho2, madd(base, msub(mscale(co, hat_hat(uB, wA)), mscale(s, hat_hat(uB, uA))))), gh)
    dB = madd(mscale(-1.0 / rho2, madd(base, msub(mscale(co, hat_hat(wA, uB)), mscale(s, hat_hat(uA, uB))))), gh)
    return g, dA, dB


@njit(cache=True)
def _stiffness_angle(dy, e, lm, TA, TB):
    _, dA, dB = _angle_dg(TA, TB)
    _add(dy, e, 4, mscale(-lm, dA))
    _add(dy, e, 5, mscale(-lm, dB))
    _add(dy, e, 7, mscale(lm, dA))
    _add(dy, e, 8, mscale(lm, dB))


@njit(cache=True)
def _stop(q, qd, lo, up, k, c):
    """A penalty stop on a coordinate q (rate qd) between ``lo`` and ``up`` (THEORY §13): the generalized
    force F that never pulls, ∂F/∂q, ∂F/∂q̇, the stored energy ½ k p² and the power dissipated (the damping's,
    and while F is clipped at zero what the spring's stored energy loses)."""
    if q > up:
        pen = q - up
        f = k * pen + c * qd
        if f > 0.0:
            return -f, -k, -c, 0.5 * k * pen * pen, c * qd * qd
        return 0.0, 0.0, 0.0, 0.5 * k * pen * pen, -k * pen * qd
    if q < lo:
        pen = lo - q
        f = k * pen - c * qd
        if f > 0.0:
            return f, -k, -c, 0.5 * k * pen * pen, c * qd * qd
        return 0.0, 0.0, 0.0, 0.5 * k * pen * pen, k * pen * qd
    return 0.0, 0.0, 0.0, 0.0, 0.0


@njit(cache=True)
def _addv(dy, e, k, A):
    """dy[e, rate block k] += A (block (r, c) of ∂p/∂(ḋ, ω_A, ω_B) at DV + 9 (3r + c): the blocks after
    the nine of ∂p/∂(d, θ_A, θ_B))."""
    _add(dy, e, (DV - DQ) // 9 + k, A)


@njit(cache=True)
def unwrapped_angle(p, e, col, TA, TB, commit):
    """The angle of B's triad ``TB`` about A's axis ``TA[0]`` since t = 0 through full turns, and its g
    (q̇ = g·(ω_A − ω_B)): the frames' angle (−π, π] taken on the turn nearest to the reference p[e, col], the
    angle at the last accepted state (0 at t = 0; the states a step visits lie within half a turn of it);
    with ``commit`` (the state is accepted) the reference becomes this angle."""
    q, _, g, _ = _row_angle(TA, TB)
    ref = p[e, col]
    q = q + 2.0 * np.pi * np.floor((ref - q) / (2.0 * np.pi) + 0.5)
    if commit:
        p[e, col] = q
    return q, g


@njit(cache=True)
def angle_force(dy, e, TA, TB, g, wr, F, dF, dFv, derivatives):
    """A generalized force F(q, q̇) on the angle q (∂F/∂q = dF, ∂F/∂q̇ = dFv, q̇ = g·wr, wr = ω_A − ω_B) as the
    moment p_A = F g on A (p_B = −p_A), returned; with ``derivatives`` its blocks into dy."""
    if derivatives:
        if F != 0.0:
            _stiffness_angle(dy, e, -F, TA, TB)  # F ∂G/∂θ
        _, dA, dB = _angle_dg(TA, TB)
        hA = add(scale(dF, g), scale(dFv, (dA[0] * wr[0] + dA[3] * wr[1] + dA[6] * wr[2],
                                           dA[1] * wr[0] + dA[4] * wr[1] + dA[7] * wr[2],
                                           dA[2] * wr[0] + dA[5] * wr[1] + dA[8] * wr[2])))
        hB = add(scale(-dF, g), scale(dFv, (dB[0] * wr[0] + dB[3] * wr[1] + dB[6] * wr[2],
                                            dB[1] * wr[0] + dB[4] * wr[1] + dB[7] * wr[2],
                                            dB[2] * wr[0] + dB[5] * wr[1] + dB[8] * wr[2])))
        _add(dy, e, 4, outer(g, hA))
        _add(dy, e, 5, outer(g, hB))
        _add(dy, e, 7, mneg(outer(g, hA)))
        _add(dy, e, 8, mneg(outer(g, hB)))
        gg = mscale(dFv, outer(g, g))
        _addv(dy, e, 4, gg)  # ∂p_A/∂ω_A
        _addv(dy, e, 5, mneg(gg))  # ∂p_A/∂ω_B
        _addv(dy, e, 7, mneg(gg))
        _addv(dy, e, 8, gg)
    return scale(F, g)


@njit(cache=True)
def _angle_stop(p, e, TA, TB, wa, wb, want, dy):
    """The stop on a joint's angle (unwrapped: :func:`unwrapped_angle`): (its p_A (p_B = −p_A), energy,
    power); with DERIVATIVES in ``want`` its blocks into dy (p = F G, G = [0, g, −g])."""
    o = _STOPS
    q, g = unwrapped_angle(p, e, _TURN, TA, TB, (want & COMMIT) != 0)
    wr = sub(wa, wb)
    qd = dot(g, wr)
    F, dF, dFv, V, P = _stop(q, qd, p[e, o + 1], p[e, o + 2], p[e, o + 3], p[e, o + 4])
    return angle_force(dy, e, TA, TB, g, wr, F, dF, dFv, (want & DERIVATIVES) != 0), V, P


@njit(cache=True)
def _offset_stop(p, e, n, d, dv, wa, derivatives, dy):
    """The stop on a joint's offset s = n·d along its axis: (its p_d, p_A, energy, power); G = [n, n×d, 0],
    ṡ = n·ḋ + (n×d)·ω_A; with ``derivatives`` its blocks into dy."""
    o = _STOPS + 5
    nd = cross(n, d)
    s = dot(n, d)
    sd = dot(n, dv) + dot(nd, wa)
    F, dF, dFv, V, P = _stop(s, sd, p[e, o + 1], p[e, o + 2], p[e, o + 3], p[e, o + 4])
    if derivatives and (F != 0.0):
        _stiffness_offset(dy, e, -F, n, d)  # F ∂G/∂(d, θ_A)
        hd = add(scale(dF, n), scale(dFv, cross(wa, n)))  # ∂F/∂d (through s and ṡ)
        hA = add(scale(dF, nd), scale(dFv, add(cross(n, dv), cross(n, cross(d, wa)))))  # ∂F/∂θ_A
        _add(dy, e, 0, outer(n, hd))
        _add(dy, e, 1, outer(n, hA))
        _add(dy, e, 3, outer(nd, hd))
        _add(dy, e, 4, outer(nd, hA))
        _addv(dy, e, 0, mscale(dFv, outer(n, n)))  # ∂p_d/∂ḋ
        _addv(dy, e, 1, mscale(dFv, outer(n, nd)))  # ∂p_d/∂ω_A
        _addv(dy, e, 3, mscale(dFv, outer(nd, n)))  # ∂p_A/∂ḋ
        _addv(dy, e, 4, mscale(dFv, outer(nd, nd)))  # ∂p_A/∂ω_A
    return scale(F, n), scale(F, nd), V, P


@njit(cache=True)
def _quadratic(c, d, dv, TA, TB, wa, wb):
    """γ_f of the row of code ``c``: the part of Φ̈ quadratic in the rates of the frame coordinates
    (ḋ = ``dv``, and the axes' ω × a), without the arms' centripetal part (the engine's)."""
    prim = c // 16
    if prim == PERP:
        u, t = TA[(c // 4) % 4], TB[c % 4]
        return dot(cross(wa, cross(wa, u)), t) + 2.0 * dot(cross(wa, u), cross(wb, t)) + dot(u, cross(wb, cross(wb, t)))
    if prim == ANGLE:
        uA, wA, uB, s, co, rho2, _, _ = _angle(TA, TB)
        gs_ = dot(cross(wa, cross(wa, wA)), uB) + 2.0 * dot(cross(wa, wA), cross(wb, uB)) + dot(wA, cross(wb, cross(wb, uB)))
        gc_ = dot(cross(wa, cross(wa, uA)), uB) + 2.0 * dot(cross(wa, uA), cross(wb, uB)) + dot(uA, cross(wb, cross(wb, uB)))
        ds = dot(cross(wa, wA), uB) + dot(wA, cross(wb, uB))  # ṡ, ċ
        dc = dot(cross(wa, uA), uB) + dot(uA, cross(wb, uB))
        phidot = (co * ds - s * dc) / rho2
        return (co * gs_ - s * gc_) / rho2 - 2.0 * phidot * (s * ds + co * dc) / rho2
    if prim == OFFSET:
        u = TA[(c // 4) % 4]
        wu = cross(wa, u)
        return dot(cross(wa, wu), d) + 2.0 * dot(wu, dv)
    if prim == DISTANCE:
        L = np.sqrt(dot(d, d))
        ed = dot(d, dv) / L
        return (dot(dv, dv) - ed * ed) / L
    return 0.0  # POINT: linear in d


@njit(cache=True)
def law(lo, hi, p, x, t, want, y, dy):
    derivatives = (want & DERIVATIVES) != 0
    jacobian = (want & JACOBIAN) != 0
    gamma = (want & GAMMA) != 0
    for e in range(lo, hi):
        m = int(p[e, _ROWS])
        L = p[e, _L]
        d = row(x, e, X_D)
        TA = (row(x, e, X_AXES), row(x, e, X_AXES + 3), row(x, e, X_AXES + 6))
        TB = (row(x, e, X_AXES + 9), row(x, e, X_AXES + 12), row(x, e, X_AXES + 15))
        pd, pa, pb = ZERO, ZERO, ZERO  # p = −Σ λ_i G_f,i
        if derivatives:
            for k in range(81):
                dy[e, DQ + k] = 0.0
                dy[e, DV + k] = 0.0
        for i in range(m):
            c = int(p[e, _CODE + i])
            prim = c // 16
            ix, jx = (c // 4) % 4, c % 4
            if prim == 0:  # POINT
                phi, gd, ga, gb = d[ix], unit(ix), ZERO, ZERO
            elif prim == PERP:
                phi, gd, ga, gb = _row_perp(TA[ix], TB[jx])
            elif prim == OFFSET:
                phi, gd, ga, gb = _row_offset(TA[ix], d)
            elif prim == DISTANCE:
                phi, gd, ga, gb = _row_distance(d, L)
            else:
                phi, gd, ga, gb = _row_angle(TA, TB)
            phi = phi - x[e, X_TARGET + i]
            if prim == ANGLE:
                phi = phi - 2.0 * np.pi * np.floor((phi + np.pi) / (2.0 * np.pi))  # to [−π, π)
            y[e, Y_PHI + i] = phi
            lm = x[e, X_LAM + i]
            pd = sub(pd, scale(lm, gd))
            pa = sub(pa, scale(lm, ga))
            pb = sub(pb, scale(lm, gb))
            if jacobian:
                put(dy, e, DG + 9 * i, gd)
                put(dy, e, DG + 9 * i + 3, ga)
                put(dy, e, DG + 9 * i + 6, gb)
            if derivatives and lm != 0.0:
                if prim == PERP:
                    _stiffness_perp(dy, e, lm, TA[ix], TB[jx])
                elif prim == OFFSET:
                    _stiffness_offset(dy, e, lm, TA[ix], d)
                elif prim == DISTANCE:
                    _stiffness_distance(dy, e, lm, d)
                elif prim == ANGLE:
                    _stiffness_angle(dy, e, lm, TA, TB)
            if gamma:
                y[e, Y_GAMMA + i] = _quadratic(c, d, row(x, e, X_DV), TA, TB, row(x, e, X_WA), row(x, e, X_WB))
        energy, power = 0.0, 0.0
        if p[e, _STOPS] != 0.0:  # a stop on the angle
            sa, V, P = _angle_stop(p, e, TA, TB, row(x, e, X_WA), row(x, e, X_WB), want, dy)
            pa = add(pa, sa)
            pb = sub(pb, sa)
            energy += V
            power += P
        if p[e, _STOPS + 5] != 0.0:  # a stop on the offset
            sd_, sa, V, P = _offset_stop(p, e, TA[0], d, row(x, e, X_DV), row(x, e, X_WA), derivatives, dy)
            pd = add(pd, sd_)
            pa = add(pa, sa)
            energy += V
            power += P
        put(y, e, Y_P, pd)
        put(y, e, Y_P + 3, pa)
        put(y, e, Y_P + 6, pb)
        y[e, Y_POTENTIAL] = energy
        y[e, Y_POWER] = power
    return -1


# ----------------------------------------------------------------------------------------------
# the kinds
# ----------------------------------------------------------------------------------------------
_N, _U, _W = 0, 1, 2
_POINT_ROWS = (code(POINT, 0), code(POINT, 1), code(POINT, 2))
_ACROSS = (code(PERP, _N, _U), code(PERP, _N, _W))  # the two rotations across n
ROWS = {
    "spherical": _POINT_ROWS,
    "revolute": _POINT_ROWS + _ACROSS,
    "prismatic": _ACROSS + (code(PERP, _U, _W), code(OFFSET, _U), code(OFFSET, _W)),
    "cylindrical": _ACROSS + (code(OFFSET, _U), code(OFFSET, _W)),
    "planar": _ACROSS + (code(OFFSET, _N),),
    "universal": _POINT_ROWS + (code(PERP, _N, _N),),  # axes[0] in A (the n slot), axes[1] in B (the n slot)
    "lock": _POINT_ROWS + _ACROSS + (code(PERP, _U, _W),),
    "distance": (code(DISTANCE),),
}
DRIVE_ROWS = {"angle": code(ANGLE), "displacement": code(OFFSET, _N)}


def triad(n: np.ndarray) -> np.ndarray:
    """``(n, u, w)``: ``u = n × (the world axis least aligned with n)``, normalised, ``w = n × u``."""
    n = np.asarray(n, dtype=float)
    u = np.cross(n, np.eye(3)[int(np.argmin(np.abs(n)))])
    u /= np.linalg.norm(u)
    return np.array([n, u, np.cross(n, u)])


def all_rows(spec) -> tuple:
    """The row codes of a joint: its type's, then its drives' (angle before displacement)."""
    drives = tuple(DRIVE_ROWS[k] for k in ("angle", "displacement") if getattr(spec, k, None) is not None)
    return ROWS[spec.type] + drives


def rows_of(spec) -> tuple:
    """The row codes of a joint's equations: :func:`all_rows` but those removed as redundant."""
    return tuple(c for i, c in enumerate(all_rows(spec)) if i not in spec.removed)


def drives_of(spec) -> tuple:
    """The drive time function of each row of ``rows_of(spec)``, None for a row without one."""
    fns = tuple(getattr(spec, k) for k in ("angle", "displacement") if getattr(spec, k, None) is not None)
    every = (None,) * len(ROWS[spec.type]) + fns
    return tuple(f for i, f in enumerate(every) if i not in spec.removed)


ROW_NAMES = {POINT: "coincident points ({})", PERP: "perpendicular {} of A and {} of B", OFFSET: "offset along {} of A",
             DISTANCE: "distance", ANGLE: "angle drive"}


def describe_row(spec, c: int) -> str:
    """What the equation of code ``c`` of joint ``spec`` says, for messages."""
    prim, i, j = c // 16, (c // 4) % 4, c % 4
    if prim == POINT:
        return ROW_NAMES[POINT].format("xyz"[i])
    if prim == OFFSET and i == 0 and spec.displacement is not None and c == DRIVE_ROWS["displacement"] \
            and spec.type != "planar":
        return "displacement drive"
    names = ("axis", "u", "w") if spec.type != "universal" else ("axes[0]", "", "")
    if prim == PERP:
        return ROW_NAMES[PERP].format(names[i], "axes[1]" if spec.type == "universal" else names[j])
    return ROW_NAMES[prim].format(names[i])


def pack(specs, ia, ib, r0, R0) -> dict:
    n = len(specs)
    out = {name: np.zeros((n, width)) for name, width in FIELDS}
    for k, s in enumerate(specs):
        RA, RB = R0[ia[k]], R0[ib[k]]
        if s.type == "distance":
            pa, pb = np.asarray(s.points[0], float), np.asarray(s.points[1], float)
            out["L"][k] = s.length
        else:
            pa = pb = np.asarray(s.point, float)
        out["ZA"][k] = RA.T @ (pa - r0[ia[k]])
        out["ZB"][k] = RB.T @ (pb - r0[ib[k]])
        if s.type == "universal":
            t = np.array([s.axes[0], np.zeros(3), np.zeros(3)]), np.array([s.axes[1], np.zeros(3), np.zeros(3)])
        else:
            tr = triad(s.axis if s.axis is not None else np.array([1.0, 0.0, 0.0]))
            t = tr, tr
        for name, vec in zip(("NA", "UA", "WA"), t[0]):
            out[name][k] = RA.T @ vec
        for name, vec in zip(("NB", "UB", "WB"), t[1]):
            out[name][k] = RB.T @ vec
        rows = rows_of(s)
        out["rows"][k] = len(rows)
        out["code"][k, :len(rows)] = rows
        for coordinate, lo, up, kk, c in getattr(s, "stops", ()):
            o = 0 if coordinate == "angle" else 5
            out["stops"][k, o:o + 5] = (1.0, max(lo, -_FAR), min(up, _FAR), kk, c)
    return out


class _Joint(ElementKind):
    section = "joints"
    fields = FIELDS
    points = ("ZA", "ZB")
    axes = (("NA", "A"), ("UA", "A"), ("WA", "A"), ("NB", "B"), ("UB", "B"), ("WB", "B"))
    blocks = ("dd", "da", "db", "ad", "aa", "ab", "bd", "ba", "bb")
    interpolate = "forces"
    failure = "is undefined at this state"
    draw = "joint"
    dissipates = False  # an ideal joint does no work
    law = law

    @classmethod
    def unknowns_of(cls, spec) -> tuple:
        return tuple("rotation" if is_rotation(c) else "translation" for c in rows_of(spec))

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        return pack(specs, ia, ib, r0, R0)


# the joint types that can carry stops (SCENARIO.md, joints: limits): they also read the rates (the stops'
# damping) and can dissipate
_STOPPED = {"revolute": ("aA", "aB", "bA", "bB"), "prismatic": ("dv", "dA", "av", "aA"),
            "cylindrical": ("dv", "dA", "av", "aA", "aB", "bA", "bB")}


def _stops_dissipate(cls, specs) -> bool:
    """Only joints with stops dissipate: without, the engine does not evaluate the joints for their power."""
    return any(getattr(s, "stops", ()) for s in specs)


def _angle_stops(cls, specs) -> bool:
    """Joints with a stop on their angle count its turns."""
    return any(st[0] == "angle" for s in specs for st in getattr(s, "stops", ()))


def _kind(name: str, doc: str) -> type:
    extra = {}
    if name in _STOPPED:
        extra = {"blocks": _Joint.blocks + _STOPPED[name], "dissipates": True,
                 "dissipates_in": classmethod(_stops_dissipate), "remembers_in": classmethod(_angle_stops)}
    return type(name.capitalize() + "Joint", (_Joint,), {"type": name, "__doc__": doc, **extra})


KINDS = tuple(_kind(t, f"{t} joint (SCENARIO.md, joints)") for t in ROWS)
