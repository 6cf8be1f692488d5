#!/usr/bin/env python3
"""How few steps any choice of step sizes needs for a given accuracy: what error control
(``time.tolerance``) could at best save over a uniform step, measured on an example (docs/stepping.md,
"What no step control can do").

To leading order the global error at every frame is a sum of the steps' local errors carried to it, and a
step's local error goes as Δt³; so with the run cut into windows of frames, each window w with its own
uniform step Δt_w = Δt_f √x_w, the error at every frame is *linear* in x:

    e_k(x) = r_k + Σ_w K_kw x_w                 (per frame k, body and component, signed)

This script measures K without any estimate: from a run of uniform steps Δt_f (the example's Δt halved;
every frame on a step) it doubles the steps of one window at a time (x_w = 4) and takes the change of
every frame's error against the reference solver, over 3. The windows' K add up to the uniform run's
error (superposition: printed). Then:

- the **best steps**: the fewest steps  Σ_w n_w / √x_w  with the largest error over every frame and body
  (position [m] and rotation angle [rad], as ``benchmarks/adaptive.py`` measures it) no larger than the
  uniform run's — a convex program (each error's norm is convex in x, the count convex for x > 0), solved
  with SLSQP. Nothing restricts x beyond 1e-4 ≤ x ≤ 1e4: the best steps may use errors of opposite signs
  cancelling (at every frame, since every frame is constrained); then *run* with those steps (rounded to
  whole steps per frame interval) and measured;
- for comparison the bound of steps that ignore the signs, at the frame and component of the largest
  error (t*): (t*² ∫|g| / (∫|g|^(1/3))³)^(1/2) over [0, t*], g the windows' K there.

The steps are taken with the integrator's own step (``GeneralizedAlpha.step``, the accelerations moved to
each new size by ``rescaled``, as error-controlled runs do), one at a time, from Python.

Usage::

    python benchmarks/step_oracle.py                       # iftomm_a03_andrews, spin_down (a few minutes)
    python benchmarks/step_oracle.py --only loads mass_spring_damper --windows 24
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("MBSIM_FIRST_RUN", "compile")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

from mbsim.integrators import GeneralizedAlpha  # noqa: E402
from mbsim.kernels.rotations import quat_conj, quat_mul  # noqa: E402
from mbsim.model.model import Model  # noqa: E402
from mbsim.reference import solve_reference  # noqa: E402
from mbsim.scenario import load_scenario  # noqa: E402

SPANS = {"iftomm_a02_four_bars": 0.3}  # (benchmarks/adaptive.py's: the reference's cost)


def signed_error(pos, quat, ref_pos, ref_quat) -> np.ndarray:
    """Per frame and body (F, B, 6): the position error and the world rotation vector from the reference's
    orientation to the run's (small angles)."""
    d = quat_mul(quat, quat_conj(ref_quat))
    return np.concatenate([pos - ref_pos, 2.0 * d[..., 1:] * np.sign(d[..., :1])], -1)


def largest(e: np.ndarray) -> float:
    """The largest position or rotation error over frames and bodies."""
    return float(max(np.linalg.norm(e[..., :3], axis=-1).max(), np.linalg.norm(e[..., 3:], axis=-1).max()))


class Runs:
    """Runs of an example that land on every frame: ``m[i]`` equal steps in the frame interval i."""

    def __init__(self, sc, times, ref):
        self.sc, self.times, self.ref = sc, times, ref
        self.model = Model(sc)

    def errors(self, m) -> np.ndarray:
        ga = GeneralizedAlpha(self.model, self.sc.integrator)
        s = ga.initial_state()
        pos, quat = [], []
        f = ga.frame(s)
        pos.append(f["bodies/position"])
        quat.append(f["bodies/orientation"])
        for i, mi in enumerate(m):
            h = (self.times[i + 1] - self.times[i]) / mi
            for _ in range(int(mi)):
                res = ga.step(ga.rescaled(s, h), h)
                if not res.ok:
                    raise RuntimeError(res.message)
                s = res.state
            f = ga.frame(s)
            pos.append(f["bodies/position"])
            quat.append(f["bodies/orientation"])
        return signed_error(np.array(pos), np.array(quat), self.ref["bodies/position"], self.ref["bodies/orientation"])


def best_steps(K, r, n, E, x0=None, bounds=None):
    """The x (W,) that minimizes Σ n_w / √x_w with every |position| and |rotation| of ``r + K x`` ≤ E
    (K: (F, B, 6, W)); SLSQP from ``x0`` (default the uniform steps, x = 1) within ``bounds`` (default
    1e-4 … 1e4 each)."""
    F, B, _, W = K.shape
    Kp, Kr = K[:, :, :3].reshape(-1, 3, W), K[:, :, 3:].reshape(-1, 3, W)
    rp, rr = r[:, :, :3].reshape(-1, 3), r[:, :, 3:].reshape(-1, 3)
    scale = 1.0 / E

    def cons(x):
        ep, er = (rp + Kp @ x) * scale, (rr + Kr @ x) * scale
        return np.concatenate([1.0 - (ep * ep).sum(-1), 1.0 - (er * er).sum(-1)])

    def cons_jac(x):
        ep, er = (rp + Kp @ x) * scale, (rr + Kr @ x) * scale
        return np.concatenate([-2.0 * np.einsum("ic,icw->iw", ep, Kp * scale),
                               -2.0 * np.einsum("ic,icw->iw", er, Kr * scale)])

    total = n.sum()
    res = minimize(lambda x: (n / np.sqrt(x)).sum() / total, np.ones(W) if x0 is None else x0,
                   jac=lambda x: -0.5 * n * x ** -1.5 / total, method="SLSQP",
                   bounds=bounds or [(1e-4, 1e4)] * W, constraints=[{"type": "ineq", "fun": cons, "jac": cons_jac}],
                   options={"maxiter": 500, "ftol": 1e-10})
    return res.x, res


def _steps_of(m0, edges, x):
    """Whole steps per frame interval for the windows' x (the step √x_w times the uniform one)."""
    return np.concatenate([np.maximum(1, np.round(m0[edges[w]:edges[w + 1]] / math.sqrt(x[w]))).astype(int)
                           for w in range(len(edges) - 1)])


def _x_of(m0, edges, m):
    """The windows' x that whole steps ``m`` make (their steps' count against the uniform one's)."""
    return np.array([(m0[edges[w]:edges[w + 1]].sum() / m[edges[w]:edges[w + 1]].sum()) ** 2
                     for w in range(len(edges) - 1)])


def refine(runs, m0, edges, x, E, rounds: int, log):
    """Sequential convex programming on the runs themselves: about the steps ``x``, the windows' K measured
    again (each window's x doubled in turn), the best steps of that linear model within a factor 4 of
    ``x``, run; ``rounds`` times.  Returns the best run's (steps, error, uniform steps / these at equal
    error) and its x."""
    W = len(edges) - 1
    n = np.array([m0[edges[w]:edges[w + 1]].sum() for w in range(W)], dtype=float)
    N0 = m0.sum()
    best = None
    for k in range(rounds):
        m = _steps_of(m0, edges, x)
        x = _x_of(m0, edges, m)
        e = runs.errors(m)
        err = largest(e)
        ratio = N0 / (m.sum() * math.sqrt(err / E))
        log(f"  refinement {k}: {m.sum()} steps, largest error {err:.3e}: uniform steps / these at equal error "
            f"{ratio:.3f}")
        if best is None or ratio > best[0][2]:
            best = ((int(m.sum()), err, ratio), x.copy())
        J = np.empty(e.shape + (W,))
        for w in range(W):
            xw = x.copy()
            xw[w] *= 2.0
            mw = _steps_of(m0, edges, xw)
            dx = _x_of(m0, edges, mw)[w] - x[w]
            J[..., w] = (runs.errors(mw) - e) / dx if dx > 0 else 0.0
        # the linear model e(x') = e + J (x' − x), to reach the uniform run's error E (scaled to the error
        # this run has, so that a model that was off is corrected, not repeated)
        target = E * min(1.0, E / err) ** 0.5 if err > E else E
        x, _ = best_steps(J, e - J @ x, n, target, x0=x, bounds=[(max(1e-4, v / 4), min(1e6, 4 * v)) for v in x])
    return best


def study(name: str, windows: int, rounds: int = 0, log=print) -> dict:
    sc = load_scenario(HERE.parent / "scenarios" / f"{name}.yaml")
    if sc.initial != "as_given":
        raise SystemExit(f"{name}: starts at equilibrium; this script takes examples that start as given")
    span = min(sc.time.end, SPANS.get(name, 1.0))
    sc = replace(sc, time=replace(sc.time, end=span))
    times = np.append(np.arange(0.0, span - 1e-9 * span, sc.output.interval), span)
    ref = solve_reference(sc, times, rtol=1e-11, atol=1e-12).frames()
    runs = Runs(sc, times, ref)
    hf = sc.time.step / 2
    I = len(times) - 1
    m0 = np.array([2 * max(1, math.ceil((times[i + 1] - times[i]) / (2 * hf) - 1e-9)) for i in range(I)])
    edges = np.linspace(0, I, min(windows, I) + 1).round().astype(int)
    W = len(edges) - 1
    e0 = runs.errors(m0)
    E = largest(e0)
    K = np.empty(e0.shape + (W,))
    for w in range(W):
        m = m0.copy()
        m[edges[w]:edges[w + 1]] //= 2
        K[..., w] = (runs.errors(m) - e0) / 3.0
    r = e0 - K.sum(-1)
    # the signs ignored, at the largest error's frame and component
    mag = np.maximum(np.linalg.norm(e0[..., :3], axis=-1), np.linalg.norm(e0[..., 3:], axis=-1))
    fi, bi = np.unravel_index(int(np.argmax(mag)), mag.shape)
    part = slice(0, 3) if np.linalg.norm(e0[fi, bi, :3]) >= np.linalg.norm(e0[fi, bi, 3:]) else slice(3, 6)
    u = e0[fi, bi, part] / np.linalg.norm(e0[fi, bi, part])
    g = np.abs(K[fi, bi, part].T @ u)
    before = edges[1:] <= fi  # (the windows up to that frame: the later ones do not reach it)
    width = np.diff(times[edges])[before]
    dens = g[before] / width
    bound = math.sqrt(width.sum() ** 2 * (dens * width).sum() / ((np.cbrt(dens) * width).sum()) ** 3)
    # the best steps over every frame, predicted and run
    n = np.array([m0[edges[w]:edges[w + 1]].sum() for w in range(W)], dtype=float)
    x, res = best_steps(K, r, n, E)
    predicted = n.sum() / (n / np.sqrt(x)).sum()
    m = _steps_of(m0, edges, x)
    e1 = largest(runs.errors(m))
    ratio = m0.sum() / (m.sum() * math.sqrt(e1 / E))
    out = {"name": name, "t_star": float(times[fi]), "body": sc.bodies[bi].name,
           "part": "position" if part.start == 0 else "rotation", "uniform": (int(m0.sum()), E),
           "superposition": largest(r) / E, "bound": bound, "g": g, "x": x, "solver": res,
           "predicted": predicted, "run": (int(m.sum()), e1, ratio), "refined": None}
    if rounds:
        out["refined"] = refine(runs, m0, edges, x, E, rounds, log)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=["iftomm_a03_andrews", "spin_down"])
    ap.add_argument("--windows", type=int, default=48)
    ap.add_argument("--refine", type=int, default=0, metavar="K",
                    help="K rounds of the best steps measured again about the last (the linear model holds "
                         "near the uniform steps only); each costs windows + 1 runs")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    for name in args.only:
        r = study(name, args.windows, args.refine, log=lambda line: print(line, flush=True))
        n0, e0 = r["uniform"]
        n1, e1, ratio = r["run"]
        print(f"\n{r['name']}: uniform steps (Δt/2): {n0} steps, largest error {e0:.3e} "
              f"(at t = {r['t_star']:.6g} s, {r['body']}'s {r['part']})")
        print(f"  superposition: the uniform error less the windows' sum, largest {r['superposition']:.3f} of it")
        print("  g per window at that error (relative): " + " ".join(f"{v:.2f}" for v in r["g"] / r["g"].max()))
        print(f"  signs ignored, at that error: bound uniform steps / best steps = {r['bound']:.3f}")
        print(f"  best steps over every frame (SLSQP: {r['solver'].message.strip()}): predicted "
              f"{r['predicted']:.3f}; step / uniform step per window: "
              + " ".join(f"{v:.2f}" for v in np.sqrt(r["x"])))
        print(f"  best steps, run: {n1} steps, largest error {e1:.3e}: uniform steps / these at equal error "
              f"{ratio:.3f}")
        if r["refined"]:
            (n2, e2, ratio2), x2 = r["refined"]
            print(f"  refined, the best run: {n2} steps, largest error {e2:.3e}: uniform steps / these at equal "
                  f"error {ratio2:.3f}; step / uniform step per window: " + " ".join(f"{v:.2f}" for v in np.sqrt(x2)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
