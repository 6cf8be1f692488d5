#!/usr/bin/env python3
"""Convergence study: error against Δt (log-log) for several ρ∞ on a nonlinear 3D scene.

The scene is ``benchmarks/nonlinear3d.yaml`` (two spinning asymmetric bodies
on springs, dashpots and P1/P2/P3 torsional dampers, gravity and a sine
torque).  For every ρ∞ and Δt the scene runs for ``--end`` seconds with a
frame at every step, and each frame is compared with mbsim's independent
reference solver (:func:`mbsim.reference.solve_reference`, DOP853 at rtol
1e-11, one solve for all frame times).  Errors are maxima over frames and
bodies: position [m] (Euclidean), rotation angle between the orientations
[rad], velocity [m/s] and angular velocity [rad/s] (Euclidean).  A table of
errors and observed orders ``log(e_i/e_{i+1}) / log(Δt_i/Δt_{i+1})`` goes to
stdout, a figure with four log-log panels to ``-o`` (default
``docs/convergence.png``).  THEORY §5 says all four converge at order 2 for
every ρ∞ in [0, 1].

``--febio`` repeats the study with FEBio's inertial moment (THEORY §5: the
spatial rate of angular momentum interpolated as α_m ḣ' + (1−α_m) ḣ_n,
ḣ = ω×Jω + Jα) in place of mbsim's, through a subclass of
:class:`mbsim.integrators.GeneralizedAlpha` defined here; mbsim itself is not
changed.  Its rotations converge only at order 1 when ρ∞ < 1.  The subclass
keeps mbsim's tangent, which is then not the exact derivative of the
residual: Newton converges more slowly, to the same tolerance.

Usage::

    python benchmarks/convergence.py                       # about 1-2 min
    python benchmarks/convergence.py --febio               # twice that
    python benchmarks/convergence.py --steps 4e-3 2e-3 --end 0.05 -o /tmp/c.png

matplotlib (the ``plot`` extra) is needed for the figure only; without it the
table is still printed and the script exits with status 1.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

# Run from a checkout without installing: the repository root holds the package.
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from mbsim.driver import run, step_schedule  # noqa: E402
from mbsim.integrators import GeneralizedAlpha  # noqa: E402
from mbsim.model.model import Model  # noqa: E402
from mbsim.kernels.rotations import cross, matvec, quat_angle, quat_to_matrix, tmatvec  # noqa: E402
from mbsim.reference import solve_reference  # noqa: E402
from mbsim.scenario import OutputSpec, TimeSpec, load_scenario  # noqa: E402

SCENE = Path(__file__).resolve().parent / "nonlinear3d.yaml"
DEFAULT_OUTPUT = ROOT / "docs" / "convergence.png"
STEPS = (8e-3, 4e-3, 2e-3, 1e-3, 5e-4)
RHOS = (0.0, 0.5, 0.9, 1.0)
END = 0.5
FIGSIZE_IN, DPI = (9.0, 6.5), 100  # 900 × 650 px
MARKERS = ("o", "s", "D", "v")
QUANTITIES = (  # key, panel title, unit, table heading
    ("position", "position", "m", "pos [m]"),
    ("rotation", "rotation angle", "rad", "rot [rad]"),
    ("velocity", "velocity", "m/s", "vel [m/s]"),
    ("angular_velocity", "angular velocity", "rad/s", "angvel [rad/s]"),
)


class FEBioInertia(GeneralizedAlpha):
    """Generalized-α with FEBio's inertial moment (THEORY §5, "Why not FEBio's form").

    The rotational residual of each moving body uses
    ``α_m ḣ' + (1−α_m) ḣ_n``, ``ḣ = ω×Jω + Jα`` with ``J = Λ J_b Λᵀ``, instead
    of mbsim's body-frame form ``Λ_α X``.  Everything else (kinematics,
    connectors, loads at n+α_f, tangent) is mbsim's: :meth:`evaluate` calls
    the parent and swaps the one term in the assembled residual, whose rows
    ``6i+3 … 6i+5`` are body i's moments (``R = forces − inertia``).
    """

    name = "generalized-alpha-febio"

    def evaluate(self, ctx, d, th, tangent=None):
        it = super().evaluate(ctx, d, th, tangent)
        nm = self.model.n_moving
        af, am = self.params.alpha_f, self.params.alpha_m
        Jb = self.model.inertia[:nm]
        R1, Rn = quat_to_matrix(it.q1[:nm]), ctx.Rn[:nm]
        w1, al1, wn, aln = it.w1[:nm], it.al1[:nm], ctx.s.w[:nm], ctx.s.al[:nm]

        # mbsim's term, as GeneralizedAlpha.evaluate forms it (THEORY §5)
        W1 = tmatvec(R1, w1)
        X = am * matvec(Jb, tmatvec(R1, al1)) + ctx.Xn + af * cross(W1, matvec(Jb, W1))
        mbsim_term = af * matvec(R1, X) + (1 - af) * matvec(Rn, X)

        def hdot(R, w, al):
            J = R @ Jb @ R.transpose(0, 2, 1)
            return cross(w, matvec(J, w)) + matvec(J, al)

        febio_term = am * hdot(R1, w1, al1) + (1 - am) * hdot(Rn, wn, aln)
        R = it.R.copy().reshape(nm, 6)
        R[:, 3:] += mbsim_term - febio_term
        return replace(it, R=R.reshape(-1))


def scene(rho: float, dt: float, end: float, path: Path = SCENE):
    """The scene with ρ∞, step dt [s], span end [s] and a frame at every step."""
    sc = load_scenario(str(path))
    return replace(sc, time=TimeSpec(float(end), float(dt)), integrator=replace(sc.integrator, rho_inf=float(rho)),
                   output=OutputSpec(interval=float(dt)))


def run_with(sc, integrator_class) -> dict:
    """Frames of ``sc`` stepped by ``integrator_class``, at the times :func:`mbsim.driver.run` uses.

    Only what the error needs: time, position, orientation, velocity,
    angular velocity (scenario body order), plus Newton iterations per step.
    """
    model = Model(sc)
    integ = integrator_class(model, sc.integrator)
    s = integ.initial_state()
    n_full, last, _ = step_schedule(sc.time.end, sc.time.step, sc.output.interval)
    states = [s]
    for k in range(1, n_full + (1 if last else 0) + 1):
        t_target = k * sc.time.step if k <= n_full else sc.time.end
        res = integ.step(s, t_target - s.t)
        if not res.ok:
            raise RuntimeError(f"{integ.name}: step to t = {t_target:g} s failed: {res.message}")
        s = replace(res.state, t=t_target)
        states.append(s)
    o = model.order
    return {"time": np.array([x.t for x in states]),
            "bodies/position": np.array([x.r[o] for x in states]),
            "bodies/orientation": np.array([x.q[o] for x in states]),
            "bodies/velocity": np.array([x.v[o] for x in states]),
            "bodies/angular_velocity": np.array([x.w[o] for x in states]),
            "it_per_step": integ.n_iterations / max(integ.n_steps, 1)}


def run_mbsim(sc) -> dict:
    summary = run(sc, write=False, keep_frames=True)
    if summary.status != "completed":
        raise RuntimeError(summary.message)
    return dict(summary.frames_data, it_per_step=summary.iterations_per_step)


@dataclass
class Case:
    scheme: str  # "mbsim" | "FEBio"
    rho: float
    dt: float
    frames: dict
    wall_s: float
    errors: dict = None


def measure(cases: list[Case], end: float, path: Path) -> float:
    """Fill ``case.errors`` from one reference solve on the union of all frame times; its wall time [s]."""
    times = np.unique(np.concatenate([c.frames["time"] for c in cases]))
    start = time.perf_counter()
    ref = solve_reference(scene(1.0, cases[0].dt, end, path), times=times)
    wall = time.perf_counter() - start
    for c in cases:
        f = c.frames
        i = np.searchsorted(times, f["time"])
        assert np.array_equal(times[i], f["time"])
        c.errors = {
            "position": np.linalg.norm(f["bodies/position"] - ref.position[i], axis=-1).max(),
            "rotation": quat_angle(f["bodies/orientation"], ref.orientation[i]).max(),
            "velocity": np.linalg.norm(f["bodies/velocity"] - ref.velocity[i], axis=-1).max(),
            "angular_velocity": np.linalg.norm(f["bodies/angular_velocity"] - ref.angular_velocity[i],
                                               axis=-1).max(),
        }
    return wall


def orders(dts, errs) -> np.ndarray:
    """Observed orders between consecutive steps (NaN for the first)."""
    dts, errs = np.asarray(dts), np.asarray(errs)
    return np.concatenate(([np.nan], np.log(errs[:-1] / errs[1:]) / np.log(dts[:-1] / dts[1:])))


def print_table(cases: list[Case]) -> None:
    head = (f"{'scheme':6s} {'rho_inf':>7s} {'dt [s]':>8s}  "
            + "  ".join(f"{h:>13s} {'ord':>5s}" for *_, h in QUANTITIES) + f"  {'it/step':>7s} {'wall s':>6s}")
    print(head)
    print("-" * len(head))
    for scheme in dict.fromkeys(c.scheme for c in cases):
        for rho in dict.fromkeys(c.rho for c in cases if c.scheme == scheme):
            group = sorted((c for c in cases if c.scheme == scheme and c.rho == rho), key=lambda c: -c.dt)
            dts = [c.dt for c in group]
            ords = {k: orders(dts, [c.errors[k] for c in group]) for k, *_ in QUANTITIES}
            for j, c in enumerate(group):
                cells = "  ".join(f"{c.errors[k]:13.3e} {'' if np.isnan(ords[k][j]) else f'{ords[k][j]:5.2f}':>5s}"
                                  for k, *_ in QUANTITIES)
                print(f"{scheme:6s} {rho:7.2f} {c.dt:8.1e}  {cells}  {c.frames['it_per_step']:7.2f} "
                      f"{c.wall_s:6.1f}")
            print()


def plot(cases: list[Case], output: Path, end: float) -> None:
    import matplotlib
    matplotlib.use("Agg")  # headless: no display needed
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    rhos = list(dict.fromkeys(c.rho for c in cases))
    colors = dict(zip(rhos, plt.get_cmap("viridis")(np.linspace(0.0, 0.85, len(rhos)))))
    fig, axes = plt.subplots(2, 2, figsize=FIGSIZE_IN, dpi=DPI, sharex=True)
    febio = any(c.scheme == "FEBio" for c in cases)
    dts_all = np.array(sorted({c.dt for c in cases}))
    for ax, (key, title, unit, _) in zip(axes.ravel(), QUANTITIES):
        for scheme, style, fill in (("mbsim", "-", True), ("FEBio", "--", False)):
            for i, rho in enumerate(rhos):
                group = sorted((c for c in cases if c.scheme == scheme and c.rho == rho), key=lambda c: c.dt)
                if not group:
                    continue
                label = f"ρ∞ = {rho:g}" + (f" ({scheme})" if febio else "")
                # shrinking markers of different shapes: curves that coincide (ρ∞ = 0.9 and 1) stay visible
                ax.loglog([c.dt for c in group], [c.errors[key] for c in group], style, marker=MARKERS[i % 4],
                          ms=max(7.0 - 1.2 * i, 3.0), color=colors[rho], mfc=colors[rho] if fill else "white",
                          lw=1.4, label=label)
        # slope guides anchored a decade below the smallest error at the largest step
        mb = [c.errors[key] for c in cases if c.scheme == "mbsim" and c.dt == dts_all[-1]]
        anchor = 0.3 * min(mb)
        ax.loglog(dts_all, anchor * (dts_all / dts_all[-1]) ** 2, ":", color="0.35", lw=1.2,
                  label="slope 2")
        if febio:
            fb = [c.errors[key] for c in cases if c.scheme == "FEBio" and c.dt == dts_all[-1]]
            ax.loglog(dts_all, 2.0 * max(fb) * (dts_all / dts_all[-1]), "-.", color="0.6", lw=1.0,
                      label="slope 1")
        ax.set_xticks(dts_all, [f"{d:g}" for d in dts_all])  # the steps themselves, not 10^k
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(f"max error [{unit}]")
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", alpha=0.12)
    for ax in axes[1]:
        ax.set_xlabel("time step Δt [s]")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8.5, frameon=False)
    fig.suptitle(f"Generalized-α convergence on nonlinear3d: two spinning bodies, springs, dampers, "
                 f"{end:g} s\n(errors: max over frames and bodies, against the DOP853 reference)", fontsize=10.5)
    fig.tight_layout(rect=(0.0, 0.0, 0.83 if febio else 0.86, 1.0))
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=DPI, pil_kwargs={"optimize": True})
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=float, nargs="+", default=list(STEPS), help="time steps Δt [s]")
    ap.add_argument("--rho", type=float, nargs="+", default=list(RHOS), help="values of ρ∞")
    ap.add_argument("--end", type=float, default=END, help="simulated span [s] (default %(default)s)")
    ap.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT,
                    help="figure file (default docs/convergence.png in the repository)")
    ap.add_argument("--scenario", type=Path, default=SCENE, help="scene (default benchmarks/nonlinear3d.yaml)")
    ap.add_argument("--febio", action="store_true",
                    help="also run with FEBio's inertial moment (order 1 in rotation for ρ∞ < 1)")
    args = ap.parse_args(argv)
    steps = sorted(set(args.steps), reverse=True)
    if len(steps) < 2:
        ap.error("give at least two time steps")

    schemes = [("mbsim", None)] + ([("FEBio", FEBioInertia)] if args.febio else [])
    cases = []
    for scheme, cls in schemes:
        for rho in args.rho:
            for dt in steps:
                sc = scene(rho, dt, args.end, args.scenario)
                start = time.perf_counter()
                frames = run_mbsim(sc) if cls is None else run_with(sc, cls)
                wall = time.perf_counter() - start
                cases.append(Case(scheme, rho, dt, frames, wall))
                print(f"  {scheme} rho_inf {rho:g} dt {dt:g}: {len(frames['time']) - 1} steps, {wall:.1f} s",
                      file=sys.stderr, flush=True)
    ref_wall = measure(cases, args.end, args.scenario)
    print(f"convergence on {args.scenario.name}, {args.end:g} s, errors max over frames and bodies "
          f"against solve_reference (DOP853, rtol 1e-11, {ref_wall:.1f} s); 'ord' = observed order "
          f"against the previous row\n")
    print_table(cases)
    try:
        plot(cases, args.output, args.end)
    except ImportError:
        print("matplotlib is not installed (pip install 'mbsim[plot]'): no figure written", file=sys.stderr)
        return 1
    print(f"figure: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
