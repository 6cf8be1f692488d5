"""``mbsim statics SCENARIO`` and ``mbsim modes SCENARIO``: the analyses at a state (:mod:`mbsim.analyses`)."""
from __future__ import annotations

import json
import os

from ._util import EXIT_INVALID, EXIT_OK, EXIT_SOLVER, _err, _out, _plain, _positive_int, _report_invalid

STATICS_EPILOG = """The equilibrium at rest under the scenario's gravity, loads and drive positions
at statics.time (default 0): Newton on the saddle-point system of the joints with
load stepping (gravity and loads ramped from 0 to 1), a line search and a limit
of 0.5 rad on a body's rotation per iteration (THEORY §12). The result file has
one frame (positions, joint reactions, connector forces) and the attributes
analysis = statics, stability (stable, unstable, neutral) and load_factor_steps.

exit codes: 0 equilibrium found, 2 invalid scenario or output path, 3 no
equilibrium (a free motion under a net load: the message names the bodies and
the direction) or the search gave up; the file then has status failed.

examples:
  mbsim statics suspension.yaml
  mbsim statics arm.yaml -o out/arm.statics.h5 --json
"""

MODES_EPILOG = """Linearizes about the static equilibrium (solved first; --about initial: the
initial state as given, which may move) with the joints' reaction stiffness
and the gyroscopic terms, and computes the lowest modes: natural frequency
[Hz], damping ratio, complex shape per body; rigid-body modes (motions nothing
resists) once per free degree of freedom (THEORY §12). Up to 200 moving bodies
on a dense basis of the joints' null space; beyond, sparse shift-invert on the
saddle-point pencil.

exit codes: 0 done, 2 invalid scenario, count above the degrees of freedom, no
moving body, bad --export path, 3 no equilibrium to linearize about.

examples:
  mbsim modes pendulum.yaml
  mbsim modes chain.yaml --count 10 -o out/chain.modes.h5
  mbsim modes car.yaml --export car_linear.mat     M, C, K, G, N, A, B for MATLAB
  mbsim info out/chain.modes.h5                    the mode table again
  mbsim animate out/chain.modes.h5 --mode 1        a mode shape, moving
"""


def register(sub, common, fmt) -> None:
    """Add ``statics`` and ``modes`` to ``sub``."""
    s = sub.add_parser("statics", parents=[common], formatter_class=fmt,
                       help="static equilibrium (one-frame result file)",
                       description="Find where the mechanism settles under its loads, and whether that "
                                   "equilibrium is stable.", epilog=STATICS_EPILOG)
    s.add_argument("scenario", metavar="SCENARIO", help="scenario file (YAML); time and output are ignored")
    s.add_argument("-o", "--output", metavar="OUT.h5",
                   help="result file (default: the scenario's output file with .statics.h5)")
    s.add_argument("--overwrite", action="store_true", help="replace an existing result file")
    s.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    s.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    s.set_defaults(handler=_cmd_statics)
    m = sub.add_parser("modes", parents=[common], formatter_class=fmt,
                       help="linearized modes: natural frequencies, damping ratios, shapes",
                       description="Linearize the mechanism and compute its lowest modes.", epilog=MODES_EPILOG)
    m.add_argument("scenario", metavar="SCENARIO", help="scenario file (YAML); time and output are ignored")
    m.add_argument("-o", "--output", metavar="OUT.h5",
                   help="result file (default: the scenario's output file with .modes.h5)")
    m.add_argument("--count", type=_positive_int, metavar="K",
                   help="how many of the lowest modes (default 10, or every degree of freedom if fewer)")
    m.add_argument("--about", choices=("equilibrium", "initial"), default="equilibrium",
                   help="linearize about the static equilibrium (default) or the initial state as given")
    m.add_argument("--export", metavar="FILE", help="also write M, C, K, G, the null-space basis N and the "
                                                    "state-space A, B to FILE.mat (MATLAB) or FILE.npz (numpy)")
    m.add_argument("--method", choices=("auto", "dense", "sparse"), default="auto",
                   help="dense null space or sparse shift-invert (default: by size)")
    m.add_argument("--overwrite", action="store_true", help="replace an existing result file")
    m.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    m.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    m.set_defaults(handler=_cmd_modes)


def _load(args):
    from ..scenario import ScenarioError, load_scenario
    try:
        return load_scenario(args.scenario, analysis=True)
    except ScenarioError as exc:
        _report_invalid(exc, run=True)
        return None


def _output(args, sc, analysis: str):
    from ..analyses import default_output
    out = args.output if args.output is not None else default_output(sc, analysis)
    if os.path.isdir(out):
        _err(f"cannot write the result file {out}: it is a directory; give a file name with -o")
        return None
    if os.path.lexists(out) and not args.overwrite:
        _err(f"cannot write the result file {out}: it exists; use --overwrite to replace it, or -o another path")
        return None
    return out


def _cmd_statics(args) -> int:
    sc = _load(args)
    if sc is None:
        return EXIT_INVALID
    out = _output(args, sc, "statics")
    if out is None:
        return EXIT_INVALID
    from ..analyses import AnalysisError, statics
    quiet = args.quiet or args.json
    try:
        res = statics(sc, output=out, overwrite=True, notify=None if quiet else (lambda t: _err(f"  {t}")))
    except AnalysisError as exc:
        _err(f"{args.scenario}: {exc}")
        return EXIT_INVALID
    a = res.attrs
    if args.json:
        _out(json.dumps(_plain({"status": res.status, "message": res.message, "output": out,
                                "stability": a.get("stability"), "load_factor_steps": a.get("load_factor_steps"),
                                "newton_iterations": a.get("newton_iterations"),
                                "bodies": {n: {"position": res.body(n).position[0].tolist(),
                                               "orientation": res.body(n).orientation[0].tolist()}
                                           for n in res.bodies}}), ensure_ascii=False))
    if res.status != "completed":
        _err(f"{args.scenario}: {res.message}")
        _err(f"the result file {out} has status failed and holds the configuration as given")
        return EXIT_SOLVER
    if not args.quiet and not args.json:
        _out(f"{sc.name}: {res.message} → {out}")
        _out(_positions(res))
    return EXIT_OK


def _positions(res) -> str:
    lines = [f"  {'body':<16} {'x [m]':>12} {'y [m]':>12} {'z [m]':>12}"]
    for i, n in enumerate(res.bodies[:20]):
        x = res.body(n).position[0]
        lines.append(f"  {n[:16]:<16} {x[0]:>12.6g} {x[1]:>12.6g} {x[2]:>12.6g}")
    if len(res.bodies) > 20:
        lines.append(f"  … and {len(res.bodies) - 20} more bodies (mbsim info, or the file)")
    return "\n".join(lines)


def _cmd_modes(args) -> int:
    sc = _load(args)
    if sc is None:
        return EXIT_INVALID
    out = _output(args, sc, "modes")
    if out is None:
        return EXIT_INVALID
    if args.export is not None and not args.export.endswith((".mat", ".npz")):
        _err(f"--export writes a .mat (MATLAB) or .npz (numpy) file, got {args.export!r}")
        return EXIT_INVALID
    from ..analyses import AnalysisError, StaticsFailed, modes
    quiet = args.quiet or args.json
    dense = {"auto": None, "dense": True, "sparse": False}[args.method]
    try:
        ms = modes(sc, count=args.count, about=args.about, output=out, overwrite=True, dense=dense,
                   notify=None if args.quiet else (lambda t: _err(f"warning: {t}")), export=args.export)
    except AnalysisError as exc:
        _err(f"{args.scenario}: {exc}")
        return EXIT_INVALID
    except StaticsFailed as exc:
        _err(f"{args.scenario}: no modes about the equilibrium: {exc}")
        _err("(--about initial linearizes about the initial state as given instead)")
        return EXIT_SOLVER
    if args.json:
        _out(json.dumps(_plain({
            "output": out, "degrees_of_freedom": ms.degrees_of_freedom, "linearized_about": ms.linearized_about,
            "stability": ms.stability, "frequency_hz": ms.frequency.tolist(),
            "damping_ratio": [None if x != x else float(x) for x in ms.damping_ratio],
            "eigenvalue": [[float(s.real), float(s.imag)] for s in ms.eigenvalue],
            "rigid_body": ms.rigid_body.tolist(), "export": args.export}), ensure_ascii=False))
        return EXIT_OK
    if not quiet:
        _out(f"{sc.name}: {len(ms)} of {ms.degrees_of_freedom} degrees of freedom, about the "
             f"{ms.linearized_about} state ({ms.stability}) → {out}")
        _out(ms.table())
        if args.export is not None:
            _out(f"linear model (M, C, K, G, N, A, B) → {args.export}")
    return EXIT_OK
