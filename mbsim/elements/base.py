"""The element contract and the packed description of all element instances.

An element kind is one class (one file in this package) that says:

1. ``type``, ``aliases`` -- its scenario ``type`` name (and other accepted spellings);
2. ``keys``, ``read(r, m)`` -- its own scenario keys (besides ``name``, ``type``, ``bodies``)
   and how to read and check them with the loader's :class:`~mbsim.scenario.yamlnodes.Reader`,
   returning the values of its :class:`~mbsim.scenario.spec.ConnectorSpec`;
3. ``fields``, ``pack(specs, ia, ib, r0, R0)`` -- the layout of its parameter row,
   ``((name, width), …)``, and its instances' values for it, ``{name: (n, width)}``;
4. ``arms`` / ``stiffness`` -- the fields holding its material arms (A, B) and its stiffness,
   read by Newton's round-off floor (``None`` where it has none);
5. ``law`` -- one compiled function that evaluates its instances ``lo … hi−1``: residual rows,
   tangent blocks, and the frame outputs (force, moment, length, potential, power);
6. ``failure`` -- what to say when ``law`` reports an instance undefined;
7. ``unknowns`` -- the unknowns of its own each instance brings (the multipliers of a
   joint): one entry per unknown, ``"translation"`` for a multiplier in N conjugate to a row
   in metres, ``"rotation"`` for one in N·m conjugate to a row in radians; ``()`` for none.
   A kind whose instances differ (a joint with or without a drive) gives them per instance,
   ``unknowns_of(spec)``; ``section`` is the scenario list its instances come from
   (``"connectors"`` or ``"joints"``).

:mod:`mbsim.elements` registers the kinds (their order is their kind id) and
:mod:`mbsim.elements.engine` calls their laws through one switch.  docs/develop.md
("Adding an element") is this contract with an example.

All instances of all kinds are packed into one :class:`Elements` (MuJoCo's
``eq_type``/``eq_data``): sorted by kind, each kind a contiguous range
``start[k] … start[k+1]−1``, one parameter row each.  Local unknown order per
instance is ``[Δr_A, Δθ_A, Δr_B, Δθ_B]`` (12 entries) followed by its own
unknowns ``λ̃_1 … λ̃_m``: a law's residual rows and tangent blocks are
``12 + m`` wide (:attr:`Elements.width`, the widest kind's, for all).

Own unknowns (THEORY §11).  The model numbers them after the body unknowns,
instance by instance (``first[e]`` is the first of instance e in the vector
``lam`` of all of them).  The state keeps them physical (``lam``, N or N·m);
the Newton system solves for the scaled ``λ̃ = λ/k`` with ``k = m_ref/(βΔt²)``
(translation) or ``J_ref/(βΔt²)`` (rotation), the law's ``scale`` argument
(Bottasso, Bauchau & Cardona 2007), so every block of the iteration matrix
is O(1/(βΔt²)): a law multiplies its own residual rows (``−k Φ``) and the
columns and rows of its own unknowns in its tangent by ``k``.  ``λ̃`` is then
a length (an angle): the stopping test weighs its correction, and ``Φ`` in
its own units, against the position (rotation) tolerance of the bodies.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Optional

import numpy as np

# Columns of the per-instance output row ``out`` that a law fills (the errors: a joint's, m and rad).
FORCE, MOMENT, LENGTH, POTENTIAL, POWER, POSITION_ERROR, ANGLE_ERROR = 0, 3, 6, 7, 8, 9, 10
N_OUT = 11


def offsets(fields) -> tuple:
    """The first column of each field of a parameter row: ``((name, width), …)`` → ``(0, w0, w0+w1, …)``."""
    out, col = [], 0
    for _, width in fields:
        out.append(col)
        col += width
    return tuple(out)


class ElementKind:
    """Base of the element kinds; see the module docstring for the contract."""

    type: ClassVar[str] = ""
    aliases: ClassVar[tuple] = ()
    keys: ClassVar[tuple] = ()
    fields: ClassVar[tuple] = ()
    arms: ClassVar[Optional[tuple]] = None  # (field of the arm on A, field of the arm on B)
    stiffness: ClassVar[Optional[str]] = None
    failure: ClassVar[str] = "is undefined at this state"
    unknowns: ClassVar[tuple] = ()  # ("translation" | "rotation", …): own unknowns per instance
    section: ClassVar[str] = "connectors"  # the scenario list of its instances
    prepares: ClassVar[bool] = False  # its law keeps the step's constants in ``cache`` (mode PREPARE)
    law: ClassVar[Callable]

    @classmethod
    def unknowns_of(cls, spec) -> tuple:
        """The own unknowns of the instance ``spec`` (``unknowns`` unless a kind's instances differ)."""
        return cls.unknowns

    @staticmethod
    def read(r, m) -> dict:
        raise NotImplementedError

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        raise NotImplementedError


MAX_EXTENT = 1e150  # [m] connector points: lengths and arms are squared in the laws


def read_points(r, m) -> dict:
    """``points: [[xA, yA, zA], [xB, yB, zB]]``: the insertion points of a connector at t = 0."""
    node = r.require(m, "points")
    points = None if node is None else r.numbers(node, m.sub("points"), 2, item=r.vector, what="points")
    if points is None:
        return dict(points=None)
    points = np.array(points)
    # the laws square lengths and arms (L = sqrt(c·c)): beyond ~1e154 m that overflows, so the points must
    # be within MAX_EXTENT of the origin and of each other (halves first: far-apart points do not overflow here)
    from ..scenario.yamlnodes import norm  # (the scenario package imports this module's kinds)
    if 2.0 * norm(0.5 * points[1] - 0.5 * points[0]) > MAX_EXTENT or np.abs(points).max() > MAX_EXTENT:
        r.report(m.sub("points"), node, f"the points are too far apart for a finite length (farther than "
                                        f"{MAX_EXTENT:g} m from each other or from the origin: their squares overflow)")
    return dict(points=points)


def material_arms(points: np.ndarray, ia, ib, r0, R0) -> tuple[np.ndarray, np.ndarray]:
    """Material arms ``Z = Λ_0ᵀ (X − r_0)`` of the insertion points (THEORY §6)."""
    ZA = np.einsum("nji,nj->ni", R0[ia], points[:, 0] - r0[ia])
    ZB = np.einsum("nji,nj->ni", R0[ib], points[:, 1] - r0[ib])
    return ZA, ZB


class Elements:
    """Every element instance of a model, packed into arrays (see the module docstring).

    Attributes
    ----------
    kinds : tuple of ElementKind subclasses
        The registry, indexed by kind id.
    start : (n_kinds + 1,) int64
        Instances of kind k are ``start[k] … start[k+1]−1``.
    kind : (n,) int64
        Kind id of each instance.
    body : (n, 2) int64
        Internal index of bodies A and B.
    data : (n, P) float
        Parameter rows (the kind's ``fields``; P the widest kind's row).
    index : (n,) int64
        Scenario position of each instance in its section (the row of ``/connectors/*``, or of
        ``/joints/*`` for a joint).
    joint : (n,) bool
        Whether an instance is a joint (of the ``joints`` section).
    names : list of str
    arm : (n, 2)
        |Z_A|, |Z_B| of the material arms (0 where a kind has none).
    stiff : (n,)
        Stiffness of each instance (0 where a kind has none).
    first : (n,) int64
        Position of instance e's first own unknown in the vector of all of them (its kind's
        ``unknowns``; the count of those before it when it has none).
    n_unknowns : int
        Own unknowns of all instances.
    unknown_element, unknown_rotation : (n_unknowns,)
        The instance each own unknown belongs to, and whether it is a rotational one.
    width : int
        Local unknowns per instance, ``12 + m`` of the instance with the most own unknowns.
    """

    def __init__(self, kinds, connectors, body_index: dict, r0: np.ndarray, R0: np.ndarray, joints=()):
        self.kinds = tuple(kinds)
        width = max((sum(w for _, w in k.fields) for k in self.kinds), default=0)
        start, kind, body, rows, index, names, arm, stiff = [0], [], [], [], [], [], [], []
        first, owner, rotation, is_joint = [], [], [], []
        sections = {"connectors": connectors, "joints": joints}
        for kid, cls in enumerate(self.kinds):
            items = sections[cls.section]
            idx = [i for i, c in enumerate(items) if c.type == cls.type]
            start.append(start[-1] + len(idx))
            if not idx:
                continue
            specs = [items[i] for i in idx]
            is_joint += [cls.section == "joints"] * len(idx)
            ia = np.array([body_index[s.body_a] for s in specs], dtype=np.int64)
            ib = np.array([body_index[s.body_b] for s in specs], dtype=np.int64)
            values = cls.pack(specs, ia, ib, r0, R0)
            row = np.zeros((len(idx), width))
            for (name, w), col in zip(cls.fields, offsets(cls.fields)):
                row[:, col:col + w] = np.asarray(values[name], dtype=float).reshape(len(idx), w)
            rows.append(row)
            for j, spec in enumerate(specs):
                own = cls.unknowns_of(spec)
                first.append(len(owner))
                owner += [len(kind) + j] * len(own)
                rotation += [u == "rotation" for u in own]
            kind += [kid] * len(idx)
            body.append(np.stack((ia, ib), axis=1))
            index += idx
            names += [s.name for s in specs]
            a = np.zeros((len(idx), 2))
            if cls.arms is not None:
                for side, name in enumerate(cls.arms):
                    a[:, side] = np.linalg.norm(values[name], axis=1)
            arm.append(a)
            stiff.append(np.asarray(values[cls.stiffness], dtype=float).reshape(-1) if cls.stiffness
                         else np.zeros(len(idx)))
        n = len(kind)
        self.n = n
        self.start = np.array(start, dtype=np.int64)
        self.kind = np.array(kind, dtype=np.int64)
        self.body = np.concatenate(body) if body else np.zeros((0, 2), np.int64)
        self.data = np.concatenate(rows) if rows else np.zeros((0, max(width, 1)))
        if self.data.shape[1] == 0:
            self.data = np.zeros((n, 1))
        self.index = np.array(index, dtype=np.int64)
        self.joint = np.array(is_joint, dtype=bool)
        self.names = names
        self.arm = np.concatenate(arm) if arm else np.zeros((0, 2))
        self.stiff = np.concatenate(stiff) if stiff else np.zeros(0)
        self.first = np.array(first, dtype=np.int64)
        self.n_unknowns = len(owner)
        self.unknown_element = np.array(owner, dtype=np.int64)
        self.unknown_rotation = np.array(rotation, dtype=bool)
        # the widest instance: a model without joints keeps 12 (the fast paths)
        self.width = 12 + int(np.max(np.bincount(self.unknown_element, minlength=n), initial=0))

    def __len__(self):
        return self.n

    def of_kind(self, type_name: str) -> np.ndarray:
        """Packed positions of the instances of the kind called ``type_name``."""
        k = [c.type for c in self.kinds].index(type_name)
        return np.arange(self.start[k], self.start[k + 1])

    def param(self, e: int, name: str) -> np.ndarray:
        """Field ``name`` of instance ``e``'s parameter row (a copy)."""
        cls = self.kinds[self.kind[e]]
        col = offsets(cls.fields)[[f for f, _ in cls.fields].index(name)]
        width = dict(cls.fields)[name]
        return self.data[e, col:col + width].copy()

    def describe(self, e: int) -> str:
        """``spring 'name'``: how messages name instance ``e``."""
        return f"{self.kinds[self.kind[e]].type} '{self.names[e]}'"

    def failure(self, e: int) -> str:
        return f"{self.describe(e)} {self.kinds[self.kind[e]].failure}"


@dataclass(frozen=True, eq=False)
class ElementEval:
    """All element instances evaluated at one iterate or state, in packed order.

    Attributes
    ----------
    residual : (n, W)
        Local residual contributions (THEORY §6), at n+α (W = :attr:`Elements.width`).
    tangent : (n, W, W) or None
        Local tangent ``K = −∂R/∂u``; None when not requested.
    out : (n, N_OUT)
        Frame outputs: force and pure moment on body A [N, N·m], length [m] (NaN where none),
        stored energy [J], dissipated power [W] (columns FORCE … POWER).
    failed : int
        The first instance whose law is undefined here (a spring with L0 > 0 at L = 0), or −1.
    """

    residual: np.ndarray
    tangent: Optional[np.ndarray]
    out: np.ndarray
    failed: int

    @property
    def force(self):
        return self.out[:, FORCE:FORCE + 3]

    @property
    def moment(self):
        return self.out[:, MOMENT:MOMENT + 3]

    @property
    def length(self):
        return self.out[:, LENGTH]

    @property
    def potential(self):
        return self.out[:, POTENTIAL]

    @property
    def power(self):
        return self.out[:, POWER]
