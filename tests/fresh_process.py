"""The fresh process of the test session (tests/fresh.py): mbsim compiled afresh, once, for three tests.

Like a plug-in's user, it imports numba before mbsim and reads a scenario before it registers the kind
written outside mbsim (tests/plugin); it wraps the built-in kinds' laws in the regression mutants
(tests/regression/test_regression.py, inert until a case switches one on); then the first compilation,
in a thread beside a run in plain Python on the cold cache (tests/integration/test_first_run.py,
``two_threads``), builds the engine with both.  It prints one JSON line per part: {"two_threads": …},
{"plugin": …}, then {"mutants": …}.
"""
import json
import os
import sys
import traceback
from pathlib import Path

import numba  # noqa: F401  (first: a plug-in's process may have compiled its own code before mbsim)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim.scenario import load_scenario  # noqa: E402

load_scenario(str(ROOT / "scenarios" / "pendulum.yaml"))  # a scenario read before the kind is registered

from tests.integration import test_first_run as tf  # noqa: E402
from tests.plugin import check  # noqa: E402
from tests.regression import test_regression as tr  # noqa: E402


def part(name, compute):
    """Print ``{name: compute()}``, or the error it raised (the next parts still run; its test reports it)."""
    try:
        got = compute()
    except Exception as exc:  # noqa: BLE001
        got = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    print(json.dumps({name: got}), flush=True)


check.register_kind()
cases = json.loads(sys.argv[1])
switch = tr.prepare_mutants({kind for kind, _, _ in cases})
part("two_threads", lambda: tf.two_threads(Path(os.environ["NUMBA_CACHE_DIR"]).parent))
part("plugin", check.checks)
print(json.dumps({"mutants": tr.run_mutants(cases, switch)}), flush=True)
