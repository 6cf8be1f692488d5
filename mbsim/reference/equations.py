"""Continuous equations of motion of a scenario, for the reference solver.

This module is deliberately independent of the generalized-α path
(``mbsim.model``, ``mbsim.elements``, ``mbsim.integrators``): it has its own
rotation helpers and its own connector kernels, so that a mistake made there
is not silently repeated here.  It implements THEORY §1, §6, §7 and §9 in
continuous time, i.e. with every quantity at the same instant (α_f = α_m = 1,
no time discretisation).

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
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import sparse

from mbsim.scenario.spec import WORLD, Constant, Scenario

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
        declared body: gravity, loads and connectors.  Zero rows for fixed
        bodies (their reactions are not computed).
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
        Power of the loads, Σ f·v + τ·ω [W]; gravity excluded (THEORY §9).
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

    Parameters
    ----------
    scenario : Scenario
        A validated scenario (``mbsim.scenario.spec``).

    Attributes
    ----------
    y0 : ndarray, (13 N + 2,)
        Initial state (layout in the module docstring).
    body_names, connector_names : tuple of str
        Declared bodies (B, ``world`` excluded) and connectors (C), scenario order.
    moving : ndarray of bool, (B,)
        Which declared bodies have states.
    n_moving : int
        N.
    mass : ndarray, (N,)
    inertia_body : ndarray, (N, 3, 3)
        J_b of the moving bodies, body axes.
    gravity : ndarray, (3,)
    """

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

        self._init_connectors(scenario.connectors, index)
        self._init_loads(scenario.loads, index)
        self._init_scatter()

    # ---------------------------------------------------------------- setup
    def _init_connectors(self, connectors, index):
        kinds = ("spring", "damper", "torsional_damper")
        unknown = sorted({c.type for c in connectors} - set(kinds))
        if unknown:
            raise ValueError(f"reference solver: unsupported connector types {unknown}")
        order = [i for kind in kinds for i, c in enumerate(connectors) if c.type == kind]
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
        self._k = np.array([c.stiffness for c in cs[:ns]], dtype=float)
        self._l0 = np.array([c.rest_length for c in cs[:ns]], dtype=float)
        self._eps = np.array([c.damping for c in cs[ns:p]], dtype=float)[:, None]

        # torsional dampers: axis E = Λ_A,0ᵀ n_0 fixed in A's material frame (THEORY §7)
        ts = cs[p:]
        self._chi = np.array([c.damping for c in ts], dtype=float)[:, None]
        ab = np.array([_PROJECTION[c.projection] for c in ts], dtype=float).reshape(-1, 2)
        self._pa, self._pb = ab[:, :1], ab[:, 1:]
        axes = np.array([np.zeros(3) if c.axis is None else c.axis for c in ts],
                        dtype=float).reshape(-1, 3)
        self._axis_mat = matvec(rot0_t[ia[p:]], axes)

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

    # ----------------------------------------------------------- state views
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
        """Forces f and pure moments m on A (C, 3), internal order, and dissipation [W]."""
        ns, p, nc = self._ns, self._np, self._nc
        f = np.zeros((nc, 3))
        m = np.zeros((nc, 3))

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

        # damper, THEORY §7: f = ε_c (v_pt,B − v_pt,A), full relative velocity
        dissipation = 0.0
        if p > ns:
            ia, ib = self._ia[ns:p], self._ib[ns:p]
            dv = (kin.v_e[ib] + cross(kin.w_e[ib], kin.z_b[ns:p])) \
                - (kin.v_e[ia] + cross(kin.w_e[ia], kin.z_a[ns:p]))
            f[ns:p] = self._eps * dv
            dissipation += float(np.vdot(f[ns:p], dv))

        # torsional damper, THEORY §7: m = χ_r P (ω_B − ω_A), P = a I + b n⊗n, n = Λ_A E
        if nc > p:
            n = matvec(kin.rot_e[self._ia[p:]], self._axis_mat)
            wr = kin.w_e[self._ib[p:]] - kin.w_e[self._ia[p:]]
            nw = np.einsum("ij,ij->i", n, wr)[:, None]
            m[p:] = self._chi * (self._pa * wr + self._pb * nw * n)
            dissipation += float(np.vdot(m[p:], wr))
        return f, m, dissipation

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
        f, m, dissipation = self._connectors(kin, t)
        lv, power = self._loads(kin, t)
        nc = self._nc
        # A receives (f, z_A × f + m), B receives −(f, z_B × f + m) (THEORY §6);
        # the sign of B is in the scatter matrix
        ends = np.empty((self._scatter.shape[1], 6))
        ends[:nc, :3] = ends[nc:2 * nc, :3] = f
        ends[:nc, 3:] = cross(kin.z_a, f) + m
        ends[nc:2 * nc, 3:] = cross(kin.z_b, f) + m
        ends[2 * nc:, :3] = lv * self._load_mask[:, :1]
        ends[2 * nc:, 3:] = lv * self._load_mask[:, 1:]
        ft = self._scatter @ ends
        force = self._weight + ft[:, :3]
        torque = ft[:, 3:]
        # J ω̇ = τ − ω × Jω, solved in body axes where J_b is constant
        rot_t = np.swapaxes(kin.rot, -1, -2)
        wb = matvec(rot_t, kin.w)
        ab = matvec(self._inertia_inv,
                    matvec(rot_t, torque) - cross(wb, matvec(self.inertia_body, wb)))
        return (kin, f, m, dissipation, power, force, torque, force / self.mass[:, None],
                matvec(kin.rot, ab))

    # ------------------------------------------------------------ public API
    def rhs(self, t, y):
        """Time derivative of the state, ``dy/dt`` (13 N + 2,); signature of ``solve_ivp``."""
        kin, _, _, dissipation, power, _, _, acc, alpha = self._resultants(y, t)
        w = kin.w
        qdot = 0.5 * quat_mul(np.concatenate([np.zeros((w.shape[0], 1)), w], axis=1), kin.q)
        return np.concatenate([kin.v.ravel(), qdot.ravel(), acc.ravel(), alpha.ravel(),
                               [dissipation, power]])

    def forces(self, y, t) -> Forces:
        """Forces, accelerations and power at state ``y`` (13 N + 2,) and time ``t`` [s]."""
        kin, f, m, dissipation, power, force, torque, acc, alpha = self._resultants(y, t)
        nb, nc, mi = len(self.body_names), self._nc, self._mi
        full = [np.zeros((nb, 3)) for _ in range(4)]
        for out, val in zip(full, (force, torque, acc, alpha)):
            out[mi] = val
        cf, cm = np.empty((nc, 3)), np.empty((nc, 3))
        cl = np.full(nc, np.nan)
        cf[self._order], cm[self._order] = f, m
        cl[self._order[:self._np]] = kin.length[:self._np]
        return Forces(*full, cf, cm, cl, dissipation, power)

    def energies(self, y) -> Energies:
        """Kinetic and potential energy and momenta at state ``y`` (THEORY §9)."""
        kin = self._kinematics(y)
        m = self.mass[:, None]
        jw = matvec(kin.rot, matvec(self.inertia_body, matvec(np.swapaxes(kin.rot, -1, -2), kin.w)))
        kinetic = 0.5 * float(np.sum(m * kin.v * kin.v) + np.sum(kin.w * jw))
        stretch = kin.length[:self._ns] - self._l0
        height_energy = float(np.sum(m * kin.r @ self.gravity))  # Σ m g·r
        potential = 0.5 * float(np.sum(self._k * stretch ** 2)) - height_energy
        return Energies(kinetic, potential, np.sum(m * kin.v, axis=0),
                        np.sum(cross(kin.r, m * kin.v) + jw, axis=0))


def equations_of_motion(scenario: Scenario) -> EquationsOfMotion:
    """Build the continuous equations of motion of ``scenario`` (see `EquationsOfMotion`)."""
    return EquationsOfMotion(scenario)
