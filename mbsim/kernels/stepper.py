"""The generalized-α Newton step as one compiled loop over a block of steps.

For models whose linear solve is the block tree LU (a forest of bodies,
:mod:`mbsim.kernels.tree`) or a dense LU (other systems of up to
``mbsim.linalg.DENSE_MAX_DOFS`` unknowns, :mod:`mbsim.kernels.dense`),
:func:`advance` takes several steps of equal size in one call: per step
the predictor, kinematics, residual, tangent, convergence test,
modified-Newton rule and energy integrals of
:mod:`mbsim.integrators.generalized_alpha` (whose docstring and docs/newton.md
state them).  This is mbsim's one Newton iteration: the Python step
(:meth:`GeneralizedAlpha.step`, adaptive steps, the redo of a failed step
and its diagnosis) is this loop taking one step; a failed step is reported
with its reason (``status[2]``, one of the codes below), what it names
(``status[4]``), its last residual and its residual history.

Unknowns: 6 per moving body, then the elements' own (``lam``, a joint's
multipliers; :mod:`mbsim.elements.base`), solved for as λ̃ = λ/k and kept
physical in the state.
"""
from __future__ import annotations

import numpy as np

from ..elements import engine
from ..elements.base import ANGLE_ERROR, FORCE, LENGTH, MOMENT, N_OUT, POSITION_ERROR, POTENTIAL, POWER
from . import bodies as kb
from . import connectors as kc
from . import blocklu, dense, njit, tree

_EPS = float(np.finfo(np.float64).eps)

# Why a step failed (``status[2]`` of :func:`run`); GeneralizedAlpha turns them into StepStatus and a message.
MAX_ITERATIONS, GREW, BLEW_UP, NONFINITE_RESIDUAL, NONFINITE_CORRECTION, SINGULAR, DEGENERATE = range(1, 8)
_TINY = float(np.finfo(np.float64).tiny)  # as np.finfo(float).tiny in the Python step
# A correction that shrank by less than this factor, with a tangent factorized in the step, is compared with
# the round-off floor of the joints' rows (_noise_size): an iteration that contracts faster is not stuck.
_STALL = 0.25


def element_arguments(model, assembler=None) -> tuple:
    """The packed element description in the order the kernels of this module take it:
    ``(start, body, data, index, joint, arm, stiff, first, ref, owner, rotation, dofs, pos)``
    (:class:`mbsim.elements.Elements`; ``ref`` the m_ref or J_ref of each own unknown,
    :attr:`mbsim.model.Model.unknown_reference`, ``owner``/``rotation`` its instance and kind;
    ``dofs``/``pos`` the assembler's scatter maps, empty without an assembler).  Built once per
    model and reused."""
    el = model.elements
    w = el.width
    if assembler is not None:
        maps = (assembler.el_dofs, assembler.el_pos)
    else:
        maps = (np.zeros((0, w), np.int64), np.zeros((0, w * w), np.int32))
    own = (el.first, model.unknown_reference, el.unknown_element, el.unknown_rotation.astype(np.int64))
    return (el.start, el.body, el.data, el.index, el.joint, el.arm, el.stiff) + own + maps


@njit(cache=True)
def _rotations(q, R):
    for i in range(q.shape[0]):
        w, x, y, z = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        R[i, 0, 0] = 1 - 2 * (y * y + z * z); R[i, 0, 1] = 2 * (x * y - w * z); R[i, 0, 2] = 2 * (x * z + w * y)
        R[i, 1, 0] = 2 * (x * y + w * z); R[i, 1, 1] = 1 - 2 * (x * x + z * z); R[i, 1, 2] = 2 * (y * z - w * x)
        R[i, 2, 0] = 2 * (x * z - w * y); R[i, 2, 1] = 2 * (y * z + w * x); R[i, 2, 2] = 1 - 2 * (x * x + y * y)


@njit(cache=True)
def _evaluate(mode, nm, af, am, gamma, dt, c_a, g, d, th, s_r, s_q, s_v, s_a, s_w, s_al, Rn,
              a_pred, w_pred, al_pred, F_alpha, M_alpha, step, Xn, mass, Jb, krr,
              el_start, el_body, el_data, el_first, lam, scale, target, el_dofs, el_pos, body_pos,
              R, Q, data, r1, q1, R1, T, Om, v1, a1, w1, al1, Ktt, el_res, el_out, K1, scr, cache):
    """One residual (and tangent into ``data`` if mode) at the iterate with increments (d, th) and
    element-owned unknowns ``lam`` (physical; ``scale`` their factors k, ``target`` the values their
    rows hold at t_{n+1}: a drive's F), its positions,
    orientations and rates into r1, q1, …; returns the first element instance whose law is
    undefined there (a collapsed spring), or −1.

    The element laws add their W×W blocks straight into ``data`` through one (1, W, W)
    scratch block ``K1`` (no per-instance tangent array); the work arrays are passed one by one:
    unpacking a tuple of arrays in a function called every iteration costs two atomic
    reference-count updates per array.  The loads are those of step ``step`` of ``F_alpha``/``M_alpha``.
    """
    kb.kinematics(d, th, s_q, s_r, s_v, s_a, s_w, s_al, dt, c_a, g, gamma, a_pred, w_pred, al_pred,
                  r1, q1, R1, T, Om, v1, a1, w1, al1, mode != 0)
    kb.residual(nm, mass, Jb, R1, Rn, T, a1, s_a, w1, al1, F_alpha, M_alpha, step, Xn, af, am, c_a, g, mode != 0,
                R, Q, Ktt, scr)
    for j in range(6 * nm, R.shape[0]):  # the rows of the elements' own unknowns: theirs alone
        R[j] = 0.0
        Q[j] = 0.0
    if mode != 0:
        data[:] = 0.0
        kb.scatter_bodies(body_pos, krr, Ktt, data)
    failed = engine.evaluate(el_start, el_body, el_data, el_first, lam, scale, target, af, g, mode, r1, s_r, d, R1, Rn, v1, s_v,
                             w1, s_w, T, Om, el_res, K1, el_out, el_pos, data, scr, cache)
    kb.scatter_residual(el_dofs, el_res, R, Q)
    return failed


@njit(cache=True)
def _single_state(r, q, v, w, el_start, el_body, el_data, el_index, el_joint, el_first, lam, scale, target, force,
                  moment, length, j_force, j_moment, j_error, R, el_res, el_out, K1, dummy, nopos, nodata, scr, cache):
    """Element actions at one state (element-owned unknowns ``lam``, their rows' values ``target``)
    into force/moment/length of the connectors and j_force/j_moment/j_error (position, angle) of
    the joints (scenario order) and R ← Λ of every body; returns (stored energy, dissipated power)."""
    _rotations(q, R)
    # "no tangent" as a run-time int64, not the literal 0: a literal argument would make numba
    # compile a second specialization of every law (~15 s on the first run)
    no_tangent = 0 * r.shape[0]
    for c in range(force.shape[0]):
        for j in range(3):
            force[c, j] = 0.0
            moment[c, j] = 0.0
        length[c] = np.nan
    engine.evaluate(el_start, el_body, el_data, el_first, lam, scale, target, 1.0, 0.0, no_tangent, r, r,
                    np.zeros((0, 3)), R, R, v, v, w, w, dummy, dummy, el_res, K1, el_out, nopos, nodata, scr, cache)
    energy, power = 0.0, 0.0
    for e in range(el_index.shape[0]):
        c = el_index[e]
        if el_joint[e]:
            for j in range(3):
                j_force[c, j] = el_out[e, FORCE + j]
                j_moment[c, j] = el_out[e, MOMENT + j]
            j_error[c, 0] = el_out[e, POSITION_ERROR]
            j_error[c, 1] = el_out[e, ANGLE_ERROR]
            continue
        for j in range(3):
            force[c, j] = el_out[e, FORCE + j]
            moment[c, j] = el_out[e, MOMENT + j]
        length[c] = el_out[e, LENGTH]
        energy += el_out[e, POTENTIAL]
        power += el_out[e, POWER]
    return energy, power


@njit(cache=True)
def _dissipated_power(r, q, v, w, el_start, el_body, el_data, el_joint, el_first, lam, scale, target, R, el_res, el_out, K1,
                      dummy, nodr, nopos, nodata, scr, cache):
    """The power the connectors dissipate at one state (the energy integral of every step): the
    laws of the kinds that are not joints only -- an ideal joint does no work (its POWER is 0), and
    its law is the costliest, so a jointed chain would evaluate it once more per step for nothing."""
    _rotations(q, R)
    no_tangent = 0 * r.shape[0]  # a run-time int64, as in _single_state
    power = 0.0
    for kind in range(el_start.shape[0] - 1):
        lo, hi = el_start[kind], el_start[kind + 1]
        if hi == lo or el_joint[lo]:
            continue
        engine.law(kind, lo, hi, el_body, el_data, el_first, lam, scale, target, 1.0, 0.0, no_tangent, r, r, nodr, R, R,
                   v, v, w, w, dummy, dummy, el_res, K1, el_out, nopos, nodata, scr, cache)
        for e in range(lo, hi):
            power += el_out[e, POWER]
    return power


@njit(cache=True)
def _work(n_el, w):
    """The arrays the element laws write: residual rows (n, W) and outputs (n, N_OUT), a
    (1, W, W) tangent scratch block, a (1, 3, 3) zero block, the empty scatter maps of a call
    without tangent, the laws' own work space and the step's constants of the kinds that keep some
    (``cache``, :data:`mbsim.elements.engine.PREPARE`; W: the local width, ``dofs.shape[1]``).
    Callers unpack the tuple once, outside their loops, and pass the arrays on one by one."""
    return (np.zeros((n_el, w)), np.zeros((n_el, N_OUT)), np.zeros((1, w, w)), np.zeros((1, 3, 3)),
            np.zeros((0, w * w), np.int32), np.zeros(0), np.empty(kc.SCRATCH), np.zeros((n_el, 12 * (w - 12))))


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
def _apply(du, nm, d, th, lam, scale):
    """The Newton correction ``du``: d ← d + Δr, θ ← cayvec(cay(Δθ) cay(θ)) per moving body, and the
    elements' own unknowns (physical) λ ← λ + k Δλ̃ (the solve is for λ̃ = λ/k)."""
    for i in range(nm):
        for j in range(3):
            d[i, j] += du[6 * i + j]
        kb.cay_compose((du[6 * i + 3], du[6 * i + 4], du[6 * i + 5]), th, i)
    for j in range(lam.shape[0]):
        lam[j] += scale[j] * du[6 * nm + j]


@njit(cache=True)
def _norm(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return np.sqrt(s)


@njit(cache=True)
def _n3(x, i):
    return np.sqrt(x[i, 0] * x[i, 0] + x[i, 1] * x[i, 1] + x[i, 2] * x[i, 2])


@njit(cache=True)
def _tolerances(nm, rtol, atol, roundoff, g, c_a, af, am, mass, j_max, arm, stiff, d, th, r1, v1, a1, w1, al1, a_pred,
                w_pred, al_pred, R, Q, tol, fin):
    """How far the unknowns may be from the step's solution, per moving body and kind (translation,
    rotation), into ``tol`` (nm, 2) in m and rad (the formulas: mbsim.integrators.generalized_alpha);
    inf for the rows whose residual is at round-off.

    A body's force (moment) residual is at round-off when it is within ``roundoff·ε`` of the
    magnitudes that cancel in it: the forces (moments) summed into the rows (``Q``); its springs'
    ``Σ k(|x_A| + |x_B|)`` (``stiff``: a force k(L − L0) formed from points far from the origin);
    for the moments, ℓ times both (``arm``: ℓ the body's longest connector arm, z×f rounds like
    |z||f|, not |z×f|); and the inertia of the terms that cancel in the new accelerations and
    angular velocity, ``α_m m (c_a|d| + |a_pred|)`` and ``J_max (α_m (c_a|θ| + |α_pred|) +
    2α_f|ω'|(g|θ| + |ω_pred|))``.  Closer to the solution than that, the iterate cannot be told
    from it in floating point, whatever the stiffness, and its correction is noise.  ``fin`` (nm, 2)
    receives the tolerances without that exception.
    """
    for i in range(nm):
        t = _n3(th, i)
        tb = 1.0 + 0.5 * t + 0.25 * t * t
        w, al = _n3(w1, i), _n3(al1, i)
        o = 6 * i
        qr = np.sqrt(Q[o] * Q[o] + Q[o + 1] * Q[o + 1] + Q[o + 2] * Q[o + 2])
        qt = np.sqrt(Q[o + 3] * Q[o + 3] + Q[o + 4] * Q[o + 4] + Q[o + 5] * Q[o + 5])
        tol[i, 0] = min(min(atol + rtol * _n3(r1, i), (atol + rtol * _n3(v1, i)) / g),
                        (atol + rtol * max(_n3(a1, i), qr / (am * mass[i]))) / c_a)
        tol[i, 1] = min(min(atol + rtol, (atol + rtol * w) / (g * tb + w)),
                        (atol + rtol * max(al, qt / (am * j_max[i]))) / (c_a * tb + al))
        fin[i, 0] = tol[i, 0]
        fin[i, 1] = tol[i, 1]
        # (the tests on squares, |R|² <= x², without two square roots)
        rr2 = R[o] * R[o] + R[o + 1] * R[o + 1] + R[o + 2] * R[o + 2]
        rt2 = R[o + 3] * R[o + 3] + R[o + 4] * R[o + 4] + R[o + 5] * R[o + 5]
        xr = roundoff * _EPS * (qr + stiff[i] + am * mass[i] * (c_a * _n3(d, i) + _n3(a_pred, i)))
        if rr2 <= xr * xr:
            tol[i, 0] = np.inf
        inertia = j_max[i] * (am * (c_a * t + _n3(al_pred, i)) + 2 * af * w * (g * t + _n3(w_pred, i)))
        xt = roundoff * _EPS * (qt + arm[i] * (qr + stiff[i]) + inertia)
        if rt2 <= xt * xt:
            tol[i, 1] = np.inf


@njit(cache=True)
def _spring_scale(nm, r, el_body, el_arm, el_stiff, out):
    """Per moving body, Σ k·(|x_A| + |x_B|) over its springs (elements with a stiffness) at positions
    ``r``, into ``out`` (nm,): times ε, the round-off of their forces k(L − L0)."""
    out[:] = 0.0
    for e in range(el_body.shape[0]):
        if el_stiff[e] == 0.0:
            continue
        a, b = el_body[e, 0], el_body[e, 1]
        kx = el_stiff[e] * (_n3(r, a) + _n3(r, b) + el_arm[e, 0] + el_arm[e, 1])
        if a < nm:
            out[a] += kx
        if b < nm:
            out[b] += kx


@njit(cache=True)
def _own_tolerances(nm, el_body, owner, rotation, tol, fin, tol_own, fin_own):
    """The tolerance of each element-owned unknown, into ``tol_own`` (from ``tol``) and ``fin_own``
    (from ``fin``, the tolerances without the round-off exception): the translation (rotation)
    tolerance of the bodies its element joins, the smaller of the moving ones [m or rad] -- the
    scaled unknown λ̃ = λ/k is a length (angle): an error δλ̃ moves the bodies by about δλ̃ -- and
    the unit of its row Φ, a position (angle) error of the joint.  inf when neither body moves."""
    for j in range(owner.shape[0]):
        e = owner[j]
        k = rotation[j]
        t = np.inf
        f = np.inf
        for side in range(2):
            b = el_body[e, side]
            if b < nm:
                t = min(t, tol[b, k])
                f = min(f, fin[b, k])
        tol_own[j] = t
        fin_own[j] = f


@njit(cache=True)
def _sizes(du, tol, tol_own, fin, fin_own):
    """The correction in units of the tolerance (max over bodies and kinds, and the elements' own
    unknowns, which follow the bodies' in ``du``), measured with ``tol``, ``tol_own`` and with ``fin``,
    ``fin_own`` (the tolerances without the round-off exception) in one pass."""
    size = 0.0
    size_fin = 0.0
    for i in range(tol.shape[0]):
        for k in range(2):
            o = 6 * i + 3 * k
            x = np.sqrt(du[o] * du[o] + du[o + 1] * du[o + 1] + du[o + 2] * du[o + 2])
            size = max(size, x / tol[i, k])
            size_fin = max(size_fin, x / fin[i, k])
    o = 6 * tol.shape[0]
    for j in range(tol_own.shape[0]):
        x = abs(du[o + j])
        size = max(size, x / tol_own[j])
        size_fin = max(size_fin, x / fin_own[j])
    return size, size_fin


@njit(cache=True)
def _noise_size(nm, d, el_body, el_arm, owner, rotation, scale, is_dense, lu_data, ndof, piv_flat, parent, order,
                sym, tree_work, e, x, fin, fin_own):
    """How large a correction the round-off of the joints' rows alone makes, in units of the tolerance (every
    unknown weighed, as ``_sizes``' second value): the solve K⁻¹e of a right-hand side that holds, in each
    element-owned row, ε times the magnitudes that change from iterate to iterate in it (for a position row,
    formed by mbsim.elements.joints._state: k·(2 z_short + z_long + |d_A| + |d_B|), z_short and z_long the
    lengths of the shorter and the longer arm, z_long left out when its body is fixed, and d the step's
    increments; k for an angle row: unit vectors), with signs of a fixed pseudo-random pattern.  Where the
    joints' equations are nearly dependent (a dead point: THEORY §11) this is what no Newton iteration can
    get below; elsewhere it is far below the tolerance.  ``e``, ``x``: work arrays (ndof,)."""
    o = 6 * nm
    for i in range(o):
        e[i] = 0.0
    for j in range(owner.shape[0]):
        el = owner[j]
        mag = 1.0
        if rotation[j] == 0:
            s_ = 1 if el_arm[el, 0] >= el_arm[el, 1] else 0  # the shorter arm's side (as _state decides)
            mag = 2.0 * el_arm[el, s_] + (el_arm[el, 1 - s_] if el_body[el, 1 - s_] < nm else 0.0)
            for side in range(2):
                mag += _n3(d, el_body[el, side])
        sign = 1.0 if ((j * 2654435761) >> 15) & 1 else -1.0
        e[o + j] = sign * _EPS * scale[j] * mag
    _solve(is_dense, lu_data, ndof, piv_flat, nm, parent, order, sym, e, x, tree_work)
    return _sizes(x, fin, fin_own, fin, fin_own)[0]  # (both of _sizes' values: measured with fin)


@njit(cache=True)
def _rows_hold(R, nm, scale, tol_own):
    """Whether every row of the elements' own unknowns (−kΦ, scaled by k = ``scale``) holds its
    equation within the tolerance, in its own units: |Φ| ≤ tol (m or rad)."""
    o = 6 * nm
    for j in range(scale.shape[0]):
        if abs(R[o + j]) > scale[j] * tol_own[j]:
            return False
    return True


def advance(nsteps, dt, status, *args):
    """Take up to ``nsteps`` steps of size ``dt``, updating the state arrays in place.

    ``a_prev``/``al_prev`` (2, n, 3) and ``prev_dt`` (2,) are the predictor's history
    (the accelerations one and two steps back and those steps' sizes, 0 for none; in/out),
    ``lam_prev`` (2, own unknowns) and ``lam_gap`` (2,) the same for the own unknowns
    (the values and how long before the newer ones they belong);
    ``energy`` = [dissipated, external work, dissipated power, load power]
    (in/out); ``gravity`` is unused (the frame quantities are not computed);
    ``lu_state`` = [1 if lu_data holds a factorization, its Δt];
    ``counters`` += [Newton iterations, factorizations, residual evaluations, steps stopped at the
    round-off floor of the joints' equations (_noise_size)].
    Returns the number of steps taken: fewer than ``nsteps`` when a step
    did not converge (the state is then the one before that step).

    ``args`` are those of :func:`run` from ``r`` to ``R_out``; ``status`` receives
    what :func:`run` says of the last step.  A plain Python function: one
    compiled :func:`run` serves this and :func:`advance_frames` (each compiled
    wrapper cost ~6 s on a first run).
    """
    nb = 0  # no frames: empty frame buffers
    done = run(1, nsteps, False, dt, *args, np.zeros(nb, np.int64), np.empty((nb, nb, 3)), np.empty((nb, nb, 4)),
               np.empty((nb, nb, 3)), np.empty((nb, nb, 3)), np.empty((nb, nb, 3)), np.empty((nb, nb, 3)),
               np.empty((nb, nb, 3)), np.empty((nb, nb, 3)), np.empty((nb, nb)), np.empty((nb, nb, 3)),
               np.empty((nb, nb, 3)), np.empty((nb, nb, 2)), np.empty((nb, 10)), status)
    return nsteps if done == 1 else int(status[0])


@njit(cache=True)
def run(nframes, spf, frames, dt, r, q, v, a, w, al, a_prev, al_prev, prev_dt, energy, lam, lam_prev, lam_gap, gravity,
        nm, mass, Jb,
        j_max, arm, af, am, beta, gamma, F_alpha, M_alpha, FL1, ML1, TG, FE, TGE,
        el_start, el_body, el_data, el_index, el_joint, el_arm, el_stiff, el_first, el_ref, el_owner, el_rot, el_dofs,
        el_pos, body_pos, size, parent, order, dense_flat, sym, mode, modified, max_it, rtol, atol, roundoff, noise,
        contraction, slow, thin_margin, lu_data, lu_piv, lu_state, iterations, residuals, counters, hist_out, R_out,
        scenario_order, f_r, f_q, f_v, f_w, f_a, f_al, f_force, f_moment, f_length, f_jforce, f_jmoment, f_jerror,
        f_scalars, status):
    """The compiled loop of :func:`advance` and :func:`advance_frames`: ``nframes`` blocks of ``spf``
    steps; with ``frames``, each block starts with a fresh tangent and no predictor history
    and ends with the frame checks and quantities of :func:`advance_frames`.

    ``TG`` (blocks, steps per block + 1, 3, own unknowns) holds the values the elements' own rows
    hold (a drive's F, Ḟ, F̈; 0 for a row without drive) at the step ends of each block.  At every
    frame boundary ``lam`` holds the joints' multipliers of the state from the constrained
    equations (THEORY §11, reactions; :func:`_constrained`): the frame's reactions, and the next
    step's Newton start; ``FE`` (blocks, n, 6), the external forces and moments (gravity included),
    and ``TGE`` (blocks, 3, own unknowns), the rows' values, are those at each frame's end, at the
    time the driver gives that state (its restart there repeats the solve to the last bit).

    Every work array is allocated here, once per call, and passed down one by one (see
    :func:`_evaluate`).  Returns the blocks completed; ``status`` as in :func:`advance_frames`.
    """
    n_all = r.shape[0]
    n_own = lam.shape[0]  # the elements' own unknowns (physical), after the bodies' in R, du, …
    ndof = 6 * nm + n_own
    is_dense = dense_flat.shape[0] > 0  # else the block tree LU, or the block sparse LU if sym is not empty
    c_a = 1.0 / (beta * dt * dt)
    g = gamma / (beta * dt)
    krr = np.empty(nm)
    for i in range(nm):
        krr[i] = am * mass[i] * c_a
    Rn = np.empty((n_all, 3, 3))
    R1 = np.empty((n_all, 3, 3)); T = np.empty((n_all, 3, 3)); Om = np.empty((n_all, 3, 3))
    v1 = np.empty((n_all, 3)); a1 = np.empty((n_all, 3))
    w1 = np.empty((n_all, 3)); al1 = np.empty((n_all, 3))
    a_pred = np.empty((n_all, 3)); w_pred = np.empty((n_all, 3)); al_pred = np.empty((n_all, 3))
    Xn = np.empty((nm, 3)); W = np.empty(3); A = np.empty(3); JW = np.empty(3)
    R = np.empty(ndof); Q = np.empty(ndof)
    # the block LUs factorize in place: the tangent is assembled into the factorization's storage, which
    # holds the factors kept by modified Newton until a fresh tangent is assembled to replace them (one
    # array of the model's size, not two, and no copy: at 10 000 links they are 29 MB each)
    data = np.empty(size) if is_dense else lu_data
    d = np.zeros((n_all, 3)); th = np.zeros((n_all, 3))
    r1 = np.empty((n_all, 3)); q1 = np.empty((n_all, 4))
    tol = np.empty((nm, 2)); tol_fin = np.empty((nm, 2)); stiff = np.empty(nm)
    hist = np.empty(2 * max_it + 2)
    Ktt = np.empty((nm, 3, 3))
    n_el = el_body.shape[0]
    el_res, el_out, K1, dummy, nopos, nodata, scr, cache = _work(n_el, el_dofs.shape[1])
    du = np.empty(ndof); tree_work = np.empty(max(18 * nm, ndof))
    e_noise = np.empty(ndof); x_noise = np.empty(ndof)
    nodr = np.zeros((0, 3))  # the increments of a single state (PREPARE): none
    lam1 = np.empty(n_own); scale = np.empty(n_own); tol_own = np.empty(n_own); tol_own_fin = np.empty(n_own)
    for j in range(n_own):
        scale[j] = el_ref[j] * c_a  # k = m_ref/(βΔt²) or J_ref/(βΔt²)
    xs = np.empty((nm, 6)); Fx = np.empty((n_all, 3)); Mx = np.empty((n_all, 3)); Jw_ = np.empty((nm, 3, 3)); mw = np.empty(nm)
    lam0 = np.empty(n_own)
    r0 = np.empty_like(r); q0 = np.empty_like(q); v0 = np.empty_like(v)
    a0 = np.empty_like(a); w0 = np.empty_like(w); al0 = np.empty_like(al); e0 = np.empty_like(energy)
    out = np.empty(9)
    refresh = ndof >= 0  # True, as a run-time bool: a literal True would compile a second _correction
    for j in range(status.shape[0]):
        status[j] = 0
    for f in range(nframes):
        if frames:
            r0[:] = r; q0[:] = q; v0[:] = v; a0[:] = a; w0[:] = w; al0[:] = al; e0[:] = energy; lam0[:] = lam
            lu_state[0] = 0.0  # a fresh tangent and no predictor history after every frame (GeneralizedAlpha.restart)
            prev_dt[:] = 0.0  # (lam: the frame's multipliers, see above)
            lam_gap[:] = 0.0
        for step in range(spf):
            ks = f * spf + step
            # --- per-step constants (prepare) -------------------------------------------
            _rotations(q, Rn)
            if cache.shape[1] > 0:  # the elements' own (a joint's G(q_n)): mbsim.elements.engine.PREPARE
                engine.evaluate(el_start, el_body, el_data, el_first, lam, scale, TG[f, step + 1, 0], af, g, kc.PREPARE, r,
                                r, nodr, Rn, Rn, v, v, w, w, dummy, dummy, el_res, K1, el_out, nopos, nodata, scr, cache)
            for i in range(n_all):
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
            _spring_scale(nm, r, el_body, el_arm, el_stiff, stiff)
            # --- predictor (GeneralizedAlpha.predict) ------------------------------------
            extrapolate = prev_dt[0] > 0.0
            # a' extrapolated from a_n, a_prev and a_prev2 at t_n, t_n − h1, t_n − h1 − h2 (quadratic; linear
            # with one step of history): a' = p0 a_n + p1 a_prev + p2 a_prev2
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
                CA = kb.cay_mv(c0, ax, -1.0)
                for j in range(3):
                    d[i, j] = dt * v[i, j] + dt * dt * ((0.5 - beta) * a[i, j]
                                                        + beta * (p0 * a[i, j] + p1 * a_prev[0, i, j]
                                                                  + p2 * a_prev[1, i, j]))
                    th[i, j] = dt * w[i, j] + dt * dt * ((0.5 - beta) * al[i, j] + beta * CA[j])
            # the elements' own unknowns start from the last steps' values extrapolated in time (quadratically
            # through three, linearly through two, the last alone after a frame): lam belongs to t_n + tau
            # (the last step's t_n−1 + α_f Δt, or t_n itself after a frame's restart), lam_prev[0] lam_gap[0]
            # before it, lam_prev[1] lam_gap[1] before that; the new ones to t_n + α_f Δt (THEORY §11)
            tau = -(1.0 - af) * prev_dt[0]
            l0, l1, l2 = _extrapolation(af * dt, tau, tau - lam_gap[0], tau - lam_gap[0] - lam_gap[1],
                                        lam_gap[0] > 0.0, lam_gap[0] > 0.0 and lam_gap[1] > 0.0)
            for j in range(n_own):  # (the terms of weight 0 left out: a frame's multipliers may be NaN)
                lam1[j] = l0 * lam[j]
                if l1 != 0.0:
                    lam1[j] += l1 * lam_prev[0, j]
                if l2 != 0.0:
                    lam1[j] += l2 * lam_prev[1, j]
            # --- Newton (the stopping test of mbsim.integrators.generalized_alpha) ------------
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
                kmode = mode if fresh else 0
                culprit = _evaluate(kmode, nm, af, am, gamma, dt, c_a, g, d, th, r, q, v, a, w, al, Rn,
                                    a_pred, w_pred, al_pred, F_alpha, M_alpha, ks, Xn, mass, Jb, krr,
                                    el_start, el_body, el_data, el_first, lam1, scale, TG[f, step + 1, 0], el_dofs,
                                    el_pos, body_pos,
                                    R, Q, data, r1, q1, R1, T, Om, v1, a1, w1, al1, Ktt, el_res, el_out, K1, scr, cache)
                if culprit >= 0:
                    reason = DEGENERATE
                    break
                rnorm = _norm(R)
                hist[nh] = rnorm
                nh += 1
                if not np.isfinite(rnorm):
                    reason = NONFINITE_RESIDUAL
                    break
                if nh >= 4 and hist[nh - 1] > hist[nh - 2] > hist[nh - 3] > hist[nh - 4]:
                    reason = GREW
                    break
                if rnorm > 1e8 * max(hist[0], _TINY):
                    reason = BLEW_UP
                    break
                _tolerances(nm, rtol, atol, roundoff, g, c_a, af, am, mass, j_max, arm, stiff, d, th, r1, v1, a1, w1,
                            al1, a_pred, w_pred, al_pred, R, Q, tol, tol_fin)
                _own_tolerances(nm, el_body, el_owner, el_rot, tol, tol_fin, tol_own, tol_own_fin)
                hold = _rows_hold(R, nm, scale, tol_own)
                culprit = _correction(fresh, is_dense, data, dense_flat, ndof, lu_data, lu_piv, nm, parent, order,
                                      sym, lu_state, dt, R, du, tree_work, counters)
                if culprit != -1:
                    reason = NONFINITE_CORRECTION if culprit == -2 else SINGULAR
                    break
                refreshed = refreshed or fresh
                have = True
                sz, sz_all = _sizes(du, tol, tol_own, tol_fin, tol_own_fin)
                rate = sz / last if last > 0.0 else np.inf
                rate_all = sz_all / last_all if last_all > 0.0 else np.inf
                if k > 0 and hold and sz <= noise:
                    break  # converged: Δu_k is round-off noise, nothing to gain from it
                if k > 0 and hold and k < max_it and rate_all < 1.0 and rate_all * sz_all <= 1.0 - rate_all:
                    # converged once Δu_k is applied: ‖u_k + Δu_k − u*‖ ≤ ρ‖Δu_k‖/(1 − ρ) ≤ tol (SciPy's BDF
                    # and RADAU5 stop so), at the price of the kinematics, not of another residual.  Measured
                    # with every unknown weighed, those of rows at round-off too: u_k's residual there is as
                    # good as floating point gets, but what Δu_k does to them is only bounded by this
                    counters[0] += 1
                    k += 1
                    thin = rate_all * sz_all > thin_margin * (1.0 - rate_all)
                    _apply(du, nm, d, th, lam1, scale)
                    kb.kinematics(d, th, q, r, v, a, w, al, dt, c_a, g, gamma, a_pred, w_pred, al_pred,
                                  r1, q1, R1, T, Om, v1, a1, w1, al1, not refresh)
                    break
                if k > 0 and hold and rate < 1.0 and sz <= 1.0 - rate:
                    break  # at the iteration limit: u_k itself, ‖u_k − u*‖ ≤ ‖Δu_k‖/(1 − ρ) ≤ tol
                if (k > 0 and hold and refreshed and n_own > 0 and rate_all > _STALL
                        and sz_all <= _noise_size(nm, d, el_body, el_arm, el_owner, el_rot, scale, is_dense, lu_data,
                                                  ndof, lu_piv, parent, order, sym, tree_work, e_noise, x_noise,
                                                  tol_fin, tol_own_fin)):
                    # converged as far as floating point allows: with a tangent of this step the corrections
                    # no longer shrink, and they are no larger than what the round-off of the joints' rows
                    # makes through K⁻¹ (at a dead point ε in Φ moves the bodies by ε/σ); u_k is kept
                    # (counted: GeneralizedAlpha.n_floor)
                    counters[3] += 1
                    break
                if k == max_it:
                    reason = MAX_ITERATIONS
                    break
                if not fresh and k > 0 and rate > contraction:
                    # the old factorization no longer contracts fast enough: refresh it here, and measure
                    # the rate afresh from two corrections of the new one
                    counters[2] += 1
                    _evaluate(mode, nm, af, am, gamma, dt, c_a, g, d, th, r, q, v, a, w, al, Rn,
                              a_pred, w_pred, al_pred, F_alpha, M_alpha, ks, Xn, mass, Jb, krr,
                              el_start, el_body, el_data, el_first, lam1, scale, TG[f, step + 1, 0], el_dofs,
                              el_pos, body_pos,
                              R, Q, data, r1, q1, R1, T, Om, v1, a1, w1, al1, Ktt, el_res, el_out, K1, scr, cache)
                    culprit = _correction(refresh, is_dense, data, dense_flat, ndof, lu_data, lu_piv, nm, parent,
                                          order, sym, lu_state, dt, R, du, tree_work, counters)
                    refreshed = True
                    if culprit != -1:
                        reason = NONFINITE_CORRECTION if culprit == -2 else SINGULAR
                        break
                    sz, sz_all = _sizes(du, tol, tol_own, tol_fin, tol_own_fin)
                if not modified:
                    have = False
                    lu_state[0] = 0.0
                counters[0] += 1
                k += 1
                last = sz
                last_all = sz_all
                _apply(du, nm, d, th, lam1, scale)
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
            # --- accept: state, predictor history, energy integrals (trapezoidal, like the Python step) ----
            for i in range(n_all):
                for j in range(3):
                    a_prev[1, i, j] = a_prev[0, i, j]; al_prev[1, i, j] = al_prev[0, i, j]
                    a_prev[0, i, j] = a[i, j]; al_prev[0, i, j] = al[i, j]
                    r[i, j] = r1[i, j]; v[i, j] = v1[i, j]; a[i, j] = a1[i, j]
                    w[i, j] = w1[i, j]; al[i, j] = al1[i, j]
                for j in range(4):
                    q[i, j] = q1[i, j]
            if n_own > 0:  # the drives' work, −λ_mid·(F(t_{n+1}) − F(t_n)), λ_mid at t_n + Δt/2 (THEORY §11, energy)
                tau = -(1.0 - af) * prev_dt[0]  # when the last multipliers belong to, from t_n (0: a frame's)
                wgt = (0.5 * dt - tau) / (af * dt - tau)
                for j in range(n_own):
                    dF = TG[f, step + 1, 0, j] - TG[f, step, 0, j]
                    if dF != 0.0:
                        energy[1] -= (lam[j] + wgt * (lam1[j] - lam[j])) * dF
            lam_prev[1] = lam_prev[0]
            lam_prev[0] = lam
            lam_gap[1] = lam_gap[0]
            lam_gap[0] = af * dt - tau  # from lam's time (t_n + tau) to lam1's (t_n + α_f Δt)
            lam[:] = lam1
            prev_dt[1] = prev_dt[0]
            prev_dt[0] = dt
            pd = _dissipated_power(r, q, v, w, el_start, el_body, el_data, el_joint, el_first, lam, scale,
                                   TG[f, step + 1, 0], Rn, el_res, el_out, K1, dummy, nodr, nopos, nodata, scr, cache)
            pe = 0.0
            for i in range(n_all):
                for j in range(3):
                    pe += FL1[ks, i, j] * v[i, j] + ML1[ks, i, j] * w[i, j]
            energy[0] += 0.5 * dt * (energy[2] + pd)
            energy[1] += 0.5 * dt * (energy[3] + pe)
            energy[2] = pd
            energy[3] = pe
        if not frames:
            continue
        if not (_finite2(r) and _finite2(q) and _finite2(v) and _finite2(a) and _finite2(w) and _finite2(al)):
            r[:] = r0; q[:] = q0; v[:] = v0; a[:] = a0; w[:] = w0; al[:] = al0; energy[:] = e0
            lam[:] = lam0
            prev_dt[:] = 0.0
            status[1] = 1
            return f
        if n_own > 0:  # the frame's multipliers from the constrained equations (NaN where they are singular)
            for i in range(n_all):
                for j in range(3):
                    Fx[i, j] = FE[f, i, j]
                    Mx[i, j] = FE[f, i, 3 + j]
            if _constrained(-1, nm, r, q, v, w, mass, Jb, Fx, Mx, TGE[f, 2], el_start, el_body, el_data,
                            el_first, el_ref, el_dofs, el_pos, body_pos, is_dense, dense_flat, lu_data, lu_piv, parent,
                            order, sym, lu_state, data, R, Q, du, tree_work, Rn, mw, Jw_, el_res, el_out, K1, dummy,
                            nodata, scr, cache, xs, lam) >= 0:
                lam[:] = np.nan
        if not _frame_row(r, q, v, w, a, al, energy, lam, scale, TGE[f, 0], mass, Jb, gravity, el_start, el_body,
                          el_data, el_index, el_joint, el_first, scenario_order, f_r, f_q, f_v, f_w, f_a, f_al, f_force,
                          f_moment, f_length, f_jforce, f_jmoment, f_jerror, f_scalars, f, out, Rn, el_res, el_out, K1,
                          dummy, nopos, nodata, scr, cache):
            status[0] = spf
            status[1] = 2
            return f
    return nframes


@njit(cache=True)
def _frame_row(r, q, v, w, a, al, energy, lam, scale, target, mass, Jb, gravity, el_start, el_body, el_data, el_index,
               el_joint, el_first, scenario_order, f_r, f_q, f_v, f_w, f_a, f_al, f_force, f_moment, f_length,
               f_jforce, f_jmoment, f_jerror, f_scalars, f, out, R, el_res, el_out, K1, dummy, nopos, nodata, scr, cache):
    """Row ``f`` of the frame buffers (mbsim.diagnostics.FRAME_BUFFER_KEYS: OUTPUT.md's per-frame
    datasets in scenario order, ``scenario_order[j]`` the internal index of scenario body j) from the
    state; returns False if the element actions, energies or momenta are not finite (the row is
    written all the same).  ``energy`` = [dissipated, external work, …]; ``out`` (9,), ``R`` (n, 3, 3): work."""
    _frame_into(r, q, v, w, lam, scale, target, mass, Jb, gravity, el_start, el_body, el_data, el_index, el_joint,
                el_first, f_force[f], f_moment[f], f_length[f], f_jforce[f], f_jmoment[f], f_jerror[f], out, R, el_res,
                el_out, K1, dummy, nopos, nodata, scr, cache)
    for j in range(scenario_order.shape[0]):
        i = scenario_order[j]
        for c in range(3):
            f_r[f, j, c] = r[i, c]; f_v[f, j, c] = v[i, c]; f_w[f, j, c] = w[i, c]
            f_a[f, j, c] = a[i, c]; f_al[f, j, c] = al[i, c]
        for c in range(4):
            f_q[f, j, c] = q[i, c]
    f_scalars[f, 0] = out[0]
    f_scalars[f, 1] = out[1]
    f_scalars[f, 2] = energy[0]
    f_scalars[f, 3] = energy[1]
    for c in range(6):
        f_scalars[f, 4 + c] = out[2 + c]
    return _finite1(out)


@njit(cache=True)
def _constrained(mode, nm, r, q, v, w, mass, Jb, F, M, target, el_start, el_body, el_data, el_first, el_ref, el_dofs,
                 el_pos, body_pos, is_dense, dense_flat, lu_data, lu_piv, parent, order, sym, lu_state, data, R, Q, du,
                 tree_work, Rm, krr, Jw, el_res, el_out, K1, dummy, nodata, scr, cache, x, lam):
    """The joints' constrained equations at one state (THEORY §11), with the Newton iteration's
    storage and linear solver (its factorization is overwritten: ``lu_state[0]`` ← 0).

    ``mode`` −1, accelerations: ``M a + Gᵀλ = f − ω×Jω``, ``G a = F̈ − γ`` (``target`` = F̈; ``F``,
    ``M`` the external forces and moments on every body, gravity included; element forces are
    added) → ``x`` (nm, 6) = [a, α], ``lam`` the multipliers (physical).  ``mode`` −2, velocities:
    ``M v' + Gᵀμ = M v``, ``G v' = Ḟ`` (``target`` = Ḟ) → ``x`` = [v', ω'], the velocities closest to
    ``v`` in the kinetic-energy norm that satisfy the joints.  The multipliers are solved for scaled by
    ``el_ref`` (m_ref, J_ref: every block O(mass)).  Returns −1, or the block whose pivot is singular
    (as :func:`_factorize`)."""
    ndof = R.shape[0]
    _rotations(q, Rm)
    for i in range(nm):
        krr[i] = mass[i]
        for a_ in range(3):
            for b_ in range(3):
                acc = 0.0
                for c_ in range(3):
                    for d_ in range(3):
                        acc += Rm[i, a_, c_] * Jb[i, c_, d_] * Rm[i, b_, d_]
                Jw[i, a_, b_] = acc
    for j in range(ndof):
        R[j] = 0.0
        Q[j] = 0.0
    data[:] = 0.0
    kb.scatter_bodies(body_pos, krr, Jw, data)
    engine.evaluate(el_start, el_body, el_data, el_first, lam, el_ref, target, 1.0, 0.0, mode, r, r, np.zeros((0, 3)),
                    Rm, Rm, v, v, w, w, dummy, dummy, el_res, K1, el_out, el_pos, data, scr, cache)
    kb.scatter_residual(el_dofs, el_res, R, Q)
    for i in range(nm):
        L = kc.mv(Jw, i, kc.row(w, i, 0))  # J ω
        gyro = kc.cross(kc.row(w, i, 0), L)
        for j in range(3):
            if mode == -1:
                R[6 * i + j] += F[i, j]
                R[6 * i + 3 + j] += M[i, j] - gyro[j]
            else:
                R[6 * i + j] = mass[i] * v[i, j]
                R[6 * i + 3 + j] = L[j]
    lu_state[0] = 0.0
    bad = _factorize(is_dense, data, dense_flat, ndof, lu_data, lu_piv, nm, parent, order, sym)
    if bad >= 0:
        return bad
    _solve(is_dense, lu_data, ndof, lu_piv, nm, parent, order, sym, R, du, tree_work)
    for i in range(nm):
        for j in range(6):
            x[i, j] = du[6 * i + j]
    for j in range(lam.shape[0]):
        lam[j] = el_ref[j] * du[6 * nm + j]
    return -1


def constrained(mode, nm, r, q, v, w, mass, Jb, F, M, target, elements, body_pos, size, structure, lu_data, lu_piv,
                lu_state):
    """:func:`_constrained` from Python: ``(x, lam, bad)`` (``elements``: :func:`element_arguments`;
    ``structure``: (parent, order, dense positions, sym) of the linear solver)."""
    el_start, el_body, el_data, _, _, _, _, el_first, el_ref, _, _, el_dofs, el_pos = elements
    parent, order, dense_flat, sym = structure
    ndof = 6 * nm + el_ref.shape[0]
    el_res, el_out, K1, dummy, _, nodata, scr, cache = _work(el_body.shape[0], el_dofs.shape[1])
    x, lam = np.zeros((nm, 6)), np.zeros(el_ref.shape[0])
    bad = _constrained(mode, nm, r, q, v, w, mass, Jb, F, M, target, el_start, el_body, el_data, el_first, el_ref,
                       el_dofs, el_pos, body_pos, dense_flat.shape[0] > 0, dense_flat, lu_data, lu_piv, parent, order,
                       sym, lu_state, np.zeros(size), np.zeros(ndof), np.zeros(ndof), np.zeros(ndof),
                       np.zeros(max(18 * nm, ndof)), np.empty((r.shape[0], 3, 3)), np.empty(nm), np.empty((nm, 3, 3)),
                       el_res, el_out, K1, dummy, nodata, scr, cache, x, lam)
    return x, lam, int(bad)


@njit(cache=True)
def _correction(fresh, is_dense, data, dense_flat, ndof, lu_data, piv_flat, nm, parent, order, sym, lu_state, dt,
                R, du, tree_work, counters):
    """du ← K⁻¹R with the factorization in ``lu_data``, factorizing the tangent ``data`` first if
    ``fresh``.  Returns −1; or, when the tangent is singular, the moving body (internal index) whose
    pivot block is singular -- for the dense LU the body of the zero pivot's column, a guess: with row
    pivoting the dependency may involve earlier bodies, or ``nm`` + an element-owned unknown; for the
    block LU the block (a body's, with the own unknowns of the element to its parent, or the own
    unknowns of an element closing a loop); −2 when du is not finite."""
    if fresh:
        counters[1] += 1
        bad = _factorize(is_dense, data, dense_flat, ndof, lu_data, piv_flat, nm, parent, order, sym)
        if bad >= 0:
            lu_state[0] = 0.0
            return bad
        lu_state[0] = 1.0
        lu_state[1] = dt
    _solve(is_dense, lu_data, ndof, piv_flat, nm, parent, order, sym, R, du, tree_work)
    return -1 if _finite1(du) else -2


@njit(cache=True)
def _factorize(is_dense, data, dense_flat, ndof, lu_data, piv_flat, nm, parent, order, sym):
    """Factorize the tangent ``data`` into ``lu_data``; −1, or the moving body whose pivot block is
    singular (the dense LU: the body of the zero pivot's column)."""
    if is_dense:
        bad = dense.factorize(data, dense_flat, ndof, lu_data, piv_flat)
        if bad < 0:
            return -1
        return bad // 6 if bad < 6 * nm else nm + bad - 6 * nm  # a body, or nm + an element-owned unknown
    if data.ctypes.data != lu_data.ctypes.data:  # (the compiled loop assembles into lu_data itself)
        lu_data[:] = data
    if sym.shape[0] > 0:
        return blocklu.factorize(lu_data, sym, piv_flat)
    return tree.factorize(lu_data, nm, parent, order, piv_flat)


@njit(cache=True)
def _solve(is_dense, lu_data, ndof, piv_flat, nm, parent, order, sym, R, du, work):
    """du ← K⁻¹R with the factors in ``lu_data`` (``work``: 18·nm values for the tree solve)."""
    if sym.shape[0] > 0:
        blocklu.solve_into(lu_data, sym, piv_flat, R, work, du)
    elif is_dense:
        du[:] = R
        dense.lu_block_solve(lu_data, 0, ndof, piv_flat, 0, du, 0)
    else:
        tree.solve_into(lu_data, nm, parent, order, piv_flat, R, work, du)


@njit(cache=True)
def frame(r, q, v, w, a, al, energy, lam, target, mass, Jb, gravity, el_start, el_body, el_data, el_index, el_joint,
          el_arm, el_stiff, el_first, el_ref, el_owner, el_rot, el_dofs, el_pos, scenario_order, f_r, f_q, f_v, f_w, f_a,
          f_al, f_force, f_moment, f_length, f_jforce, f_jmoment, f_jerror, f_scalars):
    """Row 0 of the frame buffers from one state (:func:`_frame_row`, the compiled loop's own frame
    code; ``lam`` the joints' multipliers of the state, ``target`` the values their rows hold);
    False if its element actions, energies or momenta are not finite."""
    el_res, el_out, K1, dummy, nopos, nodata, scr, cache = _work(el_body.shape[0], el_dofs.shape[1])
    return _frame_row(r, q, v, w, a, al, energy, lam, el_ref, target, mass, Jb, gravity, el_start, el_body, el_data,
                      el_index, el_joint, el_first, scenario_order, f_r, f_q, f_v, f_w, f_a, f_al, f_force, f_moment,
                      f_length, f_jforce, f_jmoment, f_jerror, f_scalars, 0, np.empty(9), np.empty((r.shape[0], 3, 3)),
                      el_res, el_out, K1, dummy, nopos, nodata, scr, cache)


@njit(cache=True)
def _frame_into(r, q, v, w, lam, scale, target, mass, Jb, gravity, el_start, el_body, el_data, el_index, el_joint,
                el_first, force, moment, length, j_force, j_moment, j_error, out, R, el_res, el_out, K1, dummy, nopos,
                nodata, scr, cache):
    """:func:`frame` with its work arrays given (``R``: (n, 3, 3), receives Λ of every body)."""
    n_all = r.shape[0]
    spring_energy, _ = _single_state(r, q, v, w, el_start, el_body, el_data, el_index, el_joint, el_first, lam, scale,
                                     target, force, moment, length, j_force, j_moment, j_error, R, el_res, el_out, K1,
                                     dummy, nopos, nodata, scr, cache)
    kinetic, grav = 0.0, 0.0
    for j in range(2, 8):
        out[j] = 0.0
    for i in range(n_all):
        mi = mass[i]
        W = kc.mtv(R, i, kc.row(w, i, 0))  # J ω = Λ J_b Λᵀ ω
        Jw = kc.mv(R, i, kc.mv(Jb, i, W))
        for j in range(3):
            kinetic += 0.5 * (mi * v[i, j] * v[i, j] + w[i, j] * Jw[j])
            grav += mi * gravity[j] * r[i, j]
            out[2 + j] += mi * v[i, j]
        out[5] += (r[i, 1] * mi * v[i, 2] - r[i, 2] * mi * v[i, 1]) + Jw[0]
        out[6] += (r[i, 2] * mi * v[i, 0] - r[i, 0] * mi * v[i, 2]) + Jw[1]
        out[7] += (r[i, 0] * mi * v[i, 1] - r[i, 1] * mi * v[i, 0]) + Jw[2]
    out[0] = kinetic
    out[1] = spring_energy - grav
    total = 0.0
    for c in range(force.shape[0]):
        for j in range(3):
            total += force[c, j] + moment[c, j]
    for c in range(j_force.shape[0]):
        for j in range(3):
            total += j_force[c, j] + j_moment[c, j]
    for c in range(length.shape[0]):  # NaN by design for torsional dampers; inf never
        if np.isinf(length[c]):
            total += np.inf
    out[8] = total


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


def advance_frames(nframes, spf, dt, *args):
    """Up to ``nframes`` output frames of ``spf`` steps each: :func:`advance`
    per frame (a fresh tangent at the start of each, as between the blocks
    the driver takes one frame at a time), then :func:`frame` into row ``f``
    of the frame buffers.

    ``scenario_order[j]`` is the internal index of scenario body ``j``; the
    ``f_*`` buffers are in scenario order like the result file;
    ``f_scalars[f]`` = [kinetic, potential, dissipated, external work,
    linear momentum (3), angular momentum (3)].  ``F_alpha`` … ``ML1`` hold
    ``nframes·spf`` steps' loads, ``iterations``/``residuals`` as many entries.

    Returns the frames completed, ``f``.  When ``f < nframes``, ``status`` says why:
    ``[steps, 0]`` — the step after ``steps`` further steps did not converge
    (the state is the one before it); ``[0, 1]`` — the state at the end of
    frame ``f`` was not finite (the state is put back to the start of that
    frame); ``[spf, 2]`` — the frame's connector actions, energies or momenta
    were not finite (the state is the frame's, its row is not written).  The
    caller redoes or diagnoses each in Python.

    ``args`` are those of :func:`run` from ``r`` to ``status``.
    """
    return run(nframes, spf, True, dt, *args)
