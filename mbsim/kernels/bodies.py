"""Compiled body kernels: kinematics of an iterate (THEORY §4) and the body
residual and tangent (THEORY §5), one loop over bodies; and the scatter of
local blocks into the global residual and tangent data.

Same formulas, same order of operations in spirit, as the numpy code in
:mod:`mbsim.integrators.generalized_alpha`; tests hold them to rounding.
"""
from __future__ import annotations

import numpy as np

from . import njit
from .connectors import _add_block


@njit(cache=True)
def cay_matrix(t, C):
    """C ← cay(t) = I + 4/(4+|t|²)(t̂ + ½t̂²), with t̂² = ttᵀ − |t|² I (THEORY §3)."""
    tt = t[0] * t[0] + t[1] * t[1] + t[2] * t[2]
    s = 4.0 / (4.0 + tt)
    for r in range(3):
        for q in range(3):
            C[r, q] = s * 0.5 * (t[r] * t[q] - (tt if r == q else 0.0)) + (1.0 if r == q else 0.0)
    C[0, 1] -= s * t[2]; C[0, 2] += s * t[1]; C[1, 0] += s * t[2]
    C[1, 2] -= s * t[0]; C[2, 0] -= s * t[1]; C[2, 1] += s * t[0]


@njit(cache=True)
def cay_compose(c, t):
    """t ← the Cayley vector of cay(c)·cay(t): (c + t + ½ c×t) / (1 − ¼ c·t) (the Newton update of θ)."""
    t0, t1, t2 = t[0], t[1], t[2]
    den = 1.0 - 0.25 * (c[0] * t0 + c[1] * t1 + c[2] * t2)
    t[0] = (c[0] + t0 + 0.5 * (c[1] * t2 - c[2] * t1)) / den
    t[1] = (c[1] + t1 + 0.5 * (c[2] * t0 - c[0] * t2)) / den
    t[2] = (c[2] + t2 + 0.5 * (c[0] * t1 - c[1] * t0)) / den


@njit(cache=True)
def kinematics(d, th, qn, rn, vn, an, wn, aln, dt, c_a, g, gamma, a_pred, w_pred, al_pred,
               r1, q1, R1, T, Omega, v1, a1, w1, al1, scr):
    """r' = r_n + d, q' = quat(cay θ) ⊗ q_n (normalised; q_n itself when θ = 0), Λ', T(θ),
    Ω = gT − ω̂', and a', v', ω', α' of every body from the step's increments (THEORY §3, §4)
    (``scr``: connectors.SCRATCH floats of work space)."""
    C = scr[0:9].reshape((3, 3))
    u = scr[9:12]
    for i in range(d.shape[0]):
        t = th[i]
        tt = t[0] * t[0] + t[1] * t[1] + t[2] * t[2]
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
        Ri = R1[i]
        Ri[0, 0] = 1 - 2 * (y0 * y0 + z0 * z0); Ri[0, 1] = 2 * (x0 * y0 - w0 * z0); Ri[0, 2] = 2 * (x0 * z0 + w0 * y0)
        Ri[1, 0] = 2 * (x0 * y0 + w0 * z0); Ri[1, 1] = 1 - 2 * (x0 * x0 + z0 * z0); Ri[1, 2] = 2 * (y0 * z0 - w0 * x0)
        Ri[2, 0] = 2 * (x0 * z0 - w0 * y0); Ri[2, 1] = 2 * (y0 * z0 + w0 * x0); Ri[2, 2] = 1 - 2 * (x0 * x0 + y0 * y0)
        cay_matrix(t, C)
        for r in range(3):
            for q in range(3):
                T[i, r, q] = 0.25 * t[r] * t[q] + (1.0 if r == q else 0.0)
        T[i, 0, 1] -= 0.5 * t[2]; T[i, 0, 2] += 0.5 * t[1]; T[i, 1, 0] += 0.5 * t[2]
        T[i, 1, 2] -= 0.5 * t[0]; T[i, 2, 0] -= 0.5 * t[1]; T[i, 2, 1] += 0.5 * t[0]
        for j in range(3):
            r1[i, j] = rn[i, j] + d[i, j]
            a1[i, j] = c_a * d[i, j] + a_pred[i, j]
            v1[i, j] = vn[i, j] + dt * ((1.0 - gamma) * an[i, j] + gamma * a1[i, j])
        for j in range(3):
            u[j] = g * t[j] + w_pred[i, j]
        for j in range(3):
            w1[i, j] = C[j, 0] * u[0] + C[j, 1] * u[1] + C[j, 2] * u[2]
        for j in range(3):
            u[j] = c_a * t[j] + al_pred[i, j]
        for j in range(3):
            al1[i, j] = C[j, 0] * u[0] + C[j, 1] * u[1] + C[j, 2] * u[2]
        for r in range(3):
            for q in range(3):
                Omega[i, r, q] = g * T[i, r, q]
        Omega[i, 0, 1] += w1[i, 2]; Omega[i, 0, 2] -= w1[i, 1]; Omega[i, 1, 0] -= w1[i, 2]
        Omega[i, 1, 2] += w1[i, 0]; Omega[i, 2, 0] += w1[i, 1]; Omega[i, 2, 1] -= w1[i, 0]


@njit(cache=True)
def residual(nm, mass, Jb, R1, Rn, T, a1, an, w1, al1, F_ext, M_ext, Xn, af, am, c_a, g, want_tangent,
             R, Q, Ktt, scr):
    """Body residual (THEORY §5) into R and its force scale into Q (both (6·nm,)), and the
    rotational tangent blocks K_θθ into Ktt (nm, 3, 3) if ``want_tangent``."""
    W = scr[0:3]; A = scr[3:6]; JW = scr[6:9]; X = scr[9:12]; RX = scr[12:15]
    S = scr[15:24].reshape((3, 3)); inner = scr[24:33].reshape((3, 3)); LI = scr[33:42].reshape((3, 3))
    for i in range(nm):
        Ri, Rni, J = R1[i], Rn[i], Jb[i]
        for j in range(3):
            ir = mass[i] * (am * a1[i, j] + (1.0 - am) * an[i, j])
            R[6 * i + j] = F_ext[i, j] - ir
            Q[6 * i + j] = abs(F_ext[i, j]) + abs(ir)
        for j in range(3):  # material angular velocity and acceleration
            W[j] = Ri[0, j] * w1[i, 0] + Ri[1, j] * w1[i, 1] + Ri[2, j] * w1[i, 2]
            A[j] = Ri[0, j] * al1[i, 0] + Ri[1, j] * al1[i, 1] + Ri[2, j] * al1[i, 2]
        for j in range(3):
            JW[j] = J[j, 0] * W[0] + J[j, 1] * W[1] + J[j, 2] * W[2]
        X[0] = W[1] * JW[2] - W[2] * JW[1]
        X[1] = W[2] * JW[0] - W[0] * JW[2]
        X[2] = W[0] * JW[1] - W[1] * JW[0]
        for j in range(3):
            X[j] = am * (J[j, 0] * A[0] + J[j, 1] * A[1] + J[j, 2] * A[2]) + Xn[i, j] + af * X[j]
        for j in range(3):
            RX[j] = Ri[j, 0] * X[0] + Ri[j, 1] * X[1] + Ri[j, 2] * X[2]
            it = af * RX[j] + (1.0 - af) * (Rni[j, 0] * X[0] + Rni[j, 1] * X[1] + Rni[j, 2] * X[2])
            R[6 * i + 3 + j] = M_ext[i, j] - it
            Q[6 * i + 3 + j] = abs(M_ext[i, j]) + abs(it)
        if want_tangent:
            # inner = α_m J/(βΔt²) + α_f g (Ŵ J − (JW)^)
            for r in range(3):
                for q in range(3):
                    inner[r, q] = am * c_a * J[r, q]
            for q in range(3):
                inner[0, q] += af * g * (-W[2] * J[1, q] + W[1] * J[2, q])
                inner[1, q] += af * g * (W[2] * J[0, q] - W[0] * J[2, q])
                inner[2, q] += af * g * (-W[1] * J[0, q] + W[0] * J[1, q])
            inner[0, 1] += af * g * JW[2]; inner[0, 2] -= af * g * JW[1]; inner[1, 0] -= af * g * JW[2]
            inner[1, 2] += af * g * JW[0]; inner[2, 0] += af * g * JW[1]; inner[2, 1] -= af * g * JW[0]
            # S = Λ_nᵀ Tᵀ
            for r in range(3):
                for q in range(3):
                    S[r, q] = Rni[0, r] * T[i, q, 0] + Rni[1, r] * T[i, q, 1] + Rni[2, r] * T[i, q, 2]
            # K = −α_f (Λ'X)^ + Λ_α inner S
            for r in range(3):
                for q in range(3):
                    LI[r, q] = 0.0
                    for j in range(3):
                        LI[r, q] += (af * Ri[r, j] + (1.0 - af) * Rni[r, j]) * inner[j, q]
            K = Ktt[i]
            for r in range(3):
                for q in range(3):
                    K[r, q] = LI[r, 0] * S[0, q] + LI[r, 1] * S[1, q] + LI[r, 2] * S[2, q]
            K[0, 1] += af * RX[2]; K[0, 2] -= af * RX[1]; K[1, 0] -= af * RX[2]
            K[1, 2] += af * RX[0]; K[2, 0] += af * RX[1]; K[2, 1] -= af * RX[0]


@njit(cache=True)
def scatter_residual(dofs, res, R, Q):
    """R[dofs] += res and Q[dofs] += |res| for the entries of a connector kind (−1: dropped)."""
    for e in range(dofs.shape[0]):
        for j in range(12):
            d = dofs[e, j]
            if d >= 0:
                R[d] += res[e, j]
                Q[d] += abs(res[e, j])


@njit(cache=True)
def scatter_tangent(pos, K, data):
    """data[pos] += K for the local tangents of a connector kind (pos: (n, 144), −1: dropped)."""
    for e in range(pos.shape[0]):
        _add_block(K[e], pos[e], data)


@njit(cache=True)
def scatter_bodies(pos, krr, Ktt, data):
    """data[pos] = the body blocks: k_rr·I (krr (nm,)) and K_θθ (nm, 3, 3); pos (nm, 18)."""
    for i in range(pos.shape[0]):
        for r in range(3):
            for q in range(3):
                data[pos[i, 3 * r + q]] += krr[i] if r == q else 0.0
                data[pos[i, 9 + 3 * r + q]] += Ktt[i, r, q]
