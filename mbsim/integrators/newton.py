"""Newton's stopping test of a generalized-α step: its rules, its constants, its compiled parts.

docs/newton.md states the test for users, with the reasons; this module is where it is written in
code, once.  In short: every iteration k ≥ 1 evaluates the residual R_k at the iterate u_k and solves
for the correction Δu_k with the factorization in use.  Its size s_k is the largest, over the moving
bodies and the kinds of unknown (translation, rotation), of |Δu_k| over that body's tolerance
(:func:`tolerances`: the error of the position, velocity and acceleration written, in metres, and of
the orientation, angular velocity and angular acceleration, in radians), an element's own unknowns
(λ̃ = λ/k, a length or an angle) weighed against the tolerance of the bodies it joins; ρ_k =
s_k/s_{k−1} is the contraction rate.  The step stops

- at u_k + Δu_k when ρ_k < 1 and ρ_k s_k ≤ 1 − ρ_k with every unknown weighed, the rows at round-off
  too (SciPy's BDF, RADAU5): ‖u_k + Δu_k − u*‖ ≤ ρ‖Δu_k‖/(1 − ρ) ≤ tol;
- at u_k when ρ_k < 1 and s_k ≤ 1 − ρ_k (at the iteration limit), or when s_k ≤ :data:`NOISE_SIZE`
  (the correction is round-off noise);
- at u_k when, with a tangent factorized in the step and own unknowns present, the correction shrank
  by less than 1/:data:`STALL` and is no larger than what the round-off of the joints' rows makes
  through K⁻¹ (:func:`noise_size`: nearly dependent joints at a dead point; counted);

always provided that every own unknown's row holds its equation within its tolerance, in its own units
(:func:`rows_hold`).  A body's force or moment rows whose residual is within :data:`ROUNDOFF_FACTOR`·ε
of the magnitudes that cancel in them are converged as far as floating point allows and drop out of
the test.  Modified Newton keeps a factorization while ρ ≤ :data:`CONTRACTION_LIMIT`, refreshes it
otherwise; the step fails (:data:`REASONS`) at the iteration limit, when R or Δu is not finite, when
the residual grew in 3 consecutive iterations or beyond 1e8 times its first value, when the tangent
is singular, or when an element is undefined (a spring with L0 > 0 collapsed to L = 0).
"""
from __future__ import annotations

import numpy as np

from ..kernels import lu as klu
from ..kernels import njit

# Round-off floor of the stopping test: an iterate whose residual rows are within
# ROUNDOFF_FACTOR·ε of the magnitudes that cancel in them is converged to machine precision.
ROUNDOFF_FACTOR = 16.0

# A correction at most this fraction of the tolerance ends the iteration whatever the measured
# rate: that small, a correction is dominated by round-off and the rate measured between two
# of them is noise, while any contraction faster than 0.99 still bounds the error by the tolerance.
NOISE_SIZE = 0.01

# A step that evaluated this many residuals or more hands the next step a fresh
# factorization (made with its first residual, at no extra evaluation): the kept one
# contracts too slowly for the motion, where a fresh tangent takes two.
SLOW_STEP = 3

# So does a step that stopped after two residuals on a thin margin, its error bound
# ρ‖Δu‖/(1 − ρ) above this fraction of the tolerance: the kept factorization contracts more
# slowly every step as the bodies turn, and the next step would need a third residual or,
# worse, a refresh in the middle (two more evaluations).  On the revolute chain of
# benchmarks/joint_chain.py 0.5 gave the fewest evaluations for the factorizations it costs
# (docs/newton.md, "Modified Newton").
THIN_MARGIN = 0.5

# Modified Newton keeps a factorization while each correction is at most this
# fraction of the one before; a slower contraction means the tangent has
# drifted too far, and it is recomputed at the current iterate.
CONTRACTION_LIMIT = 0.05

# A correction that shrank by less than this factor, with a tangent factorized in the step, is compared
# with the round-off floor of the joints' rows (noise_size): an iteration that contracts faster is not stuck.
STALL = 0.25

# The residual blew up: more than this times its first value.
BLOW_UP = 1e8

EPS = float(np.finfo(np.float64).eps)
TINY = float(np.finfo(np.float64).tiny)

# Why a step failed (status[2] of the compiled loop); GeneralizedAlpha turns them into StepStatus and a message.
MAX_ITERATIONS, GREW, BLEW_UP, NONFINITE_RESIDUAL, NONFINITE_CORRECTION, SINGULAR, DEGENERATE = range(1, 8)
REASONS = {MAX_ITERATIONS: "max_iterations", GREW: "diverged", BLEW_UP: "diverged",
           NONFINITE_RESIDUAL: "nonfinite", NONFINITE_CORRECTION: "nonfinite", SINGULAR: "singular",
           DEGENERATE: "degenerate"}


def settings(spec) -> tuple:
    """The constants of the test as the compiled loop takes them: ``(modified, max_iterations, rtol, atol,
    ROUNDOFF_FACTOR, NOISE_SIZE, CONTRACTION_LIMIT, SLOW_STEP, THIN_MARGIN)`` for an IntegratorSpec."""
    return (bool(spec.modified), int(spec.max_iterations), float(spec.rtol), float(spec.atol), ROUNDOFF_FACTOR,
            NOISE_SIZE, CONTRACTION_LIMIT, SLOW_STEP, THIN_MARGIN)


@njit(cache=True)
def norm(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return np.sqrt(s)


@njit(cache=True)
def _n3(x, i):
    return np.sqrt(x[i, 0] * x[i, 0] + x[i, 1] * x[i, 1] + x[i, 2] * x[i, 2])


@njit(cache=True)
def tolerances(test, consts, bodies, inc, it, pred, RQ, out):
    """How far the unknowns may be from the step's solution, per moving body and kind (translation,
    rotation), into ``tol`` (nm, 2) in m and rad (docs/newton.md); inf for the rows whose residual is at
    round-off; ``fin`` (nm, 2) the tolerances without that exception (``out`` = (tol, fin)).

    ``test`` = (rtol, atol, roundoff); ``consts`` = (dt, c_a, g, γ, α_f, α_m); ``bodies`` = (nm, mass,
    j_max, arm, stiff): masses, largest principal moments of inertia, longest connector arms, and
    Σ k(|x_A| + |x_B|) of the springs of each moving body (:func:`spring_scale`); ``inc`` = (d, θ);
    ``it`` the iterate (r', q', Λ', T, Ω, v', a', ω', α'); ``pred`` = (a_pred, ω_pred, α_pred); ``RQ`` =
    (R, Q): the residual and the magnitudes summed into its rows.

    A body's force (moment) residual is at round-off when it is within ``roundoff·ε`` of the
    magnitudes that cancel in it: the forces (moments) summed into the rows (``Q``); its springs'
    ``Σ k(|x_A| + |x_B|)`` (a force k(L − L0) formed from points far from the origin); for the
    moments, ℓ times both (ℓ the body's longest connector arm, z×f rounds like |z||f|); and the inertia
    of the terms that cancel in the new accelerations and angular velocity, ``α_m m (c_a|d| +
    |a_pred|)`` and ``J_max (α_m (c_a|θ| + |α_pred|) + 2α_f|ω'|(g|θ| + |ω_pred|))``.  Closer to the
    solution than that, the iterate cannot be told from it in floating point, whatever the stiffness.
    """
    rtol, atol, roundoff = test
    c_a, g, af, am = consts[1], consts[2], consts[4], consts[5]
    nm, mass, j_max, arm, stiff = bodies
    d, th = inc
    r1, v1, a1, w1, al1 = it[0], it[5], it[6], it[7], it[8]
    a_pred, w_pred, al_pred = pred
    R, Q = RQ
    tol, fin = out
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
        xr = roundoff * EPS * (qr + stiff[i] + am * mass[i] * (c_a * _n3(d, i) + _n3(a_pred, i)))
        if rr2 <= xr * xr:
            tol[i, 0] = np.inf
        inertia = j_max[i] * (am * (c_a * t + _n3(al_pred, i)) + 2 * af * w * (g * t + _n3(w_pred, i)))
        xt = roundoff * EPS * (qt + arm[i] * (qr + stiff[i]) + inertia)
        if rt2 <= xt * xt:
            tol[i, 1] = np.inf


@njit(cache=True)
def spring_scale(nm, r, el_body, el_arm, el_stiff, out):
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
def own_tolerances(nm, el_body, owner, rotation, body_tol, out):
    """The tolerance of each element-owned unknown, into ``tol_own`` (from ``tol``) and ``fin_own``
    (from ``fin``, the tolerances without the round-off exception) (``body_tol`` = (tol, fin), ``out`` =
    (tol_own, fin_own)): the translation (rotation) tolerance of the bodies its element joins, the
    smaller of the moving ones [m or rad] -- the scaled unknown λ̃ = λ/k is a length (angle): an error
    δλ̃ moves the bodies by about δλ̃ -- and the unit of its row Φ, a position (angle) error of the
    joint.  inf when neither body moves."""
    tol, fin = body_tol
    tol_own, fin_own = out
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
def sizes(du, tol, tol_own, fin, fin_own):
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
def noise_size(nm, d, elements, scale, solver, lu, fin, work):
    """How large a correction the round-off of the joints' rows alone makes, in units of the tolerance
    (every unknown weighed, as :func:`sizes`' second value): the solve K⁻¹e of a right-hand side that
    holds, in each element-owned row, ε times the magnitudes that change from iterate to iterate in it
    (for a position row, formed by mbsim.mechanics.gather.at_state: k·(2 z_short + z_long + |d_A| +
    |d_B|), z_short and z_long the lengths of the shorter and the longer arm, z_long left out when its
    body is fixed, and d the step's increments; k for an angle row: unit vectors), with signs of a fixed
    pseudo-random pattern.  Where the joints' equations are nearly dependent (a dead point: THEORY §11)
    this is what no Newton iteration can get below; elsewhere it is far below the tolerance.

    ``elements`` = (el_body, el_arm, owner, rotation); ``lu`` = (lu_data, piv); ``fin`` = (fin, fin_own);
    ``work`` = (e, x, solve work)."""
    el_body, el_arm, owner, rotation = elements
    lu_data, piv = lu
    fin_b, fin_own = fin
    e, x, sw = work
    o = 6 * nm
    for i in range(o):
        e[i] = 0.0
    for j in range(owner.shape[0]):
        el = owner[j]
        mag = 1.0
        if rotation[j] == 0:
            s_ = 1 if el_arm[el, 0] >= el_arm[el, 1] else 0  # the shorter arm's side (as the gather decides)
            mag = 2.0 * el_arm[el, s_] + (el_arm[el, 1 - s_] if el_body[el, 1 - s_] < nm else 0.0)
            for side in range(2):
                mag += _n3(d, el_body[el, side])
        sign = 1.0 if ((j * 2654435761) >> 15) & 1 else -1.0
        e[o + j] = sign * EPS * scale[j] * mag
    klu.solve(solver, lu_data, piv, e, x, sw)
    return sizes(x, fin_b, fin_own, fin_b, fin_own)[0]  # (both of sizes' values: measured with fin)


@njit(cache=True)
def rows_hold(R, nm, scale, tol_own):
    """Whether every row of the elements' own unknowns (−kΦ, scaled by k = ``scale``) holds its
    equation within the tolerance, in its own units: |Φ| ≤ tol (m or rad)."""
    o = 6 * nm
    for j in range(scale.shape[0]):
        if abs(R[o + j]) > scale[j] * tol_own[j]:
            return False
    return True
