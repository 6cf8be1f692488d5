"""``mbsim plot`` and ``mbsim animate`` end to end, and the geometry they draw.

Images are checked for what the options ask (pixel size, frame count) and for
having content; the geometry against what does not come from it: the
connector lengths the solver stored, and boxes whose inertia is worked out by
hand.
"""
from __future__ import annotations

import shutil
import sys

import numpy as np
import pytest

from mbsim.cli import main
from tests.builders import every_connector, run_text
from mbsim.io.reader import read_trajectory

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")

SCENARIO = every_connector("viz-demo")
FRAMES = 11  # t = 0, 0.02, ..., 0.2


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return run_text(tmp_path_factory.mktemp("visual"), "demo", SCENARIO)


@pytest.fixture(scope="module")
def traj(result):
    return read_trajectory(result)


def assert_picture(path, size):
    """``path`` opens as an image of ``size`` pixels that is not a blank page."""
    with Image.open(path) as im:
        assert im.size == size
        grey = np.asarray(im.convert("L"), dtype=float)
    assert grey.std() > 5.0, "image looks blank"
    assert np.mean(grey < 250) > 0.01, "almost nothing drawn"


# --------------------------------------------------------------------------
# plot

@pytest.mark.parametrize("what", ["dashboard", "energy", "motion", "forces", "solver"])
def test_plot_writes_a_png_of_the_requested_size(result, tmp_path, capsys, what):
    png = tmp_path / f"{what}.png"
    assert main(["plot", str(result), "--what", what, "-o", str(png), "--size", "1200x800"]) == 0
    assert_picture(png, (1200, 800))
    assert f"wrote {png}" in capsys.readouterr().out


def test_plot_default_is_the_dashboard_beside_the_result(result, capsys):
    assert main(["plot", str(result)]) == 0
    png = result.with_name("demo-dashboard.png")
    assert_picture(png, (1800, 1200))


def test_plot_other_formats(result, tmp_path):
    svg = tmp_path / "energy.svg"
    assert main(["plot", str(result), "--what", "energy", "-o", str(svg), "--quiet"]) == 0
    assert svg.read_text().lstrip().startswith("<?xml")


def test_plot_named_bodies_and_connectors(result, tmp_path):
    png = tmp_path / "sel.png"
    assert main(["plot", str(result), "-o", str(png), "--bodies", "tip", "--connectors", "elbow", "link",
                 "--size", "1000x700"]) == 0
    assert_picture(png, (1000, 700))


def test_plot_unknown_body_says_which_exist(result, tmp_path, capsys):
    assert main(["plot", str(result), "-o", str(tmp_path / "x.png"), "--bodies", "bobb"]) == 2
    err = capsys.readouterr().err
    assert "'bobb'" in err and "did you mean 'bob'" in err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("args", [["--size", "12x"], ["--size", "10x10"], ["--what", "everything"]])
def test_plot_bad_options(result, capsys, args):
    assert main(["plot", str(result), *args]) == 2


def test_plot_too_small_for_the_dashboard(result, tmp_path, capsys):
    assert main(["plot", str(result), "-o", str(tmp_path / "d.png"), "--size", "600x400"]) == 2
    assert "at least 1000x680 pixels" in capsys.readouterr().err
    assert main(["plot", str(result), "-o", str(tmp_path / "e.png"), "--size", "600x400", "--what", "energy"]) == 0
    assert_picture(tmp_path / "e.png", (600, 400))


def test_plot_unknown_extension(result, tmp_path, capsys):
    assert main(["plot", str(result), "-o", str(tmp_path / "fig.xyz")]) == 2
    assert "extension" in capsys.readouterr().err


# --------------------------------------------------------------------------
# animate

def test_animate_gif(result, tmp_path, capsys):
    gif = tmp_path / "anim.gif"
    assert main(["animate", str(result), "-o", str(gif), "--every", "3", "--size", "320x240", "--fps", "10",
                 "--elev", "30", "--azim", "-45"]) == 0
    with Image.open(gif) as im:
        assert im.size == (320, 240)
        assert im.n_frames == len(range(0, FRAMES, 3)) + 1  # 0, 3, 6, 9 and the last, 10
        frames = []
        for k in (0, im.n_frames - 1):
            im.seek(k)
            frames.append(np.asarray(im.convert("L"), dtype=float))
    assert all(f.std() > 5.0 for f in frames)
    assert np.any(frames[0] != frames[1]), "first and last frame are the same picture"
    out = capsys.readouterr().out
    assert f"wrote {gif} (5 frames, 320x240 px, 10 fps, t = 0 … 0.2 s)" in out


def test_animate_default_plays_in_real_time(result, capsys):
    # 0.02 s between stored frames at 25 fps: every 2nd frame
    assert main(["animate", str(result), "--size", "200x150", "--quiet"]) == 0
    with Image.open(result.with_suffix(".gif")) as im:
        assert im.n_frames == len(range(0, FRAMES, 2))
        assert im.size == (200, 150)


def test_animate_mp4(result, tmp_path, capsys):
    from matplotlib import animation
    mp4 = tmp_path / "anim.mp4"
    args = ["animate", str(result), "-o", str(mp4), "--every", "5", "--size", "320x240"]
    if not animation.writers.is_available("ffmpeg"):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "ffmpeg" in err and ".gif" in err
        assert not mp4.exists()
        pytest.skip("ffmpeg not installed: only the error message was checked")
    assert main(args) == 0
    data = mp4.read_bytes()
    assert data[4:8] == b"ftyp" and len(data) > 1000
    ffprobe = shutil.which("ffprobe")
    if ffprobe:
        import subprocess
        dims = subprocess.run([ffprobe, "-v", "error", "-select_streams", "v:0", "-show_entries",
                               "stream=width,height", "-of", "csv=p=0", str(mp4)], capture_output=True,
                              text=True).stdout.strip()
        assert dims == "320,240"


@pytest.mark.parametrize("args, message", [
    (["-o", "anim.avi"], ".gif"),
    (["-o", "anim.mp4", "--size", "321x240"], "even"),
    (["--every", "0"], None),
    (["--fps", "-1"], None),
])
def test_animate_bad_options(result, tmp_path, capsys, args, message):
    from matplotlib import animation
    if "321x240" in args and not animation.writers.is_available("ffmpeg"):
        message = "ffmpeg"  # the missing writer is reported first
    args = [str(tmp_path / a) if a.startswith("anim.") else a for a in args]
    assert main(["animate", str(result), *args]) == 2
    if message:
        assert message in capsys.readouterr().err


# --------------------------------------------------------------------------
# unusable input and missing packages

@pytest.mark.parametrize("command", ["plot", "animate"])
def test_not_a_result_file(tmp_path, capsys, command):
    bad = tmp_path / "bad.h5"
    bad.write_text("not hdf5")
    assert main([command, str(bad), "-o", str(tmp_path / "x.gif" if command == "animate" else "x.png")]) == 2
    assert "written by `mbsim run`" in capsys.readouterr().err
    assert main([command, str(tmp_path / "missing.h5")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("command, package, hint", [
    ("plot", "matplotlib", "matplotlib is needed for plots and animations: pip install 'mbsim[plot]'"),
    ("animate", "matplotlib", "pip install 'mbsim[plot]'"),
    ("animate", "PIL", "Pillow is needed for GIF animations: pip install 'mbsim[plot]'"),
])
def test_missing_package_gives_the_install_hint(result, tmp_path, capsys, monkeypatch, command, package, hint):
    monkeypatch.setitem(sys.modules, package, None)  # `import package` now raises ImportError
    out = tmp_path / ("x.gif" if command == "animate" else "x.png")
    assert main([command, str(result), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert hint in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


# --------------------------------------------------------------------------
# geometry

def test_insertion_points_reproduce_the_stored_lengths(traj):
    """Points carried by the bodies from the scenario's t = 0 positions must be as far apart as
    the solver's connector lengths, in every frame."""
    from mbsim.viz.geometry import connector_geometry
    g = connector_geometry(traj)
    L = np.linalg.norm(g.points[:, :, 1] - g.points[:, :, 0], axis=-1)
    stored = traj["connectors/length"]
    assert list(g.has_points) == [True, True, True, False]
    np.testing.assert_allclose(L[:, :3], stored[:, :3], rtol=1e-12, atol=1e-14)
    # the torsional damper's axis is carried by body A (bob) and stays a unit vector
    np.testing.assert_allclose(np.linalg.norm(g.axis[:, 3], axis=-1), 1.0, rtol=1e-12)
    assert np.isnan(g.axis[:, :3]).all()


def test_box_from_inertia():
    """A uniform 1 x 2 x 3 box of mass 12 has I = (13, 10, 5); turned, its inertia is full."""
    from mbsim.scenario import parse_scenario
    from mbsim.viz.geometry import box_shapes
    c, s = np.cos(0.3), np.sin(0.3)
    Q = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    J = Q @ np.diag([13.0, 10.0, 5.0]) @ Q.T
    rows = ", ".join("[" + ", ".join(repr(float(x)) for x in r) + "]" for r in J)
    text = (f"mbsim: 1\ntime: {{end: 1, step: 0.1}}\nbodies:\n"
            f"  - {{name: b, mass: 12, inertia: [{rows}]}}\n  - {{name: f, fixed: true}}\n")
    traj = {"bodies/name": ["b", "f"], "scenario": text}
    edges, axes = box_shapes(traj, parse_scenario(text))
    order = np.argsort(edges[0])
    np.testing.assert_allclose(edges[0][order], [1.0, 2.0, 3.0], rtol=1e-12)
    # edge 1 lies along the axis of the largest moment (13), i.e. Q's first column
    np.testing.assert_allclose(abs(axes[0][:, order[0]] @ Q[:, 0]), 1.0, rtol=1e-12)
    assert np.isnan(edges[1]).all()
