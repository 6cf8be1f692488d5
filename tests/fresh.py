"""The process that compiles mbsim afresh, started early in a test session and waited for by its tests.

Three tests need every kernel compiled in a process of their own, with a numba cache of its own (about a
minute on 2 cores): the regression mutants (tests/regression/test_regression.py), the kind written
outside mbsim (tests/integration/test_plugin.py) and two runs in two threads, one of them on the cold
cache (tests/integration/test_first_run.py).  One process, tests/fresh_process.py, serves all three:
tests/conftest.py starts it as soon as either test is collected, so that it compiles while the other tests
run; with pytest-xdist the first worker to collect it starts it (``claim``), and whichever worker runs a
test waits for it through files: the process's stdout, stderr and, when it has ended, its exit status.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

TESTS = ("test_the_suite_fails_on_a_wrong_model", "test_a_force_element_written_outside_mbsim",
         "test_two_simulations_in_two_threads_one_on_a_cold_cache_both_give_the_compiled_answer")
FOLDER = "fresh"

_WRAPPER = ("import subprocess, sys; "
            "out, err, status = sys.argv[1:4]; "
            "r = subprocess.run(sys.argv[4:], stdout=open(out, 'w'), stderr=open(err, 'w')).returncode; "
            "open(status + '.tmp', 'w').write(str(r)); __import__('os').replace(status + '.tmp', status)")


def claim(root: Path, name: str) -> bool:
    """Whether this process is the first to ask for folder ``name`` under ``root`` (then it starts it)."""
    try:
        (root / name).mkdir(parents=True)
        return True
    except FileExistsError:
        return False


def start_fresh(folder) -> subprocess.Popen:
    """Start tests/fresh_process.py in ``folder`` (its numba cache there too)."""
    import json
    from tests.regression.test_regression import _mutations
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root), NUMBA_CACHE_DIR=str(Path(folder) / "numba-cache"),
               MBSIM_FIRST_RUN="compile", MPLBACKEND="Agg")
    return start(folder, [sys.executable, str(root / "tests" / "fresh_process.py"), json.dumps(_mutations())], env)


def start(folder, argv, env) -> subprocess.Popen:
    """Run ``argv`` in the background with ``env``, its output and exit status into ``folder``."""
    folder = Path(folder)
    proc = subprocess.Popen([sys.executable, "-c", _WRAPPER, str(folder / "stdout"), str(folder / "stderr"),
                             str(folder / "status"), *argv], env=env, cwd=Path(__file__).resolve().parents[1])
    (folder / "pid").write_text(str(proc.pid))
    return proc


def wait(folder, timeout: float = 900.0) -> tuple[int, str, str]:
    """The exit status, stdout and stderr of the process started in ``folder``, once it has ended."""
    folder = Path(folder)
    end = time.monotonic() + timeout
    while not (folder / "status").exists():
        if time.monotonic() > end:
            raise TimeoutError(f"the process in {folder} did not end within {timeout:g} s")
        time.sleep(0.5)
    return (int((folder / "status").read_text()), (folder / "stdout").read_text(),
            (folder / "stderr").read_text())


def result(folder, part: str):
    """What the fresh process printed for ``part`` (``"plugin"`` or ``"mutants"``), once it has ended."""
    import json
    status, out, err = wait(folder)
    assert status == 0, err[-3000:]
    for line in out.splitlines():
        if line.startswith("{"):
            got = json.loads(line)
            if part in got:
                return got[part]
    raise AssertionError(f"no {part!r} in the fresh process's output: {out[-2000:]} {err[-2000:]}")


def stop(root: Path) -> None:
    """Kill the processes started under ``root`` that are still running (a test deselected, -x, Ctrl-C)."""
    for pid_file in Path(root).glob("*/pid"):
        if not (pid_file.parent / "status").exists():
            try:
                os.kill(int(pid_file.read_text()), 9)
            except (OSError, ValueError):
                pass
