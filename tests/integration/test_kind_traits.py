"""The result viewers and exports treat connectors by the traits their element kinds declare
(``draw``, ``outputs``: :class:`mbsim.elements.base.ElementKind`), never by type names.

A result file of the built-in kinds is rewritten with a connector of another type: a kind known
in this process only through :data:`mbsim.elements.BY_TYPE` (a plug-in's; put there with
``monkeypatch``, as ``register`` is refused once the engine is compiled), or a type not
registered at all (a file written by a process that had a plug-in kind), which is drawn as a
line and shows both stored vectors.  What is drawn, plotted and exported is checked against the
values the solver stored.
"""
from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

from mbsim import elements
from mbsim.cli import main
from tests.builders import run_text
from mbsim.elements.base import ElementKind
from mbsim.io.reader import read_summary, read_trajectory
from mbsim.viz import geometry as geo

pytest.importorskip("matplotlib")

SCENARIO = """\
mbsim: 1
name: kind-traits
gravity: [0, 0, -9.81]
time: {end: 0.1, step: 0.01}
output: {interval: 0.02}
bodies:
  - name: bob
    mass: 2.0
    inertia: [0.05, 0.04, 0.03]
    position: [0, 0, -1]
    velocity: [0.5, 0, 0]
    angular_velocity: [0, 1.0, 2.0]
  - name: tip
    mass: 0.5
    inertia: [0.002, 0.003, 0.004]
    position: [0.3, 0.1, -1.6]
connectors:
  - {name: hanger, type: spring, bodies: [world, bob], points: [[0, 0, 0], [0.05, 0, -0.9]],
     stiffness: 300.0, rest_length: 0.8}
  - {name: side, type: damper, bodies: [world, bob], points: [[0.5, 0, 0], [0.1, 0, -0.95]], damping: 2.0}
  - {name: link, type: spring, bodies: [bob, tip], points: [[0, 0.05, -1.1], [0.3, 0.1, -1.5]], stiffness: 100.0}
  - {name: elbow, type: torsional_damper, bodies: [bob, tip], damping: 0.01, joint: revolute, axis: [0, 1, 0]}
"""
HANGER, SIDE, LINK, ELBOW = range(4)
PLUGIN = "my_plugin"
UNKNOWN = "not_registered_here"


class PluginKind(ElementKind):
    """A kind of a plug-in as the tools see it: only its traits."""

    type = PLUGIN
    draw = "line"
    outputs = ("moment",)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return run_text(tmp_path_factory.mktemp("traits"), "traits", SCENARIO)


def retyped(result, tmp_path, changes: dict):
    """A copy of ``result`` whose /connectors/type has ``{index: type}`` changed (the scenario text
    it carries is left as it was: the connectors' points still come from there)."""
    path = tmp_path / "retyped.h5"
    shutil.copy(result, path)
    with h5py.File(path, "r+") as f:
        types = [str(x) for x in f["connectors/type"].asstr()[()]]
        for i, t in changes.items():
            types[i] = t
        attrs = dict(f["connectors/type"].attrs)
        del f["connectors/type"]
        ds = f.create_dataset("connectors/type", data=np.array(types, dtype=object),
                              dtype=h5py.string_dtype("utf-8"))
        ds.attrs.update(attrs)
    return path


@pytest.fixture
def plugin(monkeypatch):
    monkeypatch.setitem(elements.BY_TYPE, PLUGIN, PluginKind)
    return PluginKind


def magnitude(traj, what, c):
    return np.linalg.norm(np.asarray(traj[f"connectors/{what}"], dtype=float)[:, c], axis=-1)


# --------------------------------------------------------------------------
# the lookup

def test_builtin_traits_are_what_the_viewers_drew_them_by():
    draw, outputs = geo.connector_traits(["spring", "damper", "dashpot", "torsional_damper"])
    assert list(draw) == ["coil", "dashpot", "dashpot", "twist"]
    assert outputs == [("force",), ("force",), ("force",), ("moment",)]
    # the VTK ids external programs read
    assert list(geo.connector_type_ids(["spring", "damper", "torsional_damper"])) == [1, 2, 3]


def test_a_plugin_kind_and_an_unknown_type(plugin):
    draw, outputs = geo.connector_traits([PLUGIN, UNKNOWN])
    assert list(draw) == ["line", "line"]
    assert outputs == [("moment",), ("force", "moment")]
    assert list(geo.connector_type_ids([PLUGIN, UNKNOWN])) == [9, 9]


def test_the_vtk_id_follows_the_draw_trait(monkeypatch):
    coil = type("CoilKind", (ElementKind,), {"type": "my_coil", "draw": "coil", "outputs": ("force",)})
    monkeypatch.setitem(elements.BY_TYPE, "my_coil", coil)
    assert list(geo.connector_type_ids(["my_coil"])) == [1]


# --------------------------------------------------------------------------
# animate

def key_labels(scene):
    return [t.get_text() for t in scene.fig.legends[0].get_texts()]


def test_animate_draws_a_plugin_kind_between_its_points(result, tmp_path, plugin):
    from mbsim.viz.animate import Scene
    traj = read_trajectory(retyped(result, tmp_path, {HANGER: PLUGIN}))
    scene = Scene(traj, size=(400, 300))
    assert list(scene.lines) == [HANGER] and list(scene.springs) == [LINK]
    for k in (0, len(scene.time) - 1):
        scene.update(k)
        seg = scene.line_segments(k)
        assert seg.shape == (1, 2, 3)
        np.testing.assert_allclose(seg[0, 0], [0, 0, 0], atol=1e-12)  # the point on world
        # the point on bob is the spring's insertion point: the segment is as long as the stored length
        np.testing.assert_allclose(np.linalg.norm(seg[0, 1] - seg[0, 0]), traj["connectors/length"][k, HANGER],
                                   rtol=1e-9)
    assert key_labels(scene)[3:7] == ["spring", "damper", "torsional damper", "my plugin"]


def test_animate_draws_an_unknown_type_between_the_centres(result, tmp_path):
    from mbsim.viz.animate import Scene
    traj = read_trajectory(retyped(result, tmp_path, {ELBOW: UNKNOWN}))
    scene = Scene(traj, size=(400, 300))
    assert list(scene.lines) == [ELBOW] and len(scene.torsion) == 0
    k = len(scene.time) - 1
    scene.update(k)
    # the torsional damper's spec has no points: from bob's centre to tip's
    np.testing.assert_allclose(scene.line_segments(k)[0], traj["bodies/position"][k], rtol=1e-12)
    assert "not registered here" in key_labels(scene)
    assert "torsional damper" not in key_labels(scene)
    assert np.isnan(scene.geom.axis[:, ELBOW]).all()  # an axis is a twist's only


def test_a_plugin_kind_drawn_as_a_twist_turns_about_its_axis(result, tmp_path, monkeypatch):
    from mbsim.viz.animate import Scene
    twist = type("TwistKind", (ElementKind,), {"type": "my_twist", "draw": "twist", "outputs": ("moment",)})
    monkeypatch.setitem(elements.BY_TYPE, "my_twist", twist)
    traj = read_trajectory(retyped(result, tmp_path, {ELBOW: "my_twist"}))
    axis = geo.connector_geometry(traj).axis[:, ELBOW]
    # the spec's axis [0, 1, 0] carried by bob, as for the torsional damper it was
    np.testing.assert_allclose(axis, geo.connector_geometry(read_trajectory(result)).axis[:, ELBOW], rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(axis, axis=-1), 1.0, rtol=1e-12)
    assert abs(axis[0, 1]) > 0.99  # bob starts unrotated
    scene = Scene(traj, size=(400, 300))
    assert list(scene.torsion) == [ELBOW] and len(scene.lines) == 0
    assert "my twist" in key_labels(scene)


def test_the_builtins_keep_their_key(result):
    from mbsim.viz.animate import Scene
    scene = Scene(read_trajectory(result), size=(400, 300))
    assert len(scene.lines) == 0
    assert key_labels(scene)[3:] == ["spring", "damper", "torsional damper", "fixed"]


# --------------------------------------------------------------------------
# plot

def panel(fig, title):
    return next(ax for ax in fig.axes if ax.get_title(loc="left").startswith(title))


def curves(ax):
    return {line.get_label(): line.get_ydata() for line in ax.get_lines()}


def test_plot_puts_a_plugin_kind_in_the_panels_of_its_outputs(result, tmp_path, plugin):
    from mbsim.viz.plot import plot_forces
    traj = read_trajectory(retyped(result, tmp_path, {HANGER: PLUGIN}))
    fig = plot_forces(traj)
    forces, moments = curves(panel(fig, "Connector forces")), curves(panel(fig, "Connector moments"))
    assert sorted(forces) == ["link (spring)", "side (damper)"]
    assert sorted(moments) == ["elbow (torsional damper)", "hanger (my plugin)"]
    np.testing.assert_allclose(moments["hanger (my plugin)"], magnitude(traj, "moment", HANGER))


def test_plot_shows_both_vectors_of_an_unknown_type(result, tmp_path):
    from mbsim.viz.plot import dashboard, plot_forces
    traj = read_trajectory(retyped(result, tmp_path, {LINK: UNKNOWN, ELBOW: UNKNOWN}))
    fig = plot_forces(traj)
    forces, moments = curves(panel(fig, "Connector forces")), curves(panel(fig, "Connector moments"))
    assert sorted(forces) == ["elbow (not registered here)", "hanger (spring)", "link (not registered here)",
                              "side (damper)"]
    assert sorted(moments) == ["elbow (not registered here)", "link (not registered here)"]
    np.testing.assert_allclose(forces["link (not registered here)"], magnitude(traj, "force", LINK))
    np.testing.assert_allclose(moments["elbow (not registered here)"], magnitude(traj, "moment", ELBOW))
    lengths = curves(panel(fig, "Connector lengths"))
    assert sorted(lengths) == ["hanger", "link", "side"]  # elbow has none (NaN), whatever its type
    titles = [ax.get_title(loc="left") for ax in dashboard(traj).axes]
    assert "Connector forces" in titles and "Connector moments" in titles


# --------------------------------------------------------------------------
# exports and info

def test_vtk_writes_other_kinds_with_their_ids(result, tmp_path, plugin):
    pytest.importorskip("meshio")
    from mbsim.export import vtk_frames
    traj = read_trajectory(retyped(result, tmp_path, {HANGER: PLUGIN, ELBOW: UNKNOWN}))
    k, _, mesh = list(vtk_frames(traj))[-1]
    B = len(traj["bodies/name"])
    line_i = next(i for i, c in enumerate(mesh.cells) if c.type == "line")
    assert list(mesh.cell_data["type_id"][line_i]) == [9, 2, 1, 9]
    ends = mesh.points[B:].reshape(-1, 2, 3)
    np.testing.assert_allclose(np.linalg.norm(ends[HANGER, 1] - ends[HANGER, 0]),
                               traj["connectors/length"][k, HANGER], rtol=1e-9)
    np.testing.assert_allclose(ends[ELBOW], traj["bodies/position"][k], rtol=1e-12)
    np.testing.assert_allclose(mesh.cell_data["moment_magnitude"][line_i],
                               np.linalg.norm(traj["connectors/moment"][k], axis=-1))


def test_csv_keeps_the_type_of_an_unknown_kind(result, tmp_path):
    from mbsim.export import export_csv
    traj = read_trajectory(retyped(result, tmp_path, {ELBOW: UNKNOWN}))
    table = np.genfromtxt(export_csv(traj, tmp_path / "csv")["connectors"], delimiter=",", names=True,
                          dtype=None, encoding="utf-8")
    assert set(table["type"][table["connector"] == "elbow"]) == {UNKNOWN}


def test_info_counts_an_unknown_type(result, tmp_path, capsys):
    path = retyped(result, tmp_path, {HANGER: UNKNOWN, LINK: UNKNOWN})
    assert read_summary(path)["connectors"] == {"damper": 1, UNKNOWN: 2, "torsional_damper": 1}
    assert main(["info", str(path)]) == 0
    assert f"connectors     4: 1 damper, 2 {UNKNOWN}, 1 torsional_damper" in capsys.readouterr().out
