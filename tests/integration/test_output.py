"""Result files of unusual but valid models: no connectors, no loads, only world."""
import importlib.util
from pathlib import Path

import pytest

from mbsim.cli import main

CHECKER = Path(__file__).resolve().parents[3] / "shared" / "tools" / "check_output.py"

NO_CONNECTORS = """\
mbsim: 1
time: {end: 0.1, step: 0.01}
gravity: [0, 0, -9.81]
bodies:
  - {name: a, mass: 1, inertia: [1, 1, 1], velocity: [1, 0, 0]}
"""


@pytest.mark.skipif(not CHECKER.is_file(), reason="shared check_output.py not found")
def test_a_model_without_connectors_writes_a_conforming_file(tmp_path):
    spec = importlib.util.spec_from_file_location("check_output", CHECKER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    p = tmp_path / "free.yaml"
    p.write_text(NO_CONNECTORS)
    out = tmp_path / "free.h5"
    assert main(["run", str(p), "-o", str(out), "--quiet"]) == 0
    assert mod.check(str(out), str(p)) == []
    import h5py
    with h5py.File(out) as f:
        assert f["connectors/force"].shape == (11, 0, 3)
        assert f["bodies/position"][-1, 0, 0] == pytest.approx(0.1)
