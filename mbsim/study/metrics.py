"""Metrics of a parameter study: one number per case, from the result's named quantities.

A metric is ``{quantity: Q, reduce: R, window: [t0, t1]}`` -- a small explicit
grammar, never evaluated as code:

- ``Q`` names a per-frame quantity of the result file (OUTPUT.md):
  ``bodies[NAME].position|velocity|angular_velocity|acceleration|angular_acceleration[i]``,
  ``bodies[NAME].orientation[i]`` (quaternion component, i = 0 is w),
  ``bodies[NAME].angle`` (the rotation angle of the orientation, rad),
  ``connectors[NAME].force|moment[i]``, ``connectors[NAME].length``,
  ``joints[NAME].force|moment[i]``, ``joints[NAME].position_error|angle_error``,
  ``energy.kinetic|potential|dissipated|external_work|balance``,
  ``momentum.linear|angular[i]``, ``solver.iterations|residual_norm|step``.
  A vector without ``[i]`` is its magnitude (Euclidean norm); i = 0, 1, 2 is x, y, z.
- ``R`` is ``final`` (the last frame in the window), ``max``, ``min``, ``mean``,
  ``rms`` (over the stored frames in the window, which are equally spaced),
  ``time_of_max`` or ``time_of_min`` (the time of the first frame where the
  maximum or minimum is reached, s).
- ``window`` (optional, default the whole run) keeps the frames with
  t0 ≤ t ≤ t1 (within 1e-9 of the larger end's magnitude).

Units are those the writer stores in each dataset's ``units`` attribute
(:data:`mbsim.io.writer.FRAME_DATASETS`), ``s`` for the times of extremes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..io.writer import FRAME_DATASETS, JOINT_DATASETS
from ..scenario.yamlnodes import suggest
from .keypaths import KeyPathError, Segment, format_path, parse

REDUCTIONS = ("final", "max", "min", "mean", "rms", "time_of_max", "time_of_min")

# group -> leaf -> number of components (0: a scalar per frame)
_LEAVES = {
    "bodies": {"position": 3, "velocity": 3, "angular_velocity": 3, "acceleration": 3, "angular_acceleration": 3,
               "orientation": 4, "angle": 0},
    "connectors": {"force": 3, "moment": 3, "length": 0},
    "joints": {"force": 3, "moment": 3, "position_error": 0, "angle_error": 0},
    "energy": {"kinetic": 0, "potential": 0, "dissipated": 0, "external_work": 0, "balance": 0},
    "momentum": {"linear": 3, "angular": 3},
    "solver": {"iterations": 0, "residual_norm": 0, "step": 0},
}
_NAMED = ("bodies", "connectors", "joints")
_WHAT = {"bodies": "body", "connectors": "connector", "joints": "joint"}
_WINDOW_RTOL = 1e-9


class MetricError(ValueError):
    """A metric quantity that does not name a quantity of the result; the message says why."""


@dataclass(frozen=True)
class Quantity:
    """A parsed metric quantity: the dataset, the item (body, connector, joint) and the component."""

    text: str
    group: str
    leaf: str
    item: Optional[str]  # name of the body, connector or joint (None for energy, momentum, solver)
    component: Optional[int]  # None: the magnitude of a vector, or a scalar quantity
    units: str

    @property
    def dataset(self) -> str:
        """The OUTPUT.md path of the per-frame dataset it is read from."""
        if self.leaf == "angle":
            return "bodies/orientation"
        if self.group == "energy" and self.leaf == "balance":
            return "energy/kinetic"  # (with the other three energies)
        return f"{self.group}/{self.leaf}"


def parse_quantity(text: str, names: dict) -> Quantity:
    """Check quantity ``text`` against the scenario's ``names`` (``{"bodies": [...], "connectors": [...],
    "joints": [...]}``) and return it (MetricError saying why not, with did-you-mean)."""
    try:
        segs = parse(text)
    except KeyPathError as exc:
        raise MetricError(str(exc)) from None
    group = segs[0].value
    if group not in _LEAVES:
        raise MetricError(f"unknown quantity group {group!r}{suggest(group, _LEAVES)}; expected one of "
                          f"{', '.join(_LEAVES)}")
    rest = list(segs[1:])
    item = None
    if group in _NAMED:
        if not rest or rest[0].kind == "key":
            raise MetricError(f"select one of the {group} by name, e.g. {group}[NAME].{next(iter(_LEAVES[group]))}")
        sel = rest.pop(0)
        have = list(names.get(group, ()))
        if not have:
            raise MetricError(f"the scenario has no {group}")
        if sel.kind == "index":
            if sel.value >= len(have):
                raise MetricError(f"the scenario has {len(have)} {group}: no index {sel.value}")
            item = have[sel.value]
        elif sel.value not in have:
            shown = ", ".join(have[:20]) + (", …" if len(have) > 20 else "")
            raise MetricError(f"no {_WHAT[group]} named {sel.value!r}{suggest(sel.value, have)}; its {group}: {shown}")
        else:
            item = sel.value
    leaves = _LEAVES[group]
    if not rest or rest[0].kind != "key":
        raise MetricError(f"name what of {format_path(segs[:len(segs) - len(rest)])} to take: one of "
                          f"{', '.join(leaves)}")
    leaf = rest.pop(0).value
    if leaf not in leaves:
        raise MetricError(f"unknown quantity {leaf!r}{suggest(leaf, leaves)}; "
                          f"{format_path(segs[:len(segs) - len(rest) - 1])} has {', '.join(leaves)}")
    n = leaves[leaf]
    component = None
    if rest:
        sel = rest.pop(0)
        if n == 0:
            raise MetricError(f"{leaf} is a scalar per frame: it has no components {sel}")
        if sel.kind != "index" or sel.value >= n:
            raise MetricError(f"{leaf} has components [0] … [{n - 1}] ({'w, x, y, z' if n == 4 else 'x, y, z'}), "
                              f"got {sel}")
        component = sel.value
    if rest:
        raise MetricError(f"nothing follows {format_path(segs[:len(segs) - len(rest)])}; got {format_path(rest)}")
    return Quantity(text, group, leaf, item, component, _units(group, leaf))


def _units(group: str, leaf: str) -> str:
    if leaf == "angle":
        return "rad"
    if group == "energy" and leaf == "balance":
        return "J"
    tables = {**FRAME_DATASETS, **JOINT_DATASETS}
    return tables[f"{group}/{leaf}"][1]


def series(q: Quantity, result) -> np.ndarray:
    """The (T,) values of quantity ``q`` over the frames of ``result`` (a :class:`mbsim.api.Result`)."""
    if q.group == "energy" and q.leaf == "balance":
        return np.asarray(result.energy.balance, dtype=float)
    data = np.asarray(result[q.dataset], dtype=float)
    if q.group in _NAMED:
        index = {"bodies": result.bodies, "connectors": result.connectors, "joints": result.joints}[q.group]
        data = data[:, list(index).index(q.item)]
    if q.leaf == "angle":
        return 2.0 * np.arctan2(np.linalg.norm(data[:, 1:], axis=-1), np.abs(data[:, 0]))
    if data.ndim == 1:
        return data
    if q.component is not None:
        return data[:, q.component]
    return np.linalg.norm(data, axis=-1)


def window_mask(time: np.ndarray, window: Optional[tuple]) -> np.ndarray:
    """The frames with t0 ≤ t ≤ t1 (within 1e-9 of the larger end's magnitude); all without a window."""
    time = np.asarray(time, dtype=float)
    if window is None:
        return np.ones(time.shape, dtype=bool)
    t0, t1 = window
    tol = _WINDOW_RTOL * max(1.0, abs(t0), abs(t1))
    return (time >= t0 - tol) & (time <= t1 + tol)


def reduce(values: np.ndarray, time: np.ndarray, how: str, window: Optional[tuple] = None) -> float:
    """One number from ``values`` (T,) at ``time`` (T,): a reduction of :data:`REDUCTIONS` over the
    frames in ``window`` (NaN when no frame lies in it)."""
    if how not in REDUCTIONS:
        raise ValueError(f"unknown reduction {how!r}; expected one of {', '.join(REDUCTIONS)}")
    keep = window_mask(time, window)
    v, t = np.asarray(values, dtype=float)[keep], np.asarray(time, dtype=float)[keep]
    if v.size == 0:
        return math.nan
    if how == "final":
        return float(v[-1])
    if how == "max":
        return float(np.max(v))
    if how == "min":
        return float(np.min(v))
    if how == "mean":
        return float(np.mean(v))
    if how == "rms":
        return float(np.sqrt(np.mean(v * v)))
    if how == "time_of_max":
        return float(t[np.argmax(v)])
    return float(t[np.argmin(v)])


@dataclass(frozen=True)
class Metric:
    """A validated metric of a study."""

    name: str
    quantity: Quantity
    reduce: str
    window: Optional[tuple]

    @property
    def units(self) -> str:
        return "s" if self.reduce.startswith("time_of") else self.quantity.units

    @property
    def description(self) -> str:
        where = "" if self.window is None else f" for {self.window[0]:g} s ≤ t ≤ {self.window[1]:g} s"
        return f"{self.reduce} of {self.quantity.text}{where}"

    def evaluate(self, result) -> float:
        """The metric of one case's result."""
        return reduce(series(self.quantity, result), result.time, self.reduce, self.window)


def evaluate_all(metrics, result) -> dict:
    """``{name: value}`` of every metric on ``result``."""
    return {m.name: m.evaluate(result) for m in metrics}


__all__ = ["REDUCTIONS", "Metric", "MetricError", "Quantity", "parse_quantity", "series", "reduce", "window_mask",
           "evaluate_all", "Segment"]
