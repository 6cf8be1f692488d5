"""The ``mbsim`` command line end to end: messages, exit codes and the files it leaves.

Most tests call :func:`mbsim.cli.main` in-process (fast, output through
capsys); a few start ``python -m mbsim`` as a real process, the only way to
check the module entry point and signal handling.  Reference values come from
the scenario texts themselves (time grids, free flight x = x0 + v t) or from
the independent OUTPUT.md checker in ``/work/shared/tools/check_output.py``.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

import mbsim
from mbsim.cli import main
from mbsim.io.reader import read_summary, read_trajectory
from tests import contract

ROOT = Path(__file__).resolve().parents[2]
# One body on a spring and a dashpot under gravity: 10 steps, a frame every 2.
HANGING = """\
mbsim: 1
name: hanging
gravity: [0, 0, -9.81]
time: {end: 0.05, step: 0.005}
output: {interval: 0.01}
bodies:
  - name: bob
    mass: 1.0
    inertia: [0.01, 0.02, 0.03]
    position: [0, 0, -1]
    angular_velocity: [0, 0, 2.0]
connectors:
  - {name: hanger, type: spring, bodies: [world, bob], points: [[0, 0, 0], [0, 0, -1]],
     stiffness: 200.0, rest_length: 0.9}
  - {name: shock, type: damper, bodies: [world, bob], points: [[0, 0, 0], [0, 0, -1]], damping: 1.5}
  - {name: swivel, type: torsional_damper, bodies: [world, bob], damping: 0.05, projection: P1}
"""

# A force-free puck flies at 1 m/s through the anchor of a spring with rest
# length 1.0625 (stiffness 0, so the flight is exactly x = 1.0625 - t, in
# binary-exact numbers).  With rho_inf = 1 the connector is evaluated at the
# step's midpoint, which for step 9 (t = 1 -> 1.125) is t = 1.0625: the spring
# has zero length there, its direction is undefined, and the step must fail.
COLLAPSE = """\
mbsim: 1
name: collapse
time: {end: 2.0, step: 0.125}
integrator: {rho_inf: 1.0}
bodies:
  - {name: puck, mass: 1.0, inertia: [0.1, 0.1, 0.1], position: [1.0625, 0, 0], velocity: [-1, 0, 0]}
connectors:
  - {name: tether, type: spring, bodies: [world, puck], points: [[0, 0, 0], [1.0625, 0, 0]], stiffness: 0.0}
"""

# Three problems, one per line 5, 7 and 10.
INVALID = """\
mbsim: 1
time: {end: 1.0, step: 0.01}
bodies:
  - name: a
    mass: -1.0
    inertia: [1, 1, 1]
    velocty: [0, 0, 0]
connectors:
  - type: spring
    bodies: [a, nowhere]
    points: [[0, 0, 0], [1, 0, 0]]
    stiffness: 10
"""


def write(tmp_path, text, name="scenario.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def line_of(text, needle):
    """1-based line of the first line containing ``needle`` (the report must point there)."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.fixture(scope="module")
def check_output():
    return contract.check_output()


def python_m(*args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "mbsim", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=60, **kw)


# --------------------------------------------------------------------------
# version and help
# --------------------------------------------------------------------------
def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"mbsim {mbsim.__version__}"


def test_help_documents_every_exit_code_and_an_example_per_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for code in ("0", "1", "2", "3", "4", "130"):
        assert re.search(rf"^\s+{code}\s+\S", out, re.M), f"exit code {code} not documented"
    for cmd in ("validate", "run", "info"):
        assert re.search(rf"^\s+mbsim {cmd} \S", out, re.M), f"no example for {cmd}"


def test_no_command_is_a_usage_error(capsys):
    assert main([]) == 2
    assert "choose a command" in capsys.readouterr().err


# --------------------------------------------------------------------------
# validate
# --------------------------------------------------------------------------
def test_validate_ok(tmp_path, capsys):
    p = write(tmp_path, HANGING)
    assert main(["validate", str(p)]) == 0
    out = capsys.readouterr().out.strip()
    assert out == f"{p}: valid (1 body, 3 connectors, 0 loads; t = 0 … 0.05 s, Δt = 0.005 s)"


def test_validate_invalid_lists_every_problem_with_its_line(tmp_path, capsys):
    p = write(tmp_path, INVALID)
    assert main(["validate", str(p)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    err = cap.err
    assert f"{p}: 3 problems" in err
    assert f"bodies[0].mass (line {line_of(INVALID, 'mass:')})" in err
    assert f"(line {line_of(INVALID, 'velocty')}): unknown key 'velocty'" in err
    assert "did you mean 'velocity'" in err
    assert f"connectors[0].bodies[1] (line {line_of(INVALID, 'nowhere')})" in err
    assert "fix the problems" in err


def test_validate_missing_file(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err


# --------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------
def test_run_ok_writes_a_conforming_file_and_prints_a_summary(tmp_path, capsys, check_output):
    p = write(tmp_path, HANGING)
    out = tmp_path / "res" / "hanging.h5"
    assert main(["run", str(p), "-o", str(out), "--no-progress"]) == 0
    assert out.is_file()
    assert check_output(str(out), str(p)) == []
    info = read_summary(out)
    assert info["status"] == "completed"
    # 10 steps of 0.005 s, a frame every 0.01 s plus frame 0
    np.testing.assert_allclose(read_trajectory(out)["time"], np.linspace(0, 0.05, 6), atol=1e-12)
    text = capsys.readouterr().out
    assert text.startswith("running hanging")
    assert "completed: hanging, t = 0 … 0.05 s" in text
    assert re.search(r"steps\s+10 \(Δt = 0\.005 s\)", text)
    iters = int(info["counters"]["newton_iterations"])
    assert re.search(rf"Newton\s+{iters} iterations, {iters / 10:.2f} per step", text)
    assert re.search(r"wall time\s+\S+ s \(\S+ steps/s\)", text)
    assert re.search(r"energy drift\s+\S+ J \(\S+ relative\)", text)
    assert f"6 frames → {out}" in text


def test_run_quiet_prints_nothing_on_success(tmp_path, capsys):
    p = write(tmp_path, HANGING)
    assert main(["run", str(p), "-o", str(tmp_path / "q.h5"), "--quiet"]) == 0
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == ""


def test_run_invalid_scenario_writes_no_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = write(tmp_path, INVALID)
    out = tmp_path / "should-not-exist.h5"
    assert main(["run", str(p), "-o", str(out)]) == 2
    assert main(["run", str(p)]) == 2  # and not at the default place either
    err = capsys.readouterr().err
    assert f"{p}: 3 problems" in err and "no file was written" in err
    assert not out.exists()
    assert not (tmp_path / "outputs").exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["scenario.yaml"]


def test_run_output_is_a_directory(tmp_path, capsys):
    p = write(tmp_path, HANGING)
    assert main(["run", str(p), "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "-o" in err


def test_run_output_below_a_file(tmp_path, capsys):
    p = write(tmp_path, HANGING)
    (tmp_path / "plain").write_text("")
    assert main(["run", str(p), "-o", str(tmp_path / "plain" / "x.h5")]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a directory" in err and "choose another path with -o" in err


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "soon"])
def test_run_end_must_be_positive(tmp_path, capsys, bad):
    p = write(tmp_path, HANGING)
    assert main(["run", str(p), "-o", str(tmp_path / "x.h5"), f"--end={bad}"]) == 2
    assert "--end" in capsys.readouterr().err
    assert not (tmp_path / "x.h5").exists()


def test_run_end_shortens_the_run(tmp_path, capsys):
    p = write(tmp_path, HANGING)
    out = tmp_path / "short.h5"
    assert main(["run", str(p), "-o", str(out), "--end", "0.02"]) == 0
    info = read_summary(out)
    assert info["status"] == "completed"
    assert info["t_end"] == pytest.approx(0.02, abs=1e-12)
    assert int(info["counters"]["steps"]) == 4
    np.testing.assert_allclose(read_trajectory(out)["time"], [0, 0.01, 0.02], atol=1e-12)
    assert "t = 0 … 0.02 s" in capsys.readouterr().out


def test_output_option_overrides_scenario_file_and_default(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = write(tmp_path, HANGING.replace("output: {interval: 0.01}",
                                        "output: {interval: 0.01, file: from-scenario.h5}"))
    assert main(["run", str(p), "-o", "from-option.h5", "--quiet"]) == 0
    assert (tmp_path / "from-option.h5").is_file()
    assert not (tmp_path / "from-scenario.h5").exists()
    assert main(["run", str(p), "--quiet"]) == 0
    assert (tmp_path / "from-scenario.h5").is_file()
    q = write(tmp_path, HANGING, "plain.yaml")
    assert main(["run", str(q), "--quiet"]) == 0
    assert (tmp_path / "outputs" / "hanging.h5").is_file()  # outputs/<name>.h5


def test_solver_failure_keeps_every_frame_before_it(tmp_path, capsys, check_output):
    p = write(tmp_path, COLLAPSE)
    out = tmp_path / "collapse.h5"
    assert main(["run", str(p), "-o", str(out)]) == 3
    cap = capsys.readouterr()
    info = read_summary(out)
    assert info["status"] == "failed"
    msg = info["message"]
    assert "step 9 " in msg and "from t = 1 s" in msg and "tether" in msg
    assert check_output(str(out), str(p)) == []
    data = read_trajectory(out)
    t = data["time"]
    np.testing.assert_array_equal(t, 0.125 * np.arange(9))  # every frame up to the failure
    lengths = {k: len(v) for k, v in data.items()
               if k.split("/")[0] in ("time", "bodies", "connectors", "energy", "momentum", "solver")
               and isinstance(v, np.ndarray) and v.ndim >= 1 and k not in ("bodies/mass", "bodies/fixed")}
    assert len(lengths) == 19 and set(lengths.values()) == {9}, lengths
    np.testing.assert_allclose(data["bodies/position"][:, 0, 0], 1.0625 - t, atol=1e-12)  # free flight
    assert int(info["counters"]["steps"]) == 8
    # the message and what to try go to stderr, nothing is claimed on stdout
    assert "FAILED: collapse" in cap.err and msg in cap.err
    assert "what to try" in cap.err and "rest_length: 0" in cap.err
    assert "completed" not in cap.out


def test_newton_failure_names_the_body_and_suggests_fixes(tmp_path, capsys):
    # 1 g on a 1e9 N/m spring (period 6e-6 s) stepped at 0.1 s with 3 Newton iterations.
    p = write(tmp_path, """\
        mbsim: 1
        name: stiff
        time: {end: 1.0, step: 0.1}
        gravity: [0, 0, -9.81]
        integrator: {tangent: seed, newton: {max_iterations: 3}}
        bodies:
          - {name: b, mass: 0.001, inertia: [1e-6, 1e-6, 1e-6], position: [1, 0, 0],
             velocity: [0, 3, 1], angular_velocity: [5, 1, 2]}
        connectors:
          - {name: rod, type: spring, bodies: [world, b], points: [[0, 0, 0], [1, 0.1, 0]],
             stiffness: 1e9, rest_length: 0.5}
        """)
    out = tmp_path / "stiff.h5"
    assert main(["run", str(p), "-o", str(out), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "step 1 from t = 0 s" in err and "body 'b'" in err
    assert "smaller time.step" in err
    assert "spring 'rod'" in err and "tangent: consistent" in err and "max_iterations (now 3)" in err
    assert read_summary(out)["status"] == "failed" and read_summary(out)["frames"] == 1


def test_internal_error_keeps_the_file_and_hides_the_traceback(tmp_path, capsys, monkeypatch):
    from mbsim.integrators.generalized_alpha import GeneralizedAlpha
    real = GeneralizedAlpha.step
    calls = []

    def broken(self, s, dt):
        calls.append(dt)
        if len(calls) == 1 + 5:  # the warm-up before the time loop takes one step, then the run's 5th
            raise ZeroDivisionError("injected fault")
        return real(self, s, dt)

    monkeypatch.setattr(GeneralizedAlpha, "step", broken)
    monkeypatch.setattr(GeneralizedAlpha, "can_advance", False)  # one step at a time, through step()
    p = write(tmp_path, HANGING)
    out = tmp_path / "bug.h5"
    assert main(["run", str(p), "-o", str(out)]) == 4
    err = capsys.readouterr().err
    assert "internal error: ZeroDivisionError: injected fault, please report" in err
    assert "Traceback" not in err and "--debug" in err
    info = read_summary(out)
    assert info["status"] == "failed" and "injected fault" in info["message"]
    assert info["frames"] == 3  # frames at t = 0, 0.01, 0.02 (steps 2 and 4)
    assert "keeps its 3 frames" in err

    calls.clear()
    assert main(["run", str(p), "-o", str(out), "--debug", "--overwrite"]) == 4
    assert "Traceback" in capsys.readouterr().err


def test_a_slow_start_is_announced_and_kept_out_of_the_wall_time(tmp_path, capsys, monkeypatch):
    """Compiling the kernels (the first run on a machine) happens before the time loop: the CLI says
    so while it lasts, and the summary reports it apart from the run's wall time."""
    import mbsim.cli.simulate
    import mbsim.driver
    from mbsim.integrators.generalized_alpha import GeneralizedAlpha
    from mbsim.scenario import load_scenario
    real = GeneralizedAlpha.warm_up

    def slow(self, *args):
        time.sleep(0.5)  # as numba compiling would
        return real(self, *args)

    monkeypatch.setattr(GeneralizedAlpha, "warm_up", slow)
    monkeypatch.setattr(mbsim.driver, "COMPILE_NOTICE_S", 0.05)
    monkeypatch.setattr(mbsim.cli.simulate, "COMPILE_REPORT_S", 0.4)
    p = write(tmp_path, HANGING)
    assert main(["run", str(p), "-o", str(tmp_path / "slow.h5"), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "compiling the numerical kernels for this machine" in err
    m = re.search(r"wall time +([0-9.e+-]+) s .*; before it ([0-9.]+) s compiling the kernels", out)
    assert m, out
    assert float(m.group(2)) >= 0.5 > float(m.group(1))
    # the API reports it too, and --quiet says nothing
    summary = mbsim.driver.run(load_scenario(p), write=False)
    assert summary.compile_time_s >= 0.5 > summary.wall_time_s
    assert main(["run", str(p), "-o", str(tmp_path / "quiet.h5"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------
# info
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def result(tmp_path_factory):
    d = tmp_path_factory.mktemp("info")
    p = write(d, HANGING)
    out = d / "hanging.h5"
    assert main(["run", str(p), "-o", str(out), "--quiet"]) == 0
    return out


def test_info_text(result, capsys):
    assert main(["info", str(result)]) == 0
    text = capsys.readouterr().out
    h = read_summary(result)
    assert re.search(r"scenario\s+hanging", text)
    assert re.search(r"status\s+completed", text)
    assert re.search(r"frames\s+6, t = 0 … 0\.05 s", text)
    assert re.search(r"bodies\s+1\n", text)
    assert re.search(r"connectors\s+3: 1 damper, 1 spring, 1 torsional_damper", text)
    assert re.search(r"ρ∞ = 0\.9 .*tangent consistent", text)
    assert re.search(rf"counters\s+10 steps, {h['counters']['newton_iterations']} Newton iterations", text)
    assert "energy drift" in text


def test_info_json(result, capsys):
    assert main(["info", str(result), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["scenario_name"] == "hanging" and d["status"] == "completed"
    assert d["frames"] == 6 and d["t_end"] == pytest.approx(0.05)
    assert d["bodies"] == 1 and d["fixed_bodies"] == 0
    assert d["connectors"] == {"damper": 1, "spring": 1, "torsional_damper": 1}
    assert d["integrator"]["rho_inf"] == 0.9 and d["integrator"]["tangent"] == "consistent"
    assert d["counters"]["steps"] == 10 and isinstance(d["counters"]["newton_iterations"], int)
    assert isinstance(d["energy_drift_J"], float)


def test_info_on_files_that_are_not_results(tmp_path, capsys):
    yaml_file = write(tmp_path, HANGING)
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = [1.0]
    for path, words in [(yaml_file, "cannot open as HDF5"), (other, "not an mbsim trajectory"),
                        (tmp_path / "missing.h5", "no such file"), (tmp_path, "is a directory")]:
        assert main(["info", str(path)]) == 2
        cap = capsys.readouterr()
        assert cap.out == ""
        assert words in cap.err and "written by `mbsim run`" in cap.err


# --------------------------------------------------------------------------
# as a real process
# --------------------------------------------------------------------------
def test_python_dash_m(tmp_path, check_output):
    r = python_m("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"mbsim {mbsim.__version__}"
    p = write(tmp_path, HANGING)
    out = tmp_path / "m.h5"
    r = python_m("run", p, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "completed: hanging" in r.stdout
    assert "it/step" not in r.stderr  # stderr is not a terminal: no progress bar
    assert check_output(str(out), str(p)) == []
    r = python_m("info", tmp_path / "nothing.h5")
    assert r.returncode == 2 and "no such file" in r.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_marks_the_file_interrupted(tmp_path, sig):
    # 2e8 steps: minutes even for a warm, fast machine (1000 s was done in under 2.5 s on CI's)
    p = write(tmp_path, HANGING.replace("end: 0.05", "end: 1.0e6").replace("interval: 0.01", "interval: 10.0"))
    out = tmp_path / "long.h5"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "mbsim", "run", str(p), "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().startswith("running hanging")  # scenario loaded
        deadline = time.monotonic() + 60
        while not out.exists() and time.monotonic() < deadline:  # the result file is created ...
            time.sleep(0.05)
        time.sleep(2.5)  # ... and the time loop has run for a while (the kernels load after the file is made)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    info = read_summary(out)
    assert info["status"] == "interrupted"
    assert info["frames"] >= 1


# --------------------------------------------------------------------------
# layers: reading a result never loads the step loop
# --------------------------------------------------------------------------

READERS = r"""
import sys
from mbsim.cli import main
import mbsim

for args in sys.argv[1:]:
    assert main(args.split()) == 0, args
r = mbsim.load(sys.argv[1].split()[1])
r.body(r.bodies[0]).position, r.energy.drift, r.energy.balance, r.to_xarray()
heavy = sorted(m for m in sys.modules if m == "numba" or m.startswith(("mbsim.integrators", "mbsim.mechanics",
                                                                      "mbsim.driver", "mbsim.model.model")))
print("IMPORTED:" + " ".join(heavy), file=sys.stderr)
"""


def test_reading_and_post_processing_never_import_numba_or_the_step_loop(tmp_path):
    """`mbsim info/validate/compare/plot/animate/export` and `mbsim.load` read files through
    numpy and h5py only: numba, the integrator, the model and the element engine stay unimported
    (`mbsim info` took 0.67 s when it imported them, ~0.2 s now).  `validate` reads the element
    registry (each kind's file holds its scenario keys), whose compiled laws cost nothing until called."""
    scen = write(tmp_path, HANGING)
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    assert main(["run", str(scen), "-o", str(a), "--quiet"]) == 0
    assert main(["run", str(scen), "-o", str(b), "--quiet"]) == 0
    commands = [f"info {a}", f"validate {scen}", f"compare {a} {b}", f"export {a} --csv {tmp_path / 'csv'} --quiet",
                f"plot {a} -o {tmp_path / 'p.png'}", f"animate {a} -o {tmp_path / 'p.gif'} --every 50"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, "-c", READERS, *commands], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    imported = done.stderr.strip().splitlines()[-1]
    assert imported == "IMPORTED:", f"imported by reading a result: {imported}"


def test_a_run_leaves_scipy_and_numbas_blas_usable(tmp_path):
    """numba probes for BLAS by importing scipy.linalg (0.03-0.1 s of every run's start).  mbsim once
    answered the probe by faking sys.modules["scipy.linalg"] = None, and for as long as it was set an
    import of scipy.linalg in any other thread failed; issue 27 forbids the trick.  A run leaves SciPy's
    linear algebra importable and a user's compiled np.dot of matrices working in the same process."""
    scen = write(tmp_path, HANGING)
    code = (f"import sys; from mbsim.cli import main; assert main(['run', {str(scen)!r}, '-o', "
            f"{str(tmp_path / 'r.h5')!r}, '--quiet']) == 0; import scipy.linalg; "
            "print(sys.modules['scipy.linalg'] is not None, scipy.linalg.det([[2.0, 0], [0, 3]])); "
            "import numpy as np, numba; print(numba.njit(lambda a: np.dot(a, a))(np.eye(2))[1, 1])")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "6.0", "1.0"]
