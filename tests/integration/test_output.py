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


def test_result_files_are_about_the_size_of_their_data(tmp_path):
    """HDF5 stores whole chunks: the per-frame datasets are chunked for the frames the run will store
    (issue 15, item 6), so a 3-frame result of one body is tens of kB, not the 10-14 MB of chunks sized
    for ~37 000 frames, and a long one is within 1.5x its raw frame data; both conform to OUTPUT.md."""
    import os

    from mbsim.driver import run
    from mbsim.resources import frame_bytes
    from mbsim.scenario import scenario_from_dict

    def chain(n, frames):
        bodies = [{"name": f"b{i}", "mass": 1.0, "inertia": [0.01, 0.02, 0.03], "position": [float(i), 0, 0]}
                  for i in range(1, n + 1)]
        conns = [{"name": f"s{i}", "type": "spring", "bodies": ["world" if i == 1 else f"b{i - 1}", f"b{i}"],
                  "points": [[i - 1.0, 0, 0], [float(i), 0, 0]], "stiffness": 100.0} for i in range(1, n + 1)]
        return scenario_from_dict({"mbsim": 1, "name": "size", "gravity": [0, 0, -9.81],
                                   "time": {"end": (frames - 1) * 1e-3, "step": 1e-3}, "bodies": bodies,
                                   "connectors": conns})

    for n, frames, bound in ((1, 3, None), (30, 400, 1.5)):
        sc = chain(n, frames)
        out = tmp_path / f"size-{n}.h5"
        s = run(sc, str(out), write=True)
        assert s.status == "completed" and s.frames == frames
        size = os.path.getsize(out)
        raw = frames * frame_bytes(n, n, 0)
        if bound is None:
            assert size <= 100_000, size
        else:
            assert size <= bound * raw, (size, raw)
        assert contract.check_output()(str(out), None) == []
