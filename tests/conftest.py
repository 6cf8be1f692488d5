"""Test-session settings.

``MBSIM_FIRST_RUN=compile``: a run on a cold numba cache compiles in the foreground, as the tests
that give numba a cache directory of their own expect (the mutants of tests/regression run every
example there), instead of running as plain Python while a background process compiles
(mbsim.compiling).  Subprocesses inherit it.  On a warm cache the default policy (``auto``, what
users get) runs compiled too; tests/integration/test_first_run.py tests it on purpose, on a warm
cache and on a cold one (``compiling.policy`` in a thread, or the variable unset in a subprocess).

The tests that need mbsim compiled afresh in a process of its own (tests/fresh.py) have it started as soon
as they are collected.  The session runs on as many pytest-xdist workers as there are CPUs
(pyproject.toml); the processes' folders are shared by the workers (``mbsim_fresh``).  On a cold numba
cache the workers would each compile the same kernels at the same time (about a minute of two CPUs, while
the fresh process compiles too): one compiles them first, the others wait and then load them from the
cache (``pytest_runtestloop``).
"""
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests import fresh

os.environ.setdefault("MBSIM_FIRST_RUN", "compile")
# one BLAS thread per worker, as `mbsim` sets for its commands (mbsim/cli): the workers fill the CPUs
# already, and OpenBLAS's own threads make the reference solver's SVDs slower, not faster, beside them
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def pytest_configure(config):
    if hasattr(config, "workerinput"):  # an xdist worker: the controller's folder
        config.mbsim_fresh = Path(config.workerinput["mbsim_fresh"])
    else:
        config.mbsim_fresh = Path(tempfile.mkdtemp(prefix="mbsim-fresh-"))
        config.mbsim_fresh_owner = True


def pytest_configure_node(node):  # (xdist's hook, in the controller: what each worker is given)
    node.workerinput["mbsim_fresh"] = str(node.config.mbsim_fresh)


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected
def pytest_collection_modifyitems(session, config, items):
    if {item.name for item in items} & set(fresh.TESTS) and fresh.claim(config.mbsim_fresh, fresh.FOLDER):
        fresh.start_fresh(config.mbsim_fresh / fresh.FOLDER)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """Before a worker's first test: compile the kernels the tests call, one worker at a time (the first
    compiles, the next find them in numba's cache).  Only for a session of many tests on several workers:
    a few tests on a cold cache compile just what they call."""
    workers = int(getattr(session.config, "workerinput", {}).get("workercount", 1))
    if workers < 2 or len(session.items) < 100 or session.config.option.collectonly:
        return
    import fcntl
    with open(session.config.mbsim_fresh / "compile.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _compile()
        except Exception:  # noqa: BLE001 - a broken engine is for the tests to report, one by one
            pass
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _compile():
    """Every compiled entry point: a run with joints and springs (steps, frames, the joints' initial
    accelerations) and every kind's state, residual and tangent (tests/unit/test_elements.py)."""
    import warnings

    from mbsim.driver import run
    from mbsim.scenario import load_scenario
    from tests.unit.test_elements import snapshot
    sc = load_scenario(str(Path(__file__).resolve().parents[1] / "scenarios" / "joint_kinds.yaml"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(sc, write=False, end=5 * sc.time.step, keep_frames=True)
        snapshot()


def pytest_unconfigure(config):
    if getattr(config, "mbsim_fresh_owner", False):
        fresh.stop(config.mbsim_fresh)
        shutil.rmtree(config.mbsim_fresh, ignore_errors=True)


@pytest.fixture
def fresh_folder(request):
    """The folder of the fresh process (tests/fresh.py), started at collection (or now, if it was not)."""
    root = request.config.mbsim_fresh
    if fresh.claim(root, fresh.FOLDER):
        fresh.start_fresh(root / fresh.FOLDER)
    return root / fresh.FOLDER
