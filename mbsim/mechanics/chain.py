"""The chain rule from an element's frame coordinates to the bodies' unknowns (THEORY §6, §12).

A law gives, at its state, the generalized force ``p = (p_d, p_A, p_B)`` conjugate to its frame
coordinates ``(d, θ_A, θ_B)`` and its derivatives (:mod:`mbsim.elements.base`).  With the arms z_A, z_B
of its points, ``δd = −δr_A + ẑ_A δθ_A + δr_B − ẑ_B δθ_B``, so the forces and moments about the bodies'
centres are ``Q = Jᵀp``:

    Q_rA = −p_d      Q_θA = −ẑ_A p_d + p_A      Q_rB = p_d      Q_θB = ẑ_B p_d + p_B

(a spring's ``p_d = −f`` gives THEORY §6's ``[f, z_A×f + m, −f, −(z_B×f + m)]``).  Their derivatives
with respect to the bodies' unknowns, ``K = −∂Q/∂u``, combine the law's blocks ``∂p/∂(d, θ_A, θ_B)``
and ``∂p/∂(ḋ, ω_A, ω_B)`` with the points' kinematics,

    ∂ḋ/∂θ_A = ω̂_A ẑ_A (at fixed velocities),   ∂ḋ/∂v_A = −I,   ∂ḋ/∂ω_A = ẑ_A   (B: the opposite signs)

and the turning of the lever arms in ``Q`` (the geometric terms ``p̂_d ẑ``, THEORY §6's ``f̂ ẑ'``).  How
the velocities depend on the unknowns is the caller's (the *velocity map*): the bodies' velocities
themselves at a state (the damping matrix C), ``δv' = g Δr``, ``δω' = Ω Δθ`` in a generalized-α step
(THEORY §4).  So one function, :func:`force_block`, gives a state's stiffness (weights (1, 0)), its
damping (weights (0, 1), velocity map (1, I, I)) and the step's tangent α_f(K + C·V) (weights
(α_f, α_f), velocity map (g, Ω_A, Ω_B)), from the same law derivatives: the integrator forms its
tangent from the state derivatives, written here once.

The arms come in two kinds (:mod:`mbsim.mechanics.gather`): the lever arms of the forces, at the
state the law was evaluated at, and the arms that the unknowns' increments turn, at t_{n+1} in a step
(``arms[e] = (z_A, z_B, z_A', z_B')``; the same at a physical state).
"""
from __future__ import annotations

from ..elements.base import DG, DQ, DV, Y_P
from ..kernels import njit
from ..kernels.vec import (ZERO33, block, cross, hat_hat, hat_m, is_zero, m_hat, madd, mm, mneg, mscale, msub, put, row)


@njit(cache=True)
def body_forces(y, e, arms):
    """``Q = Jᵀp`` of instance e: forces and moments about the centres [Q_rA, Q_θA, Q_rB, Q_θB] (four
    3-tuples), from its generalized force ``y[e, Y_P:]`` and lever arms ``arms[e, 0:6]``."""
    pd, pa, pb = row(y, e, Y_P), row(y, e, Y_P + 3), row(y, e, Y_P + 6)
    tA = cross(row(arms, e, 0), pd)
    tB = cross(row(arms, e, 3), pd)
    return ((-pd[0], -pd[1], -pd[2]), (pa[0] - tA[0], pa[1] - tA[1], pa[2] - tA[2]), pd,
            (tB[0] + pb[0], tB[1] + pb[1], tB[2] + pb[2]))


@njit(cache=True)
def put_forces(res, e, Q):
    """``res[e, 0:12] = Q``."""
    put(res, e, 0, Q[0])
    put(res, e, 3, Q[1])
    put(res, e, 6, Q[2])
    put(res, e, 9, Q[3])


@njit(cache=True)
def _put33(K, ke, ro, co, A):
    for i in range(3):
        for j in range(3):
            K[ke, ro + i, co + j] = A[3 * i + j]


@njit(cache=True)
def _p_row(dy, e, r, mask, arms, spins, vmap, weights):
    """The derivatives of the row ``r`` of p (0: p_d, 1: p_A, 2: p_B) with respect to the bodies'
    unknowns (Δr_A, Δθ_A, Δr_B, Δθ_B), four 3×3 blocks (the module docstring's chain rule), and whether
    any is nonzero (a declared block may be zero at an instance: it is read, tested and skipped)."""
    zA, zB = arms
    sA, sB = spins  # ω̂_A ẑ_A, ω̂_B ẑ_B
    g, OmA, OmB = vmap[0], vmap[1], vmap[2]
    wq, wv = weights
    PrA, PtA, PrB, PtB = ZERO33, ZERO33, ZERO33, ZERO33
    b = 3 * r
    some = False
    if wq != 0.0:
        if mask & (1 << b):  # ∂p/∂d
            B = block(dy, e, DQ + 9 * b)
            if not is_zero(B):
                B = mscale(wq, B)
                PrA, PtA, PrB, PtB = mneg(B), m_hat(B, zA), B, mneg(m_hat(B, zB))
                some = True
        if mask & (1 << (b + 1)):  # ∂p/∂θ_A
            B = block(dy, e, DQ + 9 * (b + 1))
            if not is_zero(B):
                PtA = madd(PtA, mscale(wq, B))
                some = True
        if mask & (1 << (b + 2)):  # ∂p/∂θ_B
            B = block(dy, e, DQ + 9 * (b + 2))
            if not is_zero(B):
                PtB = madd(PtB, mscale(wq, B))
                some = True
        if mask & (1 << (9 + b)):  # ∂p/∂ḋ through ḋ's dependence on the rotations
            C = block(dy, e, DV + 9 * b)
            if not is_zero(C):
                C = mscale(wq, C)
                PtA = madd(PtA, mm(C, sA))
                PtB = msub(PtB, mm(C, sB))
                some = True
    if wv != 0.0:
        CA, CB = ZERO33, ZERO33  # ∂p/∂ω_A, ∂p/∂ω_B (before the velocity map)
        velocity = False
        if mask & (1 << (9 + b)):  # ∂p/∂ḋ
            C = block(dy, e, DV + 9 * b)
            if not is_zero(C):
                C = mscale(wv, C)
                PrA = madd(PrA, mscale(-g, C))
                PrB = madd(PrB, mscale(g, C))
                CA, CB = m_hat(C, zA), mneg(m_hat(C, zB))
                velocity = True
        if mask & (1 << (9 + b + 1)):
            C = block(dy, e, DV + 9 * (b + 1))
            if not is_zero(C):
                CA = madd(CA, mscale(wv, C))
                velocity = True
        if mask & (1 << (9 + b + 2)):
            C = block(dy, e, DV + 9 * (b + 2))
            if not is_zero(C):
                CB = madd(CB, mscale(wv, C))
                velocity = True
        if velocity:
            PtA = madd(PtA, mm(CA, OmA))
            PtB = madd(PtB, mm(CB, OmB))
            some = True
    return PrA, PtA, PrB, PtB, some


_ROW_BITS = (0b111 | (0b111 << 9), (0b111 << 3) | (0b111 << 12), (0b111 << 6) | (0b111 << 15))


@njit(cache=True)
def force_block(K, ke, dy, e, mask, pd, arms, vmap, weights, geometric):
    """``K[ke, 0:12, 0:12] = −∂Q/∂u`` of instance e (the module docstring): ``mask`` the law's derivative
    blocks (:func:`mbsim.elements.base.block_mask`), ``pd`` its p_d, ``arms`` its (z_A, z_B, z_A', z_B')
    (lever arms, then the arms the unknowns turn), ``vmap`` = (g, Ω_A, Ω_B, ω_A, ω_B): how the velocities
    and angular velocities depend on the unknowns (δv = g Δr, δω = Ω Δθ; 3×3 as 9-tuples) and the
    angular velocities the arms turn with, ``weights`` = (w_q, w_v) of the position and velocity parts,
    ``geometric``: whether the lever arms' turning is included (THEORY §8's seed matrices leave it out)."""
    zAl, zBl, zAm, zBm = arms
    wq = weights[0]
    spins = (ZERO33, ZERO33)
    if wq != 0.0 and mask & ((1 << 9) | (1 << 12) | (1 << 15)):  # ∂p/∂ḋ: ḋ = ẋ_B − ẋ_A turns with the arms
        spins = (_spin(vmap[3], zAm), _spin(vmap[4], zBm))
    nothing = (ZERO33, ZERO33, ZERO33, ZERO33, False)
    Pd = _p_row(dy, e, 0, mask, (zAm, zBm), spins, vmap, weights) if mask & _ROW_BITS[0] else nothing
    Pa = _p_row(dy, e, 1, mask, (zAm, zBm), spins, vmap, weights) if mask & _ROW_BITS[1] else nothing
    Pb = _p_row(dy, e, 2, mask, (zAm, zBm), spins, vmap, weights) if mask & _ROW_BITS[2] else nothing
    d4, a4, b4 = (Pd[0], Pd[1], Pd[2], Pd[3]), (Pa[0], Pa[1], Pa[2], Pa[3]), (Pb[0], Pb[1], Pb[2], Pb[3])
    for X in range(4):
        if Pd[4]:
            _put33(K, ke, 0, 3 * X, d4[X])
            _put33(K, ke, 3, 3 * X, msub(hat_m(zAl, d4[X]), a4[X]))
            _put33(K, ke, 6, 3 * X, mneg(d4[X]))
            _put33(K, ke, 9, 3 * X, mneg(madd(hat_m(zBl, d4[X]), b4[X])))
        else:  # (a force element without one, and every joint whose rows do not turn with d: p_d constant)
            _put33(K, ke, 0, 3 * X, ZERO33)
            _put33(K, ke, 3, 3 * X, mneg(a4[X]))
            _put33(K, ke, 6, 3 * X, ZERO33)
            _put33(K, ke, 9, 3 * X, mneg(b4[X]))
    if geometric and wq != 0.0 and not (pd[0] == 0.0 and pd[1] == 0.0 and pd[2] == 0.0):
        # the lever arms turn: ∂(p_d × z_A)/∂θ_A = −p̂_d ẑ_A, ∂(z_B × p_d)/∂θ_B = p̂_d ẑ_B
        GA = mscale(wq, hat_hat(pd, zAm))
        GB = mscale(wq, hat_hat(pd, zBm))
        for i in range(3):
            for j in range(3):
                K[ke, 3 + i, 3 + j] += GA[3 * i + j]
                K[ke, 9 + i, 9 + j] -= GB[3 * i + j]


@njit(cache=True)
def _spin(w, z):
    """ω̂ ẑ = z ωᵀ − (ω·z) I."""
    return hat_hat(w, z)


@njit(cache=True)
def body_rows(dy, e, m, arms, G, j0):
    """The rows of a constraint's Jacobian with respect to the bodies' unknowns, ``G_f,i J`` =
    [−g_d, g_d × z_A + g_A, g_d, z_B × g_d + g_B] for its m rows (``arms`` (z_A, z_B) at its state): into
    ``G[j0 + i, 0:12]`` when G has 12 columns, else into ``G[j0, 12 (1 + i) …]`` (a row of a cache whose
    first 12 values are something else)."""
    zA, zB = arms
    flat = G.shape[1] != 12
    for i in range(m):
        gd, ga, gb = row(dy, e, DG + 9 * i), row(dy, e, DG + 9 * i + 3), row(dy, e, DG + 9 * i + 6)
        tA, tB = cross(gd, zA), cross(zB, gd)
        j, o = (j0, 12 * (1 + i)) if flat else (j0 + i, 0)
        put(G, j, o, (-gd[0], -gd[1], -gd[2]))
        put(G, j, o + 3, (tA[0] + ga[0], tA[1] + ga[1], tA[2] + ga[2]))
        put(G, j, o + 6, gd)
        put(G, j, o + 9, (tB[0] + gb[0], tB[1] + gb[1], tB[2] + gb[2]))
