#!/usr/bin/env python3
"""How few steps any choice of step sizes needs: the bound that error control (``time.tolerance``) works
under, measured on an example (docs/stepping.md, "What no step control can do").

The global error of a second-order scheme at a time t* is, to leading order, a sum over the steps of
each step's local error carried to t*:  e(t*) = Σ_n g(t_n) Δt_n³ (g: the error made per unit Δt³ at t_n
times its growth from t_n to t*, a signed number along the error's direction).  Any step sizes with the
same number of steps N = ∫ dt/Δt make ∫ |g| Δt² dt smallest with Δt ∝ |g|^(−1/3) (a Lagrange
multiplier), and the steps they save, at equal error, over a uniform step is

    N_uniform / N_best = ( T² ∫|g| dt / (∫|g|^(1/3) dt)³ )^(1/2).

This script measures g, with no estimate: from a run of uniform steps Δt/2 (the example's Δt halved) to
the frame where its error against the reference solver is largest, it doubles the step in one window of
``--windows`` at a time and takes the change of the error there (the error of a window's steps grows
4 × when they double).  Then it runs the steps Δt ∝ |g|^(−1/3) themselves, at two numbers of steps, and
prints the steps they need for the uniform run's error: the bound, as run.  The steps are taken with the
integrator's own step (``GeneralizedAlpha.step``, the accelerations moved to each new size by
``rescaled``), one at a time, from Python.

Usage::

    python benchmarks/step_oracle.py                       # iftomm_a03_andrews, spin_down (about 4 minutes)
    python benchmarks/step_oracle.py --only bump_stop --windows 96
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

from mbsim import driver  # noqa: E402
from mbsim.integrators import GeneralizedAlpha  # noqa: E402
from mbsim.model.model import Model  # noqa: E402
from mbsim.reference import solve_reference  # noqa: E402
from mbsim.scenario import load_scenario  # noqa: E402

SPANS = {"iftomm_a02_four_bars": 0.3}  # (benchmarks/adaptive.py's: the reference's cost)


def _qmul(a, b):
    w1, x1, y1, z1 = np.moveaxis(a, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(b, -1, 0)
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], -1)


def signed_error(pos, quat, ref_pos, ref_quat) -> np.ndarray:
    """Per body (…, B, 6): the position error and the world rotation vector from the reference's
    orientation to the run's (small angles)."""
    d = _qmul(quat, ref_quat * np.array([1.0, -1.0, -1.0, -1.0]))
    return np.concatenate([pos - ref_pos, 2.0 * d[..., 1:] * np.sign(d[..., :1])], -1)


class Schedule:
    """Runs of the example to ``t_star`` with given step sizes, one integrator step at a time."""

    def __init__(self, sc, t_star: float):
        self.sc, self.t_star = sc, t_star
        self.model = Model(sc)

    def steps(self, density) -> list:
        """The steps of the step-size function ``density(t)`` from 0 to t*, the last one ending there."""
        t, out = 0.0, []
        while t < self.t_star * (1 - 1e-12):
            h = float(density(t))
            if t + 1.5 * h >= self.t_star:  # (no sliver: the rest in one or two steps)
                rest = self.t_star - t
                out += [rest] if rest <= h * (1 + 1e-9) else [rest / 2, rest / 2]
                break
            out.append(h)
            t += h
        return out

    def run(self, steps) -> np.ndarray:
        """The state at t* after ``steps``: (B, 6) of :func:`signed_error`'s position and orientation."""
        ga = GeneralizedAlpha(self.model, self.sc.integrator)
        s = ga.initial_state()
        for h in steps:
            res = ga.step(ga.rescaled(s, h), h)
            if not res.ok:
                raise RuntimeError(res.message)
            s = res.state
        f = ga.frame(s)
        return f["bodies/position"], f["bodies/orientation"]


def study(name: str, windows: int) -> dict:
    sc = load_scenario(HERE.parent / "scenarios" / f"{name}.yaml")
    if sc.initial != "as_given":
        raise SystemExit(f"{name}: starts at equilibrium; this script takes examples that start as given")
    span = min(sc.time.end, SPANS.get(name, 1.0))
    sc = replace(sc, time=replace(sc.time, end=span))
    hf = sc.time.step / 2
    times = np.append(np.arange(0.0, span - 1e-9 * span, sc.output.interval), span)
    ref = solve_reference(sc, times, rtol=1e-11, atol=1e-12).frames()
    # the frame where a uniform run's error is largest, and the error's direction there
    base = driver.run(replace(sc, time=replace(sc.time, step=hf, adaptive=False)), write=False, keep_frames=True)
    f = base.frames_data
    e = signed_error(f["bodies/position"], f["bodies/orientation"], ref["bodies/position"], ref["bodies/orientation"])
    mag = np.maximum(np.linalg.norm(e[..., :3], axis=-1), np.linalg.norm(e[..., 3:], axis=-1))
    fi, bi = np.unravel_index(int(np.argmax(mag)), mag.shape)
    part = slice(0, 3) if np.linalg.norm(e[fi, bi, :3]) >= np.linalg.norm(e[fi, bi, 3:]) else slice(3, 6)
    t_star = float(times[fi])
    ref_at = ref["bodies/position"][fi], ref["bodies/orientation"][fi]

    def err(steps):
        p, q = sched.run(steps)
        return signed_error(p, q, *ref_at)

    sched = Schedule(sc, t_star)
    uniform = sched.steps(lambda t: hf)
    e0 = err(uniform)
    u = e0[bi, part] / np.linalg.norm(e0[bi, part])
    size0 = float(np.linalg.norm(e0[bi, part]))
    # g per window: the change of the error along u when the window's steps double, over 3 (4 − 1)
    edges = np.linspace(0.0, t_star, windows + 1)
    g = np.empty(windows)
    for w in range(windows):
        a, b = edges[w], edges[w + 1]
        steps = sched.steps(lambda t: 2 * hf if a - 1e-12 <= t < b - 1e-12 else hf)
        g[w] = float((err(steps) - e0)[bi, part] @ u) / 3.0
    width = t_star / windows
    bound = math.sqrt(t_star ** 2 * np.abs(g).sum() * width / (np.cbrt(np.abs(g)).sum() * width) ** 3)
    # the steps Δt ∝ |g|^(−1/3) (per unit time: g / width), at the uniform run's count and 3/4 of it
    shape = np.cbrt(np.maximum(np.abs(g), 1e-6 * np.abs(g).max())) ** -1
    runs = []
    for frac in (1.0, 0.75):
        n_target = frac * len(uniform)
        c = width * (1.0 / shape).sum() / n_target
        steps = sched.steps(lambda t: c * shape[min(int(t / width), windows - 1)])
        size = float(np.linalg.norm(err(steps)[bi, part]))
        runs.append((len(steps), size, len(uniform) / (len(steps) * math.sqrt(size / size0))))
    return {"name": name, "t_star": t_star, "body": sc.bodies[bi].name,
            "part": "position" if part.start == 0 else "rotation", "uniform": (len(uniform), size0),
            "g": g, "bound": bound, "runs": runs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=["iftomm_a03_andrews", "spin_down"])
    ap.add_argument("--windows", type=int, default=48)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    for name in args.only:
        r = study(name, args.windows)
        n0, e0 = r["uniform"]
        g = r["g"]
        print(f"\n{r['name']}: largest error of uniform steps at t* = {r['t_star']:.6g} s, {r['body']}'s {r['part']}")
        print(f"  uniform Δt/2: {n0} steps, error {e0:.3e}; the windows' sum {g.sum():.3e} (superposition: the same)")
        print("  g per window (relative): " + " ".join(f"{x:+.2f}" for x in g / np.abs(g).max()))
        print(f"  bound N_uniform / N_best = {r['bound']:.3f}")
        for n, e, ratio in r["runs"]:
            print(f"  Δt ∝ |g|^(-1/3): {n} steps, error {e:.3e}: uniform steps / these at equal error {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
