"""Test-session settings.

``MBSIM_FIRST_RUN=compile``: a run on a cold numba cache compiles in the foreground, as the tests
that give numba a cache directory of their own expect, instead of running interpreted while a
background process compiles (mbsim.kernels.firstrun; tests/integration/test_first_run.py tests
that path on purpose).  Subprocesses inherit it.
"""
import os

os.environ.setdefault("MBSIM_FIRST_RUN", "compile")
