"""Result files of unusual but valid models: no connectors, no loads, only world."""
import pytest

from mbsim.cli import main
from tests import contract

NO_CONNECTORS = """\
mbsim: 1
time: {end: 0.1, step: 0.01}
gravity: [0, 0, -9.81]
bodies:
  - {name: a, mass: 1, inertia: [1, 1, 1], velocity: [1, 0, 0]}
"""


def test_a_model_without_connectors_writes_a_conforming_file(tmp_path):
    p = tmp_path / "free.yaml"
    p.write_text(NO_CONNECTORS)
    out = tmp_path / "free.h5"
    assert main(["run", str(p), "-o", str(out), "--quiet"]) == 0
    assert contract.check_output()(str(out), str(p)) == []
    import h5py
    with h5py.File(out) as f:
        assert f["connectors/force"].shape == (11, 0, 3)
        assert f["bodies/position"][-1, 0, 0] == pytest.approx(0.1)


@pytest.mark.skipif(not contract.SHARED.is_file(), reason="no ../shared beside this checkout to compare the copy with")
def test_the_copied_contract_checker_is_the_shared_one():
    """tests/contract/check_output.py must be the shared tool verbatim, so a bare clone checks the same contract."""
    assert contract.COPY.read_bytes() == contract.SHARED.read_bytes(), (
        "tests/contract/check_output.py differs from ../shared/tools/check_output.py: copy the shared one over")
