"""Up-front estimates of what a run will need: steps, output size, memory.

A scenario can be valid and still absurd to run — a year of 1 µs steps, a
trajectory file of a terabyte.  :func:`check` estimates the cost before
anything is built and refuses (``ResourceError``) what cannot fit the
machine or would run practically forever, and warns about what is merely
large; ``allow_large`` lifts the refusals a user has thought about.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from .stepping import COLLAPSED_STEPS, step_schedule

WARN_OUTPUT_BYTES = 2 * 1024**3  # warn above 2 GiB of trajectory
MAX_STEPS = 10**10  # ~10 days at 10^4 steps/s: refuse more unless allowed
# Peak memory per connector / per moving body during a Newton iteration: the
# batched 12×12 local tangents with their temporaries and scatter maps, the
# sparse factorization's fill for chain-like topologies (measured on the
# chain benchmark, rounded up).
BYTES_PER_CONNECTOR = 12 * 1024
BYTES_PER_BODY = 8 * 1024


def frame_bytes(n_bodies: int, n_connectors: int, n_joints: int = 0) -> int:
    """Bytes of one stored frame: the OUTPUT.md per-frame datasets, 19 values per body,
    7 per connector, 8 per joint and 16 others (time, energies, momenta, solver data; rounded up)."""
    return 8 * (19 * n_bodies + 7 * n_connectors + 8 * n_joints + 16)


class ResourceError(Exception):
    """The run would need more than is sensible; the message gives the estimate."""


@dataclass(frozen=True)
class Estimate:
    steps: int
    frames: int
    output_bytes: int
    memory_bytes: int


def estimate(scenario, end: float | None = None) -> Estimate:
    """Steps, stored frames, trajectory size and peak memory of a run of ``scenario``."""
    tm = scenario.time
    end = tm.end if end is None else end
    ratio = end / tm.step
    if ratio > 1e15:  # beyond exact integers: the count is what matters, not its last digit
        steps = frames = int(min(ratio, 1e300))
    else:
        n_full, last, every = step_schedule(end, tm.step, scenario.output.interval)
        steps = n_full + (1 if last else 0)
        frames = 1 + n_full // every + (1 if (n_full % every or last) else 0)
    B, C, J = len(scenario.bodies), len(scenario.connectors), len(scenario.joints)
    per_frame = frame_bytes(B, C, J)
    output = 64 * 1024 + len(scenario.text) + 64 * (B + C + J) + frames * per_frame
    memory = 64 * 1024**2 + BYTES_PER_CONNECTOR * (C + 2 * J) + BYTES_PER_BODY * B
    return Estimate(steps, frames, int(min(output, 2**62)), int(memory))


def _gib(n: int) -> str:
    return f"{n / 1024**3:.3g} GiB" if n >= 1024**3 else f"{n / 1024**2:.3g} MiB"


def _available_memory() -> int | None:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check(scenario, output: str | None, end: float | None = None, allow_large: bool = False) -> list[str]:
    """Refuse a run that cannot fit; return warnings for one that is merely large.

    Raises
    ------
    ResourceError
        Too many steps, a trajectory larger than the free disk space, or more
        memory than the machine has free (unless ``allow_large``; the disk
        check holds regardless, since the run would fail anyway).
    """
    e = estimate(scenario, end)
    warnings = []
    tm = scenario.time
    span = tm.end if end is None else end
    # (only below the default 1e-6 · step: every long adaptive run would warn otherwise)
    if tm.adaptive and e.steps <= MAX_STEPS and span / tm.min_step > MAX_STEPS and tm.min_step < 0.999e-6 * tm.step:
        warnings.append(f"time.min_step = {tm.min_step:g} s lets the adaptive step shrink until reaching t = {span:g} s "
                        f"would take {span / tm.min_step:.3g} steps; a run whose step collapses stops after "
                        f"{COLLAPSED_STEPS} tiny steps, a larger min_step stops it at once")
    if e.steps > MAX_STEPS and not allow_large:
        raise ResourceError(
            f"the run would take {e.steps:.3g} steps of {tm.step:g} s to reach t = {span:g} s "
            f"(more than {MAX_STEPS:.0e}); check time.step and time.end, or pass --allow-large (allow_large=True from Python)")
    if output is not None:
        d = os.path.dirname(os.path.abspath(output)) or "."
        while not os.path.isdir(d) and os.path.dirname(d) != d:
            d = os.path.dirname(d)
        free = shutil.disk_usage(d).free
        if e.output_bytes > free:
            raise ResourceError(
                f"the trajectory would need about {_gib(e.output_bytes)} ({e.frames:.3g} frames) but only "
                f"{_gib(free)} is free in {d}; store fewer frames (a larger output.interval), "
                f"shorten the run with --end, or write elsewhere with -o")
        if e.output_bytes > WARN_OUTPUT_BYTES:
            warnings.append(f"the trajectory will take about {_gib(e.output_bytes)} ({e.frames:.3g} frames); "
                            f"a larger output.interval stores fewer")
    avail = _available_memory()
    if avail is not None and e.memory_bytes > avail and not allow_large:
        raise ResourceError(
            f"the model would need about {_gib(e.memory_bytes)} of memory ({len(scenario.bodies)} bodies, "
            f"{len(scenario.connectors)} connectors) but {_gib(avail)} is free; pass --allow-large (allow_large=True from Python) to try anyway")
    return warnings
