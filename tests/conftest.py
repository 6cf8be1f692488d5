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


# tests that compile every kernel afresh in a process of their own: (test name, config attribute, starter)
_FRESH = (("test_the_suite_fails_on_a_wrong_model", "mbsim_mutants", "tests.regression.test_regression:start_mutants"),
          ("test_a_force_element_written_outside_mbsim", "mbsim_plugin", "tests.integration.test_plugin:start_plugin"))


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected
def pytest_collection_modifyitems(session, config, items):
    """The mutation test of tests/regression and the plug-in test of tests/integration compile every kernel
    afresh in processes of their own: start them now, so that they compile while the other tests run."""
    import importlib
    import tempfile
    names = {item.name for item in items}
    config.mbsim_fresh = []
    for test, attr, starter in _FRESH:
        if test in names:
            module, func = starter.split(":")
            folder = tempfile.TemporaryDirectory(prefix=f"{attr.replace('_', '-')}-")
            setattr(config, attr, getattr(importlib.import_module(module), func)(folder.name))
            config.mbsim_fresh.append((attr, folder))


def pytest_unconfigure(config):
    for attr, folder in getattr(config, "mbsim_fresh", ()):
        proc = getattr(config, attr, None)
        if proc is not None and proc.poll() is None:  # the test was not run (deselected, -x, Ctrl-C)
            proc.kill()
            proc.wait()
        folder.cleanup()
