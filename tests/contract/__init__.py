"""The OUTPUT.md contract checker, found once for every test that needs it.

``check_output.py`` here is a verbatim copy of ``../shared/tools/check_output.py``
(the project's contract tool, maintained beside the specifications) so that
the conformance tests run, and can fail, on any checkout -- also where the
shared directory is absent, as in a bare clone.  Where the shared tool is
present it is used instead, and ``tests/integration/test_output.py`` fails
if the copy has drifted from it.  ``MBSIM_CHECK_OUTPUT`` overrides both.
"""
from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COPY = Path(__file__).resolve().with_name("check_output.py")
SHARED = REPO.parent / "shared" / "tools" / "check_output.py"


def checker_path() -> Path:
    """The checker to use: ``$MBSIM_CHECK_OUTPUT``, else the shared tool, else the copy."""
    if os.environ.get("MBSIM_CHECK_OUTPUT"):
        return Path(os.environ["MBSIM_CHECK_OUTPUT"])
    return SHARED if SHARED.is_file() else COPY


@functools.lru_cache(maxsize=None)
def _load(path: str):
    spec = importlib.util.spec_from_file_location("mbsim_check_output", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.check


def check_output():
    """The checker's ``check(result_path, scenario_path=None) -> list[str]`` (empty when the file conforms)."""
    return _load(str(checker_path()))
