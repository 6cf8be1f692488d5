"""What every command shares: exit codes, argument types, number formatting, output streams."""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Optional

import numpy as np

from ..exitcodes import (EXIT_DIFFERENCES, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_INVALID,  # noqa: F401
                         EXIT_OK, EXIT_SOLVER)


_ASCII = str.maketrans({"…": "...", "Δ": "d", "→": "->", "ρ": "rho", "∞": "_inf", "α": "alpha",
                        "β": "beta", "γ": "gamma", "—": "-", "≲": "<~", "×": "x"})


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return n


def _positive_time(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a time in seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite time > 0 s, got {text!r}")
    return value


def _describe(sc, end: Optional[float] = None, with_step: bool = True) -> str:
    """One line saying what a scenario holds: "3 bodies (1 fixed), 2 connectors, 1 load; t = 0 … 2 s, Δt = 0.001 s"
    (and ", 4 joints" after the connectors when it has joints)."""
    nb = len(sc.bodies)
    fixed = sum(b.fixed for b in sc.bodies)
    bodies = _count(nb, "body", "bodies") + (f" ({fixed} fixed)" if fixed else "")
    nj = len(getattr(sc, "joints", ()))
    joints = f", {_count(nj, 'joint')}" if nj else ""
    return (f"{bodies}, {_count(len(sc.connectors), 'connector')}{joints}, {_count(len(sc.loads), 'load')}; "
            f"t = 0 … {_g(sc.time.end if end is None else end)} s" + (f", Δt = {_g(sc.time.step)} s" if with_step else ""))


def _report_invalid(exc, run: bool) -> None:
    _err(exc.report())
    if run:
        _err("nothing was run and no file was written; fix the problems above (docs/scenario.md in the mbsim sources "
             "explains every key) and run again")
    else:
        _err("fix the problems above (docs/scenario.md in the mbsim sources explains every key) and validate again")


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
