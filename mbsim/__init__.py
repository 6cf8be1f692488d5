"""mbsim: implicit multibody dynamics of rigid bodies with springs, dampers and torsional dampers.

From Python (:mod:`mbsim.api`)::

    import mbsim
    res = mbsim.simulate("scenarios/pendulum.yaml", end=0.1)   # or a dict, or a Scenario
    res.body("bob").position                                    # (T, 3) m

``mbsim.load("outputs/pendulum.h5")`` opens a result file the same way.
The names below are imported on first use, so that ``import mbsim.scenario``
(or the command line) does not pull in the whole package.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY = {
    "simulate": "api", "load": "api", "Result": "api", "SimulationError": "api", "OverrideError": "api",
    "UnknownNameError": "api", "ScenarioError": "scenario", "OutputFileError": "driver",
    "ResultFileError": "io.reader", "ResourceError": "resources", "JointError": "mechanics.joints",
    "sweep": "study", "StudyError": "study",
    "statics": "analyses", "modes": "analyses", "linearize": "analyses", "AnalysisError": "analyses",
    "StaticsFailed": "analyses", "NoEquilibrium": "analyses",
}

__all__ = ["__version__", *_LAZY]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ does it
    from .analyses import AnalysisError, NoEquilibrium, StaticsFailed, linearize, modes, statics  # noqa: F401
    from .api import OverrideError, Result, SimulationError, UnknownNameError, load, simulate  # noqa: F401
    from .driver import OutputFileError  # noqa: F401
    from .io.reader import ResultFileError  # noqa: F401
    from .mechanics.joints import JointError  # noqa: F401
    from .resources import ResourceError  # noqa: F401
    from .scenario import ScenarioError  # noqa: F401
    from .study import StudyError, sweep  # noqa: F401


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mbsim' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
