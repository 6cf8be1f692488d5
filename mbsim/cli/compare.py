"""``mbsim compare A.h5 B.h5``: per-quantity differences of two trajectories."""
from __future__ import annotations

import argparse
import json
import math
import os
import warnings

from ..compare import DEFAULT_ATOL, DEFAULT_RTOL
from ._util import EXIT_DIFFERENCES, EXIT_INVALID, EXIT_OK, _count, _err, _g, _out, _plain

COMPARE_EPILOG = """quantities (NAME for --rtol/--atol, unit of atol):
  position [m], orientation [rad], velocity [m/s], angular_velocity [rad/s],
  acceleration [m/s^2], angular_acceleration [rad/s^2], force [N],
  moment [N*m], length [m] (connectors), joint_force [N], joint_moment [N*m],
  joint_position_error [m], joint_angle_error [rad] (joints: reactions on
  body A and constraint errors), kinetic, potential, dissipated,
  external_work [J], linear_momentum [kg*m/s], angular_momentum [kg*m^2/s]
  groups: all, bodies, connectors, joints, energy, momentum
  A quantity's own value beats its group's, a group's beats a global one.

time grids must match (within 1e-9 relative) unless --interpolate is given.

exit codes: 0 every quantity within tolerance, 1 differences beyond tolerance,
2 files missing, unreadable or not comparable (other bodies, connectors or
joints, other time grid without --interpolate)

examples:
  mbsim compare new.h5 old.h5
  mbsim compare new.h5 old.h5 --rtol 1e-5 --atol orientation=1e-8
  mbsim compare coarse.h5 fine.h5 --interpolate --rtol position=1e-3 --json
"""


def register(sub, common, fmt) -> None:
    """Add the subcommand(s) of this module to ``sub``."""
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

def _tolerance_arg(text: str):
    """``X`` or ``NAME=X`` → ``(name or "all", X)``; NAME a quantity or a group of mbsim.compare."""
    from ..compare import GROUPS, QUANTITY_NAMES
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


def _cmd_compare(args) -> int:
    from ..compare import NotComparable, compare_trajectories
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
    from ..io.reader import ResultFileError, UnequalLengthsWarning, read_trajectory
    hint = "give the path of a .h5 file written by `mbsim run`"
    if not os.path.exists(path):
        return None, f"{path}: no such file; {hint}"
    if os.path.isdir(path):
        return None, f"{path}: is a directory; {hint}"
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", UnequalLengthsWarning)
            traj = read_trajectory(path, common_length=True)
        for w in seen:  # a run killed while writing: say so once, in the command's own words
            if issubclass(w.category, UnequalLengthsWarning):
                _err(f"note: {w.message}")
        return traj, None
    except ResultFileError as exc:
        return None, f"{exc}; {hint}"


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
             f"{_count(len(cmp.bodies), 'body', 'bodies')}, {_count(len(cmp.connectors), 'connector')}"
             + (f", {_count(len(cmp.joints), 'joint')}" if cmp.joints else ""),
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
    from ..compare import QUANTITIES
    owner = next(q.owner for q in QUANTITIES if q.name == name)
    return {"bodies": "body", "joints": "joint"}.get(owner, "connector")


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
