"""``mbsim sweep STUDY.yaml``: a parameter study on Dask (:mod:`mbsim.study`)."""
from __future__ import annotations

import json
import os
import sys

from ._util import (EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_SOLVER, _count, _describe, _err, _isatty, _out,
                    _plain, _positive_int)

SHOWN_FAILURES = 10  # failed or lost cases listed after a study (summary.csv has them all)

EPILOG = """A study file names a base scenario, the parameters to vary (key paths into the
scenario, such as connectors[shock].damping), a design (grid, or samples drawn
at random or by Latin hypercube from a seed) and the metrics to keep per case;
docs/sweep.md is its reference. Every case's scenario is validated before
anything runs. Each case writes DIR/case_NNNNN.h5 (as `mbsim run` would); the
table of all cases is DIR/summary.csv and DIR/summary.h5 (an xarray Dataset).
DIR is -o, else the study's output:, else outputs/<study name>.

Cases run on a Dask LocalCluster of --workers single-threaded processes (one per
core by default), or on an existing cluster: --scheduler tcp://HOST:8786 or
DASK_SCHEDULER_ADDRESS (the workers must have mbsim installed and see DIR).
Needs pip install 'mbsim[sweep]'.

exit codes: 0 every case ok, 2 invalid study or case (nothing run), an output
folder that holds another study, Dask not installed or its scheduler not
reachable, 3 some cases failed or were lost (the table says which), 130
interrupted (the table has every case that finished; --resume runs the rest)

examples:
  mbsim sweep scenarios/mass_spring_damper_study.yaml
  mbsim sweep study.yaml --check                     validate the study and every case, run nothing
  mbsim sweep study.yaml --workers 8 -o runs/damping
  mbsim sweep study.yaml --resume                    run only what is missing
  mbsim sweep study.yaml --scheduler tcp://10.0.0.5:8786
  mbsim plot outputs/mass_spring_damper_study         each metric against each parameter
"""


def register(sub, common, fmt) -> None:
    """Add ``sweep`` to ``sub``."""
    s = sub.add_parser("sweep", parents=[common], formatter_class=fmt,
                       help="run a parameter study on Dask: one run per case, a summary table",
                       description="Run a parameter study (docs/sweep.md): every case of the study file's design "
                                   "through dask.distributed, one result file per case and a summary table.",
                       epilog=EPILOG)
    s.add_argument("study", metavar="STUDY", help="study file (YAML)")
    s.add_argument("-o", "--output", metavar="DIR", help="folder for the case files and the table "
                                                         "(default: the study's output:, else outputs/<study name>)")
    s.add_argument("--workers", type=_positive_int, metavar="N",
                   help="worker processes of the local cluster (default: one per core, at most one per case)")
    s.add_argument("--scheduler", metavar="ADDR",
                   help="run on the existing Dask cluster at ADDR, e.g. tcp://10.0.0.5:8786 (default: "
                        "DASK_SCHEDULER_ADDRESS if set, else a local cluster)")
    s.add_argument("--resume", action="store_true",
                   help="keep every case whose file holds a completed run of the same scenario; run the rest")
    s.add_argument("--check", action="store_true", help="validate the study and every case; run nothing")
    s.add_argument("--json", action="store_true", help="print the outcome as one JSON object on stdout")
    s.add_argument("--quiet", action="store_true", help="print only problems")
    s.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it is shown only when stderr is a terminal anyway)")
    s.set_defaults(handler=_cmd_sweep)


def _cmd_sweep(args) -> int:
    from ..study import StudyError, load_study
    try:
        study = load_study(args.study)
    except StudyError as exc:
        _err(exc.report())
        _err("nothing was run; fix the problems above (docs/sweep.md in the mbsim sources explains every key) "
             "and run again")
        return EXIT_INVALID
    if args.check:
        if not args.quiet:
            _out(describe_study(study))
        return EXIT_OK
    from ..study import engine
    try:
        engine.require()
    except engine.MissingDask as exc:
        _err(f"mbsim sweep: {exc}")
        return EXIT_INVALID
    quiet = args.quiet or args.json
    progress = not quiet and not args.no_progress and _isatty(sys.stderr)
    folder = engine.output_folder(study, args.output)
    existed = os.path.isdir(folder)
    try:
        engine.prepare_folder(folder, args.resume)
    except engine.StudyOutputError as exc:
        _err(str(exc))
        return EXIT_INVALID
    if not quiet:
        _out(describe_study(study, folder=folder))
    from .simulate import _sigterm_as_interrupt
    try:
        with _sigterm_as_interrupt():
            outcome = engine.run_study(study, scheduler=args.scheduler, workers=args.workers, output=args.output,
                                       resume=args.resume, progress=progress, notify=None if quiet else _err)
    except engine.StudyOutputError as exc:
        _err(str(exc))
        return EXIT_INVALID
    except (OSError, TimeoutError) as exc:  # the scheduler is not there
        if not existed:  # nothing was written: leave no empty folder behind
            try:
                os.rmdir(folder)
            except OSError:
                pass
        address = args.scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS", "")
        _err(f"cannot reach the Dask scheduler{f' at {address}' if address else ''}: {exc}; start it with "
             f"`dask scheduler` (and workers with `dask worker tcp://HOST:8786`), or leave out --scheduler "
             f"(and DASK_SCHEDULER_ADDRESS) to run on this machine")
        return EXIT_INVALID
    code = EXIT_INTERRUPTED if outcome.interrupted else \
        EXIT_SOLVER if outcome.count("failed") or outcome.count("lost") else EXIT_OK
    if args.json:
        _out(json.dumps(_plain(outcome_json(study, outcome, code)), ensure_ascii=False))
    text = format_outcome(study, outcome)
    if code != EXIT_OK:
        _err(text)
    elif not quiet:
        _out(text)
    return code


def describe_study(study, folder: str = "") -> str:
    """What a study is: cases, design, parameters, metrics (and where it writes)."""
    d = study.design
    if d.kind == "grid":
        shape = " × ".join(str(len(p.values)) for p in study.parameters)
        design = f"grid {shape}"
    else:
        design = f"{d.samples} samples ({'Latin hypercube' if d.method == 'lhs' else 'random'}, seed {d.seed})"
    lines = [f"study {study.name}: {_count(len(study.cases), 'case')}, {design}, of the scenario "
             f"{study.scenario.name} ({_describe(study.scenario)}, before the parameters)"]
    for p in study.parameters:
        if p.values is not None:
            shown = ", ".join(_short(v) for v in p.values[:6]) + (", …" if len(p.values) > 6 else "")
            lines.append(f"  parameter  {p.path}: {shown}")
        else:
            lines.append(f"  parameter  {p.path}: {p.distribution} {list(p.arguments)}")
    for m in study.metrics:
        lines.append(f"  metric     {m.name} [{m.units}]: {m.description}")
    lines.append("  every case is a valid scenario" + (f"; output → {folder}" if folder else ""))
    return "\n".join(lines)


def _short(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def format_outcome(study, outcome) -> str:
    """The closing summary: counts by status, the failed and lost cases, where the table is."""
    n = len(outcome.rows)
    head = "interrupted" if outcome.interrupted else "completed"
    counts = ", ".join(f"{outcome.count(s)} {s}" for s in ("ok", "failed", "lost", "cancelled") if outcome.count(s))
    lines = [f"{head}: study {study.name}, {_count(n, 'case')}: {counts}"]
    if outcome.reused:
        lines.append(f"  {_count(len(outcome.reused), 'case')} kept from an earlier run (--resume), "
                     f"{len(outcome.ran)} run now")
    bad = [r for r in outcome.rows if r["status"] in ("failed", "lost")]
    by_case = {c.index: c for c in study.cases}
    for r in bad[:SHOWN_FAILURES]:
        lines.append(f"  case {r['case']} ({study.describe_values(by_case[r['case']].values)}): {r['status']}: "
                     f"{r['message']}")
    if len(bad) > SHOWN_FAILURES:
        lines.append(f"  … and {len(bad) - SHOWN_FAILURES} more (summary.csv lists them all)")
    lines.append(f"  table          {os.path.join(outcome.folder, 'summary.csv')} and summary.h5 "
                 f"(mbsim plot {outcome.folder} draws it)")
    if outcome.interrupted:
        lines.append(f"  `mbsim sweep {study.source} --resume -o {outcome.folder}` runs the "
                     f"{_count(outcome.count('cancelled'), 'case')} left")
    return "\n".join(lines)


def outcome_json(study, outcome, code: int) -> dict:
    return {"study": study.name, "folder": outcome.folder, "cases": len(outcome.rows),
            "ok": outcome.count("ok"), "failed": outcome.count("failed"), "lost": outcome.count("lost"),
            "cancelled": outcome.count("cancelled"), "run": len(outcome.ran), "reused": len(outcome.reused),
            "interrupted": outcome.interrupted, "exit_code": code,
            "rows": [{**{k: v for k, v in r.items() if k != "metrics"}, **r["metrics"]} for r in outcome.rows]}
