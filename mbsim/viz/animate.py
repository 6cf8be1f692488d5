"""3D animation of a stored trajectory: bodies as boxes with their axes, connectors as
springs, dashpots and arcs, joints as axes, rails and balls, and a clock.

Each moving body is drawn as the uniform box with its mass and inertia
(:func:`mbsim.viz.geometry.box_shapes`) and its body axes (x red, y green, z
blue); fixed bodies, and ``world`` where a connector uses it, as small grey
cubes.  Connectors are drawn as their element kinds declare (the ``draw``
trait, :func:`mbsim.viz.geometry.connector_traits`): a spring (``coil``) is a
coil between its current insertion points, a damper (``dashpot``) a cylinder
with a piston rod, a torsional damper (``twist``) an arc about its axis around
body B's centre, starting along B's x axis so that it turns with B, and any
other kind (``line``, or a type not registered in this process) a straight
line between its points (the centres of A and B if it has none); the key
names the types drawn in each style.
Joints (:func:`mbsim.viz.geometry.joint_geometry`: points and axes from the
scenario the file carries) are drawn at their point as carried by body B: a
hinge (revolute) as a short thick line along its axis, a slider (prismatic)
as its rail -- a thin line along the axis fixed in A, as long as B's travel
over the run -- with a short thick carriage, a cylindrical joint as both a
rail and a thick sleeve, a universal joint as a cross of its two axes, a
planar joint as a square in its plane, a ball (spherical) joint as a round
marker, a lock as a square marker, a distance joint as a thin rod between
its two points; a joint's stops as thin spokes from its point at the angle
limits and ticks across its rail at the offset limits, carried by A.  The view is fixed over the whole animation (limits from the whole trajectory,
one scale on all three axes).

A mode of a file written by ``mbsim modes`` (``/modes``, read by :func:`mbsim.io.reader.read_modes`) is
animated by the same scene: :func:`mode_motion` makes one period of its motion about the stored state a
trajectory of :data:`MODE_FRAMES` frames of phase φ, each body at r + a·Re(δr·e^{iφ}) and turned by the
rotation vector a·Re(δθ·e^{iφ}) (world axes, exactly), a the amplitude (:func:`mode_amplitude`: the
largest translation 10 % of the model's size, the largest rotation at most 0.3 rad, unless given); the
title names the mode, its frequency and damping ratio, the clock shows φ (:func:`animate_mode`).

Built on :class:`matplotlib.animation.FuncAnimation` without ``pyplot``: GIF
through Pillow, MP4 through ffmpeg when it is installed.  Needs matplotlib
(``pip install 'mbsim[plot]'``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
from matplotlib import animation
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

from . import geometry as geo
from .plot import body_colors, set_equal_3d

DPI = 100
DEFAULT_SIZE = (800, 600)
DEFAULT_FPS = 25
FORMATS = (".gif", ".mp4")

SPRING_COLOR = "#b8860b"
DAMPER_COLOR, ROD_COLOR = "#5f6b7a", "#2b2b2b"
TORSION_COLOR = "tab:purple"
LINE_COLOR = "tab:brown"  # a connector of a kind drawn as a plain line (``draw = "line"``, or a type unknown here)
JOINT_COLOR = "#0a7f86"  # teal: apart from the body axes, springs, dampers and torsional dampers
AXIS_COLORS = ("#d62728", "#2ca02c", "#1f77b4")  # body x, y, z
FIXED_COLOR = "0.55"


class WriterUnavailable(ValueError):
    """The animation cannot be written in the requested format here (the message says what to do)."""


@dataclass(frozen=True)
class AnimationInfo:
    """What :func:`animate` wrote: file, number of frames, frames per second, frames skipped."""

    path: str
    frames: int
    fps: float
    every: int
    t_first: float
    t_last: float


def default_every(traj: dict, fps: float) -> int:
    """Stored frames per animation frame for real-time playback at ``fps`` (at least 1)."""
    t = np.asarray(traj["time"][: geo.frame_count(traj)], dtype=float)
    if len(t) < 2:
        return 1
    dt = float(np.median(np.diff(t)))
    return max(1, int(round(1.0 / (fps * dt)))) if dt > 0 else 1


def check_writer(path) -> str:
    """The matplotlib writer name for ``path`` (``pillow`` for .gif, ``ffmpeg`` for .mp4), or
    :class:`WriterUnavailable` saying why not."""
    ext = os.path.splitext(str(path))[1].lower()
    if ext == ".gif":
        return "pillow"
    if ext == ".mp4":
        if not animation.writers.is_available("ffmpeg"):
            raise WriterUnavailable("MP4 needs ffmpeg, which is not installed here (or not on PATH); "
                                    "install it (e.g. `apt-get install ffmpeg`) or write a GIF instead: "
                                    "-o ANIM.gif")
        return "ffmpeg"
    raise WriterUnavailable(f"cannot write {ext or 'a file without extension'!r} animations; "
                            f"name the output .gif (Pillow) or .mp4 (ffmpeg)")


class Scene:
    """Everything drawn in one animation, with ``update(k)`` moving it to stored frame ``k``."""

    def __init__(self, traj: dict, *, elev: float = 20.0, azim: float = -60.0, size=DEFAULT_SIZE,
                 dpi: int = DPI, title: Optional[str] = None, labels: Optional[Sequence[str]] = None):
        self.traj = traj
        self.labels = labels  # the clock's text per stored frame (default: its time)
        sc = geo.scenario_of(traj)
        self.time = np.asarray(traj["time"][: geo.frame_count(traj)], dtype=float)
        self.pos, self.R = geo.body_poses(traj)  # world appended as the last body
        self.geom = geo.connector_geometry(traj, sc)
        self.types = list(traj["connectors/type"])
        self.jgeom = geo.joint_geometry(traj, sc)
        self.jtypes = list(traj.get("joints/type", ()))
        B = len(traj["bodies/name"])
        fixed = np.asarray(traj["bodies/fixed"], dtype=bool)
        edges, self.box_axes = geo.box_shapes(traj, sc)

        # Scene size: where bodies and connector ends go over the whole run.
        pts = [self.pos[:, :B].reshape(-1, 3)] if B else []
        if len(self.types):
            pts.append(self.geom.points.reshape(-1, 3))
        if len(self.jtypes):
            pts.append(self.jgeom.points.reshape(-1, 3))
        uses_world = B in set(self.geom.body_a) | set(self.geom.body_b) | set(self.jgeom.body_a) | set(
            self.jgeom.body_b)
        if uses_world:
            pts.append(np.zeros((1, 3)))
        pts = np.concatenate(pts)
        pts = pts[np.isfinite(pts).all(axis=1)]
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        reach = float(np.max(hi - lo)) or 1.0
        marker = 0.04 * reach  # size of the markers for fixed bodies and bodies of unknown shape

        self.moving = np.flatnonzero(~fixed)
        unknown = ~np.isfinite(edges).all(axis=1)
        edges[unknown] = marker
        self.edges = edges
        self.axis_len = 0.75 * edges.max(axis=1)  # body axes poke out of the box

        # The view: the whole trajectory, boxes included (half their diagonal around each centre).
        half_diag = 0.5 * float(np.linalg.norm(edges[self.moving], axis=1).max()) if len(self.moving) else 0.0
        lo, hi = lo - half_diag, hi + half_diag

        fig = Figure(figsize=(size[0] / dpi, size[1] / dpi), dpi=dpi)
        ax = fig.add_axes((0.0, 0.05, 1.0, 0.86), projection="3d")
        set_equal_3d(ax, lo, hi, pad=0.02)
        ax.set_box_aspect(ax.get_box_aspect(), zoom=0.88)  # room for the axis labels
        ax.view_init(elev=elev, azim=azim)
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
        ax.set_zlabel("z [m]")
        for a in (ax.xaxis, ax.yaxis, ax.zaxis):
            a.label.set_fontsize(8)
        ax.tick_params(labelsize=7)
        self.fig, self.ax = fig, ax

        # Static: fixed bodies and world as grey cubes.
        anchors = list(np.flatnonzero(fixed)) + ([B] if uses_world else [])
        if anchors:
            a = np.array(anchors)
            corners = geo.box_corners(self.pos[0, a], self.R[0, a], np.full((len(a), 3), marker),
                                      np.broadcast_to(np.eye(3), (len(a), 3, 3)))
            ax.add_collection3d(Poly3DCollection(corners[:, geo.BOX_FACES].reshape(-1, 4, 3),
                                                 facecolor=FIXED_COLOR, edgecolor="0.3", linewidth=0.5),
                                autolim=False)

        # Moving: boxes (one collection for all faces), axes, connectors.
        face = np.repeat(body_colors(len(self.moving)), 6, axis=0) if len(self.moving) else "C0"
        self.boxes = Poly3DCollection(np.zeros((6 * len(self.moving), 4, 3)), facecolor=face, alpha=0.35,
                                      edgecolor="0.25", linewidth=0.6)
        ax.add_collection3d(self.boxes, autolim=False)
        self.axes_lines = []
        for color in AXIS_COLORS:
            lc = Line3DCollection(np.zeros((len(self.moving), 2, 3)), colors=color, linewidths=1.8)
            ax.add_collection3d(lc, autolim=False)
            self.axes_lines.append(lc)

        draw, _ = geo.connector_traits(self.types)
        self.springs = np.flatnonzero(draw == "coil")
        self.dampers = np.flatnonzero(draw == "dashpot")
        self.torsion = np.flatnonzero(draw == "twist")
        self.at_point = np.flatnonzero(draw == "point")  # a bushing: a marker at its point
        self.lines = np.flatnonzero(~np.isin(draw, ("coil", "dashpot", "twist", "point")))  # "line", and any other
        L = np.linalg.norm(self.geom.points[:, :, 1] - self.geom.points[:, :, 0], axis=-1)
        # coil radius: a fixed share of the scene, less for springs that are short for their whole run
        self.coil_radius = np.minimum(0.015 * reach, 0.12 * np.median(L[:, self.springs], axis=0)) \
            if len(self.springs) else np.zeros(0)
        # arc radius: outside body B's box; several arcs on one body a little apart
        tb = self.geom.body_b[self.torsion]
        nth, seen = np.zeros(len(tb)), {}
        for j, b in enumerate(tb.tolist()):
            nth[j] = seen[b] = seen.get(b, -1) + 1
        size_b = np.where(tb < B, edges[np.minimum(tb, max(B - 1, 0))].max(axis=1) if B else marker, marker)
        self.arc_radius = 0.6 * size_b * (1.0 + 0.18 * nth)
        thin = 0.5 if len(self.types) > 20 else 1.0  # a crowded scene reads better with finer lines
        self.coil_lines = Line3DCollection([], colors=SPRING_COLOR, linewidths=1.3 * thin)
        self.cylinders = Line3DCollection([], colors=DAMPER_COLOR, linewidths=6.0 * thin)
        self.rods = Line3DCollection([], colors=ROD_COLOR, linewidths=1.6 * thin)
        self.arc_lines = Line3DCollection([], colors=TORSION_COLOR, linewidths=2.0 * thin)
        self.straight_lines = Line3DCollection([], colors=LINE_COLOR, linewidths=1.6 * thin)
        for lc in (self.coil_lines, self.cylinders, self.rods, self.arc_lines, self.straight_lines):
            ax.add_collection3d(lc, autolim=False)
        self.point_markers, = ax.plot([], [], [], ls="", marker="D", ms=8 * thin, color=TORSION_COLOR)
        self._joint_artists(edges, marker, thin)

        # Clock, title and key.
        name = title or traj.get("attrs", {}).get("scenario_name") or "mbsim result"
        fig.text(0.5, 0.97, name, ha="center", va="center", fontsize=11)
        # the clock top left, beside the scenario's name; below the scene beside a longer title of one's own
        self.clock = fig.text(0.02, 0.97 if title is None else 0.025, "", ha="left", va="center", fontsize=11,
                              family="monospace")
        key = [Line2D([], [], color=c, lw=1.8, label=f"body {a}") for c, a in zip(AXIS_COLORS, "xyz")]
        for drawn, color, lw in ((self.springs, SPRING_COLOR, 1.3), (self.dampers, DAMPER_COLOR, 5),
                                 (self.torsion, TORSION_COLOR, 2), (self.lines, LINE_COLOR, 1.6)):
            if len(drawn):
                key.append(Line2D([], [], color=color, lw=lw, label=self.kind_names(drawn)))
        if len(self.at_point):
            key.append(Line2D([], [], color=TORSION_COLOR, marker="D", ls="", label=self.kind_names(self.at_point)))
        key += self.joint_key
        if anchors:
            key.append(Line2D([], [], color=FIXED_COLOR, marker="s", ls="", label="fixed"))
        fig.legend(handles=key, loc="upper center", ncol=len(key), fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5, 0.945), handlelength=1.5, columnspacing=1.2)

    def kind_names(self, connectors) -> str:
        """The key's label for ``connectors`` drawn in one style: their types, ``_`` read as a space,
        each once (``spring``; ``spring / my coil`` when a plug-in kind is drawn as a coil too)."""
        return " / ".join(dict.fromkeys(self.types[c].replace("_", " ") for c in connectors))

    def line_segments(self, k: int) -> np.ndarray:
        """Segments ``(N, 2, 3)`` of the connectors drawn as plain lines at stored frame ``k``: from the
        point on A to the point on B (the centres of A and B for a kind without points)."""
        return self.geom.points[k, self.lines]

    def update(self, k: int):
        """Move every artist to stored frame ``k``; returns the artists."""
        m = self.moving
        r, R = self.pos[k, m], self.R[k, m]
        if len(m):
            corners = geo.box_corners(r, R, self.edges[m], self.box_axes[m])
            self.boxes.set_verts(corners[:, geo.BOX_FACES].reshape(-1, 4, 3))
            for j, lc in enumerate(self.axes_lines):
                tip = r + self.axis_len[m, None] * R[:, :, j]
                lc.set_segments(np.stack([r, tip], axis=1))
        g = self.geom
        if len(self.springs):
            p = g.points[k, self.springs]
            self.coil_lines.set_segments(geo.coils(p[:, 0], p[:, 1], self.coil_radius))
        if len(self.dampers):
            p = g.points[k, self.dampers]
            mid = p[:, 0] + 0.55 * (p[:, 1] - p[:, 0])
            self.cylinders.set_segments(np.stack([p[:, 0] + 0.08 * (p[:, 1] - p[:, 0]), mid], axis=1))
            self.rods.set_segments(np.concatenate([np.stack([p[:, 0], mid], axis=1),
                                                   np.stack([mid, p[:, 1]], axis=1)]))
        if len(self.torsion):
            b = g.body_b[self.torsion]
            self.arc_lines.set_segments(geo.arcs(self.pos[k, b], g.axis[k, self.torsion], self.R[k, b][:, :, 0],
                                                 self.arc_radius))
        if len(self.lines):
            self.straight_lines.set_segments(self.line_segments(k))
        if len(self.at_point):
            p = g.points[k, self.at_point, 0]
            self.point_markers.set_data_3d(p[:, 0], p[:, 1], p[:, 2])
        if len(self.jtypes):
            self._update_joints(k)
        self.clock.set_text(self.labels[k] if self.labels is not None else f"t = {self.time[k]:.3f} s")
        return [self.boxes, *self.axes_lines, self.coil_lines, self.cylinders, self.rods, self.arc_lines,
                self.straight_lines, self.point_markers, self.joint_thick, self.joint_thin, self.joint_balls, self.joint_locks,
                self.clock]

    # ---- joints ------------------------------------------------------------
    def _joint_artists(self, edges, marker, thin):
        """The joints' artists, which of them each kind uses, its glyph size and the rails' extents."""
        g, ax = self.jgeom, self.ax
        kinds = np.array(self.jtypes, dtype=object)
        drawn = g.has_points  # a joint the stored scenario does not describe has no place to be drawn
        self.j = {k: np.flatnonzero((kinds == k) & drawn) for k in geo.JOINT_TYPE_IDS}
        # glyph half-length: most of the larger box of its two bodies (world and fixed bodies: a marker)
        B = len(edges)
        size = np.where(np.arange(B + 1) < B, np.append(np.nanmax(edges, axis=1), marker) if B else marker, marker)
        self.joint_half = 0.6 * np.maximum(size[g.body_a], size[g.body_b]) if len(kinds) else np.zeros(0)
        # a rail spans the travel of B's point along the axis over the whole run, and a glyph beyond
        rails = np.concatenate([self.j["prismatic"], self.j["cylindrical"]])
        travel = np.einsum("tjk,tjk->tj", g.points[:, rails, 1] - g.points[:, rails, 0], g.axis[:, rails])
        self.rails = rails
        self.rail_span = np.stack([travel.min(axis=0), travel.max(axis=0)], axis=1) if len(rails) else np.zeros((0, 2))
        self.joint_thick = Line3DCollection([], colors=JOINT_COLOR, linewidths=4.0 * thin)
        self.joint_thin = Line3DCollection([], colors=JOINT_COLOR, linewidths=1.3 * thin)
        for lc in (self.joint_thick, self.joint_thin):
            ax.add_collection3d(lc, autolim=False)
        self.joint_balls, = ax.plot([], [], [], ls="", marker="o", ms=7 * thin, color=JOINT_COLOR)
        self.joint_locks, = ax.plot([], [], [], ls="", marker="s", ms=7 * thin, color=JOINT_COLOR)
        present = {k for k, v in self.j.items() if len(v)}
        self.joint_key = []
        axes = [w for k, w in (("revolute", "hinge"), ("cylindrical", "sleeve"), ("prismatic", "carriage"),
                               ("universal", "cross")) if k in present]
        if axes:
            self.joint_key.append(Line2D([], [], color=JOINT_COLOR, lw=4, label=" / ".join(axes)))
        lines = [w for k, w in (("prismatic", "rail"), ("cylindrical", "rail"), ("planar", "plane"),
                                ("distance", "rod")) if k in present]
        if lines:
            self.joint_key.append(Line2D([], [], color=JOINT_COLOR, lw=1.3, label=" / ".join(dict.fromkeys(lines))))
        if "spherical" in present or "distance" in present:
            self.joint_key.append(Line2D([], [], color=JOINT_COLOR, marker="o", ls="", label="ball joint"))
        if "lock" in present:
            self.joint_key.append(Line2D([], [], color=JOINT_COLOR, marker="s", ls="", label="lock"))

    def joint_segments(self, k: int):
        """Thick and thin segments ``(N, 2, 3)`` and ball and lock marker positions ``(M, 3)`` of the
        joints at stored frame ``k`` (see the module docstring for what each kind looks like)."""
        g, j, h = self.jgeom, self.j, self.joint_half
        pa, pb, n, nb = g.points[k, :, 0], g.points[k, :, 1], g.axis[k], g.axis_b[k]

        def along(idx, centre, direction, scale=1.0):
            d = (scale * h[idx])[:, None] * direction[idx]
            return np.stack([centre[idx] - d, centre[idx] + d], axis=1)

        thick = [along(j["revolute"], pb, n), along(j["cylindrical"], pb, n, 0.5),
                 along(j["prismatic"], pb, n, 0.5), along(j["universal"], pb, n), along(j["universal"], pb, nb)]
        r = self.rails
        lo = (self.rail_span[:, 0] - h[r])[:, None] * n[r]
        hi = (self.rail_span[:, 1] + h[r])[:, None] * n[r]
        thin = [np.stack([pa[r] + lo, pa[r] + hi], axis=1), np.stack([pa[j["distance"]], pb[j["distance"]]], axis=1)]
        p = j["planar"]
        if len(p):
            u = h[p, None] * g.perp[k, p]
            w = np.cross(n[p], u)
            c = pb[p][:, None, :] + np.stack([u + w, -u + w, -u - w, u - w], axis=1)  # (P, 4, 3) corners
            thin.append(np.stack([c, np.roll(c, -1, axis=1)], axis=2).reshape(-1, 2, 3))
        thin += self._stop_marks(k)
        balls = np.concatenate([pb[j["spherical"]], pa[j["distance"]], pb[j["distance"]]])
        return (np.concatenate(thick), np.concatenate(thin), balls, pb[j["lock"]])

    def _stop_marks(self, k: int) -> list:
        """A joint's stops at frame ``k``, carried by A: a spoke from the joint's point at each angle bound
        (turned about the axis from the direction that was B's at t = 0), a tick across the rail at each
        offset bound."""
        g, h = self.jgeom, self.joint_half
        marks = []
        for i, coordinate, bound in g.stops:
            if not g.has_points[i]:
                continue
            pa, n, u = g.points[k, i, 0], g.axis[k, i], g.perp[k, i]
            if coordinate == "angle":
                spoke = np.cos(bound) * u + np.sin(bound) * np.cross(n, u)
                marks.append(np.array([[pa, pa + 0.8 * h[i] * spoke]]))
            else:
                c = pa + bound * n
                marks.append(np.array([[c - 0.3 * h[i] * u, c + 0.3 * h[i] * u]]))
        return marks

    def _update_joints(self, k: int):
        thick, thin, balls, locks = self.joint_segments(k)
        self.joint_thick.set_segments(thick)
        self.joint_thin.set_segments(thin)
        self.joint_balls.set_data_3d(balls[:, 0], balls[:, 1], balls[:, 2])
        self.joint_locks.set_data_3d(locks[:, 0], locks[:, 1], locks[:, 2])


def animate(traj: dict, path, *, fps: float = DEFAULT_FPS, every: Optional[int] = None, elev: float = 20.0,
            azim: float = -60.0, size=DEFAULT_SIZE, dpi: int = DPI,
            progress: Optional[Callable[[int, int], None]] = None, title: Optional[str] = None,
            labels: Optional[Sequence[str]] = None) -> AnimationInfo:
    """Write the animation of ``traj`` to ``path`` (.gif through Pillow, .mp4 through ffmpeg).

    Parameters
    ----------
    traj : dict
        As returned by :func:`mbsim.io.reader.read_trajectory`.
    path : str or os.PathLike
        Output file; its extension picks the format.
    fps : float
        Animation frames per second.
    every : int, optional
        Use every N-th stored frame (0, N, 2N, …, and the last one); default:
        the N that plays the motion in real time at ``fps``.
    elev, azim : float
        View elevation and azimuth [degrees].
    size : (int, int)
        Width and height [pixels].  MP4 (H.264) needs both even.
    progress : callable, optional
        Called as ``progress(i, n)`` after each of the n frames is drawn.
    title : str, optional
        The line above the scene (default: the scenario's name).
    labels : sequence of str, optional
        The clock's text for each stored frame (default: ``t = … s``).

    Raises
    ------
    WriterUnavailable
        Unknown extension, or MP4 without ffmpeg, or odd MP4 dimensions.
    """
    writer_name = check_writer(path)
    if writer_name == "ffmpeg" and (size[0] % 2 or size[1] % 2):
        raise WriterUnavailable(f"MP4 (H.264) needs an even width and height, got {size[0]}x{size[1]}")
    if every is None:
        every = default_every(traj, fps)
    frames = geo.frame_indices(traj, every, include_last=True)
    if len(frames) == 0:
        raise ValueError("the result holds no frames to animate")
    scene = Scene(traj, elev=elev, azim=azim, size=size, dpi=dpi, title=title, labels=labels)
    anim = animation.FuncAnimation(scene.fig, scene.update, frames=[int(k) for k in frames], blit=False,
                                   repeat=False, cache_frame_data=False)
    if writer_name == "pillow":
        writer = animation.PillowWriter(fps=fps)
    else:
        writer = animation.FFMpegWriter(fps=fps, codec="h264", extra_args=["-pix_fmt", "yuv420p"])
    anim.save(os.fspath(path), writer=writer, dpi=dpi, progress_callback=progress)
    return AnimationInfo(path=os.fspath(path), frames=len(frames), fps=float(fps), every=int(every),
                         t_first=float(scene.time[frames[0]]), t_last=float(scene.time[frames[-1]]))


def frame_figure(traj: dict, k: int = -1, **options) -> Figure:
    """One still of the animation: the scene at stored frame ``k`` (default the last), as a Figure."""
    scene = Scene(traj, **options)
    scene.update(range(len(scene.time))[k])
    return scene.fig


# --------------------------------------------------------------------------
# modes (files of `mbsim modes`, OUTPUT.md "Statics and modes files")

MODE_FRAMES = 36  # animation frames per period of a mode (10° of phase each)
MODE_TRANSLATION = 0.1  # default amplitude: the largest translation is this share of the model's size ...
MODE_ROTATION = 0.3  # ... and the largest rotation at most this many radians


@dataclass(frozen=True)
class ModeMotion:
    """One period of a mode's motion about the state of a modes file, as a trajectory to draw.

    Attributes
    ----------
    traj : dict
        The file's dictionary (:func:`mbsim.io.reader.read_trajectory`) with every per-frame dataset
        replaced by ``len(phases)`` copies of the linearization state, bodies displaced:
        ``bodies/position`` (N, B, 3) is r + a·Re(δr·e^{iφ}) and ``bodies/orientation`` (N, B, 4) the
        stored orientation turned by the rotation vector a·Re(δθ·e^{iφ}) (world axes).
    phases : (N,) array
        φ of each frame, 0 … 2π (2π excluded: the animation loops).
    amplitude : float
        a, the factor on the shape (its largest entry is 1): metres for translations, radians for rotations.
    mode : int
        The mode's number, from 1 (as ``mbsim info`` lists them).
    description : str
        "mode 2 of 4, 1.234 Hz, ζ = 0.01, amplitude 0.1" (:func:`mode_words`).
    title, labels
        The animation's title (the scenario's name and ``description``) and clock text per frame (φ).
    """

    traj: dict
    phases: np.ndarray
    amplitude: float
    mode: int
    description: str
    title: str
    labels: tuple


def model_size(traj: dict, k: int = -1) -> float:
    """The size of the model at stored frame ``k`` (default the last) [m]: the largest extent of the body
    centres, connector and joint points (and world where one is attached to it), at least the largest
    body box edge; 1 where there is nothing to measure."""
    one = _frame_copies(traj, k, 1)
    sc = geo.scenario_of(one)
    pos, _ = geo.body_poses(one)
    B = len(one["bodies/name"])
    cg, jg = geo.connector_geometry(one, sc), geo.joint_geometry(one, sc)
    pts = [pos[0, :B], cg.points[0].reshape(-1, 3), jg.points[0].reshape(-1, 3)]
    if B in set(cg.body_a) | set(cg.body_b) | set(jg.body_a) | set(jg.body_b):
        pts.append(np.zeros((1, 3)))
    pts = np.concatenate(pts)
    pts = pts[np.isfinite(pts).all(axis=1)]
    reach = float(np.max(pts.max(axis=0) - pts.min(axis=0))) if len(pts) else 0.0
    edges, _ = geo.box_shapes(one, sc)
    edges = edges[np.isfinite(edges)]
    size = max(reach, float(edges.max()) if len(edges) else 0.0)
    return size if 0.0 < size < np.inf else 1.0


def mode_amplitude(traj: dict, modes: dict, mode: int) -> float:
    """The default amplitude of mode number ``mode`` (from 1): the factor on its shape that makes the
    largest translation :data:`MODE_TRANSLATION` of :func:`model_size` and keeps the largest rotation
    at most :data:`MODE_ROTATION` rad (whichever is smaller; a pure rotation mode turns by 0.3 rad)."""
    k = _mode_index(modes, mode)
    z = modes["shape"][k] + 1j * modes["shape_imag"][k]  # (B, 6)
    trans = float(np.linalg.norm(z[:, :3], axis=1).max(initial=0.0))
    rot = float(np.linalg.norm(z[:, 3:], axis=1).max(initial=0.0))
    candidates = ([MODE_TRANSLATION * model_size(traj) / trans] if trans > 0 else []) + \
                 ([MODE_ROTATION / rot] if rot > 0 else [])
    return min(candidates) if candidates else 1.0


def mode_poses(position, orientation, shape, shape_imag, amplitude: float, phases):
    """Body poses over the ``phases`` (N,) of a mode: positions (N, B, 3) r + a·Re(δr·e^{iφ}) and unit
    quaternions (N, B, 4) q_θ ⊗ q, the stored ``orientation`` (B, 4) turned by the rotation vector
    θ = a·Re(δθ·e^{iφ}) in world axes (exactly, not to first order).  ``shape`` and ``shape_imag`` (B, 6)
    are the real and imaginary parts of [δr, δθ] per body, ``position`` (B, 3)."""
    from ..kernels.rotations import quat_mul, rotvec_quat
    phases = np.asarray(phases, dtype=float)
    c, s = np.cos(phases)[:, None, None], np.sin(phases)[:, None, None]
    d = amplitude * (c * np.asarray(shape, dtype=float) - s * np.asarray(shape_imag, dtype=float))  # (N, B, 6)
    pos = np.asarray(position, dtype=float)[None] + d[..., :3]
    q0 = np.asarray(orientation, dtype=float)
    q0 = q0 / np.linalg.norm(q0, axis=-1, keepdims=True)
    q = quat_mul(rotvec_quat(d[..., 3:]), np.broadcast_to(q0, d.shape[:-1] + (4,)))
    return pos, q / np.linalg.norm(q, axis=-1, keepdims=True)


def mode_motion(traj: dict, modes: dict, mode: int, amplitude: Optional[float] = None,
                frames: int = MODE_FRAMES) -> ModeMotion:
    """One period of mode number ``mode`` (from 1) of ``modes`` (:func:`mbsim.io.reader.read_modes`)
    about the last stored frame of ``traj`` (a modes file holds one), in ``frames`` steps of phase.

    ``amplitude`` defaults to :func:`mode_amplitude`.  Raises ValueError for a mode number out of range
    or a ``modes`` whose shapes do not fit the bodies of ``traj``."""
    k = _mode_index(modes, mode)
    B = len(traj["bodies/name"])
    if modes["shape"].shape[1:] != (B, 6):
        raise ValueError(f"the modes' shapes {modes['shape'].shape} do not fit the {B} bodies of the result")
    if amplitude is None:
        amplitude = mode_amplitude(traj, modes, mode)
    if not (np.isfinite(amplitude) and amplitude > 0):
        raise ValueError(f"the amplitude must be a finite number > 0, got {amplitude}")
    if frames < 1:
        raise ValueError(f"frames must be >= 1, got {frames}")
    phases = 2.0 * np.pi * np.arange(frames) / frames
    out = _frame_copies(traj, -1, frames)
    r, q = out["bodies/position"][0], out["bodies/orientation"][0]
    out["bodies/position"], out["bodies/orientation"] = mode_poses(r, q, modes["shape"][k], modes["shape_imag"][k],
                                                                   amplitude, phases)
    labels = tuple(f"φ = {d:3.0f}°" for d in np.degrees(phases))
    words = mode_words(modes, mode, amplitude)
    name = traj.get("attrs", {}).get("scenario_name") or "mbsim result"
    return ModeMotion(traj=out, phases=phases, amplitude=float(amplitude), mode=int(mode), description=words,
                      title=f"{name}: {words}", labels=labels)


def mode_words(modes: dict, mode: int, amplitude: float) -> str:
    """"mode 2 of 4, 1.234 Hz, ζ = 0.01, amplitude 0.1" ("rigid-body mode" in place of frequency and
    damping ratio for one)."""
    k = _mode_index(modes, mode)
    head = f"mode {mode} of {len(modes['frequency'])}"
    if modes["rigid_body"][k]:
        what = "rigid-body mode"
    else:
        zeta = float(modes["damping_ratio"][k])
        what = f"{float(modes['frequency'][k]):.4g} Hz, ζ = " + ("-" if np.isnan(zeta) else f"{zeta:.3g}")
    return f"{head}, {what}, amplitude {amplitude:.3g}"


def animate_mode(traj: dict, modes: dict, mode: int, path, *, amplitude: Optional[float] = None,
                 frames: int = MODE_FRAMES, fps: float = DEFAULT_FPS, elev: float = 20.0, azim: float = -60.0,
                 size=DEFAULT_SIZE, dpi: int = DPI,
                 progress: Optional[Callable[[int, int], None]] = None) -> AnimationInfo:
    """Write the animation of one period of mode number ``mode`` (from 1) to ``path`` (:func:`mode_motion`
    drawn by :func:`animate`: the same scene, the phase φ on the clock; a GIF loops for ever)."""
    motion = mode_motion(traj, modes, mode, amplitude, frames)
    return animate(motion.traj, path, fps=fps, every=1, elev=elev, azim=azim, size=size, dpi=dpi,
                   progress=progress, title=motion.title, labels=motion.labels)


def _mode_index(modes: dict, mode: int) -> int:
    K = len(modes["frequency"])
    if not 1 <= int(mode) <= K:
        raise ValueError(f"no mode {mode}: the file has {K} mode{'s' if K != 1 else ''}"
                         + (f" (1 … {K})" if K else ""))
    return int(mode) - 1


def _frame_copies(traj: dict, k: int, n: int) -> dict:
    """``traj`` with each per-frame dataset (OUTPUT.md) replaced by ``n`` copies of its stored frame ``k``."""
    from ..io.writer import frame_datasets
    T = geo.frame_count(traj)
    if T == 0:
        raise ValueError("the result holds no frame")
    k = range(T)[k]
    out = dict(traj)
    for name in frame_datasets(1):
        if name in traj:
            v = np.asarray(traj[name])
            out[name] = np.repeat(v[k:k + 1], n, axis=0)
    return out
