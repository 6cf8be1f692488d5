"""The first run on a machine (issue 12 item 6): interpreted while a background process compiles.

With an empty numba cache a run executes the kernels as plain Python (the same source, the same
arithmetic) and starts one background compilation for the next runs (mbsim/kernels/firstrun.py);
its results must be the compiled run's to the last bit.  The test session itself compiles in the
foreground (tests/conftest.py); these tests ask for the first-run path explicitly.
"""
import os
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

from mbsim.cli import main

ROOT = Path(__file__).resolve().parents[2]

PENDULUM = (ROOT / "scenarios" / "pendulum.yaml").read_text()
assert "end: 5.0" in PENDULUM  # the short version below must really be short
SHORT = PENDULUM.replace("end: 5.0", "end: 0.3")


def _datasets(path):
    out = {}
    with h5py.File(path) as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.dtype.kind == "f" and not name.startswith("solver/wall"):
                out[name] = obj[()]
        f.visititems(visit)
    return out


def test_a_first_run_is_interpreted_and_its_results_are_the_compiled_ones_bit_for_bit(tmp_path):
    scen = tmp_path / "short.yaml"
    scen.write_text(SHORT)
    compiled = tmp_path / "compiled.h5"
    assert main(["run", str(scen), "-o", str(compiled), "--quiet"]) == 0  # the session's warm cache
    cache = tmp_path / "empty-cache"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), MBSIM_FIRST_RUN="interpret",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    first = tmp_path / "first.h5"
    try:
        done = subprocess.run([sys.executable, "-m", "mbsim", "run", str(scen), "-o", str(first)],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "running uncompiled while the numerical kernels compile in the background" in done.stdout + done.stderr
        locks = list(cache.rglob("mbsim-compiling-*"))
        assert locks or list(cache.rglob("mbsim-ready-*")), "no background compilation was started"
    finally:  # the background compilation is not this test's business: stop it
        for lock in cache.rglob("mbsim-compiling-*"):
            try:
                os.kill(int(lock.read_text()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
    a, b = _datasets(compiled), _datasets(first)
    assert a.keys() == b.keys()
    for k in a:
        if k.startswith("solver/"):
            continue
        assert np.array_equal(a[k], b[k], equal_nan=True), k


def test_poll_switches_an_interpreted_run_back_to_the_compiled_kernels(tmp_path, monkeypatch):
    from mbsim import kernels
    from mbsim.kernels import bodies, firstrun, stepper
    marker = tmp_path / "mbsim-ready-x"
    monkeypatch.setattr(firstrun, "_marker", marker)
    monkeypatch.setattr(firstrun, "_last_poll", 0.0)
    run = stepper.run  # the Kernel
    kernels.interpret(True)
    try:
        assert vars(stepper)["run"] is run.py_func  # module globals name the plain functions
        assert vars(bodies)["kinematics"] is not None and not isinstance(vars(stepper)["_rotations"], kernels.Kernel)
        assert run._target is run.py_func  # and a call from Python runs it uncompiled
        assert firstrun.poll() is False  # no marker yet
        marker.write_text("")
        monkeypatch.setattr(firstrun, "_last_poll", 0.0)
        assert firstrun.poll() is True
        assert vars(stepper)["run"] is run and run._target is not run.py_func  # compiled again
    finally:
        kernels.interpret(False)
    assert isinstance(vars(stepper)["_rotations"], kernels.Kernel)


def test_an_interpreted_run_of_a_closed_loop_of_joints_equals_the_compiled_one():
    """joint_kinds (loops: the block sparse LU, its symbolic structure from a kernel) runs interpreted,
    as on a first run, to the same numbers as compiled (it once failed there: a kernel's ``py_func``
    asked of the plain function)."""
    import dataclasses
    from mbsim import kernels
    from mbsim.driver import run
    from mbsim.scenario import load_scenario
    sc = load_scenario(str(Path(__file__).parents[2] / "scenarios" / "joint_kinds.yaml"))
    sc = dataclasses.replace(sc, time=dataclasses.replace(sc.time, end=0.01), output=dataclasses.replace(
        sc.output, interval=0.005))
    compiled = run(sc, write=False, keep_frames=True)
    kernels.interpret(True)
    try:
        first = run(sc, write=False, keep_frames=True)
    finally:
        kernels.interpret(False)
    for k in ("bodies/position", "bodies/orientation", "joints/force", "joints/moment"):
        assert np.array_equal(compiled.frames_data[k], first.frames_data[k]), k
