"""Test-session settings.

``MBSIM_FIRST_RUN=compile``: a run on a cold numba cache compiles in the foreground, as the tests
that give numba a cache directory of their own expect (the mutants of tests/regression run every
example there), instead of running as plain Python while a background process compiles
(mbsim.compiling).  Subprocesses inherit it.  On a warm cache the default policy (``auto``, what
users get) runs compiled too; tests/integration/test_first_run.py tests it on purpose, on a warm
cache and on a cold one (``compiling.policy`` in a thread, or the variable unset in a subprocess).
"""
import os

import pytest

os.environ.setdefault("MBSIM_FIRST_RUN", "compile")


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected
def pytest_collection_modifyitems(session, config, items):
    """The mutation test of tests/regression compiles every kernel afresh in a process of its own:
    start that process now, so that it compiles on the second core while the other tests run."""
    if any(item.name == "test_the_suite_fails_on_a_wrong_model" for item in items):
        import tempfile
        from tests.regression.test_regression import start_mutants
        config.mbsim_mutants_dir = tempfile.TemporaryDirectory(prefix="mbsim-mutants-")
        config.mbsim_mutants = start_mutants(config.mbsim_mutants_dir.name)


def pytest_unconfigure(config):
    proc = getattr(config, "mbsim_mutants", None)
    if proc is not None and proc.poll() is None:  # the test was not run (deselected, -x, Ctrl-C)
        proc.kill()
        proc.wait()
    if getattr(config, "mbsim_mutants_dir", None) is not None:
        config.mbsim_mutants_dir.cleanup()
