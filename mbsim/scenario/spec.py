"""Frozen, validated scenario specifications (SCENARIO.md, format version 1).

Everything here has already passed validation: names resolve, numbers are
finite, quaternions are unit, axes are unit, inertias are symmetric positive
definite, defaults are filled in.  Nothing downstream re-checks user input.

Arrays stored in the specs are read-only numpy arrays (float64).  The
dataclasses compare by identity (``eq=False``) because they hold arrays.
"""
from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Mapping, Optional

import numpy as np

WORLD = "world"
"""Name of the implicit fixed body at the origin with identity orientation."""

from ..elements.torsional import JOINT_PROJECTION, PROJECTIONS  # noqa: E402,F401  (the torsional damper's own)
TANGENTS = ("consistent", "seed")
METHODS = ("generalized-alpha",)  # the time integrators (mbsim.integrators.INTEGRATORS)


def frozen_array(values, shape=None) -> np.ndarray:
    """Return a read-only float64 copy of ``values`` (optionally reshaped)."""
    a = np.array(values, dtype=float)
    if shape is not None:
        a = a.reshape(shape)
    a.setflags(write=False)
    return a


# --------------------------------------------------------------------------
# time functions (SCENARIO.md, loads)
# --------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Constant:
    """``{constant: c}``: s(t) = c."""

    value: float = 1.0

    def __call__(self, t):
        return self.value + 0.0 * np.asarray(t, dtype=float)

    def derivative(self, t, order: int = 1):
        """d^order s/dt^order at t (order 0, 1 or 2; the same for every time function)."""
        return self(t) if order == 0 else 0.0 * np.asarray(t, dtype=float)


@dataclass(frozen=True, eq=False)
class Ramp:
    """``{ramp: {t0, t1, from, to}}``: u before t0, w after t1, linear between (t1 > t0)."""

    t0: float
    t1: float
    start: float  # 'from'
    end: float  # 'to'

    def __call__(self, t):
        t = np.asarray(t, dtype=float)
        s = np.clip((t - self.t0) / (self.t1 - self.t0), 0.0, 1.0)
        return self.start + (self.end - self.start) * s

    def derivative(self, t, order: int = 1):
        """The slope between t0 and t1 (0 outside, and at the kinks the one-sided value from
        the left); the second derivative is 0 (the kinks' impulses are not represented)."""
        if order == 0:
            return self(t)
        t = np.asarray(t, dtype=float)
        if order == 2:
            return 0.0 * t
        inside = (t > self.t0) & (t <= self.t1)
        return np.where(inside, (self.end - self.start) / (self.t1 - self.t0), 0.0)


@dataclass(frozen=True, eq=False)
class SmoothRamp:
    """``{smooth_ramp: {t0, t1, from, to}}``: u before t0, w after t1, the quintic
    ``u + (w − u)(10τ³ − 15τ⁴ + 6τ⁵)``, τ = (t − t0)/(t1 − t0), between: zero velocity and
    acceleration at both ends."""

    t0: float
    t1: float
    start: float  # 'from'
    end: float  # 'to'

    def __call__(self, t):
        return self.derivative(t, 0)

    def derivative(self, t, order: int = 1):
        t = np.asarray(t, dtype=float)
        h = self.t1 - self.t0
        tau = np.clip((t - self.t0) / h, 0.0, 1.0)
        if order == 0:
            shape = tau ** 3 * (10.0 - 15.0 * tau + 6.0 * tau * tau)
            return self.start + (self.end - self.start) * shape
        if order == 1:
            shape = 30.0 * tau ** 2 * (1.0 - tau) ** 2 / h
        else:
            shape = 60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau) / (h * h)
        return (self.end - self.start) * shape


@dataclass(frozen=True, eq=False)
class Sine:
    """``{sine: {amplitude, frequency, phase, offset}}``: o + A sin(2π f t + p)."""

    amplitude: float
    frequency: float
    phase: float = 0.0
    offset: float = 0.0

    def __call__(self, t):
        t = np.asarray(t, dtype=float)
        return self.offset + self.amplitude * np.sin(2.0 * np.pi * self.frequency * t + self.phase)

    def derivative(self, t, order: int = 1):
        if order == 0:
            return self(t)
        t = np.asarray(t, dtype=float)
        w = 2.0 * np.pi * self.frequency
        x = w * t + self.phase
        if order == 1:
            return self.amplitude * w * np.cos(x)
        return -self.amplitude * w * w * np.sin(x)


@dataclass(frozen=True, eq=False)
class Table:
    """``{table: [[t, s], ...]}``: piecewise linear, held constant outside (times strictly increasing)."""

    times: np.ndarray  # (k,)
    values: np.ndarray  # (k,)

    def __call__(self, t):
        return np.interp(np.asarray(t, dtype=float), self.times, self.values)

    def derivative(self, t, order: int = 1):
        """The slope of the segment holding t (from the left at a row's time; 0 outside the
        table); the second derivative is 0 (the kinks' impulses are not represented)."""
        if order == 0:
            return self(t)
        t = np.asarray(t, dtype=float)
        if order == 2:
            return 0.0 * t
        slopes = np.diff(self.values) / np.diff(self.times)
        seg = np.searchsorted(self.times, t, side="left") - 1  # t in (times[seg], times[seg + 1]]
        inside = (seg >= 0) & (seg < len(slopes))
        return np.where(inside, slopes[np.clip(seg, 0, len(slopes) - 1)], 0.0)


TimeFunction = Constant | Ramp | SmoothRamp | Sine | Table


# --------------------------------------------------------------------------
# model parts
# --------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class BodySpec:
    """A rigid body.  Reference point = centre of mass.

    ``inertia`` is the full 3×3 inertia in the body's own axes (principal
    moments are expanded to a diagonal matrix); zeros for a fixed body given
    none.  ``mass`` is 0.0 for a fixed body given none (OUTPUT.md stores 0
    for fixed bodies in any case).  ``orientation`` is a unit quaternion
    ``[w, x, y, z]``, body-to-world.
    """

    name: str
    fixed: bool
    mass: float
    inertia: np.ndarray  # (3, 3)
    position: np.ndarray  # (3,)
    orientation: np.ndarray  # (4,)
    velocity: np.ndarray  # (3,)
    angular_velocity: np.ndarray  # (3,) world frame
    line: Optional[int] = None


@dataclass(frozen=True, eq=False)
class ConnectorSpec:
    """A connector between body A (``body_a``) and body B (``body_b``).

    ``type`` is a registered element kind (:mod:`mbsim.elements`; the alias
    ``dashpot`` is stored as ``damper``).  Fields that a type does not use are None:

    - spring: ``points`` (2, 3) world points at t = 0, ``stiffness`` k,
      ``rest_length`` L0 (default already resolved to the initial distance);
    - damper: ``points``, ``damping`` ε_c;
    - torsional_damper: ``damping`` χ_r, ``projection`` in PROJECTIONS
      (resolved from ``joint`` when given), ``axis`` the unit axis at t = 0
      (world frame; None for P1 and none), ``joint`` as written (or None).
    """

    name: str
    type: str
    body_a: str
    body_b: str
    points: Optional[np.ndarray] = None  # (2, 3)
    stiffness: Optional[float] = None
    rest_length: Optional[float] = None
    damping: Optional[float] = None
    projection: Optional[str] = None
    axis: Optional[np.ndarray] = None  # (3,) unit
    joint: Optional[str] = None
    line: Optional[int] = None
    params: Mapping[str, object] = field(default_factory=dict)  # a kind's values that have no field above


_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\<>:"|?*]')


def safe_file_name(name: str, limit: int = 200) -> str:
    """``name`` as one file name in any directory on any system: path separators, control
    characters and the characters Windows reserves become ``_``, leading and trailing dots and
    spaces go (no ``..``, no hidden file), at most ``limit`` characters; ``result`` if nothing is left."""
    out = _UNSAFE.sub("_", name).strip(" .")[:limit].strip(" .")
    return out or "result"


JOINT_TYPES = ("spherical", "revolute", "prismatic", "cylindrical", "planar", "universal", "lock", "distance")
DRIVEN = {"revolute": ("angle",), "prismatic": ("displacement",), "cylindrical": ("angle", "displacement")}
"""The drives each joint type may carry (SCENARIO.md, joints)."""


@dataclass(frozen=True, eq=False)
class JointSpec:
    """A kinematic joint between body A (``body_a``) and body B (``body_b``) (SCENARIO.md, joints;
    THEORY §11).  Fields a type does not use are None:

    - ``point`` (3,): the joint's origin at t = 0, world frame (every type but distance);
    - ``axis`` (3,): unit axis at t = 0 (revolute, prismatic, cylindrical, planar);
    - ``axes`` (2, 3): unit axes at t = 0, ``axes[0]`` fixed in A, ``axes[1]`` in B (universal);
    - ``points`` (2, 3) and ``length`` > 0 (resolved: the initial distance by default) (distance);
    - ``angle``, ``displacement``: the drive's time function F(t), F(0) = 0 (DRIVEN types).
    """

    name: str
    type: str  # one of JOINT_TYPES
    body_a: str
    body_b: str
    point: Optional[np.ndarray] = None
    axis: Optional[np.ndarray] = None
    axes: Optional[np.ndarray] = None
    points: Optional[np.ndarray] = None
    length: Optional[float] = None
    angle: Optional[object] = None  # TimeFunction
    displacement: Optional[object] = None  # TimeFunction
    line: Optional[int] = None
    removed: tuple = ()  # equations dropped as redundant (set by the model at t = 0, never by the loader)
    # joint stops (THEORY §13): ((coordinate "angle" | "displacement", lower, upper, stiffness, damping), …),
    # an absent bound ±inf
    stops: tuple = ()


@dataclass(frozen=True, eq=False)
class LoadSpec:
    """A force through the centre of mass (``type='force'``) or a torque on a moving body."""

    type: str  # 'force' | 'torque'
    body: str
    vector: np.ndarray  # (3,) world frame
    scale: TimeFunction = field(default_factory=Constant)
    line: Optional[int] = None
    name: str = ""  # ``name``, default ``<type>-<index>`` (force-0, torque-1, ...): an input of mbsim.linearize


# time.controller: the rules of mbsim.stepping.ErrorControl (its CONTROLLERS: stepping imports nothing of
# mbsim, the layers of docs/develop.md; tests/verification/test_error_control.py checks they agree)
STEP_CONTROLLERS = ("pi", "elementary")


@dataclass(frozen=True)
class TimeSpec:
    """``time``: end and step; with ``adaptive`` the step is the initial and
    largest one and a failed step is halved down to ``min_step``.  With a
    ``tolerance`` (``rtol``, ``atol``) the steps are chosen by their local error
    (THEORY §14, :class:`mbsim.stepping.ErrorControl`): ``step`` is the first
    one, ``max_step`` (default: unbounded) the largest, ``min_step`` the
    smallest."""

    end: float
    step: float
    adaptive: bool = False
    min_step: Optional[float] = None  # resolved by the loader: default 1e-6 · step
    rtol: Optional[float] = None  # time.tolerance.rtol (None: fixed steps, or adaptive cut-back only)
    atol: Optional[float] = None  # time.tolerance.atol [m, rad] (resolved by the loader: default rtol)
    max_step: Optional[float] = None  # time.max_step [s] (None: unbounded)
    controller: str = "pi"  # time.controller (an mbsim extension): 'pi' or 'elementary'

    @property
    def controlled(self) -> bool:
        """Whether the steps are chosen by their error (``time.tolerance``)."""
        return self.rtol is not None


@dataclass(frozen=True)
class IntegratorSpec:
    """``integrator``; ``method`` (an mbsim extension) names the time integrator (METHODS: the keys of
    :data:`mbsim.integrators.INTEGRATORS`, a test checks it); ``modified`` (an mbsim extension,
    ``newton.modified``) reuses the factorized tangent across iterations and steps while Newton
    contracts fast."""

    method: str = "generalized-alpha"
    rho_inf: float = 0.9
    tangent: str = "consistent"
    max_iterations: int = 25
    rtol: float = 1e-8
    atol: float = 1e-10
    modified: bool = True
    redundant: str = "remove"  # integrator.joints.redundant: 'remove' | 'refuse'
    velocities: str = "project"  # integrator.joints.velocities: 'project' | 'refuse'


@dataclass(frozen=True)
class StaticsSpec:
    """``statics``: how ``mbsim statics`` (and ``initial: equilibrium``) searches the equilibrium (THEORY §12):
    loads and drives at ``time``; ``load_steps`` the first increment of the load factor (None: automatic,
    the whole load first); ``rtol``/``atol`` (None: ``integrator.newton``'s)."""

    time: float = 0.0
    load_steps: Optional[float] = None
    rtol: Optional[float] = None
    atol: Optional[float] = None


@dataclass(frozen=True)
class OutputSpec:
    interval: float  # resolved: defaults to time.step
    file: Optional[str] = None  # None -> outputs/<name>.h5


@dataclass(frozen=True, eq=False)
class Scenario:
    """A complete validated scenario.  ``text`` is the file exactly as read."""

    name: str
    description: str
    gravity: np.ndarray  # (3,)
    time: TimeSpec
    integrator: IntegratorSpec
    output: OutputSpec
    bodies: tuple[BodySpec, ...]
    connectors: tuple[ConnectorSpec, ...] = ()
    loads: tuple[LoadSpec, ...] = ()
    joints: tuple[JointSpec, ...] = ()
    text: str = ""
    source: Optional[str] = None  # path of the file, if any
    version: int = 1
    statics: StaticsSpec = field(default_factory=StaticsSpec)
    initial: str = "as_given"  # 'as_given' | 'equilibrium' (the statics first, then the run from rest)

    @property
    def output_file(self) -> str:
        """``output.file`` as written (SCENARIO.md: relative to the current directory), else
        ``outputs/<name>.h5`` with the name made a safe file name (:func:`safe_file_name`): a name
        like ``../../x`` in a scenario received from someone else does not write outside ``outputs/``."""
        return self.output.file if self.output.file is not None else f"outputs/{safe_file_name(self.name)}.h5"
