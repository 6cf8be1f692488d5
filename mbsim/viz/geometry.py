"""Where things are in a stored trajectory: body frames, connector insertion points,
the axes of connectors drawn as twists (torsional dampers), joint points and axes,
and the boxes that stand for the bodies.  Pure numpy.

A result file (OUTPUT.md) stores body poses, not connector or joint geometry;
the insertion points, joint points and axes are in the scenario text it carries
(``/scenario``), read back with mbsim's own scenario loader.  Each point X
given at t = 0 is fixed in its body, so with the body's initial pose (r0, Λ0)
its material arm is Z = Λ0ᵀ (X − r0) and at any later frame it is at
x = r + Λ Z; a direction n given at t = 0 is at Λ Λ0ᵀ n.  The body ``world``
(not stored) is the origin with identity orientation.

Every function takes the dictionary of :func:`mbsim.io.reader.read_trajectory`
and works on all frames, bodies, connectors and joints at once.  Connectors are
told apart by the traits their element kinds declare (:func:`connector_traits`),
not by their type names.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .. import elements
from ..kernels.rotations import quat_to_matrix
from ..scenario import WORLD, Scenario, ScenarioError, parse_scenario

# per-frame datasets whose first axis is time (a failed run may stop mid-chunk:
# use the frames every one of them has)
_PER_FRAME = ("time", "bodies/position", "bodies/orientation", "connectors/force", "energy/kinetic")

FALLBACK_TRAITS = ("line", ("force", "moment"))
"""``(draw, outputs)`` of a connector type this process has not registered (a file written by a
process with a plug-in kind): a straight line, and both stored vectors shown."""

CONNECTOR_DRAW_IDS = {"coil": 1, "dashpot": 2, "twist": 3, "point": 4}
"""Numeric connector type for formats without strings (VTK cell data), by how the kind is drawn: 1 the
springs, 2 the dampers, 3 the torsional dampers (and any kind drawn like them); 0 is a body, 9 any other
connector."""

JOINT_TYPE_IDS = {"spherical": 11, "revolute": 12, "prismatic": 13, "cylindrical": 14, "planar": 15,
                  "universal": 16, "lock": 17, "distance": 18}
"""Numeric joint type for the same formats; 19 a joint type not listed."""

AXIS_JOINTS = ("revolute", "prismatic", "cylindrical", "planar", "universal")
"""Joint types with an axis (a universal joint: two, ``axes[0]`` fixed in A and ``axes[1]`` in B)."""


def element_kind(type_name: str) -> Optional[type]:
    """The element kind registered in this process under ``type_name`` (its type or an alias), or None.

    Read from :data:`mbsim.elements.BY_TYPE` at each call: a kind registered (or put there by a test)
    after this module was imported counts."""
    kind = elements.BY_TYPE.get(type_name)
    if kind is None:
        kind = next((k for k in elements.BY_TYPE.values() if type_name in k.aliases), None)
    return kind


def connector_traits(types) -> tuple[np.ndarray, list]:
    """How the tools treat each connector type of ``types``: its kind's ``draw`` trait, an array of
    str (C,), and its ``outputs`` trait, a list of tuples (C,); :data:`FALLBACK_TRAITS` for a type
    not registered here.  The viewers and exports decide by these, never by type names, so that a
    plug-in kind is drawn and plotted as it declares."""
    kinds = [element_kind(str(t)) for t in types]
    draw = np.array([k.draw if k else FALLBACK_TRAITS[0] for k in kinds], dtype=object)
    outputs = [tuple(k.outputs) if k else FALLBACK_TRAITS[1] for k in kinds]
    return draw, outputs


def connector_type_ids(types) -> np.ndarray:
    """:data:`CONNECTOR_DRAW_IDS` of each connector type of ``types`` (int32, 9 for any other)."""
    draw, _ = connector_traits(types)
    return np.array([CONNECTOR_DRAW_IDS.get(d, 9) for d in draw], dtype=np.int32)


def frame_count(traj: dict) -> int:
    """Number of frames present in every per-frame dataset."""
    return int(min(len(traj[k]) for k in _PER_FRAME if k in traj))


def frame_indices(traj: dict, every: int = 1, include_last: bool = False) -> np.ndarray:
    """Frames 0, every, 2·every, …; with ``include_last`` also the last frame
    when it falls off that grid (an animation should end on the final state;
    an export keeps the regular grid)."""
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    n = frame_count(traj)
    picked = np.arange(0, n, every)
    if include_last and n and picked[-1] != n - 1:
        picked = np.append(picked, n - 1)
    return picked


def scenario_of(traj: dict) -> Optional[Scenario]:
    """The scenario stored in the result (``/scenario``), or None if absent or unreadable."""
    text = traj.get("scenario")
    if not isinstance(text, (str, bytes)) or not text:
        return None
    try:
        return parse_scenario(text, laws=False)  # (a user law's module need not be at hand to draw)
    except ScenarioError:
        return None


def body_index(traj: dict) -> dict:
    """Body name → index into :func:`body_poses` arrays; ``world`` is the last (index B)."""
    names = list(traj["bodies/name"])
    index = {n: i for i, n in enumerate(names)}
    index.setdefault(WORLD, len(names))
    return index


def body_poses(traj: dict):
    """Positions ``(T, B+1, 3)`` and rotation matrices ``(T, B+1, 3, 3)`` (body-to-world) of every
    body per frame, with ``world`` appended as body B (origin, identity)."""
    T = frame_count(traj)
    r = np.asarray(traj["bodies/position"], dtype=float)[:T]
    q = np.asarray(traj["bodies/orientation"], dtype=float)[:T]
    B = r.shape[1]
    pos = np.zeros((T, B + 1, 3))
    pos[:, :B] = r
    R = np.broadcast_to(np.eye(3), (T, B + 1, 3, 3)).copy()
    if B:
        # normalise: the stored quaternions are unit to round-off, the drawing should be exactly rigid
        R[:, :B] = quat_to_matrix(q / np.linalg.norm(q, axis=-1, keepdims=True))
    return pos, R


def _initial_poses(traj: dict, sc: Optional[Scenario]):
    """Initial positions ``(B+1, 3)`` and rotations ``(B+1, 3, 3)`` of the bodies as the scenario
    gives them (the insertion points are defined against these), world last."""
    pos, R = body_poses(traj)
    r0, R0 = pos[0].copy(), R[0].copy()
    if sc is not None:
        index = body_index(traj)
        for b in sc.bodies:
            if b.name in index:
                r0[index[b.name]] = b.position
                R0[index[b.name]] = quat_to_matrix(np.asarray(b.orientation, dtype=float))
    return r0, R0


def _connector_ends(traj: dict, group: str = "connectors"):
    index = body_index(traj)
    ia = np.array([index.get(n, index[WORLD]) for n in traj.get(f"{group}/body_a", ())], dtype=int)
    ib = np.array([index.get(n, index[WORLD]) for n in traj.get(f"{group}/body_b", ())], dtype=int)
    return ia, ib


@dataclass(frozen=True)
class ConnectorGeometry:
    """Where each connector is, frame by frame.

    Attributes
    ----------
    points : (T, C, 2, 3)
        Current insertion points on A and B [m]; for connectors without
        points (torsional dampers), or when the scenario text cannot be read,
        the centres of A and B.
    has_points : (C,) bool
        True where ``points`` are real insertion points.
    axis : (T, C, 3)
        Unit axis of a connector drawn as a twist (``draw == "twist"``: a
        torsional damper), carried by body A (where its spec gives no
        ``axis``, as for P1 and ``none``, A's image of the world z axis); NaN
        for other connectors.
    body_a, body_b : (C,) int
        Indices into the :func:`body_poses` arrays (world = B).
    """

    points: np.ndarray
    has_points: np.ndarray
    axis: np.ndarray
    body_a: np.ndarray
    body_b: np.ndarray


def connector_geometry(traj: dict, sc: Optional[Scenario] = None) -> ConnectorGeometry:
    """Insertion points and twist axes of every connector in every frame.

    ``sc`` defaults to :func:`scenario_of` ``(traj)``.  Points come from any spec that has
    ``points``, axes for any kind drawn as a twist (:func:`connector_traits` of the stored types).
    """
    if sc is None:
        sc = scenario_of(traj)
    pos, R = body_poses(traj)
    T = pos.shape[0]
    ia, ib = _connector_ends(traj)
    C = len(ia)
    r0, R0 = _initial_poses(traj, sc)

    # Material data per connector: arms Z (C, 2, 3) and the axis in A's frame (C, 3).
    arms = np.zeros((C, 2, 3))
    has = np.zeros(C, dtype=bool)
    n_mat = np.full((C, 3), np.nan)
    specs = {c.name: c for c in sc.connectors} if sc is not None else {}
    draw, _ = connector_traits(traj["connectors/type"])
    for i, name in enumerate(traj["connectors/name"]):
        c = specs.get(name)
        if c is None:
            continue
        if c.points is not None:
            X = np.asarray(c.points, dtype=float)
            ends = (ia[i], ib[i])
            arms[i] = [R0[e].T @ (X[k] - r0[e]) for k, e in enumerate(ends)]
            has[i] = True
        if draw[i] == "twist":
            n0 = np.asarray(c.axis, dtype=float) if c.axis is not None else np.array([0.0, 0.0, 1.0])
            n_mat[i] = R0[ia[i]].T @ n0

    ends = np.stack([ia, ib], axis=1)  # (C, 2)
    pts = pos[:, ends] + np.einsum("tckij,ckj->tcki", R[:, ends], arms)
    axis = np.einsum("tcij,cj->tci", R[:, ia], n_mat) if C else np.zeros((T, 0, 3))
    return ConnectorGeometry(points=pts, has_points=has, axis=axis, body_a=ia, body_b=ib)


@dataclass(frozen=True)
class JointGeometry:
    """Where each joint is, frame by frame (J joints, 0 for a result without joints).

    Attributes
    ----------
    points : (T, J, 2, 3)
        The joint's point as carried by body A and by body B [m] (they
        coincide while the joint holds: they differ by its position error);
        for a ``distance`` joint, A's point and B's point.  Where the
        scenario text cannot be read, the centres of A and B.
    has_points : (J,) bool
        True where ``points`` (and the axes) come from the scenario.
    axis : (T, J, 3)
        The joint's unit axis carried by body A (a universal joint's
        ``axes[0]``); NaN for joints without an axis.
    axis_b : (T, J, 3)
        The same axis carried by body B (a universal joint's ``axes[1]``);
        NaN for joints without an axis.
    perp : (T, J, 3)
        A unit vector perpendicular to ``axis`` at t = 0, carried by A (with
        ``axis`` and their cross product a frame of A, e.g. for drawing a
        planar joint's plane); NaN for joints without an axis.
    perp_b : (T, J, 3)
        The same vector at t = 0 carried by B: its angle from ``perp`` about
        ``axis`` is a revolute joint's angle; NaN for joints without an axis.
    body_a, body_b : (J,) int
        Indices into the :func:`body_poses` arrays (world = B).
    stops : tuple of (joint index, coordinate, bound)
        The finite bounds of the joints' stops (SCENARIO.md, joints: limits): ``coordinate`` is
        ``"angle"`` (rad, about ``axis`` from ``perp``) or ``"displacement"`` (m along ``axis`` from A's
        point).
    """

    points: np.ndarray
    has_points: np.ndarray
    axis: np.ndarray
    axis_b: np.ndarray
    perp: np.ndarray
    perp_b: np.ndarray
    body_a: np.ndarray
    body_b: np.ndarray
    stops: tuple = ()


def joint_geometry(traj: dict, sc: Optional[Scenario] = None) -> JointGeometry:
    """Points and axes of every joint in every frame, from the joints of the stored scenario.

    ``sc`` defaults to :func:`scenario_of` ``(traj)``.  A joint the scenario
    does not hold (or a scenario that cannot be read) has ``has_points``
    False: its points are the centres of its bodies and its axes NaN.
    """
    if sc is None:
        sc = scenario_of(traj)
    pos, R = body_poses(traj)
    T = pos.shape[0]
    ia, ib = _connector_ends(traj, "joints")
    J = len(ia)
    r0, R0 = _initial_poses(traj, sc)

    arms = np.zeros((J, 2, 3))  # material arms of the points in A and B
    has = np.zeros(J, dtype=bool)
    n_mat = np.full((J, 4, 3), np.nan)  # per joint: axis in A, axis in B, perpendicular in A and in B (material)
    specs = {j.name: j for j in getattr(sc, "joints", ())} if sc is not None else {}
    stops = []
    for i, name in enumerate(traj.get("joints/name", ())):
        j = specs.get(name)
        if j is None:
            continue
        stops += [(i, coordinate, float(b)) for coordinate, lo, up, _, _ in getattr(j, "stops", ())
                  for b in (lo, up) if np.isfinite(b)]
        X = np.asarray(j.points if j.type == "distance" else [j.point, j.point], dtype=float)
        arms[i] = [R0[e].T @ (X[k] - r0[e]) for k, e in enumerate((ia[i], ib[i]))]
        has[i] = True
        if j.type in AXIS_JOINTS:
            na, nb = (np.asarray(j.axes, dtype=float) if j.type == "universal"
                      else np.asarray([j.axis, j.axis], dtype=float))
            perp, _ = _perpendiculars(na[None, :])
            n_mat[i] = [R0[ia[i]].T @ na, R0[ib[i]].T @ nb, R0[ia[i]].T @ perp[0], R0[ib[i]].T @ perp[0]]

    ends = np.stack([ia, ib], axis=1)  # (J, 2)
    pts = pos[:, ends] + np.einsum("tjkab,jkb->tjka", R[:, ends], arms)
    if J:
        axis = np.einsum("tjab,jb->tja", R[:, ia], n_mat[:, 0])
        axis_b = np.einsum("tjab,jb->tja", R[:, ib], n_mat[:, 1])
        perp = np.einsum("tjab,jb->tja", R[:, ia], n_mat[:, 2])
        perp_b = np.einsum("tjab,jb->tja", R[:, ib], n_mat[:, 3])
    else:
        axis = axis_b = perp = perp_b = np.zeros((T, 0, 3))
    return JointGeometry(points=pts, has_points=has, axis=axis, axis_b=axis_b, perp=perp, perp_b=perp_b, body_a=ia,
                         body_b=ib, stops=tuple(stops))


def box_shapes(traj: dict, sc: Optional[Scenario] = None):
    """Edges and axes of the uniform box with each body's mass and inertia.

    A uniform box with edges a1, a2, a3 has principal moments
    I1 = m (a2² + a3²) / 12 and cyclic, so a_i = sqrt(6 / m · (I_j + I_k − I_i)).
    A full inertia matrix is first diagonalised: the box lies along its
    principal axes.

    Returns
    -------
    edges : (B, 3)
        Full edge lengths [m]; NaN for fixed bodies and bodies whose inertia
        the scenario does not give (draw those another way).
    axes : (B, 3, 3)
        Columns: the box's edge directions in the body's own frame.
    """
    if sc is None:
        sc = scenario_of(traj)
    names = list(traj["bodies/name"])
    B = len(names)
    edges = np.full((B, 3), np.nan)
    axes = np.broadcast_to(np.eye(3), (B, 3, 3)).copy()
    if sc is None:
        return edges, axes
    specs = {b.name: b for b in sc.bodies}
    for i, n in enumerate(names):
        b = specs.get(n)
        if b is None or b.fixed or not b.mass > 0:
            continue
        moments, vecs = np.linalg.eigh(np.asarray(b.inertia, dtype=float))
        # I_j + I_k − I_i = trace − 2 I_i: ≥ 0 for a physical body.  A flat body (= 0) still
        # gets a visible slab of 2 % of its largest edge, and so does an unphysical one (< 0).
        sq = 6.0 / b.mass * (moments.sum() - 2.0 * moments)
        edges[i] = np.sqrt(np.clip(sq, 4e-4 * sq.max(), None))
        axes[i] = vecs
    return edges, axes


# Corners of the unit cube [-1/2, 1/2]^3 and its six faces (corner indices, counter-clockwise outside).
UNIT_CORNERS = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])
BOX_FACES = np.array([[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]])


def box_corners(position, rotation, edges, axes):
    """World corners ``(..., 8, 3)`` of boxes with centre ``position (..., 3)``, body rotation
    ``(..., 3, 3)``, ``edges (..., 3)`` along the body-frame ``axes (..., 3, 3)``."""
    local = UNIT_CORNERS * np.asarray(edges)[..., None, :]  # (..., 8, 3) in principal axes
    M = np.asarray(rotation) @ np.asarray(axes)  # principal axes in the world
    return np.asarray(position)[..., None, :] + np.einsum("...ij,...kj->...ki", M, local)


def _perpendiculars(u):
    """Two unit vectors ``(N, 3)`` each that complete the unit vectors ``u (N, 3)`` to right-handed frames."""
    helper = np.where(np.abs(u[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    e1 = np.cross(u, helper)
    e1 /= np.linalg.norm(e1, axis=-1, keepdims=True)
    return e1, np.cross(u, e1)


def coils(p, q, radius, turns: int = 8, lead: float = 0.12, samples: int = 12):
    """Polylines ``(N, n, 3)`` of helical springs from ``p (N, 3)`` to ``q (N, 3)``: straight leads
    (a fraction ``lead`` of the length at each end) and ``turns`` turns of ``radius (N,)`` between.
    A spring of zero length is drawn as a point."""
    p, q = np.atleast_2d(np.asarray(p, dtype=float)), np.atleast_2d(np.asarray(q, dtype=float))
    d = q - p
    L = np.linalg.norm(d, axis=-1)
    ok = L > 1e-12
    u = np.where(ok[:, None], d / np.where(ok, L, 1.0)[:, None], [[0.0, 0.0, 1.0]])
    e1, e2 = _perpendiculars(u)
    s = np.linspace(0.0, 1.0, turns * samples + 1)
    phi = 2.0 * np.pi * turns * s
    # radius fades to 0 at both ends of the coiled part, so the leads join it smoothly
    rad = np.where(ok, np.broadcast_to(radius, L.shape), 0.0)[:, None] * np.sin(np.pi * s) ** 0.25
    along = (lead + (1.0 - 2.0 * lead) * s)[None, :, None] * d[:, None, :]
    ring = np.cos(phi)[None, :, None] * e1[:, None, :] + np.sin(phi)[None, :, None] * e2[:, None, :]
    body = p[:, None, :] + along + rad[:, :, None] * ring
    return np.concatenate([p[:, None, :], body, q[:, None, :]], axis=1)


def arcs(centre, axis, start, radius, sweep: float = 1.5 * np.pi, samples: int = 40):
    """Polylines ``(N, samples, 3)`` of circular arcs of ``radius (N,)`` about the unit ``axis (N, 3)``
    through ``centre (N, 3)``, beginning in the direction of ``start (N, 3)`` projected onto the plane
    normal to the axis (any perpendicular where ``start`` is along the axis)."""
    n = np.atleast_2d(np.asarray(axis, dtype=float))
    n = n / np.linalg.norm(n, axis=-1, keepdims=True)
    start = np.atleast_2d(np.asarray(start, dtype=float))
    e1 = start - np.sum(start * n, axis=-1, keepdims=True) * n
    norm = np.linalg.norm(e1, axis=-1, keepdims=True)
    fallback, _ = _perpendiculars(n)
    e1 = np.where(norm > 1e-6, e1 / np.where(norm > 1e-6, norm, 1.0), fallback)
    e2 = np.cross(n, e1)
    phi = np.linspace(0.0, sweep, samples)
    ring = np.cos(phi)[None, :, None] * e1[:, None, :] + np.sin(phi)[None, :, None] * e2[:, None, :]
    return np.atleast_2d(centre)[:, None, :] + np.broadcast_to(radius, n.shape[:1])[:, None, None] * ring
