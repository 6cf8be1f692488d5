"""The bodies in a generalized-α step: the kinematics of an iterate (THEORY §4) and the body residual
and tangent (THEORY §5), one loop over bodies.

Tuples for 3-vectors, no array views (:mod:`mbsim.kernels.vec`).  The arguments come in the
bundles of :mod:`mbsim.integrators.step`: ``consts`` = (dt, c_a, g, γ, α_f, α_m) of the step,
``start`` = (r, q, v, a, w, α) at t_n, ``pred`` = (a_pred, ω_pred, α_pred) (the parts of a', ω', α'
that do not depend on the unknowns), ``it`` = (r', q', Λ', T, Ω, v', a', ω', α') of the iterate.
"""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels.so3 import cay_mv
from ..kernels.vec import cross, dot, mtv, mv, row


@njit(cache=True)
def kinematics(consts, start, pred, d, th, it, rates):
    """r' = r_n + d, q' = quat(cay θ) ⊗ q_n (normalised; q_n itself when θ = 0), Λ', and a', v', ω', α' of
    every body from the step's increments (d, θ) (THEORY §3, §4); T(θ) and Ω = gT − ω̂' only with
    ``rates`` (the tangents read them, a residual does not)."""
    dt, c_a, g, gamma = consts[0], consts[1], consts[2], consts[3]
    rn, qn, vn, an = start[0], start[1], start[2], start[3]
    a_pred, w_pred, al_pred = pred
    r1, q1, R1, T, Omega, v1, a1, w1, al1 = it
    for i in range(d.shape[0]):
        t = row(th, i, 0)
        tt = dot(t, t)
        if tt == 0.0:
            w0, x0, y0, z0 = qn[i, 0], qn[i, 1], qn[i, 2], qn[i, 3]
        else:  # (1, θ/2) ⊗ q_n, normalised
            pw, px, py, pz = 1.0, 0.5 * t[0], 0.5 * t[1], 0.5 * t[2]
            qw, qx, qy, qz = qn[i, 0], qn[i, 1], qn[i, 2], qn[i, 3]
            w0 = pw * qw - (px * qx + py * qy + pz * qz)
            x0 = pw * qx + qw * px + (py * qz - pz * qy)
            y0 = pw * qy + qw * py + (pz * qx - px * qz)
            z0 = pw * qz + qw * pz + (px * qy - py * qx)
            nq = np.sqrt(w0 * w0 + x0 * x0 + y0 * y0 + z0 * z0)
            w0, x0, y0, z0 = w0 / nq, x0 / nq, y0 / nq, z0 / nq
        q1[i, 0], q1[i, 1], q1[i, 2], q1[i, 3] = w0, x0, y0, z0
        R1[i, 0, 0] = 1 - 2 * (y0 * y0 + z0 * z0); R1[i, 0, 1] = 2 * (x0 * y0 - w0 * z0)
        R1[i, 0, 2] = 2 * (x0 * z0 + w0 * y0); R1[i, 1, 0] = 2 * (x0 * y0 + w0 * z0)
        R1[i, 1, 1] = 1 - 2 * (x0 * x0 + z0 * z0); R1[i, 1, 2] = 2 * (y0 * z0 - w0 * x0)
        R1[i, 2, 0] = 2 * (x0 * z0 - w0 * y0); R1[i, 2, 1] = 2 * (y0 * z0 + w0 * x0)
        R1[i, 2, 2] = 1 - 2 * (x0 * x0 + y0 * y0)
        for j in range(3):
            r1[i, j] = rn[i, j] + d[i, j]
            a1[i, j] = c_a * d[i, j] + a_pred[i, j]
            v1[i, j] = vn[i, j] + dt * ((1.0 - gamma) * an[i, j] + gamma * a1[i, j])
        wi = cay_mv(t, (g * t[0] + w_pred[i, 0], g * t[1] + w_pred[i, 1], g * t[2] + w_pred[i, 2]), 1.0)
        ali = cay_mv(t, (c_a * t[0] + al_pred[i, 0], c_a * t[1] + al_pred[i, 1], c_a * t[2] + al_pred[i, 2]), 1.0)
        for j in range(3):
            w1[i, j] = wi[j]
            al1[i, j] = ali[j]
        if not rates:
            continue
        for r in range(3):
            for q in range(3):
                T[i, r, q] = 0.25 * t[r] * t[q] + (1.0 if r == q else 0.0)
        T[i, 0, 1] -= 0.5 * t[2]; T[i, 0, 2] += 0.5 * t[1]; T[i, 1, 0] += 0.5 * t[2]
        T[i, 1, 2] -= 0.5 * t[0]; T[i, 2, 0] -= 0.5 * t[1]; T[i, 2, 1] += 0.5 * t[0]
        for r in range(3):
            for q in range(3):
                Omega[i, r, q] = g * T[i, r, q]
        Omega[i, 0, 1] += wi[2]; Omega[i, 0, 2] -= wi[1]; Omega[i, 1, 0] -= wi[2]
        Omega[i, 1, 2] += wi[0]; Omega[i, 2, 0] += wi[1]; Omega[i, 2, 1] -= wi[0]


@njit(cache=True)
def residual(bodies, consts, it, an, Rn, loads, want_tangent, out, S):
    """Body residual (THEORY §5) into R and its force scale into Q (both (6·nm,)), and the rotational
    tangent blocks K_θθ into Ktt (nm, 3, 3) if ``want_tangent`` (``out`` = (R, Q, Ktt)).  ``bodies`` =
    (nm, mass, J_b); ``loads`` = (F_α, M_α, k, Xn): the loads at n+α of step k of the block (F_α[k],
    M_α[k], (nm, 3)) and Xn, the material inertia terms of t_n; ``an``, ``Rn`` the accelerations and rotation matrices at t_n
    (``S``: a (6, 3, 3) work array; S[0] = Λ_nᵀTᵀ, S[1] = inner, S[2] = Λ_α inner)."""
    nm, mass, Jb = bodies
    c_a, g, af, am = consts[1], consts[2], consts[4], consts[5]
    R1, T, a1, w1, al1 = it[2], it[3], it[6], it[7], it[8]
    F_ext, M_ext, k, Xn = loads
    R, Q, Ktt = out
    for i in range(nm):
        for j in range(3):
            ir = mass[i] * (am * a1[i, j] + (1.0 - am) * an[i, j])
            R[6 * i + j] = F_ext[k, i, j] - ir
            Q[6 * i + j] = abs(F_ext[k, i, j]) + abs(ir)
        W = mtv(R1, i, row(w1, i, 0))  # material angular velocity and acceleration
        A = mtv(R1, i, row(al1, i, 0))
        JW = mv(Jb, i, W)
        JA = mv(Jb, i, A)
        X0 = cross(W, JW)
        X = (am * JA[0] + Xn[i, 0] + af * X0[0], am * JA[1] + Xn[i, 1] + af * X0[1],
             am * JA[2] + Xn[i, 2] + af * X0[2])
        RX = mv(R1, i, X)
        RnX = mv(Rn, i, X)
        for j in range(3):
            it_ = af * RX[j] + (1.0 - af) * RnX[j]
            R[6 * i + 3 + j] = M_ext[k, i, j] - it_
            Q[6 * i + 3 + j] = abs(M_ext[k, i, j]) + abs(it_)
        if want_tangent:
            # inner = α_m J/(βΔt²) + α_f g (Ŵ J − (JW)^)
            for r in range(3):
                for q in range(3):
                    S[1, r, q] = am * c_a * Jb[i, r, q]
            for q in range(3):
                S[1, 0, q] += af * g * (-W[2] * Jb[i, 1, q] + W[1] * Jb[i, 2, q])
                S[1, 1, q] += af * g * (W[2] * Jb[i, 0, q] - W[0] * Jb[i, 2, q])
                S[1, 2, q] += af * g * (-W[1] * Jb[i, 0, q] + W[0] * Jb[i, 1, q])
            S[1, 0, 1] += af * g * JW[2]; S[1, 0, 2] -= af * g * JW[1]; S[1, 1, 0] -= af * g * JW[2]
            S[1, 1, 2] += af * g * JW[0]; S[1, 2, 0] += af * g * JW[1]; S[1, 2, 1] -= af * g * JW[0]
            # S[0] = Λ_nᵀ Tᵀ
            for r in range(3):
                for q in range(3):
                    S[0, r, q] = Rn[i, 0, r] * T[i, q, 0] + Rn[i, 1, r] * T[i, q, 1] + Rn[i, 2, r] * T[i, q, 2]
            # K = −α_f (Λ'X)^ + Λ_α inner S[0]
            for r in range(3):
                for q in range(3):
                    s = 0.0
                    for j in range(3):
                        s += (af * R1[i, r, j] + (1.0 - af) * Rn[i, r, j]) * S[1, j, q]
                    S[2, r, q] = s
            for r in range(3):
                for q in range(3):
                    Ktt[i, r, q] = S[2, r, 0] * S[0, 0, q] + S[2, r, 1] * S[0, 1, q] + S[2, r, 2] * S[0, 2, q]
            Ktt[i, 0, 1] += af * RX[2]; Ktt[i, 0, 2] -= af * RX[1]; Ktt[i, 1, 0] -= af * RX[2]
            Ktt[i, 1, 2] += af * RX[0]; Ktt[i, 2, 0] += af * RX[1]; Ktt[i, 2, 1] -= af * RX[0]
