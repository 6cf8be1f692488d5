"""``mbsim sweep`` on real Dask clusters: results against closed forms, failures, lost workers,
Ctrl-C and --resume, a separate ``dask scheduler`` + ``dask worker``, and the example studies.

One LocalCluster of 2 worker processes is shared by the module (as ``mbsim sweep`` would start
it); its workers carry the test hook of :mod:`mbsim.study.worker` that makes a worker process
exit when it is given the case file ``die_here/case_00003.h5``, and the scheduler declares a case
lost after its second worker death (``allowed-failures: 1``, 3 by default) to keep the test short.
"""
from __future__ import annotations

import csv
import json
import logging
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import mbsim
from mbsim.cli import main
from mbsim.study import engine, load_study, study_from_dict, table
from mbsim.study.worker import TEST_EXIT_ENV

from ._examples_util import HEADER_PARTS, REPO, study_paths
from .test_stepping import STIFF  # a stiff spinning pendulum whose Newton iteration fails at Δt = 0.05 s

dask = pytest.importorskip("dask")  # the test extra installs it; a plain `pip install .` has no sweep
distributed = pytest.importorskip("distributed")

MSD = REPO / "scenarios" / "mass_spring_damper.yaml"
DIE = os.path.join("die_here", "case_00003.h5")



@pytest.fixture(scope="module")
def client():
    with dask.config.set({"distributed.scheduler.allowed-failures": 1, **engine.WORKER_CONFIG}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=":0", silence_logs=logging.ERROR,
                                           env={**engine.WORKER_ENVIRON, TEST_EXIT_ENV: DIE})
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _grid_study():
    """2 masses × 3 dampings of the underdamped block; frames every step, 1.1 s."""
    return {"scenario": str(MSD),
            "parameters": {"bodies[underdamped].mass": [1.0, 2.0],
                           "connectors[damper-under].damping": [1.0, 2.0, 3.0],
                           "time.end": [1.1], "output.interval": [0.001]},
            "design": "grid",
            "metrics": {"peak": {"quantity": "bodies[underdamped].position[0]", "reduce": "max",
                                 "window": [0.45, 1.1]},
                        "peak_time": {"quantity": "bodies[underdamped].position[0]", "reduce": "time_of_max",
                                      "window": [0.45, 1.1]}}}


def test_a_2x3_grid_matches_the_damped_oscillators_closed_form(client, tmp_path):
    """The first maximum after release of m u'' + c u' + k u = 0, u(0) = x0, u'(0) = 0, is at one
    damped period Td = 2π/ωd with u = x0 exp(-ζ ω0 Td) -- per case, from its own m and c."""
    ds = mbsim.sweep(_grid_study(), client=client, output=tmp_path / "grid")
    assert ds["peak"].dims[:2] == ("bodies[underdamped].mass", "connectors[damper-under].damping")
    assert ds["peak"].attrs["units"] == "m" and ds["peak_time"].attrs["units"] == "s"
    assert (ds["status"].values == "ok").all() and ds.attrs["cases_run"] == 6
    k, x0, rest = 100.0, 0.2, 1.0
    for m in (1.0, 2.0):
        for c in (1.0, 2.0, 3.0):
            cell = ds.sel({"bodies[underdamped].mass": m, "connectors[damper-under].damping": c}).squeeze()
            w0, zeta = math.sqrt(k / m), c / (2 * math.sqrt(k * m))
            td = 2 * math.pi / (w0 * math.sqrt(1 - zeta**2))
            # 2e-4 m: frames are 1 ms apart; the six peaks lie 0.006 ... 0.07 m apart, so a swapped
            # parameter or a sign error in the damping is far outside it
            assert float(cell["peak"]) - rest == pytest.approx(x0 * math.exp(-zeta * w0 * td), abs=2e-4)
            assert float(cell["peak_time"]) == pytest.approx(td, abs=1.5e-3)
    # the table on disk says the same
    rows = list(csv.DictReader(open(tmp_path / "grid" / "summary.csv")))
    assert len(rows) == 6 and rows[0]["bodies[underdamped].mass"] == "1.0" and "peak [m]" in rows[0]
    assert sorted(p.name for p in (tmp_path / "grid").glob("case_*.h5")) == [f"case_{i:05d}.h5" for i in range(6)]
    case = mbsim.load(tmp_path / "grid" / "case_00004.h5")  # mass 2, damping 2: written as mbsim run writes
    assert case.status == "completed" and case.attrs["time_end"] == 1.1
    assert "damping: 2.0" in case.scenario_text.replace('"damping": 2.0', "damping: 2.0")
    # mbsim plot draws it: a heat map per metric
    assert main(["plot", str(tmp_path / "grid"), "-o", str(tmp_path / "grid.svg"), "--quiet"]) == 0
    assert (tmp_path / "grid.svg").stat().st_size > 1000


def test_a_failed_case_and_a_killed_worker_are_rows_and_the_study_completes(client, tmp_path):
    (tmp_path / "stiff.yaml").write_text(STIFF % "")
    study = {"scenario": str(tmp_path / "stiff.yaml"),
             "parameters": {"time.end": [0.2], "time.step": [0.001, 0.002, 0.05, 0.004]},
             "design": "grid",
             "metrics": {"spin": {"quantity": "bodies[bob].angular_velocity", "reduce": "final"}}}
    ds = mbsim.sweep(study, client=client, output=tmp_path / "die_here")
    status = list(ds["status"].values.ravel())
    assert status == ["ok", "ok", "failed", "lost"]
    message = list(ds["message"].values.ravel())
    assert "no convergence in 4 Newton iterations" in message[2]
    # lost after its second worker death (allowed-failures: 1), and again when run once more alone
    assert "worker process died each time it ran, also alone on the cluster" in message[3]
    spin = ds["spin"].values.ravel()
    assert np.isfinite(spin[:2]).all() and np.isnan(spin[2:]).all()
    assert mbsim.load(tmp_path / "die_here" / "case_00002.h5").status == "failed"  # kept, as mbsim run keeps it
    # the nanny restarts the dead workers: the cluster runs the next study
    client.wait_for_workers(2, timeout=30)


def test_a_latin_hypercube_study_is_a_table_along_case_with_the_parameters_as_coordinates(client, tmp_path):
    study = {"scenario": str(MSD),
             "parameters": {"connectors[damper-under].damping": {"uniform": [1.0, 4.0]},
                            "bodies[underdamped].mass": [1.0, 2.0], "time.end": [0.3]},
             "design": {"samples": 4, "method": "lhs", "seed": 11},
             "metrics": {"speed": {"quantity": "bodies[underdamped].velocity", "reduce": "max"}}}
    ds = mbsim.sweep(study, client=client, output=tmp_path / "lhs")
    assert ds["speed"].dims == ("case",) and list(ds["case"].values) == [0, 1, 2, 3]
    assert ds.attrs["design"] == "samples" and ds.attrs["seed"] == 11 and ds.attrs["method"] == "lhs"
    damping = ds["connectors[damper-under].damping"].values
    assert sorted(np.floor((damping - 1.0) / 3.0 * 4).astype(int)) == [0, 1, 2, 3]  # one per stratum
    assert sorted(ds["bodies[underdamped].mass"].values) == [1.0, 1.0, 2.0, 2.0]
    assert (ds["status"].values == "ok").all() and (ds["speed"].values > 0).all()
    # the same seed, the same cases
    again = study_from_dict(study)
    assert [c.values[0] for c in again.cases] == list(damping)
    assert main(["plot", str(tmp_path / "lhs"), "--quiet"]) == 0 and (tmp_path / "lhs" / "summary.png").exists()


@pytest.mark.parametrize("path", study_paths(), ids=lambda p: p.stem)
def test_example_study_runs(client, path, tmp_path):
    """Every example study runs; its header says what it models, shows, what to look at and how long
    it runs, as the example scenarios' do."""
    header = "\n".join(line for line in path.read_text().splitlines() if line.startswith("#"))
    assert all(part in header for part in HEADER_PARTS)
    study = load_study(path)
    ds = mbsim.sweep(study, client=client, output=tmp_path / path.stem)
    assert (ds["status"].values == "ok").all()
    if path.stem == "mass_spring_damper_study":
        # the header's closed form: the first swing's lowest point x0 exp(-π ζ / √(1 − ζ²)) below rest
        c = ds["connectors[damper-under].damping"].values
        zeta = c / (2 * math.sqrt(100.0 * 1.0))
        low = ds["lowest_position"].values.ravel()
        under = zeta < 0.9
        expected = 1.0 - 0.2 * np.exp(-np.pi * zeta[under] / np.sqrt(1 - zeta[under] ** 2))
        assert np.abs(low[under] - expected).max() < 1e-3  # frames every 10 ms: sampling the minimum


def _wait(predicate, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _completed(folder: Path) -> int:
    from mbsim.io.reader import result_status
    return sum(result_status(str(p)) == "completed" for p in folder.glob("case_*.h5"))


def _default_sigint():
    # a shell running the tests in the background ignores SIGINT, and a child keeps an ignored signal
    # ignored: give the command Ctrl-C's usual meaning, as at a terminal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli(*args, env=None, **kw):
    return subprocess.Popen([sys.executable, "-m", "mbsim", *args], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint, **kw)


def test_ctrl_c_keeps_what_finished_and_resume_runs_only_the_rest(tmp_path):
    study = tmp_path / "slow.yaml"
    study.write_text(f"scenario: {MSD}\nparameters:\n  connectors[damper-under].damping: {{linspace: [1, 6, 6]}}\n"
                     f"  time.step: [1.0e-4]\n  time.end: [2.0]\ndesign: grid\n"
                     f"metrics:\n  low: {{quantity: 'bodies[underdamped].position[0]', reduce: min}}\n")
    out = tmp_path / "out"
    proc = _cli("sweep", str(study), "-o", str(out), "--workers", "1", "--json")
    try:
        _wait(lambda: _completed(out) >= 2 or proc.poll() is not None, 60, "two finished cases")
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    first = json.loads(stdout)
    # (the row of a case comes back a moment after its file is complete)
    assert first["interrupted"] and first["ok"] >= 1 and first["cancelled"] >= 1, first
    rows = list(csv.DictReader(open(out / "summary.csv")))
    assert len(rows) == 6 and {r["status"] for r in rows} <= {"ok", "cancelled"}
    kept = {r["case"] for r in rows if r["status"] == "ok"}
    stamps = {c: (out / f"case_{int(c):05d}.h5").stat().st_mtime_ns for c in kept}
    done = _completed(out)  # the kept ones, and the one running at the stop if its worker finished it
    assert done >= len(kept)

    proc = _cli("sweep", str(study), "-o", str(out), "--workers", "1", "--json", "--resume")
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    second = json.loads(stdout)
    assert second["ok"] == 6 and second["reused"] == done and second["run"] == 6 - done
    assert {c: (out / f"case_{int(c):05d}.h5").stat().st_mtime_ns for c in kept} == stamps  # not rewritten
    # without --resume the folder is refused, whatever it holds
    assert main(["sweep", str(study), "-o", str(out), "--quiet"]) == 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_separate_scheduler_and_workers_give_the_in_process_clusters_table(tmp_path):
    study = tmp_path / "small.yaml"
    study.write_text(f"scenario: {MSD}\nparameters:\n  connectors[damper-under].damping: [1, 3]\n"
                     f"  connectors[spring-under].stiffness: [80, 120]\n  time.end: [0.5]\ndesign: grid\n"
                     f"metrics:\n  low: {{quantity: 'bodies[underdamped].position[0]', reduce: min}}\n"
                     f"  drag: {{quantity: 'connectors[damper-under].force', reduce: rms}}\n")
    # the in-process cluster: one worker thread in this process
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as c:
        mbsim.sweep(study, client=c, output=tmp_path / "inproc")
    # `dask scheduler` and `dask worker` as separate processes on 127.0.0.1, reached through DASK_SCHEDULER_ADDRESS
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False", "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen([sys.executable, "-m", "dask", "worker", address, "--nworkers", "1",
                                       "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with distributed.Client(address, timeout="30s") as c:
            c.wait_for_workers(1, timeout=60)
        proc = _cli("sweep", str(study), "-o", str(tmp_path / "remote"), "--json",
                    env={**os.environ, "DASK_SCHEDULER_ADDRESS": address})
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr
        assert "the cluster at tcp://127.0.0.1" in stderr or json.loads(stdout)["ok"] == 4
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()

    def csv_rows(folder):
        rows = list(csv.DictReader(open(tmp_path / folder / "summary.csv")))
        for r in rows:
            assert r.pop("wall_time_s")
        return rows

    local, remote = csv_rows("inproc"), csv_rows("remote")
    assert len(local) == 4 and local == remote
    a, b = (table.read(str(tmp_path / f)) for f in ("inproc", "remote"))
    assert a.drop_vars("wall_time_s").equals(b.drop_vars("wall_time_s"))
    assert set(a.data_vars) == {"case", "status", "message", "steps", "newton_iterations", "wall_time_s", "low", "drag"}


def test_without_dask_the_command_says_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setattr(engine, "_importable", lambda name: name != "distributed")
    assert main(["sweep", str(study_paths()[0])]) == 2
    err = capsys.readouterr().err
    assert "pip install 'mbsim[sweep]'" in err and "pip install '.[sweep]'" in err and "Traceback" not in err
    # validating needs no Dask
    assert main(["sweep", str(study_paths()[0]), "--check", "--quiet"]) == 0


def test_a_sweep_over_a_user_laws_parameter_finds_the_law_beside_its_scenario(client, tmp_path):
    """scenarios/tendon.yaml's tendon stiffness swept: the cases (made from values, without a file) import
    the law from the base scenario's directory, on Dask's worker processes."""
    study = {"scenario": str(REPO / "scenarios" / "tendon.yaml"),
             "parameters": {"connectors[biceps].parameters.k": [30000.0, 60000.0], "time.end": [0.5]},
             "design": "grid",
             "metrics": {"pull": {"quantity": "connectors[biceps].force[2]", "reduce": "min"}}}
    ds = mbsim.sweep(study, client=client, output=tmp_path / "tendon")
    assert (ds["status"].values == "ok").all(), ds["message"].values
    # the tendon pulls the world (A) down: by at most 67 N at its own stiffness (the example's header), by
    # about twice that from the same initial stretch at twice the stiffness
    pull = ds["pull"].values.ravel()
    assert -70.0 < pull[0] < -40.0 and pull[1] < 1.5 * pull[0], pull
