"""``mbsim validate``, ``mbsim run`` and ``mbsim info``."""
from __future__ import annotations

import json
import math
import os
import signal
import sys
import time
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .. import driver

from ._util import (EXIT_INVALID, EXIT_OK, EXIT_SOLVER, _count, _describe, _err, _g, _isatty, _out, _plain, _positive_time,
                    _report_invalid)

COMPILE_REPORT_S = 2.0  # a warm-up this long was numba compiling (loading its cache takes about 1 s)

def register(sub, common, fmt) -> None:
    """Add the subcommand(s) of this module to ``sub``."""
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
                   help="result file; default: output.file of the scenario, else outputs/<name>.h5 (the name made a safe "
                        "file name: never outside outputs/)")
    r.add_argument("--end", type=_positive_time, metavar="T",
                   help="stop at time T [s] instead of the scenario's time.end")
    r.add_argument("--quiet", action="store_true", help="print only errors")
    r.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it is shown only when stderr is a terminal anyway)")
    r.add_argument("--json", action="store_true",
                   help="print the run summary as one JSON object on stdout and nothing else there "
                        "(no progress bar; problems still go to stderr)")
    r.add_argument("--overwrite", action="store_true",
                   help="replace an existing file at the output path (never done otherwise)")
    r.add_argument("--resume", metavar="RESULT",
                   help="continue the interrupted or failed run stored in RESULT from its last frame, "
                        "appending to that file (the scenario must be the one it was made from)")
    r.add_argument("--view", action="store_true",
                   help="watch the run in the browser as it computes (mbsim view, live: served on 127.0.0.1 "
                        "until Ctrl-C after the run)")
    r.add_argument("--port", type=int, default=0, metavar="N",
                   help="with --view: serve on port N of 127.0.0.1 (default: a free one)")
    r.add_argument("--no-browser", action="store_true", help="with --view: only print the URL")
    r.add_argument("--allow-large", action="store_true",
                   help="run even when the up-front estimate finds more steps (> 1e10) or memory than is "
                        "sensible")
    r.set_defaults(handler=_cmd_run)

    i = sub.add_parser("info", parents=[common], formatter_class=fmt,
                       help="summarize a result file",
                       description="Summarize a trajectory file written by `mbsim run`: scenario, status, "
                                   "frames, bodies, connectors, joints (each with its largest reaction force "
                                   "and moment and its largest constraint errors), counters, energy drift. "
                                   "A file of `mbsim statics` or `mbsim modes` says so (stability, load steps); "
                                   "one of `mbsim modes` lists its modes, numbered from 1 as `mbsim animate "
                                   "--mode` takes them: frequency, damping ratio, eigenvalue, rigid-body flag "
                                   "and the body that moves most.",
                       epilog="exit codes: 0 ok, 2 missing file, not an mbsim result, or a damaged /modes\n\n"
                              "examples:\n  mbsim info out/pendulum.h5 --json\n  mbsim info out/pendulum-modes.h5")
    i.add_argument("result", metavar="RESULT", help="result file (.h5)")
    i.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    i.set_defaults(handler=_cmd_info)

def _cmd_validate(args) -> int:
    from ..scenario import ScenarioError, load_scenario
    try:
        sc = load_scenario(args.file)
    except ScenarioError as exc:
        _report_invalid(exc, run=False)
        return EXIT_INVALID
    _out(f"{args.file}: valid ({_describe(sc)})")
    return EXIT_OK


def _cmd_run(args) -> int:
    from ..scenario import ScenarioError, load_scenario
    try:
        sc = load_scenario(args.scenario)
    except ScenarioError as exc:
        _report_invalid(exc, run=True)
        return EXIT_INVALID
    if args.resume is not None and args.output is not None and args.output != args.resume:
        _err("--resume RESULT continues RESULT itself; leave out -o (or give the same path)")
        return EXIT_INVALID
    out = args.resume or (args.output if args.output is not None else sc.output_file)
    args.output_path, args.started = out, time.time()  # for the internal-error note in main()
    if os.path.isdir(out):  # caught here too so the model is not built for nothing
        _err(f"cannot write the result file {out}: it is a directory; give a file name with -o, "
             f"e.g. -o {os.path.join(out, sc.name + '.h5')}")
        return EXIT_INVALID
    from ..resources import ResourceError, check
    try:  # up front: refuse what cannot fit, warn about what is large
        for w in check(sc, out, args.end, args.allow_large):
            _err(f"warning: {w}")
    except ResourceError as exc:
        _err(f"not run: {exc}")
        return EXIT_INVALID
    progress = not args.quiet and not args.no_progress and not args.json and _isatty(sys.stderr)
    if not args.quiet and not args.json:
        _out(f"{'resuming' if args.resume else 'running'} {sc.name} ({_describe(sc, args.end)}) → {out}")
    from .. import driver  # the numerical code, imported only when a run is asked for
    live = server = None
    ran = False
    if args.view:
        from ..viz import view
        from .visual import start_server
        live = view.Live(sc, every=view.every_of_run(sc, args.end))
        started = start_server(lambda port: view.serve_live(live, port), args,
                               "mbsim view (live): {url} (this machine only)")
        if started is None:
            live.finish("not run")
            return EXIT_INVALID
        server, url = started
    try:
        with _sigterm_as_interrupt(), warnings.catch_warnings():
            warnings.simplefilter("always", driver.JointWarning)
            warnings.simplefilter("always", driver.ElementWarning)
            shown = warnings.showwarning
            warnings.showwarning = lambda message, category, *a, **k: (
                _err(f"warning: {message}") if issubclass(category, (driver.JointWarning, driver.ElementWarning))
                else shown(message, category, *a, **k))
            summary = driver.run(sc, out, progress=progress, end=args.end, overwrite=args.overwrite,
                                 resume=args.resume is not None, allow_large=True,  # checked above
                                 notify=None if args.quiet or args.json else _err,
                                 on_frames=live.observe if live is not None else None)
            ran = True
    except driver.JointError as exc:
        _err(f"{args.scenario}: not run: {exc}")
        return EXIT_INVALID
    except driver.StaticsFailed as exc:  # initial: equilibrium, and there is none
        _err(f"{args.scenario}: not run: initial: equilibrium: {exc}")
        return EXIT_SOLVER
    except driver.OutputFileError as exc:
        _err(f"{exc}" if "--overwrite" in str(exc) else f"{exc}; choose another path with -o OUT")
        return EXIT_INVALID
    except driver.ResumeError as exc:
        _err(str(exc))
        return EXIT_INVALID
    finally:
        if live is not None and not ran:
            live.finish("not run")
    if live is not None:
        live.finish(summary.message if summary.message.startswith(summary.status)
                    else f"{summary.status}: {summary.message}")
        code = _report_run(args, summary, sc)
        print(f"mbsim view: still serving {url} (Ctrl-C to stop)", flush=True)
        from .visual import serve_until_interrupted
        serve_until_interrupted(server)
        return code
    return _report_run(args, summary, sc)


def _report_run(args, summary, sc) -> int:
    """The closing summary of a run, as --json or text; its exit code."""
    if args.json:
        _out(json.dumps(_plain(summary_json(summary, sc)), ensure_ascii=False))
        if summary.status != "completed":  # the same explanation as without --json, on stderr
            _err(format_summary(summary, sc))
            if summary.status == "failed":
                _err(format_hints(summary, sc))
        return summary.exit_code
    if summary.status == "completed":
        if not args.quiet:
            _out(format_summary(summary, sc))
    else:
        _err(format_summary(summary, sc))
        if summary.status == "failed":
            _err(format_hints(summary, sc))
    return summary.exit_code


def summary_json(s: "driver.RunSummary", sc) -> dict:
    """What ``mbsim run --json`` prints: the closing summary as one flat mapping.

    Parameters
    ----------
    s : RunSummary
        What :func:`mbsim.driver.run` returned.
    sc : Scenario
        The scenario that was run.
    """
    return {"status": s.status, "message": s.message, "scenario": sc.name, "output": s.output,
            "t_end": s.t_end, "frames": s.frames, "steps": s.steps, "newton_iterations": s.newton_iterations,
            "rejected_steps": s.rejected_steps, "smallest_step": s.smallest_step, "largest_step": s.largest_step,
            "wall_time_s": s.wall_time_s, "compile_time_s": s.compile_time_s,
            "energy_drift_J": s.energy_drift_J, "energy_drift_relative": s.energy_drift_relative,
            "linear_solver": s.linear_solver, "failure": s.failure, "exit_code": s.exit_code}


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
        (f"  steps          {s.steps} accepted, {s.rejected_steps} rejected (Δt from {_g(s.smallest_step)} to "
         f"{_g(s.largest_step)} s, error-controlled: rtol {_g(sc.time.rtol)}, atol {_g(sc.time.atol)})"
         if s.smallest_step is not None else f"  steps          {s.steps} (Δt = {_g(sc.time.step)} s)"),
        f"  Newton         {s.newton_iterations} iterations"
        + (f", {s.iterations_per_step:.2f} per step" if s.steps else "") + f"; {s.linear_solver}",
        f"  wall time      {s.wall_time_s:.3g} s ({rate:.4g} steps/s)"
        + (f"; before it {s.compile_time_s:.3g} s compiling the kernels (once: numba caches them)"
           if s.compile_time_s >= COMPILE_REPORT_S else ""),
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
    if s.failure == "collapsed":
        hints.append(f"a larger time.min_step (now {_g(sc.time.min_step)} s): a step that has to shrink that far "
                     f"then ends the run at once instead of crawling")
    if s.failure == "singular":
        hints.append("the joints' equations became dependent: look for a joint at a dead point or locked up, "
                     "a redundant joint (integrator.joints.redundant), or masses many orders of magnitude "
                     "apart on one chain")
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


def _cmd_info(args) -> int:
    from ..io.reader import ModesError, ResultFileError, read_summary
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
    except ModesError as exc:
        _err(f"{exc}: its modes are damaged; run `mbsim modes` again to rewrite the file")
        return EXIT_INVALID
    except ResultFileError as exc:
        _err(f"{exc}; {hint}")
        return EXIT_INVALID
    if args.json:
        _out(json.dumps(_plain(info), indent=2, ensure_ascii=False))
    else:
        _out(format_info(info))
    return EXIT_OK


def format_info(info: dict) -> str:
    """Text form of :func:`mbsim.io.reader.read_summary`."""
    it, c = info["integrator"], info["counters"]
    lines = [f"{info['path']}: mbsim trajectory (written by mbsim {_q(info['mbsim_version'])}, "
             f"{_q(info['created_utc'])})",
             f"  scenario       {_q(info['scenario_name'])}",
             f"  status         {_q(info['status'])}"]
    if info["message"] and info["message"] != info["status"]:
        lines.append(f"  message        {info['message']}")
    if info["status"] == "running":
        lines.append("                 (the writer never finished: the run is still going, or was killed; "
                     "the frames below are the ones flushed)")
    analysis = info.get("analysis") or "dynamics"
    if analysis != "dynamics":
        lines.append(f"  analysis       {_analysis_words(info)}")
    span = (f", t = {_g(info['t_start'])} … {_g(info['t_end'])} s" if info["frames"] else "")
    lines.append(f"  frames         {info['frames']}{span}")
    fixed = info["fixed_bodies"]
    lines.append(f"  bodies         {info['bodies']}" + (f" ({fixed} fixed)" if fixed else ""))
    conns = info["connectors"]
    by_type = ", ".join(f"{n} {t}" for t, n in conns.items())
    lines.append(f"  connectors     {sum(conns.values())}" + (f": {by_type}" if by_type else ""))
    lines += _joint_lines(info.get("joints") or [])
    if info.get("modes") is not None:
        # (the analysis line above says what they were linearized about; a file without one says it here)
        lines += _mode_lines(info["modes"], info.get("degrees_of_freedom"),
                             info.get("linearized_about") if analysis != "modes" else None)
    # read_summary gives each root attribute as OUTPUT.md types it, or None (missing or of another type:
    # listed at the end); "?" stands for a None here
    if it.get("rho_inf") is not None:
        lines.append(f"  integrator     {it.get('integrator') or 'generalized-alpha'}, ρ∞ = {_q(it['rho_inf'])} "
                     f"(α_f = {_q(it.get('alpha_f'))}, α_m = {_q(it.get('alpha_m'))}, β = {_q(it.get('beta'))}, "
                     f"γ = {_q(it.get('gamma'))}), tangent {_q(it.get('tangent'))}")
    steps, iters, wall = c.get("steps"), c.get("newton_iterations"), c.get("wall_time_s")
    if steps is not None:
        per = f" ({iters / steps:.2f} per step)" if steps and isinstance(iters, (int, float)) else ""
        lines.append(f"  counters       {steps} steps, {_q(iters)} Newton iterations{per}, "
                     f"{_q(c.get('rejected_steps'))} rejected, wall time {_q(wall)} s")
        if c.get("smallest_step") is not None or c.get("largest_step") is not None:
            lines.append(f"  steps          error-controlled: Δt from {_q(c.get('smallest_step'))} to "
                         f"{_q(c.get('largest_step'))} s")
    cp = info.get("checkpoint")
    if cp is not None and info["status"] != "completed":
        lines.append(f"  checkpoint     t = {_g(cp['time'])} s after frame {cp['frames']}: `mbsim run SCENARIO "
                     f"--resume FILE` goes on from there")
    bad = info.get("non_finite") or []
    if analysis in ("statics", "modes"):
        pass  # one frame at rest: no energy balance to drift
    elif math.isfinite(info["energy_drift_J"]):
        lines.append(f"  energy drift   {info['energy_drift_J']:.3e} J ({info['energy_drift_relative']:.3e} relative)")
    else:
        lines.append("  energy drift   not finite: the energies hold NaN or inf")
    if bad:
        lines.append(f"  not finite     {', '.join(bad)} hold NaN or inf (no mbsim run stores them: the file was "
                     f"written or edited by something else)")
    if info.get("missing_attributes"):
        lines.append(f"  missing        root attributes {', '.join(info['missing_attributes'])} (OUTPUT.md has them)")
    if info.get("wrongly_typed_attributes"):
        lines.append(f"  wrong type     root attributes {', '.join(info['wrongly_typed_attributes'])} (not of the "
                     f"type OUTPUT.md gives them: ignored)")
    return "\n".join(lines)


def _q(x) -> str:
    """A root attribute for ``mbsim info``: a number with 6 digits, text as it is, '?' for None."""
    if x is None:
        return "?"
    return _g(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _analysis_words(info: dict) -> str:
    """The ``analysis`` line of ``mbsim info`` for a statics or modes file: "statics: stable equilibrium at
    t = 0 s, 3 load steps", "modes about the equilibrium at t = 0 s (stable), 4 degrees of freedom"."""
    analysis, stability = info["analysis"], info.get("stability")
    at = f" at t = {_g(info['t_end'])} s" if info["frames"] else ""
    if analysis == "statics":
        if info["status"] != "completed":
            return f"statics: no equilibrium stored (status {_q(info['status'])}; the message says why)"
        steps = info.get("load_factor_steps")
        return (f"statics: {stability + ' ' if stability else ''}equilibrium{at}"
                + (f", {_count(steps, 'load step')}" if steps is not None else ""))
    if analysis == "modes":
        about = info.get("linearized_about")
        state = {"equilibrium": "the equilibrium", "initial": "the initial state"}.get(about, about)
        words = f"modes, linearized about {state}{at}" if state else f"modes, linearized{at}"
        if stability:
            words += f" ({stability})"
        return words
    return f"{analysis} (not an analysis this mbsim knows: dynamics, statics or modes)"


# modes listed one per line by `mbsim info` (a longer list ends with "... and N more"; --json has all)
INFO_MODES = 20


def _mode_lines(modes: list, dof, about) -> list:
    """The ``modes`` lines of ``mbsim info``: their number, the degrees of freedom and the state they were
    linearized about, then a table: number (as ``mbsim animate --mode`` takes it), frequency, damping
    ratio, eigenvalue, rigid-body flag and the body that moves most in the mode."""
    rigid = sum(m["rigid_body"] for m in modes)
    head_line = f"  modes          {len(modes)}" + (f" ({rigid} rigid-body)" if rigid else "")
    extra = []
    if dof is not None:
        extra.append(_count(dof, "degree of freedom", "degrees of freedom"))
    if about:
        extra.append(f"linearized about {'the initial state' if about == 'initial' else 'the ' + about}")
    lines = [head_line + (f"; {', '.join(extra)}" if extra else "")]
    if not modes:
        return lines
    shown = modes[:INFO_MODES]

    def moves(m):
        if m["body"] is None:
            return "-"
        return f"{m['body']} ({m['motion']} {'along' if m['motion'] == 'translation' else 'about'} {m['axis']})"

    rows = [(str(m["mode"]), _f(m["frequency_Hz"]), _f(m["damping_ratio"]), _f(m["eigenvalue"][0]),
             _f(m["eigenvalue"][1]), "rigid" if m["rigid_body"] else "", moves(m)) for m in shown]
    head = ("mode", "frequency [Hz]", "damping ratio", "Re s [1/s]", "Im s [1/s]", "rigid", "moves most")
    return lines + _table(head, rows, lambda i: i < 5, len(modes) - len(shown))


def _f(x) -> str:
    """A number of the mode table: 4 significant digits, '-' where there is none (NaN)."""
    x = float(x)
    return "-" if math.isnan(x) else ("0" if x == 0 else f"{x:.4g}")


# joints listed one per line by `mbsim info` (a longer list ends with "... and N more"; --json has all)
INFO_JOINTS = 20


def _joint_lines(joints: list) -> list:
    """The ``joints`` lines of ``mbsim info``: the count by type, then a table of each joint's bodies,
    largest reaction force and moment, and largest constraint errors."""
    if not joints:
        return []
    types = {}
    for j in joints:
        types[j["type"]] = types.get(j["type"], 0) + 1
    lines = [f"  joints         {len(joints)}: " + ", ".join(f"{n} {t}" for t, n in sorted(types.items()))]
    shown = joints[:INFO_JOINTS]
    rows = [(j["name"], j["type"], f"{j['body_a']} → {j['body_b']}", _e(j["max_force_N"]),
             _e(j["max_moment_N_m"]), _e(j["max_position_error_m"]), _e(j["max_angle_error_rad"])) for j in shown]
    head = ("name", "type", "bodies (A → B)", "max |F| [N]", "max |M| [N·m]", "max pos. err [m]",
            "max angle err [rad]")
    return lines + _table(head, rows, lambda i: i >= 3, len(joints) - len(shown))


def _table(head: tuple, rows: list, right, more: int) -> list:
    """The lines of one of ``mbsim info``'s tables: ``head`` and ``rows`` (strings) in aligned columns, column
    i right-aligned where ``right(i)``, indented; then how many ``more`` rows --json has."""
    width = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = []
    for r in [head, *rows]:
        text = "  ".join(f"{c:>{w}}" if right(i) else f"{c:<{w}}" for i, (c, w) in enumerate(zip(r, width)))
        lines.append(f"                 {text}".rstrip())
    if more > 0:
        lines.append(f"                 ... and {more} more (mbsim info --json lists them all)")
    return lines


def _e(x) -> str:
    """A reaction or an error for the table: 3 significant digits, '-' where there is no value."""
    x = float(x)
    return "-" if not math.isfinite(x) else ("0" if x == 0 else f"{x:.3e}")
