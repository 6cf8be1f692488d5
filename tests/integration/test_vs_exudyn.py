"""Smoke test of benchmarks/vs_exudyn.py (mbsim against Exudyn on the N-body chain).

Exudyn is not a dependency of mbsim: it lives in its own virtual environment.
The comparison runs only when one is configured — ``$MBSIM_EXUDYN_PYTHON`` or
``.venv-exudyn/bin/python`` in the repository — and is skipped otherwise.
Figures are not checked, only that the table comes out and that the two
codes' final states agree (the same physics, both O(dt²) schemes).
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "vs_exudyn.py"


def _exudyn_python():
    cand = os.environ.get("MBSIM_EXUDYN_PYTHON") or str(ROOT / ".venv-exudyn" / "bin" / "python")
    return cand if os.path.exists(cand) else None


EXUDYN_PYTHON = _exudyn_python()
needs_exudyn = pytest.mark.skipif(
    EXUDYN_PYTHON is None,
    reason="no Exudyn interpreter: set MBSIM_EXUDYN_PYTHON or create .venv-exudyn "
           "(python -m venv .venv-exudyn && .venv-exudyn/bin/pip install 'exudyn==1.13.*' numpy)")


def _run(*args, timeout=300):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


@needs_exudyn
def test_vs_exudyn_prints_the_table_and_the_codes_agree():
    r = _run("--n", "2", "--steps", "400", "--repeats", "1", "--exudyn-python", EXUDYN_PYTHON)  # Exudyn takes < 0.5 ms for 20: a wall of 0.000
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(re.match(r"\s*N\s+steps\s+\|\s+mbsim s\s+steps/s\s+it/step\s+\|\s+Exudyn s", ln) for ln in lines)
    rows = [ln for ln in lines if re.match(r"\s*2\s+400\s+\|", ln)]
    assert len(rows) == 1, r.stdout
    f = [x for x in rows[0].replace("|", " ").split()]
    mb_wall, mb_rate, mb_it = float(f[2]), float(f[3]), float(f[4])
    ex_wall, ex_rate, ex_it = float(f[5]), float(f[6]), float(f[7])
    ratio, dx, dangle = float(f[9]), float(f[10]), float(f[11])
    assert mb_wall > 0 and mb_rate > 0 and mb_it >= 1
    assert ex_wall > 0 and ex_rate > 0 and ex_it >= 1
    assert ratio > 0
    # 20 steps of 1e-3 s: the two schemes differ by ~1e-9 m (O(dt^2)); a different model would not.
    assert dx < 1e-6 and dangle < 1e-6


@needs_exudyn
def test_vs_exudyn_json():
    r = _run("--n", "2", "--steps", "20", "--repeats", "1", "--exudyn-python", EXUDYN_PYTHON,
             "--exudyn-newton", "full", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["info"]["exudyn"].startswith("1.")
    (res,) = doc["results"]
    assert res["n"] == 2 and res["steps"] == 20
    assert res["exudyn"]["settings"]["useModifiedNewton"] is False
    assert res["mbsim"]["wall_s"] > 0 and res["exudyn"]["wall_s"] > 0 and res["ratio"] > 0
    assert res["agreement"]["position_m"] < 1e-6 and res["agreement"]["rotation_rad"] < 1e-6


@needs_exudyn
def test_vs_exudyn_process_mode_times_whole_processes():
    r = _run("--process", "--n", "2", "--steps", "20", "--repeats", "1", "--exudyn-python", EXUDYN_PYTHON)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^\s*N\s+steps\s+\|\s+mbsim s\s+\|\s+Exudyn s\s+\|\s+mbsim/Exudyn", r.stdout, re.M), r.stdout
    (row,) = [ln for ln in r.stdout.splitlines() if re.match(r"\s*2\s+20\s+\|", ln)]
    mb, ex, ratio = (float(x) for x in row.split("|")[1:])
    assert mb > 0 and ex > 0 and ratio > 0


def test_vs_exudyn_without_an_interpreter_says_how_to_get_one(tmp_path):
    r = _run("--n", "2", "--steps", "5", "--exudyn-python", str(tmp_path / "no-such-python"), timeout=120)
    assert r.returncode == 2
    assert "python -m venv .venv-exudyn" in r.stderr and "exudyn==1.13.*" in r.stderr
