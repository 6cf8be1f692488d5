"""The constrained equations at one state (THEORY §11, initial conditions and reactions).

Accelerations and multipliers::

    M a + Gᵀλ = f − ω × Jω          G a = F̈ − γ

assembled in the Newton system's storage and solved with its LU (:mod:`mbsim.kernels.lu`).  The
multipliers are solved for scaled by ``ref`` (m_ref or J_ref of each: every block O(mass)).  γ is the
velocity-quadratic part of Φ̈: the law's γ_f plus the arms' centripetal part g_d·(ω_B×(ω_B×z_B) −
ω_A×(ω_A×z_A)).
"""
from __future__ import annotations

from ..elements.base import GAMMA, JACOBIAN, Y_GAMMA
from ..kernels import lu as klu
from ..kernels import njit
from ..kernels.so3 import matrices
from ..kernels.vec import cross, mv, row
from .assembly import add_block, scatter_bodies, scatter_residual
from .chain import body_forces, body_rows, put_forces
from . import evaluate

@njit(cache=True)
def solve(bodies, state, loads, el, elx, solver, work, result):
    """Solve the constrained equations at a state; returns −1, or the block whose pivot is singular (as
    :func:`mbsim.kernels.lu.factorize`).

    ``bodies`` = (nm, mass, J_b); ``state`` = (r, q, v, w, t); ``loads`` = (F, M, target): the external
    forces and moments on every body (gravity included; the elements' are added) and the values the
    own rows' second derivatives hold (F̈); ``solver`` = (lu, body_pos,
    data, lu_data, piv, lu_state): the LU (:mod:`mbsim.kernels.lu`), where the body blocks go, the
    tangent storage, the factors and their state (``lu_state[0]`` ← 0: the Newton iteration's
    factorization is overwritten); ``work`` = (Rm, krr, Jw, R, Q, du, sw, x, y, dy, arms, K1, res, Gb,
    kinds, zeros, nodr); ``result`` = (xs (nm, 6): [a, α], λ (physical))."""
    nm, mass, Jb = bodies
    r, q, v, w, t = state
    F, M, target = loads
    lu, body_pos, data, lu_data, piv, lu_state = solver
    Rm, krr, Jw, R, Q, du, sw, x, y, dy, arms, K1, res, Gb, kinds, zeros, nodr = work
    xs, lam = result
    start, body, first, count = el[0], el[1], el[7], el[8]
    ref, dofs, pos = elx[3], elx[6], elx[7]
    matrices(q, Rm)
    for i in range(nm):
        krr[i] = mass[i]
        for a_ in range(3):
            for b_ in range(3):
                acc = 0.0
                for c_ in range(3):
                    for d_ in range(3):
                        acc += Rm[i, a_, c_] * Jb[i, c_, d_] * Rm[i, b_, d_]
                Jw[i, a_, b_] = acc
    for j in range(R.shape[0]):
        R[j] = 0.0
        Q[j] = 0.0
    data[:] = 0.0
    scatter_bodies(body_pos, krr, Jw, data)
    evaluate.at_state(el, (Rm, r, nodr, v, w), (zeros, zeros), t, JACOBIAN | GAMMA, (x, y, dy, arms), kinds)
    w_ = K1.shape[1]
    for kind in range(start.shape[0] - 1):
        for e in range(start[kind], start[kind + 1]):
            put_forces(res, e, body_forces(y, e, arms))
            m = count[e]
            for j in range(12, w_):
                res[e, j] = 0.0
            if m == 0:
                continue
            a, b = body[e, 0], body[e, 1]
            zA, zB = row(arms, e, 0), row(arms, e, 3)
            body_rows(dy, e, m, (zA, zB), Gb, 0)
            for r_ in range(12 + m):
                for c_ in range(12 + m):
                    K1[0, r_, c_] = 0.0
            wa, wb = row(w, a, 0), row(w, b, 0)  # the arms' centripetal part of Φ̈ (the law's γ_f has the rest)
            cA, cB = cross(wa, cross(wa, zA)), cross(wb, cross(wb, zB))
            cd = (cB[0] - cA[0], cB[1] - cA[1], cB[2] - cA[2])
            for i in range(m):
                j = first[e] + i
                k = ref[j]
                for c_ in range(12):
                    K1[0, 12 + i, c_] = k * Gb[i, c_]
                    K1[0, c_, 12 + i] = k * Gb[i, c_]
                rhs = target[j] - (y[e, Y_GAMMA + i] + Gb[i, 6] * cd[0] + Gb[i, 7] * cd[1] + Gb[i, 8] * cd[2])
                res[e, 12 + i] = k * rhs
            add_block(K1, 0, pos, e, data)
    scatter_residual(dofs, res, R, Q)
    for i in range(nm):
        L = mv(Jw, i, row(w, i, 0))  # J ω
        gyro = cross(row(w, i, 0), L)
        for j in range(3):
            R[6 * i + j] += F[i, j]
            R[6 * i + 3 + j] += M[i, j] - gyro[j]
    lu_state[0] = 0.0
    bad = klu.factorize(lu, data, lu_data, piv)
    if bad >= 0:
        return bad
    klu.solve(lu, lu_data, piv, R, du, sw)
    for i in range(nm):
        for j in range(6):
            xs[i, j] = du[6 * i + j]
    for j in range(lam.shape[0]):
        lam[j] = ref[j] * du[6 * nm + j]
    return -1

