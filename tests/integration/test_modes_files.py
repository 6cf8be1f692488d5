"""Statics and modes files (OUTPUT.md, "Statics and modes files") through the readers: ``read_modes``,
``mbsim info`` (the analysis line and the mode table) and ``mbsim animate --mode K``.

The files are made by hand, not by ``mbsim modes``: a one-frame trajectory written by
:func:`mbsim.io.writer.write_trajectory` plus a ``/modes`` group of chosen values -- a cart of 2 kg on a
spring of 200 N/m along x from a fixed base (ω = 10 rad/s, 1.59 Hz, here with ζ = 0.05) and a rigid-body
rotation about y -- so that what the readers show can be checked against numbers known up front.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from mbsim.cli import main
from mbsim.io.reader import (ModesError, ResultFileError, read_modes, read_summary, read_trajectory,
                             result_status)
from mbsim.io.writer import FRAME_DATASETS, write_trajectory
from mbsim.kernels.rotations import quat_to_matrix
from mbsim.scenario import parse_scenario

ROOT = Path(__file__).resolve().parents[2]

SCENARIO = """\
mbsim: 1
name: cart-spring
gravity: [0, 0, 0]
time: {end: 1.0, step: 0.01}
bodies:
  - {name: base, fixed: true, position: [0, 0, 0]}
  - {name: cart, mass: 2.0, inertia: [0.02, 0.03, 0.04], position: [1, 0, 0]}
connectors:
  - {name: spring, type: spring, bodies: [base, cart], points: [[0, 0, 0], [1, 0, 0]], stiffness: 200.0,
     rest_length: 1.0}
"""
OMEGA, ZETA = 10.0, 0.05
FREQUENCY = OMEGA / (2 * np.pi)  # 1.5915 Hz
B = 2  # base (fixed), cart


def _modes_values() -> dict:
    """Mode 1: rigid-body rotation of the cart about y; mode 2: the cart along x, damped."""
    shape = np.zeros((2, B, 6))
    shape[0, 1, 4] = 1.0
    shape[1, 1, 0] = 1.0
    wd = OMEGA * np.sqrt(1 - ZETA ** 2)
    return {"eigenvalue": np.array([[0.0, 0.0], [-ZETA * OMEGA, wd]]), "frequency": np.array([0.0, FREQUENCY]),
            "damping_ratio": np.array([np.nan, ZETA]), "shape": shape, "shape_imag": np.zeros((2, B, 6)),
            "rigid_body": np.array([True, False])}


def write_one_frame(path, attrs: dict, modes: dict | None = None, status: str = "completed"):
    """A one-frame trajectory of SCENARIO (the cart at rest at x = 1) with root ``attrs``, and ``modes`` as
    its /modes group."""
    sc = parse_scenario(SCENARIO)
    frames = {}
    for name, (tail, _, _) in FRAME_DATASETS.items():
        frames[name] = np.zeros((1,) + tuple({"B": B, "C": 1}.get(d, d) for d in tail))
    frames["bodies/position"][0] = [[0, 0, 0], [1, 0, 0]]
    frames["bodies/orientation"][0] = [[1, 0, 0, 0], [1, 0, 0, 0]]
    frames["connectors/length"][0] = [1.0]
    write_trajectory(path, sc, frames, attrs, status=status, message="equilibrium found")
    if modes is not None:
        with h5py.File(path, "r+") as f:
            g = f.create_group("modes")
            for k, v in modes.items():
                g[k] = v
    return path


MODES_ATTRS = {"analysis": "modes", "stability": "stable", "linearized_about": "equilibrium",
               "degrees_of_freedom": 6}


@pytest.fixture
def modes_file(tmp_path):
    return write_one_frame(tmp_path / "cart-modes.h5", MODES_ATTRS, _modes_values())


# --------------------------------------------------------------------------
# reader

def test_read_modes_round_trips(modes_file):
    want = _modes_values()
    for source in (modes_file, str(modes_file)):
        m = read_modes(source)
        assert set(m) == set(want) | {"degrees_of_freedom", "linearized_about"}
        for k, v in want.items():
            np.testing.assert_array_equal(m[k], v)
        assert m["rigid_body"].dtype == bool
        assert m["degrees_of_freedom"] == 6 and m["linearized_about"] == "equilibrium"
    with h5py.File(modes_file, "r") as f:  # an open file too
        np.testing.assert_array_equal(read_modes(f)["shape"], want["shape"])


def test_a_file_without_modes_has_none(tmp_path):
    dyn = write_one_frame(tmp_path / "plain.h5", {})
    stat = write_one_frame(tmp_path / "statics.h5", {"analysis": "statics", "stability": "stable",
                                                     "load_factor_steps": 3})
    assert read_modes(dyn) is None and read_modes(stat) is None
    assert read_summary(dyn)["analysis"] == "dynamics" and read_summary(dyn)["modes"] is None


def test_a_modes_file_passes_every_reader(modes_file, capsys):
    traj = read_trajectory(modes_file)
    assert traj["attrs"]["analysis"] == "modes" and traj["attrs"]["degrees_of_freedom"] == 6
    assert traj["modes/frequency"][1] == pytest.approx(FREQUENCY)
    assert result_status(modes_file) == "completed"
    s = read_summary(modes_file)
    assert (s["analysis"], s["stability"], s["linearized_about"], s["degrees_of_freedom"]) == \
        ("modes", "stable", "equilibrium", 6)
    # no time integration: its settings are not asked for; nothing else is missing
    assert s["missing_attributes"] == [] and s["wrongly_typed_attributes"] == []
    assert main(["info", str(modes_file), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    s_re, s_im = -ZETA * OMEGA, OMEGA * np.sqrt(1 - ZETA ** 2)
    assert d["modes"][1] == {"mode": 2, "frequency_Hz": pytest.approx(FREQUENCY), "damping_ratio": ZETA,
                             "eigenvalue": [pytest.approx(s_re), pytest.approx(s_im)],
                             "rigid_body": False, "body": "cart", "motion": "translation", "axis": "x"}
    assert d["modes"][0]["damping_ratio"] is None and d["modes"][0]["rigid_body"] is True


def test_the_analysis_attributes_are_type_checked_and_unknown_ones_ignored(modes_file):
    with h5py.File(modes_file, "r+") as f:
        f.attrs["degrees_of_freedom"] = 6.5
        f.attrs["stability"] = np.array([1, 2])
        f.attrs["some_future_attribute"] = "anything"
    s = read_summary(modes_file)
    assert s["wrongly_typed_attributes"] == ["degrees_of_freedom", "stability"]
    assert s["degrees_of_freedom"] is None and s["stability"] is None
    assert read_modes(modes_file)["degrees_of_freedom"] is None
    assert read_trajectory(modes_file)["attrs"]["some_future_attribute"] == "anything"
    with h5py.File(modes_file, "r+") as f:
        del f.attrs["linearized_about"]
    assert read_summary(modes_file)["missing_attributes"] == ["linearized_about"]


# --------------------------------------------------------------------------
# mbsim info

def test_info_prints_the_mode_table(modes_file, capsys):
    assert main(["info", str(modes_file)]) == 0
    out = capsys.readouterr().out
    assert "  analysis       modes, linearized about the equilibrium at t = 0 s (stable)\n" in out
    assert "  modes          2 (1 rigid-body); 6 degrees of freedom\n" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(" " * 17) and
            line.split()[0] in ("1", "2")}
    assert rows["1"].split()[1:6] == ["0", "-", "0", "0", "rigid"] and "cart (rotation about y)" in rows["1"]
    assert rows["2"].split()[1:5] == ["1.592", "0.05", "-0.5", "9.987"] and "cart (translation along x)" in rows["2"]
    assert "energy drift" not in out  # one frame at rest: nothing to drift


def test_info_says_a_file_is_a_statics_result(tmp_path, capsys):
    path = write_one_frame(tmp_path / "statics.h5", {"analysis": "statics", "stability": "stable",
                                                     "load_factor_steps": 3})
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  analysis       statics: stable equilibrium at t = 0 s, 3 load steps\n" in out
    assert "modes" not in out and "missing" not in out
    failed = write_one_frame(tmp_path / "failed.h5", {"analysis": "statics", "stability": "neutral",
                                                      "load_factor_steps": 1}, status="failed")
    assert main(["info", str(failed)]) == 0
    assert "statics: no equilibrium stored (status failed" in capsys.readouterr().out


# --------------------------------------------------------------------------
# damaged /modes

def _damage(name):
    def apply(f):
        if name == "shape of other bodies":
            del f["modes/shape"]
            f["modes/shape"] = np.zeros((2, B + 1, 6))
        elif name == "fewer frequencies":
            del f["modes/frequency"]
            f["modes/frequency"] = np.zeros(1)
        elif name == "no eigenvalue":
            del f["modes/eigenvalue"]
        elif name == "text for the damping ratio":
            del f["modes/damping_ratio"]
            f["modes/damping_ratio"] = np.array(["a", "b"], dtype=object)
        elif name == "a dataset for the group":
            del f["modes"]
            f["modes"] = np.zeros(3)
        elif name == "NaN in the shape":
            f["modes/shape"][1, 1, 0] = np.nan
    return apply


@pytest.mark.parametrize("damage, words", [
    ("shape of other bodies", "/modes/shape has shape (2, 3, 6), expected (K, 2, 6)"),
    ("fewer frequencies", "/modes/frequency holds 1 modes, /modes/eigenvalue 2"),
    ("no eigenvalue", "/modes/eigenvalue is missing"),
    ("text for the damping ratio", "/modes/damping_ratio holds object, not numbers"),
    ("a dataset for the group", "/modes is a dataset, not a group"),
    ("NaN in the shape", "/modes/shape holds NaN or inf"),
])
def test_a_damaged_modes_group_is_refused(modes_file, capsys, damage, words):
    with h5py.File(modes_file, "r+") as f:
        _damage(damage)(f)
    with pytest.raises(ModesError, match=words.replace("(", r"\(").replace(")", r"\)")) as exc:
        read_modes(modes_file)
    assert isinstance(exc.value, ResultFileError)
    assert main(["info", str(modes_file)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and words in cap.err and "run `mbsim modes` again" in cap.err
    assert read_trajectory(modes_file)["attrs"]["analysis"] == "modes"  # the trajectory itself is still read


# --------------------------------------------------------------------------
# the motion of a mode, and mbsim animate --mode K

def test_mode_motion_moves_the_cart_along_x_over_one_period(modes_file):
    from mbsim.viz import animate
    traj, modes = read_trajectory(modes_file), read_modes(modes_file)
    assert animate.model_size(traj) == pytest.approx(1.0)  # base at 0, cart at x = 1
    m = animate.mode_motion(traj, modes, 2)
    N = animate.MODE_FRAMES
    assert m.amplitude == pytest.approx(0.1)  # 10 % of the model's size for the largest translation
    np.testing.assert_allclose(m.phases, 2 * np.pi * np.arange(N) / N)
    r = m.traj["bodies/position"]
    assert r.shape == (N, B, 3)
    np.testing.assert_allclose(r[:, 1, 0], 1.0 + 0.1 * np.cos(m.phases), atol=1e-15)
    np.testing.assert_allclose(r[:, 1, 1:], 0.0, atol=1e-15)
    np.testing.assert_allclose(r[:, 0], 0.0)  # the fixed base stays
    np.testing.assert_allclose(m.traj["bodies/orientation"], np.tile([1.0, 0, 0, 0], (N, B, 1)), atol=1e-15)
    assert len(m.traj["time"]) == len(m.traj["energy/kinetic"]) == N  # every per-frame dataset has N frames
    assert m.labels[9] == "φ =  90°"
    assert m.title == "cart-spring: mode 2 of 2, 1.592 Hz, ζ = 0.05, amplitude 0.1"
    assert animate.mode_motion(traj, modes, 2, amplitude=0.25).traj["bodies/position"][0, 1, 0] == 1.25
    with pytest.raises(ValueError, match="no mode 3: the file has 2 modes"):
        animate.mode_motion(traj, modes, 3)


def test_a_rotation_mode_turns_the_body_exactly_by_its_rotation_vector(modes_file):
    from mbsim.viz import animate
    traj, modes = read_trajectory(modes_file), read_modes(modes_file)
    m = animate.mode_motion(traj, modes, 1)
    assert m.amplitude == pytest.approx(0.3) and "rigid-body mode" in m.title
    R = quat_to_matrix(m.traj["bodies/orientation"][:, 1])
    for k, phi in enumerate(m.phases):
        a = 0.3 * np.cos(phi)  # the angle about y
        want = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
        np.testing.assert_allclose(R[k], want, atol=1e-14)
    np.testing.assert_allclose(m.traj["bodies/position"][:, 1], np.tile([1.0, 0, 0], (len(m.phases), 1)))


def test_a_complex_shape_moves_with_its_phase_and_turns_a_turned_body():
    from mbsim.viz.animate import mode_poses
    q0 = np.array([[np.cos(0.2), 0, 0, np.sin(0.2)]])  # turned 0.4 rad about z
    shape, imag = np.zeros((1, 6)), np.zeros((1, 6))
    shape[0, 1], imag[0, 1] = 1.0, 0.5  # y: Re((1 + 0.5i) e^{iφ}) = cos φ - 0.5 sin φ
    shape[0, 3] = 1.0  # about world x
    phases = np.linspace(0, 2 * np.pi, 7, endpoint=False)
    r, q = mode_poses([[1.0, 2.0, 3.0]], q0, shape, imag, 0.2, phases)
    np.testing.assert_allclose(r[:, 0, 1], 2.0 + 0.2 * (np.cos(phases) - 0.5 * np.sin(phases)), atol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1.0)
    for k, phi in enumerate(phases):
        a = 0.2 * np.cos(phi)
        Rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
        np.testing.assert_allclose(quat_to_matrix(q[k, 0]), Rx @ quat_to_matrix(q0[0]), atol=1e-14)


def test_animate_mode_writes_one_period(modes_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    Image = pytest.importorskip("PIL.Image")
    gif = tmp_path / "mode2.gif"
    assert main(["animate", str(modes_file), "--mode", "2", "-o", str(gif), "--size", "160x120"]) == 0
    cap = capsys.readouterr()
    assert f"wrote {gif} (36 frames, 160x120 px, 25 fps, mode 2 of 2, 1.592 Hz, ζ = 0.05, amplitude 0.1; " \
           f"one period in 1.44 s)" in cap.out
    assert "one period of mode 2" in cap.err
    with Image.open(gif) as im:
        assert im.size == (160, 120) and im.n_frames == 36
        frames = []
        for k in (0, 18):  # φ = 0 and 180°: the cart at x = 1.1 and 0.9
            im.seek(k)
            frames.append(np.asarray(im.convert("L"), dtype=float))
    assert np.any(frames[0] != frames[1])
    # default name beside the file, and --amplitude
    assert main(["animate", str(modes_file), "--mode", "1", "--amplitude", "0.5", "--size", "160x120",
                 "--quiet"]) == 0
    assert modes_file.with_name("cart-modes-mode1.gif").is_file()
    # without --mode: the one stored frame, and a note that the file has modes
    assert main(["animate", str(modes_file), "-o", str(tmp_path / "still.gif"), "--size", "160x120"]) == 0
    assert "holds modes; this animates its one stored frame (--mode K" in capsys.readouterr().err


@pytest.mark.parametrize("args, words", [
    (["--mode", "3"], "has 2 modes: give --mode 1 … 2"),
    (["--mode", "0"], "must be a whole number >= 1"),
    (["--amplitude", "0.1"], "give --mode K too"),
    (["--mode", "1", "--every", "2"], "leave out --every"),
    (["--mode", "1", "--amplitude", "-1"], "must be a finite number > 0"),
])
def test_animate_mode_bad_options(modes_file, tmp_path, capsys, args, words):
    pytest.importorskip("matplotlib")
    pytest.importorskip("PIL")
    assert main(["animate", str(modes_file), "-o", str(tmp_path / "x.gif"), *args]) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "x.gif").exists()


def test_animate_mode_of_a_file_without_modes_is_refused(modes_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    pytest.importorskip("PIL")
    plain = write_one_frame(tmp_path / "plain.h5", {})
    assert main(["animate", str(plain), "--mode", "1", "-o", str(tmp_path / "x.gif")]) == 2
    err = capsys.readouterr().err
    assert "holds no modes (no /modes: it is a dynamics result)" in err and "mbsim modes" in err
    with h5py.File(modes_file, "r+") as f:
        _damage("shape of other bodies")(f)
    assert main(["animate", str(modes_file), "--mode", "1", "-o", str(tmp_path / "x.gif")]) == 2
    assert "its modes are damaged" in capsys.readouterr().err
    assert not (tmp_path / "x.gif").exists()


READ = r"""
import sys
from mbsim.cli import main
from mbsim.io.reader import read_modes
for args in sys.argv[1:]:
    assert main(args.split()) == 0, args
read_modes(sys.argv[1].split()[1])
print("IMPORTED:" + " ".join(sorted(m for m in sys.modules if m == "numba" or m.startswith("mbsim.driver"))),
      file=sys.stderr)
"""


def test_reading_a_modes_file_imports_no_numba(modes_file, tmp_path):
    commands = [f"info {modes_file}", f"info {modes_file} --json"]
    import importlib.util
    if importlib.util.find_spec("matplotlib") and importlib.util.find_spec("PIL"):
        commands.append(f"animate {modes_file} --mode 2 -o {tmp_path / 'm.gif'} --size 80x60 --quiet")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, "-c", READ, *commands], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "IMPORTED:"
