"""``mbsim statics`` and ``mbsim modes`` end to end: files (OUTPUT.md "Statics and modes files", checked by the
independent OUTPUT.md checker), exit codes, messages, the exported linear model, ``initial: equilibrium``."""
from __future__ import annotations

import json
import textwrap

import h5py
import numpy as np
import pytest

import mbsim
from mbsim.cli import main
from tests import contract

PENDULUM = """\
mbsim: 1
name: pendulum
gravity: [0, 0, -9.81]
bodies:
  - {name: bob, mass: 2.0, inertia: [0.03, 0.05, 0.04], position: [0.35, 0, -0.35]}
joints:
  - {name: hinge, type: revolute, bodies: [world, bob], point: [0, 0, 0], axis: [0, 1, 0]}
connectors:
  - {name: damp, type: torsional_damper, bodies: [world, bob], damping: 0.05, projection: P3, axis: [0, 1, 0]}
loads:
  - {name: push, type: force, body: bob, vector: [0, 0, -1.0]}
"""
FREE = """\
mbsim: 1
name: falling
gravity: [0, 0, -9.81]
time: {end: 1.0, step: 0.01}
bodies:
  - {name: ball, mass: 1.0, inertia: [0.1, 0.1, 0.1]}
"""


def _write(tmp_path, text, name="s.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_statics_writes_a_one_frame_result_that_the_output_checker_accepts(tmp_path, capsys):
    sc = _write(tmp_path, PENDULUM)
    out = tmp_path / "p.statics.h5"
    assert main(["statics", str(sc), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "stable equilibrium" in text and str(out) in text
    assert contract.check_output()(str(out)) == []
    res = mbsim.load(out)
    assert len(res) == 1 and res.analysis == "statics" and res.attrs["stability"] == "stable"
    assert res.attrs["load_factor_steps"] >= 1
    np.testing.assert_allclose(res.body("bob").position[0], [0, 0, -0.35 * np.sqrt(2)], atol=1e-10)
    np.testing.assert_allclose(res.joint("hinge").force[0], [0, 0, -(2.0 * 9.81 + 1.0)], atol=1e-9)
    # the modes file: /modes in the OUTPUT.md layout, the root attributes, read back by load and info
    mout = tmp_path / "p.modes.h5"
    assert main(["modes", str(sc), "-o", str(mout)]) == 0
    assert "damping ratio" in capsys.readouterr().out
    assert contract.check_output()(str(mout)) == []
    with h5py.File(mout) as f:
        assert f.attrs["analysis"] == "modes" and f.attrs["linearized_about"] == "equilibrium"
        assert f.attrs["degrees_of_freedom"] == 1
        assert f["modes/eigenvalue"].shape == (1, 2) and f["modes/shape"].shape == (1, 1, 6)
        assert f["modes/eigenvalue"][0, 1] > 0 and 0 < f["modes/damping_ratio"][0] < 1
        assert np.abs(f["modes/shape"][0] + 1j * f["modes/shape_imag"][0]).max() == 1.0
    assert main(["info", str(mout)]) == 0
    assert "bob (rotation" in capsys.readouterr().out


def test_a_free_body_has_no_equilibrium_exit_3_and_a_failed_file(tmp_path, capsys):
    sc = _write(tmp_path, FREE)
    out = tmp_path / "f.h5"
    assert main(["statics", str(sc), "-o", str(out)]) == 3
    err = capsys.readouterr().err
    assert "no static equilibrium" in err and "body 'ball' translating along [0, 0, -1]" in err
    with h5py.File(out) as f:
        assert f.attrs["status"] == "failed" and "no static equilibrium" in f.attrs["message"]
    assert main(["modes", str(sc), "-o", str(tmp_path / "m.h5")]) == 3
    assert not (tmp_path / "m.h5").exists()  # nothing half-written
    # a run asked to start from the equilibrium is not run
    sc2 = _write(tmp_path, FREE + "initial: equilibrium\n", "eq.yaml")
    assert main(["run", str(sc2), "-o", str(tmp_path / "r.h5")]) == 3
    assert "initial: equilibrium" in capsys.readouterr().err


def test_bad_requests_exit_2_and_write_nothing(tmp_path, capsys):
    sc = _write(tmp_path, PENDULUM)
    out = tmp_path / "m.h5"
    assert main(["modes", str(sc), "--count", "3", "-o", str(out)]) == 2
    assert "has 1 degree of freedom" in capsys.readouterr().err and not out.exists()
    assert main(["modes", str(sc), "--export", str(tmp_path / "lin.txt"), "-o", str(out)]) == 2
    assert ".mat" in capsys.readouterr().err and not out.exists()
    bad = _write(tmp_path, PENDULUM + "statics: {load_steps: 2}\n", "bad.yaml")
    assert main(["statics", str(bad)]) == 2
    assert "statics.load_steps" in capsys.readouterr().err
    main(["statics", str(sc), "-o", str(out)])
    capsys.readouterr()
    assert main(["statics", str(sc), "-o", str(out)]) == 2  # an existing file is never replaced silently
    assert "--overwrite" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", (".mat", ".npz"))
def test_the_exported_linear_model_holds_the_state_space(tmp_path, suffix, capsys):
    import scipy.io
    sc = _write(tmp_path, PENDULUM)
    path = tmp_path / f"lin{suffix}"
    assert main(["modes", str(sc), "--export", str(path), "-o", str(tmp_path / "m.h5"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    data = scipy.io.loadmat(path) if suffix == ".mat" else dict(np.load(path))
    A = np.asarray(data["A"])
    assert A.shape == (2, 2) and np.asarray(data["N"]).shape == (6, 1)
    s = np.linalg.eigvals(A)
    s = s[np.argmax(s.imag)]
    assert [s.real, s.imag] == pytest.approx(printed["eigenvalue"][0], rel=1e-9)
    K = data["K"].toarray() if hasattr(data["K"], "toarray") else np.asarray(data["K"])
    assert K.shape == (6, 6)


def test_animate_a_mode_of_a_modes_file(tmp_path):
    pytest.importorskip("matplotlib")
    sc = _write(tmp_path, PENDULUM)
    out = tmp_path / "m.h5"
    assert main(["modes", str(sc), "-o", str(out), "-q"]) == 0
    gif = tmp_path / "mode1.gif"
    assert main(["animate", str(out), "--mode", "1", "-o", str(gif)]) == 0
    assert gif.stat().st_size > 0


def test_a_modes_result_saved_from_python_keeps_its_modes(tmp_path):
    sc = textwrap.dedent(PENDULUM)
    import yaml
    modes = mbsim.modes(yaml.safe_load(sc))
    path = modes.result.save(tmp_path / "m.h5")
    back = mbsim.load(path).modes
    np.testing.assert_array_equal(back.frequency, modes.frequency)
    np.testing.assert_array_equal(back.shape, modes.shape)
    assert back.degrees_of_freedom == 1 and back.linearized_about == "equilibrium"
