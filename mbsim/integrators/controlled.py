"""The error-controlled time loop (THEORY §14, docs/stepping.md) in compiled code: the steps of
:mod:`mbsim.integrators.step` (the same phases: prepare, predict, Newton, accept) with their sizes chosen
inside the loop, so that no Python runs per step.

Per step from ``t_n``: the size (the controller's, ended at ``end``); the accelerations moved to it
(:meth:`GeneralizedAlpha.rescaled`'s formula); the loads and the drives' targets at ``t_n`` and
``t_{n+1}`` from the compiled time functions (:mod:`mbsim.kernels.timefn`); the Newton iteration; the
true accelerations at the new state (the constrained equations, :mod:`mbsim.mechanics.constrained`);
the error, the tolerance shared among the run's expected steps (:func:`error_norm`); then either the state is put back and
the step tried again smaller, or the step is accepted, the frames that fall in it are interpolated
(:func:`mbsim.mechanics.interpolate.between`) and written as rows of the frame buffers, and the next
size chosen (:func:`judge`: PI or elementary).  The driver's step-by-step loop (a watched run) calls the
same rules (:func:`step_size`, :func:`newton_cut`, :func:`error_norm`, :func:`judge`) on the same memory.

``ctl`` (float64, :data:`N_CTL`) is the controller's memory, in and out (what a resumed run needs): the
next step, the last accepted error, whether the last step was rejected, the counts, the smallest and
largest step, the collapse counter, the next frame's number, whose error set the step, and the time.
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels import njit
from ..kernels import timefn as tf
from ..mechanics.constrained import solve as constrained_solve
from ..mechanics.frames import frame_row
from ..mechanics.interpolate import _rotate, _rotate_inv, between
from . import step as ks

# the controller's memory (ctl[...])
H, ERR_PREV, AFTER_REJECT, REJECTED, ACCEPTED, H_MIN, H_MAX, SMALL, SMALL_T0, J_NEXT, BODY, PART, T_NOW = range(13)
N_CTL = 13
# why a call returned (status[1]): the stop time, the frame buffer or the step count reached; a Newton
# failure below min_step; the error asks for a step below min_step; a frame not finite; singular joints
DONE, NEWTON_FAILED, TOO_SMALL, NOT_FINITE, SINGULAR = 0, 1, 2, 3, 4
# the controller's rules (docs/stepping.md): the next step at most GROW_MAX and at least CUT_MAX times the
# last, SAFETY below what the estimate asks, the judged error O(Δt^ORDER) (the local error of a step, with
# the steps' count nearly fixed); a failed Newton iteration cuts to NEWTON_CUT
GROW_MAX, CUT_MAX, SAFETY, ORDER, NEWTON_CUT = 2.0, 0.2, 0.9, 3.0, 0.25
PI_I, PI_P = 0.7 / ORDER, 0.4 / ORDER  # the PI controller's exponents


@njit(cache=True)
def steps_expected(ctl, t, h, T):
    """How many steps the run takes, as judged at the step ``t`` → ``t + h``: its length ``T`` over the
    mean step so far, this one included (the run starts at 0; a resumed run carries the count)."""
    return T * (ctl[ACCEPTED] + 1.0) / (t + h)


@njit(cache=True)
def error_constant(af, am, beta):
    """``C = β + (α_f − α_m)/2 − 1/6``: a generalized-α step's position error is ``C Δt³ x⃛`` (its
    accelerations are the motion's at ``t_n + (α_f − α_m) Δt``, docs/stepping.md); Newmark's ``β − 1/6``
    (THEORY §14) when ``α_f = α_m`` (ρ∞ = 1)."""
    return beta + 0.5 * (af - am) - 1.0 / 6.0


@njit(cache=True)
def error_norm(h, n_steps, const, nm, acc0, acc1, x0, x1, rtol, atol):
    """The local error of a step of every moving body's translation and rotation, from the true
    accelerations ``acc0``, ``acc1`` (nm, 6: [a, α]) at its ends, ``x0`` = (r, q, ω) at its start and
    ``x1`` = (r, q) at its end, ``const`` the scheme's :func:`error_constant` (docs/stepping.md):

    - translation: ``e = C Δt² (a_{n+1} − a_n)`` (THEORY §14, with generalized-α's constant);
    - rotation, in the material frame at ``t_n`` pushed to the world: ``e = C Δt² (Λ_n Λ_{n+1}ᵀ α_{n+1} −
      α_n) − Δt³/12 (|ω_n|² ω_n + ω_n × α_n)``: the same term on the material vectors the scheme
      integrates (THEORY §4), and the Cayley vector's own (``θ`` maps to a rotation by ``2 atan(|θ|/2)``,
      not ``|θ|``: a steady spin lags ``|ω Δt|³/12`` per step, which the accelerations do not see);

    and their RMS norm over the components, each weighted by ``w / n_steps`` (the tolerance shared among
    the run's expected steps, :func:`steps_expected`), ``w = atol + rtol |r|`` for a coordinate of a
    centre (|r| the larger at the two ends) and ``w = atol`` (rad) for a rotation.  Returns (norm, body,
    part): the body and part (0 translation, 1 rotation) whose weighted error is largest."""
    r0, q0, w0 = x0
    r1, q1 = x1
    c = h * h * const * n_steps
    c3 = h * h * h / 12.0 * n_steps
    total, worst, body, part = 0.0, -1.0, -1, 0
    for i in range(nm):
        st, sr = 0.0, 0.0
        for k in range(3):
            et = c * (acc1[i, k] - acc0[i, k]) / (atol + rtol * max(abs(r0[i, k]), abs(r1[i, k])))
            st += et * et
        # Λ_n Λ_{n+1}ᵀ α_{n+1}
        m0, m1, m2 = _rotate_inv(q1, i, acc1[i, 3], acc1[i, 4], acc1[i, 5])
        b0, b1, b2 = _rotate(q0, i, m0, m1, m2)
        o0, o1, o2 = w0[i, 0], w0[i, 1], w0[i, 2]
        p0, p1, p2 = acc0[i, 3], acc0[i, 4], acc0[i, 5]
        oo = o0 * o0 + o1 * o1 + o2 * o2
        er0 = c * (b0 - p0) - c3 * (oo * o0 + o1 * p2 - o2 * p1)
        er1 = c * (b1 - p1) - c3 * (oo * o1 + o2 * p0 - o0 * p2)
        er2 = c * (b2 - p2) - c3 * (oo * o2 + o0 * p1 - o1 * p0)
        sr = (er0 * er0 + er1 * er1 + er2 * er2) / (atol * atol)
        total += st + sr
        if st > worst:
            worst, body, part = st, i, 0
        if sr > worst:
            worst, body, part = sr, i, 1
    if nm == 0:
        return 0.0, -1, 0
    return math.sqrt(total / (6 * nm)), body, part


@njit(cache=True)
def step_size(ctl, t, T, largest):
    """The step to take from ``t``: the controller's (``ctl[H]``, at most ``largest``), or what is left to
    ``T`` (time.end) when that is no more, or half of it when it is less than one and a half (no sliver of
    a last step).  Steps are never shortened to land on frames (they are interpolated)."""
    rest = T - t
    h = min(ctl[H], largest)
    if rest <= h * (1.0 + 1e-9):
        return rest
    if rest < 1.5 * h:
        return 0.5 * rest
    return h


@njit(cache=True)
def newton_cut(ctl, h, min_step):
    """The Newton iteration of a step of ``h`` failed: counted as rejected, and the next try a quarter of
    it (True), unless that falls below ``min_step`` (False: the run ends)."""
    ctl[REJECTED] += 1.0
    ctl[AFTER_REJECT] = 1.0
    if NEWTON_CUT * h < min_step:
        return False
    ctl[H] = NEWTON_CUT * h
    return True


@njit(cache=True)
def judge(ctl, err, h, t, pi, largest, small_below):
    """The step ``t`` → ``t + h`` has the error norm ``err`` (:func:`error_norm`): accepted when ≤ 1 (True),
    and ``ctl[H]`` the next step: ``h · 0.9 E^(−1/3)`` (elementary, ``pi`` = 0) or, after an accepted step,
    ``h · 0.9 E^(−0.7/3) E_prev^(0.4/3)`` (PI, ``pi`` = 1), between 0.2 h and 2 h, no larger after a
    rejection, at most ``largest``.  Counts the accepted and rejected steps, the smallest and largest
    accepted, and the accepted steps in a row below ``small_below`` (a collapse, mbsim.stepping.collapsed)."""
    if not math.isfinite(err):
        err = 1e10
    ok = err <= 1.0
    e = max(err, 1e-10)
    if pi > 0.5 and ok and ctl[AFTER_REJECT] == 0.0:
        fac = SAFETY * e ** -PI_I * max(ctl[ERR_PREV], 1e-10) ** PI_P
    else:
        fac = SAFETY * e ** (-1.0 / ORDER)
    fac = min(GROW_MAX, max(CUT_MAX, fac))
    if not ok or ctl[AFTER_REJECT] != 0.0:
        fac = min(fac, 1.0)
    ctl[H] = min(h * fac, largest)
    if ok:
        ctl[ERR_PREV], ctl[AFTER_REJECT] = e, 0.0
        ctl[ACCEPTED] += 1.0
        ctl[H_MIN], ctl[H_MAX] = min(ctl[H_MIN], h), max(ctl[H_MAX], h)
        if h < small_below:
            if ctl[SMALL] == 0.0:
                ctl[SMALL_T0] = t
            ctl[SMALL] += 1.0
        else:
            ctl[SMALL] = 0.0
    else:
        ctl[REJECTED] += 1.0
        ctl[AFTER_REJECT] = 1.0
    return ok


@njit(cache=True)
def rescale(h, af, am, w, a, al, a_prev, al_prev, h_prev):
    """Generalized-α's accelerations ``a``, ``al`` (n, 3, in place) of a state whose last step was
    ``h_prev``, moved to a step of ``h`` (:meth:`GeneralizedAlpha.rescaled`, docs/stepping.md): along the
    time by (α_f − α_m)(h − h_prev), the rate from the last step's difference, the previous angular
    acceleration first carried into the present body frame (α_{n−1} + h_prev ω_n × α_{n−1})."""
    c = (af - am) * (h - h_prev) / h_prev
    for i in range(a.shape[0]):
        wx, wy, wz = w[i, 0], w[i, 1], w[i, 2]
        px, py, pz = al_prev[i, 0], al_prev[i, 1], al_prev[i, 2]
        cx, cy, cz = wy * pz - wz * py, wz * px - wx * pz, wx * py - wy * px
        for k in range(3):
            a[i, k] += c * (a[i, k] - a_prev[i, k])
        al[i, 0] += c * (al[i, 0] - (px + h_prev * cx))
        al[i, 1] += c * (al[i, 1] - (py + h_prev * cy))
        al[i, 2] += c * (al[i, 2] - (pz + h_prev * cz))


@njit(cache=True)
def _copy1(d, s):
    for i in range(d.shape[0]):
        d[i] = s[i]


@njit(cache=True)
def _copy2(d, s):
    for i in range(d.shape[0]):
        for k in range(d.shape[1]):
            d[i, k] = s[i, k]


@njit(cache=True)
def _assign(dst, src):
    """The loop's state bundle ``dst`` ← ``src`` (the same 13 arrays: kept at a step's start, put back;
    element by element: a slice assignment would need numba's reference counting)."""
    r, q, v, a, w, al, a_prev, al_prev, prev_dt, energy, lam, lam_prev, lam_gap = dst
    r0, q0, v0, a0, w0, al0, ap0, alp0, pdt0, e0, lam0, lp0, lg0 = src
    _copy2(r, r0)
    _copy2(q, q0)
    _copy2(v, v0)
    _copy2(a, a0)
    _copy2(w, w0)
    _copy2(al, al0)
    for j in range(a_prev.shape[0]):
        _copy2(a_prev[j], ap0[j])
        _copy2(al_prev[j], alp0[j])
    _copy1(prev_dt, pdt0)
    _copy1(energy, e0)
    _copy1(lam, lam0)
    _copy2(lam_prev, lp0)
    _copy1(lam_gap, lg0)


@njit(cache=True)
def _put_back(state, kept, data, data0, remembers):
    """A step undone after its accept: ``state`` ← ``kept`` (its copy at the step's start), and the
    elements' turn counts ``data`` ← ``data0`` where a kind counts turns."""
    _assign(state, kept)
    if remembers:
        _copy2(data, data0)


@njit(cache=True)
def _true_accelerations(t, state, model, spec, solver, cwk, ext, tg, xs, lam):
    """xs (nm, 6) ← the true accelerations [a, α] at ``state`` = (r, q, v, w) and time t, lam ← the
    multipliers (the constrained equations; without joints the bodies' equations alone).  Returns the
    block whose pivot is singular, or −1."""
    bodies, el, elx = model
    nm, mass, Jb, gravity = bodies[0], bodies[1], bodies[2], bodies[5]
    fns, loads, drive = spec
    tf.loads_at(t, fns, loads, mass, gravity, ext)
    tf.targets_at(t, fns, drive, tg)
    r, q, v, w = state
    return constrained_solve((nm, mass, Jb), (r, q, v, w, t), (ext[0], ext[1], tg[2]), el, elx, solver, cwk, (xs, lam))


@njit(cache=True, allocates=True)
def run(plan, params, model, spec, solver, test, state, report, frames, work, control):
    """Error-controlled steps from ``state`` until ``cset``'s stop time, the frame buffers' capacity or
    its step count (module docstring).  ``plan`` as :func:`mbsim.integrators.step.run`'s (its Δt the
    first step's); ``spec`` = (fns, loads, drive) (:meth:`mbsim.model.model.Model.time_functions`);
    ``report`` = (iterations, residuals, counters, hist, R_out, status, f_time, f_iterations, f_residual,
    f_step): per frame row its time, its step's iterations and residual and the step it fell in;
    ``cset`` = (rtol, atol, min_step, largest, T (time.end), pi, interval, t_stop, max_steps, small_below
    (the steps that count towards a collapse are below it, :func:`judge`)); ``control`` = (ctl, cset, acc0): the controller's memory, those
    settings and the true accelerations (nm, 6) of ``state`` (in/out).
    Returns the frame rows written; ``status[1]`` why it returned (DONE, NEWTON_FAILED: ``status[2]``,
    ``status[4]`` the reason and culprit; TOO_SMALL: ctl[BODY], ctl[PART] whose error; NOT_FINITE;
    SINGULAR)."""
    tangent = plan[4]
    ctl, cset, acc0 = control
    bodies, el, elx = model
    nm, mass, Jb, gravity, order = bodies[0], bodies[1], bodies[2], bodies[5], bodies[6]
    fns, loads, drive = spec
    lu, body_pos, lu_data, lu_piv, lu_state = solver[0], solver[1], solver[3], solver[4], solver[5]
    modified, max_it, rtol_n, atol_n, roundoff, noise, contraction, slow, thin_margin = test
    r, q, v, a, w, al, a_prev, al_prev, prev_dt, energy, lam, lam_prev, lam_gap = state
    iterations, residuals, counters, hist_out, R_out, status, f_time, f_its, f_res, f_step = report
    rtol, atol, min_step, largest, T, pi, interval, t_stop, max_steps, small_below = cset
    n_all = r.shape[0]
    n_own = lam.shape[0]
    consts, mdl, it, pred, Xn, inc, ewk, S, pw, out, nwk, lam1, scale, cwk, fwk, xs, saved, sw = \
        ks._workspace(plan, params, model, solver, state, max_it, work)
    af, am, beta, gamma = params
    e_const = error_constant(af, am, beta)
    krr = mdl[4]
    x, y, dy, arms = ewk[0], ewk[1], ewk[2], ewk[3]
    Rn, nodr = pw[0], pw[11]
    hist = nwk[5]
    r0, q0, v0, a0, w0, al0, e0, lam0, Fx, Mx = saved
    ap0, alp0, pdt0 = np.empty_like(a_prev), np.empty_like(al_prev), np.empty_like(prev_dt)
    lp0, lg0 = np.empty_like(lam_prev), np.empty_like(lam_gap)
    ctl_n = (tangent, modified, max_it, rtol_n, atol_n, roundoff, noise, contraction, slow, thin_margin)
    sol = (lu, lu_data, lu_piv, lu_state, sw)
    start = (r, q, v, a, w, al)
    cs = (lu, body_pos, out[0], lu_data, lu_piv, lu_state)
    # the step's loads (one step: index 0), at t_n and t_{n+1}
    F0, M0, FL0, ML0 = np.empty((n_all, 3)), np.empty((n_all, 3)), np.empty((n_all, 3)), np.empty((n_all, 3))
    F1, M1, FL1, ML1 = np.empty((1, n_all, 3)), np.empty((1, n_all, 3)), np.empty((1, n_all, 3)), np.empty((1, n_all, 3))
    F_alpha, M_alpha = np.empty((1, nm, 3)), np.empty((1, nm, 3))
    TG = np.empty((1, 2, 3, n_own))
    tg = np.empty((3, n_own))
    ext = (np.empty((n_all, 3)), np.empty((n_all, 3)), np.empty((n_all, 3)), np.empty((n_all, 3)))
    acc1, accf = np.empty((nm, 6)), np.empty((nm, 6))
    lam_c = np.empty(n_own)
    fr = (np.empty_like(r), np.empty_like(q), np.empty_like(v), np.empty_like(w))
    fa, fal = np.zeros_like(a), np.zeros_like(al)
    fe = np.empty_like(energy)
    for j in range(status.shape[0]):
        status[j] = 0
    nf, steps, cap = 0, 0, f_time.shape[0]
    h_lu = -1.0
    t = ctl[T_NOW]
    ctl0 = np.empty_like(ctl)  # the memory before this attempt (a step whose frames overflow is taken again)
    data = el[2]  # the elements' parameter rows: where the kinds that count turns keep their angles (COMMIT)
    remembers = False
    for kind in range(elx[11].shape[0]):
        remembers = remembers or elx[11][kind] != 0
    data0 = data.copy() if remembers else data[:0].copy()
    kept = (r0, q0, v0, a0, w0, al0, ap0, alp0, pdt0, e0, lam0, lp0, lg0)
    lam_i = np.empty(n_own)  # the multipliers of an interpolated frame
    while t < t_stop and nf < cap and steps < max_steps:
        ctl0[:] = ctl
        # keep the state (a rejected step starts again from it) and the turn counts (an accepted step
        # commits the angles; a step put back after it, not)
        _assign(kept, state)
        if remembers:
            _copy2(data0, data)
        h = step_size(ctl, t, T, largest)
        t1 = T if h >= T - t else t + h
        # the accelerations moved to this step's size (GeneralizedAlpha.rescaled)
        if prev_dt[0] > 0.0 and h != prev_dt[0]:
            rescale(h, af, am, w, a, al, a_prev[0], al_prev[0], prev_dt[0])
        # this step's constants
        c_a = 1.0 / (beta * h * h)
        consts = (h, c_a, gamma / (beta * h), gamma, af, am, beta)
        for i in range(nm):
            krr[i] = am * mass[i] * c_a
        for j in range(n_own):
            scale[j] = elx[3][j] * c_a
        if h != h_lu:
            lu_state[0] = 0.0  # (the factorization is of another step size)
            h_lu = h
        tf.loads_at(t, fns, loads, mass, gravity, (F0, M0, FL0, ML0))
        tf.loads_at(t1, fns, loads, mass, gravity, (F1[0], M1[0], FL1[0], ML1[0]))
        for i in range(nm):
            for k in range(3):
                F_alpha[0, i, k] = af * F1[0, i, k] + (1.0 - af) * F0[i, k]
                M_alpha[0, i, k] = af * M1[0, i, k] + (1.0 - af) * M0[i, k]
        tf.targets_at(t, fns, drive, TG[0, 0])
        tf.targets_at(t1, fns, drive, TG[0, 1])
        ks._prepare(consts, t, mdl, start, pw)
        ks._predict(consts, nm, (v, a, w, al, lam), (a_prev, al_prev, prev_dt, lam_prev, lam_gap), inc, lam1)
        target = TG[0, 1, 0]
        stp = (consts, (t, t1), (F_alpha, M_alpha, 0), Xn, Rn, pred)
        reason, culprit, k, nh, thin = ks._newton(ctl_n, stp, start, inc, it, mdl, (lam1, scale, target), (ewk, S),
                                                 out, sol, nwk, counters)
        status[3] = k
        status[5] = nh
        for j in range(nh):
            hist_out[j] = hist[j]
        failed = reason != 0
        if not failed:
            ks._accept(consts, (TG, 0, 0, FL1, ML1, 0, t1), state, it, (lam1, target), mdl, (Rn, x, y, dy, arms, nodr),
                       energy)
            failed = not (ks._finite2(r) and ks._finite2(q) and ks._finite2(v) and ks._finite2(w))
            if failed:
                reason = -1
        if not failed:
            bad = _true_accelerations(t1, (r, q, v, w), model, spec, cs, cwk, ext, tg, acc1, lam_c)
            lu_state[0] = 0.0
            h_lu = -1.0
            if bad >= 0:
                status[1] = SINGULAR
                status[4] = bad
                failed = True
        if failed:
            _put_back(state, kept, data, data0, remembers)
            lu_state[0] = 0.0
            if status[1] == SINGULAR:
                return nf
            if not newton_cut(ctl, h, min_step):
                status[1] = NEWTON_FAILED
                status[2] = reason
                status[4] = culprit
                R_out[:] = out[1]
                return nf
            continue
        err, body, part = error_norm(h, steps_expected(ctl, t, h, T), e_const, nm, acc0, acc1, (r0, q0, w0), (r, q),
                                     rtol, atol)
        ctl[BODY], ctl[PART] = body, part
        if not judge(ctl, err, h, t, pi, largest, small_below):
            _put_back(state, kept, data, data0, remembers)
            if ctl[H] < min_step:
                status[1] = TOO_SMALL
                return nf
            continue
        steps += 1
        status[0] = steps
        iterations[0] += k
        residuals[0] = hist[nh - 1] if nh > 0 else 0.0
        # the frames in (t_n, t_{n+1}]
        while True:
            tj = min(ctl[J_NEXT] * interval, T)
            if tj > t1 * (1.0 + 1e-12) + 1e-300 or (tj >= T and t1 < T):
                break
            if nf == cap:  # the buffers are full with frames of this step left: put the step back (its frames
                # so far stay written, J_NEXT past them); the next call takes it again, to the same bits,
                # and writes the rest
                _put_back(state, kept, data, data0, remembers)
                lu_state[0] = 0.0
                j_next = ctl[J_NEXT]
                ctl[:] = ctl0
                ctl[J_NEXT] = j_next
                status[0] = steps - 1
                return nf
            s = (tj - t) / h
            if abs(tj - t1) <= 1e-9 * h:
                for i in range(n_all):
                    for kk in range(3):
                        fr[0][i, kk], fr[2][i, kk], fr[3][i, kk] = r[i, kk], v[i, kk], w[i, kk]
                    for kk in range(4):
                        fr[1][i, kk] = q[i, kk]
                for i in range(nm):
                    for kk in range(6):
                        accf[i, kk] = acc1[i, kk]
                fe[0], fe[1] = energy[0], energy[1]
                lam_f = lam_c
                tf.targets_at(t1, fns, drive, tg)
                tj = t1
            else:
                for i in range(nm, n_all):
                    for kk in range(3):
                        fr[0][i, kk], fr[2][i, kk], fr[3][i, kk] = r[i, kk], v[i, kk], w[i, kk]
                    for kk in range(4):
                        fr[1][i, kk] = q[i, kk]
                between(s, h, nm, (r0, q0, v0, w0), (r, q, v, w), acc0, acc1, fr)
                fe[0] = e0[0] + s * (energy[0] - e0[0])
                fe[1] = e0[1] + s * (energy[1] - e0[1])
                lam_f = lam_i
                bad = _true_accelerations(tj, fr, model, spec, cs, cwk, ext, tg, accf, lam_f)
                lu_state[0] = 0.0
                h_lu = -1.0
                if bad >= 0:
                    lam_f[:] = np.nan
            for i in range(nm):
                for kk in range(3):
                    fa[i, kk] = accf[i, kk]
                    fal[i, kk] = accf[i, 3 + kk]
            fe[2], fe[3] = energy[2], energy[3]
            ok = frame_row((mass, Jb, gravity, order), (fr[0], fr[1], fr[2], fr[3], fa, fal, fe), (lam_f, tg[0], tj),
                           el, elx, fwk, frames, nf)
            f_time[nf], f_its[nf], f_res[nf], f_step[nf] = tj, k, residuals[0], h
            nf += 1
            if not ok:
                status[1] = NOT_FINITE
                return nf
            ctl[J_NEXT] += 1.0
            if tj >= T:
                break
        for i in range(nm):
            for kk in range(6):
                acc0[i, kk] = acc1[i, kk]
        t = t1
        ctl[T_NOW] = t
    status[0] = steps
    return nf
