"""``mbsim verify SCENARIO``: errors and observed order of accuracy against the reference solver."""
from __future__ import annotations

import json

from ._util import (EXIT_DIFFERENCES, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_SOLVER, _count, _describe, _err, _g,
                    _out, _plain, _positive_float, _positive_time, _report_invalid)
from .compare import _num
from .simulate import _sigterm_as_interrupt

VERIFY_EPILOG = """measured: position [m], rotation angle [rad], velocity [m/s], angular velocity
[rad/s] and the energy balance kinetic + potential + dissipated - external work
[J], each as the largest error over frames and bodies against the reference;
with joints also the joint reaction force [N] and moment [N*m] (over frames
and joints; not when redundant joint equations were removed, whose share of
the reactions is not determined).
Errors below the floor -- the reference's own error (estimated by a second
solve at 10 x its rtol) or accumulated round-off; for joint reactions also
Newton's rtol times the forces (times the extent of the motion, for the
moments) -- are reported as at round-off: their order cannot be measured,
which is fine.

exit codes: 0 every measured order within 2 ± 0.3 (the energy balance: at
least 1.7, faster is the scheme's low algorithmic dissipation) or errors at
round-off, 1 an order outside that band, 2 invalid scenario or options, 3 a run or the
reference solver failed, 130 interrupted

examples:
  mbsim verify pendulum.yaml --end 0.5
  mbsim verify chain50.yaml --end 0.05 --step 5e-4 --json
"""


def register(sub, common, fmt) -> None:
    """Add the subcommand(s) of this module to ``sub``."""
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

def _cmd_verify(args) -> int:
    from ..scenario import ScenarioError, load_scenario
    from ..verify import StepRun, verify
    try:
        sc = load_scenario(args.scenario)
    except ScenarioError as exc:
        _report_invalid(exc, run=True)
        return EXIT_INVALID
    step = args.step if args.step is not None else sc.time.step
    end = args.end if args.end is not None else sc.time.end
    if sc.time.controlled and args.step is None:
        return _verify_tolerance(args, sc, end)
    if not args.json:
        _out(f"verifying {sc.name} ({_describe(sc, end, with_step=False)}) at Δt = {_g(step)} s, Δt/2, Δt/4 and with the reference solver")
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


def _verify_tolerance(args, sc, end) -> int:
    """``mbsim verify`` of a scenario with ``time.tolerance``: tolerance proportionality (docs/stepping.md)."""
    from ..verify import ToleranceRun, verify_tolerance
    if not args.json:
        _out(f"verifying {sc.name} ({_describe(sc, end, with_step=False)}) with error-controlled steps at its "
             f"tolerance (rtol {_g(sc.time.rtol)}, atol {_g(sc.time.atol)}), a tenth and a hundredth of it, and "
             f"with the reference solver")
        _out(f"  {'run':<10}{'atol':>10}{'steps':>8}{'rejected':>10}  {'Δt from … to [s]':<28}{'wall time':>10}")

    def on_run(r):
        if args.json:
            return
        if isinstance(r, ToleranceRun):
            state = "" if r.ok else f"   {r.status.upper()}: {r.message}"
            span = f"{_g(r.smallest_step)} … {_g(r.largest_step)}" if r.smallest_step is not None else "-"
            _out(f"  {r.label:<10}{_g(r.atol):>10}{r.steps:>8}{r.rejected_steps:>10}  {span:<28}"
                 f"{r.wall_time_s:>8.3g} s{state}")
        else:
            _out(f"  reference {r.method} (rtol {_g(r.rtol)}, checked at {_g(r.check_rtol)}): "
                 + (f"{r.nfev} right-hand-side evaluations, {r.wall_time_s:.3g} s" if r.ok else "FAILED"))
    try:
        with _sigterm_as_interrupt():
            rep = verify_tolerance(sc, end=end, reference_rtol=args.reference_rtol, on_run=on_run)
    except ValueError as exc:
        _err(f"{exc}; adjust --end")
        return EXIT_INVALID
    code = (EXIT_INTERRUPTED if rep.interrupted else EXIT_SOLVER if not rep.runs_ok
            else EXIT_DIFFERENCES if not rep.passed else EXIT_OK)
    if args.json:
        _out(json.dumps(_plain({"scenario_file": args.scenario, **rep.to_dict(), "exit_code": code}),
                        indent=2, ensure_ascii=False))
        return code
    if rep.errors:
        lines = ["", f"  largest error over the frames (every {_g(rep.interval)} s) and bodies, and the slope of "
                     f"log error against log tolerance per decade:",
                 "  " + f"{'':<24}" + "".join(f"{r.label:>11}" for r in rep.runs) + f"{'slopes':>14}"]
        from ..verify import _QUANTITIES
        for name, words, unit in _QUANTITIES:
            errs = "".join(f"{'-' if e is None else _num(e):>11}" for e in rep.errors.get(name, []))
            sl = "".join(f"{'-' if p is None else f'{p:.2f}':>7}" for p in rep.slopes.get(name, []))
            lines.append(f"  {words + ' [' + unit + ']':<24}{errs}{sl}")
        lines += ["", "verdict:"] + [f"  {v}" for v in rep.verdicts]
        _out("\n".join(lines))
    _out("")
    if rep.interrupted:
        _out("interrupted: the verification did not finish")
    elif not rep.runs_ok:
        bad = next((r for r in rep.runs if not r.ok), None)
        _out("NOT VERIFIED: " + (f"the run at {bad.label} {bad.status}: {bad.message}" if bad else
                                 f"the reference solver failed: {rep.reference.message}"))
    elif rep.passed:
        _out(f"tolerance proportionality confirmed: the position and rotation errors follow the tolerance and "
             f"stay within {rep.multiple:g} × atol")
    else:
        _out("NOT proportional to the tolerance (see the verdicts): a smaller time.step as the first step, a "
             "time.max_step, or fixed steps (mbsim verify --step DT measures their order)")
    return code


def format_verify(rep, sc) -> str:
    """Error table, verdicts and conclusion of a :class:`mbsim.verify.VerifyReport` (after the run lines)."""
    lines = []
    if rep.quantities:
        frames = next(r.frames for r in rep.runs if r.ok)
        joints = f" ({_count(len(sc.joints), 'joint')})" if any(q.name.startswith("joint_") for q in rep.quantities) \
            else ""
        lines += ["", f"  largest error over {_count(frames, 'frame')} (every {_g(rep.interval)} s) and "
                      f"{_count(len(sc.bodies), 'body', 'bodies')}{joints}, and observed order of each halving:",
                  "  " + f"{'':<24}" + "".join(f"{r.label:>11}" for r in rep.runs) + f"{'orders':>14}"]
        for q in rep.quantities:
            errs = "".join(f"{'-' if e is None else _num(e):>11}" for e in q.errors)
            ords = "".join(f"{'-' if p is None else f'{p:.2f}':>7}" for p in q.orders)
            lines.append(f"  {q.label + ' [' + q.unit + ']':<24}{errs}{ords}")
        lines += ["", "verdict:"] + [f"  {q.verdict}" for q in rep.quantities]
    lines += [f"  note: {n}" for n in rep.notes]
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
        lines += [f"NOT second order: {', '.join(off)}", "what to try:"] + [f"  - {h}" for h in rep.hints]
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
