"""Compiled kernels (numba) for the hot loops: bodies, element building blocks, scatter, LU, step loop.

:func:`njit` is ``numba.njit`` with the project's options; without numba (an
unsupported platform) it leaves functions as plain Python, so that the same
source runs uncompiled -- as it does under ``NUMBA_DISABLE_JIT=1`` for
debugging -- slowly, with the same results.

numba's on-disk cache checks only the source file of each function, while a
compiled function embeds the code of everything it calls: after an edit of
an element law the cached step loop would still run the old law.  So the
cache files next to the compiled sources (``mbsim/kernels``, ``mbsim/elements``)
are dropped whenever any of those sources changed (:func:`_drop_stale_cache`).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

try:
    import numba as _numba
except ImportError:  # pragma: no cover - numba is a dependency; this is the escape hatch
    _numba = None
NUMBA = _numba is not None

_COMPILED_SOURCES = (Path(__file__).parent, Path(__file__).parent.parent / "elements")


def _drop_stale_cache() -> None:
    """Remove numba's cache files of mbsim when the compiled sources differ from those that made them."""
    files = sorted(p for d in _COMPILED_SOURCES for p in d.glob("*.py"))
    digest = hashlib.blake2b(digest_size=16)
    for p in files:
        digest.update(p.name.encode())
        digest.update(p.read_bytes())
    stamp = digest.hexdigest()
    marker = _COMPILED_SOURCES[0] / "__pycache__" / "mbsim-sources.stamp"
    try:
        if marker.exists() and marker.read_text() == stamp:
            return
        for d in _COMPILED_SOURCES:
            for p in (d / "__pycache__").glob("*.nb[ic]"):
                p.unlink()
        marker.parent.mkdir(exist_ok=True)
        marker.write_text(stamp)
    except OSError:  # a read-only installation: numba keeps its cache elsewhere, keyed by install time
        pass


if NUMBA:
    _drop_stale_cache()


def njit(*args, **kwargs):
    """``numba.njit`` with numpy's error model, or the identity without numba.

    ``error_model="numpy"``: a division by zero gives inf or NaN as in numpy
    (which the Newton iteration detects and reports) instead of raising
    ZeroDivisionError from inside a kernel.  ``fastmath`` stays off: the
    arithmetic is the one written, to the last bit.
    """
    if _numba is None:
        if args and callable(args[0]):
            return args[0]
        return lambda f: f
    kwargs.setdefault("error_model", "numpy")
    if args and callable(args[0]):
        return _numba.njit(**kwargs)(args[0])
    return _numba.njit(*args, **kwargs)
