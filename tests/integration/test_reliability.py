"""A long run must not be lost: kill at random moments, interrupt and resume, never overwrite."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from mbsim.cli import main
from mbsim.driver import run
from mbsim.io.writer import FRAME_DATASETS
from mbsim.scenario import parse_scenario

REPO = Path(__file__).resolve().parents[2]

# A small chain that runs for a few seconds with a frame every step and a
# flush every 8 frames: many flushes to be killed in the middle of.
CHAIN = """\
mbsim: 1
name: kill-me
gravity: [0, 0, -9.81]
time: {end: %(end)s, step: 1.0e-3}
integrator: {rho_inf: 0.8}
output: {interval: 1.0e-3}
bodies:
%(bodies)s
connectors:
%(conns)s
"""


# (2000 s of 1 ms steps: about 40 s of running, so a kill after up to 2.5 s always meets a running time loop,
# on any machine; 200 s took 4 s in all, close to the tests' waits)
def chain_text(n=4, end=2000.0):
    bodies = "\n".join(f"  - {{name: b{i}, mass: 1.0, inertia: [0.01, 0.02, 0.03], position: [{i + 1}, 0, 0],"
                       f" angular_velocity: [0, {0.5 * i}, 1]}}" for i in range(n))
    conns = []
    for i in range(n):
        a = "world" if i == 0 else f"b{i - 1}"
        conns.append(f"  - {{type: spring, bodies: [{a}, b{i}], points: [[{i + 0.25}, 0, 0], [{i + 0.75}, 0, 0]],"
                     f" stiffness: 1.0e4}}")
        conns.append(f"  - {{type: damper, bodies: [{a}, b{i}], points: [[{i + 0.25}, 0, 0], [{i + 0.75}, 0, 0]],"
                     f" damping: 10}}")
    return CHAIN % {"end": end, "bodies": bodies, "conns": "\n".join(conns)}


def check_readable(path: Path) -> int:
    """Open with plain h5py; every per-frame dataset has the same length; return it."""
    with h5py.File(path, "r") as f:
        lengths = {k: f[k].shape[0] for k in FRAME_DATASETS}
        assert len(set(lengths.values())) == 1, lengths
        T = lengths["time"]
        assert f.attrs["status"] in ("running", "interrupted", "completed", "failed")
        if T:
            t = f["time"][:]
            assert t[0] == 0 and np.all(np.diff(t) > 0)
            assert np.isfinite(f["bodies/position"][:]).all()
        return T


@pytest.fixture(scope="module")
def warm_kernels(tmp_path_factory):
    """A short run of the chain by the repository copy that the subprocesses below run, so that
    numba's cache holds its kernels and the signals land in the time loop, not in a first
    compile (a signal during the compile: test_a_signal_numba_swallows_while_compiling_still_interrupts)."""
    d = tmp_path_factory.mktemp("warm")
    scen = d / "chain.yaml"
    scen.write_text(chain_text(end=0.05))
    done = subprocess.run([sys.executable, "-m", "mbsim", "run", str(scen), "-o", str(d / "warm.h5"), "--quiet"],
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_sigkill_at_random_moments_leaves_a_readable_file(tmp_path, warm_kernels):
    """A real `mbsim run` subprocess killed with SIGKILL at random moments after its file appeared:
    the file always opens with plain h5py, all per-frame datasets agree in length, the status is
    not `completed`, and the frames grow from one kill to the next run."""
    scen = tmp_path / "chain.yaml"
    scen.write_text(chain_text())
    rng = random.Random(12345)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    kills = 0
    for trial in range(8):
        out = tmp_path / f"k{trial}.h5"
        proc = subprocess.Popen([sys.executable, "-m", "mbsim", "run", str(scen), "-o", str(out), "--quiet"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += proc.returncode == -signal.SIGKILL
        assert out.exists()
        check_readable(out)
        with h5py.File(out) as f:
            assert f.attrs["status"] == "running"  # never `completed`: it was killed
    assert kills == 8


def test_a_run_with_error_controlled_steps_killed_and_resumed_is_the_whole_run_to_the_last_bit(tmp_path):
    """Issue 31, item 4: a real `mbsim run` of the chain with ``time.tolerance`` (about 7 s of running),
    killed with SIGKILL at a random moment after its first checkpoint, then `--resume`d: the file holds the
    frames of an uninterrupted run to the last bit (the run goes on from the newest checkpoint whose frames
    were all flushed -- the step size, the controller's memory and the predictor's history with it -- and
    the frames written after it are cut and computed again)."""
    text = chain_text(end=40.0).replace("step: 1.0e-3}", "step: 1.0e-3, tolerance: {rtol: 1.0e-7}}")
    scen = tmp_path / "chain.yaml"
    scen.write_text(text.replace("interval: 1.0e-3", "interval: 2.0e-3"))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    whole = tmp_path / "whole.h5"  # (and numba's cache warmed for the controlled loop)
    done = subprocess.run([sys.executable, "-m", "mbsim", "run", str(scen), "-o", str(whole), "--quiet"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "killed.h5"
    proc = subprocess.Popen([sys.executable, "-m", "mbsim", "run", str(scen), "-o", str(out), "--quiet"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120

    def checkpointed() -> bool:  # (read without the writer's lock, between its flushes)
        try:
            with h5py.File(out, "r", locking=False) as f:
                return "checkpoint" in f
        except (OSError, KeyError):
            return False
    while not checkpointed() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # (a checkpoint follows every flush: every ~2 s)
    time.sleep(random.Random(31).uniform(0.5, 2.5))
    assert proc.poll() is None, "the run ended before it was killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    T = check_readable(out)
    with h5py.File(out) as f:
        assert f.attrs["status"] == "running" and "checkpoint" in f and T > 1
    done = subprocess.run([sys.executable, "-m", "mbsim", "run", str(scen), "--resume", str(out), "--quiet"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    with h5py.File(whole) as a, h5py.File(out) as b:
        assert b.attrs["status"] == "completed" and a["time"].shape == b["time"].shape
        for k in FRAME_DATASETS:
            assert np.array_equal(a[k][:], b[k][:], equal_nan=True), k
        assert a.attrs["steps"] == b.attrs["steps"] and a.attrs["rejected_steps"] == b.attrs["rejected_steps"]


def test_sigint_and_sigterm_end_cleanly_and_resume_continues(tmp_path, warm_kernels):
    scen = tmp_path / "chain.yaml"
    scen.write_text(chain_text())
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for sig in (signal.SIGINT, signal.SIGTERM):
        out = tmp_path / f"{sig.name}.h5"
        proc = subprocess.Popen([sys.executable, "-m", "mbsim", "run", str(scen), "-o", str(out)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while not out.exists() and proc.poll() is None:
            time.sleep(0.01)
        time.sleep(2.5)  # the kernels load after the file is made, then frames come
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "interrupted" in err
        T = check_readable(out)
        with h5py.File(out) as f:
            assert f.attrs["status"] == "interrupted" and T > 1
            t_stop = f["time"][-1]
        # resume it up to a little later (--end): frames continue where they were
        t_more = round(float(t_stop) + 0.05, 6)
        done = subprocess.run([sys.executable, "-m", "mbsim", "run", str(scen), "--resume", str(out),
                               "--end", repr(t_more), "--quiet"], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        T2 = check_readable(out)
        with h5py.File(out) as f:
            t = f["time"][:]
            assert T2 > T and t[T - 1] == t_stop and f.attrs["status"] == "completed"
            assert t[-1] == pytest.approx(t_more)


def test_a_signal_numba_swallows_while_compiling_still_interrupts(tmp_path, monkeypatch):
    """A signal that arrives while numba runs one of its ctypes callbacks (its object-cache
    notification): the handler's exception is swallowed there and numba then fails with a
    RuntimeError of its own ("no compiled object yet"), which the warm-up ignored and the time
    loop reported as an internal error (exit 4, seen in a test run).  The driver asks its signal
    guard: the run is interrupted, the file says so."""
    from mbsim.integrators import GeneralizedAlpha

    def swallowing_warm_up(self, s, dt, every):
        try:
            os.kill(os.getpid(), signal.SIGINT)  # the run's handler raises Interrupted here ...
            time.sleep(1.0)
        except KeyboardInterrupt:
            pass  # ... and the ctypes callback swallows it
        raise RuntimeError("no compiled object yet")

    monkeypatch.setattr(GeneralizedAlpha, "warm_up", swallowing_warm_up)
    out = tmp_path / "swallowed.h5"
    summary = run(parse_scenario(RESUMABLE), str(out))
    assert summary.status == "interrupted" and summary.exit_code == 130
    with h5py.File(out) as f:
        assert f.attrs["status"] == "interrupted"


def test_a_signal_swallowed_during_the_time_loop_still_interrupts(tmp_path, monkeypatch):
    """The same in the time loop: a signal handled inside a weakref callback (seen in a test run:
    "Exception ignored in: WeakValueDictionary...remove ... Interrupted: SIGINT") left the run
    going to its end with exit 0.  The loop asks the guard before every block."""
    from mbsim.integrators import GeneralizedAlpha
    real = GeneralizedAlpha.advance_frames
    calls = []

    def swallowing_advance_frames(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1.0)
            except KeyboardInterrupt:
                pass  # what Python does with an exception raised in a weakref callback
        return real(self, *args, **kwargs)

    monkeypatch.setattr(GeneralizedAlpha, "advance_frames", swallowing_advance_frames)
    out = tmp_path / "swallowed.h5"
    summary = run(parse_scenario(RESUMABLE), str(out))
    assert len(calls) >= 2
    assert summary.status == "interrupted" and summary.exit_code == 130
    with h5py.File(out) as f:
        assert f.attrs["status"] == "interrupted" and f["time"][-1] < 0.6


RESUMABLE = """\
mbsim: 1
name: resumable
gravity: [0, 0, -9.81]
time: {end: 0.6, step: 2.0e-3}
integrator: {rho_inf: 0.7}
output: {interval: 1.0e-2}
bodies:
  - {name: a, mass: 1.2, inertia: [0.02, 0.03, 0.05], position: [0.3, 0, -1], angular_velocity: [1.5, -2, 3]}
  - {name: b, mass: 0.8, inertia: [0.01, 0.015, 0.012], position: [0.6, 0.4, -1.8],
     velocity: [0, -0.3, 0.2], angular_velocity: [-2.5, 1, 4]}
connectors:
  - {type: spring, bodies: [world, a], points: [[0, 0, 0], [0.3, 0.05, -0.9]], stiffness: 300, rest_length: 0.7}
  - {type: spring, bodies: [a, b], points: [[0.35, 0, -1.1], [0.6, 0.45, -1.7]], stiffness: 150}
  - {type: damper, bodies: [a, b], points: [[0.3, 0.1, -1.05], [0.55, 0.4, -1.75]], damping: 0.5}
  - {type: torsional_damper, bodies: [a, b], damping: 0.02, projection: P2, axis: [0.2, 0.3, 1]}
loads:
  - {type: torque, body: b, vector: [0, 0.05, 0.02], scale: {sine: {amplitude: 1, frequency: 1.3}}}
"""


def test_resumed_run_matches_an_uninterrupted_one(tmp_path, monkeypatch):
    """Interrupt a fixed-step run part-way (a KeyboardInterrupt from inside the time loop, as Ctrl-C
    would raise), resume it from the file: every frame equals the uninterrupted run's to 1e-12."""
    from mbsim.integrators import GeneralizedAlpha
    sc = parse_scenario(RESUMABLE)
    whole = tmp_path / "whole.h5"
    assert run(sc, str(whole)).status == "completed"

    part = tmp_path / "part.h5"
    calls = []
    import mbsim.driver
    monkeypatch.setattr(mbsim.driver, "CALL_SECONDS", 0.0)  # one frame per compiled multi-frame call
    for name in ("advance_frames", "advance", "step"):  # whichever the time loop uses
        real = getattr(GeneralizedAlpha, name)

        def interrupting(self, *args, _real=real, **kw):
            calls.append(1)
            if len(calls) == 29:
                raise KeyboardInterrupt
            return _real(self, *args, **kw)
        monkeypatch.setattr(GeneralizedAlpha, name, interrupting)
    first = run(sc, str(part))
    monkeypatch.undo()
    assert first.status == "interrupted"
    with h5py.File(part) as f:
        assert f.attrs["status"] == "interrupted" and 0 < f["time"][-1] < 0.6
    second = run(sc, str(part), resume=True)
    assert second.status == "completed", second.message
    with h5py.File(whole) as a, h5py.File(part) as b:
        assert a["time"].shape == b["time"].shape
        for k in FRAME_DATASETS:
            if k == "solver/step" or k.startswith("solver/"):
                continue
            x, y = a[k][:], b[k][:]
            scale = max(np.nanmax(np.abs(x)), 1e-300)
            assert np.allclose(x, y, rtol=1e-12, atol=1e-12 * scale, equal_nan=True), k
        assert b.attrs["status"] == "completed"
        # work counters count work: the steps after the last stored frame are done twice
        assert a.attrs["steps"] <= b.attrs["steps"] < a.attrs["steps"] + 5


def test_resume_refuses_a_different_scenario_and_a_completed_run(tmp_path, capsys):
    p = tmp_path / "s.yaml"
    p.write_text(RESUMABLE)
    out = tmp_path / "r.h5"
    assert main(["run", str(p), "-o", str(out), "--quiet", "--end", "0.1"]) == 0
    # a completed run has nothing left
    assert main(["run", str(p), "--resume", str(out)]) == 2
    assert "completed run" in capsys.readouterr().err
    # mark it unfinished, change the scenario: refused with the first difference
    with h5py.File(out, "r+") as f:
        f.attrs["status"] = "interrupted"
    q = tmp_path / "t.yaml"
    q.write_text(RESUMABLE.replace("damping: 0.5", "damping: 0.6"))
    assert main(["run", str(q), "--resume", str(out)]) == 2
    err = capsys.readouterr().err
    assert "different scenario" in err and "damping: 0.6" in err and "line 14" in err


def test_a_completed_result_is_never_overwritten_by_accident(tmp_path, capsys):
    p = tmp_path / "s.yaml"
    p.write_text(RESUMABLE)
    out = tmp_path / "r.h5"
    assert main(["run", str(p), "-o", str(out), "--quiet", "--end", "0.02"]) == 0
    before = out.read_bytes()
    assert main(["run", str(p), "-o", str(out), "--quiet", "--end", "0.04"]) == 2
    err = capsys.readouterr().err
    assert "completed run" in err and "--overwrite" in err
    assert out.read_bytes() == before
    assert main(["run", str(p), "-o", str(out), "--quiet", "--end", "0.04", "--overwrite"]) == 0
    with h5py.File(out) as f:
        assert f["time"][-1] == pytest.approx(0.04)
    other = tmp_path / "notes.txt"
    other.write_text("mine")
    assert main(["run", str(p), "-o", str(other), "--quiet"]) == 2
    assert other.read_text() == "mine"
