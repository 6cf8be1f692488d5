"""The element contract: what a kind says of itself, and the state its law sees (THEORY §12, §6).

An element kind is one class (one file in this package) that says:

1. ``type``, ``aliases`` -- its scenario ``type`` name (and other accepted spellings);
2. ``keys``, ``read(r, m)`` -- its own scenario keys (besides ``name``, ``type``, ``bodies``)
   and how to read and check them with the loader's ``Reader``, returning the values of its
   ``ConnectorSpec`` (or ``JointSpec``);
3. ``fields``, ``pack(specs, ia, ib, r0, R0)`` -- the layout of its parameter row,
   ``((name, width), …)``, and its instances' values for it, ``{name: (n, width)}``;
4. ``points``, ``axes`` -- the fields of its two points' material arms (``None``: it acts at the
   bodies' centres) and of the material vectors it reads (``((field, "A" | "B"), …)``): the
   engine turns them into the state the law sees (below);
5. ``law`` -- one compiled function: the element at a state (below);
6. ``blocks`` -- which 3×3 blocks of the law's derivatives can be nonzero (the engine reads no
   others, and gathers ``X_DV`` only for a kind with a block with respect to ḋ, ``X_WA`` and ``X_WB``
   only for one with a block with respect to ω_A or ω_B); ``interpolate`` -- how the generalized-α step evaluates it: ``"state"`` at the
   α-interpolated state of its points and axes (THEORY §6), ``"forces"`` at t_{n+1} and t_n, the
   forces interpolated (the joints, THEORY §11);
7. ``unknowns`` / ``unknowns_of(spec)``, ``section`` -- the unknowns of its own each instance
   brings (a joint's multipliers: ``"translation"`` for one conjugate to a row in metres,
   ``"rotation"`` for one conjugate to a row in radians) and the scenario list of its instances;
8. ``stiffness``, ``failure``, ``seed_of(spec)`` and the traits that the tools read: how it is
   drawn (``draw``) and what it outputs (``outputs``).

docs/develop.md ("Adding an element") walks through the contract with an example.

**The state a law sees.**  An element joins a point of body A and a point of body B.  The engine
gives the law, per instance ``e``, the row ``x[e]``:

==============  ====  ===============================================================================
``X_D``         3     d = x_B − x_A, from A's point to B's [m]
``X_DV``        3     ḋ = ẋ_B − ẋ_A, the points' relative velocity [m/s]
``X_WA, X_WB``  3, 3  ω_A, ω_B, the bodies' angular velocities [rad/s]
``X_AXES``      3·k   its axes (``axes``) in world coordinates, in the order declared
``X_MOVES``     3·k   how each axis turns with its body: δa = δθ × m (m = the axis itself at a
                      physical state; at the α-interpolated state of a step, the axis at t_{n+1})
``X_LAM``       m     its own unknowns (physical: N, N·m)
``X_TARGET``    m     the values its rows hold (a drive's F(t); 0 without drive)
==============  ====  ===============================================================================

and the time ``t``.  Its frame coordinates are ``(d, θ_A, θ_B)``: the separation of its points and
the rotations of the two bodies about their points (δθ spatial, THEORY §1); ``(ḋ, ω_A, ω_B)`` their
rates.  The law returns, in ``y[e]``, the generalized force conjugate to them, ``p = (p_d, p_A,
p_B)``: the virtual work of the element is ``p_d·δd + p_A·δθ_A + p_B·δθ_B``, so that the force on
A's point is ``−p_d`` (B's: ``p_d``) and ``p_A``, ``p_B`` are the moments on the bodies about their
points.  A force element (a spring) gives ``p_d = −f``, ``p_A = m``, ``p_B = −m``; a constraint
element (a joint) gives ``p = −G_fᵀλ`` with ``G_f`` its rows' Jacobian in frame coordinates.  With
``want & DERIVATIVES`` it also returns ``∂p/∂(d, θ_A, θ_B)`` and ``∂p/∂(ḋ, ω_A, ω_B)`` (9×9 each),
with ``want & JACOBIAN`` a constraint its rows' ``G_f`` (a 9-row per equation), with ``want & GAMMA`` γ_f, the part of its rows' Φ̈ quadratic in the rates of its frame coordinates (the engine
adds the arms' centripetal part, THEORY §11).  Nothing of a time step enters a law: the kinematics
of points and axes, the chain rule to the bodies' unknowns and the scatter into the solver's storage
are the engine's (:mod:`mbsim.mechanics`), and the generalized-α tangent is a combination of these
derivatives that the integrator forms (THEORY §12).
"""
from __future__ import annotations

from typing import Callable, ClassVar, Optional

import numpy as np

# --- the state row x[e] the engine gathers --------------------------------------------------------
MAX_AXES = 6  # a joint's two triads
MAX_OWN = 6  # own unknowns of one instance (a lock's six rows)
X_D, X_DV, X_WA, X_WB, X_AXES = 0, 3, 6, 9, 12
X_MOVES = X_AXES + 3 * MAX_AXES
X_LAM = X_MOVES + 3 * MAX_AXES
X_TARGET = X_LAM + MAX_OWN
N_X = X_TARGET + MAX_OWN

# --- what a law returns in y[e] -------------------------------------------------------------------
Y_P = 0  # p = (p_d, p_A, p_B), 9
Y_POTENTIAL, Y_POWER = 9, 10  # stored energy [J]; power it dissipates [W] (≥ 0 for a damper)
Y_WORK = 11  # power it puts into the bodies as external work [W] (a kind that ``works``; THEORY §13, user laws)
Y_PHI = 12  # a constraint's rows Φ − F (MAX_OWN)
Y_GAMMA = Y_PHI + MAX_OWN  # a constraint's γ_f (MAX_OWN)
N_Y = Y_GAMMA + MAX_OWN

# --- its derivatives in dy[e] ---------------------------------------------------------------------
# ∂p/∂(d, θ_A, θ_B) and ∂p/∂(ḋ, ω_A, ω_B), 9×9 each, as 3×3 blocks: block (r, c) of DQ starts at
# DQ + 9·(3r + c) (row by row within the block); G_f of a constraint's row i at DG + 9 i
DQ = 0
DV = 81
DG = 162
N_DY = DG + 9 * MAX_OWN

# --- what a law is asked (bits of ``want``) ----------------------------------------------------------
VALUES = 0  # p, and a constraint's rows Φ − F, and the energies
DERIVATIVES = 1  # ∂p/∂(d, θ_A, θ_B) and ∂p/∂(ḋ, ω_A, ω_B)
GAMMA = 2  # a constraint's γ_f
JACOBIAN = 4  # a constraint's G_f
# the state is an accepted one (the end of a step): a law that counts turns (``remembers``) keeps its
# unwrapped angle there, in its parameter row, as the reference the next states' angles are unwrapped
# against (they differ from it by less than half a turn)
COMMIT = 8

# the blocks a kind declares: "rc" with r in d, a, b (p_d, p_A, p_B) and c in d, a, b (∂/∂d, θ_A, θ_B)
# or v, A, B (∂/∂ḋ, ω_A, ω_B)
_ROWS, _QCOLS, _VCOLS = "dab", "dab", "vAB"


def block_mask(blocks) -> int:
    """The bit mask of declared derivative blocks: bit 3r + c for ∂p/∂(d, θ_A, θ_B), 9 + 3r + c for
    ∂p/∂(ḋ, ω_A, ω_B)."""
    mask = 0
    for b in blocks:
        r, c = b[0], b[1]
        if c in _QCOLS:
            mask |= 1 << (3 * _ROWS.index(r) + _QCOLS.index(c))
        else:
            mask |= 1 << (9 + 3 * _ROWS.index(r) + _VCOLS.index(c))
    return mask


ALL_BLOCKS = tuple(r + c for r in _ROWS for c in _QCOLS + _VCOLS)


def block_offset(name: str) -> int:
    """The first column in ``dy`` of the derivative block called ``name`` (as in ``blocks``: ``"aa"`` is
    ∂p_A/∂θ_A, ``"dv"`` ∂p_d/∂ḋ, ``"aB"`` ∂p_A/∂ω_B)."""
    r, c = name[0], name[1]
    if c in _QCOLS:
        return DQ + 9 * (3 * _ROWS.index(r) + _QCOLS.index(c))
    return DV + 9 * (3 * _ROWS.index(r) + _VCOLS.index(c))

INTERPOLATE = {"state": 0, "forces": 1}


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
    points: ClassVar[Optional[tuple]] = None  # (field of the arm on A, field of the arm on B)
    axes: ClassVar[tuple] = ()  # ((field, "A" | "B"), …): material vectors the law reads
    blocks: ClassVar[tuple] = ALL_BLOCKS  # the derivative blocks that can be nonzero
    interpolate: ClassVar[str] = "state"  # "state" (THEORY §6) or "forces" (THEORY §11)
    stiffness: ClassVar[Optional[str]] = None
    failure: ClassVar[str] = "is undefined at this state"
    unknowns: ClassVar[tuple] = ()  # ("translation" | "rotation", …): own unknowns per instance
    section: ClassVar[str] = "connectors"  # the scenario list of its instances
    draw: ClassVar[str] = "line"  # how the tools draw it: "coil", "dashpot", "twist", "point", "joint", "line"
    outputs: ClassVar[tuple] = ("force", "moment")  # what /connectors/* (or /joints/*) of it mean
    dissipates: ClassVar[bool] = True  # whether it can dissipate energy (its law's Y_POWER can be nonzero)
    works: ClassVar[bool] = False  # whether its work counts as external work (its law writes Y_WORK)
    variant_of: ClassVar[Optional[str]] = None  # its instances are written as this type (with keys that select it)
    measures_rotation: ClassVar[bool] = False  # a relative rotation vector, valid below a half turn (warned past it)
    law: ClassVar[Callable]

    @classmethod
    def unknowns_of(cls, spec) -> tuple:
        """The own unknowns of the instance ``spec`` (``unknowns`` unless a kind's instances differ)."""
        return cls.unknowns

    @classmethod
    def owns(cls, spec) -> bool:
        """Whether the scenario item ``spec`` is an instance of this kind (its type; a kind with variants
        tells them apart by their keys)."""
        return spec.type == cls.type

    @classmethod
    def remembers_in(cls, specs) -> bool:
        """Whether these instances count turns: their law keeps an angle at every accepted state (``want``
        with COMMIT) in their parameter row."""
        return False

    @classmethod
    def dissipates_in(cls, specs) -> bool:
        """Whether these instances can dissipate energy (``dissipates``, unless a kind can tell by its
        instances: the engine then leaves their power out)."""
        return cls.dissipates

    @classmethod
    def seed_of(cls, spec) -> bool:
        """Whether ``tangent: seed`` gives this instance THEORY §8's matrix (else: the consistent one)."""
        return False

    @staticmethod
    def read(r, m) -> dict:
        raise NotImplementedError

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        raise NotImplementedError


MAX_EXTENT = 1e150  # [m] connector points: lengths and arms are squared in the laws


def _norm(v) -> float:
    """|v| without overflow for components up to the largest float (scaled by the largest)."""
    v = np.asarray(v, dtype=float)
    m = float(np.max(np.abs(v), initial=0.0))
    if m == 0.0 or not np.isfinite(m):
        return m
    return m * float(np.sqrt(np.sum((v / m) ** 2)))


def read_points(r, m) -> dict:
    """``points: [[xA, yA, zA], [xB, yB, zB]]``: the insertion points of a connector at t = 0."""
    node = r.require(m, "points")
    points = None if node is None else r.numbers(node, m.sub("points"), 2, item=r.vector, what="points")
    if points is None:
        return dict(points=None)
    points = np.array(points)
    # the laws square lengths and arms (L = sqrt(c·c)): beyond ~1e154 m that overflows, so the points must
    # be within MAX_EXTENT of the origin and of each other (halves first: far-apart points do not overflow here)
    if 2.0 * _norm(0.5 * points[1] - 0.5 * points[0]) > MAX_EXTENT or np.abs(points).max() > MAX_EXTENT:
        r.report(m.sub("points"), node, f"the points are too far apart for a finite length (farther than "
                                        f"{MAX_EXTENT:g} m from each other or from the origin: their squares overflow)")
    return dict(points=points)


def points_distance(points) -> float:
    """|X_B − X_A| of ``points`` (2, 3), halves first (no overflow for points within MAX_EXTENT)."""
    return 2.0 * _norm(0.5 * np.asarray(points[1], float) - 0.5 * np.asarray(points[0], float))


def material_arms(points: np.ndarray, ia, ib, r0, R0) -> tuple[np.ndarray, np.ndarray]:
    """Material arms ``Z = Λ_0ᵀ (X − r_0)`` of the insertion points (THEORY §6)."""
    ZA = np.einsum("nji,nj->ni", R0[ia], points[:, 0] - r0[ia])
    ZB = np.einsum("nji,nj->ni", R0[ib], points[:, 1] - r0[ib])
    return ZA, ZB


class Elements:
    """Every element instance of a model, packed into arrays (MuJoCo's ``eq_type``/``eq_data``).

    Sorted by kind, each kind a contiguous range ``start[k] … start[k+1]−1``, one parameter row each.
    The model numbers the own unknowns after the body unknowns, instance by instance: instance e's are
    ``first[e] …`` in the vector of all of them (THEORY §11).

    Attributes
    ----------
    kinds : tuple of ElementKind subclasses
        The registry, indexed by kind id.
    start : (n_kinds + 1,) int64
    kind : (n,) int64
    body : (n, 2) int64
        Internal index of bodies A and B.
    data : (n, P) float
        Parameter rows (the kind's ``fields``; P the widest kind's row).
    arms : (n, 6) float
        The material arms Z_A, Z_B of the two points (zero for a kind without points).
    axes : (n, MAX_AXES, 3) float, axis_side : (n, MAX_AXES) int64, n_axes : (n,) int64
        The material vectors each instance's law reads, and the body (0: A, 1: B) each turns with.
    seed : (n,) bool
        Whether ``tangent: seed`` applies THEORY §8's matrix to the instance.
    kind_mask, kind_interpolate, kind_points : (n_kinds,) int64
        Per kind: :func:`block_mask` of its ``blocks``, :data:`INTERPOLATE` of its ``interpolate``,
        whether it has points.
    index : (n,) int64
        Scenario position of each instance in its section (the row of ``/connectors/*`` or ``/joints/*``).
    joint : (n,) bool
        Whether an instance is of the ``joints`` section.
    names : list of str
    arm : (n, 2)
        |Z_A|, |Z_B| (0 where a kind has none).
    stiff : (n,)
        Stiffness of each instance (0 where a kind has none).
    first : (n,) int64
    own : (n,) int64
        How many own unknowns each instance has.
    n_unknowns : int
    unknown_element, unknown_rotation : (n_unknowns,)
        The instance each own unknown belongs to, and whether it is a rotational one.
    width : int
        Local unknowns per instance, ``12 + m`` of the instance with the most own unknowns.
    """

    def __init__(self, kinds, connectors, body_index: dict, r0: np.ndarray, R0: np.ndarray, joints=()):
        self.kinds = tuple(kinds)
        width = max((sum(w for _, w in k.fields) for k in self.kinds), default=0)
        start, kind, body, rows, index, names, arm, stiff = [0], [], [], [], [], [], [], []
        dissipating = [False] * len(self.kinds)
        remembering = [False] * len(self.kinds)
        first, owner, rotation, is_joint, arms, axes, sides, n_axes, seed = [], [], [], [], [], [], [], [], []
        sections = {"connectors": connectors, "joints": joints}
        for kid, cls in enumerate(self.kinds):
            items = sections[cls.section]
            idx = [i for i, c in enumerate(items) if cls.owns(c)]
            start.append(start[-1] + len(idx))
            if not idx:
                continue
            n_k = len(idx)
            specs = [items[i] for i in idx]
            dissipating[kid] = bool(cls.dissipates_in(specs))
            remembering[kid] = bool(cls.remembers_in(specs))
            is_joint += [cls.section == "joints"] * n_k
            ia = np.array([body_index[s.body_a] for s in specs], dtype=np.int64)
            ib = np.array([body_index[s.body_b] for s in specs], dtype=np.int64)
            values = cls.pack(specs, ia, ib, r0, R0)
            row = np.zeros((n_k, width))
            for (name, w), col in zip(cls.fields, offsets(cls.fields)):
                row[:, col:col + w] = np.asarray(values[name], dtype=float).reshape(n_k, w)
            rows.append(row)
            for j, spec in enumerate(specs):
                own = cls.unknowns_of(spec)
                if len(own) > MAX_OWN:
                    raise ValueError(f"{cls.type} '{spec.name}' has {len(own)} own unknowns; at most {MAX_OWN}")
                first.append(len(owner))
                owner += [len(kind) + j] * len(own)
                rotation += [u == "rotation" for u in own]
                seed.append(bool(cls.seed_of(spec)))
            kind += [kid] * n_k
            body.append(np.stack((ia, ib), axis=1))
            index += idx
            names += [s.name for s in specs]
            a = np.zeros((n_k, 2))
            z = np.zeros((n_k, 6))
            if cls.points is not None:
                for side, name in enumerate(cls.points):
                    zs = np.asarray(values[name], dtype=float).reshape(n_k, 3)
                    a[:, side] = np.linalg.norm(zs, axis=1)
                    z[:, 3 * side:3 * side + 3] = zs
            arm.append(a)
            arms.append(z)
            if len(cls.axes) > MAX_AXES:
                raise ValueError(f"element kind {cls.type!r} declares {len(cls.axes)} axes; at most {MAX_AXES}")
            ax = np.zeros((n_k, MAX_AXES, 3))
            sd = np.zeros((n_k, MAX_AXES), dtype=np.int64)
            for i, (name, side) in enumerate(cls.axes):
                ax[:, i] = np.asarray(values[name], dtype=float).reshape(n_k, 3)
                sd[:, i] = "AB".index(side)
            axes.append(ax)
            sides.append(sd)
            n_axes += [len(cls.axes)] * n_k
            stiff.append(np.asarray(values[cls.stiffness], dtype=float).reshape(-1) if cls.stiffness
                         else np.zeros(n_k))
        n = len(kind)
        self.n = n
        self.start = np.array(start, dtype=np.int64)
        self.kind = np.array(kind, dtype=np.int64)
        self.body = np.concatenate(body) if body else np.zeros((0, 2), np.int64)
        self.data = np.concatenate(rows) if rows else np.zeros((0, max(width, 1)))
        if self.data.shape[1] == 0:
            self.data = np.zeros((n, 1))
        self.arms = np.concatenate(arms) if arms else np.zeros((0, 6))
        self.axes = np.concatenate(axes) if axes else np.zeros((0, MAX_AXES, 3))
        self.axis_side = np.concatenate(sides) if sides else np.zeros((0, MAX_AXES), np.int64)
        self.n_axes = np.array(n_axes, dtype=np.int64)
        self.seed = np.array(seed, dtype=bool)
        self.kind_mask = np.array([block_mask(k.blocks) for k in self.kinds], dtype=np.int64)
        self.kind_interpolate = np.array([INTERPOLATE[k.interpolate] for k in self.kinds], dtype=np.int64)
        self.kind_points = np.array([k.points is not None for k in self.kinds], dtype=np.int64)
        self.kind_dissipates = np.array(dissipating, dtype=np.int64)
        self.kind_works = np.array([k.works for k in self.kinds], dtype=np.int64)
        self.kind_remembers = np.array(remembering, dtype=np.int64)
        self.index = np.array(index, dtype=np.int64)
        self.joint = np.array(is_joint, dtype=bool)
        self.names = names
        self.arm = np.concatenate(arm) if arm else np.zeros((0, 2))
        self.stiff = np.concatenate(stiff) if stiff else np.zeros(0)
        self.first = np.array(first, dtype=np.int64)
        self.n_unknowns = len(owner)
        self.own = np.bincount(np.array(owner, dtype=np.int64), minlength=n).astype(np.int64)
        self.unknown_element = np.array(owner, dtype=np.int64)
        self.unknown_rotation = np.array(rotation, dtype=bool)
        # the widest instance: a model without joints keeps 12 (the fast paths)
        self.width = 12 + int(np.max(np.bincount(self.unknown_element, minlength=n), initial=0))

    def __len__(self):
        return self.n

    def arrays(self) -> tuple:
        """The packed description as the compiled engine takes it (:mod:`mbsim.mechanics`):
        ``(start, body, data, arms, axes, axis_side, n_axes, first, own, kind_mask, kind_interpolate,
        kind_points, seed)``."""
        return (self.start, self.body, self.data, self.arms, self.axes, self.axis_side, self.n_axes, self.first,
                self.own, self.kind_mask, self.kind_interpolate, self.kind_points, self.seed)

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
        cls = self.kinds[self.kind[e]]
        return f"{cls.variant_of or cls.type} '{self.names[e]}'"

    def failure(self, e: int) -> str:
        cls = self.kinds[self.kind[e]]
        how = getattr(cls, "failure_of", None)
        return f"{self.describe(e)} {how(self, e) if how is not None else cls.failure}"
