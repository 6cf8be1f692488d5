"""The ``mbsim`` command line: argument parsing, messages and exit codes.

Each command is a thin layer over the library, defined in one module of
this package that adds its subparser in ``register(sub, common, fmt)``
(listed in COMMANDS):

- ``simulate``: ``mbsim validate FILE`` (:func:`mbsim.scenario.load_scenario`),
  ``mbsim run SCENARIO`` (:func:`mbsim.driver.run`, then a closing summary),
  ``mbsim info RESULT.h5`` (:func:`mbsim.io.reader.read_summary`);
- ``compare``: ``mbsim compare A.h5 B.h5`` (:func:`mbsim.compare.compare_trajectories`);
- ``verify``: ``mbsim verify SCENARIO`` (:func:`mbsim.verify.verify`);
- ``sweep``: ``mbsim sweep STUDY`` (:func:`mbsim.study.engine.run_study`);
- ``analyses``: ``mbsim statics SCENARIO``, ``mbsim modes SCENARIO`` (:mod:`mbsim.analyses`).

Nothing here computes physics or touches HDF5 directly.  Every message that
reports a problem says what to do next.  Results go to stdout, problems to
stderr, so ``mbsim info --json`` can be piped and ``--quiet`` keeps only the
problems.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings
from typing import Optional, Sequence

# numba imports SciPy's linear algebra at its first compiled call (a probe for BLAS) and OpenBLAS starts a
# thread pool then: ~20 ms of every run's start.  mbsim's numerics use no BLAS threads, and the command
# line runs them alone in its process: one thread, unless the user says otherwise (before numpy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from .. import __version__
from . import analyses, compare, export, simulate, sweep, verify, visual
from ._util import EXIT_DIFFERENCES, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_SOLVER, _err

# One module per command group; each adds its subcommands in register(sub, common, fmt).
COMMANDS = (simulate, analyses, compare, verify, visual, export, sweep)

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
  mbsim statics arm.yaml                        where it settles under its loads (stable?)
  mbsim modes arm.yaml --count 10               natural frequencies, damping ratios, mode shapes
  mbsim plot out/pendulum.h5                    energy, motion, forces, solver dashboard (PNG)
  mbsim animate out/pendulum.h5 -o pendulum.gif a 3D animation of the mechanism
  mbsim export out/pendulum.h5 --csv out/csv    tidy CSV (or --vtk DIR for ParaView)
  mbsim sweep study.yaml                        a parameter study on Dask, one run per case
"""

# When the terminal cannot show these, say the same in ASCII rather than crash.


# --------------------------------------------------------------------------
# entry point

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
        _err(f"mbsim: choose a command: {', '.join(parser.command_names)} (mbsim --help explains them)")
        return EXIT_INVALID
    try:
        if getattr(args, "debug", False):
            return args.handler(args)
        # numpy's and matplotlib's RuntimeWarnings (overflow, NaN in a plot's limits) are not messages for a
        # user: every command says itself what is wrong with a file or a run (--debug shows them)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
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

    for module in COMMANDS:
        module.register(sub, common, fmt)
    p.command_names = list(sub.choices)
    p.set_defaults(command=None)
    return p


def _internal_error_note(args) -> str:
    """Where the result of a run that hit a bug stands (the driver marked it ``failed``)."""
    path = getattr(args, "output_path", None)
    if getattr(args, "command", None) != "run" or not path or not os.path.isfile(path):
        return ""
    if os.path.getmtime(path) < args.started - 1.0:  # a file left by an earlier run: not this one's
        return ""
    from ..io.reader import ResultFileError, read_summary
    try:
        info = read_summary(path)
    except (ResultFileError, OSError, KeyError):
        return ""
    if info["status"] != "failed":
        return ""
    return (f"the result file {path} keeps its {info['frames']} frames and is marked `failed` "
            f"with this error")


__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_DIFFERENCES", "EXIT_INVALID", "EXIT_SOLVER", "EXIT_INTERNAL",
           "EXIT_INTERRUPTED"]
