"""The tools on results with joints: the Python API, ``mbsim info``, ``plot``, ``animate``,
``export``, ``compare`` and ``verify`` (issue 13, item 5).

Expected values come from what does not pass through the code under test:
the datasets as h5py reads them from the file, the constraints the solver
enforces (a joint's point carried by body A and by body B coincide, a hinge's
axis carried by both stays the same line, a distance joint keeps its length),
the weight of a body hanging at rest (the reaction of its joint), a
perturbation put into a copy of a file by the test, and the independent
reference solver (:mod:`mbsim.reference`).
"""
from __future__ import annotations

import json
import re
import textwrap

import h5py
import numpy as np
import pytest

import mbsim
from mbsim.cli import main
from mbsim.io.reader import read_trajectory

# One small mechanism per joint kind side by side (all eight), a spring on the slider, under gravity;
# every initial velocity satisfies its joint (nothing is projected).  21 frames.
SCENARIO = """\
mbsim: 1
name: joint-tools
gravity: [0, 0, -9.81]
time: {end: 0.2, step: 1.0e-3}
output: {interval: 0.01}
bodies:
  - {name: arm, mass: 1.0, inertia: [0.01, 0.02, 0.015], position: [0.5, 0, 0]}
  - {name: bob, mass: 0.5, inertia: [0.002, 0.002, 0.002], position: [1.0, 0, -0.3]}
  - {name: slider, mass: 0.5, inertia: [0.002, 0.003, 0.004], position: [3, 0, 0], velocity: [0.4, 0, -0.3]}
  - {name: sleeve, mass: 0.6, inertia: [0.004, 0.004, 0.002], position: [5, 0, 0], angular_velocity: [3.0, 0, 4.0]}
  - {name: puck, mass: 0.3, inertia: [0.001, 0.001, 0.0018], position: [7, 0, 0], velocity: [1.0, 0.4, -0.3]}
  - {name: cardan, mass: 0.7, inertia: [0.02, 0.01, 0.015], position: [9, 0, -0.5], velocity: [0, 0.75, 0],
     angular_velocity: [1.5, 0, 0]}
  - {name: pair, mass: 0.4, inertia: [0.005, 0.004, 0.003], position: [9.3, 0, -0.6], velocity: [0, 0.9, 0],
     angular_velocity: [1.5, 0, 0]}
  - {name: weight, mass: 0.9, inertia: [0.02, 0.03, 0.01], position: [11.3, 0, -0.4]}
connectors:
  - {name: rail-spring, type: spring, bodies: [world, slider], points: [[3.8, 0, -0.6], [3, 0, 0]],
     stiffness: 50.0, rest_length: 0.5}
joints:
  - {name: hinge, type: revolute, bodies: [world, arm], point: [0, 0, 0], axis: [0, 1, 0]}
  - {name: ball, type: spherical, bodies: [arm, bob], point: [1, 0, 0]}
  - {name: rail, type: prismatic, bodies: [world, slider], point: [3, 0, 0], axis: [0.8, 0, -0.6]}
  - {name: shaft, type: cylindrical, bodies: [world, sleeve], point: [5, 0, 0], axis: [0.6, 0, 0.8]}
  - {name: plane, type: planar, bodies: [world, puck], point: [7, 0, 0], axis: [0, 0.6, 0.8]}
  - {name: cross, type: universal, bodies: [world, cardan], point: [9, 0, 0], axes: [[1, 0, 0], [0, 1, 0]]}
  - {name: weld, type: lock, bodies: [cardan, pair], point: [9.15, 0, -0.55]}
  - {name: tether, type: distance, bodies: [world, weight], points: [[11, 0, 0], [11.3, 0, -0.4]]}
"""
FRAMES = 21
JOINTS = ["hinge", "ball", "rail", "shaft", "plane", "cross", "weld", "tether"]
TYPES = ["revolute", "spherical", "prismatic", "cylindrical", "planar", "universal", "lock", "distance"]

# A bob hanging at rest from a spherical joint: the joint holds its weight, so the reaction on
# body A (world) is m g, downwards, at every frame, and there is no moment about the pin.
HANGING = {
    "mbsim": 1, "name": "hanging", "gravity": [0, 0, -9.81], "time": {"end": 0.05, "step": 0.005},
    "bodies": [{"name": "bob", "mass": 2.0, "inertia": [0.01, 0.02, 0.03], "position": [0, 0, -0.5]}],
    "joints": [{"name": "pin", "type": "spherical", "bodies": ["world", "bob"], "point": [0, 0, 0]}],
}
# A link on a hinge, its principal axes turned away from the hinge axis (so the hinge also carries a
# moment), swinging through the bottom: 3D reactions, second order from Δt = 0.004 s on.
PENDULUM = {
    "mbsim": 1, "name": "hinged", "gravity": [0, 0, -9.81], "time": {"end": 0.2, "step": 0.004},
    "bodies": [{"name": "link", "mass": 1.0, "inertia": [0.02, 0.03, 0.04], "position": [0.4, 0, -0.3],
                "orientation": {"axis_angle": {"axis": [1, 1, 0], "angle": 0.5}},
                "velocity": [-0.6, 0, -0.8], "angular_velocity": [0, 2.0, 0]}],  # v = ω × r: the hinge holds
    "joints": [{"name": "hinge", "type": "revolute", "bodies": ["world", "link"], "point": [0, 0, 0],
                "axis": [0, 1, 0]}],
}
# Free flight, no joints at all.
FLIGHT = {
    "mbsim": 1, "name": "flight", "time": {"end": 0.05, "step": 0.01},
    "bodies": [{"name": "puck", "mass": 2.0, "inertia": [0.1, 0.2, 0.3], "velocity": [0.5, -1.0, 0.25]}],
}


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    d = tmp_path_factory.mktemp("joints")
    sc = d / "mech.yaml"
    sc.write_text(SCENARIO)
    out = d / "mech.h5"
    assert main(["run", str(sc), "-o", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def raw(result):
    """The /joints datasets as plain h5py reads them (not through mbsim's reader)."""
    with h5py.File(result, "r") as f:
        return {k: f[f"joints/{k}"].asstr()[()].tolist() if k in ("name", "type", "body_a", "body_b")
                else f[f"joints/{k}"][()]
                for k in ("name", "type", "body_a", "body_b", "force", "moment", "position_error", "angle_error")}


@pytest.fixture(scope="module")
def traj(result):
    return read_trajectory(result)


@pytest.fixture(scope="module")
def flight_file(tmp_path_factory):
    return mbsim.simulate(FLIGHT).save(tmp_path_factory.mktemp("flight") / "flight.h5")


def test_the_mechanism_holds_every_kind(raw):
    assert raw["name"] == JOINTS and raw["type"] == TYPES
    assert raw["force"].shape == (FRAMES, 8, 3) and raw["position_error"].shape == (FRAMES, 8)


# --------------------------------------------------------------------------
# Python API

def test_joint_accessors_read_the_stored_datasets(result, raw):
    res = mbsim.load(result)
    assert res.joints == JOINTS
    for i, name in enumerate(JOINTS):
        j = res.joint(name)
        assert (j.name, j.type, j.index) == (name, TYPES[i], i)
        assert j.bodies == (raw["body_a"][i], raw["body_b"][i]) == (j.body_a, j.body_b)
        np.testing.assert_array_equal(j.force, raw["force"][:, i])
        np.testing.assert_array_equal(j.moment, raw["moment"][:, i])
        np.testing.assert_array_equal(j.position_error, raw["position_error"][:, i])
        np.testing.assert_array_equal(j.angle_error, raw["angle_error"][:, i])
        assert j.force.shape == (FRAMES, 3) and j.angle_error.shape == (FRAMES,)
        assert not j.force.flags.writeable
    assert repr(res).endswith("8 bodies, 1 connector, 8 joints>")
    assert repr(res.joint("weld")) == "<JointTrajectory 'weld': lock cardan → pair, 21 frames>"


def test_unknown_joint_names_and_results_without_joints(result):
    res = mbsim.load(result)
    with pytest.raises(mbsim.UnknownNameError, match=r"no joint 'hingee' in 'joint-tools' \(did you mean "
                                                     r"'hinge'\?\); its joints: hinge, ball, rail"):
        res.joint("hingee")
    flight = mbsim.simulate(FLIGHT)
    assert flight.joints == [] and "joint" not in repr(flight)
    with pytest.raises(mbsim.UnknownNameError, match=r"^no joint 'hinge' in 'flight'; it has no joints$"):
        flight.joint("hinge")


def test_in_memory_result_has_the_joints_and_saves_them(tmp_path, result):
    """simulate() keeps the joints' frames as the file has them, save() writes them back, load() reads them."""
    sc = tmp_path / "mech.yaml"
    sc.write_text(SCENARIO)
    mem = mbsim.simulate(sc)
    back = mbsim.load(result)
    assert mem.joints == back.joints
    for k in ("force", "moment", "position_error", "angle_error"):
        np.testing.assert_array_equal(mem[f"joints/{k}"], back[f"joints/{k}"], err_msg=k)
    saved = mbsim.load(mem.save(tmp_path / "saved.h5"))
    assert saved.joints == JOINTS and saved.joint("tether").bodies == ("world", "weight")
    np.testing.assert_array_equal(saved.joint("cross").moment, mem.joint("cross").moment)
    with h5py.File(tmp_path / "saved.h5") as f:
        assert f["joints/force"].attrs["units"] == "N" and f["joints/angle_error"].attrs["units"] == "rad"
    # a file whose /joints group lost a dataset is not a complete trajectory
    with h5py.File(tmp_path / "saved.h5", "a") as f:
        del f["joints/moment"]
    with pytest.raises(mbsim.ResultFileError, match="/joints/moment is missing"):
        mbsim.load(tmp_path / "saved.h5")


def test_reaction_of_a_body_hanging_at_rest_is_its_weight():
    res = mbsim.simulate(HANGING)
    pin = res.joint("pin")
    assert pin.bodies == ("world", "bob")
    weight = np.array([0.0, 0.0, -2.0 * 9.81])  # on A (world): the bob pulls it down
    np.testing.assert_allclose(pin.force, np.broadcast_to(weight, pin.force.shape), atol=1e-9)
    np.testing.assert_allclose(pin.moment, 0.0, atol=1e-9)


def test_to_xarray_has_the_joints(result, raw):
    pytest.importorskip("xarray")
    ds = mbsim.load(result).to_xarray()
    assert ds.sizes["joint"] == 8 and list(ds["joint"].values) == JOINTS
    assert list(ds["joint_type"].values) == TYPES
    assert list(ds["joint_body_a"].values) == raw["body_a"] and list(ds["joint_body_b"].values) == raw["body_b"]
    assert ds["joint_force"].dims == ("time", "joint", "xyz") and ds["joint_force"].attrs["units"] == "N"
    assert ds["joint_moment"].attrs["units"] == "N*m"
    assert ds["joint_position_error"].dims == ("time", "joint")
    assert ds["joint_angle_error"].attrs["units"] == "rad"
    np.testing.assert_array_equal(ds["joint_force"].sel(joint="rail").values, raw["force"][:, 2])
    np.testing.assert_array_equal(ds["joint_angle_error"].values, raw["angle_error"])
    # the connectors keep their own names along their own dimension
    assert list(ds["connector"].values) == ["rail-spring"] and list(ds["body_a"].values) == ["world"]
    # without joints there is no joint dimension (as the file has no /joints group)
    flight = mbsim.simulate(FLIGHT).to_xarray()
    assert "joint" not in flight.sizes and "joint_force" not in flight


# --------------------------------------------------------------------------
# mbsim info

def test_info_lists_every_joint_with_its_largest_reaction_and_errors(result, raw, capsys):
    assert main(["info", str(result), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [j["name"] for j in info["joints"]] == JOINTS
    fmax = np.linalg.norm(raw["force"], axis=-1).max(axis=0)
    mmax = np.linalg.norm(raw["moment"], axis=-1).max(axis=0)
    for i, j in enumerate(info["joints"]):
        assert (j["type"], j["body_a"], j["body_b"]) == (TYPES[i], raw["body_a"][i], raw["body_b"][i])
        assert j["max_force_N"] == pytest.approx(fmax[i], rel=1e-15)
        assert j["max_moment_N_m"] == pytest.approx(mmax[i], rel=1e-15, abs=1e-300)
        assert j["max_position_error_m"] == raw["position_error"][:, i].max()
        assert j["max_angle_error_rad"] == raw["angle_error"][:, i].max()

    assert main(["info", str(result)]) == 0
    text = capsys.readouterr().out
    assert ("joints         8: 1 cylindrical, 1 distance, 1 lock, 1 planar, 1 prismatic, 1 revolute, "
            "1 spherical, 1 universal") in text
    row = next(line for line in text.splitlines() if line.split()[:2] == ["tether", "distance"])
    assert "world → weight" in row and f"{fmax[7]:.3e}" in row
    header = next(line for line in text.splitlines() if "max |F| [N]" in line)
    assert "max pos. err [m]" in header and "max angle err [rad]" in header


def test_info_without_joints_has_no_joint_lines(flight_file, capsys):
    assert main(["info", str(flight_file)]) == 0
    assert "joints" not in capsys.readouterr().out
    assert main(["info", str(flight_file), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["joints"] == []


def test_info_lists_at_most_twenty_joints_in_text(tmp_path, capsys):
    """A chain of 25 links: 20 rows, then how many more; --json has them all."""
    bodies = [{"name": f"l{i:02d}", "mass": 1.0, "inertia": [0.01, 0.01, 0.01], "position": [0.1 * i + 0.05, 0, 0]}
              for i in range(25)]
    joints = [{"name": f"j{i:02d}", "type": "spherical", "bodies": ["world" if i == 0 else f"l{i - 1:02d}", f"l{i:02d}"],
               "point": [0.1 * i, 0, 0]} for i in range(25)]
    chain = {"mbsim": 1, "name": "chain", "gravity": [0, 0, -9.81], "time": {"end": 0.01, "step": 0.005},
             "bodies": bodies, "joints": joints}
    path = mbsim.simulate(chain, output=tmp_path / "chain.h5").path
    assert main(["info", path]) == 0
    text = capsys.readouterr().out
    rows = [line.split()[0] for line in text.splitlines() if line.split()[1:2] == ["spherical"]]
    assert rows == [f"j{i:02d}" for i in range(20)]
    assert "... and 5 more (mbsim info --json lists them all)" in text
    assert main(["info", path, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["joints"]) == 25


# --------------------------------------------------------------------------
# mbsim plot --what joints

def test_plot_joints_draws_reactions_and_errors_from_the_file(traj, raw):
    pytest.importorskip("matplotlib")
    from mbsim.viz import plot
    fig = plot.make("joints", traj)
    force_ax, moment_ax, error_ax = fig.axes
    for ax, key in ((force_ax, "force"), (moment_ax, "moment")):
        lines = ax.get_lines()
        assert [ln.get_label() for ln in lines] == [f"{n} ({t})" for n, t in zip(JOINTS, TYPES)]
        for i, ln in enumerate(lines):
            np.testing.assert_allclose(ln.get_ydata(), np.linalg.norm(raw[key][:, i], axis=-1), rtol=1e-15)
    assert error_ax.get_yscale() == "log"
    errors = {ln.get_label(): np.asarray(ln.get_ydata()) for ln in error_ax.get_lines()}
    pos = raw["position_error"][:, 7]
    np.testing.assert_array_equal(errors["tether position"], np.where(pos > 0, pos, np.nan))
    assert "tether angle" not in errors  # a distance joint has no rotational rows: all 0, nothing on a log axis
    assert "cross angle" in errors
    # a chosen subset
    fig = plot.make("joints", traj, joints=["rail", "hinge"])
    assert [ln.get_label() for ln in fig.axes[0].get_lines()] == ["rail (prismatic)", "hinge (revolute)"]


def test_plot_joints_and_dashboard_from_the_command_line(result, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    Image = pytest.importorskip("PIL.Image")
    png = tmp_path / "joints.png"
    assert main(["plot", str(result), "--what", "joints", "-o", str(png), "--size", "900x700"]) == 0
    assert f"wrote {png} (joints, 900x700 px)" in capsys.readouterr().out
    with Image.open(png) as im:
        assert im.size == (900, 700)
        assert np.asarray(im.convert("L"), dtype=float).std() > 5.0
    # the dashboard shows the joint reactions beside the connector forces
    from mbsim.viz import plot
    fig = plot.make("dashboard", read_trajectory(result))
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert "Connector forces" in titles
    assert "Joint reaction forces (on body A)" in titles
    # unknown names: did you mean, nothing written
    assert main(["plot", str(result), "--what", "joints", "--joints", "hinj", "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "no joint named 'hinj'" in err and "did you mean 'hinge'" in err
    assert not (tmp_path / "x.png").exists()


def test_plot_joints_of_a_result_without_joints_says_so(flight_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from mbsim.viz import plot
    png = tmp_path / "none.png"
    assert main(["plot", str(flight_file), "--what", "joints", "-o", str(png)]) == 0
    captured = capsys.readouterr()
    assert png.exists() and "has no joints" in captured.err
    fig = plot.make("joints", read_trajectory(flight_file))
    assert all(not ax.get_lines() for ax in fig.axes)
    assert "no joints" in [t.get_text() for ax in fig.axes for t in ax.texts]
    assert main(["plot", str(flight_file), "--what", "joints", "--joints", "pin", "-o", str(png)]) == 2
    assert "this result has no joints" in capsys.readouterr().err


# --------------------------------------------------------------------------
# mbsim animate: the joints' geometry from the stored scenario

def test_joint_geometry_follows_the_constraints_the_solver_enforced(traj, raw):
    """Points and axes carried from the scenario's t = 0 pose by body A and by body B must obey
    each joint as the solver kept it closed, in every frame."""
    from mbsim.viz.geometry import joint_geometry
    g = joint_geometry(traj)
    assert g.has_points.all() and g.points.shape == (FRAMES, 8, 2, 3)
    pa, pb = g.points[:, :, 0], g.points[:, :, 1]
    gap = pb - pa
    # coincident points: revolute, spherical, universal, lock (to their stored position error)
    for i in (0, 1, 5, 6):
        np.testing.assert_allclose(np.linalg.norm(gap[:, i], axis=-1), raw["position_error"][:, i], atol=1e-12)
    # slider and sleeve: B's point moves along the axis only; the puck's in the plane only
    for i in (2, 3):
        np.testing.assert_allclose(np.cross(gap[:, i], g.axis[:, i]), 0.0, atol=1e-12)
        assert np.abs(gap[-1, i]).max() > 1e-3  # and it did move
    np.testing.assert_allclose(np.einsum("tk,tk->t", gap[:, 4], g.axis[:, 4]), 0.0, atol=1e-12)
    # distance: the length given at t = 0, 0.5 m
    np.testing.assert_allclose(np.linalg.norm(gap[:, 7], axis=-1), 0.5, rtol=1e-12)
    # axes: carried by A and by B they stay the same line (revolute, prismatic, cylindrical, planar),
    # the universal joint's two stay perpendicular; the hinge on world keeps its world axis y
    for i in (0, 2, 3, 4):
        np.testing.assert_allclose(g.axis[:, i], g.axis_b[:, i], atol=1e-12)
    np.testing.assert_allclose(np.einsum("tk,tk->t", g.axis[:, 5], g.axis_b[:, 5]), 0.0, atol=1e-12)
    # the universal joint's axes[1], y at t = 0 when the cardan's orientation is the identity, is the
    # cardan's body y axis in every frame (SciPy's quaternion → matrix, [x, y, z, w] order), which turns
    from scipy.spatial.transform import Rotation
    q = traj["bodies/orientation"][:, 5]
    body_y = Rotation.from_quat(q[:, [1, 2, 3, 0]]).as_matrix()[:, :, 1]
    np.testing.assert_allclose(g.axis_b[:, 5], body_y, atol=1e-12)
    assert abs(body_y[-1, 1]) < 0.99
    np.testing.assert_allclose(g.axis[:, 0], np.broadcast_to([0.0, 1.0, 0.0], (FRAMES, 3)), atol=1e-15)
    np.testing.assert_allclose(np.einsum("tk,tk->t", g.axis[:, 4], g.perp[:, 4]), 0.0, atol=1e-12)
    assert np.isnan(g.axis[:, [1, 6, 7]]).all()  # ball, lock, distance have no axis
    # the hinge's point on the arm stays at the world origin
    np.testing.assert_allclose(pb[:, 0], 0.0, atol=1e-12)


def test_joint_geometry_without_a_readable_scenario(traj):
    from mbsim.viz.geometry import body_poses, joint_geometry
    broken = dict(traj, scenario="not: [a scenario")
    g = joint_geometry(broken)
    assert not g.has_points.any() and np.isnan(g.axis).all()
    pos, _ = body_poses(traj)
    np.testing.assert_array_equal(g.points[:, 2, 1], pos[:, 2])  # the slider's centre
    # and a result without joints has none
    assert joint_geometry({k: v for k, v in traj.items() if not k.startswith("joints/")}).points.shape == (FRAMES, 0, 2, 3)


def test_animation_draws_each_joint_at_its_place(traj):
    pytest.importorskip("matplotlib")
    from mbsim.viz.animate import Scene
    from mbsim.viz.geometry import joint_geometry
    g = joint_geometry(traj)
    scene = Scene(traj, size=(400, 300))
    k = FRAMES - 1
    scene.update(k)
    thick, thin, balls, locks = scene.joint_segments(k)
    h = scene.joint_half
    pb, n = g.points[k, :, 1], g.axis[k]
    # the hinge: a thick line through its point along its axis, as drawn
    np.testing.assert_allclose(thick[0], [pb[0] - h[0] * n[0], pb[0] + h[0] * n[0]], atol=1e-15)
    # thick: hinge, sleeve, carriage, the universal's two axes; thin: two rails, the rod, the plane's 4 edges
    assert len(thick) == 5 and len(thin) == 2 + 1 + 4
    # the slider's rail lies along the axis through A's point and covers B's point in every frame
    rail = thin[0]
    pa2 = g.points[k, 2, 0]
    np.testing.assert_allclose(np.cross(rail - pa2, n[2]), 0.0, atol=1e-12)
    s = np.sort((rail - pa2) @ n[2])
    travel = np.einsum("tk,tk->t", g.points[:, 2, 1] - g.points[:, 2, 0], g.axis[:, 2])
    assert s[0] < travel.min() and travel.max() < s[1]
    # the rod joins the distance joint's two points; balls: the spherical joint and the rod's ends
    np.testing.assert_allclose(thin[2], g.points[k, 7], atol=1e-15)
    np.testing.assert_allclose(balls, [pb[1], g.points[k, 7, 0], g.points[k, 7, 1]], atol=1e-15)
    np.testing.assert_allclose(locks, [pb[6]], atol=1e-15)
    x, y, z = scene.joint_balls.get_data_3d()
    np.testing.assert_allclose(np.stack([x, y, z], axis=1), balls)
    labels = [t.get_text() for t in scene.fig.legends[0].get_texts()]
    assert "hinge / sleeve / carriage / cross" in labels and "ball joint" in labels and "lock" in labels


def test_animate_a_result_with_joints(result, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    Image = pytest.importorskip("PIL.Image")
    gif = tmp_path / "mech.gif"
    assert main(["animate", str(result), "-o", str(gif), "--every", "10", "--size", "320x240"]) == 0
    with Image.open(gif) as im:
        assert im.size == (320, 240) and im.n_frames == 3  # frames 0, 10, 20
    assert f"wrote {gif} (3 frames" in capsys.readouterr().out


# --------------------------------------------------------------------------
# mbsim export: CSV and VTK

def test_csv_joints_table_holds_the_stored_values_exactly(result, raw, tmp_path, capsys):
    import csv
    d = tmp_path / "csv"
    assert main(["export", str(result), "--csv", str(d), "--every", "2"]) == 0
    kept = np.arange(0, FRAMES, 2)
    assert f"joints.csv ({len(kept) * 8} rows)" in capsys.readouterr().out
    with open(d / "joints.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["t_s", "joint", "type", "fx_N", "fy_N", "fz_N", "mx_N_m", "my_N_m", "mz_N_m",
                             "position_error_m", "angle_error_rad"]
    assert len(rows) == len(kept) * 8
    with h5py.File(result) as f:
        t = f["time"][()]
    for r, row in enumerate(rows):
        k, i = kept[r // 8], r % 8
        assert (row["joint"], row["type"]) == (JOINTS[i], TYPES[i])
        assert float(row["t_s"]) == t[k]
        # exact to the last bit (shortest round-trip repr)
        assert [float(row[c]) for c in ("fx_N", "fy_N", "fz_N")] == raw["force"][k, i].tolist()
        assert [float(row[c]) for c in ("mx_N_m", "my_N_m", "mz_N_m")] == raw["moment"][k, i].tolist()
        assert float(row["position_error_m"]) == raw["position_error"][k, i]
        assert float(row["angle_error_rad"]) == raw["angle_error"][k, i]


def test_csv_without_joints_writes_no_joints_table(flight_file, tmp_path, capsys):
    d = tmp_path / "csv"
    assert main(["export", str(flight_file), "--csv", str(d)]) == 0
    assert "joints.csv" not in capsys.readouterr().out
    assert sorted(p.name for p in d.iterdir()) == ["bodies.csv", "connectors.csv", "energy.csv"]


def test_vtk_joints_are_lines_with_their_reactions(result, raw, traj, tmp_path):
    meshio = pytest.importorskip("meshio")
    from mbsim.viz.geometry import joint_geometry
    d = tmp_path / "vtk"
    assert main(["export", str(result), "--vtk", str(d), "--quiet", "--every", "10"]) == 0
    g = joint_geometry(traj)
    for k in (0, 10, 20):
        mesh = meshio.read(d / f"mech_{k:06d}.vtu")
        blocks = {c.type: i for i, c in enumerate(mesh.cells)}
        lines = mesh.cells[blocks["line"]].data
        assert lines.shape == (1 + 8, 2)  # the spring, then the joints
        li = blocks["line"]
        joint_cells = slice(1, 9)
        assert list(mesh.cell_data["type_id"][li]) == [1, 12, 11, 13, 14, 15, 16, 17, 18]
        assert list(mesh.cell_data["index"][li]) == [0, *range(8)]
        np.testing.assert_array_equal(mesh.cell_data["force"][li][joint_cells], raw["force"][k])
        np.testing.assert_array_equal(mesh.cell_data["moment"][li][joint_cells], raw["moment"][k])
        np.testing.assert_allclose(mesh.cell_data["force_magnitude"][li][joint_cells],
                                   np.linalg.norm(raw["force"][k], axis=-1), rtol=1e-15)
        np.testing.assert_array_equal(mesh.cell_data["position_error"][li][joint_cells], raw["position_error"][k])
        np.testing.assert_array_equal(mesh.cell_data["angle_error"][li][joint_cells], raw["angle_error"][k])
        assert not mesh.cell_data["position_error"][blocks["vertex"]].any()
        ends = mesh.points[lines[joint_cells]]  # (8, 2, 3)
        np.testing.assert_allclose(ends, g.points[k], atol=1e-15)
        assert np.linalg.norm(ends[7, 1] - ends[7, 0]) == pytest.approx(0.5, rel=1e-12)  # the distance joint
        np.testing.assert_allclose(ends[0, 0], 0.0, atol=1e-15)  # the hinge on world: at the origin
        assert mesh.point_data["body_id"][lines[1, 0]] == -1 and mesh.point_data["body_id"][lines[1, 1]] == 0
        # the hinge's axis at both its points; zero where a joint has none (the ball) and at body centres
        axis = mesh.point_data["joint_axis"]
        np.testing.assert_allclose(axis[lines[1]], [[0, 1, 0], [0, 1, 0]], atol=1e-15)
        assert not axis[lines[2]].any() and not axis[:8].any()
        # the velocity of the arm's material point at the hinge is zero, to the discretization error
        # (generalized-α holds the joint's position exactly, its velocity to O(Δt²)), while the
        # arm's centre moves at about 1.3 m/s by the end
        np.testing.assert_allclose(mesh.point_data["velocity"][lines[1, 1]], 0.0, atol=1e-5)


# --------------------------------------------------------------------------
# mbsim compare

def test_compare_a_file_with_itself_covers_the_joints(result, capsys):
    assert main(["compare", str(result), str(result), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["joints"] == JOINTS
    for name in ("joint_force", "joint_moment", "joint_position_error", "joint_angle_error"):
        q = rep["quantities"][name]
        assert q["max_error"] == 0 and q["values"] == FRAMES * 8 and q["passed"]
    assert main(["compare", str(result), str(result)]) == 0
    out = capsys.readouterr().out
    assert "8 bodies, 1 connector, 8 joints" in out and "joint_force [N]" in out


def test_compare_finds_a_changed_joint_reaction(result, raw, tmp_path, capsys):
    """A copy whose rail's reaction force differs by (0, 3e-3, 4e-3) N at frame 7: compare reports 5e-3 N
    there, naming the joint, and fails only that quantity."""
    copy = tmp_path / "changed.h5"
    copy.write_bytes(result.read_bytes())
    with h5py.File(copy, "a") as f:
        f["joints/force"][7, 2] += [0.0, 3e-3, 4e-3]
    with h5py.File(result) as f:
        t7 = f["time"][7]
    assert main(["compare", str(copy), str(result), "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    q = rep["quantities"]["joint_force"]
    assert q["max_error"] == pytest.approx(5e-3, rel=1e-9)
    assert q["item"] == "rail" and q["time"] == pytest.approx(t7)
    assert q["scale"] == pytest.approx(np.linalg.norm(raw["force"], axis=-1).max(), rel=1e-15)
    assert rep["failures"] == ["joint_force"]
    assert main(["compare", str(copy), str(result)]) == 1
    out = capsys.readouterr().out
    assert "joint_force: max error 5.000e-03 N at t = 0.07 s (joint rail)" in out
    # a tolerance for the joints group lets it pass
    assert main(["compare", str(copy), str(result), "--atol", "joints=1e-2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["quantities"]["joint_force"]["atol"] == 1e-2


def test_compare_refuses_results_with_other_joints(result, flight_file, tmp_path, capsys):
    from mbsim.compare import NotComparable, compare_trajectories
    a = read_trajectory(result)
    b = dict(a)
    b["joints/name"] = list(reversed(a["joints/name"]))
    with pytest.raises(NotComparable, match="the joints differ .*same joint names in the same order"):
        compare_trajectories(a, b)
    no_joints = {k: v for k, v in a.items() if not k.startswith("joints/")}
    with pytest.raises(NotComparable, match="has 8 joints but B has 0"):
        compare_trajectories(a, no_joints)
    # two results without joints: the joint quantities are skipped, saying why
    flight = read_trajectory(flight_file)
    cmp = compare_trajectories(flight, flight)
    assert cmp.passed and cmp.joints == [] and cmp.skipped["joint_force"] == "no joints"
    assert "joint_force" not in [q.name for q in cmp.quantities]


def test_compare_the_run_with_the_reference_solver_at_joint_reactions(tmp_path):
    """In-memory frames of a run and of the reference solver compare too, joints included: the
    pendulum's hinge reaction agrees to the discretization error."""
    from mbsim.compare import compare_trajectories
    from mbsim.reference import solve_reference
    from mbsim.scenario import scenario_from_dict
    sc = scenario_from_dict(PENDULUM)
    run = mbsim.simulate(sc)
    ref = solve_reference(sc, run.time, rtol=1e-10, atol=1e-11).frames()
    frames = {k: run[k] for k in run.keys()}
    cmp = compare_trajectories(frames, ref, rtol=1e-4)
    assert cmp.joints == ["hinge"]
    assert 0 < cmp["joint_force"].max_error < 1e-4 * cmp["joint_force"].scale
    assert cmp["joint_force"].scale == pytest.approx(np.linalg.norm(ref["joints/force"], axis=-1).max())


# --------------------------------------------------------------------------
# mbsim verify

def test_verify_measures_the_joint_reactions_against_the_reference(tmp_path):
    """The joint force and moment errors verify reports are the largest differences between each run
    and the reference solver at the frame times, and fall at order 2."""
    from mbsim.driver import run
    from mbsim.reference import solve_reference
    from mbsim.scenario import scenario_from_dict
    from mbsim.verify import verify
    sc = scenario_from_dict(PENDULUM)
    rep = verify(sc)
    assert rep.passed and rep.notes == []
    q = {x.name: x for x in rep.quantities}
    assert [x.name for x in rep.quantities][-2:] == ["joint_force", "joint_moment"]
    for name in ("joint_force", "joint_moment"):
        assert q[name].status == "ok" and all(abs(p - 2.0) < 0.15 for p in q[name].orders), q[name]
    # the coarsest run's errors, computed here from the run and the reference solver
    s = run(sc, write=False, keep_frames=True)
    ref = solve_reference(sc, s.frames_data["time"], rtol=1e-11, atol=1e-12)
    for name, mine, theirs in (("joint_force", s.frames_data["joints/force"], ref.joint_force),
                               ("joint_moment", s.frames_data["joints/moment"], ref.joint_moment)):
        err = np.linalg.norm(mine - theirs, axis=-1).max()
        assert q[name].errors[0] == pytest.approx(err, rel=1e-3)
        # measured, far above the floor (round-off; for reactions also Newton's rtol of the forces, times the
        # motion's extent for the moments: 5.6e-8 N m here against an error of 3.3e-6)
        assert q[name].errors[0] > 30 * q[name].floor


def test_verify_command_prints_the_joint_rows(tmp_path, capsys):
    path = tmp_path / "hinged.yaml"
    path.write_text(textwrap.dedent("""\
        mbsim: 1
        name: hinged
        gravity: [0, 0, -9.81]
        time: {end: 0.2, step: 0.004}
        bodies:
          - {name: link, mass: 1.0, inertia: [0.02, 0.03, 0.04], position: [0.4, 0, -0.3],
             orientation: {axis_angle: {axis: [1, 1, 0], angle: 0.5}}, velocity: [-0.6, 0, -0.8],
             angular_velocity: [0, 2.0, 0]}
        joints:
          - {name: hinge, type: revolute, bodies: [world, link], point: [0, 0, 0], axis: [0, 1, 0]}
        """))
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert "(1 body, 0 connectors, 1 joint, 0 loads; t = 0 … 0.2 s)" in out
    assert "and 1 body (1 joint), and observed order" in out
    assert re.search(r"^  joint force \[N\] +\S+ +\S+ +\S+ +2\.\d\d +2\.\d\d$", out, re.M), out
    assert re.search(r"^  joint moment \[N\*m\] ", out, re.M)
    assert "joint force error at Δt = 0.004 s:" in out and "second order confirmed for" in out
    assert main(["verify", str(path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["quantities"]["joint_moment"]["ok"] and rep["notes"] == []


def test_verify_skips_the_reactions_of_redundant_joints_and_says_why():
    """A door on two coaxial hinges: one hinge's equations are redundant, so how the two share the
    load is not determined; the motion is still verified."""
    from mbsim.scenario import scenario_from_dict
    from mbsim.verify import verify
    door = {"mbsim": 1, "name": "door", "gravity": [0, 0, -9.81], "time": {"end": 0.04, "step": 0.004},
            "bodies": [{"name": "door", "mass": 1.0, "inertia": [0.02, 0.03, 0.04], "position": [0.4, 0, 0]}],
            "joints": [{"name": "upper", "type": "revolute", "bodies": ["world", "door"], "point": [0, 0.1, 0],
                        "axis": [0, 1, 0]},
                       {"name": "lower", "type": "revolute", "bodies": ["world", "door"], "point": [0, -0.1, 0],
                        "axis": [0, 1, 0]}]}
    with pytest.warns(UserWarning, match="redundant"):
        rep = verify(scenario_from_dict(door))
    assert rep.passed
    assert not any(q.name.startswith("joint_") for q in rep.quantities)
    assert len(rep.notes) == 1 and "joint reactions not measured" in rep.notes[0] and "'lower'" in rep.notes[0]
