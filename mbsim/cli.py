"""The ``mbsim`` command line: argument parsing, messages and exit codes.

Five commands, each a thin layer over the library:

- ``mbsim validate FILE`` — :func:`mbsim.scenario.load_scenario`;
- ``mbsim run SCENARIO`` — :func:`mbsim.driver.run`, then a closing summary;
- ``mbsim info RESULT.h5`` — :func:`mbsim.io.reader.read_summary`;
- ``mbsim compare A.h5 B.h5`` — :func:`mbsim.compare.compare_trajectories`;
- ``mbsim verify SCENARIO`` — :func:`mbsim.verify.verify`.

Nothing here computes physics or touches HDF5 directly.  Every message that
reports a problem says what to do next.  Results go to stdout, problems to
stderr, so ``mbsim info --json`` can be piped and ``--quiet`` keeps only the
problems.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
import traceback
from typing import Optional, Sequence

import numpy as np

from . import __version__, driver
from .compare import DEFAULT_ATOL, DEFAULT_RTOL
from .driver import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_SOLVER

EXIT_DIFFERENCES = 1  # `mbsim compare`: beyond tolerance; `mbsim verify`: an order is not 2
EXIT_INTERNAL = 4

EPILOG = """\
exit codes:
  0    success
  1    differences: `compare` found a quantity beyond tolerance, `verify`
       observed an order of accuracy other than 2
  2    invalid input: a scenario that breaks SCENARIO.md, bad arguments,
       an output path that cannot be written, a file that is not an mbsim result,
       trajectories that cannot be compared (other bodies, other time grid)
  3    solver failure: Newton gave up; the result file has status `failed`
       and keeps every frame computed before the failing step (`verify`: a
       run or the reference solver failed)
  4    internal error (a bug): the result file is marked `failed` with the
       error; please report it together with the output of --debug
  130  interrupted (Ctrl-C or SIGTERM); the result file has status `interrupted`

examples:
  mbsim validate pendulum.yaml                  check a scenario, run nothing
  mbsim run pendulum.yaml -o out/pendulum.h5    simulate and write a trajectory
  mbsim info out/pendulum.h5 --json             what a result file holds
  mbsim compare new.h5 old.h5 --rtol 1e-5       same trajectory within tolerance?
  mbsim verify pendulum.yaml --end 0.5          order of accuracy against a reference
"""

# When the terminal cannot show these, say the same in ASCII rather than crash.
_ASCII = str.maketrans({"…": "...", "Δ": "d", "→": "->", "ρ": "rho", "∞": "_inf", "α": "alpha",
                        "β": "beta", "γ": "gamma", "—": "-", "≲": "<~", "×": "x"})


# --------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------
def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line and return its exit code (see ``mbsim --help``).

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        0 ok, 2 invalid input or unusable file, 3 solver failure,
        1 differences (compare) or an order other than 2 (verify), 4 internal
        error, 130 interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors: argparse already printed
        return exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None else EXIT_INVALID)
    if args.command is None:
        parser.print_usage(sys.stderr)
        _err("mbsim: choose a command: validate, run, info, compare or verify (mbsim --help explains them)")
        return EXIT_INVALID
    try:
        return args.handler(args)
    except KeyboardInterrupt:  # outside the driver's own handling, e.g. while loading
        _err("interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - a bug: say so briefly, keep the traceback for --debug
        _err(f"internal error: {type(exc).__name__}: {exc}, please report it "
             f"(with the output of the same command plus --debug)")
        note = _internal_error_note(args)
        if note:
            _err(note)
        if getattr(args, "debug", False):
            traceback.print_exc(file=sys.stderr)
        else:
            _err("run again with --debug to see the traceback")
        return EXIT_INTERNAL


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``mbsim`` and its subcommands."""
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a subcommand's default must not overwrite `mbsim --debug run ...`.
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of an internal error")
    fmt = argparse.RawDescriptionHelpFormatter

    p = argparse.ArgumentParser(
        prog="mbsim", parents=[common], formatter_class=fmt, epilog=EPILOG,
        description="Implicit multibody dynamics: rigid bodies, springs, dampers and torsional dampers "
                    "integrated with generalized-alpha.")
    p.add_argument("--version", action="version", version=f"mbsim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    v = sub.add_parser("validate", parents=[common], formatter_class=fmt,
                       help="check a scenario file and report every problem",
                       description="Load and validate a scenario file (SCENARIO.md) without running it.",
                       epilog="exit codes: 0 valid, 2 invalid (every problem is listed with its line)\n\n"
                              "example:\n  mbsim validate pendulum.yaml")
    v.add_argument("file", metavar="FILE", help="scenario file (YAML)")
    v.set_defaults(handler=_cmd_validate)

    r = sub.add_parser("run", parents=[common], formatter_class=fmt,
                       help="simulate a scenario and write its trajectory (HDF5)",
                       description="Simulate a scenario and write its trajectory file (OUTPUT.md).",
                       epilog="exit codes: 0 completed, 2 invalid scenario or output path, 3 solver failure,\n"
                              "4 internal error, 130 interrupted\n\n"
                              "example:\n  mbsim run pendulum.yaml -o out/pendulum.h5 --end 0.5")
    r.add_argument("scenario", metavar="SCENARIO", help="scenario file (YAML)")
    r.add_argument("-o", "--output", metavar="OUT",
                   help="result file; default: output.file of the scenario, else outputs/<name>.h5")
    r.add_argument("--end", type=_positive_time, metavar="T",
                   help="stop at time T [s] instead of the scenario's time.end")
    r.add_argument("--quiet", action="store_true", help="print only errors")
    r.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it is shown only when stderr is a terminal anyway)")
    r.set_defaults(handler=_cmd_run)

    i = sub.add_parser("info", parents=[common], formatter_class=fmt,
                       help="summarize a result file",
                       description="Summarize a trajectory file written by `mbsim run`.",
                       epilog="exit codes: 0 ok, 2 missing file or not an mbsim result\n\n"
                              "example:\n  mbsim info out/pendulum.h5 --json")
    i.add_argument("result", metavar="RESULT", help="result file (.h5)")
    i.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    i.set_defaults(handler=_cmd_info)

    c = sub.add_parser("compare", parents=[common], formatter_class=fmt,
                       help="compare two result files quantity by quantity",
                       description="Compare trajectory A with the reference trajectory B: per quantity the "
                                   "largest and the RMS error, where the largest occurs, and whether it is "
                                   "within tolerance (max error <= atol + rtol * scale, scale = largest "
                                   "magnitude of the quantity in B). Orientations are compared as rotation "
                                   "angles, so a quaternion and its negative are equal.",
                       epilog=COMPARE_EPILOG)
    c.add_argument("a", metavar="A", help="result file to check (.h5)")
    c.add_argument("b", metavar="B", help="reference result file (.h5); tolerances scale with its values")
    c.add_argument("--rtol", action="append", type=_tolerance_arg, metavar="[NAME=]X", default=[],
                   help=f"relative tolerance, for every quantity or for one (repeatable; default "
                        f"{_g(DEFAULT_RTOL)})")
    c.add_argument("--atol", action="append", type=_tolerance_arg, metavar="[NAME=]X", default=[],
                   help=f"absolute tolerance in the quantity's unit, for every quantity or for one "
                        f"(repeatable; default {_g(DEFAULT_ATOL)})")
    c.add_argument("--interpolate", action="store_true",
                   help="if the time grids differ, interpolate B linearly onto A's times (where both "
                        "have data) instead of refusing")
    c.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    c.set_defaults(handler=_cmd_compare)

    y = sub.add_parser("verify", parents=[common], formatter_class=fmt,
                       help="measure the order of accuracy against the reference solver",
                       description="Run a scenario at Δt, Δt/2 and Δt/4 and with the independent reference "
                                   "solver (DOP853), and report per quantity the errors, the observed order "
                                   "of accuracy (expected: 2) and a verdict in plain words. Run it before "
                                   "trusting a new model; it costs about seven times a run of the same span.",
                       epilog=VERIFY_EPILOG)
    y.add_argument("scenario", metavar="SCENARIO", help="scenario file (YAML)")
    y.add_argument("--end", type=_positive_time, metavar="T",
                   help="verify over t = 0 … T [s] instead of the scenario's time.end (a short span is "
                        "usually enough)")
    y.add_argument("--step", type=_positive_time, metavar="DT",
                   help="coarsest time step [s] instead of the scenario's time.step")
    y.add_argument("--reference-rtol", type=_positive_float, metavar="R", default=1e-11,
                   help="relative tolerance of the reference solver (default 1e-11)")
    y.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    y.set_defaults(handler=_cmd_verify)
    p.set_defaults(command=None)
    return p


COMPARE_EPILOG = """quantities (NAME for --rtol/--atol, unit of atol):
  position [m], orientation [rad], velocity [m/s], angular_velocity [rad/s],
  acceleration [m/s^2], angular_acceleration [rad/s^2], force [N],
  moment [N*m], length [m], kinetic, potential, dissipated, external_work [J],
  linear_momentum [kg*m/s], angular_momentum [kg*m^2/s]
  groups: all, bodies, connectors, energy, momentum
  A quantity's own value beats its group's, a group's beats a global one.

time grids must match (within 1e-9 relative) unless --interpolate is given.

exit codes: 0 every quantity within tolerance, 1 differences beyond tolerance,
2 files missing, unreadable or not comparable (other bodies or connectors,
other time grid without --interpolate)

examples:
  mbsim compare new.h5 old.h5
  mbsim compare new.h5 old.h5 --rtol 1e-5 --atol orientation=1e-8
  mbsim compare coarse.h5 fine.h5 --interpolate --rtol position=1e-3 --json
"""

VERIFY_EPILOG = """measured: position [m], rotation angle [rad], velocity [m/s], angular velocity
[rad/s] and the energy balance kinetic + potential + dissipated - external work
[J], each as the largest error over frames and bodies against the reference.
Errors below the floor -- the reference's own error (estimated by a second
solve at 10 x its rtol) or accumulated round-off -- are reported as at
round-off: their order cannot be measured, which is fine.

exit codes: 0 every measured order within 2 ± 0.3 (or errors at round-off),
1 an order outside that band, 2 invalid scenario or options, 3 a run or the
reference solver failed, 130 interrupted

examples:
  mbsim verify pendulum.yaml --end 0.5
  mbsim verify chain50.yaml --end 0.05 --step 5e-4 --json
"""


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _tolerance_arg(text: str):
    """``X`` or ``NAME=X`` → ``(name or "all", X)``; NAME a quantity or a group of mbsim.compare."""
    from .compare import GROUPS, QUANTITY_NAMES
    name, sep, value = text.rpartition("=")
    name = name.strip() if sep else "all"
    if name not in QUANTITY_NAMES and name not in GROUPS:
        raise argparse.ArgumentTypeError(f"unknown quantity {name!r}; choose from {', '.join(QUANTITY_NAMES)} "
                                         f"or a group: {', '.join(GROUPS)}")
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be X or NAME=X with a number X, got {text!r}") from None
    if not (math.isfinite(x) and x >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return name, x


def _positive_time(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a time in seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite time > 0 s, got {text!r}")
    return value


# --------------------------------------------------------------------------
# validate
# --------------------------------------------------------------------------
def _cmd_validate(args) -> int:
    from .scenario import ScenarioError, load_scenario
    try:
        sc = load_scenario(args.file)
    except ScenarioError as exc:
        _report_invalid(exc, run=False)
        return EXIT_INVALID
    _out(f"{args.file}: valid ({_describe(sc)})")
    return EXIT_OK


def _describe(sc, end: Optional[float] = None) -> str:
    nb = len(sc.bodies)
    fixed = sum(b.fixed for b in sc.bodies)
    bodies = _count(nb, "body", "bodies") + (f" ({fixed} fixed)" if fixed else "")
    return (f"{bodies}, {_count(len(sc.connectors), 'connector')}, {_count(len(sc.loads), 'load')}; "
            f"t = 0 … {_g(sc.time.end if end is None else end)} s, Δt = {_g(sc.time.step)} s")


def _report_invalid(exc, run: bool) -> None:
    _err(exc.report())
    if run:
        _err("nothing was run and no file was written; fix the problems above (SCENARIO.md explains "
             "every key) and run again")
    else:
        _err("fix the problems above (SCENARIO.md explains every key) and validate again")


# --------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------
def _cmd_run(args) -> int:
    from .scenario import ScenarioError, load_scenario
    try:
        sc = load_scenario(args.scenario)
    except ScenarioError as exc:
        _report_invalid(exc, run=True)
        return EXIT_INVALID
    out = args.output if args.output is not None else sc.output_file
    args.output_path, args.started = out, time.time()  # for the internal-error note in main()
    if os.path.isdir(out):  # caught here too so the model is not built for nothing
        _err(f"cannot write the result file {out}: it is a directory; give a file name with -o, "
             f"e.g. -o {os.path.join(out, sc.name + '.h5')}")
        return EXIT_INVALID
    progress = not args.quiet and not args.no_progress and _isatty(sys.stderr)
    if not args.quiet:
        _out(f"running {sc.name} ({_describe(sc, args.end)}) → {out}")
    try:
        with _sigterm_as_interrupt():
            summary = driver.run(sc, out, progress=progress, end=args.end)
    except driver.OutputFileError as exc:
        _err(f"{exc}; choose another path with -o OUT")
        return EXIT_INVALID
    if summary.status == "completed":
        if not args.quiet:
            _out(format_summary(summary, sc))
    else:
        _err(format_summary(summary, sc))
        if summary.status == "failed":
            _err(format_hints(summary, sc))
    return summary.exit_code


def format_summary(s: "driver.RunSummary", sc) -> str:
    """The closing summary of ``mbsim run`` (status, work, wall time, energy drift, output).

    Parameters
    ----------
    s : RunSummary
        What :func:`mbsim.driver.run` returned.
    sc : Scenario
        The scenario that was run (for its name and time step).
    """
    rate = s.steps / s.wall_time_s if s.wall_time_s > 0 else float("nan")
    head = {"completed": f"completed: {sc.name}, t = 0 … {_g(s.t_end)} s",
            "failed": f"FAILED: {sc.name}, solver gave up after t = {_g(s.t_end)} s",
            "interrupted": f"interrupted: {sc.name}, stopped at t = {_g(s.t_end)} s"}[s.status]
    lines = [head]
    if s.status != "completed":
        lines.append(f"  {s.message}")
    lines += [
        f"  steps          {s.steps} (Δt = {_g(sc.time.step)} s)",
        f"  Newton         {s.newton_iterations} iterations"
        + (f", {s.iterations_per_step:.2f} per step" if s.steps else "") + f"; {s.linear_solver}",
        f"  wall time      {s.wall_time_s:.3g} s ({rate:.4g} steps/s)",
        f"  energy drift   {s.energy_drift_J:.3e} J ({s.energy_drift_relative:.3e} relative)",
    ]
    where = f" → {s.output}" if s.output else " (kept in memory)"
    state = "" if s.status == "completed" else f" (status: {s.status})"
    lines.append(f"  output         {_count(s.frames, 'frame')}{where}{state}")
    if s.status == "interrupted" and s.output:
        lines.append(f"  the frames up to the stop are readable (mbsim info {s.output}); "
                     f"run again to get the full time span")
    return "\n".join(lines)


def format_hints(s: "driver.RunSummary", sc) -> str:
    """What to try after a solver failure, most specific first."""
    if s.failure == "degenerate":
        # A geometric dead end: a smaller step or more iterations reach the same point.
        return ("what to try:\n"
                "  - a spring with a positive rest_length reached zero length, where its direction is "
                "undefined: move its insertion points apart, set rest_length: 0 (a zero-length spring), "
                "or keep the bodies from meeting (check initial velocities, loads and gravity)")
    hints = []
    if s.failure == "nonfinite":
        hints.append("numbers overflowed: look for extreme values in loads, stiffness or initial velocities")
    hints.append(f"a smaller time.step (now {_g(sc.time.step)} s; try {_g(sc.time.step / 4)} s)")
    stiff = _stiffest_spring(sc)
    if stiff is not None and sc.time.step > stiff[1] / 20:
        name, period, k, m = stiff
        hints.append(f"spring '{name}' (k = {_g(k)} on {_g(m)} kg) oscillates with period {period:.3g} s: "
                     f"resolve it with time.step ≲ {period / 20:.3g} s, or soften it / check its mass")
    else:
        hints.append("check stiffness and masses: values many orders of magnitude apart make the "
                     "system hard to solve")
    if sc.integrator.tangent != "consistent":
        hints.append(f"integrator: {{tangent: consistent}} (now {sc.integrator.tangent}): the exact "
                     "linearization converges quadratically")
    if s.failure == "max_iterations":
        hints.append(f"more Newton iterations: integrator.newton.max_iterations "
                     f"(now {sc.integrator.max_iterations})")
    return "what to try:\n" + "\n".join(f"  - {h}" for h in hints)


def _stiffest_spring(sc):
    """``(name, period [s], k, effective mass)`` of the spring with the shortest period, or None."""
    mass = {b.name: (math.inf if b.fixed else b.mass) for b in sc.bodies}
    best = None
    for c in sc.connectors:
        if c.type != "spring" or not c.stiffness:
            continue
        ma, mb = mass.get(c.body_a, math.inf), mass.get(c.body_b, math.inf)
        m = ma * mb / (ma + mb) if math.isfinite(ma) and math.isfinite(mb) else min(ma, mb)
        period = 2 * math.pi * math.sqrt(m / c.stiffness)
        if best is None or period < best[1]:
            best = (c.name, period, c.stiffness, m)
    return best


class _sigterm_as_interrupt:
    """SIGTERM → KeyboardInterrupt while a run is set up, so `kill` is exit 130, not a silent death.

    The driver installs its own handler for the time loop (and marks the
    file ``interrupted``); this one covers the moments before and after.
    """

    def __enter__(self):
        self.old = None
        try:
            self.old = signal.signal(signal.SIGTERM, self._raise)
        except ValueError:  # not in the main thread: leave signals alone
            pass
        return self

    @staticmethod
    def _raise(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)
        return False


def _internal_error_note(args) -> str:
    """Where the result of a run that hit a bug stands (the driver marked it ``failed``)."""
    path = getattr(args, "output_path", None)
    if getattr(args, "command", None) != "run" or not path or not os.path.isfile(path):
        return ""
    if os.path.getmtime(path) < args.started - 1.0:  # a file left by an earlier run: not this one's
        return ""
    from .io.reader import ResultFileError, read_summary
    try:
        info = read_summary(path)
    except (ResultFileError, OSError, KeyError):
        return ""
    if info["status"] != "failed":
        return ""
    return (f"the result file {path} keeps its {info['frames']} frames and is marked `failed` "
            f"with this error")


# --------------------------------------------------------------------------
# info
# --------------------------------------------------------------------------
def _cmd_info(args) -> int:
    from .io.reader import ResultFileError, read_summary
    path = args.result
    hint = "give the path of a .h5 file written by `mbsim run`"
    if not os.path.exists(path):
        _err(f"{path}: no such file; {hint}")
        return EXIT_INVALID
    if os.path.isdir(path):
        _err(f"{path}: is a directory; {hint}")
        return EXIT_INVALID
    try:
        info = read_summary(path)
    except ResultFileError as exc:
        _err(f"{exc}; {hint}")
        return EXIT_INVALID
    except (KeyError, ValueError, OSError) as exc:
        # Right format attribute, missing datasets: damaged, or written by something else.
        _err(f"{path}: not a complete mbsim trajectory ({exc}); {hint}")
        return EXIT_INVALID
    if args.json:
        _out(json.dumps(_plain(info), indent=2, ensure_ascii=False))
    else:
        _out(format_info(info))
    return EXIT_OK


def format_info(info: dict) -> str:
    """Text form of :func:`mbsim.io.reader.read_summary`."""
    it, c = info["integrator"], info["counters"]
    lines = [f"{info['path']}: mbsim trajectory (written by mbsim {info['mbsim_version']}, "
             f"{info['created_utc']})",
             f"  scenario       {info['scenario_name']}",
             f"  status         {info['status']}"]
    if info["message"] and info["message"] != info["status"]:
        lines.append(f"  message        {info['message']}")
    if info["status"] == "running":
        lines.append("                 (the writer never finished: the run is still going, or was killed; "
                     "the frames below are the ones flushed)")
    span = (f", t = {_g(info['t_start'])} … {_g(info['t_end'])} s" if info["frames"] else "")
    lines.append(f"  frames         {info['frames']}{span}")
    fixed = info["fixed_bodies"]
    lines.append(f"  bodies         {info['bodies']}" + (f" ({fixed} fixed)" if fixed else ""))
    conns = info["connectors"]
    by_type = ", ".join(f"{n} {t}" for t, n in conns.items())
    lines.append(f"  connectors     {sum(conns.values())}" + (f": {by_type}" if by_type else ""))
    if it.get("rho_inf") is not None:
        lines.append(f"  integrator     {it.get('integrator') or 'generalized-alpha'}, ρ∞ = {_g(it['rho_inf'])} "
                     f"(α_f = {_g(it['alpha_f'])}, α_m = {_g(it['alpha_m'])}, β = {_g(it['beta'])}, "
                     f"γ = {_g(it['gamma'])}), tangent {it['tangent']}")
    steps, iters = c.get("steps"), c.get("newton_iterations")
    if steps is not None:
        per = f" ({iters / steps:.2f} per step)" if steps else ""
        lines.append(f"  counters       {steps} steps, {iters} Newton iterations{per}, "
                     f"{c.get('rejected_steps')} rejected, wall time {float(c.get('wall_time_s')):.3g} s")
    lines.append(f"  energy drift   {info['energy_drift_J']:.3e} J ({info['energy_drift_relative']:.3e} relative)")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------
def _cmd_compare(args) -> int:
    from .compare import NotComparable, compare_trajectories
    data = []
    for path in (args.a, args.b):
        d, problem = _read_result(path)
        if problem:
            return _not_comparable(args, problem)
        data.append(d)
    rtol = dict(args.rtol) or None  # later NAME=X of the same name wins
    atol = dict(args.atol) or None
    try:
        cmp = compare_trajectories(*data, rtol=rtol, atol=atol, interpolate=args.interpolate,
                                   labels=(args.a, args.b))
    except NotComparable as exc:
        return _not_comparable(args, f"not comparable: {exc}")
    code = EXIT_OK if cmp.passed else EXIT_DIFFERENCES
    for w in cmp.warnings:
        _err(f"warning: {w}")
    if args.json:
        _out(json.dumps(_plain({"a": args.a, "b": args.b, "comparable": True, **cmp.to_dict(),
                                "exit_code": code}), indent=2, ensure_ascii=False))
    else:
        _out(format_comparison(cmp, args.a, args.b))
    return code


def _read_result(path):
    """``(trajectory dict, None)`` or ``(None, message saying what to do)``."""
    from .io.reader import ResultFileError, read_trajectory
    hint = "give the path of a .h5 file written by `mbsim run`"
    if not os.path.exists(path):
        return None, f"{path}: no such file; {hint}"
    if os.path.isdir(path):
        return None, f"{path}: is a directory; {hint}"
    try:
        return read_trajectory(path), None
    except ResultFileError as exc:
        return None, f"{exc}; {hint}"
    except (KeyError, ValueError, OSError) as exc:
        return None, f"{path}: not a complete mbsim trajectory ({exc}); {hint}"


def _not_comparable(args, message: str) -> int:
    _err(message)
    if args.json:  # a CI script reading stdout still gets an answer it can parse
        _out(json.dumps({"a": args.a, "b": args.b, "comparable": False, "passed": False, "error": message,
                         "exit_code": EXIT_INVALID}, indent=2, ensure_ascii=False))
    return EXIT_INVALID


def _num(x) -> str:
    x = float(x)
    return "0" if x == 0 else (f"{x:.3e}" if math.isfinite(x) else str(x))


def format_comparison(cmp, a: str, b: str) -> str:
    """Text form of a :class:`mbsim.compare.Comparison` of ``a`` with the reference ``b``."""
    grid = f"{b} interpolated onto the times of {a}" if cmp.interpolated else "same time grid"
    lines = [f"comparing {a} with the reference {b}",
             f"  {_count(cmp.frames, 'frame')}, t = {_g(cmp.t_first)} … {_g(cmp.t_last)} s ({grid}); "
             f"{_count(len(cmp.bodies), 'body', 'bodies')}, {_count(len(cmp.connectors), 'connector')}",
             "  pass: max error ≤ atol + rtol × scale (scale: largest magnitude in the reference)",
             "",
             f"  {'quantity':<31}{'max error':>11}{'RMS error':>11}{'scale':>11}{'tolerance':>11}  "
             f"{'':<4}  where the max is"]
    for q in cmp.quantities:
        where = "-" if q.max_error == 0 else f"t = {_g(q.time)} s" + (f", {q.item}" if q.item else "")
        lines.append(f"  {q.name + ' [' + q.unit + ']':<31}{_num(q.max_error):>11}{_num(q.rms_error):>11}"
                     f"{_num(q.scale):>11}{_num(q.tolerance):>11}  {'ok' if q.passed else 'FAIL':<4}  {where}")
    by_reason = {}
    for name, reason in cmp.skipped.items():
        by_reason.setdefault(reason, []).append(name)
    for reason, names in by_reason.items():
        lines.append(f"  not compared: {', '.join(names)} ({reason})")
    lines.append("")
    n = len(cmp.quantities)
    if cmp.passed:
        lines.append(f"same within tolerance: all {n} quantities")
        return "\n".join(lines)
    bad = cmp.failures
    lines.append(f"DIFFERENT: {len(bad)} of {n} quantities beyond tolerance")
    for q in bad:
        where = f" at t = {_g(q.time)} s" + (f" ({_owner_word(q.name)} {q.item})" if q.item else "")
        lines.append(f"  {q.name}: max error {_num(q.max_error)} {q.unit}{where} > tolerance "
                     f"{_num(q.tolerance)} {q.unit} (atol {_g(q.atol)} + rtol {_g(q.rtol)} × {_num(q.scale)})")
    lines.append("if differences of this size are expected (another time step, integrator setting or mbsim "
                 f"version), loosen the tolerances, e.g. {_looser(bad)}; otherwise find what changed between "
                 f"the two runs (mbsim info shows each file's scenario and settings)")
    return "\n".join(lines)


def _owner_word(name: str) -> str:
    from .compare import QUANTITIES
    owner = next(q.owner for q in QUANTITIES if q.name == name)
    return "body" if owner == "bodies" else "connector"


def _looser(bad) -> str:
    """Tolerance options that would let every quantity in ``bad`` pass (powers of ten, rounded up)."""
    def up(x):
        return f"1e{math.ceil(math.log10(max(x, 1e-300)) - 1e-9)}"
    rel = [(q.max_error - q.atol) / q.scale for q in bad if math.isfinite(q.max_error) and q.scale > 0]
    if len(rel) > 3:  # many quantities: one global value reads better than a list
        opts = [f"--rtol {up(max(rel))}"]
        bad = [q for q in bad if not (math.isfinite(q.max_error) and q.scale > 0)]
    else:
        opts = []
    for q in bad:
        if not math.isfinite(q.max_error):
            opts.append(f"(none for {q.name}: one file holds NaN or inf where the other does not)")
        elif q.scale > 0:
            opts.append(f"--rtol {q.name}={up((q.max_error - q.atol) / q.scale)}")
        else:
            opts.append(f"--atol {q.name}={up(q.max_error)}")
    return " ".join(opts)


# --------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------
def _cmd_verify(args) -> int:
    from .scenario import ScenarioError, load_scenario
    from .verify import StepRun, verify
    try:
        sc = load_scenario(args.scenario)
    except ScenarioError as exc:
        _report_invalid(exc, run=True)
        return EXIT_INVALID
    step = args.step if args.step is not None else sc.time.step
    end = args.end if args.end is not None else sc.time.end
    if not args.json:
        _out(f"verifying {sc.name} ({_count(len(sc.bodies), 'body', 'bodies')}, "
             f"{_count(len(sc.connectors), 'connector')}, {_count(len(sc.loads), 'load')}; "
             f"t = 0 … {_g(end)} s) at Δt = {_g(step)} s, Δt/2, Δt/4 and with the reference solver")
        _out(f"  {'run':<10}{'Δt [s]':>10}{'steps':>8}{'Newton':>9}{'wall time':>12}")

    def on_run(r):
        if args.json:
            return
        if isinstance(r, StepRun):
            state = "" if r.ok else f"   {r.status.upper()}: {r.message}"
            _out(f"  {r.label:<10}{_g(r.step):>10}{r.steps:>8}{r.newton_iterations:>9}"
                 f"{r.wall_time_s:>10.3g} s{state}")
        elif r.ok:
            _out(f"  reference {r.method} (rtol {_g(r.rtol)}, checked at {_g(r.check_rtol)}): {r.nfev} "
                 f"right-hand-side evaluations, {r.wall_time_s:.3g} s")
        else:
            _out(f"  reference {r.method} (rtol {_g(r.rtol)}, checked at {_g(r.check_rtol)}): FAILED")

    try:
        with _sigterm_as_interrupt():
            rep = verify(sc, end=end, steps=(step, step / 2, step / 4), reference_rtol=args.reference_rtol,
                         on_run=on_run)
    except ValueError as exc:
        _err(f"{exc}; adjust --end or --step")
        return EXIT_INVALID
    if rep.interrupted:
        code = EXIT_INTERRUPTED
    elif not rep.runs_ok:
        code = EXIT_SOLVER
    elif not rep.passed:
        code = EXIT_DIFFERENCES
    else:
        code = EXIT_OK
    if args.json:
        _out(json.dumps(_plain({"scenario_file": args.scenario, **rep.to_dict(), "exit_code": code}),
                        indent=2, ensure_ascii=False))
    else:
        _out(format_verify(rep, sc))
    if code in (EXIT_SOLVER, EXIT_INTERRUPTED):
        _err(_verify_problem(rep, args))
    return code


def format_verify(rep, sc) -> str:
    """Error table, verdicts and conclusion of a :class:`mbsim.verify.VerifyReport` (after the run lines)."""
    lines = []
    if rep.quantities:
        frames = next(r.frames for r in rep.runs if r.ok)
        lines += ["", f"  largest error over {_count(frames, 'frame')} (every {_g(rep.interval)} s) and "
                      f"{_count(len(sc.bodies), 'body', 'bodies')}, and observed order of each halving:",
                  "  " + f"{'':<24}" + "".join(f"{r.label:>11}" for r in rep.runs) + f"{'orders':>14}"]
        for q in rep.quantities:
            errs = "".join(f"{'-' if e is None else _num(e):>11}" for e in q.errors)
            ords = "".join(f"{'-' if p is None else f'{p:.2f}':>7}" for p in q.orders)
            lines.append(f"  {q.label + ' [' + q.unit + ']':<24}{errs}{ords}")
        lines += ["", "verdict:"] + [f"  {q.verdict}" for q in rep.quantities]
    lines.append("")
    if rep.interrupted:
        lines.append("interrupted: the verification did not finish")
    elif not rep.runs_ok:
        who = "a run" if not all(r.ok for r in rep.runs) else "the reference solver"
        lines.append(f"NOT VERIFIED: {who} did not complete (see below)")
    elif rep.passed:
        roundoff = [q.label for q in rep.quantities if q.status == "round-off"]
        measured = [q.label for q in rep.quantities if q.status == "ok"]
        if measured:
            text = (f"second order confirmed for {', '.join(measured)} "
                    f"({_g(rep.expected_order)} ± {_g(rep.order_tolerance)})")
            if roundoff:
                text += f"; {', '.join(roundoff)} at round-off"
            lines.append(text + ": the integrator converges as it should on this model")
        else:
            lines.append("every error is at round-off: the scheme reproduces this motion exactly, "
                         "so no order can be measured (nothing wrong)")
    else:
        off = [q.label for q in rep.quantities if q.status == "off"]
        h4 = rep.runs[-1].step
        lines += [f"NOT second order: {', '.join(off)}",
                  "what to try:",
                  f"  - if the orders move towards 2 from one halving to the next, Δt is too large to be in "
                  f"the asymptotic range: verify again with --step {_g(h4)}",
                  "  - loads given as ramp or table have kinks where the order drops: verify over a span "
                  "before the first kink with --end",
                  "  - otherwise this may be a bug: please report it with the scenario and this output"]
    return "\n".join(lines)


def _verify_problem(rep, args) -> str:
    """What went wrong in the runs of ``mbsim verify`` and what to do."""
    if rep.interrupted:
        return "interrupted"
    for r in rep.runs:
        if not r.ok:
            return (f"the run at {r.label} = {_g(r.step)} s {r.status}: {r.message}\n"
                    f"what to try: mbsim run {args.scenario} --end {_g(rep.end)} shows the failure with "
                    f"hints; a smaller --step if Δt is too large for this model")
    ref = rep.reference
    return (f"the reference solver failed: {ref.message}\n"
            f"what to try: it integrates explicitly and must resolve every spring, so a stiff model can "
            f"defeat it: a shorter --end, or a looser --reference-rtol (now {_g(ref.rtol)})")


def _plain(value):
    """JSON-ready copy: numpy scalars → Python numbers, non-finite floats → null."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------
def _g(x) -> str:
    return f"{float(x):.6g}"


def _count(n: int, word: str, plural: Optional[str] = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _write(text: str, stream) -> None:
    try:
        try:
            print(text, file=stream, flush=True)
        except UnicodeEncodeError:
            enc = getattr(stream, "encoding", None) or "ascii"
            print(text.translate(_ASCII).encode(enc, "replace").decode(enc), file=stream, flush=True)
    except BrokenPipeError:
        # The reader went away (`mbsim info x.h5 | head`): not our failure.  Point the
        # descriptor at /dev/null so the interpreter's final flush does not complain.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass


def _out(text: str) -> None:
    _write(text, sys.stdout)


def _err(text: str) -> None:
    _write(text, sys.stderr)


__all__ = ["main", "build_parser", "format_summary", "format_hints", "format_info", "format_comparison",
           "format_verify",
           "EXIT_OK", "EXIT_DIFFERENCES", "EXIT_INVALID", "EXIT_SOLVER", "EXIT_INTERNAL",
           "EXIT_INTERRUPTED"]
