"""Continuous equations of motion of a scenario, for the reference solver.

This module is deliberately independent of the generalized-α path
(``mbsim.model``, ``mbsim.mechanics``, ``mbsim.integrators``): it has its own
rotation helpers and its own connector kernels for the built-in kinds, so that
a mistake made there is not silently repeated here.  An element kind
registered from outside (:func:`mbsim.elements.register`) is evaluated
through its own law, as plain Python, at this module's kinematics of its
points and axes (`_plugin_rows`): the only statement of its physics there is;
the kinematics, the chain to the bodies, the continuous equations and their
integration stay this module's own.  A kind with unknowns of its own (a
joint other than the built-in ones) is refused.  It implements THEORY §1, §6, §7 and §9 in
continuous time, i.e. with every quantity at the same instant (α_f = α_m = 1,
no time discretisation), and the kinematic joints of THEORY §11 as an index-1
formulation of its own (see `EquationsOfMotion` and ``_joint_rows``).

State vector ``y`` of length ``13 N + 2`` (N moving bodies), in blocks:

====================  ======  ==============================================
block                 shape   meaning
====================  ======  ==============================================
``r``                 (N, 3)  centre of mass [m]
``q``                 (N, 4)  unit quaternion [w, x, y, z], body-to-world
``v``                 (N, 3)  centre-of-mass velocity [m/s]
``ω``                 (N, 3)  spatial angular velocity [rad/s]
dissipated            ()      work removed by dampers since t = 0 [J]
external work         ()      work done by loads since t = 0 [J]
====================  ======  ==============================================

Fixed bodies and ``world`` have no states; they keep their initial pose.
Joints add no states: their multipliers are solved for at every evaluation,
and their drives' work is part of the external work.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np
from scipy.spatial.transform import Rotation
from scipy import sparse
from scipy.linalg import qr
from scipy.linalg.lapack import dtrtrs

from mbsim.scenario.spec import DRIVEN, WORLD, Constant, Scenario

# P = a I + b n⊗n for each projection (THEORY §7, torsional damper).
_PROJECTION = {"P1": (1.0, 0.0), "P2": (1.0, -1.0), "P3": (0.0, 1.0), "none": (0.0, 0.0)}


# --------------------------------------------------------------------------
# small batched algebra (own helpers: no code shared with mbsim.model)
# --------------------------------------------------------------------------
def cross(a, b):
    """Batched cross product ``a × b`` of (..., 3) arrays.

    Written with cyclic index shifts because ``np.cross`` costs several times
    more on the small arrays of the right-hand side.
    """
    return (a.take(_I1, axis=-1) * b.take(_I2, axis=-1)
            - a.take(_I2, axis=-1) * b.take(_I1, axis=-1))


_I1, _I2 = np.array([1, 2, 0]), np.array([2, 0, 1])


def matvec(m, x):
    """Batched product ``m x`` of (..., 3, 3) matrices and (..., 3) vectors."""
    return (m @ x[..., None])[..., 0]


def quat_mul(p, q):
    """Hamilton product ``p ⊗ q`` of (..., 4) quaternions [w, x, y, z]."""
    pw, pv = p[..., :1], p[..., 1:]
    qw, qv = q[..., :1], q[..., 1:]
    w = pw * qw - np.sum(pv * qv, axis=-1, keepdims=True)
    return np.concatenate([w, pw * qv + qw * pv + cross(pv, qv)], axis=-1)


def quat_to_matrix(q):
    """Rotation matrices Λ (..., 3, 3) of unit quaternions q (..., 4) [w, x, y, z]."""
    w, x, y, z = (q[..., i] for i in range(4))
    m = np.empty(q.shape[:-1] + (3, 3))
    m[..., 0, 0] = 1 - 2 * (y * y + z * z)
    m[..., 0, 1] = 2 * (x * y - w * z)
    m[..., 0, 2] = 2 * (x * z + w * y)
    m[..., 1, 0] = 2 * (x * y + w * z)
    m[..., 1, 1] = 1 - 2 * (x * x + z * z)
    m[..., 1, 2] = 2 * (y * z - w * x)
    m[..., 2, 0] = 2 * (x * z - w * y)
    m[..., 2, 1] = 2 * (y * z + w * x)
    m[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return m


def _normalize(q):
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quat_from_rotvec(theta):
    """Unit quaternions (..., 4) of rotation vectors θ (..., 3): angle |θ| about θ/|θ|."""
    angle = np.linalg.norm(theta, axis=-1, keepdims=True)
    half = 0.5 * angle
    # sin(|θ|/2)/|θ|, with its series below 1e-4 rad (error < 1e-17)
    k = np.where(angle > 1e-4, np.sin(half) / np.where(angle > 0.0, angle, 1.0), 0.5 - angle ** 2 / 48.0)
    return np.concatenate([np.cos(half), k * theta], axis=-1)


def _skew_part(x):
    """vee(X − Xᵀ) of (..., 3, 3) matrices: [X₂₁ − X₁₂, X₀₂ − X₂₀, X₁₀ − X₀₁]."""
    return np.stack([x[..., 2, 1] - x[..., 1, 2], x[..., 0, 2] - x[..., 2, 0],
                     x[..., 1, 0] - x[..., 0, 1]], axis=-1)


def _unit(i, j):
    e = np.zeros((3, 3))
    e[i, j] = 1.0
    return e


def _joint_triad(axis, second=None):
    """Orthonormal joint frame (3, 3), columns n, u, w (world, t = 0).

    ``n`` = axis; ``u`` = ``second`` made perpendicular to n if given, else the
    world axis least aligned with n made perpendicular; ``w = n × u``.  Every
    joint's constraint set is invariant to the choice of u (the rows come in
    pairs spanning the plane ⊥ n, or cover all three directions), so any
    deterministic choice does.
    """
    n = np.asarray(axis, dtype=float)
    n = n / np.linalg.norm(n)
    hint = np.eye(3)[int(np.argmin(np.abs(n)))] if second is None else np.asarray(second, float)
    u = hint - (hint @ n) * n
    u = u / np.linalg.norm(u)
    return np.column_stack([n, u, np.cross(n, u)])


# Rotational rows, as coefficient matrices C of Φ = C : (R − I) with R = E_Aᵀ E_B the
# rotation of B's joint frame relative to A's (in A's joint frame, basis n, u, w):
#   across : R₁₀ = u_A·n_B and R₂₀ = w_A·n_B, B's axis stays along A's (2 rows);
#   all    : ½ vee(R − Rᵀ) = sin(angle)·(its axis), no relative rotation (3 rows).
_ACROSS = (_unit(1, 0), _unit(2, 0))
_ALL = tuple(0.5 * (_unit(i, j) - _unit(j, i)) for i, j in ((2, 1), (0, 2), (1, 0)))
# Translational rows: columns k of A's joint frame, Φ = (E_A)_k · (x_B − x_A) (− drive)
_ROWS = {  # kind: (translational columns, rotational coefficient matrices)
    "spherical": ((0, 1, 2), ()),
    "revolute": ((0, 1, 2), _ACROSS),
    "prismatic": ((1, 2), _ALL),
    "cylindrical": ((1, 2), _ACROSS),
    "planar": ((0,), _ACROSS),
    "universal": ((0, 1, 2), None),  # one row a_A·b_B, built from the axes
    "lock": ((0, 1, 2), _ALL),
    "distance": ((), ()),  # one row of its own
}
# the angle of a drive: atan2(R₂₁ − R₁₂, R₁₁ + R₂₂), the rotation of B about n_A
_SIN, _COS = _unit(2, 1) - _unit(1, 2), _unit(1, 1) + _unit(2, 2)


# --------------------------------------------------------------------------
# results of one evaluation
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Forces:
    """Forces, accelerations and power of one state (all world frame).

    Attributes
    ----------
    force, torque : ndarray, (B, 3)
        Resultant force [N] and moment about the centre of mass [N·m] on each
        declared body: gravity, loads, connectors and joint reactions.  Zero
        rows for fixed bodies (their reactions are not computed).
    acceleration, angular_acceleration : ndarray, (B, 3)
        ``f/m`` [m/s²] and ``J⁻¹(τ − ω×Jω)`` [rad/s²]; zero for fixed bodies.
    connector_force, connector_moment : ndarray, (C, 3)
        Force [N] and pure moment [N·m] each connector exerts on its body A,
        scenario order (B receives the opposite; the moment of the force is
        not included, as in OUTPUT.md).
    connector_length : ndarray, (C,)
        Distance between the insertion points [m]; NaN for torsional dampers.
    dissipation_rate : float
        Power removed by dampers and torsional dampers [W] (THEORY §9).
    external_power : float
        Power of the loads, Σ f·v + τ·ω, plus that of the joint drives [W];
        gravity excluded (THEORY §9, §11).
    joint_force, joint_moment : ndarray, (J, 3)
        Reaction force [N] each joint exerts on its body A, and its moment
        [N·m] about the joint's point (a distance joint: A's point), drive
        included (OUTPUT.md ``/joints``; B receives the opposite force).
    joint_position_error, joint_angle_error : ndarray, (J,)
        Norm of each joint's translational [m] and rotational [rad]
        constraint residuals, drive rows included (0 where it has none).
    """

    force: np.ndarray
    torque: np.ndarray
    acceleration: np.ndarray
    angular_acceleration: np.ndarray
    connector_force: np.ndarray
    connector_moment: np.ndarray
    connector_length: np.ndarray
    dissipation_rate: float
    external_power: float
    joint_force: Optional[np.ndarray] = None
    joint_moment: Optional[np.ndarray] = None
    joint_position_error: Optional[np.ndarray] = None
    joint_angle_error: Optional[np.ndarray] = None


@dataclass(frozen=True)
class Energies:
    """Energy and momentum of one state (THEORY §9, moving bodies only).

    Attributes
    ----------
    kinetic : float
        Σ ½ m v·v + ½ ω·Jω [J].
    potential : float
        Σ_springs ½ k (L − L0)² − Σ m g·r [J].
    linear_momentum : ndarray, (3,)
        Σ m v [kg·m/s].
    angular_momentum : ndarray, (3,)
        Σ (r × m v + J ω) about the world origin [kg·m²/s].
    """

    kinetic: float
    potential: float
    linear_momentum: np.ndarray
    angular_momentum: np.ndarray


class Constraints(NamedTuple):
    """The joints' constraint equations at one state (m rows, N moving bodies).

    Rows are grouped by kind (translational, rotational, angle drives,
    distances), not by joint; ``row_joint`` names each row's joint.

    Attributes
    ----------
    residual : ndarray, (m,)
        Φ(q, t) [m or rad].
    jacobian : ndarray, (m, 6 N)
        G with Φ̇ = G u − Ḟ, u = [v_1, ω_1, …, v_N, ω_N] (spatial ω).
    gamma : ndarray, (m,)
        γ(q, u), the velocity-quadratic part of Φ̈ = G u̇ + γ − F̈.
    velocity_target, acceleration_target : ndarray, (m,)
        Ḟ(t) and F̈(t) on drive rows, 0 elsewhere.
    row_joint : ndarray of int, (m,)
    rotational : ndarray of bool, (m,)
        Rows whose residual is an angle.
    """

    residual: np.ndarray
    jacobian: np.ndarray
    gamma: np.ndarray
    velocity_target: np.ndarray
    acceleration_target: np.ndarray
    row_joint: np.ndarray
    rotational: np.ndarray


class _Kinematics(NamedTuple):
    r: np.ndarray  # (N, 3) moving bodies
    q: np.ndarray  # (N, 4) renormalised
    rot: np.ndarray  # (N, 3, 3)
    v: np.ndarray  # (N, 3)
    w: np.ndarray  # (N, 3)
    r_e: np.ndarray  # (B+1, 3) all bodies, world last
    rot_e: np.ndarray  # (B+1, 3, 3)
    v_e: np.ndarray  # (B+1, 3)
    w_e: np.ndarray  # (B+1, 3)
    z_a: np.ndarray  # (C, 3) arms, internal order (springs, dampers, torsional: 0)
    z_b: np.ndarray  # (C, 3)
    c: np.ndarray  # (C, 3) x_B − x_A
    length: np.ndarray  # (C,) meaningless for torsional dampers


# --------------------------------------------------------------------------
# the equations
# --------------------------------------------------------------------------
def _group(c) -> str:
    """The reference's group of connector ``c``: its type, a torsional spring about an axis apart."""
    if c.type == "torsional_spring" and getattr(c, "axis", None) is not None:
        return "torsional_spring_axis"
    return c.type


def _user_function(ref):
    """A spring's user law (THEORY §13) as the user wrote it, run as plain Python, and how many values it
    returns (1, 3 or 4): the reference shares none of the compiled wrapper's code."""
    from mbsim.elements.user_law import _import, parse_reference
    module, function = parse_reference(ref.reference)
    func = getattr(_import(module, ref.base)[0], function)
    func = getattr(func, "py_func", func)
    value = func(ref.length, 0.0, 0.0, np.array(ref.values, dtype=float))
    return func, (len(value) if isinstance(value, tuple) else 1)


def _left_jacobian_inverse(theta) -> np.ndarray:
    """J_l(θ)⁻¹ = I − ½ θ̂ + (1/φ² − (1 + cos φ)/(2 φ sin φ)) θ̂², φ = |θ| (a series below 1e-3 rad)."""
    phi = float(np.linalg.norm(theta))
    t = np.array([[0.0, -theta[2], theta[1]], [theta[2], 0.0, -theta[0]], [-theta[1], theta[0], 0.0]])
    c = 1.0 / 12.0 + phi ** 2 / 720.0 if phi < 1e-3 else 1.0 / phi ** 2 - (1.0 + np.cos(phi)) / (2.0 * phi * np.sin(phi))
    return np.eye(3) - 0.5 * t + c * t @ t


class _Curve:
    """A spring's force curve as the reference states it: SciPy's PCHIP interpolant of the points,
    continued linearly with its end slopes; the energy its integral from deflection 0."""

    def __init__(self, points):
        from scipy.interpolate import PchipInterpolator
        pts = np.asarray(points, dtype=float).reshape(-1, 2)
        self.d, self.f = pts[:, 0], pts[:, 1]
        self.p = PchipInterpolator(self.d, self.f, extrapolate=False)
        self.slope = self.p.derivative()(self.d[[0, -1]]) if len(self.d) > 2 else \
            np.full(2, (self.f[1] - self.f[0]) / (self.d[1] - self.d[0]))
        self.integral = self.p.antiderivative()  # from d[0]
        self.zero = self._primitive(0.0)

    def force(self, x: float) -> float:
        if x < self.d[0]:
            return float(self.f[0] + self.slope[0] * (x - self.d[0]))
        if x > self.d[-1]:
            return float(self.f[-1] + self.slope[1] * (x - self.d[-1]))
        return float(self.p(x))

    def _primitive(self, x: float) -> float:
        if x < self.d[0]:
            u = x - self.d[0]
            return float(u * (self.f[0] + 0.5 * self.slope[0] * u))
        if x > self.d[-1]:
            u = x - self.d[-1]
            return float(self.integral(self.d[-1]) + u * (self.f[-1] + 0.5 * self.slope[1] * u))
        return float(self.integral(x))

    def energy(self, x: float) -> float:
        return self._primitive(x) - self.zero


class EquationsOfMotion:
    """Right-hand side of the continuous equations of motion of a scenario.

    ::

        ṙ = v        q̇ = ½ [0, ω] ⊗ q        m v̇ = f        J ω̇ = τ − ω × J ω

    with ``J = Λ J_b Λᵀ`` (THEORY §1, §4) and f, τ from gravity, loads and
    the connectors of THEORY §6–7 taken at the current instant; plus the two
    work integrals of THEORY §9.

    Connectors are kept internally sorted by kind (springs, dampers,
    torsional dampers) so that each kind is one batched kernel; the resultant
    on the bodies is one sparse product built once.

    **Joints** (THEORY §11, SCENARIO.md) are ideal constraints Φ(q, t) = 0
    with the index-1 equations, solved at every evaluation::

        M u̇ + Gᵀλ = f − gyroscopic        G u̇ = F̈(t) − γ(q, u)

    u = [v, ω] per moving body, M = blocks m I and J, G = ∂Φ̇/∂u, γ the
    velocity-quadratic part of Φ̈.  The constraint force on the bodies is
    −Gᵀλ.  The multipliers are the minimum-norm solution of the range-space
    system ``(G M⁻¹ Gᵀ) λ = G a_free − F̈ + γ``, from the SVD of G M^(−1/2)
    (singular values below ``RCOND`` times the largest count as zero), so
    redundant joints — a planar four-bar of four revolutes — still give the
    unique accelerations.  The rows are parametrised here independently of
    the generalized-α code: with A's and B's joint frames E = [n u w] (world
    at t = 0, material copies in each body), the relative rotation
    R = E_Aᵀ E_B (R = I at t = 0) and d = x_B − x_A,

    =================  ==================================================
    translational      (E_A)_k · d − s(t), k a column of A's frame
    rotational         C : (R − I): R₁₀, R₂₀ (B's axis along A's) or
                       ½ vee(R − Rᵀ) (no relative rotation) or a_A·b_B
    angle drive        atan2(R₂₁ − R₁₂, R₁₁ + R₂₂) − F(t), unwrapped
                       to the branch nearest F(t)
    distance           (d·d − L²) / (2 L)
    =================  ==================================================

    (see ``_joint_rows`` for G and γ).  The equations drift off the
    manifold at the integrator's tolerance; `project` brings a state back
    (the solver does it at every output time).

    Parameters
    ----------
    scenario : Scenario
        A validated scenario (``mbsim.scenario.spec``).

    Attributes
    ----------
    y0 : ndarray, (13 N + 2,)
        Initial state (layout in the module docstring); with joints, projected
        onto them: positions by `project`'s Newton iteration (they hold by
        construction), velocities by the smallest change in the kinetic-energy
        norm, ``v = v₀ − M⁻¹Gᵀ(G M⁻¹ Gᵀ)⁺(G v₀ − Ḟ(0))`` (SCENARIO.md).
    body_names, connector_names, joint_names : tuple of str
        Declared bodies (B, ``world`` excluded), connectors (C) and joints (J),
        scenario order.
    moving : ndarray of bool, (B,)
        Which declared bodies have states.
    n_moving : int
        N.
    mass : ndarray, (N,)
    inertia_body : ndarray, (N, 3, 3)
        J_b of the moving bodies, body axes.
    gravity : ndarray, (3,)
    n_constraints : int
        m, the number of joint equations (drives included, redundant ones too).
    n_dependent : int
        How many of them are dependent (redundant) at t = 0.
    """

    RCOND = 1e-8
    """Singular values of G M^(−1/2) below RCOND times the largest are dependent rows."""

    def __init__(self, scenario: Scenario):
        bodies = scenario.bodies
        nb = len(bodies)
        self.body_names = tuple(b.name for b in bodies)
        self.connector_names = tuple(c.name for c in scenario.connectors)
        index = {b.name: i for i, b in enumerate(bodies)}
        index[WORLD] = nb  # extended body arrays carry `world` as the last row
        moving = np.array([not b.fixed for b in bodies], dtype=bool)
        self.moving = moving
        mi = np.flatnonzero(moving)
        self._mi = mi
        n = self.n_moving = mi.size
        self._mov_of = np.full(nb + 1, -1)  # body index -> moving index (−1: fixed, world)
        self._mov_of[mi] = np.arange(n)

        self.mass = np.array([bodies[i].mass for i in mi], dtype=float).reshape(n)
        self.inertia_body = np.array([bodies[i].inertia for i in mi], dtype=float).reshape(n, 3, 3)
        self._inertia_inv = np.linalg.inv(self.inertia_body) if n else self.inertia_body
        self.gravity = np.asarray(scenario.gravity, dtype=float)
        self._weight = self.mass[:, None] * self.gravity

        # initial pose of every body (+ world), kept for the fixed ones
        r0 = np.zeros((nb + 1, 3))
        q0 = np.zeros((nb + 1, 4))
        q0[:, 0] = 1.0
        for i, b in enumerate(bodies):
            r0[i] = b.position
            q0[i] = b.orientation
        q0 = _normalize(q0)
        self._r0_e, self._rot0_e = r0, quat_to_matrix(q0)
        self._q0 = q0[:nb]

        self.y0 = np.concatenate([
            r0[mi].ravel(), q0[mi].ravel(),
            np.array([bodies[i].velocity for i in mi], dtype=float).ravel(),
            np.array([bodies[i].angular_velocity for i in mi], dtype=float).ravel(),
            [0.0, 0.0],
        ])

        self._turns = {}  # the angles counted through full turns (_unwrap)
        self._init_connectors(scenario.connectors, index)
        self._init_loads(scenario.loads, index)
        self._init_scatter()
        self.joint_names = tuple(j.name for j in scenario.joints)
        self._init_joints(scenario.joints, index)
        self.n_dependent = 0
        if self._nj:
            self.n_dependent = self._count_dependent(self.y0)
            self.y0 = self.project(self.y0, 0.0)

    # ---------------------------------------------------------------- setup
    def _init_connectors(self, connectors, index):
        kinds = ("spring", "damper", "torsional_damper", "bushing", "torsional_spring", "torsional_spring_axis")
        plugins = list(dict.fromkeys(c.type for c in connectors if c.type not in kinds))  # scenario order
        order = [i for kind in kinds + tuple(plugins) for i, c in enumerate(connectors) if _group(c) == kind]
        cs = [connectors[i] for i in order]
        self._order = np.array(order, dtype=int)  # internal position -> scenario index
        self._spring_names = [c.name for c in cs if c.type == "spring"]
        ns = len(self._spring_names)
        p = ns + sum(c.type == "damper" for c in cs)
        self._ns, self._np, self._nc = ns, p, len(cs)
        ia = np.array([index[c.body_a] for c in cs], dtype=int)
        ib = np.array([index[c.body_b] for c in cs], dtype=int)
        self._ia, self._ib = ia, ib

        # material arms Z = Λ_0ᵀ (X − r_0) (THEORY §6); zero for torsional
        # dampers, which have no points, so every kind shares one kinematics
        pts = np.zeros((len(cs), 2, 3))
        pts[:p] = np.array([c.points for c in cs[:p]], dtype=float).reshape(p, 2, 3)
        rot0_t = np.swapaxes(self._rot0_e, -1, -2)
        self._za = matvec(rot0_t[ia], pts[:, 0] - self._r0_e[ia])
        self._zb = matvec(rot0_t[ib], pts[:, 1] - self._r0_e[ib])
        self._za[p:] = self._zb[p:] = 0.0
        self._k = np.array([c.stiffness if c.stiffness is not None else 0.0 for c in cs[:ns]], dtype=float)
        self._l0 = np.array([c.rest_length if c.rest_length is not None else 0.0 for c in cs[:ns]], dtype=float)
        # user laws (THEORY §13): the user's function itself, called as plain Python
        self._laws = [(i, *_user_function(c.params["law"]), np.array(c.params["law"].values, dtype=float))
                      for i, c in enumerate(cs[:ns]) if c.params and c.params.get("law") is not None]
        # force curves (THEORY §13): SciPy's PCHIP between the points, linear beyond with the end slopes
        self._curves = [(i, _Curve(c.params["force_curve"])) for i, c in enumerate(cs[:ns])
                        if c.params and c.params.get("force_curve") is not None]
        self._eps = np.array([c.damping for c in cs[ns:p]], dtype=float)[:, None]
        self._axial = np.array([bool(c.params.get("axial", False)) for c in cs[ns:p]], dtype=bool)
        self._damper_names = [c.name for c in cs[ns:p]]

        # torsional dampers: axis E = Λ_A,0ᵀ n_0 fixed in A's material frame (THEORY §7)
        self._nq = p + sum(c.type == "torsional_damper" for c in cs)  # the plug-in kinds' rows follow
        ts = cs[p:self._nq]
        self._chi = np.array([c.damping for c in ts], dtype=float)[:, None]
        ab = np.array([_PROJECTION[c.projection] for c in ts], dtype=float).reshape(-1, 2)
        self._pa, self._pb = ab[:, :1], ab[:, 1:]
        axes = np.array([np.zeros(3) if c.axis is None else c.axis for c in ts],
                        dtype=float).reshape(-1, 3)
        self._axis_mat = matvec(rot0_t[ia[p:self._nq]], axes)
        # bushings (THEORY §13): arms of their point, their frame E as material axes of A and of B
        # … and torsional springs, a bushing with κ I and χ I on the rotation alone, at the bodies' centres
        self._nb = self._nq + sum(_group(c) in ("bushing", "torsional_spring") for c in cs)
        bs = cs[self._nq:self._nb]
        if bs:
            sl = slice(self._nq, self._nb)
            self._za[sl] = [matvec(rot0_t[ia[i]], c.points[0] - self._r0_e[ia[i]]) if c.type == "bushing" else np.zeros(3)
                            for i, c in zip(range(self._nq, self._nb), bs)]
            self._zb[sl] = [matvec(rot0_t[ib[i]], c.points[1] - self._r0_e[ib[i]]) if c.type == "bushing" else np.zeros(3)
                            for i, c in zip(range(self._nq, self._nb), bs)]
            frames = np.array([c.params["bushing_axes"] if c.type == "bushing" else np.eye(3) for c in bs], dtype=float)
            self._bush_ea = rot0_t[ia[sl]] @ frames.transpose(0, 2, 1)  # columns: E as material vectors of A
            self._bush_eb = rot0_t[ib[sl]] @ frames.transpose(0, 2, 1)  # … and of B

            def six(c, key, rotational):
                if c.type == "bushing":
                    return c.params[key]
                out = np.zeros((6, 6))
                out[3:, 3:] = (rotational or 0.0) * np.eye(3)
                return out
            self._bush_k = np.array([six(c, "bushing_stiffness", c.stiffness) for c in bs], dtype=float)
            self._bush_k_anti = 0.5 * (self._bush_k - self._bush_k.swapaxes(-1, -2))  # a circulatory part
            self._bush_c = np.array([six(c, "bushing_damping", c.damping) for c in bs], dtype=float)
            self._bush_p = np.array([c.params["preload"] if c.type == "bushing" else np.zeros(6) for c in bs],
                                    dtype=float)
        # torsional springs about an axis (THEORY §13), rows _nb … _nx − 1: A's and B's triads (n, u, w) of
        # the axis, material
        self._nx = self._nb + sum(_group(c) == "torsional_spring_axis" for c in cs)
        ts = cs[self._nb:self._nx]
        triads = np.array([_joint_triad(c.axis) for c in ts], dtype=float).reshape(-1, 3, 3)
        self._tsa_a = rot0_t[ia[self._nb:self._nx]] @ triads
        self._tsa_b = rot0_t[ib[self._nb:self._nx]] @ triads
        self._tsa_k = np.array([c.stiffness for c in ts], dtype=float)
        self._tsa_c = np.array([c.damping or 0.0 for c in ts], dtype=float)
        self._plugins = self._init_plugins(plugins, cs, index)

    def _axis_springs(self, kin):
        """The torsional springs about an axis: per spring its angle φ = atan2(s, c) through full turns
        (s = w_A·u_B, c = u_A·u_B, THEORY §11, §13), its rate φ̇ = (c ṡ − s ċ)/(s² + c²) with
        ṡ = (ω_A − ω_B)·(w_A × u_B), ċ = (ω_A − ω_B)·(u_A × u_B), and the moment on A, Q g with
        Q = −κ φ − χ φ̇ and g = ∂φ/∂θ_A = (c w_A × u_B − s u_A × u_B)/(s² + c²) (−Q g on B: δφ = g·(δθ_A −
        δθ_B)); with the dissipated power χ φ̇² and the stored energy ½ κ φ²."""
        sl = slice(self._nb, self._nx)
        EA = np.einsum("nij,njk->nik", kin.rot_e[self._ia[sl]], self._tsa_a)
        EB = np.einsum("nij,njk->nik", kin.rot_e[self._ib[sl]], self._tsa_b)
        moment, power, energy = np.zeros((EA.shape[0], 3)), 0.0, 0.0
        for k in range(EA.shape[0]):
            uA, wA, uB = EA[k][:, 1], EA[k][:, 2], EB[k][:, 1]
            s, c = float(wA @ uB), float(uA @ uB)
            phi = self._unwrap(("axis spring", k), float(np.arctan2(s, c)))
            wr = kin.w_e[self._ia[self._nb + k]] - kin.w_e[self._ib[self._nb + k]]
            gs, gc = np.cross(wA, uB), np.cross(uA, uB)
            rho2 = s * s + c * c
            g = (c * gs - s * gc) / rho2
            rate = float(g @ wr)
            Q = -self._tsa_k[k] * phi - self._tsa_c[k] * rate
            moment[k] = Q * g
            power += self._tsa_c[k] * rate * rate
            energy += 0.5 * self._tsa_k[k] * phi * phi
        return moment, power, energy

    def _init_plugins(self, types, cs, index):
        """The kinds registered from outside: per kind (kind, its internal rows, its packed instances).
        Their arms join ``_za``, ``_zb`` (zero for a kind without points), so they share the kinematics."""
        from mbsim.elements import BY_TYPE
        from mbsim.elements.base import Elements
        out, lo = [], self._nx
        for typ in types:
            kind = BY_TYPE.get(typ)
            if kind is None:
                raise ValueError(f"reference solver: unsupported connector type {typ!r} (not registered)")
            specs = [c for c in cs[lo:] if c.type == typ]
            if kind.section != "connectors" or any(kind.unknowns_of(c) for c in specs):
                raise ValueError(f"reference solver: element kind {typ!r} has unknowns of its own; only the "
                                 f"built-in joints are solved here")
            rows = np.arange(lo, lo + len(specs))
            el = Elements((kind,), specs, index, self._r0_e, self._rot0_e)
            self._za[rows], self._zb[rows] = el.arms[:, 0:3], el.arms[:, 3:6]
            out.append((kind, rows, el))
            lo += len(specs)
        return out

    def _init_loads(self, loads, index):
        self._load_body = np.array([self._mov_of[index[ld.body]] for ld in loads], dtype=int)
        is_force = np.array([ld.type == "force" for ld in loads], dtype=bool)[:, None]  # (L, 1)
        self._load_is_force = is_force
        self._load_mask = np.hstack([is_force, ~is_force]).astype(float)  # (L, 2): force, torque
        self._load_vec = np.array([ld.vector for ld in loads], dtype=float).reshape(-1, 3)
        # constant scales are evaluated once; only the others are called per RHS
        self._load_scale0 = np.array(
            [float(ld.scale.value) if isinstance(ld.scale, Constant) else np.nan for ld in loads])
        self._load_varying = [(i, ld.scale) for i, ld in enumerate(loads)
                              if not isinstance(ld.scale, Constant)]

    def _init_scatter(self):
        """One sparse matrix (N, 2C + L) sums connector ends and loads onto the moving bodies.

        Columns: the C connector ends on A (+1), the C ends on B (−1), the L
        loads (+1); rows of fixed bodies are dropped, they take no resultant.
        """
        nc, nl = self._nc, self._load_body.size
        rows = np.concatenate([self._mov_of[self._ia], self._mov_of[self._ib], self._load_body])
        data = np.concatenate([np.ones(nc), -np.ones(nc), np.ones(nl)])
        keep = rows >= 0
        self._scatter = sparse.csr_matrix(
            (data[keep], (rows[keep], np.arange(rows.size)[keep])),
            shape=(self.n_moving, rows.size))

    def _init_joints(self, joints, index):
        """Material arms and joint frames, and the constraint rows grouped by kind.

        Rows: translational (``_t_*``), rotational with a constant coefficient
        matrix (``_r_*``), angle drives (``_a_*``), distances (``_d_*``), in
        that order.  ``_drives`` lists (row, time function) of the drive rows.
        """
        nj = self._nj = len(joints)
        ja = np.array([index[j.body_a] for j in joints], dtype=int)
        jb = np.array([index[j.body_b] for j in joints], dtype=int)
        self._ja, self._jb = ja, jb
        frames = np.zeros((nj, 3, 3))
        points = np.zeros((nj, 2, 3))
        t_rows, r_rows, a_rows, d_rows = [], [], [], []  # (joint, column | C | function | L[, function])
        for i, j in enumerate(joints):
            if j.type not in _ROWS:
                raise ValueError(f"reference solver: unsupported joint type {j.type!r} (joint '{j.name}')")
            drives = [k for k in ("angle", "displacement") if getattr(j, k) is not None]
            if set(drives) - set(DRIVEN.get(j.type, ())):
                raise ValueError(f"reference solver: joint '{j.name}' ({j.type}) cannot carry "
                                 f"drive {drives}")
            columns, coefs = _ROWS[j.type]
            if j.type == "distance":
                frames[i], points[i] = np.eye(3), j.points
                d_rows.append((i, float(j.length)))
            else:
                points[i] = j.point
                if j.type == "universal":  # a = axes[0] = n in A, b = axes[1] = b_n n + b_u u in B
                    frames[i] = _joint_triad(j.axes[0], j.axes[1])
                    b = np.asarray(j.axes[1], float) / np.linalg.norm(j.axes[1])
                    coefs = ((b @ frames[i, :, 0]) * _unit(0, 0) + (b @ frames[i, :, 1]) * _unit(0, 1),)
                else:
                    frames[i] = np.eye(3) if j.axis is None else _joint_triad(j.axis)
            t_rows += [(i, k, None) for k in columns]
            if j.displacement is not None:
                t_rows.append((i, 0, j.displacement))
            r_rows += [(i, c) for c in coefs]
            if j.angle is not None:
                a_rows.append((i, j.angle))
        # joint stops (THEORY §13): (joint, on the angle, lower, upper, stiffness, damping)
        self._stops = [(i, coordinate == "angle", lo, up, k, c)
                       for i, j in enumerate(joints) for coordinate, lo, up, k, c in getattr(j, "stops", ())]

        # material copies (THEORY §6, §11): Z = Λ_0ᵀ (X − r_0), E = Λ_0ᵀ E_world
        rot0_t = np.swapaxes(self._rot0_e, -1, -2)
        self._arm_a = matvec(rot0_t[ja], points[:, 0] - self._r0_e[ja])
        self._arm_b = matvec(rot0_t[jb], points[:, 1] - self._r0_e[jb])
        self._frame_a, self._frame_b = rot0_t[ja] @ frames, rot0_t[jb] @ frames

        nt, nr, na, nd = len(t_rows), len(r_rows), len(a_rows), len(d_rows)
        self._nt, self._nr, self._na, self._nd = nt, nr, na, nd
        self._t_joint = np.array([r[0] for r in t_rows], dtype=int)
        self._t_col = np.array([r[1] for r in t_rows], dtype=int)
        self._r_coef = np.array([r[1] for r in r_rows], dtype=float).reshape(nr, 3, 3)
        self._ra_joint = np.array([r[0] for r in r_rows + a_rows], dtype=int)
        self._d_joint = np.array([r[0] for r in d_rows], dtype=int)
        self._d_len = np.array([r[1] for r in d_rows], dtype=float)
        self._drives = ([(k, r[2]) for k, r in enumerate(t_rows) if r[2] is not None]
                        + [(nt + nr + k, r[1]) for k, r in enumerate(a_rows)])
        self._drive_rows = np.array([k for k, _ in self._drives], dtype=int)
        m = self.n_constraints = nt + nr + na + nd
        self._row_joint = np.concatenate([self._t_joint, self._ra_joint, self._d_joint]).astype(int)
        self._row_rot = np.zeros(m, dtype=bool)
        self._row_rot[nt:nt + nr + na] = True
        # per-joint sums of row quantities (reactions, squared residuals)
        self._row_sum = sparse.csr_matrix((np.ones(m), (self._row_joint, np.arange(m))), shape=(nj, m))

        # scatter of the rows' 12-wide local blocks [v_A, ω_A, v_B, ω_B] into G (m, 6 N)
        n6 = 6 * self.n_moving
        self._g_index = []
        for end, body in ((0, ja), (1, jb)):
            mov = self._mov_of[body[self._row_joint]]
            rows = np.flatnonzero(mov >= 0)
            flat = (rows[:, None] * n6 + 6 * mov[rows, None] + np.arange(6)).ravel()
            self._g_index.append((flat, rows, slice(6 * end, 6 * end + 6)))

        # J_b^(−1/2), for the metric of the minimum-norm solves
        e, vec = np.linalg.eigh(self.inertia_body)
        self._inertia_inv_sqrt = (vec / np.sqrt(e)[:, None, :]) @ np.swapaxes(vec, -1, -2)
        self._mass_inv_sqrt = 1.0 / np.sqrt(self.mass)
        scale = max([1.0] + [float(np.abs(a).max()) for a in (self._r0_e, points, self._d_len) if a.size])
        self._length_scale = scale
        self._newton_tol = 1e-14 * scale

    # ----------------------------------------------------------- state views
    def start_at(self, position, orientation) -> None:
        """Start from the positions and orientations (B, 3), (B, 4) of every declared body, in scenario order,
        at rest (``initial: equilibrium``: the caller found them); connectors and joints keep the geometry
        of the scenario's configuration, as they were built from it."""
        y = self.y0.copy()
        r, q, v, w, _, _ = self.split(y)
        r[:] = np.asarray(position, dtype=float)[self._mi]
        q[:] = _normalize(np.asarray(orientation, dtype=float)[self._mi])
        v[:] = 0.0
        w[:] = 0.0
        self.y0 = self.project(y, 0.0) if self._nj else y

    def split(self, y):
        """Views of the state blocks: r, q, v, ω (N, 3|4), dissipated, external work."""
        n = self.n_moving
        r = y[:3 * n].reshape(n, 3)
        q = y[3 * n:7 * n].reshape(n, 4)
        v = y[7 * n:10 * n].reshape(n, 3)
        w = y[10 * n:13 * n].reshape(n, 3)
        return r, q, v, w, y[13 * n], y[13 * n + 1]

    def body_states(self, y):
        """Pose and velocity of every declared body (fixed ones at rest).

        Parameters
        ----------
        y : ndarray, (13 N + 2,)

        Returns
        -------
        r : ndarray, (B, 3)
        q : ndarray, (B, 4)
            Renormalised; the sign is that of the integrated state.
        v, w : ndarray, (B, 3)
        """
        r, q, v, w, _, _ = self.split(y)
        nb = len(self.body_names)
        out_r = self._r0_e[:nb].copy()
        out_q = self._q0.copy()
        out_v = np.zeros((nb, 3))
        out_w = np.zeros((nb, 3))
        out_r[self._mi], out_q[self._mi] = r, _normalize(q)
        out_v[self._mi], out_w[self._mi] = v, w
        return out_r, out_q, out_v, out_w

    def _bushing_deflection(self, kin):
        """Per bushing: E (world columns), the deflection δ (6), its rate δ̇ (6), J_l⁻ᵀ(θ) and d."""
        sl = slice(self._nq, self._nb)
        ia, ib = self._ia[sl], self._ib[sl]
        E = np.einsum("nij,njk->nik", kin.rot_e[ia], self._bush_ea)  # R_A R_A0ᵀ E_0
        F = np.einsum("nij,njk->nik", kin.rot_e[ib], self._bush_eb)
        Q = np.einsum("nji,njk->nik", E, F)  # Eᵀ F
        theta = Rotation.from_matrix(Q).as_rotvec()
        d = kin.c[sl]
        ddot = (kin.v_e[ib] + cross(kin.w_e[ib], kin.z_b[sl])) - (kin.v_e[ia] + cross(kin.w_e[ia], kin.z_a[sl]))
        u = ddot - cross(kin.w_e[ia], d)
        rel = np.einsum("nji,nj->ni", E, kin.w_e[ib] - kin.w_e[ia])
        jl_inv = np.array([_left_jacobian_inverse(th) for th in theta])
        delta = np.concatenate((np.einsum("nji,nj->ni", E, d), theta), axis=1)
        rate = np.concatenate((np.einsum("nji,nj->ni", E, u), np.einsum("nij,nj->ni", jl_inv, rel)), axis=1)
        return E, delta, rate, jl_inv.swapaxes(-1, -2), d

    def _bushings(self, kin):
        """Force on A, pure moments on A and (with the opposite sign) on B, and the dissipated power of the
        bushings: g = −(p + Kδ + Cδ̇) on B in E's axes, its moment through J_l⁻ᵀ (THEORY §13)."""
        E, delta, rate, jl_inv_t, d = self._bushing_deflection(kin)
        g = -(self._bush_p + np.einsum("nij,nj->ni", self._bush_k, delta)
              + np.einsum("nij,nj->ni", self._bush_c, rate))
        on_b = np.einsum("nij,nj->ni", E, g[:, :3])  # the force on B's point
        moment_b = np.einsum("nij,nj->ni", E, np.einsum("nij,nj->ni", jl_inv_t, g[:, 3:]))
        power = float(np.sum(rate * np.einsum("nij,nj->ni", self._bush_c, rate)))
        # a non-symmetric K: its antisymmetric part's power on the bodies, −(K_a δ)·δ̇, is external work
        worked = -float(np.sum(np.einsum("nij,nj->ni", self._bush_k_anti, delta) * rate))
        return -on_b, -moment_b + cross(on_b, d), -moment_b, power, worked

    def _bushing_energy(self, kin) -> float:
        _, delta, _, _, _ = self._bushing_deflection(kin)
        return float(0.5 * np.sum(delta * np.einsum("nij,nj->ni", self._bush_k, delta)) + np.sum(self._bush_p * delta))

    def _joint_stops(self, kin: _Kinematics):
        """The joints' stops (THEORY §13), from the joint frames and points as they are: per joint the force on
        A and its moment about A's joint point, the force on B at B's point and the pure moment on B; the
        dissipated power and the stored energy.

        The angle: φ = atan2(R₂₁ − R₁₂, R₁₁ + R₂₂) of R = E_Aᵀ E_B (columns n, u, w), through full turns
        (:meth:`_unwrap`), φ̇ = n·(ω_B − ω_A); its generalized force Q is a moment Q n on B, −Q n
        on A.  The offset: s = n·d (d = x_B − x_A), ṡ = n·(v̇ of the points) + (ω_A × n)·d; from
        δs = n·δx_B − n·δx_A + (n × d)·δθ_A, force Q n on B at x_B, −Q n on A at x_A and a couple Q n × d
        on A.  Q = −(k p + c ṗ) beyond a bound (p the penetration), clipped to never pull."""
        nj = self._nj
        fa, ma, fb, mb = (np.zeros((nj, 3)) for _ in range(4))
        power = energy = 0.0
        for i, angle, lo, up, k, c in self._stops:
            a, b = self._ja[i], self._jb[i]
            ea = kin.rot_e[a] @ self._frame_a[i]
            n = ea[:, 0]
            if angle:
                R = ea.T @ (kin.rot_e[b] @ self._frame_b[i])
                q = np.arctan2(R[2, 1] - R[1, 2], R[1, 1] + R[2, 2])
                q = self._unwrap(("stop", i), q)
                qd = float(n @ (kin.w_e[b] - kin.w_e[a]))
            else:
                za, zb = kin.rot_e[a] @ self._arm_a[i], kin.rot_e[b] @ self._arm_b[i]
                d = (kin.r_e[b] + zb) - (kin.r_e[a] + za)
                q = float(n @ d)
                qd = float(n @ ((kin.v_e[b] + np.cross(kin.w_e[b], zb)) - (kin.v_e[a] + np.cross(kin.w_e[a], za)))
                           + np.cross(kin.w_e[a], n) @ d)
            pen = q - up if q > up else (lo - q if q < lo else 0.0)
            if pen <= 0.0:
                continue
            side = -1.0 if q > up else 1.0  # the sign of the force on q
            pen_rate = -side * qd
            push = k * pen + c * pen_rate
            energy += 0.5 * k * pen * pen
            if push > 0.0:
                Q = side * push
                power += c * pen_rate * pen_rate
            else:  # separating faster than the spring follows: no force, the stored energy is let go
                Q = 0.0
                power -= k * pen * pen_rate
            if angle:
                ma[i] -= Q * n
                mb[i] += Q * n
            else:
                fa[i] -= Q * n
                fb[i] += Q * n
                ma[i] += Q * np.cross(n, d)
        return fa, ma, fb, mb, power, energy

    def _unwrap(self, key, angle: float) -> float:
        """``angle`` (−π, π] on the turn nearest to the one this element's angle had at the previous
        evaluation (0 at first), which it then becomes: the solver evaluates the equations along the motion
        (its stages lie within a step), and :func:`mbsim.reference.solve_reference` starts the frames from
        t = 0 again (:meth:`restart_turns`) -- valid while an element turns by less than half a turn between
        two evaluations."""
        ref = self._turns.get(key, 0.0)
        angle = angle + 2.0 * np.pi * np.floor((ref - angle) / (2.0 * np.pi) + 0.5)
        self._turns[key] = angle
        return angle

    def restart_turns(self) -> None:
        """Forget the turns counted (:meth:`_unwrap`): the next evaluation is near t = 0 again."""
        self._turns = {}

    def _kinematics(self, y) -> _Kinematics:
        r, q, v, w, _, _ = self.split(y)
        q = _normalize(q)  # the integrator lets |q| drift at the tolerance level
        rot = quat_to_matrix(q)
        mi = self._mi
        r_e, rot_e = self._r0_e.copy(), self._rot0_e.copy()
        v_e, w_e = np.zeros_like(r_e), np.zeros_like(r_e)
        r_e[mi], rot_e[mi], v_e[mi], w_e[mi] = r, rot, v, w
        z_a = matvec(rot_e[self._ia], self._za)
        z_b = matvec(rot_e[self._ib], self._zb)
        c = (r_e[self._ib] + z_b) - (r_e[self._ia] + z_a)
        return _Kinematics(r, q, rot, v, w, r_e, rot_e, v_e, w_e, z_a, z_b, c,
                           np.sqrt(np.einsum("ij,ij->i", c, c)))

    def _connectors(self, kin: _Kinematics, t):
        """Forces f and pure moments m on A (C, 3), pure moments m_B on B with the opposite sign (−m_B on
        B: m_B = m but for a plug-in kind), internal order, and dissipation [W]."""
        ns, p, nc = self._ns, self._np, self._nc
        f = np.zeros((nc, 3))
        m = np.zeros((nc, 3))
        mb = m

        # spring, THEORY §7: f = k (1 − L0/L) c
        if ns:
            length = kin.length[:ns]
            bad = (length == 0.0) & (self._l0 > 0.0)
            if bad.any():
                name = self._spring_names[int(np.flatnonzero(bad)[0])]
                raise RuntimeError(f"spring '{name}': insertion points coincide at t = {t:.9g} "
                                   "with rest length > 0, so its direction is undefined")
            safe = np.where(length > 0.0, length, 1.0)  # L0 = 0 needs no direction
            f[:ns] = (self._k * (1.0 - self._l0 / safe))[:, None] * kin.c[:ns]
            for i, curve in self._curves:  # the tension T(L − L0) along the line: T c/L on A
                tension = curve.force(length[i] - self._l0[i])
                if length[i] == 0.0 and tension != 0.0:
                    raise RuntimeError(f"spring '{self._spring_names[i]}': insertion points coincide at t = {t:.9g} "
                                       f"under a force {tension:g} N, so its direction is undefined")
                f[i] = tension / safe[i] * kin.c[i]

        # damper, THEORY §7: f = ε_c (v_pt,B − v_pt,A), full relative velocity; axial: its component
        # along the line, f = ε_c L̇ c/L (L̇ = c·Δv/L)
        dissipation = 0.0
        worked = 0.0
        for i, law, returns, prm in self._laws:  # a user law's tension T(L, L̇, t) along the line: T c/L on A
            a, b = self._ia[i], self._ib[i]
            dv = (kin.v_e[b] + np.cross(kin.w_e[b], kin.z_b[i])) - (kin.v_e[a] + np.cross(kin.w_e[a], kin.z_a[i]))
            L = float(kin.length[i])
            rate = float(kin.c[i] @ dv) / L
            value = law(L, rate, t, prm)
            tension = float(value[0] if returns > 1 else value)
            f[i] = tension / L * kin.c[i]
            if returns == 4:  # it stores V(L): the rest of its work, (T − V′) L̇, is dissipated
                h = 1e-5 * L
                slope = (law(L + h, rate, t, prm)[3] - law(L - h, rate, t, prm)[3]) / (2.0 * h)
                dissipation += (tension - slope) * rate
            else:  # its power into the bodies, −T L̇, is external work
                worked -= tension * rate
        if p > ns:
            ia, ib = self._ia[ns:p], self._ib[ns:p]
            dv = (kin.v_e[ib] + cross(kin.w_e[ib], kin.z_b[ns:p])) \
                - (kin.v_e[ia] + cross(kin.w_e[ia], kin.z_a[ns:p]))
            if self._axial.any():
                length = kin.length[ns:p]
                bad = self._axial & (length == 0.0)
                if bad.any():
                    name = self._damper_names[int(np.flatnonzero(bad)[0])]
                    raise RuntimeError(f"damper '{name}': axial, and its points coincide at t = {t:.9g}, "
                                       "so its direction is undefined")
                e = kin.c[ns:p] / np.where(length > 0.0, length, 1.0)[:, None]
                along = np.einsum("ij,ij->i", e, dv)[:, None] * e
                dv = np.where(self._axial[:, None], along, dv)
            f[ns:p] = self._eps * dv
            dissipation += float(np.vdot(f[ns:p], dv))

        # torsional damper, THEORY §7: m = χ_r P (ω_B − ω_A), P = a I + b n⊗n, n = Λ_A E
        nt = self._nq
        if nt > p:
            n = matvec(kin.rot_e[self._ia[p:nt]], self._axis_mat)
            wr = kin.w_e[self._ib[p:nt]] - kin.w_e[self._ia[p:nt]]
            nw = np.einsum("ij,ij->i", n, wr)[:, None]
            m[p:nt] = self._chi * (self._pa * wr + self._pb * nw * n)
            dissipation += float(np.vdot(m[p:nt], wr))
        if self._nb > nt:  # bushings
            mb = m.copy()
            f_b, m_b, mb_b, power, bushing_work = self._bushings(kin)
            f[nt:self._nb], m[nt:self._nb], mb[nt:self._nb] = f_b, m_b, mb_b
            dissipation += power
            worked += bushing_work
        if self._nx > self._nb:  # torsional springs about an axis
            mb = mb.copy() if mb is not m else m.copy()
            moment, power, _ = self._axis_springs(kin)
            m[self._nb:self._nx] = moment
            mb[self._nb:self._nx] = moment
            dissipation += power
        if self._plugins:
            mb = mb.copy() if mb is not m else m.copy()
            for kind, rows, el in self._plugins:
                y = self._plugin_rows(kind, rows, el, kin, t)
                f[rows], m[rows], mb[rows] = -y[:, 0:3], y[:, 3:6], -y[:, 6:9]
                dissipation += float(np.sum(y[:, 9]))
        return f, m, mb, dissipation, worked

    def _plugin_rows(self, kind, rows, el, kin: _Kinematics, t):
        """A plug-in kind's law at this state (mbsim.elements.base: the state row of each instance from
        this module's kinematics, the law run as plain Python): per instance its p = (p_d, p_A, p_B) and
        its dissipated power and stored energy, (n, 11)."""
        from mbsim import kernels
        from mbsim.elements import base
        n = rows.size
        ia, ib = self._ia[rows], self._ib[rows]
        x, y, dy = np.zeros((n, base.N_X)), np.zeros((n, base.N_Y)), np.zeros((n, base.N_DY))
        x[:, base.X_D:base.X_D + 3] = kin.c[rows]
        x[:, base.X_DV:base.X_DV + 3] = ((kin.v_e[ib] + cross(kin.w_e[ib], kin.z_b[rows]))
                                         - (kin.v_e[ia] + cross(kin.w_e[ia], kin.z_a[rows])))
        x[:, base.X_WA:base.X_WA + 3], x[:, base.X_WB:base.X_WB + 3] = kin.w_e[ia], kin.w_e[ib]
        for k in range(int(el.n_axes.max(initial=0))):
            axis = matvec(kin.rot_e[np.where(el.axis_side[:, k] != 0, ib, ia)], el.axes[:, k])
            x[:, base.X_AXES + 3 * k:base.X_AXES + 3 * k + 3] = axis
            x[:, base.X_MOVES + 3 * k:base.X_MOVES + 3 * k + 3] = axis
        with kernels.plain_python():
            bad = kind.law(0, n, el.data, x, float(t), base.VALUES, y, dy)
        if bad >= 0:
            raise RuntimeError(f"{kind.type} '{el.names[bad]}' {kind.failure} at t = {t:.9g}")
        return np.concatenate((y[:, base.Y_P:base.Y_P + 9], y[:, [base.Y_POWER, base.Y_POTENTIAL]]), axis=1)

    def _loads(self, kin: _Kinematics, t):
        """Scaled load vectors (L, 3) [N or N·m] and their power [W]."""
        s = self._load_scale0.copy()
        for i, scale in self._load_varying:  # one call per time-varying load (few)
            s[i] = scale(t)
        lv = self._load_vec * s[:, None]
        b = self._load_body
        moved = np.where(self._load_is_force, kin.v[b], kin.w[b])
        return lv, float(np.vdot(lv, moved))

    def _resultants(self, y, t):
        kin = self._kinematics(y)
        f, m, mb, dissipation, worked = self._connectors(kin, t)
        lv, power = self._loads(kin, t)
        power += worked
        nc = self._nc
        # A receives (f, z_A × f + m), B receives −(f, z_B × f + m_B) (THEORY §6; m_B = m but for a
        # plug-in kind); the sign of B is in the scatter matrix
        ends = np.empty((self._scatter.shape[1], 6))
        ends[:nc, :3] = ends[nc:2 * nc, :3] = f
        ends[:nc, 3:] = cross(kin.z_a, f) + m
        ends[nc:2 * nc, 3:] = cross(kin.z_b, f) + mb
        ends[2 * nc:, :3] = lv * self._load_mask[:, :1]
        ends[2 * nc:, 3:] = lv * self._load_mask[:, 1:]
        ft = self._scatter @ ends
        force = self._weight + ft[:, :3]
        torque = ft[:, 3:]
        if self._stops:
            fa, ma, fb, mb, stop_power, _ = self._joint_stops(kin)
            dissipation += stop_power
            for body, arm, f_, m_ in ((self._ja, self._arm_a, fa, ma), (self._jb, self._arm_b, fb, mb)):
                mov = self._mov_of[body]
                on = np.flatnonzero(mov >= 0)
                z = matvec(kin.rot_e[body[on]], arm[on])
                np.add.at(force, mov[on], f_[on])
                np.add.at(torque, mov[on], cross(z, f_[on]) + m_[on])
        # J ω̇ = τ − ω × Jω, solved in body axes where J_b is constant
        rot_t = np.swapaxes(kin.rot, -1, -2)
        wb = matvec(rot_t, kin.w)
        ab = matvec(self._inertia_inv,
                    matvec(rot_t, torque) - cross(wb, matvec(self.inertia_body, wb)))
        return (kin, f, m, dissipation, power, force, torque, force / self.mass[:, None],
                matvec(kin.rot, ab))

    # ---------------------------------------------------------------- joints
    def _joint_rows(self, kin: _Kinematics, t):
        """Every joint row at one state: local Jacobian blocks, γ, Φ and the drive targets.

        Returns
        -------
        blk : ndarray, (m, 12)
            Φ̇ = blk · [v_A, ω_A, v_B, ω_B] − Ḟ (rows of G before the scatter).
        gamma : ndarray, (m,)
            Φ̈ = blk · [a_A, α_A, a_B, α_B] + γ − F̈.
        phi : ndarray, (m,)
            Φ(q, t).
        fd, fdd : ndarray, (m,)
            Ḟ(t), F̈(t) on drive rows, else 0.
        z_a, d : ndarray, (J, 3)
            A's arm and x_B − x_A of each joint.

        Derivation (body-fixed vectors move as ż = ω × z; the acceleration-free
        part of each second derivative is γ; every formula is checked against
        finite differences along a motion in the tests):

        - translational, a = (E_A)_k fixed in A, d̀ = ḋ:
          Φ̇ = −a·v_A + (a×(d + z_A))·ω_A + a·v_B − (a×z_B)·ω_B,
          γ = (ω_A×(ω_A×a))·d + 2(ω_A×a)·ḋ + a·(ω_B×(ω_B×z_B) − ω_A×(ω_A×z_A));
        - rotational, Φ = C:(R − I): Ṙ = Ω̂R with Ω = E_Aᵀ(ω_B − ω_A), and
          C:(ŷR) = h·y with h = −vee(RCᵀ − CRᵀ), so Φ̇ = (E_A h)·(ω_B − ω_A);
          Ω̇ = E_Aᵀ(α_B − α_A) − p, p = E_Aᵀ(ω_A×ω_B), and C:(Ω̂Ω̂R) =
          Ωᵀ C Rᵀ Ω − |Ω|² C:R, so γ = Ωᵀ C Rᵀ Ω − |Ω|² C:R − h·p;
        - angle φ = atan2(σ, κ), σ = C_σ:R, κ = C_κ:R: φ̇ = C_φ:Ṙ with the
          state-dependent C_φ = (κ C_σ − σ C_κ)/(σ² + κ²); its rate adds
          Ċ_φ:Ṙ = −2 φ̇ (σσ̇ + κκ̇)/(σ² + κ²) to the rotational γ (0 on the
          manifold, where σ² + κ² = 4);
        - distance, Φ = (d·d − L²)/(2L), e = d/L: Φ̇ = e·ḋ (a translational
          row with a non-rotating a), γ = (ḋ·ḋ + d·(ω_B×(ω_B×z_B) −
          ω_A×(ω_A×z_A)))/L.
        """
        ja, jb = self._ja, self._jb
        rot_a, rot_b = kin.rot_e[ja], kin.rot_e[jb]
        z_a, z_b = matvec(rot_a, self._arm_a), matvec(rot_b, self._arm_b)
        w_a, w_b = kin.w_e[ja], kin.w_e[jb]
        d = (kin.r_e[jb] + z_b) - (kin.r_e[ja] + z_a)
        dd = (kin.v_e[jb] + cross(w_b, z_b)) - (kin.v_e[ja] + cross(w_a, z_a))
        centripetal = cross(w_b, cross(w_b, z_b)) - cross(w_a, cross(w_a, z_a))
        e_a = rot_a @ self._frame_a  # (J, 3, 3) A's joint frame, columns n, u, w

        m, nt, nr, na = self.n_constraints, self._nt, self._nr, self._na
        blk = np.zeros((m, 12))
        gamma, phi = np.empty(m), np.empty(m)
        f0, fd, fdd = np.zeros(m), np.zeros(m), np.zeros(m)
        for row, fn in self._drives:
            f0[row], fd[row], fdd[row] = fn(t), fn.derivative(t, 1), fn.derivative(t, 2)

        if nt:
            j = self._t_joint
            a = e_a[j, :, self._t_col]  # (nt, 3)
            wa = cross(w_a[j], a)
            blk[:nt, 0:3] = -a
            blk[:nt, 3:6] = cross(a, d[j] + z_a[j])
            blk[:nt, 6:9] = a
            blk[:nt, 9:12] = -cross(a, z_b[j])
            gamma[:nt] = (np.einsum("ij,ij->i", cross(w_a[j], wa), d[j])
                          + 2.0 * np.einsum("ij,ij->i", wa, dd[j])
                          + np.einsum("ij,ij->i", a, centripetal[j]))
            phi[:nt] = np.einsum("ij,ij->i", a, d[j]) - f0[:nt]

        if nr + na:
            j, rows = self._ra_joint, slice(nt, nt + nr + na)
            ej = e_a[j]
            ej_t = np.swapaxes(ej, -1, -2)
            rel = ej_t @ (rot_b[j] @ self._frame_b[j])  # R, (nr + na, 3, 3)
            coef = np.empty_like(rel)
            coef[:nr] = self._r_coef
            if na:
                ra = rel[nr:]
                sig = np.einsum("rij,ij->r", ra, _SIN)
                kap = np.einsum("rij,ij->r", ra, _COS)
                rho2 = (sig * sig + kap * kap)[:, None, None]
                coef[nr:] = (kap[:, None, None] * _SIN - sig[:, None, None] * _COS) / rho2
            h = -_skew_part(rel @ np.swapaxes(coef, -1, -2))
            k = matvec(ej, h)
            blk[rows, 3:6] = -k
            blk[rows, 9:12] = k
            om = matvec(ej_t, w_b[j] - w_a[j])
            p = matvec(ej_t, cross(w_a[j], w_b[j]))
            c_r = np.einsum("rij,rij->r", coef, rel)
            gamma[rows] = (np.einsum("ri,rij,rkj,rk->r", om, coef, rel, om)
                           - np.einsum("ri,ri->r", om, om) * c_r
                           - np.einsum("ri,ri->r", h, p))
            phi[nt:nt + nr] = c_r[:nr] - np.trace(coef[:nr], axis1=-2, axis2=-1)
            if na:
                # the rate of C_φ; Ṙ = Ω̂R column by column
                rdot = np.swapaxes(cross(om[nr:, None, :], np.swapaxes(ra, -1, -2)), -1, -2)
                sig_dot = np.einsum("rij,ij->r", rdot, _SIN)
                kap_dot = np.einsum("rij,ij->r", rdot, _COS)
                phi_dot = np.einsum("ri,ri->r", h[nr:], om[nr:])
                gamma[nt + nr:nt + nr + na] -= 2.0 * phi_dot * (sig * sig_dot + kap * kap_dot) / rho2[:, 0, 0]
                target = f0[nt + nr:nt + nr + na]
                raw = np.arctan2(sig, kap) - target  # the branch of φ nearest F(t)
                phi[nt + nr:nt + nr + na] = raw - 2.0 * np.pi * np.round(raw / (2.0 * np.pi))

        if self._nd:
            j, rows, length = self._d_joint, slice(nt + nr + na, m), self._d_len
            dj = d[j]
            e = dj / length[:, None]
            blk[rows, 0:3] = -e
            blk[rows, 3:6] = cross(e, z_a[j])
            blk[rows, 6:9] = e
            blk[rows, 9:12] = -cross(e, z_b[j])
            gamma[rows] = (np.einsum("ij,ij->i", dd[j], dd[j])
                           + np.einsum("ij,ij->i", dj, centripetal[j])) / length
            phi[rows] = (np.einsum("ij,ij->i", dj, dj) - length ** 2) / (2.0 * length)
        return blk, gamma, phi, fd, fdd, z_a, d

    def _count_dependent(self, y) -> int:
        """Number of dependent joint rows at state ``y``: m minus the numerical rank of G M^(−1/2)."""
        kin = self._kinematics(y)
        g = self._jacobian(self._joint_rows(kin, 0.0)[0])
        w_half = self._metric(kin)
        b = np.concatenate([g.reshape(-1, self.n_moving, 2, 3)[:, :, 0] * self._mass_inv_sqrt[:, None],
                            np.einsum("rni,nij->rnj", g.reshape(-1, self.n_moving, 2, 3)[:, :, 1], w_half)],
                           axis=2).reshape(g.shape)
        sv = np.linalg.svd(b, compute_uv=False)
        return int(g.shape[0] - np.count_nonzero(sv > self.RCOND * sv[0])) if sv.size and sv[0] else g.shape[0]

    def _jacobian(self, blk):
        """G (m, 6 N) from the rows' local blocks; fixed bodies and ``world`` have no columns."""
        g = np.zeros(self.n_constraints * 6 * self.n_moving)
        for flat, rows, cols in self._g_index:
            g[flat] = blk[rows, cols].ravel()
        return g.reshape(self.n_constraints, 6 * self.n_moving)

    def _metric(self, kin: _Kinematics):
        """W = J^(−1/2) = Λ J_b^(−1/2) Λᵀ (N, 3, 3) of the moving bodies (world frame)."""
        return kin.rot @ self._inertia_inv_sqrt @ np.swapaxes(kin.rot, -1, -2)

    def _multipliers(self, g, w_half, rhs):
        """Minimum-norm λ (m,) of ``(G M⁻¹ Gᵀ) λ = rhs``, in the least-squares sense.

        With B = G M^(−1/2) = U Σ Vᵀ, ``λ = U Σ⁻² Uᵀ rhs`` over the singular
        values above ``RCOND`` times the largest: dependent (redundant) rows
        get no share of the minimum-norm λ, and the accelerations ``M⁻¹Gᵀλ``
        are those of the independent rows alone.

        The SVD costs ~0.4 ms at m = 50 (more when BLAS threads compete), so
        a model without dependent rows at t = 0 takes the unique λ from the QR
        factors of Bᵀ instead, ``B Bᵀ = RᵀR`` (~0.08 ms, the same accuracy,
        cond(B)·ε); it falls back to the SVD where R's diagonal says that
        rows have become dependent (|R_kk| ≤ RCOND max |R_kk|).

        With dependent rows (A02: 120 of 605) the same minimum-norm λ comes
        from a complete orthogonal decomposition, at a third of the SVD's
        cost (20 against 56 ms at 605 × 486): the QR of Bᵀ with column
        pivoting, ``Bᵀ Π = Q [R₁; 0]`` with R₁ (r × m) its first r rows,
        r = the rows above RCOND on its diagonal, gives ``Π B Bᵀ Πᵀ = R₁ᵀR₁``
        and ``(R₁ᵀR₁)⁺ = Z T⁻ᵀ T⁻¹ Zᵀ`` from the QR ``R₁ᵀ = Z T``.  Only
        when r is the rank the SVD found at t = 0 (m − n_dependent); else
        the SVD decides.
        """
        n = self.n_moving
        gb = g.reshape(-1, n, 2, 3)
        b = np.empty_like(gb)
        b[:, :, 0] = gb[:, :, 0] * self._mass_inv_sqrt[:, None]
        b[:, :, 1] = np.einsum("rni,nij->rnj", gb[:, :, 1], w_half)
        b = b.reshape(g.shape)
        if not self.n_dependent and b.shape[0] <= b.shape[1]:
            tri = np.linalg.qr(b.T, mode="r")
            diag = np.abs(np.diagonal(tri))
            if diag.min() > self.RCOND * diag.max():
                half, _ = dtrtrs(tri, rhs, trans=1)  # Rᵀ z = rhs, then R λ = z (LAPACK directly:
                return dtrtrs(tri, half)[0]  # scipy.linalg.solve_triangular costs 20 µs in checks)
        if self.n_dependent and b.shape[0]:
            _, r1, piv = qr(b.T, mode="economic", pivoting=True, check_finite=False)
            diag = np.abs(np.diagonal(r1))
            rank = int(np.count_nonzero(diag > self.RCOND * diag[0])) if diag.size and diag[0] else 0
            if rank == b.shape[0] - self.n_dependent and rank > 0:
                z, t = np.linalg.qr(r1[:rank].T)  # R₁ᵀ = Z T, Z (m, r), T (r, r)
                u, _ = dtrtrs(t, z.T @ rhs[piv])  # T u = Zᵀ Π rhs
                v, _ = dtrtrs(t, u, trans=1)  # Tᵀ v = u
                lam = np.empty(b.shape[0])
                lam[piv] = z @ v
                return lam
        u, sv, _ = np.linalg.svd(b, full_matrices=False)
        if sv.size == 0 or sv[0] == 0.0:
            return np.zeros(g.shape[0])
        keep = sv > self.RCOND * sv[0]
        u = u[:, keep]
        return u @ ((u.T @ rhs) / sv[keep] ** 2)

    def _inverse_mass(self, gen, w_half):
        """M⁻¹ applied to generalized forces ``gen`` (N, 2, 3) [force, moment]: (a, α) (N, 2, 3)."""
        out = np.empty_like(gen)
        out[:, 0] = gen[:, 0] / self.mass[:, None]
        out[:, 1] = matvec(w_half, matvec(w_half, gen[:, 1]))
        return out

    def _constrained(self, kin: _Kinematics, t, acc, alpha):
        """Solve the index-1 equations: accelerations, constraint forces, multipliers, drive power."""
        blk, gamma, phi, fd, fdd, z_a, d = self._joint_rows(kin, t)
        g = self._jacobian(blk)
        w_half = self._metric(kin)
        free = np.concatenate([acc, alpha], axis=1).ravel()
        lam = self._multipliers(g, w_half, g @ free - (fdd - gamma))
        gen = -(g.T @ lam).reshape(-1, 2, 3)  # −Gᵀλ: force and moment on each moving body
        corr = self._inverse_mass(gen, w_half)
        dr = self._drive_rows
        u = np.concatenate([kin.v, kin.w], axis=1).ravel()
        drive_power = -float(lam[dr] @ (g[dr] @ u)) if dr.size else 0.0
        return acc + corr[:, 0], alpha + corr[:, 1], gen, lam, blk, phi, z_a, d, drive_power

    def constraints(self, y, t) -> Constraints:
        """The joints' Φ, G, γ and drive targets at state ``y`` and time ``t`` (see `Constraints`)."""
        blk, gamma, phi, fd, fdd, _, _ = self._joint_rows(self._kinematics(y), t)
        return Constraints(phi, self._jacobian(blk), gamma, fd, fdd, self._row_joint.copy(),
                           self._row_rot.copy())

    def project(self, y, t, max_iterations: int = 10):
        """Bring state ``y`` onto the joints' constraint manifold at time ``t``.

        Positions: Newton on Φ(q, t) = 0 with the minimum mass-norm correction
        ``Δ = −M⁻¹Gᵀ(G M⁻¹ Gᵀ)⁺ Φ`` (r += Δr, Λ ← exp(Δθ) Λ) until
        max |Φ| ≤ 1e-14 × the model's length scale or it stops falling;
        then velocities by the same metric onto G u = Ḟ(t).  The work
        integrals are left alone.

        Returns
        -------
        ndarray, (13 N + 2,)
            A projected copy of ``y``.

        Raises
        ------
        RuntimeError
            If the positions cannot be brought within 1e-6 of the manifold.
        """
        y = np.array(y, dtype=float)
        if not self._nj:
            return y
        r, q, v, w, _, _ = self.split(y)
        previous = np.inf
        for it in range(max_iterations + 1):
            kin = self._kinematics(y)
            blk, _, phi, fd, _, _, _ = self._joint_rows(kin, t)
            g, w_half = self._jacobian(blk), self._metric(kin)
            err = float(np.abs(phi).max()) if phi.size else 0.0
            if err <= self._newton_tol or err > 0.5 * previous or it == max_iterations:
                break
            previous = err
            step = self._inverse_mass((g.T @ self._multipliers(g, w_half, phi)).reshape(-1, 2, 3), w_half)
            r -= step[:, 0]
            q[:] = _normalize(quat_mul(quat_from_rotvec(-step[:, 1]), kin.q))
        if err > 1e-6 * self._length_scale:
            raise RuntimeError(f"reference solver: the joints cannot be closed at t = {t:.9g} "
                               f"(largest residual {err:.3g} after Newton)")
        u = np.concatenate([kin.v, kin.w], axis=1).ravel()
        lam = self._multipliers(g, w_half, g @ u - fd)
        step = self._inverse_mass((g.T @ lam).reshape(-1, 2, 3), w_half)
        v -= step[:, 0]
        w -= step[:, 1]
        return y

    # ------------------------------------------------------------ public API
    def rhs(self, t, y):
        """Time derivative of the state, ``dy/dt`` (13 N + 2,); signature of ``solve_ivp``."""
        kin, _, _, dissipation, power, _, _, acc, alpha = self._resultants(y, t)
        if self._nj:
            acc, alpha, *_, drive_power = self._constrained(kin, t, acc, alpha)
            power += drive_power
        w = kin.w
        qdot = 0.5 * quat_mul(np.concatenate([np.zeros((w.shape[0], 1)), w], axis=1), kin.q)
        return np.concatenate([kin.v.ravel(), qdot.ravel(), acc.ravel(), alpha.ravel(),
                               [dissipation, power]])

    def forces(self, y, t) -> Forces:
        """Forces, accelerations and power at state ``y`` (13 N + 2,) and time ``t`` [s]."""
        kin, f, m, dissipation, power, force, torque, acc, alpha = self._resultants(y, t)
        nb, nc, mi, nj = len(self.body_names), self._nc, self._mi, self._nj
        jf, jm, pos_err, ang_err = np.zeros((nj, 3)), np.zeros((nj, 3)), np.zeros(nj), np.zeros(nj)
        if nj:
            acc, alpha, gen, lam, blk, phi, z_a, d, drive_power = self._constrained(kin, t, acc, alpha)
            force, torque, power = force + gen[:, 0], torque + gen[:, 1], power + drive_power
            on_a = self._row_sum @ (-blk[:, :6] * lam[:, None])  # (J, 6): force, moment about A's centre
            jf, jm = on_a[:, :3], on_a[:, 3:] - cross(z_a, on_a[:, :3])
            if self._stops:  # a joint transmits its stops' force (on A at its point)
                fa, ma, *_ = self._joint_stops(kin)
                jf, jm = jf + fa, jm + ma
            nd = self._nd
            if nd:  # the distance's own residual, in metres
                phi = phi.copy()
                phi[-nd:] = np.linalg.norm(d[self._d_joint], axis=1) - self._d_len
            sq = phi * phi
            pos_err = np.sqrt(self._row_sum @ np.where(self._row_rot, 0.0, sq))
            ang_err = np.sqrt(self._row_sum @ np.where(self._row_rot, sq, 0.0))
        full = [np.zeros((nb, 3)) for _ in range(4)]
        for out, val in zip(full, (force, torque, acc, alpha)):
            out[mi] = val
        cf, cm = np.empty((nc, 3)), np.empty((nc, 3))
        cl = np.full(nc, np.nan)
        cf[self._order], cm[self._order] = f, m
        cl[self._order[:self._np]] = kin.length[:self._np]
        for kind, rows, _ in self._plugins:  # a plug-in kind's length: between its points, if it has them
            if kind.points is not None:
                cl[self._order[rows]] = kin.length[rows]
        return Forces(*full, cf, cm, cl, dissipation, power, jf, jm, pos_err, ang_err)

    def energies(self, y, t: float = 0.0) -> Energies:
        """Kinetic and potential energy and momenta at state ``y`` (THEORY §9; ``t`` for a plug-in kind
        whose stored energy depends on time)."""
        kin = self._kinematics(y)
        m = self.mass[:, None]
        jw = matvec(kin.rot, matvec(self.inertia_body, matvec(np.swapaxes(kin.rot, -1, -2), kin.w)))
        kinetic = 0.5 * float(np.sum(m * kin.v * kin.v) + np.sum(kin.w * jw))
        stretch = kin.length[:self._ns] - self._l0
        height_energy = float(np.sum(m * kin.r @ self.gravity))  # Σ m g·r
        potential = 0.5 * float(np.sum(self._k * stretch ** 2)) - height_energy
        for i, curve in self._curves:
            potential += curve.energy(float(stretch[i]))
        if self._nb > self._nq:
            potential += self._bushing_energy(kin)
        if self._stops:
            potential += self._joint_stops(kin)[5]
        if self._nx > self._nb:
            potential += self._axis_springs(kin)[2]
        for i, law, returns, prm in self._laws:
            if returns == 4:
                potential += float(law(float(kin.length[i]), 0.0, t, prm)[3])
        for kind, rows, el in self._plugins:
            potential += float(np.sum(self._plugin_rows(kind, rows, el, kin, t)[:, 10]))
        return Energies(kinetic, potential, np.sum(m * kin.v, axis=0),
                        np.sum(cross(kin.r, m * kin.v) + jw, axis=0))


def equations_of_motion(scenario: Scenario) -> EquationsOfMotion:
    """Build the continuous equations of motion of ``scenario`` (see `EquationsOfMotion`)."""
    return EquationsOfMotion(scenario)
