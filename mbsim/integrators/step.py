"""The generalized-α step (THEORY §2–§7, §10, §11) as one compiled loop over a block of steps.

:func:`run` takes ``nframes`` blocks of ``spf`` steps of equal size, phase by phase:

1. :func:`_prepare` -- the step's constants: the rotations at t_n, the material inertia terms of t_n,
   the parts of a', ω', α' that do not depend on the unknowns, and the elements interpolated by their
   forces (the joints) at t_n (:func:`_prepare_elements`);
2. :func:`_predict` -- where Newton starts (docs/newton.md): the increments, and the own unknowns
   extrapolated in time;
3. :func:`_newton` -- the iteration: :func:`_evaluate` (the bodies' kinematics and residual, THEORY
   §4–5; every element, :func:`_elements`), the linear solve, and the stopping test of
   :mod:`mbsim.integrators.newton`;
4. :func:`_accept` -- the new state, the predictor's history, the energy integrals;
5. at the end of a block with frames, the frame (:mod:`mbsim.mechanics.frames`) with the joints'
   multipliers from the constrained equations (:mod:`mbsim.mechanics.constrained`).

The elements' residual and tangent are the generalized-α combination of their state derivatives
(THEORY §12), written in :func:`_elements`: a kind evaluated at the α-interpolated state (a spring)
gives ``α_f (K + C·V)`` with the velocity map ``V = (g I, Ω)`` (:func:`mbsim.mechanics.chain.force_block`);
a kind interpolated by its forces (a joint) gives ``α_f Q(q') + (1−α_f) Q(q_n)``, the Jacobian of its
rows at t_{n+1} and t_n, and its rows ``−k Φ(q')`` for the scaled unknowns λ̃ = λ/k.

Arguments come in bundles of arrays and numbers (tuples: unpacked once, passed on whole), not one by
one (docs/develop.md):

- ``plan`` = (nframes, spf, frames, dt, tangent): what to take, and the tangent (:data:`CONSISTENT`,
  :data:`SEED`);
- ``params`` = (α_f, α_m, β, γ);
- ``model`` = (bodies, el, elx): ``bodies`` = (nm, mass, J_b, j_max, arm, gravity, order), ``el`` the
  packed elements (:meth:`mbsim.elements.base.Elements.arrays`), ``elx`` = (index, joint, stiff, ref,
  owner, rotation, dofs, pos, arm, dissipates) (:func:`mbsim.mechanics.mechanism.element_arrays`);
- ``loads`` = (F_α, M_α, F_L, M_L, TG, FE, TGE, TT): per step the loads at n+α, the loads' own forces
  and moments at t_{n+1} (their power), per block and step end the values the own rows hold (F, Ḟ, F̈),
  per frame the external forces and moments and the rows' values at the frame, per block and step end
  the times;
- ``solver`` = (lu, body_pos, size, lu_data, lu_piv, lu_state): the LU (:mod:`mbsim.kernels.lu`), where
  the body blocks go, the storage size, and the factorization kept between calls;
- ``test`` = :func:`mbsim.integrators.newton.settings`;
- ``state`` = (r, q, v, a, w, α, a_prev, α_prev, prev_dt, energy, λ, λ_prev, λ_gap) (in/out);
- ``report`` = (iterations, residuals, counters, hist, R_out, status) (out);
- ``frames`` = the frame buffers (:data:`mbsim.mechanics.frames.BUFFERS`, as a tuple; empty without).
"""
from __future__ import annotations

import numpy as np

from ..elements.base import COMMIT, DERIVATIVES, JACOBIAN, N_DY, N_X, N_Y, VALUES, Y_P, Y_PHI, Y_POWER, Y_WORK
from ..kernels import lu as klu
from ..kernels import njit
from ..kernels.so3 import cay_compose, cay_mv, matrices
from ..kernels import unsigned as _u
from ..kernels.vec import mix, mt, mscale, of_array, put, row
from ..mechanics import gather
from ..mechanics.assembly import add_block, scatter_bodies, scatter_forces, scatter_one
from ..mechanics.chain import body_forces, body_rows, force_block, put_forces
from ..mechanics.constrained import solve as constrained_solve
from ..mechanics.evaluate import FORCES
from ..mechanics.frames import frame_row
from ..mechanics.laws import law
from . import bodies as kb
from . import newton as nt

# The tangent of the Newton iteration (``integrator.tangent``): none (a residual only), the consistent
# one, THEORY §8's seed matrices.
NO_TANGENT, CONSISTENT, SEED = 0, 1, 2
TANGENTS = {"consistent": CONSISTENT, "seed": SEED}


# ------------------------------------------------------------------------------------------------
# the elements in a step
# ------------------------------------------------------------------------------------------------
@njit(cache=True)
def _prepare_elements(t, bodies, el, wk, zeros):
    """The step's constants of the elements, from t_n (``bodies`` = (Λ_n, r_n, v_n, ω_n)): of the kinds
    interpolated by their forces, per instance ``cache[e, 0:12]`` its forces about the centres with λ = 0
    and ``cache[e, 12(1 + i) …]`` the bodies' row of its own row i's Jacobian G(q_n) (the others need
    nothing: :func:`mbsim.mechanics.gather.interpolated` forms their t_n halves at every iterate).
    ``wk`` as in :func:`_elements` (x, y, dy, arms: a chunk's rows)."""
    start, data, count, interp = el[0], el[2], el[8], el[10]
    x, y, dy, arms, res, K1, cache, Gb = wk
    Rn, rn, vn, wn, nodr = bodies
    for kind in range(start.shape[0] - 1):
        if interp[kind] != FORCES:
            continue
        for lo in range(start[kind], start[kind + 1], gather.CHUNK):
            hi = min(lo + gather.CHUNK, start[kind + 1])
            gather.at_state(el, kind, lo, hi, lo, (Rn, rn, nodr, vn, wn), (zeros, zeros), x, arms, False)
            law(kind, 0, hi - lo, data[lo:hi], x, t, JACOBIAN, y, dy)
            for e in range(lo, hi):
                i = e - lo
                put_forces(cache, e, body_forces(y, i, arms))
                m = count[e]
                if m:
                    body_rows(dy, i, m, (row(arms, i, 0), row(arms, i, 3)), cache, e)


@njit(cache=True)
def _forces_at_alpha(ei, m, j0, af, Q1, lam, scale, y, cache, res):
    """``res[i]`` of an instance e interpolated by its forces (``ei`` = (e, i): its rows of ``y`` and
    ``res`` are i): ``α_f Q(q') + (1−α_f) (Q_n − Σ λ_i G_n,i)`` (``Q1`` its forces at q', ``cache[e]`` its
    forces with λ = 0 and its rows' Jacobian at q_n), and its rows ``−k_i Φ_i(q')`` (THEORY §11)."""
    e, i = ei
    bf = 1.0 - af
    n0, n1, n2, n3 = row(cache, e, 0), row(cache, e, 3), row(cache, e, 6), row(cache, e, 9)
    for k in range(m):
        lk = lam[_u(j0 + k)]
        o = 12 * (1 + k)
        n0 = mix(1.0, n0, -lk, row(cache, e, o))
        n1 = mix(1.0, n1, -lk, row(cache, e, o + 3))
        n2 = mix(1.0, n2, -lk, row(cache, e, o + 6))
        n3 = mix(1.0, n3, -lk, row(cache, e, o + 9))
    put(res, i, 0, mix(af, Q1[0], bf, n0))
    put(res, i, 3, mix(af, Q1[1], bf, n1))
    put(res, i, 6, mix(af, Q1[2], bf, n2))
    put(res, i, 9, mix(af, Q1[3], bf, n3))
    ui = _u(i)
    for k in range(m):
        res[ui, _u(12 + k)] = -scale[_u(j0 + k)] * y[ui, _u(Y_PHI + k)]
    for k in range(12 + m, res.shape[1]):
        res[ui, _u(k)] = 0.0


@njit(cache=True)
def _elements(tangent, consts, times, it, own, el, elx, wk, out):
    """Every element's share of the residual of an iterate, and with ``tangent`` its blocks added into
    the solver's storage (the module docstring); returns the first instance a law finds undefined, or −1.

    ``consts`` = (dt, c_a, g, γ, α_f, α_m); ``times`` = (t_n, t_{n+1}); ``it`` = (Λ', Λ_n, r', r_n, δ,
    v', v_n, ω', ω_n, T, Ω) (δ the positions' increments, as the solver holds them); ``own`` = (λ, k,
    target); ``wk`` = (x, y, dy, arms, res, K1, cache, Gb), the first five a chunk's rows
    (:data:`mbsim.mechanics.gather.CHUNK`: instance e is row e − lo of its chunk lo …), ``cache`` every
    instance's (:func:`_prepare_elements`); ``out`` = (data, R, Q)."""
    g, af = consts[2], consts[4]
    tn, t1 = times
    R1, Rn, r1, rn, dr, v1, vn, w1, wn, T, Om = it
    lam, scale, target = own
    start, body, data, first, count, mask, interp, seed = el[0], el[1], el[2], el[7], el[8], el[9], el[10], el[12]
    dofs, pos = elx[6], elx[7]
    x, y, dy, arms, res, K1, cache, Gb = wk
    tdata, R, Q = out
    direct = pos.shape[0] > 0  # the blocks straight into the solver's storage; else into K1[e] (n, W, W)
    want = DERIVATIVES | JACOBIAN if tangent != NO_TANGENT else VALUES
    bf = 1.0 - af
    failed = -1
    for kind in range(start.shape[0] - 1):
        forces = interp[kind] == FORCES
        mk = mask[kind]
        for lo in range(start[kind], start[kind + 1], gather.CHUNK):
            hi = min(lo + gather.CHUNK, start[kind + 1])
            if forces:  # at t_{n+1}, the forces interpolated (THEORY §11)
                gather.at_state(el, kind, lo, hi, lo, (R1, rn, dr, v1, w1), (lam, target), x, arms, False)
                f = law(kind, 0, hi - lo, data[lo:hi], x, t1, want, y, dy)
            else:  # at the α-interpolated state (THEORY §6)
                gather.interpolated(el, kind, lo, hi, lo, (R1, r1, v1, w1), af, (Rn, rn, vn, wn), (lam, target), x,
                                    arms)
                f = law(kind, 0, hi - lo, data[lo:hi], x, tn + af * (t1 - tn), want, y, dy)
            if f >= 0 and failed < 0:
                failed = lo + f
            for e in range(lo, hi):
                i = e - lo
                Q1 = body_forces(y, i, arms)
                m = count[e]
                if forces:
                    _forces_at_alpha((e, i), m, first[e], af, Q1, lam, scale, y, cache, res)
                    scatter_one(dofs, e, res, i, R, Q)
                else:
                    scatter_forces(dofs, e, Q1, R, Q)
                if tangent == NO_TANGENT:
                    continue
                a, b = body[e, 0], body[e, 1]
                if forces:  # at t_{n+1}: the lever arms are the arms the unknowns turn
                    arms4 = (row(arms, i, 0), row(arms, i, 3), row(arms, i, 0), row(arms, i, 3))
                else:
                    arms4 = (row(arms, i, 0), row(arms, i, 3), row(arms, i, 6), row(arms, i, 9))
                if tangent == SEED and seed[e]:  # THEORY §8: δω' = g Tᵀ Δθ, no geometric terms
                    vmap = (g, mscale(g, mt(of_array(T, a))), mscale(g, mt(of_array(T, b))), row(w1, a, 0), row(w1, b, 0))
                    geometric = False
                else:
                    vmap = (g, of_array(Om, a), of_array(Om, b), row(w1, a, 0), row(w1, b, 0))
                    geometric = True
                ke = 0 if direct else e
                force_block(K1, ke, dy, i, mk, row(y, i, Y_P), arms4, vmap, (af, af), geometric)
                if m:  # the own unknowns' rows and columns: k G(q') and k G_α (THEORY §11)
                    body_rows(dy, i, m, (arms4[2], arms4[3]), Gb, 0)
                    for i in range(m):
                        k = scale[first[e] + i]
                        for c in range(12):
                            K1[ke, 12 + i, c] = k * Gb[i, c]
                            K1[ke, c, 12 + i] = k * (af * Gb[i, c] + bf * cache[e, 12 * (1 + i) + c])
                        for c in range(12, 12 + m):
                            K1[ke, 12 + i, c] = 0.0
                if direct:
                    add_block(K1, ke, pos, e, tdata)
    return failed


@njit(cache=True)
def _evaluate(tangent, step, start, inc, it, model, own, wk, out):
    """One residual, and with ``tangent`` the tangent (into the solver's storage ``data``), at the
    iterate with increments ``inc`` = (d, θ); returns the first element instance whose law is undefined
    there (a collapsed spring), or −1.

    ``step`` = (consts, times, loads, Xn, Λ_n, pred) (:func:`_prepare`); ``start`` = (r, q, v, a, ω, α)
    at t_n; ``it`` the iterate's arrays (r', q', Λ', T, Ω, v', a', ω', α'); ``model`` = (bodies, el,
    elx, body_pos, krr); ``own`` = (λ, k, target); ``wk`` = (element work, S): the arrays of
    :func:`_elements` and a (6, 3, 3) work array; ``out`` = (data, R, Q, Ktt)."""
    consts, times, loads, Xn, Rn, pred = step
    r, q, v, a, w, al = start
    d, th = inc
    bodies, el, elx, body_pos, krr = model
    nm, mass, Jb = bodies[0], bodies[1], bodies[2]
    ewk, S = wk
    data, R, Q, Ktt = out
    rates = tangent != NO_TANGENT
    kb.kinematics(consts, (r, q, v, a), pred, d, th, it, rates)
    kb.residual((nm, mass, Jb), consts, it, a, Rn, (loads[0], loads[1], loads[2], Xn), rates, (R, Q, Ktt), S)
    for j in range(6 * nm, R.shape[0]):  # the rows of the elements' own unknowns: theirs alone
        R[j] = 0.0
        Q[j] = 0.0
    if rates:
        data[:] = 0.0
        scatter_bodies(body_pos, krr, Ktt, data)
    r1, q1, R1, T, Om, v1, a1, w1, al1 = it
    return _elements(tangent, consts, times, (R1, Rn, r1, r, d, v1, v, w1, w, T, Om), own, el, elx, ewk,
                     (data, R, Q))


@njit(cache=True)
def _extrapolation(x, x0, x1, x2, two, three):
    """The weights (w0, w1, w2) of the values at x0, x1, x2 in the polynomial through them evaluated
    at x: Lagrange's through all three if ``three``, the line through the first two if ``two``, else
    the first value alone ((1, 0, 0)).  The Newton start of a step (docs/newton.md)."""
    if three:
        return ((x - x1) * (x - x2) / ((x0 - x1) * (x0 - x2)), (x - x0) * (x - x2) / ((x1 - x0) * (x1 - x2)),
                (x - x0) * (x - x1) / ((x2 - x0) * (x2 - x1)))
    if two:
        return (x - x1) / (x0 - x1), (x - x0) / (x1 - x0), 0.0
    return 1.0, 0.0, 0.0


@njit(cache=True)
def _prepare(consts, tn, model, state, pw):
    """The step's constants (``pw`` = (Λ_n, a_pred, ω_pred, α_pred, Xn, W, A, JW, stiff, element work,
    zeros, nodr)): the rotations at t_n, the parts of a', ω', α' that do not depend on the unknowns
    (THEORY §4), the material inertia terms of t_n (THEORY §5), the springs' round-off scale
    (:func:`mbsim.integrators.newton.spring_scale`) and the elements interpolated by their forces at t_n."""
    dt, af, am, beta, gamma = consts[0], consts[4], consts[5], consts[6], consts[3]
    bodies, el, elx = model[0], model[1], model[2]
    nm, Jb = bodies[0], bodies[2]
    r, q, v, a, w, al = state
    Rn, a_pred, w_pred, al_pred, Xn, W, A, JW, stiff, ewk, zeros, nodr = pw
    matrices(q, Rn)
    _prepare_elements(tn, (Rn, r, v, w, nodr), el, ewk, zeros)
    for i in range(r.shape[0]):
        for j in range(3):
            a_pred[i, j] = -v[i, j] / (beta * dt) + (1.0 - 0.5 / beta) * a[i, j]
            w_pred[i, j] = (1.0 - gamma / beta) * w[i, j] + dt * (1.0 - 0.5 * gamma / beta) * al[i, j]
            al_pred[i, j] = -w[i, j] / (beta * dt) + (1.0 - 0.5 / beta) * al[i, j]
    for i in range(nm):
        for j in range(3):
            W[j] = Rn[i, 0, j] * w[i, 0] + Rn[i, 1, j] * w[i, 1] + Rn[i, 2, j] * w[i, 2]
            A[j] = Rn[i, 0, j] * al[i, 0] + Rn[i, 1, j] * al[i, 1] + Rn[i, 2, j] * al[i, 2]
        for j in range(3):
            JW[j] = Jb[i, j, 0] * W[0] + Jb[i, j, 1] * W[1] + Jb[i, j, 2] * W[2]
        Xn[i, 0] = (1.0 - af) * (W[1] * JW[2] - W[2] * JW[1])
        Xn[i, 1] = (1.0 - af) * (W[2] * JW[0] - W[0] * JW[2])
        Xn[i, 2] = (1.0 - af) * (W[0] * JW[1] - W[1] * JW[0])
        for j in range(3):
            Xn[i, j] += (1.0 - am) * (Jb[i, j, 0] * A[0] + Jb[i, j, 1] * A[1] + Jb[i, j, 2] * A[2])
    nt.spring_scale(nm, r, el[1], elx[8], elx[2], stiff)


@njit(cache=True)
def _predict(consts, nm, state, history, inc, lam1):
    """Where Newton starts (docs/newton.md): the increments (d, θ) (``inc``) from Newmark's relations
    with a' extrapolated from a_n, a_prev and a_prev2 (quadratically; linearly with one step of
    history; a' = a_n without), and the own unknowns ``lam1`` extrapolated in time from the last
    steps' values.  ``history`` = (a_prev, α_prev, prev_dt, λ_prev, λ_gap); ``state`` = (v, a, ω, α, λ)."""
    dt, beta, af = consts[0], consts[6], consts[4]
    v, a, w, al, lam = state
    a_prev, al_prev, prev_dt, lam_prev, lam_gap = history
    d, th = inc
    extrapolate = prev_dt[0] > 0.0
    # a' extrapolated from a_n, a_prev and a_prev2 at t_n, t_n − h1, t_n − h1 − h2: a' = p0 a_n + p1 a_prev + p2 a_prev2
    p0, p1, p2 = _extrapolation(dt, 0.0, -prev_dt[0], -prev_dt[0] - prev_dt[1], extrapolate,
                                extrapolate and prev_dt[1] > 0.0)
    for i in range(nm):
        c0 = (dt * w[i, 0] + 0.5 * dt * dt * al[i, 0], dt * w[i, 1] + 0.5 * dt * dt * al[i, 1],
              dt * w[i, 2] + 0.5 * dt * dt * al[i, 2])  # θ₀
        if not extrapolate:
            for j in range(3):
                d[i, j] = dt * v[i, j] + 0.5 * dt * dt * a[i, j]
                th[i, j] = c0[j]
            continue
        # cay(θ₀)ᵀ applied to the extrapolated α
        ax = (p0 * al[i, 0] + p1 * al_prev[0, i, 0] + p2 * al_prev[1, i, 0],
              p0 * al[i, 1] + p1 * al_prev[0, i, 1] + p2 * al_prev[1, i, 1],
              p0 * al[i, 2] + p1 * al_prev[0, i, 2] + p2 * al_prev[1, i, 2])
        CA = cay_mv(c0, ax, -1.0)
        for j in range(3):
            d[i, j] = dt * v[i, j] + dt * dt * ((0.5 - beta) * a[i, j]
                                                + beta * (p0 * a[i, j] + p1 * a_prev[0, i, j] + p2 * a_prev[1, i, j]))
            th[i, j] = dt * w[i, j] + dt * dt * ((0.5 - beta) * al[i, j] + beta * CA[j])
    # the own unknowns from the last steps' values extrapolated in time (quadratically through three,
    # linearly through two, the last alone after a frame): lam belongs to t_n + tau (the last step's
    # t_n−1 + α_f Δt, or t_n itself after a frame's restart), lam_prev[0] lam_gap[0] before it, lam_prev[1]
    # lam_gap[1] before that; the new ones to t_n + α_f Δt (THEORY §11)
    tau = -(1.0 - af) * prev_dt[0]
    l0, l1, l2 = _extrapolation(af * dt, tau, tau - lam_gap[0], tau - lam_gap[0] - lam_gap[1],
                                lam_gap[0] > 0.0, lam_gap[0] > 0.0 and lam_gap[1] > 0.0)
    for j in range(lam1.shape[0]):  # (the terms of weight 0 left out: a frame's multipliers may be NaN)
        lam1[j] = l0 * lam[j]
        if l1 != 0.0:
            lam1[j] += l1 * lam_prev[0, j]
        if l2 != 0.0:
            lam1[j] += l2 * lam_prev[1, j]


@njit(cache=True)
def _apply(du, nm, inc, lam, scale):
    """The Newton correction ``du``: d ← d + Δr, θ ← cayvec(cay(Δθ) cay(θ)) per moving body, and the
    elements' own unknowns (physical) λ ← λ + k Δλ̃ (the solve is for λ̃ = λ/k)."""
    d, th = inc
    for i in range(nm):
        for j in range(3):
            d[i, j] += du[6 * i + j]
        cay_compose((du[6 * i + 3], du[6 * i + 4], du[6 * i + 5]), th, i)
    for j in range(lam.shape[0]):
        lam[j] += scale[j] * du[6 * nm + j]


@njit(cache=True)
def _correction(fresh, solver, lu_work, data, R, du, counters):
    """du ← K⁻¹R with the factorization in ``lu_data``, factorizing the tangent ``data`` first if
    ``fresh`` (``solver`` = the LU tuple; ``lu_work`` = (lu_data, piv, lu_state, dt, sw)).  Returns −1;
    the block whose pivot is singular (:func:`mbsim.kernels.lu.factorize`); −2 when du is not finite."""
    lu_data, piv, lu_state, dt, sw = lu_work
    if fresh:
        counters[1] += 1
        bad = klu.factorize(solver, data, lu_data, piv)
        if bad >= 0:
            lu_state[0] = 0.0
            return bad
        lu_state[0] = 1.0
        lu_state[1] = dt
    klu.solve(solver, lu_data, piv, R, du, sw)
    return -1 if _finite1(du) else -2


@njit(cache=True)
def _finite1(x):
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


@njit(cache=True)
def _finite2(x):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if not np.isfinite(x[i, j]):
                return False
    return True


@njit(cache=True)
def _newton(ctl, step, start, inc, it, model, own, wk, out, sol, nwk, counters):
    """The Newton iteration of one step (:mod:`mbsim.integrators.newton` states its stopping test); returns
    ``(reason, culprit, k, nh, thin)``: 0 or why it failed (a code of :mod:`mbsim.integrators.newton`), the
    element or block it names, the corrections applied, the residuals evaluated (their norms in
    ``hist``), whether it stopped on a thin margin.

    ``ctl`` = (tangent, modified, max_it, rtol, atol, roundoff, noise, contraction, slow, thin_margin);
    ``sol`` = (lu, lu_data, piv, lu_state, sw); ``nwk`` = (tol, fin, tol_own, fin_own, stiff, hist, du,
    e_noise, x_noise); the rest as :func:`_evaluate`."""
    tangent, modified, max_it, rtol, atol, roundoff, noise, contraction, slow, thin_margin = ctl
    consts, pred = step[0], step[5]
    dt = consts[0]
    bodies, el, elx = model[0], model[1], model[2]
    nm, mass, j_max, arm = bodies[0], bodies[1], bodies[3], bodies[4]
    lam1, scale = own[0], own[1]
    data, R, Q = out[0], out[1], out[2]
    lu, lu_data, piv, lu_state, sw = sol
    tol, fin, tol_own, fin_own, stiff, hist, du, e_noise, x_noise = nwk
    n_own = lam1.shape[0]
    refresh = R.shape[0] >= 0  # True, as a run-time bool: a literal would compile a second _correction
    lu_work = (lu_data, piv, lu_state, dt, sw)
    have = modified and lu_state[0] > 0.5 and abs(lu_state[1] - dt) <= 1e-12 * dt
    last = np.inf
    last_all = np.inf
    refreshed = False  # whether this step has factorized a tangent of its own
    thin = False
    reason = 0
    culprit = -1
    k = 0
    nh = 0
    while True:
        fresh = not have
        counters[2] += 1
        culprit = _evaluate(tangent if fresh else NO_TANGENT, step, start, inc, it, model, own, wk, out)
        if culprit >= 0:
            reason = nt.DEGENERATE
            break
        rnorm = nt.norm(R)
        hist[nh] = rnorm
        nh += 1
        if not np.isfinite(rnorm):
            reason = nt.NONFINITE_RESIDUAL
            break
        if nh >= 4 and hist[nh - 1] > hist[nh - 2] > hist[nh - 3] > hist[nh - 4]:
            reason = nt.GREW
            break
        if rnorm > nt.BLOW_UP * max(hist[0], nt.TINY):
            reason = nt.BLEW_UP
            break
        nt.tolerances((rtol, atol, roundoff), consts, (nm, mass, j_max, arm, stiff), inc, it, pred, (R, Q),
                      (tol, fin))
        nt.own_tolerances(nm, el[1], elx[4], elx[5], (tol, fin), (tol_own, fin_own))
        hold = nt.rows_hold(R, nm, scale, tol_own)
        culprit = _correction(fresh, lu, lu_work, data, R, du, counters)
        if culprit != -1:
            reason = nt.NONFINITE_CORRECTION if culprit == -2 else nt.SINGULAR
            break
        refreshed = refreshed or fresh
        have = True
        sz, sz_all = nt.sizes(du, tol, tol_own, fin, fin_own)
        rate = sz / last if last > 0.0 else np.inf
        rate_all = sz_all / last_all if last_all > 0.0 else np.inf
        if k > 0 and hold and sz <= noise:
            break  # converged: Δu_k is round-off noise, nothing to gain from it
        if k > 0 and hold and k < max_it and rate_all < 1.0 and rate_all * sz_all <= 1.0 - rate_all:
            # converged once Δu_k is applied: ‖u_k + Δu_k − u*‖ ≤ ρ‖Δu_k‖/(1 − ρ) ≤ tol, at the price of the
            # kinematics, not of another residual; measured with every unknown weighed
            counters[0] += 1
            k += 1
            thin = rate_all * sz_all > thin_margin * (1.0 - rate_all)
            _apply(du, nm, inc, lam1, scale)
            kb.kinematics(consts, (start[0], start[1], start[2], start[3]), pred, inc[0], inc[1], it, not refresh)
            break
        if k > 0 and hold and rate < 1.0 and sz <= 1.0 - rate:
            break  # at the iteration limit: u_k itself, ‖u_k − u*‖ ≤ ‖Δu_k‖/(1 − ρ) ≤ tol
        if (k > 0 and hold and refreshed and n_own > 0 and rate_all > nt.STALL
                and sz_all <= nt.noise_size(nm, inc[0], (el[1], elx[8], elx[4], elx[5]), scale, lu,
                                            (lu_data, piv), (fin, fin_own), (e_noise, x_noise, sw))):
            # converged as far as floating point allows: with a tangent of this step the corrections no longer
            # shrink, and they are no larger than what the round-off of the joints' rows makes through K⁻¹
            counters[3] += 1
            break
        if k == max_it:
            reason = nt.MAX_ITERATIONS
            break
        if not fresh and k > 0 and rate > contraction:
            # the old factorization no longer contracts fast enough: refresh it here, and measure the rate
            # afresh from two corrections of the new one
            counters[2] += 1
            _evaluate(tangent, step, start, inc, it, model, own, wk, out)
            culprit = _correction(refresh, lu, lu_work, data, R, du, counters)
            refreshed = True
            if culprit != -1:
                reason = nt.NONFINITE_CORRECTION if culprit == -2 else nt.SINGULAR
                break
            sz, sz_all = nt.sizes(du, tol, tol_own, fin, fin_own)
        if not modified:
            have = False
            lu_state[0] = 0.0
        counters[0] += 1
        k += 1
        last = sz
        last_all = sz_all
        _apply(du, nm, inc, lam1, scale)
    return reason, culprit, k, nh, thin


@njit(cache=True)
def _accept(consts, step_k, state, it, own, model, pw, energy_wk):
    """The step's iterate becomes the state: the predictor's history shifts, the own unknowns move on, and
    the energy integrals advance (trapezoidal: dissipated power and the loads' power, THEORY §9; the
    drives' work −λ_mid·(F(t_{n+1}) − F(t_n)), THEORY §11).

    ``step_k`` = (TG, f, step, FL, ML, ks, t1); ``pw`` = the power work (Λ, x, y, dy, arms, nodr)."""
    dt, af = consts[0], consts[4]
    TG, f, step, FL1, ML1, ks, t1 = step_k
    r, q, v, a, w, al, a_prev, al_prev, prev_dt, energy, lam, lam_prev, lam_gap = state
    r1, q1, R1, T, Om, v1, a1, w1, al1 = it
    lam1, target = own
    el, elx = model[1], model[2]
    Rw, x, y, dy, arms, nodr = pw
    n_all = r.shape[0]
    for i in range(n_all):
        for j in range(3):
            a_prev[1, i, j] = a_prev[0, i, j]; al_prev[1, i, j] = al_prev[0, i, j]
            a_prev[0, i, j] = a[i, j]; al_prev[0, i, j] = al[i, j]
            r[i, j] = r1[i, j]; v[i, j] = v1[i, j]; a[i, j] = a1[i, j]
            w[i, j] = w1[i, j]; al[i, j] = al1[i, j]
        for j in range(4):
            q[i, j] = q1[i, j]
    if lam.shape[0] > 0:  # the drives' work, −λ_mid·(F(t_{n+1}) − F(t_n)), λ_mid at t_n + Δt/2 (THEORY §11, energy)
        tau = -(1.0 - af) * prev_dt[0]  # when the last multipliers belong to, from t_n (0: a frame's)
        wgt = (0.5 * dt - tau) / (af * dt - tau)
        for j in range(lam.shape[0]):
            dF = TG[f, step + 1, 0, j] - TG[f, step, 0, j]
            if dF != 0.0:
                energy[1] -= (lam[j] + wgt * (lam1[j] - lam[j])) * dF
    for j in range(lam.shape[0]):
        lam_prev[1, j] = lam_prev[0, j]
        lam_prev[0, j] = lam[j]
        lam[j] = lam1[j]
    lam_gap[1] = lam_gap[0]
    lam_gap[0] = af * dt - (-(1.0 - af) * prev_dt[0])  # from lam's time (t_n + tau) to lam1's (t_n + α_f Δt)
    prev_dt[1] = prev_dt[0]
    prev_dt[0] = dt
    # the power the elements that can dissipate dissipate at the new state (an ideal joint does no work, and
    # its law is the costliest: it is not evaluated again here)
    matrices(q, Rw)
    pd, pe = _power(el, elx, (Rw, r, nodr, v, w), (lam, target), t1, (x, y, dy, arms))
    for i in range(n_all):
        for j in range(3):
            pe += FL1[ks, i, j] * v[i, j] + ML1[ks, i, j] * w[i, j]
    energy[0] += 0.5 * dt * (energy[2] + pd)
    energy[1] += 0.5 * dt * (energy[3] + pe)
    energy[2] = pd
    energy[3] = pe


@njit(cache=True)
def _power(el, elx, bodies, own, t, work):
    """The power the elements dissipate at an accepted state (the kinds whose instances can: ``elx[9]``),
    and the power they put in as external work (the kinds that work: ``elx[10]``), kind by kind; the kinds
    that count turns (``elx[11]``) keep their angles there (COMMIT)."""
    start, data = el[0], el[2]
    dissipates, works, remembers = elx[9], elx[10], elx[11]
    x, y, dy, arms = work
    power, worked = 0.0, 0.0
    for kind in range(start.shape[0] - 1):
        if not (dissipates[kind] or works[kind] or remembers[kind]):
            continue
        for lo in range(start[kind], start[kind + 1], gather.CHUNK):
            hi = min(lo + gather.CHUNK, start[kind + 1])
            gather.at_state(el, kind, lo, hi, lo, bodies, own, x, arms, False)
            law(kind, 0, hi - lo, data[lo:hi], x, t, VALUES | COMMIT, y, dy)
            for i in range(hi - lo):
                power += y[i, Y_POWER]
                if works[kind]:
                    worked += y[i, Y_WORK]
    return power, worked


def instance_work(shared, width: int) -> tuple:
    """The work arrays with a row per element instance, made once per integrator (plain Python): ``shared``
    = (x, y, dy, arms), the mechanism's (:attr:`mbsim.mechanics.mechanism.Mechanism.work`), with the joints'
    forces and Jacobian at the step's start (:func:`_prepare_elements`) and the constrained equations' rows
    (``width`` = W).  Allocated at every call, they cost a thousand-link chain 8 MB zeroed per block of
    frames, and per step where the steps are taken one by one."""
    n = shared[0].shape[0]
    return tuple(shared) + (np.zeros((n, 12 * (width - 11))), np.zeros((n, width)))


@njit(cache=True, allocates=True)
def _workspace(plan, params, model, solver, state, max_it, work):
    """Every work array of a call, allocated once (those with a row per element instance are ``work``,
    :func:`instance_work`): ``(consts, mdl, it, pred, Xn, inc, ewk, S, pw, data, Ktt, nwk, lam1, scale, cwk,
    fwk, xs, saved)`` (their uses: the phases above)."""
    dt = plan[3]
    af, am, beta, gamma = params
    bodies, el, elx = model
    nm, mass = bodies[0], bodies[1]
    lu, body_pos, size, lu_data = solver[0], solver[1], solver[2], solver[3]
    r, q, v, a, w, al, energy, lam = state[0], state[1], state[2], state[3], state[4], state[5], state[9], state[10]
    n_all = r.shape[0]
    n_own = lam.shape[0]
    ndof = 6 * nm + n_own
    n_el = el[1].shape[0]
    n_kinds = el[0].shape[0] - 1
    W = elx[6].shape[1]
    c_a = 1.0 / (beta * dt * dt)
    g = gamma / (beta * dt)
    consts = (dt, c_a, g, gamma, af, am, beta)
    krr = np.empty(nm)
    for i in range(nm):
        krr[i] = am * mass[i] * c_a
    Rn = np.empty((n_all, 3, 3))
    it = (np.empty((n_all, 3)), np.empty((n_all, 4)), np.empty((n_all, 3, 3)), np.empty((n_all, 3, 3)),
          np.empty((n_all, 3, 3)), np.empty((n_all, 3)), np.empty((n_all, 3)), np.empty((n_all, 3)),
          np.empty((n_all, 3)))
    pred = (np.empty((n_all, 3)), np.empty((n_all, 3)), np.empty((n_all, 3)))
    Xn = np.empty((nm, 3))
    inc = (np.zeros((n_all, 3)), np.zeros((n_all, 3)))
    x, y, dy, arms, cache, cres = work  # every instance's
    nc = min(gather.CHUNK, n_el)  # the step's: a chunk's rows, which stay in the processor's cache
    ewk = (np.zeros((nc, N_X)), np.zeros((nc, N_Y)), np.zeros((nc, N_DY)), np.zeros((nc, 12)), np.zeros((nc, W)),
           np.zeros((1, W, W)), cache, np.zeros((max(W - 12, 1), 12)))
    S = np.empty((6, 3, 3))
    nodr = np.zeros((0, 3))
    zeros = np.zeros(n_own)
    stiff = np.empty(nm)
    pw = (Rn, pred[0], pred[1], pred[2], Xn, np.empty(3), np.empty(3), np.empty(3), stiff, ewk, zeros, nodr)
    R, Q = np.empty(ndof), np.empty(ndof)
    # the block LUs factorize in place: the tangent is assembled into the factorization's storage, which holds
    # the factors kept by modified Newton until a fresh tangent replaces them (one array, no copy)
    data = np.empty(size) if lu[0] else lu_data
    Ktt = np.empty((nm, 3, 3))
    du, sw = np.empty(ndof), np.empty(max(18 * nm, ndof))
    nwk = (np.empty((nm, 2)), np.empty((nm, 2)), np.empty(n_own), np.empty(n_own), stiff,
           np.empty(2 * max_it + 2), du, np.empty(ndof), np.empty(ndof))
    lam1, scale = np.empty(n_own), np.empty(n_own)
    for j in range(n_own):
        scale[j] = elx[3][j] * c_a  # k = m_ref/(βΔt²) or J_ref/(βΔt²)
    mdl = (bodies, el, elx, body_pos, krr)
    kinds = np.ones(n_kinds, np.int64)
    cwk = (np.empty((n_all, 3, 3)), np.empty(nm), np.empty((nm, 3, 3)), R, Q, du, sw, x, y, dy, arms, ewk[5],
           cres, ewk[7], kinds, zeros, nodr)
    fwk = (np.empty((n_all, 3, 3)), x, y, dy, arms, kinds, np.empty(9), nodr)
    saved = (np.empty_like(r), np.empty_like(q), np.empty_like(v), np.empty_like(a), np.empty_like(w), np.empty_like(al),
             np.empty_like(energy), np.empty(n_own), np.empty((n_all, 3)), np.empty((n_all, 3)))
    return (consts, mdl, it, pred, Xn, inc, ewk, S, pw, (data, R, Q, Ktt), nwk, lam1, scale, cwk, fwk,
            np.empty((nm, 6)), saved, sw)


@njit(cache=True, allocates=True)
def evaluate(plan, params, model, loads, solver, state, inc, lam, out, work):
    """The residual (and with ``plan[4]`` the tangent) of the first step of ``loads`` from ``state`` at the
    iterate with increments ``inc`` = (d, θ) and own unknowns ``lam``: the step's preparation
    (:func:`_prepare`) and :func:`_evaluate`, as the loop runs them.  ``out`` = (R, Q, data, it, pred,
    blocks) receives the residual, the magnitudes summed into its rows, the tangent (in the solver's
    storage), the iterate's kinematics (r', q', Λ', T, Ω, v', a', ω', α'), the parts of a', ω', α' that do
    not depend on the unknowns (a_pred, ω_pred, α_pred) and, when ``blocks`` is (n, W, W) and the
    model's ``elx`` has no scatter positions, every element instance's block.  Returns the first element instance a law finds
    undefined there, or −1."""
    tangent = plan[4]
    consts, mdl, _, _, Xn, _, ewk, S, pw, (_, _, _, Ktt), _, _, scale, _, _, _, _, _ = \
        _workspace(plan, params, model, solver, state, 1, work)
    F_alpha, M_alpha, TG, TT = loads[0], loads[1], loads[4], loads[7]
    r, q, v, a, w, al = state[0], state[1], state[2], state[3], state[4], state[5]
    R, Q, data, it, pred, blocks = out
    if blocks.shape[0] > 0:  # each instance's block returned (the caller's ``elx`` has no scatter positions)
        ewk = ewk[:5] + (blocks,) + ewk[6:]
    pw = (pw[0], pred[0], pred[1], pred[2]) + pw[4:]
    _prepare(consts, TT[0, 0], mdl, (r, q, v, a, w, al), pw)
    stp = (consts, (TT[0, 0], TT[0, 1]), (F_alpha, M_alpha, 0), Xn, pw[0], pred)
    return _evaluate(tangent, stp, (r, q, v, a, w, al), inc, it, mdl, (lam, scale, TG[0, 1, 0]), (ewk, S),
                     (data, R, Q, Ktt))


@njit(cache=True, allocates=True)
def predict(plan, params, model, solver, state, inc, lam1, work):
    """Where the Newton iteration of a step from ``state`` starts (:func:`_predict`): the increments into
    ``inc`` = (d, θ) and the own unknowns into ``lam1``."""
    consts, mdl, _, _, _, _, _, _, pw, _, _, _, _, _, _, _, _, _ = _workspace(plan, params, model, solver, state, 1, work)
    r, q, v, a, w, al, a_prev, al_prev, prev_dt, energy, lam, lam_prev, lam_gap = state
    _predict(consts, model[0][0], (v, a, w, al, lam), (a_prev, al_prev, prev_dt, lam_prev, lam_gap), inc, lam1)


@njit(cache=True, allocates=True)
def run(plan, params, model, loads, solver, test, state, report, frames, work):
    """``nframes`` blocks of ``spf`` steps (the module docstring: its phases and its arguments); with
    ``frames``, each block starts with a fresh tangent and no predictor history and ends with the frame
    checks and quantities.  Returns the blocks completed; ``status`` (in ``report``) says why fewer:
    ``[steps, 0]`` -- the step after ``steps`` further steps did not converge (the state is the one
    before it; ``status[2]`` the reason, ``status[4]`` what it names); ``[0, 1]`` -- the state at the
    end of frame f was not finite (the state is put back to the start of that frame); ``[spf, 2]`` --
    the frame's element actions, energies or momenta were not finite (the state is the frame's, its
    row is not written).  ``status[3]``, ``status[5]``: the last step's corrections and residuals.

    At every frame boundary ``λ`` holds the joints' multipliers of the state from the constrained
    equations (THEORY §11, reactions): the frame's reactions, and the next step's Newton start.
    Every work array is allocated here, once per call, but those with a row per element instance (``work``,
    :func:`instance_work`)."""
    nframes, spf, with_frames, tangent = plan[0], plan[1], plan[2], plan[4]
    bodies, el, elx = model
    nm, mass, Jb, gravity, order = bodies[0], bodies[1], bodies[2], bodies[5], bodies[6]
    F_alpha, M_alpha, FL1, ML1, TG, FE, TGE, TT = loads
    lu, body_pos, lu_data, lu_piv, lu_state = solver[0], solver[1], solver[3], solver[4], solver[5]
    modified, max_it, rtol, atol, roundoff, noise, contraction, slow, thin_margin = test
    r, q, v, a, w, al, a_prev, al_prev, prev_dt, energy, lam, lam_prev, lam_gap = state
    iterations, residuals, counters, hist_out, R_out, status = report
    n_all = r.shape[0]
    n_own = lam.shape[0]
    consts, mdl, it, pred, Xn, inc, ewk, S, pw, out, nwk, lam1, scale, cwk, fwk, xs, saved, sw = \
        _workspace(plan, params, model, solver, state, max_it, work)
    data, R = out[0], out[1]
    x, y, dy, arms = ewk[0], ewk[1], ewk[2], ewk[3]
    Rn, nodr = pw[0], pw[11]
    hist = nwk[5]
    r0, q0, v0, a0, w0, al0, e0, lam0, Fx, Mx = saved
    ctl = (tangent, modified, max_it, rtol, atol, roundoff, noise, contraction, slow, thin_margin)
    sol = (lu, lu_data, lu_piv, lu_state, sw)
    start = (r, q, v, a, w, al)
    for j in range(status.shape[0]):
        status[j] = 0
    for f in range(nframes):
        if with_frames:
            r0[:] = r; q0[:] = q; v0[:] = v; a0[:] = a; w0[:] = w; al0[:] = al; e0[:] = energy; lam0[:] = lam
            lu_state[0] = 0.0  # a fresh tangent and no predictor history after every frame (GeneralizedAlpha.restart)
            prev_dt[:] = 0.0  # (lam: the frame's multipliers, see above)
            lam_gap[:] = 0.0
        for step in range(spf):
            ks = f * spf + step
            tn, t1 = TT[f, step], TT[f, step + 1]
            _prepare(consts, tn, mdl, start, pw)
            _predict(consts, nm, (v, a, w, al, lam), (a_prev, al_prev, prev_dt, lam_prev, lam_gap), inc, lam1)
            target = TG[f, step + 1, 0]
            stp = (consts, (tn, t1), (F_alpha, M_alpha, ks), Xn, Rn, pred)
            reason, culprit, k, nh, thin = _newton(ctl, stp, start, inc, it, mdl, (lam1, scale, target),
                                                    (ewk, S), out, sol, nwk, counters)
            status[3] = k  # what the last step did, for GeneralizedAlpha.step's StepResult
            status[5] = nh
            for j in range(nh):
                hist_out[j] = hist[j]
            if reason != 0:
                lu_state[0] = 0.0
                status[0] = step
                status[2] = reason
                status[4] = culprit
                R_out[:] = R
                return f
            iterations[ks] = k
            if nh >= slow or thin:
                lu_state[0] = 0.0  # the factorization contracts too slowly for this motion: a fresh one next step
            residuals[ks] = hist[nh - 1]
            _accept(consts, (TG, f, step, FL1, ML1, ks, t1), state, it, (lam1, target), mdl,
                    (Rn, x, y, dy, arms, nodr), energy)
        if not with_frames:
            continue
        if not (_finite2(r) and _finite2(q) and _finite2(v) and _finite2(a) and _finite2(w) and _finite2(al)):
            r[:] = r0; q[:] = q0; v[:] = v0; a[:] = a0; w[:] = w0; al[:] = al0; energy[:] = e0
            lam[:] = lam0
            prev_dt[:] = 0.0
            status[1] = 1
            return f
        t_frame = TT[f, spf]
        if n_own > 0:  # the frame's multipliers from the constrained equations (NaN where they are singular)
            for i in range(n_all):
                for j in range(3):
                    Fx[i, j] = FE[f, i, j]
                    Mx[i, j] = FE[f, i, 3 + j]
            if constrained_solve((nm, mass, Jb), (r, q, v, w, t_frame), (Fx, Mx, TGE[f, 2]), el, elx,
                                 (lu, body_pos, data, lu_data, lu_piv, lu_state), cwk, (xs, lam)) >= 0:
                lam[:] = np.nan
        if not frame_row((mass, Jb, gravity, order), (r, q, v, w, a, al, energy), (lam, TGE[f, 0], t_frame), el,
                         elx, fwk, frames, f):
            status[0] = spf
            status[1] = 2
            return f
    return nframes
