"""The fresh process of the test session (tests/fresh.py): mbsim compiled afresh, once, for two tests.

Like a plug-in's user, it imports numba before mbsim and reads a scenario before it registers the kind
written outside mbsim (tests/plugin); it wraps the built-in kinds' laws in the regression mutants
(tests/regression/test_regression.py, inert until a case switches one on); then the first compilation
builds the engine with both.  It prints one JSON line per part: {"plugin": …}, then {"mutants": …}.
"""
import json
import sys
from pathlib import Path

import numba  # noqa: F401  (first: a plug-in's process may have compiled its own code before mbsim)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim.scenario import load_scenario  # noqa: E402

load_scenario(str(ROOT / "scenarios" / "pendulum.yaml"))  # a scenario read before the kind is registered

from tests.plugin import check  # noqa: E402
from tests.regression import test_regression as tr  # noqa: E402

check.register_kind()
cases = json.loads(sys.argv[1])
switch = tr.prepare_mutants({kind for kind, _, _ in cases})
try:
    print(json.dumps({"plugin": check.checks()}), flush=True)
except Exception as exc:  # the mutants still run; the plug-in's test reports this
    import traceback
    print(json.dumps({"plugin": {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}}),
          flush=True)
print(json.dumps({"mutants": tr.run_mutants(cases, switch)}), flush=True)
