"""The assembled mechanism: bodies as a structure of arrays, DOF numbering,
the packed element instances and loads, built once from a validated scenario.

Internal body order is ``[moving bodies…, fixed bodies…, world]`` so that the
unknowns of the moving bodies are a contiguous prefix: body ``i < n_moving``
owns unknowns ``6i … 6i+5`` = ``[Δr, Δθ]``; the elements' own unknowns (a
joint's multipliers) follow, ``6·n_moving + u``.  ``order`` maps scenario
order to internal order for output.
"""
from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from .. import elements as registry
from ..elements import Elements
from ..scenario.spec import WORLD, Scenario
from ..kernels.rotations import quat_to_matrix


@dataclass(frozen=True, eq=False)
class Loads:
    """External loads as arrays: ``vector[i] * scale_i(t)`` on internal body ``body[i]``."""

    body: np.ndarray  # (nl,) internal body index
    vector: np.ndarray  # (nl, 3)
    is_torque: np.ndarray  # (nl,) bool
    scales: tuple  # nl time functions

    def at(self, t: float, n_all: int) -> tuple[np.ndarray, np.ndarray]:
        """Load force and torque on every body at time t: two ``(n_all, 3)`` arrays."""
        F = np.zeros((n_all, 3))
        M = np.zeros((n_all, 3))
        if len(self.body):
            s = np.array([fn(t) for fn in self.scales], dtype=float)
            vec = s[:, None] * self.vector
            np.add.at(F, self.body[~self.is_torque], vec[~self.is_torque])
            np.add.at(M, self.body[self.is_torque], vec[self.is_torque])
        return F, M


class Model:
    """Bodies, connectors and loads of one scenario, ready for batched evaluation.

    Attributes
    ----------
    n_moving, n_bodies, n_all : int
        Moving bodies, declared bodies, declared bodies + world.
    ndof : int
        Unknowns: 6 per moving body, then the elements' own (``elements.n_unknowns``).
    order : (n_bodies,) int
        Internal index of each declared body, in scenario order.
    mass : (n_all,), inertia : (n_all, 3, 3)
        Mass [kg] and body-frame inertia [kg·m²] (zero for fixed bodies).
    r0, q0, v0, w0 : (n_all, ·)
        Initial state (world frame; quaternions ``[w, x, y, z]``).
    gravity : (3,)
    elements : Elements
        Every connector instance, packed by kind (:mod:`mbsim.elements`).
    j_max : (n_moving,)
        Largest principal moment of inertia of each moving body [kg·m²].
    unknown_reference : (elements.n_unknowns,)
        Per own unknown of the elements, the m_ref [kg] or J_ref [kg·m²] of its scale factor
        ``k = m_ref/(βΔt²)`` or ``J_ref/(βΔt²)`` (THEORY §11): the mean mass, or the mean largest
        principal moment of inertia, of the moving bodies.
    """

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        specs = scenario.bodies
        moving = [i for i, b in enumerate(specs) if not b.fixed]
        fixed = [i for i, b in enumerate(specs) if b.fixed]
        internal = moving + fixed  # scenario indices in internal order
        self.n_moving = len(moving)
        self.n_bodies = len(specs)
        self.n_all = self.n_bodies + 1
        self.order = np.empty(self.n_bodies, dtype=np.intp)
        self.order[internal] = np.arange(self.n_bodies)
        self.order_is_identity = bool(np.array_equal(self.order, np.arange(self.n_bodies)))
        self.names = [specs[i].name for i in internal] + [WORLD]
        self.index = {name: k for k, name in enumerate(self.names)}

        def stack(attr, world_value):
            return np.array([getattr(specs[i], attr) for i in internal] + [world_value], dtype=float)

        self.mass = np.array([specs[i].mass if not specs[i].fixed else 0.0 for i in internal] + [0.0])
        self.inertia = np.array([specs[i].inertia if not specs[i].fixed else np.zeros((3, 3))
                                 for i in internal] + [np.zeros((3, 3))]).reshape(-1, 3, 3)
        self.r0 = stack("position", np.zeros(3)).reshape(-1, 3)
        self.q0 = stack("orientation", np.array([1.0, 0, 0, 0])).reshape(-1, 4)
        self.v0 = stack("velocity", np.zeros(3)).reshape(-1, 3)
        self.w0 = stack("angular_velocity", np.zeros(3)).reshape(-1, 3)
        self.gravity = np.asarray(scenario.gravity, dtype=float)

        self.rotations0 = quat_to_matrix(self.q0)
        nm = self.n_moving
        # contiguous: a strided column would give the compiled loop a second numba specialization
        self.j_max = np.ascontiguousarray(np.linalg.eigvalsh(self.inertia[:nm])[:, -1]) if nm else np.zeros(0)
        self.n_connectors = len(scenario.connectors)
        self.connector_names = [c.name for c in scenario.connectors]
        self.n_joints = len(scenario.joints)
        loads = scenario.loads
        self.loads = Loads(
            body=np.array([self.index[ld.body] for ld in loads], dtype=np.intp),
            vector=np.array([ld.vector for ld in loads], dtype=float).reshape(-1, 3),
            is_torque=np.array([ld.type == "torque" for ld in loads], dtype=bool),
            scales=tuple(ld.scale for ld in loads))
        self.joint_notes, self.velocity_projection = [], {}
        self.rebuild_elements(scenario.joints)
        if scenario.joints and nm:
            from ..mechanics.joints import settle
            settle(self, scenario)  # redundant equations and initial velocities (may rebuild the elements)



    def start_at(self, r: np.ndarray, q: np.ndarray) -> None:
        """Start from positions ``r`` and orientations ``q`` (n_all, ·) at rest (``initial: equilibrium``):
        the elements keep the geometry of the scenario's configuration, which they were built from."""
        self.r0 = np.array(r, dtype=float)
        self.q0 = np.array(q, dtype=float)
        self.v0 = np.zeros_like(self.v0)
        self.w0 = np.zeros_like(self.w0)
        self.velocity_projection = {}

    def rebuild_elements(self, joints) -> None:
        """Pack the connectors and ``joints`` (the scenario's, or with redundant equations removed)
        into :attr:`elements`, and what depends on the elements' own unknowns."""
        from ..elements.joints import drives_of
        self.joints = tuple(joints)
        el = self.elements = Elements(registry.ELEMENTS, self.scenario.connectors, self.index, self.r0,
                                      self.rotations0, self.joints)
        nm = self.n_moving
        self.ndof = 6 * nm + el.n_unknowns
        if el.n_unknowns and nm:
            m_ref, j_ref = float(np.mean(self.mass[:nm])), float(np.mean(self.j_max))
            self.unknown_reference = np.where(el.unknown_rotation, j_ref, m_ref)
        else:
            self.unknown_reference = np.ones(el.n_unknowns)
        # the drive time function of each own unknown's row (None: the row holds 0)
        self._drives = [None] * el.n_unknowns
        for e in np.flatnonzero(el.joint):
            for i, fn in enumerate(drives_of(self.joints[el.index[e]])):
                self._drives[el.first[e] + i] = fn

    # ------------------------------------------------------------------
    def external(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """External force and torque on every body at time t, with and without gravity.

        Returns ``(F, M, F_loads, M_loads)``, each ``(n_all, 3)``: totals (gravity
        m·g included) and the load part alone (whose work is ``external_work``).
        """
        FL, ML = self.loads.at(t, self.n_all)
        return FL + self.mass[:, None] * self.gravity, ML, FL, ML

    def external_many(self, times: np.ndarray):
        """:meth:`external` at several times at once: four ``(len(times), n_all, 3)`` arrays."""
        times = np.asarray(times, dtype=float)
        FL = np.zeros((len(times), self.n_all, 3))
        ML = np.zeros((len(times), self.n_all, 3))
        L = self.loads
        for i in range(len(L.body)):  # loads, not bodies or connectors: usually a handful
            contrib = np.asarray(L.scales[i](times), dtype=float)[:, None] * L.vector[i]
            (ML if L.is_torque[i] else FL)[:, L.body[i]] += contrib
        return FL + self.mass[:, None] * self.gravity, ML, FL, ML

    def time_functions(self) -> tuple:
        """The loads and the drives as the compiled code evaluates them at any time
        (:mod:`mbsim.kernels.timefn`): ``(fns, loads, drive)`` with ``fns`` the packed time functions,
        ``loads`` = (body, vector, is_torque, fn) and ``drive`` (n_unknowns,) each row's function (−1:
        none)."""
        from ..kernels import timefn as tf
        from ..scenario.spec import Constant, Ramp, Sine, SmoothRamp, Table
        kinds, params, start, count, tt, tv = [], [], [], [], [], []

        def pack(fn) -> int:
            p, k0, n = [0.0] * 4, 0, 0
            if isinstance(fn, Constant):
                kind, p[0] = tf.CONSTANT, fn.value
            elif isinstance(fn, (Ramp, SmoothRamp)):
                kind, p = (tf.RAMP if isinstance(fn, Ramp) else tf.SMOOTH_RAMP), [fn.t0, fn.t1, fn.start, fn.end]
            elif isinstance(fn, Sine):
                kind, p = tf.SINE, [fn.amplitude, fn.frequency, fn.phase, fn.offset]
            elif isinstance(fn, Table):
                kind, k0, n = tf.TABLE, len(tt), len(fn.times)
                tt.extend(float(x) for x in fn.times)
                tv.extend(float(x) for x in fn.values)
            else:
                raise TypeError(f"no compiled form of the time function {fn!r}")
            kinds.append(kind)
            params.append([float(x) for x in p])
            start.append(k0)
            count.append(n)
            return len(kinds) - 1
        L = self.loads
        load_fn = np.array([pack(fn) for fn in L.scales], dtype=np.int64)
        drive = np.array([-1 if fn is None else pack(fn) for fn in self._drives], dtype=np.int64)
        fns = (np.array(kinds, dtype=np.int64), np.array(params, dtype=float).reshape(-1, 4),
               np.array(start, dtype=np.int64), np.array(count, dtype=np.int64), np.array(tt, dtype=float),
               np.array(tv, dtype=float))
        loads = (np.ascontiguousarray(L.body, dtype=np.int64), np.ascontiguousarray(L.vector, dtype=float),
                 np.ascontiguousarray(L.is_torque, dtype=np.bool_), load_fn)
        return fns, loads, drive

    def targets(self, times) -> np.ndarray:
        """The values the rows of the elements' own unknowns hold at ``times``: ``(len(times), 3,
        n_unknowns)``, the drives' F, Ḟ and F̈ (THEORY §11), 0 for rows without a drive."""
        times = np.atleast_1d(np.asarray(times, dtype=float))
        out = np.zeros((len(times), 3, self.elements.n_unknowns))
        for j, fn in enumerate(self._drives):
            if fn is not None:
                for order in range(3):
                    out[:, order, j] = fn.derivative(times, order)
        return out
