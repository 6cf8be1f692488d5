"""``mbsim export`` end to end: the CSV tables and the VTK time series read back with the
libraries their users read them with (csv, numpy, meshio, an XML parser) and hold
exactly what the result file holds.

Independent references: the stored arrays themselves, SciPy's own quaternion
conversion for the body axes, and the solver's connector lengths for the
connector lines.
"""
from __future__ import annotations

import csv
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from mbsim.cli import main
from tests.builders import every_connector, run_text
from mbsim.io.reader import read_trajectory

SCENARIO = every_connector("export-demo")
T, B, C = 11, 3, 4


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return run_text(tmp_path_factory.mktemp("export"), "demo", SCENARIO)


@pytest.fixture(scope="module")
def traj(result):
    return read_trajectory(result)


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# --------------------------------------------------------------------------
# CSV

def test_csv_tables_hold_the_stored_values_exactly(result, traj, tmp_path, capsys):
    d = tmp_path / "csv"
    assert main(["export", str(result), "--csv", str(d)]) == 0
    assert "bodies.csv (33 rows), connectors.csv (44 rows), energy.csv (11 rows)" in capsys.readouterr().out

    rows = read_rows(d / "bodies.csv")
    assert len(rows) == T * B
    assert [r["body"] for r in rows[:B]] == traj["bodies/name"]
    cols = {"x_m": ("bodies/position", 0), "qw": ("bodies/orientation", 0), "qz": ("bodies/orientation", 3),
            "vy_m_s": ("bodies/velocity", 1), "wz_rad_s": ("bodies/angular_velocity", 2),
            "ax_m_s2": ("bodies/acceleration", 0), "aly_rad_s2": ("bodies/angular_acceleration", 1)}
    for col, (key, j) in cols.items():
        got = np.array([float(r[col]) for r in rows]).reshape(T, B)
        np.testing.assert_array_equal(got, traj[key][:, :, j], err_msg=col)  # exact: shortest round-trip
    np.testing.assert_array_equal(np.array([float(r["t_s"]) for r in rows]).reshape(T, B)[:, 0], traj["time"])

    # numpy reads the same file by column name, units in the names
    a = np.genfromtxt(d / "bodies.csv", delimiter=",", names=True, dtype=None, encoding="utf-8")
    np.testing.assert_array_equal(a["z_m"].reshape(T, B), traj["bodies/position"][:, :, 2])

    rows = read_rows(d / "connectors.csv")
    assert len(rows) == T * C
    assert [(r["connector"], r["type"]) for r in rows[:C]] == list(zip(traj["connectors/name"],
                                                                       traj["connectors/type"]))
    for col, key, j in (("fx_N", "connectors/force", 0), ("fz_N", "connectors/force", 2),
                        ("my_N_m", "connectors/moment", 1)):
        np.testing.assert_array_equal(np.array([float(r[col]) for r in rows]).reshape(T, C), traj[key][:, :, j])
    np.testing.assert_array_equal(np.array([float(r["length_m"]) for r in rows]).reshape(T, C),
                                  traj["connectors/length"])  # nan == nan here: no length for the torsional damper

    rows = read_rows(d / "energy.csv")
    assert len(rows) == T and list(rows[0]) == ["t_s", "kinetic_J", "potential_J", "dissipated_J",
                                                "external_work_J", "balance_J"]
    e = {k: np.array([float(r[f"{k}_J"]) for r in rows]) for k in ("kinetic", "potential", "dissipated",
                                                                     "external_work", "balance")}
    for k in ("kinetic", "potential", "dissipated", "external_work"):
        np.testing.assert_array_equal(e[k], traj[f"energy/{k}"])
    np.testing.assert_allclose(e["balance"], e["kinetic"] + e["potential"] + e["dissipated"] - e["external_work"],
                               rtol=0, atol=1e-12)


def test_csv_every(result, traj, tmp_path):
    d = tmp_path / "csv"
    assert main(["export", str(result), "--csv", str(d), "--every", "4", "--quiet"]) == 0
    kept = np.arange(0, T, 4)
    rows = read_rows(d / "bodies.csv")
    assert len(rows) == len(kept) * B
    np.testing.assert_array_equal(sorted({float(r["t_s"]) for r in rows}), traj["time"][kept])
    assert len(read_rows(d / "connectors.csv")) == len(kept) * C
    assert len(read_rows(d / "energy.csv")) == len(kept)


# --------------------------------------------------------------------------
# VTK

def test_vtk_series_reads_back(result, traj, tmp_path, capsys):
    meshio = pytest.importorskip("meshio")
    d = tmp_path / "vtk"
    assert main(["export", str(result), "--vtk", str(d), "--every", "2"]) == 0
    assert "demo.pvd" in capsys.readouterr().out
    kept = np.arange(0, T, 2)

    root = ET.parse(d / "demo.pvd").getroot()
    assert root.get("type") == "Collection"
    sets = root.findall("./Collection/DataSet")
    assert len(sets) == len(kept)
    np.testing.assert_array_equal([float(s.get("timestep")) for s in sets], traj["time"][kept])

    force_mag = np.linalg.norm(traj["connectors/force"], axis=-1)
    for s, k in zip(sets, kept):
        assert s.get("file") == f"demo_{k:06d}.vtu"
        mesh = meshio.read(d / s.get("file"))
        blocks = {c.type: c.data for c in mesh.cells}
        assert blocks["vertex"].shape == (B, 1) and blocks["line"].shape == (C, 2)
        # bodies: centres, axes (SciPy's quaternion → matrix, [x, y, z, w] order), velocity
        np.testing.assert_allclose(mesh.points[blocks["vertex"][:, 0]], traj["bodies/position"][k], atol=1e-15)
        q = traj["bodies/orientation"][k]
        Rm = Rotation.from_quat(q[:, [1, 2, 3, 0]]).as_matrix()
        for j, a in enumerate("xyz"):
            np.testing.assert_allclose(mesh.point_data[f"axis_{a}"][:B], Rm[:, :, j], atol=1e-12)
        np.testing.assert_array_equal(mesh.point_data["velocity"][:B], traj["bodies/velocity"][k])
        # connectors: lines as long as the stored lengths (springs and dampers), forces per cell
        ends = mesh.points[blocks["line"]]
        L = np.linalg.norm(ends[:, 1] - ends[:, 0], axis=-1)
        np.testing.assert_allclose(L[:3], traj["connectors/length"][k, :3], rtol=1e-12)
        # the torsional damper's line joins the centres of bob and tip
        np.testing.assert_allclose(ends[3], traj["bodies/position"][k, [1, 2]], atol=1e-15)
        vertex_i = [i for i, c in enumerate(mesh.cells) if c.type == "vertex"][0]
        line_i = 1 - vertex_i
        np.testing.assert_allclose(mesh.cell_data["force_magnitude"][line_i], force_mag[k], rtol=1e-14)
        np.testing.assert_array_equal(mesh.cell_data["force"][line_i], traj["connectors/force"][k])
        assert list(mesh.cell_data["type_id"][line_i]) == [1, 2, 1, 3]
        assert list(mesh.cell_data["type_id"][vertex_i]) == [0, 0, 0]


def test_vtk_world_end_is_the_origin_and_fixed_end_velocity_zero(result, traj, tmp_path):
    meshio = pytest.importorskip("meshio")
    d = tmp_path / "vtk"
    assert main(["export", str(result), "--vtk", str(d), "--quiet"]) == 0
    mesh = meshio.read(d / "demo_000010.vtu")
    line = next(c.data for c in mesh.cells if c.type == "line")
    # hanger: world point [0, 0, 0] stays at the origin; side: base is fixed
    np.testing.assert_array_equal(mesh.points[line[0, 0]], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(mesh.point_data["velocity"][line[1, 0]], [0.0, 0.0, 0.0])
    assert mesh.point_data["body_id"][line[0, 0]] == -1  # world
    assert mesh.point_data["body_id"][line[0, 1]] == 1  # bob


# --------------------------------------------------------------------------
# unusable input and missing packages

def test_export_needs_a_target(result, capsys):
    assert main(["export", str(result)]) == 2
    assert "--csv DIR" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["--every", "0"], ["--every", "x"]])
def test_export_bad_every(result, tmp_path, capsys, args):
    assert main(["export", str(result), "--csv", str(tmp_path / "c"), *args]) == 2


def test_export_not_a_result_file(tmp_path, capsys):
    bad = tmp_path / "bad.h5"
    bad.write_text("not hdf5")
    assert main(["export", str(bad), "--csv", str(tmp_path / "c")]) == 2
    assert "written by `mbsim run`" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_export_unwritable_directory(result, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["export", str(result), "--csv", str(blocker / "csv")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_vtk_without_meshio_gives_the_install_hint(result, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "meshio", None)  # `import meshio` now raises ImportError
    assert main(["export", str(result), "--vtk", str(tmp_path / "v")]) == 2
    assert "meshio is needed for VTK export: pip install 'mbsim[vtk]'" in capsys.readouterr().err
    assert not (tmp_path / "v").exists()
    # CSV needs no optional package
    assert main(["export", str(result), "--csv", str(tmp_path / "c"), "--quiet"]) == 0
