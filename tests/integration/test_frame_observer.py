"""The driver's frame observer (``run(on_frames=…)``, what a live viewer listens to): every stored frame
reaches it once, in order, block by block as computed, equal to what the file holds -- through the
compiled multi-frame loop, the Python step loop (adaptive steps) and a run with joints."""
import numpy as np
import pytest

from mbsim.driver import run
from mbsim.io.reader import read_trajectory
from mbsim.scenario import load_scenario
from tests.integration._examples_util import REPO


@pytest.mark.parametrize("example,adaptive", [("chain50", False), ("joint_kinds", False), ("pendulum", True)])
def test_every_frame_reaches_the_observer_as_the_file_holds_it(example, adaptive, tmp_path):
    from dataclasses import replace
    sc = load_scenario(str(REPO / "scenarios" / f"{example}.yaml"))
    if adaptive:
        sc = replace(sc, time=replace(sc.time, adaptive=True))
    blocks = []
    out = tmp_path / "r.h5"
    summary = run(sc, str(out), end=min(sc.time.end, 0.3), on_frames=blocks.append)
    assert summary.status == "completed"
    traj = read_trajectory(str(out))
    got = {k: np.concatenate([b[k] for b in blocks]) for k in blocks[0]}
    assert len(got["time"]) == len(traj["time"]) == summary.frames
    for k, v in got.items():
        np.testing.assert_array_equal(v, np.asarray(traj[k]), err_msg=k)
    assert np.all(np.diff(got["time"]) > 0)
