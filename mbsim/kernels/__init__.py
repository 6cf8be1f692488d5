"""Compiled kernels (numba) for the hot loops: connectors, bodies, scatter, tree solves.

``AVAILABLE`` says whether numba could be imported.  When it cannot (an
unsupported platform), :func:`njit` leaves functions as plain Python so the
modules still import, and the integrator uses the numpy kernels instead —
same results, slower.  ``MBSIM_ENGINE=numpy`` forces that choice.
"""
from __future__ import annotations

import os

try:
    import numba as _numba
except ImportError:  # pragma: no cover - numba is a dependency; this is the escape hatch
    _numba = None
NUMBA = _numba is not None
AVAILABLE = NUMBA and os.environ.get("MBSIM_ENGINE", "").lower() != "numpy"  # the default engine


def njit(*args, **kwargs):
    """``numba.njit`` with numpy's error model, or the identity without numba.

    ``error_model="numpy"``: a division by zero gives inf or NaN as in numpy
    (which the Newton iteration detects and reports) instead of raising
    ZeroDivisionError from inside a kernel.  ``fastmath`` stays off: results
    must match the numpy kernels.
    """
    if _numba is None:
        if args and callable(args[0]):
            return args[0]
        return lambda f: f
    kwargs.setdefault("error_model", "numpy")
    if args and callable(args[0]):
        return _numba.njit(**kwargs)(args[0])
    return _numba.njit(*args, **kwargs)
