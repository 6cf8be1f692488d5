"""The benchmark scripts still run (figures are not checked, only that a table comes out)."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_chain_benchmark_prints_a_table():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "chain.py"), "--n", "1", "3", "--steps", "5",
                        "--no-write"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(re.match(r"\s*N\s+unknowns\s+linear solver\s+steps\s+.*steps/s\s+it/step", ln) for ln in lines)
    rows = [ln.split() for ln in lines if re.match(r"\s*\d+\s+\d+\s+\D", ln)]
    assert [(row[0], row[1]) for row in rows] == [("1", "6"), ("3", "18")]
    for row in rows:
        steps, wall, rate, per_step = int(row[-5]), float(row[-3]), float(row[-2]), float(row[-1])
        assert steps == 5 and wall > 0 and rate > 0 and per_step >= 1


def test_chain_benchmark_writes_and_profiles():
    """Writing (the default) with the calibrated step count (the probe run writes the same file first),
    and --profile."""
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "chain.py"), "--n", "2", "--seconds", "0.2",
                        "--profile"], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "writing HDF5" in r.stdout
    assert re.search(r"^\s*2\s+12\s+\D", r.stdout, re.M), r.stdout


def test_closed_chain_benchmark_is_not_a_forest():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "chain.py"), "--closed", "--n", "4", "--steps", "5",
                        "--no-write"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^\s*4\s+24\s+dense LU", r.stdout, re.M), r.stdout


def test_startup_benchmark_prints_its_figures():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "startup.py"), "--repeat", "1", "--no-cold"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    for name in ("import numpy, numba, h5py", "mbsim info RESULT", "mbsim validate pendulum.yaml",
                 "mbsim run, 1 body, 1000 steps", "run / import"):
        assert re.search(rf"^{re.escape(name)}\s+\d+\.\d+", r.stdout, re.M), r.stdout


def test_sweep_benchmark_prints_its_table():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sweep.py"), "--cases", "2", "--n", "2", "--steps", "10",
                        "--workers", "1"], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    for name in ("plain loop, 1 process", "dask, 1 worker"):
        assert re.search(rf"^{re.escape(name)}\s+\d+\.\d+\s+\d+\.\d+", r.stdout, re.M), r.stdout
    assert "Dask overhead per case" in r.stdout


def test_old_vs_new_alternates_two_checkouts():
    """The same checkout as old and new: a row per benchmark and N, with its ratio."""
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "old_vs_new.py"), str(ROOT), str(ROOT), "--n", "1",
                        "--repeats", "2", "--seconds", "0.1", "--steps-scale", "0.001"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines() if re.match(r"(chain|joint chain)\s+1\s", ln)]
    assert len(rows) == 2, r.stdout
    for row in rows:
        first = 3 if row[0] == "joint" else 2  # after the benchmark's name and N
        old, new, ratio = (float(x) for x in row[first:first + 3])
        assert old > 0 and new > 0 and ratio == pytest.approx(new / old, rel=2e-3)


def test_modes_benchmark_runs_and_agrees_with_the_joint_angle_reference(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "modes.py"), "--sizes", "4", "--count", "3",
                        "--repeats", "1", "--no-exudyn", "--json"], capture_output=True, text=True, timeout=600,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    import json
    row = json.loads(r.stdout)["results"][0]
    assert "skipped" not in row["mbsim"], row["mbsim"]
    np.testing.assert_allclose(row["mbsim"]["frequency"], row["reference"], rtol=1e-10)
    assert row["mbsim"]["process_s"] > 0


def test_adaptive_benchmark_prints_its_table():
    # (loads: a model type the error-control tests compile anyway)
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "adaptive.py"), "--only", "loads",
                        "--tols", "1e-4", "1e-5", "--end", "0.3", "--halvings", "1"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^loads\s+\d\.\d\d\s+\d+\.\d\s+\d+\.\d\d$", r.stdout, re.M), r.stdout
    assert r.stdout.count("fixed steps for that error") == 2


def test_step_oracle_benchmark_measures_windows_that_add_up_and_runs_steps_no_worse_than_uniform():
    """benchmarks/step_oracle.py: the windows' errors add up to the uniform run's (the superposition the
    linear model stands on), the signs-ignored bound is at least 1 (Hölder's inequality), and the best
    steps, run (and refined once), need no more steps than the uniform ones at equal error — on
    mass_spring_damper, whose largest error is mid-run (0.77 s): after it the steps can grow (measured
    1.09)."""
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "step_oracle.py"), "--only", "mass_spring_damper",
                        "--windows", "8", "--refine", "1"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert float(re.search(r"the windows' sum, largest ([0-9.]+) of it", out).group(1)) < 0.05, out
    assert float(re.search(r"bound uniform steps / best steps = ([0-9.]+)", out).group(1)) >= 1.0 - 1e-3, out
    ran = float(re.search(r"best steps, run: .* at equal error ([0-9.]+)", out).group(1))
    refined = float(re.search(r"refined, the best run: .* at equal error ([0-9.]+)", out).group(1))
    assert 1.03 < ran < 1.2 and refined >= ran, out
