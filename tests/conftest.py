"""Test-session settings.

``MBSIM_FIRST_RUN=compile``: a run on a cold numba cache compiles in the foreground, as the tests
that give numba a cache directory of their own expect (the mutants of tests/regression run every
example there), instead of running as plain Python while a background process compiles
(mbsim.compiling).  Subprocesses inherit it.  On a warm cache the default policy (``auto``, what
users get) runs compiled too; tests/integration/test_first_run.py tests it on purpose, on a warm
cache and on a cold one (``compiling.policy`` in a thread, or the variable unset in a subprocess).

The tests that need mbsim compiled afresh in a process of its own (tests/fresh.py) have it started as soon
as they are collected.  The session runs on as many pytest-xdist workers as there are CPUs
(pyproject.toml); the processes' folders are shared by the workers (``mbsim_fresh``).
"""
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests import fresh

os.environ.setdefault("MBSIM_FIRST_RUN", "compile")


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
