"""Plots of a stored trajectory: energy budget, motion, connector forces, joint reactions, solver work.

Every function takes the dictionary of :func:`mbsim.io.reader.read_trajectory`
and returns a :class:`matplotlib.figure.Figure`.  Figures are built without
``pyplot``, so nothing needs a display and no global figure state is left
behind; :func:`save` writes one through the Agg renderer.

Needs matplotlib (``pip install 'mbsim[plot]'``).
"""
from __future__ import annotations

import difflib
from typing import Optional, Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..energy import energy_balance
from .geometry import connector_traits, frame_count

DPI = 100
DEFAULT_SIZES = {  # pixels, width x height
    "dashboard": (1800, 1200),
    "energy": (1200, 800),
    "motion": (1400, 800),
    "forces": (1200, 900),
    "joints": (1200, 900),
    "solver": (1200, 900),
}
MIN_SIZES = {  # below these the panels have no room left for their labels
    "dashboard": (1000, 680),
    "energy": (480, 360),
    "motion": (480, 360),
    "forces": (480, 360),
    "joints": (480, 360),
    "solver": (480, 360),
}
MAX_BODIES = 6  # lines per panel before the default selection kicks in
MAX_CONNECTORS = 8
MAX_JOINTS = 8


class UnknownName(ValueError):
    """A body, connector or joint name that the result does not hold (the message lists the choices)."""


class FigureTooSmall(ValueError):
    """The requested size leaves the panels of a figure no room (the message gives the minimum)."""


# --------------------------------------------------------------------------
# selection

def _resolve(names: Sequence[str], wanted: Sequence[str], what: str) -> list:
    index = {n: i for i, n in enumerate(names)}
    out = []
    for w in wanted:
        if w not in index:
            if not names:
                raise UnknownName(f"no {what} named {w!r}: this result has no {what}s")
            close = difflib.get_close_matches(w, names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            shown = ", ".join(names[:12]) + (", …" if len(names) > 12 else "")
            raise UnknownName(f"no {what} named {w!r} in this result{hint} ({what} names: {shown})")
        out.append(index[w])
    return out


def _spread(candidates: np.ndarray, limit: int) -> np.ndarray:
    """At most ``limit`` of ``candidates``, evenly spaced, first and last included."""
    if len(candidates) <= limit:
        return candidates
    return candidates[np.unique(np.round(np.linspace(0, len(candidates) - 1, limit)).astype(int))]


def select_bodies(traj: dict, names: Optional[Sequence[str]] = None, limit: int = MAX_BODIES):
    """Indices of the bodies to plot, and a note when the default selection left some out.

    ``names`` given: exactly those (UnknownName for one the result does not
    hold).  Otherwise the moving bodies, at most ``limit`` of them evenly
    spread over the scenario order.
    """
    all_names = list(traj["bodies/name"])
    if names:
        return _resolve(all_names, names, "body"), ""
    moving = np.flatnonzero(~np.asarray(traj["bodies/fixed"], dtype=bool))
    chosen = _spread(moving, limit)
    note = f"{len(chosen)} of {len(moving)} moving bodies" if len(chosen) < len(moving) else ""
    return [int(i) for i in chosen], note


def select_connectors(traj: dict, names: Optional[Sequence[str]] = None, limit: int = MAX_CONNECTORS):
    """Indices of the connectors to plot, and a note when some were left out.

    ``names`` given: exactly those.  Otherwise at most ``limit``: those with
    the largest peak force (or moment, for torsional dampers) over the run.
    """
    all_names = list(traj["connectors/name"])
    if names:
        return _resolve(all_names, names, "connector"), ""
    C = len(all_names)
    if C <= limit:
        return list(range(C)), ""
    T = frame_count(traj)
    peak = np.maximum(np.nanmax(np.linalg.norm(traj["connectors/force"][:T], axis=-1), axis=0),
                      np.nanmax(np.linalg.norm(traj["connectors/moment"][:T], axis=-1), axis=0))
    chosen = sorted(np.argsort(-np.nan_to_num(peak), kind="stable")[:limit])
    return [int(i) for i in chosen], f"the {limit} of {C} connectors with the largest peaks"


def joint_names(traj: dict) -> list:
    """The joint names of a result, in scenario order (empty: it has no ``/joints`` group)."""
    return list(traj.get("joints/name", ()))


def select_joints(traj: dict, names: Optional[Sequence[str]] = None, limit: int = MAX_JOINTS):
    """Indices of the joints to plot, and a note when some were left out.

    ``names`` given: exactly those.  Otherwise at most ``limit``: those with
    the largest peak reaction force over the run.
    """
    all_names = joint_names(traj)
    if names:
        return _resolve(all_names, names, "joint"), ""
    J = len(all_names)
    if J <= limit:
        return list(range(J)), ""
    T = frame_count(traj)
    peak = np.nanmax(np.linalg.norm(traj["joints/force"][:T], axis=-1), axis=0)
    chosen = sorted(np.argsort(-np.nan_to_num(peak), kind="stable")[:limit])
    return [int(i) for i in chosen], f"the {limit} of {J} joints with the largest peak forces"


# --------------------------------------------------------------------------
# panels: each draws on the axes it is given

def _time(traj):
    T = frame_count(traj)
    return np.asarray(traj["time"][:T], dtype=float), T


def _finish(ax, title, ylabel, xlabel=True):
    ax.set_title(title, fontsize=11, loc="left")
    ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel("time t [s]")
    ax.grid(True, alpha=0.3)


def _no_data(ax, title, text):
    ax.set_title(title, fontsize=11, loc="left")
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def energy_axes(ax, traj) -> None:
    """Kinetic, potential, dissipated energy, external work and their balance K + V + D − W.

    The potential is drawn from its initial value (gravity's −m g·r depends on where the origin
    is and would squeeze the other curves into a flat line); so the balance starts at K(0).
    """
    t, T = _time(traj)
    e = {k: np.asarray(traj[f"energy/{k}"][:T], dtype=float)
         for k in ("kinetic", "potential", "dissipated", "external_work")}
    if T:
        e["potential"] = e["potential"] - e["potential"][0]
    ax.plot(t, e["kinetic"], color="tab:red", label="kinetic K")
    ax.plot(t, e["potential"], color="tab:blue", label="potential V − V(0) (springs + gravity)")
    ax.plot(t, e["dissipated"], color="tab:purple", label="dissipated D (dampers)")
    if np.any(e["external_work"]):
        ax.plot(t, e["external_work"], color="tab:green", label="external work W (loads)")
    ax.plot(t, energy_balance(*e.values()), color="black", ls="--", lw=1.5, label="balance K + V − V(0) + D − W")
    _finish(ax, "Energy budget", "energy [J]")
    ax.legend(fontsize=8, loc="best")


def drift_axes(ax, traj) -> None:
    """Departure of the energy balance from its initial value."""
    t, T = _time(traj)
    bal = energy_balance(*(np.asarray(traj[f"energy/{k}"][:T], dtype=float)
                           for k in ("kinetic", "potential", "dissipated", "external_work")))
    drift = bal - bal[0]
    worst = float(np.nanmax(np.abs(drift))) if T else 0.0
    # a drift is small by nature: scale it to a prefixed unit rather than a "1e-5" offset label
    exp = 0 if not (np.isfinite(worst) and worst > 0) else min(0, 3 * int(np.floor(np.log10(worst) / 3)))
    exp = max(exp, -15)
    unit = {0: "J", -3: "mJ", -6: "µJ", -9: "nJ", -12: "pJ", -15: "fJ"}[exp]
    ax.plot(t, drift / 10.0 ** exp, color="black")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.text(0.02, 0.95, f"max |drift| = {worst:.3g} J", transform=ax.transAxes, va="top", fontsize=9,
            bbox=dict(facecolor="white", edgecolor="0.8", alpha=0.9))
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    _finish(ax, "Energy balance drift (K + V + D − W) − initial", f"drift [{unit}]")


def body_colors(n: int) -> list:
    """``n`` colours for bodies: tab10 without its grey, which marks fixed bodies."""
    import matplotlib
    cmap = matplotlib.colormaps["tab10"]
    palette = [cmap(i) for i in range(10) if i != 7]
    return [palette[i % len(palette)] for i in range(n)]


def position_axes(axes, traj, bodies) -> None:
    """x, y and z of the centres of the ``bodies`` (indices) on three axes (the legend is on the
    3D paths, :func:`paths_axes`, which use the same colours)."""
    t, T = _time(traj)
    names = list(traj["bodies/name"])
    r = np.asarray(traj["bodies/position"][:T], dtype=float)
    colors = body_colors(len(bodies))
    for k, (ax, comp) in enumerate(zip(axes, "xyz")):
        for c, b in zip(colors, bodies):
            ax.plot(t, r[:, b, k], color=c, label=names[b])
        _finish(ax, "Body positions (centres of mass)" if k == 0 else "", f"{comp} [m]", xlabel=(k == 2))
        if k < 2:
            ax.tick_params(labelbottom=False)


def paths_axes(ax, traj, bodies) -> None:
    """3D paths of the centres of the ``bodies``: start ○, end ●, equal scale on all axes."""
    _, T = _time(traj)
    names = list(traj["bodies/name"])
    r = np.asarray(traj["bodies/position"][:T], dtype=float)
    for c, b in zip(body_colors(len(bodies)), bodies):
        ax.plot(r[:, b, 0], r[:, b, 1], r[:, b, 2], color=c, lw=1.2, label=names[b])
        ax.scatter(*r[0, b], color=c, marker="o", facecolors="none", s=30)
        ax.scatter(*r[-1, b], color=c, marker="o", s=20)
    pts = r[:, bodies].reshape(-1, 3) if bodies else np.zeros((1, 3))
    set_equal_3d(ax, pts.min(axis=0), pts.max(axis=0))
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]")
    ax.set_title("Paths of the centres (○ start, ● end)", fontsize=11, loc="left")
    if bodies:
        ax.legend(fontsize=8, loc="upper left", ncol=1 if len(bodies) <= 3 else 2)


def set_equal_3d(ax, lo, hi, pad: float = 0.05, floor: float = 0.2) -> None:
    """Axis limits around [lo, hi] with one scale on x, y and z (each range at least ``floor``
    times the largest, so a planar motion still shows as a slab, not a line)."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    span = hi - lo
    big = max(float(span.max()), 1e-9)
    half = np.maximum(span, floor * big) / 2 * (1 + 2 * pad)
    mid = (lo + hi) / 2
    ax.set_xlim(mid[0] - half[0], mid[0] + half[0])
    ax.set_ylim(mid[1] - half[1], mid[1] + half[1])
    ax.set_zlim(mid[2] - half[2], mid[2] + half[2])
    ax.set_box_aspect(tuple(half))
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_major_locator(MaxNLocator(4))  # 3D tick labels crowd quickly
        axis.set_tick_params(pad=8)  # else a tick mark can hide a label's minus sign
        axis.labelpad = 12


# line style of a connector's curves by how its kind is drawn (springs solid, dampers dashed)
LINE_STYLES = {"coil": "-", "dashpot": "--", "twist": "-"}


def connectors_with(traj, connectors, output: str) -> list:
    """The connectors among ``connectors`` (indices) whose kind declares ``output`` ("force" or
    "moment") among its ``outputs``: the stored vectors that mean something for them."""
    _, outputs = connector_traits(traj["connectors/type"])
    return [c for c in connectors if output in outputs[c]]


def force_axes(ax, traj, connectors, moments: bool = False) -> None:
    """|F| of the connectors among ``connectors`` that output a force (or |M| of those that output a
    moment), each labelled with its type and styled by how its kind is drawn."""
    t, T = _time(traj)
    names, types = list(traj["connectors/name"]), list(traj["connectors/type"])
    output = "moment" if moments else "force"
    mag = np.linalg.norm(np.asarray(traj[f"connectors/{output}"][:T], dtype=float), axis=-1)
    pick = connectors_with(traj, connectors, output)
    title = f"Connector {output}s"
    if not pick:
        _no_data(ax, title, f"no connectors with a {output}")
        return
    draw, _ = connector_traits(types)
    for c in pick:
        ax.plot(t, mag[:, c], ls=LINE_STYLES.get(draw[c], ":"), label=f"{names[c]} ({types[c].replace('_', ' ')})")
    _finish(ax, title, "|M| [N·m]" if moments else "|F| [N]")
    ax.legend(fontsize=8, loc="best", ncol=1 if len(pick) <= 4 else 2)


def length_axes(ax, traj, connectors) -> None:
    """Lengths of the connectors among ``connectors`` that have one (finite at some frame)."""
    t, T = _time(traj)
    names = list(traj["connectors/name"])
    L = np.asarray(traj["connectors/length"][:T], dtype=float)
    pick = [c for c in connectors if np.isfinite(L[:, c]).any()]
    if not pick:
        _no_data(ax, "Connector lengths", "no connectors with a length")
        return
    draw, _ = connector_traits(traj["connectors/type"])
    for c in pick:
        ax.plot(t, L[:, c], ls=LINE_STYLES.get(draw[c], ":"), label=names[c])
    _finish(ax, "Connector lengths (between insertion points)", "length [m]")
    ax.legend(fontsize=8, loc="best", ncol=1 if len(pick) <= 4 else 2)


def joint_reaction_axes(ax, traj, joints, moments: bool = False) -> None:
    """|F| (or |M|) of the reactions of the ``joints`` (indices): what each exerts on its body A,
    drive force and torque included; the moment is about the joint's point."""
    t, T = _time(traj)
    title = "Joint reaction moments (on body A, about the joint's point)" if moments else \
        "Joint reaction forces (on body A)"
    if not joints:
        _no_data(ax, title, "no joints" if not joint_names(traj) else "no joints selected")
        return
    names, types = joint_names(traj), list(traj["joints/type"])
    key = "joints/moment" if moments else "joints/force"
    mag = np.linalg.norm(np.asarray(traj[key][:T], dtype=float), axis=-1)
    for c, j in zip(_joint_colors(len(joints)), joints):
        ax.plot(t, mag[:, j], color=c, label=f"{names[j]} ({types[j]})")
    _finish(ax, title, "|M| [N·m]" if moments else "|F| [N]")
    ax.legend(fontsize=8, loc="best", ncol=1 if len(joints) <= 4 else 2)


def joint_error_axes(ax, traj, joints) -> None:
    """Constraint errors of the ``joints`` on a log axis: the norm of the translational residuals
    [m] (solid) and of the rotational ones [rad] (dashed), as the solver left them at each frame.
    Exact zeros (a joint without rotational rows) have no place on a log axis and are left out."""
    t, T = _time(traj)
    title = "Constraint errors (— position [m], - - angle [rad])"
    if not joints:
        _no_data(ax, title, "no joints" if not joint_names(traj) else "no joints selected")
        return
    names = joint_names(traj)
    pos = np.asarray(traj["joints/position_error"][:T], dtype=float)
    ang = np.asarray(traj["joints/angle_error"][:T], dtype=float)
    drawn = 0
    for c, j in zip(_joint_colors(len(joints)), joints):
        for values, ls, what in ((pos[:, j], "-", "position"), (ang[:, j], "--", "angle")):
            shown = np.where(values > 0, values, np.nan)
            if np.isfinite(shown).any():
                ax.semilogy(t, shown, color=c, ls=ls, lw=1.0, label=f"{names[j]} {what}")
                drawn += 1
    if not drawn:
        _no_data(ax, title, "every error exactly 0")
        return
    _finish(ax, title, "error [m] or [rad]")
    ax.legend(fontsize=7, loc="best", ncol=1 if drawn <= 4 else 2)


def _joint_colors(n: int) -> list:
    """``n`` colours for joints (tab10 in order, so a joint keeps its colour across panels)."""
    import matplotlib
    cmap = matplotlib.colormaps["tab10"]
    return [cmap(i % 10) for i in range(n)]


def iterations_axes(ax, traj) -> None:
    """Newton iterations of the step ending at each frame (frame 0 has none)."""
    t, T = _time(traj)
    it = np.asarray(traj["solver/iterations"][:T], dtype=float)
    if T < 2:
        _no_data(ax, "Newton iterations", "no steps stored")
        return
    ax.step(t[1:], it[1:], where="pre", color="tab:blue")
    ax.set_ylim(0, max(float(np.nanmax(it[1:])), 1.0) + 1)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    a = traj.get("attrs", {})
    if a.get("steps") is not None and a.get("newton_iterations") is not None:
        ax.text(0.02, 0.05, f"whole run: {int(a['steps'])} steps, {int(a['newton_iterations'])} iterations, "
                            f"{int(a.get('rejected_steps') or 0)} rejected", transform=ax.transAxes, fontsize=9,
                bbox=dict(facecolor="white", edgecolor="0.8", alpha=0.9))
    _finish(ax, "Newton iterations (of the step ending at each frame)", "iterations")


def step_axes(ax, traj) -> None:
    """Time-step size of the step ending at each frame."""
    t, T = _time(traj)
    h = np.asarray(traj["solver/step"][:T], dtype=float)
    if T < 2:
        _no_data(ax, "Time step", "no steps stored")
        return
    big = float(np.nanmax(h[1:]))
    scale, unit = (1.0, "s") if big >= 0.1 else (1e-3, "ms") if big >= 1e-4 else (1e-6, "µs")
    ax.step(t[1:], h[1:] / scale, where="pre", color="tab:orange")
    ax.set_ylim(0, 1.15 * big / scale)
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    _finish(ax, "Time step (of the step ending at each frame)", f"step size Δt [{unit}]")


def residual_axes(ax, traj) -> None:
    """Final Newton residual norm of the step ending at each frame."""
    t, T = _time(traj)
    res = np.asarray(traj["solver/residual_norm"][:T], dtype=float)
    if T < 2 or not np.any(res[1:] > 0):
        _no_data(ax, "Final residual norm", "no steps stored" if T < 2 else "all zero")
        return
    ax.semilogy(t[1:], np.where(res[1:] > 0, res[1:], np.nan), ".", ms=3, color="tab:gray")
    _finish(ax, "Final Newton residual (of the step ending at each frame)", "residual norm")


# --------------------------------------------------------------------------
# figures

def _figure(kind: str, size=None, dpi: int = DPI) -> Figure:
    w, h = size or DEFAULT_SIZES[kind]
    mw, mh = MIN_SIZES[kind]
    if w < mw or h < mh:
        raise FigureTooSmall(f"the {kind} figure needs at least {mw}x{mh} pixels, got {w}x{h}")
    return Figure(figsize=(w / dpi, h / dpi), dpi=dpi, layout="constrained")


def _title(fig, traj, what: str, note: str = "") -> None:
    a = traj.get("attrs", {})
    t, T = _time(traj)
    span = f"t = {t[0]:g} … {t[-1]:g} s" if T else "no frames"
    status = a.get("status", "?")
    head = f"{a.get('scenario_name') or 'mbsim result'}: {what}"
    sub = f"{status}, {T} frames, {span}" + (f"; showing {note}" if note else "")
    fig.suptitle(f"{head}\n{sub}", fontsize=12)


def plot_energy(traj: dict, *, size=None, dpi: int = DPI) -> Figure:
    """Energy budget over time, with the drift of the balance K + V + D − W below it."""
    fig = _figure("energy", size, dpi)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    energy_axes(top, traj)
    top.set_xlabel("")
    drift_axes(bottom, traj)
    _title(fig, traj, "energy")
    return fig


def plot_motion(traj: dict, *, bodies: Optional[Sequence[str]] = None, size=None, dpi: int = DPI) -> Figure:
    """x, y, z of the body centres over time (left) and their 3D paths (right)."""
    idx, note = select_bodies(traj, bodies)
    fig = _figure("motion", size, dpi)
    gs = fig.add_gridspec(3, 2, width_ratios=[1.1, 1])
    axes = [fig.add_subplot(gs[0, 0])]
    axes += [fig.add_subplot(gs[k, 0], sharex=axes[0]) for k in (1, 2)]
    position_axes(axes, traj, idx)
    paths_axes(fig.add_subplot(gs[:, 1], projection="3d"), traj, idx)
    _title(fig, traj, "motion", note)
    return fig


def plot_forces(traj: dict, *, connectors: Optional[Sequence[str]] = None, size=None, dpi: int = DPI) -> Figure:
    """Force magnitudes of the connectors that output a force, moment magnitudes of those that output a
    moment (the torsional dampers), lengths."""
    idx, note = select_connectors(traj, connectors)
    fig = _figure("forces", size, dpi)
    a, b, c = fig.subplots(3, 1, sharex=True)
    force_axes(a, traj, idx)
    force_axes(b, traj, idx, moments=True)
    length_axes(c, traj, idx)
    for ax in (a, b):
        ax.set_xlabel("")
    _title(fig, traj, "connectors", note)
    return fig


def plot_joints(traj: dict, *, joints: Optional[Sequence[str]] = None, size=None, dpi: int = DPI) -> Figure:
    """Reaction force and moment magnitudes of the joints, and their constraint errors on a log axis.

    A result without joints gives the three panels saying so."""
    idx, note = select_joints(traj, joints)
    fig = _figure("joints", size, dpi)
    a, b, c = fig.subplots(3, 1, sharex=True)
    joint_reaction_axes(a, traj, idx)
    joint_reaction_axes(b, traj, idx, moments=True)
    joint_error_axes(c, traj, idx)
    for ax in (a, b):
        ax.set_xlabel("")
    _title(fig, traj, "joints", note)
    return fig


def plot_solver(traj: dict, *, size=None, dpi: int = DPI) -> Figure:
    """Newton iterations, time-step size and final residual of the step ending at each frame."""
    fig = _figure("solver", size, dpi)
    a, b, c = fig.subplots(3, 1, sharex=True)
    iterations_axes(a, traj)
    step_axes(b, traj)
    residual_axes(c, traj)
    for ax in (a, b):
        ax.set_xlabel("")
    _title(fig, traj, "solver")
    return fig


def dashboard(traj: dict, *, bodies: Optional[Sequence[str]] = None,
              connectors: Optional[Sequence[str]] = None, joints: Optional[Sequence[str]] = None,
              size=None, dpi: int = DPI) -> Figure:
    """Everything on one page: energy budget and drift, positions and 3D paths, connector forces
    and moments (and joint reaction forces, when there are joints), Newton iterations and step sizes."""
    bidx, bnote = select_bodies(traj, bodies)
    cidx, cnote = select_connectors(traj, connectors)
    jidx, jnote = select_joints(traj, joints)
    fig = _figure("dashboard", size, dpi)
    gs = fig.add_gridspec(3, 3, height_ratios=[1, 1.35, 0.8])
    energy_axes(fig.add_subplot(gs[0, 0]), traj)
    drift_axes(fig.add_subplot(gs[0, 1]), traj)
    paths_axes(fig.add_subplot(gs[0:2, 2], projection="3d"), traj, bidx)

    pg = gs[1, 0].subgridspec(3, 1, hspace=0.0)
    pax = [fig.add_subplot(pg[0])]
    pax += [fig.add_subplot(pg[k], sharex=pax[0]) for k in (1, 2)]
    position_axes(pax, traj, bidx)

    has_forces = bool(connectors_with(traj, cidx, "force"))
    has_moments = bool(connectors_with(traj, cidx, "moment"))
    panels = []  # what shares the forces slot: connector forces, moments, joint reactions
    if has_forces or not (has_moments or jidx):  # (the "no connectors with a force" panel when there is nothing)
        panels.append(lambda ax: force_axes(ax, traj, cidx))
    if has_moments:
        panels.append(lambda ax: force_axes(ax, traj, cidx, moments=True))
    if jidx:
        panels.append(lambda ax: joint_reaction_axes(ax, traj, jidx))
    if len(panels) == 1:
        panels[0](fig.add_subplot(gs[1, 1]))
    else:
        fg = gs[1, 1].subgridspec(len(panels), 1)
        first = None
        for k, draw in enumerate(panels):
            ax = fig.add_subplot(fg[k], sharex=first)
            first = first or ax
            draw(ax)
            if k < len(panels) - 1:
                ax.set_xlabel("")

    iterations_axes(fig.add_subplot(gs[2, 0]), traj)
    step_axes(fig.add_subplot(gs[2, 1]), traj)
    residual_axes(fig.add_subplot(gs[2, 2]), traj)
    _title(fig, traj, "dashboard", "; ".join(n for n in (bnote, cnote, jnote) if n))
    return fig


PLOTS = {"dashboard": dashboard, "energy": plot_energy, "motion": plot_motion, "forces": plot_forces,
         "joints": plot_joints, "solver": plot_solver}
"""``--what`` name → figure function."""


def make(what: str, traj: dict, *, bodies=None, connectors=None, joints=None, size=None, dpi: int = DPI) -> Figure:
    """The figure ``what`` (a key of PLOTS) of ``traj``; options a figure does not use are ignored."""
    if what not in PLOTS:
        raise ValueError(f"unknown plot {what!r}; choose from {', '.join(PLOTS)}")
    kwargs = {"size": size, "dpi": dpi}
    if what in ("dashboard", "motion"):
        kwargs["bodies"] = bodies
    if what in ("dashboard", "forces"):
        kwargs["connectors"] = connectors
    if what in ("dashboard", "joints"):
        kwargs["joints"] = joints
    return PLOTS[what](traj, **kwargs)


def save(fig: Figure, path) -> None:
    """Write ``fig`` to ``path`` (format from the extension: png, pdf, svg, …) at the figure's own
    size and dpi, through Agg (no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(fig)  # attach a raster canvas explicitly: works headless whatever the default backend
    fig.savefig(path, dpi=fig.dpi)


def supported_formats() -> list:
    """File extensions :func:`save` can write."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    return sorted(FigureCanvasAgg(Figure()).get_supported_filetypes())
