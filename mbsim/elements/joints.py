"""Kinematic joints: ideal constraints with Lagrange multipliers (THEORY §11; SCENARIO.md, joints).

The eight joint types are element kinds of the ``joints`` section that share one law: an instance is a
list of constraint rows, each one of THEORY §11's primitives, and it brings one multiplier (an own
unknown, :mod:`mbsim.elements.base`) per row.  Its parameter row holds the arms of the joint's point in
both bodies, the joint's triad ``(n, u, w)`` as material vectors in A and in B, a distance's length,
the number of rows and one code per row, ``16·primitive + 4·i + j``:

==========  ===========================  ========================================================
primitive   Φ                            i, j
==========  ===========================  ========================================================
POINT       (x_B − x_A)_i                i the world component
PERP        a_i · b_j                    i: n, u, w of A (a universal's axes[0]); j: of B
OFFSET      a_i · (x_B − x_A) − F(t)     i: n, u, w of A; F a displacement drive's, else 0
DISTANCE    |x_B − x_A| − L
ANGLE       atan2(w_A·u_B, u_A·u_B) − F  wrapped to (−π, π] (the rotation about n, an angle drive's)
==========  ===========================  ========================================================

Per row, with its multiplier λ (at t_n + α_f Δt), its scale k and target F (the ``target``
argument: F(t_{n+1}), 0 for rows without a drive):

- body rows ``−G_αᵀλ``, ``G_α = α_f G(q') + (1−α_f) G(q_n)``; the row's own ``−k (Φ(q') − F)``;
  G(q_n) is computed once per step, into the instance's ``cache`` row (mode PREPARE of
  :mod:`mbsim.elements.engine`), and read by every Newton iteration;
- tangent ``K_uu = α_f λ ∂(G(q')ᵀ)/∂q'`` (the geometric stiffness), ``K_uλ̃ = k G_αᵀ``,
  ``K_λ̃u = k G(q')``;
- outputs: the force ``f_A = −G_rAᵀλ`` and moment ``−G_θAᵀλ − z_A × f_A`` about the joint's point
  on A, and the norms of the translational and rotational rows' Φ − F;
- the constrained systems at one state (modes ACCELERATION, VELOCITY of
  :mod:`mbsim.elements.engine`): ``k G`` in both off-diagonal blocks and the right side
  ``k (F̈ − γ)`` (γ the velocity-quadratic part of Φ̈) or ``k Ḟ``.

Material vectors move with their body: δa = δθ × a = −â δθ for a = Λ a₀ under the spatial rotation
increment δθ (THEORY §1).  tests/unit/test_joints.py checks every G, geometric stiffness and γ
against finite differences.
"""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels.connectors import NONE, PREPARE, add_block, cross, dot, mv, row
from .base import ANGLE_ERROR, FORCE, LENGTH, MOMENT, POSITION_ERROR, POTENTIAL, POWER, ElementKind, offsets

MAX_ROWS = 6
FIELDS = (("ZA", 3), ("ZB", 3), ("NA", 3), ("UA", 3), ("WA", 3), ("NB", 3), ("UB", 3), ("WB", 3), ("L", 1),
          ("rows", 1), ("code", MAX_ROWS))
_ZA, _ZB, _NA, _UA, _WA, _NB, _UB, _WB, _L, _ROWS, _CODE = offsets(FIELDS)
POINT, PERP, OFFSET, DISTANCE, ANGLE = range(5)
_ACCELERATION, _VELOCITY = -1, -2  # mbsim.elements.engine.MODES


def code(primitive: int, i: int = 0, j: int = 0) -> int:
    return 16 * primitive + 4 * i + j


def is_rotation(c: int) -> bool:
    """Whether the row of code ``c`` is rotational (its Φ in radians, its multiplier in N·m)."""
    return c // 16 in (PERP, ANGLE)


# ----------------------------------------------------------------------------------------------
# compiled helpers: 3-vectors are tuples, tangent entries go into the block K[ke]
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(cache=True)
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(cache=True)
def _scale(f, a):
    return (f * a[0], f * a[1], f * a[2])


@njit(cache=True)
def _mix(f, a, h, b):
    """f a + h b."""
    return (f * a[0] + h * b[0], f * a[1] + h * b[1], f * a[2] + h * b[2])


@njit(cache=True)
def _outer(K, ke, ro, co, f, u, v, s):
    """K[ke, ro:ro+3, co:co+3] += f (u vᵀ − s I)  (â b̂ = b aᵀ − (a·b) I)."""
    for r in range(3):
        for q in range(3):
            K[ke, ro + r, co + q] += f * (u[r] * v[q] - (s if r == q else 0.0))


@njit(cache=True)
def _skew(K, ke, ro, co, f, a):
    """K[ke, ro:ro+3, co:co+3] += f â."""
    K[ke, ro + 0, co + 1] -= f * a[2]
    K[ke, ro + 0, co + 2] += f * a[1]
    K[ke, ro + 1, co + 0] += f * a[2]
    K[ke, ro + 1, co + 2] -= f * a[0]
    K[ke, ro + 2, co + 0] -= f * a[1]
    K[ke, ro + 2, co + 1] += f * a[0]


@njit(cache=True)
def _material(p, e, c, R, b):
    """Material vector in column ``c`` of instance e's row, in the world frame of body b's Λ = R[b]."""
    return mv(R, b, row(p, e, c))


@njit(cache=True)
def _state(p, e, R, r, inc, a, b):
    """Everything the rows of instance e need of one state, as tuples: z_A, z_B, d = x_B − x_A and the
    joint's triads ``(n, u, w)`` of A and of B in the world frame.  d is formed as
    ``(((r_B − r_A) − z_A) + z_B) + inc`` (or with z_B first where it is the longer arm), with ``r`` the
    positions at t_n and ``inc`` the step's increments d_B − d_A (zero at one state): what cancels then
    cancels first, and within the step's Newton iteration it does not change -- r_B − r_A of two bodies
    side by side (exact: Sterbenz), and that against the longer arm (for a joint to ``world``, r = 0 and
    z the joint's point itself, 10 km out if the mechanism is).  What varies from iterate to iterate, the
    shorter arm and the increments, is added to a sum of their own size, so that the round-off of d is ε
    times the arms and increments, not ε times the points' distance from the origin (docs/newton.md,
    "Joints far from the origin").

    The helpers below take these values, never the state arrays: a compiled function that takes an
    array pays two atomic reference-count updates per array per call unless numba can prove them
    unneeded, which it cannot once the function branches and calls others (measured: a revolute's
    five rows cost 176 ns per joint through such a helper, 24 ns through this one)."""
    zA = _material(p, e, _ZA, R, a)
    zB = _material(p, e, _ZB, R, b)
    ZA, ZB = row(p, e, _ZA), row(p, e, _ZB)  # (the material arms: the same choice at every iterate)
    longer, shorter = _scale(-1.0, zA), zB  # −z_A and z_B, the longer first (negation is exact)
    if dot(ZA, ZA) < dot(ZB, ZB):
        longer, shorter = zB, _scale(-1.0, zA)
    d = ((((r[b, 0] - r[a, 0]) + longer[0]) + shorter[0]) + inc[0],
         (((r[b, 1] - r[a, 1]) + longer[1]) + shorter[1]) + inc[1],
         (((r[b, 2] - r[a, 2]) + longer[2]) + shorter[2]) + inc[2])
    TA = (_material(p, e, _NA, R, a), _material(p, e, _UA, R, a), _material(p, e, _WA, R, a))
    TB = (_material(p, e, _NB, R, b), _material(p, e, _UB, R, b), _material(p, e, _WB, R, b))
    return zA, zB, d, TA, TB


@njit(cache=True)
def _angle(TA, TB):
    """The vectors and trigonometry of an ANGLE row: u_A, w_A, u_B, s = w_A·u_B, c = u_A·u_B, ρ² and
    ∂s/∂θ_A = w_A × u_B, ∂c/∂θ_A = u_A × u_B (their θ_B parts: the opposite)."""
    uA, wA, uB = TA[1], TA[2], TB[1]
    s, co = dot(wA, uB), dot(uA, uB)
    return uA, wA, uB, s, co, s * s + co * co, cross(wA, uB), cross(uA, uB)


# Φ (for ANGLE the raw atan2) and G = [g_rA, g_θA, g_rB, g_θB] of a row at one state, one function per
# primitive, each small enough for the compiler to inline where the law picks it: one function of all five
# is too big for that, and a call costs more than a revolute's rows (76 ns per joint against 32)
@njit(cache=True)
def _row_point(i, zA, zB, d):
    ei = (1.0 if i == 0 else 0.0, 1.0 if i == 1 else 0.0, 1.0 if i == 2 else 0.0)
    # G = e_iᵀ [−I, ẑ_A, I, −ẑ_B], and e_iᵀ ẑ x = e_i·(z × x) = (e_i × z)·x
    return d[i], _scale(-1.0, ei), cross(ei, zA), ei, cross(zB, ei)


@njit(cache=True)
def _row_perp(u, v):
    g = cross(u, v)
    zero = (0.0, 0.0, 0.0)
    return dot(u, v), zero, g, zero, _scale(-1.0, g)


@njit(cache=True)
def _row_offset(u, zA, zB, d):
    pB = _add(d, zA)  # x_B − r_A
    return dot(u, d), _scale(-1.0, u), cross(u, pB), u, _scale(-1.0, cross(u, zB))


@njit(cache=True)
def _row_distance(zA, zB, d, L):
    Ld = np.sqrt(dot(d, d))
    ev = _scale(1.0 / Ld, d)
    return Ld - L, _scale(-1.0, ev), cross(ev, zA), ev, _scale(-1.0, cross(ev, zB))


@njit(cache=True)
def _row_angle(TA, TB):
    # about n: s = w_A·u_B, c = u_A·u_B
    _, _, _, s, co, rho2, gs, gc = _angle(TA, TB)
    g = ((co * gs[0] - s * gc[0]) / rho2, (co * gs[1] - s * gc[1]) / rho2, (co * gs[2] - s * gc[2]) / rho2)
    zero = (0.0, 0.0, 0.0)
    return np.arctan2(s, co), zero, g, zero, _scale(-1.0, g)


# The geometric stiffness K[ke] += f ∂(G(q)ᵀ)/∂q of a row per unit multiplier, times f, one function per
# primitive (the law picks): straight-line code on the one array it writes (see _state).
@njit(cache=True)
def _stiffness_point(K, ke, f, i, zA, zB):
    ei = (1.0 if i == 0 else 0.0, 1.0 if i == 1 else 0.0, 1.0 if i == 2 else 0.0)
    # Gᵀλ = [−λ; λ×z_A; λ; −λ×z_B]: ∂(λ×z_A)/∂θ_A = −λ̂ ẑ_A, ∂(−λ×z_B)/∂θ_B = λ̂ ẑ_B
    _outer(K, ke, 3, 3, -f, zA, ei, dot(ei, zA))
    _outer(K, ke, 9, 9, f, zB, ei, dot(ei, zB))


@njit(cache=True)
def _stiffness_perp(K, ke, f, u, v):
    s = dot(u, v)
    # ∂(a×b)/∂θ_A = b̂ â = a bᵀ − (a·b) I, ∂(a×b)/∂θ_B = −â b̂ = −(b aᵀ − (a·b) I)
    _outer(K, ke, 3, 3, f, u, v, s)
    _outer(K, ke, 3, 9, -f, v, u, s)
    _outer(K, ke, 9, 3, -f, u, v, s)
    _outer(K, ke, 9, 9, f, v, u, s)


@njit(cache=True)
def _stiffness_offset(K, ke, f, u, zA, zB, d):
    pB = _add(d, zA)
    uzB = dot(u, zB)
    _skew(K, ke, 0, 3, f, u)  # rA: −δa = â δθ_A
    _skew(K, ke, 3, 0, -f, u)  # θA: δ(a × p), p = x_B − r_A
    _outer(K, ke, 3, 3, f, u, pB, dot(u, pB))
    _skew(K, ke, 3, 6, f, u)
    _outer(K, ke, 3, 9, -f, zB, u, uzB)
    _skew(K, ke, 6, 3, -f, u)  # rB: δa
    _outer(K, ke, 9, 3, -f, u, zB, uzB)  # θB: −δ(a × z_B)
    _outer(K, ke, 9, 9, f, zB, u, uzB)


@njit(cache=True)
def _stiffness_distance(K, ke, f, zA, zB, d):
    L = np.sqrt(dot(d, d))
    ev = _scale(1.0 / L, d)
    # ∂e/∂u = P D / L, D = [−I, ẑ_A, I, −ẑ_B], P = I − e eᵀ; Gᵀλ = [−e; e×z_A; e; −e×z_B], so column q
    # of the block is f [−δe; δe × z_A; δe; −δe × z_B] with δe = P D_q / L
    for q in range(12):
        m = q % 3
        em = (1.0 if m == 0 else 0.0, 1.0 if m == 1 else 0.0, 1.0 if m == 2 else 0.0)
        side = q // 3
        if side == 0:
            col = _scale(-1.0, em)
        elif side == 1:
            col = cross(zA, em)  # ẑ_A e_m
        elif side == 2:
            col = em
        else:
            col = _scale(-1.0, cross(zB, em))
        ed = dot(ev, col)
        de = ((col[0] - ev[0] * ed) / L, (col[1] - ev[1] * ed) / L, (col[2] - ev[2] * ed) / L)
        ta = cross(de, zA)  # δe × z_A = −ẑ_A δe
        tb = cross(de, zB)
        for r in range(3):
            K[ke, r, q] -= f * de[r]
            K[ke, 3 + r, q] += f * ta[r]
            K[ke, 6 + r, q] += f * de[r]
            K[ke, 9 + r, q] -= f * tb[r]
    # e × δz_A = ê(−ẑ_A δθ_A) = −(z_A eᵀ − (e·z_A) I) δθ_A; −e × δz_B = +(z_B eᵀ − (e·z_B) I) δθ_B
    _outer(K, ke, 3, 3, -f, zA, ev, dot(ev, zA))
    _outer(K, ke, 9, 9, f, zB, ev, dot(ev, zB))


@njit(cache=True)
def _stiffness_angle(K, ke, f, TA, TB):
    # g = (c g_s − s g_c)/ρ², Gᵀλ = [0; g; 0; −g]
    uA, wA, uB, s, co, rho2, gs, gc = _angle(TA, TB)
    g = ((co * gs[0] - s * gc[0]) / rho2, (co * gs[1] - s * gc[1]) / rho2, (co * gs[2] - s * gc[2]) / rho2)
    h = (2.0 * (s * gs[0] + co * gc[0]) / rho2, 2.0 * (s * gs[1] + co * gc[1]) / rho2,
         2.0 * (s * gs[2] + co * gc[2]) / rho2)  # ∂(ρ²)/∂θ_A / ρ² (its θ_B part: −h)
    fr = f / rho2
    # ∂g/∂θ_A = [g_s g_cᵀ − g_c g_sᵀ + c û_B ŵ_A − s û_B û_A]/ρ² − g hᵀ
    # ∂g/∂θ_B = −[g_s g_cᵀ − g_c g_sᵀ + c ŵ_A û_B − s û_A û_B]/ρ² + g hᵀ
    for side, sign in ((3, 1.0), (9, -1.0)):
        _outer(K, ke, side, 3, sign * fr, gs, gc, 0.0)
        _outer(K, ke, side, 3, -sign * fr, gc, gs, 0.0)
        _outer(K, ke, side, 3, sign * fr * co, wA, uB, dot(uB, wA))
        _outer(K, ke, side, 3, -sign * fr * s, uA, uB, dot(uA, uB))
        _outer(K, ke, side, 3, -sign * f, g, h, 0.0)
        _outer(K, ke, side, 9, -sign * fr, gs, gc, 0.0)
        _outer(K, ke, side, 9, sign * fr, gc, gs, 0.0)
        _outer(K, ke, side, 9, -sign * fr * co, uB, wA, dot(wA, uB))
        _outer(K, ke, side, 9, sign * fr * s, uB, uA, dot(uA, uB))
        _outer(K, ke, side, 9, sign * f, g, h, 0.0)


@njit(cache=True)
def _quadratic(c, zA, zB, d, TA, TB, va, vb, wa, wb):
    """γ: the part of Φ̈ quadratic in the velocities (Φ̈ = G [a_A, α_A, a_B, α_B] + γ) at one state
    (``zA, zB, d, TA, TB``: its :func:`_state`; ``va``, ``wa`` (``vb``, ``wb``): A's (B's) velocity and
    angular velocity)."""
    prim = c // 16
    cA = cross(wa, cross(wa, zA))  # centripetal parts of the points' accelerations
    cB = cross(wb, cross(wb, zB))
    dd = _sub(cB, cA)  # d̈ − (terms linear in the accelerations)
    if prim == POINT:
        return dd[(c // 4) % 4]
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
    vA = _add(va, cross(wa, zA))  # point velocities
    vB = _add(vb, cross(wb, zB))
    dv = _sub(vB, vA)
    if prim == OFFSET:
        u = TA[(c // 4) % 4]
        wu = cross(wa, u)
        return dot(cross(wa, wu), d) + 2.0 * dot(wu, dv) + dot(u, dd)
    L = np.sqrt(dot(d, d))  # DISTANCE
    ev = _scale(1.0 / L, d)
    ed = dot(ev, dv)
    return dot(ev, dd) + (dot(dv, dv) - ed * ed) / L


@njit(cache=True)
def _columns(K, ke, i, k, G, H):
    """Column 12+i of K[ke] = k G (the bodies' rows) and row 12+i = k H (the bodies' columns);
    G, H = [g_rA, g_θA, g_rB, g_θB]."""
    for s_ in range(4):
        g, h = G[s_], H[s_]
        for q in range(3):
            K[ke, 3 * s_ + q, 12 + i] = k * g[q]
            K[ke, 12 + i, 3 * s_ + q] = k * h[q]


@njit(cache=True)
def law(lo, hi, body, p, first, lam, scale, target, af, g, mode, r1, rn, dr, R1, Rn, v1, vn, w1, wn, T, Om, res, K, out,
        pos, data, scr, cache):
    direct = pos.shape[0] > 0
    w = res.shape[1]
    c1 = 1.0 - af
    prepare = mode == PREPARE
    constrained = mode == _ACCELERATION or mode == _VELOCITY
    steps = dr.shape[0] > 0  # an iterate of a step (r1 = rn + dr rounded), not one state
    for e in range(lo, hi):
        a, b = body[e, 0], body[e, 1]
        m = int(p[e, _ROWS])
        L = p[e, _L]
        ke = 0 if direct else e
        if prepare:  # G(q_n) of every row, for the step: cache[e, 12 i : 12 i + 12] = [g_rA, g_θA, g_rB, g_θB]
            zA, zB, d, TA, TB = _state(p, e, Rn, rn, (0.0, 0.0, 0.0), a, b)
        else:
            if steps:  # x_B − x_A from the positions at t_n and the step's increments (not from r1: far from the
                # origin r1 rounds by ε|r1|, which Newton cannot get below: docs/newton.md)
                zA, zB, d, TA, TB = _state(p, e, R1, rn, (dr[b, 0] - dr[a, 0], dr[b, 1] - dr[a, 1],
                                                          dr[b, 2] - dr[a, 2]), a, b)
            else:
                zA, zB, d, TA, TB = _state(p, e, R1, r1, (0.0, 0.0, 0.0), a, b)
            if mode != NONE:  # the block of the bodies and this instance's own unknowns (the rest: unused)
                for r_ in range(12 + m):
                    for q in range(12 + m):
                        K[ke, r_, q] = 0.0
            if constrained:  # (the bodies' rows: written below, but for the constrained systems)
                for i in range(12):
                    res[e, i] = 0.0
            for i in range(12 + m, w):
                res[e, i] = 0.0
        # the bodies' rows −G_αᵀλ, summed here and written once: [f_A, m_A, f_B, m_B]
        fA = (0.0, 0.0, 0.0)
        mA = (0.0, 0.0, 0.0)
        fB = (0.0, 0.0, 0.0)
        mB = (0.0, 0.0, 0.0)
        et, er = 0.0, 0.0
        for i in range(m):
            c = int(p[e, _CODE + i])
            prim = c // 16
            ix, jx = (c // 4) % 4, c % 4
            if prim == POINT:
                phi, grA, gtA, grB, gtB = _row_point(ix, zA, zB, d)
            elif prim == PERP:
                phi, grA, gtA, grB, gtB = _row_perp(TA[ix], TB[jx])
            elif prim == OFFSET:
                phi, grA, gtA, grB, gtB = _row_offset(TA[ix], zA, zB, d)
            elif prim == DISTANCE:
                phi, grA, gtA, grB, gtB = _row_distance(zA, zB, d, L)
            else:
                phi, grA, gtA, grB, gtB = _row_angle(TA, TB)
            o = 12 * i
            if prepare:
                for q in range(3):
                    cache[e, o + q] = grA[q]
                    cache[e, o + 3 + q] = gtA[q]
                    cache[e, o + 6 + q] = grB[q]
                    cache[e, o + 9 + q] = gtB[q]
                continue
            j = first[e] + i
            lm, k, tg = lam[j], scale[j], target[j]
            G1 = (grA, gtA, grB, gtB)
            if constrained:  # the constrained systems at one state
                rhs = tg
                if mode == _ACCELERATION:
                    rhs -= _quadratic(c, zA, zB, d, TA, TB, row(v1, a, 0), row(v1, b, 0), row(w1, a, 0), row(w1, b, 0))
                res[e, 12 + i] = k * rhs
                _columns(K, ke, i, k, G1, G1)
                continue
            phi = phi - tg
            if prim == ANGLE:
                phi = phi - 2.0 * np.pi * np.floor((phi + np.pi) / (2.0 * np.pi))  # to [−π, π)
            if prim == PERP or prim == ANGLE:
                er += phi * phi
            else:
                et += phi * phi
            if c1 != 0.0:  # G_α with G(q_n) from the step's start (mode PREPARE)
                G = (_mix(af, grA, c1, (cache[e, o], cache[e, o + 1], cache[e, o + 2])),
                     _mix(af, gtA, c1, (cache[e, o + 3], cache[e, o + 4], cache[e, o + 5])),
                     _mix(af, grB, c1, (cache[e, o + 6], cache[e, o + 7], cache[e, o + 8])),
                     _mix(af, gtB, c1, (cache[e, o + 9], cache[e, o + 10], cache[e, o + 11])))
            else:  # one state (α_f = 1): G(q')
                G = G1
            res[e, 12 + i] = -k * phi
            fA = _sub(fA, _scale(lm, G[0]))
            mA = _sub(mA, _scale(lm, G[1]))
            fB = _sub(fB, _scale(lm, G[2]))
            mB = _sub(mB, _scale(lm, G[3]))
            if mode > NONE:
                _columns(K, ke, i, k, G, G1)
                if lm != 0.0:
                    f = af * lm
                    if prim == POINT:
                        _stiffness_point(K, ke, f, ix, zA, zB)
                    elif prim == PERP:
                        _stiffness_perp(K, ke, f, TA[ix], TB[jx])
                    elif prim == OFFSET:
                        _stiffness_offset(K, ke, f, TA[ix], zA, zB, d)
                    elif prim == DISTANCE:
                        _stiffness_distance(K, ke, f, zA, zB, d)
                    else:
                        _stiffness_angle(K, ke, f, TA, TB)
        if prepare:
            continue
        if constrained:
            if direct:
                add_block(K, ke, pos, e, data)
            continue  # (no outputs: those of a state come from mode NONE)
        mz = _sub(mA, cross(zA, fA))  # about the joint's point
        for q in range(3):
            res[e, q] = fA[q]
            res[e, 3 + q] = mA[q]
            res[e, 6 + q] = fB[q]
            res[e, 9 + q] = mB[q]
            out[e, FORCE + q] = fA[q]
            out[e, MOMENT + q] = mz[q]
        out[e, LENGTH] = np.nan
        out[e, POSITION_ERROR] = np.sqrt(et)
        out[e, ANGLE_ERROR] = np.sqrt(er)
        out[e, POTENTIAL] = 0.0
        out[e, POWER] = 0.0
        if mode != NONE and direct:
            add_block(K, ke, pos, e, data)
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
    return out


class _Joint(ElementKind):
    section = "joints"
    fields = FIELDS
    arms = ("ZA", "ZB")
    failure = "is undefined at this state"
    prepares = True
    law = law

    @classmethod
    def unknowns_of(cls, spec) -> tuple:
        return tuple("rotation" if is_rotation(c) else "translation" for c in rows_of(spec))

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        return pack(specs, ia, ib, r0, R0)


def _kind(name: str, doc: str) -> type:
    return type(name.capitalize() + "Joint", (_Joint,), {"type": name, "__doc__": doc})


KINDS = tuple(_kind(t, f"{t} joint (SCENARIO.md, joints)") for t in ROWS)
