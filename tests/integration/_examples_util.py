"""Helpers for the example-scenario tests: where the examples are, how long to
run them, how big a scene is, and how far two orientations are apart.

Kept apart from the tests so that the rules (spans, scene size, angle
metric) are written down once and can be read on their own.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[2]
SCENARIO_DIR = REPO / "scenarios"

# Test spans.  The suite must stay around a minute on two slow cores (about
# 2 ms per Newton iteration for a small model, 3 per step), so every example
# runs at its own step for at most MAX_SPAN seconds of simulated time, and
# large models (more than LARGE_MODEL moving bodies: the 50-link chain) for
# at most LARGE_SPAN seconds -- there the explicit high-order reference
# solver, which has to resolve the stiff joint springs, costs more than
# mbsim itself.
MAX_SPAN = 1.0
LARGE_SPAN = 0.25
LARGE_MODEL = 20

# Accuracy demanded of an example against the independent reference
# (mbsim.reference, DOP853 at rtol 1e-11): positions to POSITION_TOL times
# the scene size, orientations to ANGLE_TOL radians.
POSITION_TOL = 1e-4
ANGLE_TOL = 1e-4

HEADER_PARTS = ("What it models", "What it shows", "What to look at", "Run time")


def is_study(path: Path) -> bool:
    """Whether a ``scenarios/*.yaml`` is a parameter study (docs/sweep.md: a mapping with a
    ``scenario:`` key and no ``mbsim:`` format line) rather than a scenario."""
    with open(path) as fh:
        doc = yaml.safe_load(fh)
    return isinstance(doc, dict) and "scenario" in doc and "mbsim" not in doc


def example_paths() -> list[Path]:
    """Every scenario ``scenarios/*.yaml``, sorted (new examples are picked up automatically);
    the study files among them are :func:`study_paths`."""
    return [p for p in sorted(SCENARIO_DIR.glob("*.yaml")) if not is_study(p)]


def study_paths() -> list[Path]:
    """Every example parameter study ``scenarios/*.yaml`` (run by tests/integration/test_sweep.py)."""
    return [p for p in sorted(SCENARIO_DIR.glob("*.yaml")) if is_study(p)]


def span_for(scenario) -> float:
    """Simulated time [s] over which an example is run and compared in the tests."""
    moving = sum(not b.fixed for b in scenario.bodies)
    cap = LARGE_SPAN if moving > LARGE_MODEL else MAX_SPAN
    return min(scenario.time.end, cap)


def scene_size(scenario) -> float:
    """Largest distance between any two body centres or connector insertion
    points at t = 0, and at least 1 m.

    Declared bodies count (fixed ones included); ``world`` counts through the
    insertion points of the connectors attached to it.
    """
    pts = [b.position for b in scenario.bodies]
    pts += [p for c in scenario.connectors if c.points is not None for p in c.points]
    x = np.asarray(pts, dtype=float).reshape(-1, 3)
    d = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=-1)
    return max(1.0, float(d.max()))


def rotation_angle(q1, q2) -> np.ndarray:
    """Angle [rad] of the rotation between unit quaternions ``q1`` and ``q2``
    ([w, x, y, z], shapes (..., 4)), insensitive to the sign of either:
    2·atan2(|vec(q1 ⊗ q2*)|, |w(q1 ⊗ q2*)|).
    """
    q1, q2 = np.asarray(q1, float), np.asarray(q2, float)
    w1, v1 = q1[..., 0], q1[..., 1:]
    w2, v2 = q2[..., 0], -q2[..., 1:]  # conjugate of q2
    w = w1 * w2 - np.sum(v1 * v2, axis=-1)
    v = w1[..., None] * v2 + w2[..., None] * v1 + np.cross(v1, v2)
    return 2.0 * np.arctan2(np.linalg.norm(v, axis=-1), np.abs(w))


def shortened_copy(src: Path, end: float, dst: Path) -> Path:
    """Write the scenario ``src`` with ``time.end`` set to ``end`` to ``dst``.

    check_output compares a completed file's frame grid with the scenario's
    own end time, so a shortened run is checked against a shortened copy.
    """
    with open(src) as fh:
        data = yaml.safe_load(fh)
    data["time"]["end"] = float(end)
    with open(dst, "w") as fh:
        yaml.safe_dump(data, fh, sort_keys=False)
    return dst
