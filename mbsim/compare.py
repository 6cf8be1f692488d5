"""Compare two trajectories quantity by quantity (what ``mbsim compare`` reports).

:func:`compare_trajectories` takes two trajectory dicts -- as returned by
:func:`mbsim.io.reader.read_trajectory`, or ``RunSummary.frames_data`` of
:func:`mbsim.driver.run`, or ``ReferenceSolution.frames()`` -- and returns a
:class:`Comparison`: per quantity the largest and the RMS error, where the
largest occurs (time and body, connector or joint), the magnitude scale of the
reference and whether the error is within tolerance.

The second trajectory, B, is the *reference*: tolerances scale with its
magnitude, and with ``interpolate=True`` it is B that is interpolated onto
A's frame times.

Errors
------
Vector quantities (positions, velocities, forces, momenta, joint reactions,
...) are compared by the Euclidean norm of the difference per frame and
body/connector/joint; scalars (connector lengths, energies, joint constraint
errors) by the absolute difference.  Joint quantities are compared when both
trajectories have joints (a ``/joints`` group); a trajectory with joints and
one without are not comparable.
Orientations are compared as the angle of the rotation between the two
(:func:`mbsim.kernels.rotations.quat_angle`), so ``q`` and ``-q`` -- the same
rotation -- are equal.  Where both files hold NaN (the length of a torsional
damper) the value is ignored; where only one does, the error is infinite.

Tolerances
----------
A quantity passes when ``max error <= atol + rtol * scale``, with ``scale``
the largest magnitude of that quantity in B (the norm of the vector, the
absolute value of the scalar; 1 for orientations, the norm of a unit
quaternion, so that an orientation ``rtol`` reads as radians).  Defaults:
``rtol = 1e-6`` (relative, dimensionless) and ``atol = 1e-9`` in the unit of
each quantity (m, rad, m/s, N, J, ...).  ``rtol`` is loose enough for two
runs of the same scenario on different machines or BLAS libraries (which
agree to ~1e-12 in smooth motion) and for runs whose Newton iterations stop
at different points below their tolerance (``integrator.newton.rtol`` 1e-8
by default), and tight enough to catch any change of model, step size or
integrator setting.  ``atol`` only matters where B is (nearly) zero: a moment
of a spring, a dissipated energy without dampers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Optional, Union

import numpy as np

from .kernels.rotations import quat_angle

DEFAULT_RTOL = 1e-6
DEFAULT_ATOL = 1e-9

# Relative tolerance below which two time grids count as the same.
TIME_MATCH_RTOL = 1e-9


@dataclass(frozen=True)
class Quantity:
    """One compared quantity.

    Attributes
    ----------
    name : str
        Name used in reports and in ``--rtol NAME=X``.
    path : str
        OUTPUT.md dataset path.
    unit : str
        Unit of the error (SI input assumed).
    owner : str or None
        ``"bodies"``, ``"connectors"`` or ``"joints"`` when the second axis
        runs over them, None for whole-system series.
    kind : str
        ``"vector"`` (norm of the difference over the last axis),
        ``"angle"`` (quaternions, rotation angle) or ``"scalar"``.
    """

    name: str
    path: str
    unit: str
    owner: Optional[str]
    kind: str


QUANTITIES = (
    Quantity("position", "bodies/position", "m", "bodies", "vector"),
    Quantity("orientation", "bodies/orientation", "rad", "bodies", "angle"),
    Quantity("velocity", "bodies/velocity", "m/s", "bodies", "vector"),
    Quantity("angular_velocity", "bodies/angular_velocity", "rad/s", "bodies", "vector"),
    Quantity("acceleration", "bodies/acceleration", "m/s^2", "bodies", "vector"),
    Quantity("angular_acceleration", "bodies/angular_acceleration", "rad/s^2", "bodies", "vector"),
    Quantity("force", "connectors/force", "N", "connectors", "vector"),
    Quantity("moment", "connectors/moment", "N*m", "connectors", "vector"),
    Quantity("length", "connectors/length", "m", "connectors", "scalar"),
    Quantity("joint_force", "joints/force", "N", "joints", "vector"),
    Quantity("joint_moment", "joints/moment", "N*m", "joints", "vector"),
    Quantity("joint_position_error", "joints/position_error", "m", "joints", "scalar"),
    Quantity("joint_angle_error", "joints/angle_error", "rad", "joints", "scalar"),
    Quantity("kinetic", "energy/kinetic", "J", None, "scalar"),
    Quantity("potential", "energy/potential", "J", None, "scalar"),
    Quantity("dissipated", "energy/dissipated", "J", None, "scalar"),
    Quantity("external_work", "energy/external_work", "J", None, "scalar"),
    Quantity("linear_momentum", "momentum/linear", "kg*m/s", None, "vector"),
    Quantity("angular_momentum", "momentum/angular", "kg*m^2/s", None, "vector"),
)
QUANTITY_NAMES = tuple(q.name for q in QUANTITIES)

# Names that set the tolerance of several quantities at once (`--rtol energy=1e-5`).
GROUPS = {
    "all": QUANTITY_NAMES,
    "bodies": tuple(q.name for q in QUANTITIES if q.owner == "bodies"),
    "connectors": tuple(q.name for q in QUANTITIES if q.owner == "connectors"),
    "joints": tuple(q.name for q in QUANTITIES if q.owner == "joints"),
    "energy": ("kinetic", "potential", "dissipated", "external_work"),
    "momentum": ("linear_momentum", "angular_momentum"),
}


class NotComparable(Exception):
    """The two trajectories cannot be compared frame by frame (different bodies,
    connectors or joints, different time grids without interpolation, no common time span,
    missing or misshapen datasets).  The message says why and what to do."""


@dataclass
class QuantityDiff:
    """Difference of one quantity between A and B.

    Attributes
    ----------
    name, unit : str
        See :class:`Quantity`.
    max_error : float
        Largest error over the compared frames and bodies/connectors [unit];
        ``inf`` where only one file holds NaN.
    rms_error : float
        Root mean square of the errors over the same values [unit].
    scale : float
        Largest magnitude of the quantity in B [unit] (1 for orientations).
    time : float or None
        Time of the frame with the largest error [s].
    item : str or None
        Name of the body, connector or joint with the largest error (None
        for whole-system quantities).
    rtol, atol : float
        Tolerance used (rtol dimensionless, atol in ``unit``).
    values : int
        Number of values compared (frames × bodies, connectors or joints,
        NaN pairs excluded).
    """

    name: str
    unit: str
    max_error: float
    rms_error: float
    scale: float
    time: Optional[float]
    item: Optional[str]
    rtol: float
    atol: float
    values: int

    @property
    def tolerance(self) -> float:
        """``atol + rtol * scale`` [unit]."""
        return self.atol + self.rtol * self.scale

    @property
    def passed(self) -> bool:
        return self.max_error <= self.tolerance

    def to_dict(self) -> dict:
        return {"unit": self.unit, "max_error": self.max_error, "rms_error": self.rms_error,
                "scale": self.scale, "time": self.time, "item": self.item, "rtol": self.rtol,
                "atol": self.atol, "tolerance": self.tolerance, "values": self.values,
                "passed": self.passed}


@dataclass
class Comparison:
    """Outcome of :func:`compare_trajectories`.

    Attributes
    ----------
    quantities : list of QuantityDiff
        In the order of :data:`QUANTITIES`; quantities without values (no
        connectors, no joints, all NaN) are listed in ``skipped`` instead.
    skipped : dict
        ``{name: reason}`` of quantities not compared.
    frames : int
        Frames compared.
    frames_a, frames_b : int
        Frames in A and B.
    t_first, t_last : float
        Time span compared [s].
    interpolated : bool
        Whether B was interpolated onto A's times.
    bodies, connectors : list of str
        Names (``#i`` where neither trajectory carries names).
    status_a, status_b : str or None
        Root ``status`` attribute of each file (None for in-memory frames).
    warnings : list of str
        Things to know that do not make the files incomparable.
    joints : list of str
        Joint names (empty without joints).
    """

    quantities: list
    skipped: dict
    frames: int
    frames_a: int
    frames_b: int
    t_first: float
    t_last: float
    interpolated: bool
    bodies: list
    connectors: list
    status_a: Optional[str] = None
    status_b: Optional[str] = None
    warnings: list = field(default_factory=list)
    joints: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every compared quantity within tolerance."""
        return all(q.passed for q in self.quantities)

    @property
    def failures(self) -> list:
        """The quantities beyond tolerance."""
        return [q for q in self.quantities if not q.passed]

    def __getitem__(self, name: str) -> QuantityDiff:
        for q in self.quantities:
            if q.name == name:
                return q
        raise KeyError(name)

    def to_dict(self) -> dict:
        """Plain-data form (``mbsim compare --json``)."""
        return {
            "passed": self.passed, "frames": self.frames, "frames_a": self.frames_a, "frames_b": self.frames_b,
            "t_first": self.t_first, "t_last": self.t_last, "interpolated": self.interpolated,
            "bodies": list(self.bodies), "connectors": list(self.connectors), "joints": list(self.joints),
            "status_a": self.status_a, "status_b": self.status_b,
            "quantities": {q.name: q.to_dict() for q in self.quantities},
            "failures": [q.name for q in self.failures],
            "skipped": dict(self.skipped), "warnings": list(self.warnings),
        }


Tolerance = Union[None, float, Mapping[str, float]]


def resolve_tolerances(rtol: Tolerance = None, atol: Tolerance = None) -> dict:
    """Tolerance of every quantity from defaults, global values and per-quantity overrides.

    Parameters
    ----------
    rtol, atol : float or mapping, optional
        A number applies to every quantity.  A mapping maps quantity names
        (:data:`QUANTITY_NAMES`) or group names (:data:`GROUPS`: ``all``,
        ``bodies``, ``connectors``, ``joints``, ``energy``, ``momentum``) to values; a
        quantity's own name beats a group, a group beats ``all``, whatever
        the order.  ``rtol`` is dimensionless, ``atol`` in the quantity's
        unit.  Unset: :data:`DEFAULT_RTOL`, :data:`DEFAULT_ATOL`.

    Returns
    -------
    dict
        ``{name: (rtol, atol)}`` for every quantity.

    Raises
    ------
    ValueError
        An unknown name or a negative / non-finite value.
    """
    out = {n: [DEFAULT_RTOL, DEFAULT_ATOL] for n in QUANTITY_NAMES}
    for slot, spec, what in ((0, rtol, "rtol"), (1, atol, "atol")):
        if spec is None:
            continue
        if not isinstance(spec, Mapping):
            spec = {"all": spec}
        # Apply general before specific so that the specific value wins.
        rank = {"all": 0}
        for key in sorted(spec, key=lambda k: rank.get(k, 1 if k in GROUPS else 2)):
            value = float(spec[key])
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{what} for {key} must be a finite number >= 0, got {spec[key]!r}")
            if key in GROUPS:
                names = GROUPS[key]
            elif key in out:
                names = (key,)
            else:
                raise ValueError(f"unknown quantity {key!r} in {what}; choose from "
                                 f"{', '.join(QUANTITY_NAMES)} or a group: {', '.join(GROUPS)}")
            for n in names:
                out[n][slot] = value
    return {n: tuple(v) for n, v in out.items()}


def compare_trajectories(a: dict, b: dict, *, rtol: Tolerance = None, atol: Tolerance = None,
                         interpolate: bool = False, labels=("A", "B")) -> Comparison:
    """Compare trajectory A with the reference trajectory B.

    Parameters
    ----------
    a, b : dict
        Trajectories keyed by OUTPUT.md dataset paths (``"time"`` (T,),
        ``"bodies/position"`` (T, B, 3), ...), optionally with
        ``"bodies/name"``, ``"connectors/name"``, ``"joints/name"`` and
        ``"attrs"`` (as from :func:`mbsim.io.reader.read_trajectory`); the
        ``joints/`` datasets only where there are joints.
    rtol, atol : float or mapping, optional
        See :func:`resolve_tolerances`.
    interpolate : bool
        If the time grids differ, interpolate B linearly onto those times of
        A that lie inside both spans, and compare there.  Quaternions are
        interpolated by normalised lerp after flipping each of B's
        quaternions to the sign of its predecessor (so the lerp takes the
        short way); for the small rotation between two stored frames this
        differs from slerp by O(angle³).  Linear interpolation has an error
        of O(Δt_B²) times the second derivative: give B a grid fine enough
        for the tolerance asked.
    labels : tuple of str
        What to call A and B in messages (file names in the command line).

    Returns
    -------
    Comparison

    Raises
    ------
    NotComparable
        Different bodies, connectors or joints (names, order or count), different
        time grids without ``interpolate``, no common time span, missing
        ``time`` or misshapen datasets.
    ValueError
        Bad tolerances (see :func:`resolve_tolerances`).
    """
    tol = resolve_tolerances(rtol, atol)
    la, lb = labels
    ta, tb = _times(a, la), _times(b, lb)
    bodies = _names(a, b, "bodies", labels)
    connectors = _names(a, b, "connectors", labels)
    joints = _names(a, b, "joints", labels)
    warnings = []

    ia, b_at, interpolated = _common_frames(ta, tb, b, labels, interpolate)
    if interpolated and ia.size < ta.size:
        warnings.append(f"{ta.size - ia.size} of {ta.size} frames of {la} lie outside the time span of {lb} "
                        f"(t = {_g(tb[0])} … {_g(tb[-1])} s) and were not compared")
    t = ta[ia]

    diffs, skipped = [], {}
    for q in QUANTITIES:
        if q.owner == "joints" and not joints:
            skipped[q.name] = "no joints"
            continue
        if q.path not in a or q.path not in b:
            missing = " and ".join(l for l, d in ((la, a), (lb, b)) if q.path not in d)
            skipped[q.name] = f"no /{q.path} in {missing}"
            continue
        va = np.asarray(a[q.path], dtype=float)
        vb = np.asarray(b_at(q), dtype=float)
        if va.shape[0] != ta.size:
            raise NotComparable(f"{la}: /{q.path} has {va.shape[0]} frames but /time has {ta.size}; "
                                f"the file is damaged or not written by mbsim")
        va = va[ia]
        if va.shape != vb.shape:
            raise NotComparable(f"/{q.path} has shape {va.shape[1:]} per frame in {la} but {vb.shape[1:]} "
                                f"in {lb}; the trajectories do not describe the same model")
        names = {"bodies": bodies, "connectors": connectors, "joints": joints}.get(q.owner)
        d = _diff(q, va, vb, t, names, *tol[q.name])
        if d is None:
            skipped[q.name] = (f"no {q.owner}" if q.owner and not names else "NaN in both everywhere")
        else:
            diffs.append(d)

    status_a, status_b = (_attr(d, "status") for d in (a, b))
    for label, d, status in ((la, a, status_a), (lb, b, status_b)):
        if status is not None and status != "completed":
            msg = _attr(d, "message")
            warnings.append(f"{label} has status '{status}'" + (f" ({msg})" if msg and msg != status else "")
                            + ": it may not cover the whole run")
    na, nb = _attr(a, "scenario_name"), _attr(b, "scenario_name")
    if na is not None and nb is not None and na != nb:
        warnings.append(f"the scenario names differ ({la}: '{na}', {lb}: '{nb}')")
    return Comparison(diffs, skipped, int(ia.size), int(ta.size), int(tb.size), float(t[0]), float(t[-1]),
                      interpolated, bodies, connectors, status_a, status_b, warnings, joints)


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def _g(x) -> str:
    return f"{float(x):.6g}"


def _attr(d: dict, key: str):
    attrs = d.get("attrs")
    if not isinstance(attrs, Mapping) or key not in attrs:
        return None
    v = attrs[key]
    return v.decode() if isinstance(v, bytes) else str(v)


def _times(d: dict, label: str) -> np.ndarray:
    if "time" not in d:
        raise NotComparable(f"{label} has no /time dataset; it is not an mbsim trajectory")
    t = np.asarray(d["time"], dtype=float).reshape(-1)
    if t.size == 0:
        raise NotComparable(f"{label} holds no frames (the run stopped before its first frame was written)")
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        raise NotComparable(f"{label}: /time is not a non-decreasing series of finite times; "
                            f"the file is damaged or not written by mbsim")
    return t


def _count(d: dict, group: str) -> Optional[int]:
    """Number of bodies/connectors/joints, from the names or a per-frame dataset (None if unknown;
    0 joints where there is no ``joints/`` dataset: OUTPUT.md writes the group only when J > 0)."""
    if f"{group}/name" in d:
        return len(d[f"{group}/name"])
    for q in QUANTITIES:
        if q.owner == group and q.path in d:
            return int(np.shape(d[q.path])[1])
    return 0 if group == "joints" else None


def _names(a: dict, b: dict, group: str, labels) -> list:
    """The common body/connector names; NotComparable if they differ."""
    key = f"{group}/name"
    na = [str(x) for x in a[key]] if key in a else None
    nb = [str(x) for x in b[key]] if key in b else None
    what = group[:-1] if group in ("connectors", "joints") else "body"
    if na is not None and nb is not None and na != nb:
        la, lb = labels
        only_a = [n for n in na if n not in nb]
        only_b = [n for n in nb if n not in na]
        if only_a or only_b:
            detail = "; ".join(s for s in (f"only in {la}: {', '.join(only_a)}" if only_a else "",
                                           f"only in {lb}: {', '.join(only_b)}" if only_b else "") if s)
        else:
            detail = f"same names in another order ({la}: {', '.join(na)}; {lb}: {', '.join(nb)})"
        raise NotComparable(f"the {group} differ ({detail}); a comparison needs the same {what} names "
                            f"in the same order, i.e. results of the same model")
    ca, cb = _count(a, group), _count(b, group)
    if ca is not None and cb is not None and ca != cb:
        raise NotComparable(f"{labels[0]} has {ca} {group} but {labels[1]} has {cb}; "
                            f"a comparison needs results of the same model")
    names = na if na is not None else nb
    if names is None:
        names = [f"#{i}" for i in range(ca if ca is not None else (cb or 0))]
    return names


def _describe_grid(t: np.ndarray) -> str:
    step = f", every {_g(t[1] - t[0])} s" if t.size > 1 else ""
    return f"{t.size} frames, t = {_g(t[0])} … {_g(t[-1])} s{step}"


def _common_frames(ta, tb, b, labels, interpolate):
    """Indices of A's frames to compare, an accessor of B at those frames, whether B was interpolated."""
    la, lb = labels
    scale = max(float(np.abs(ta).max()), float(np.abs(tb).max()))
    if ta.size == tb.size and np.all(np.abs(ta - tb) <= TIME_MATCH_RTOL * scale):
        return np.arange(ta.size), (lambda q: b[q.path]), False
    if not interpolate:
        raise NotComparable(f"the time grids differ ({la}: {_describe_grid(ta)}; {lb}: {_describe_grid(tb)}); "
                            f"pass --interpolate (interpolate=True) to compare {lb} interpolated linearly onto "
                            f"the times of {la}")
    eps = TIME_MATCH_RTOL * scale
    ia = np.flatnonzero((ta >= tb[0] - eps) & (ta <= tb[-1] + eps))
    if ia.size == 0:
        raise NotComparable(f"the time spans do not overlap ({la}: t = {_g(ta[0])} … {_g(ta[-1])} s; "
                            f"{lb}: t = {_g(tb[0])} … {_g(tb[-1])} s); nothing to compare")
    t = np.clip(ta[ia], tb[0], tb[-1])
    if tb.size == 1:
        k, w = np.zeros(t.size, dtype=int), np.zeros(t.size)
    else:
        # Interval [tb[k], tb[k+1]] holding t; repeated times in B (zero-length intervals) get w = 0.
        k = np.clip(np.searchsorted(tb, t, side="right") - 1, 0, tb.size - 2)
        h = tb[k + 1] - tb[k]
        w = np.divide(t - tb[k], h, out=np.zeros_like(t), where=h > 0)
    cache = {}

    def b_at(q):
        if q.path not in cache:
            v = np.asarray(b[q.path], dtype=float)
            if v.shape[0] != tb.size:
                raise NotComparable(f"{lb}: /{q.path} has {v.shape[0]} frames but /time has {tb.size}; "
                                    f"the file is damaged or not written by mbsim")
            if tb.size == 1:
                cache[q.path] = v[k]
            else:
                if q.kind == "angle":
                    v = _align_signs(v)
                ww = w.reshape((-1,) + (1,) * (v.ndim - 1))
                out = (1.0 - ww) * v[k] + ww * v[k + 1]
                if q.kind == "angle":
                    out /= np.linalg.norm(out, axis=-1, keepdims=True)
                cache[q.path] = out
        return cache[q.path]

    return ia, b_at, True


def _align_signs(q: np.ndarray) -> np.ndarray:
    """Quaternions (T, n, 4) with each frame's sign flipped to agree with the previous frame.

    The sign of frame k relative to frame 0 is the product of the signs of
    the consecutive dot products up to k (a cumulative product, no loop).
    """
    dots = np.einsum("tnk,tnk->tn", q[1:], q[:-1])
    flips = np.where(dots < 0.0, -1.0, 1.0)
    sign = np.concatenate((np.ones((1,) + flips.shape[1:]), np.cumprod(flips, axis=0)))
    return q * sign[..., None]


def _diff(q: Quantity, va, vb, t, names, rtol, atol) -> Optional[QuantityDiff]:
    """Errors of one quantity, or None if there is nothing to compare."""
    if q.kind == "angle":
        err = quat_angle(va, vb)
        mag = np.linalg.norm(vb, axis=-1)
        nan_a, nan_b = np.isnan(va).any(axis=-1), np.isnan(vb).any(axis=-1)
    elif q.kind == "vector":
        err = np.linalg.norm(va - vb, axis=-1)
        mag = np.linalg.norm(vb, axis=-1)
        nan_a, nan_b = np.isnan(va).any(axis=-1), np.isnan(vb).any(axis=-1)
    else:
        err, mag = np.abs(va - vb), np.abs(vb)
        nan_a, nan_b = np.isnan(va), np.isnan(vb)
    # NaN in both: no value there (ignored); NaN in one only: the files disagree.
    err = np.where(nan_a ^ nan_b, np.inf, err)
    err = np.where(np.isnan(err), np.inf, err)  # inf - inf where both overflowed: not equal either
    keep = ~(nan_a & nan_b)
    if err.size == 0 or not keep.any():
        return None
    e = np.where(keep, err, -np.inf)
    flat = int(np.argmax(e))
    idx = np.unravel_index(flat, e.shape)
    vals = err[keep]
    finite_mag = mag[keep & ~nan_b]
    scale = float(finite_mag.max()) if finite_mag.size else 0.0
    item = names[idx[1]] if names is not None and e.ndim > 1 else None
    return QuantityDiff(q.name, q.unit, float(vals.max()), float(np.sqrt(np.mean(vals ** 2))), scale,
                        float(t[idx[0]]), item, rtol, atol, int(vals.size))


__all__ = ["compare_trajectories", "resolve_tolerances", "Comparison", "QuantityDiff", "Quantity",
           "NotComparable", "QUANTITIES", "QUANTITY_NAMES", "GROUPS", "DEFAULT_RTOL", "DEFAULT_ATOL"]
