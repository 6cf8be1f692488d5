"""Exports of a result file to formats other tools read: tidy CSV tables and a ParaView
time series (VTK).

Both take the dictionary of :func:`mbsim.io.reader.read_trajectory` and a
directory (created if needed; files of the same names in it are replaced).

CSV (:func:`export_csv`): three tidy tables (four with joints), one observation per row, a
single header row and nothing else, so ``pandas.read_csv``,
``numpy.genfromtxt(names=True)`` or a spreadsheet read them as they are.
Each column name ends in its unit (``x_m``, ``vx_m_s``, ``fx_N``,
``mx_N_m``; ``_m_s`` is m/s, ``_rad_s2`` rad/s², no suffix: dimensionless),
SI as OUTPUT.md assumes.  Numbers are written in Python's shortest
round-trip form, so reading them back gives the stored float64 values
exactly; a missing value (the length of a torsional damper) is ``nan``.

- ``bodies.csv``: one row per frame × body (scenario order),
  ``t_s, body, x_m … z_m`` (centre of mass), ``qw … qz`` (unit quaternion,
  body-to-world), ``vx_m_s …`` (velocity), ``wx_rad_s …`` (angular velocity,
  world frame), ``ax_m_s2 …`` (acceleration), ``alx_rad_s2 …`` (angular
  acceleration);
- ``connectors.csv``: one row per frame × connector, ``t_s, connector, type,
  fx_N … fz_N`` (force on body A), ``mx_N_m … mz_N_m`` (pure moment on A),
  ``length_m``;
- ``energy.csv``: one row per frame, ``t_s, kinetic_J, potential_J,
  dissipated_J, external_work_J, balance_J`` with balance = kinetic +
  potential + dissipated − external work (constant for the exact motion);
- ``joints.csv``, only for a result with joints (as its file has a
  ``/joints`` group only then): one row per frame × joint, ``t_s, joint,
  type, fx_N … fz_N`` (reaction force on body A, drive force included),
  ``mx_N_m … mz_N_m`` (reaction moment on A about the joint's point),
  ``position_error_m, angle_error_rad`` (constraint errors).

VTK (:func:`export_vtk`): one ``.vtu`` file per frame written by meshio, and a
ParaView collection ``.pvd`` that lists them with their times (open the
``.pvd`` in ParaView to get the time series).  Each frame holds:

- points: the B body centres (scenario order), then for each connector the
  point on A and the point on B (a connector without points, as a torsional
  damper: the centres of A and B; ``world`` is the origin), then for each
  joint its point as carried by A and as carried by B (they coincide while
  the joint holds; a distance joint: its two points);
- cells: one ``vertex`` per body, then one ``line`` per connector and one
  per joint (connectors first);
- point data: ``axis_x``, ``axis_y``, ``axis_z`` (the body's unit axes in the
  world, at body centres; zero at connector ends), ``velocity`` (of the
  centre, or of the material point at a connector end), ``body_id`` (index
  of the body the point belongs to, −1 for world);
- cell data: ``force`` and ``moment`` (vectors on body A, zero for body
  cells; a joint's reaction, its moment about the joint's point),
  ``force_magnitude``, ``moment_magnitude``, ``type_id`` (0 body,
  1 spring, 2 damper, 3 torsional damper, 9 other connector, 11 spherical,
  12 revolute, 13 prismatic, 14 cylindrical, 15 planar, 16 universal,
  17 lock, 18 distance, 19 other joint; a connector's id follows the
  ``draw`` trait of its kind, so a plug-in kind drawn as a coil is 1:
  :data:`mbsim.viz.geometry.CONNECTOR_DRAW_IDS`) and ``index`` (body,
  connector or joint index in scenario order);
- with joints also the point data ``joint_axis`` (a joint's unit axis at
  its two points, carried by A and by B; zero elsewhere and for joints
  without an axis) and the cell data ``position_error`` and
  ``angle_error`` (the joint's constraint errors; zero for other cells).

The VTK export needs meshio (``pip install 'mbsim[vtk]'``).
"""
from __future__ import annotations

import csv
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .energy import energy_balance
from .viz import geometry as geo
from .viz import require

BODY_COLUMNS = ("t_s", "body", "x_m", "y_m", "z_m", "qw", "qx", "qy", "qz",
                "vx_m_s", "vy_m_s", "vz_m_s", "wx_rad_s", "wy_rad_s", "wz_rad_s",
                "ax_m_s2", "ay_m_s2", "az_m_s2", "alx_rad_s2", "aly_rad_s2", "alz_rad_s2")
CONNECTOR_COLUMNS = ("t_s", "connector", "type", "fx_N", "fy_N", "fz_N", "mx_N_m", "my_N_m", "mz_N_m",
                     "length_m")
ENERGY_COLUMNS = ("t_s", "kinetic_J", "potential_J", "dissipated_J", "external_work_J", "balance_J")
JOINT_COLUMNS = ("t_s", "joint", "type", "fx_N", "fy_N", "fz_N", "mx_N_m", "my_N_m", "mz_N_m", "position_error_m",
                 "angle_error_rad")

_BODY_DATA = ("bodies/position", "bodies/orientation", "bodies/velocity", "bodies/angular_velocity",
              "bodies/acceleration", "bodies/angular_acceleration")
_ENERGY = ("kinetic", "potential", "dissipated", "external_work")


def _directory(directory) -> Path:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    return d


def _table(path: Path, header, names, time, values) -> None:
    """Write ``values (T, N, k)`` as one row per frame × item: time, the item's name fields, k numbers.

    ``names`` is a list of N tuples (the text fields of each item)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for t, frame in zip(time.tolist(), values.tolist()):  # tolist: Python floats, shortest repr
            w.writerows([t, *n, *v] for n, v in zip(names, frame))


def export_csv(traj: dict, directory, every: int = 1) -> dict:
    """Write ``bodies.csv``, ``connectors.csv``, ``energy.csv`` and, with joints, ``joints.csv``
    (see the module docstring).

    Parameters
    ----------
    traj : dict
        As returned by :func:`mbsim.io.reader.read_trajectory`.
    directory : str or os.PathLike
        Created if needed.
    every : int
        Keep stored frames 0, every, 2·every, ….

    Returns
    -------
    dict
        ``{"bodies": path, "connectors": path, "energy": path}``, and ``"joints": path`` when the
        result has joints.
    """
    d = _directory(directory)
    k = geo.frame_indices(traj, every)
    t = np.asarray(traj["time"], dtype=float)[k]

    bodies = np.concatenate([np.asarray(traj[p], dtype=float)[k] for p in _BODY_DATA], axis=-1)
    _table(d / "bodies.csv", BODY_COLUMNS, [(n,) for n in traj["bodies/name"]], t, bodies)

    C = len(traj["connectors/name"])
    conn = np.concatenate([np.asarray(traj["connectors/force"], dtype=float)[k].reshape(len(k), C, 3),
                           np.asarray(traj["connectors/moment"], dtype=float)[k].reshape(len(k), C, 3),
                           np.asarray(traj["connectors/length"], dtype=float)[k].reshape(len(k), C, 1)],
                          axis=-1)
    names = list(zip(traj["connectors/name"], traj["connectors/type"]))
    _table(d / "connectors.csv", CONNECTOR_COLUMNS, names, t, conn)

    e = [np.asarray(traj[f"energy/{q}"], dtype=float)[k] for q in _ENERGY]
    energy = np.stack([*e, energy_balance(*e)], axis=-1)[:, None, :]
    _table(d / "energy.csv", ENERGY_COLUMNS, [()], t, energy)
    paths = {"bodies": d / "bodies.csv", "connectors": d / "connectors.csv", "energy": d / "energy.csv"}

    J = len(traj.get("joints/name", ()))
    if J:
        joints = np.concatenate([np.asarray(traj["joints/force"], dtype=float)[k].reshape(len(k), J, 3),
                                 np.asarray(traj["joints/moment"], dtype=float)[k].reshape(len(k), J, 3),
                                 np.asarray(traj["joints/position_error"], dtype=float)[k].reshape(len(k), J, 1),
                                 np.asarray(traj["joints/angle_error"], dtype=float)[k].reshape(len(k), J, 1)],
                                axis=-1)
        _table(d / "joints.csv", JOINT_COLUMNS, list(zip(traj["joints/name"], traj["joints/type"])), t, joints)
        paths["joints"] = d / "joints.csv"
    return paths


def vtk_frames(traj: dict, every: int = 1):
    """The per-frame meshes of :func:`export_vtk`: yields ``(frame index, time, meshio.Mesh)``."""
    meshio = require("meshio")
    k_all = geo.frame_indices(traj, every)
    T = geo.frame_count(traj)
    B = len(traj["bodies/name"])
    C = len(traj["connectors/name"])
    pos, R = geo.body_poses(traj)  # (T, B+1, ...), world last
    g = geo.connector_geometry(traj)
    vel = np.zeros((T, B + 1, 3))
    omega = np.zeros((T, B + 1, 3))
    vel[:, :B] = np.asarray(traj["bodies/velocity"], dtype=float)[:T]
    omega[:, :B] = np.asarray(traj["bodies/angular_velocity"], dtype=float)[:T]
    J = len(traj.get("joints/name", ()))
    jg = geo.joint_geometry(traj)
    # lines: the connectors, then the joints (one cell block; `type_id` tells them apart)
    L = C + J
    force = np.concatenate([np.asarray(traj["connectors/force"], dtype=float)[:T].reshape(T, C, 3),
                            np.asarray(traj["joints/force"], dtype=float)[:T].reshape(T, J, 3) if J
                            else np.zeros((T, 0, 3))], axis=1)
    moment = np.concatenate([np.asarray(traj["connectors/moment"], dtype=float)[:T].reshape(T, C, 3),
                             np.asarray(traj["joints/moment"], dtype=float)[:T].reshape(T, J, 3) if J
                             else np.zeros((T, 0, 3))], axis=1)
    type_id = np.concatenate([geo.connector_type_ids(traj["connectors/type"]),
                              [geo.JOINT_TYPE_IDS.get(x, 19) for x in traj.get("joints/type", ())]]).astype(np.int32)
    index = np.concatenate([np.arange(C), np.arange(J)]).astype(np.int32)
    line_points = np.concatenate([g.points, jg.points], axis=1)  # (T, L, 2, 3)

    ends = np.stack([np.concatenate([g.body_a, jg.body_a]), np.concatenate([g.body_b, jg.body_b])],
                    axis=1).reshape(-1).astype(int)  # (2L,) body of each line end
    body_id = np.concatenate([np.arange(B), np.where(ends == B, -1, ends)]).astype(np.int32)
    cells = [("vertex", np.arange(B, dtype=np.int64)[:, None])]
    if L:
        cells.append(("line", B + np.arange(2 * L, dtype=np.int64).reshape(L, 2)))
    zeros_b = np.zeros((B, 3))
    if J:
        # a joint's axis at both of its points (as carried by A and by B), zero where there is none
        axes = np.nan_to_num(np.stack([jg.axis, jg.axis_b], axis=2))  # (T, J, 2, 3)
        errors = {e: np.concatenate([np.zeros((T, C)), np.asarray(traj[f"joints/{e}"], dtype=float)[:T]], axis=1)
                  for e in ("position_error", "angle_error")}

    def per_cell(body_part, line_part):
        return [body_part, line_part] if L else [body_part]

    for k in k_all:
        x_ends = line_points[k].reshape(-1, 3)
        points = np.concatenate([pos[k, :B], x_ends])
        # velocity of the material point at each line end: v + ω × (x − r)
        v_ends = vel[k, ends] + np.cross(omega[k, ends], x_ends - pos[k, ends])
        point_data = {f"axis_{a}": np.concatenate([R[k, :B, :, j], np.zeros((2 * L, 3))])
                      for j, a in enumerate("xyz")}
        point_data["velocity"] = np.concatenate([vel[k, :B], v_ends])
        point_data["body_id"] = body_id
        f, m = force[k], moment[k]
        cell_data = {
            "force": per_cell(zeros_b, f),
            "moment": per_cell(zeros_b, m),
            "force_magnitude": per_cell(np.zeros(B), np.linalg.norm(f, axis=-1)),
            "moment_magnitude": per_cell(np.zeros(B), np.linalg.norm(m, axis=-1)),
            "type_id": per_cell(np.zeros(B, dtype=np.int32), type_id),
            "index": per_cell(np.arange(B, dtype=np.int32), index),
        }
        if J:
            point_data["joint_axis"] = np.concatenate([np.zeros((B + 2 * C, 3)), axes[k].reshape(-1, 3)])
            for e, v in errors.items():
                cell_data[e] = per_cell(np.zeros(B), v[k])
        yield int(k), float(traj["time"][k]), meshio.Mesh(points, cells, point_data=point_data,
                                                           cell_data=cell_data)


def export_vtk(traj: dict, directory, every: int = 1, stem: str = "frames") -> Path:
    """Write ``<stem>_<frame>.vtu`` per kept frame and ``<stem>.pvd`` indexing them; return the .pvd path.

    Parameters
    ----------
    traj : dict
        As returned by :func:`mbsim.io.reader.read_trajectory`.
    directory : str or os.PathLike
        Created if needed.
    every : int
        Keep stored frames 0, every, 2·every, …; ``<frame>`` in the file names
        is the stored frame's index (six digits).
    stem : str
        Start of the file names.

    Raises
    ------
    mbsim.viz.MissingDependency
        meshio is not installed.
    """
    meshio = require("meshio")
    d = _directory(directory)
    root = ET.Element("VTKFile", type="Collection", version="0.1", byte_order="LittleEndian")
    coll = ET.SubElement(root, "Collection")
    for k, t, mesh in vtk_frames(traj, every):
        name = f"{stem}_{k:06d}.vtu"
        meshio.write(d / name, mesh, file_format="vtu")
        ET.SubElement(coll, "DataSet", timestep=repr(t), group="", part="0", file=name)
    ET.indent(root)
    pvd = d / f"{stem}.pvd"
    ET.ElementTree(root).write(pvd, encoding="utf-8", xml_declaration=True)
    return pvd


def default_stem(path) -> str:
    """File-name stem for the exports of the result at ``path``: its name without extension."""
    return os.path.splitext(os.path.basename(os.fspath(path)))[0] or "frames"
