"""Compiled kernels (numba) for the hot loops: bodies, element building blocks, scatter, LU, step loop.

:func:`njit` marks a function for numba, which compiles it at its first use
(:class:`Kernel`): importing mbsim -- to validate a scenario, or to import the
element kinds for their scenario keys -- does not import numba (~0.35 s); the
first compiled call does.  Without numba (an unsupported platform), and under
``NUMBA_DISABLE_JIT=1`` for debugging, the same source runs as plain Python,
slowly, with the same results.

numba's on-disk cache checks only the source file of each function, while a
compiled function embeds the code of everything it calls: after an edit of
an element law the cached step loop would still run the old law.  So the
cache files next to the compiled sources (``mbsim/kernels``, ``mbsim/elements``)
are dropped whenever any of those sources changed (:func:`_drop_stale_cache`),
before the first compilation of a process.
"""
from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import Callable

NUMBA = importlib.util.find_spec("numba") is not None

_COMPILED_SOURCES = (Path(__file__).parent, Path(__file__).parent.parent / "elements")
_ON_NUMBA: list[Callable[[], None]] = []  # run once numba is imported (overload registrations)
_ready = False


class Kernel:
    """A function that numba compiles at its first use.

    Called from Python, it calls the compiled function (:attr:`dispatcher`);
    referenced from another kernel, numba types it as that function, so
    kernels call each other directly in compiled code.
    """

    def __init__(self, func, options: dict):
        self.py_func = func
        self.options = options
        self._dispatcher = None
        self.__name__, self.__qualname__ = func.__name__, func.__qualname__
        self.__module__, self.__doc__, self.__wrapped__ = func.__module__, func.__doc__, func

    @property
    def dispatcher(self):
        """numba's dispatcher of this function (the function itself without numba)."""
        if self._dispatcher is None:
            _prepare()
            if NUMBA:
                import numba
                self._dispatcher = numba.njit(**self.options)(self.py_func)
            else:  # pragma: no cover - numba is a dependency; this is the escape hatch
                self._dispatcher = self.py_func
        return self._dispatcher

    def __call__(self, *args):
        return self.dispatcher(*args)

    def __repr__(self):
        return f"<kernel {self.__module__}.{self.__qualname__}>"


def on_numba(register: Callable[[], None]) -> Callable[[], None]:
    """Run ``register`` once numba is imported (before the first compilation), e.g. an overload."""
    _ON_NUMBA.append(register)
    if _ready and NUMBA:
        register()
    return register


def _prepare() -> None:
    global _ready
    if _ready:
        return
    _ready = True
    if not NUMBA:  # pragma: no cover
        return
    from numba.core.typing.typeof import typeof
    from numba.extending import typeof_impl

    @typeof_impl.register(Kernel)
    def _typeof_kernel(val, c):
        return typeof(val.dispatcher, c.purpose)

    _drop_stale_cache()
    for register in _ON_NUMBA:
        register()


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


def njit(*args, **kwargs):
    """Mark a function for numba (``numba.njit`` at its first use, see :class:`Kernel`) with numpy's
    error model.

    ``error_model="numpy"``: a division by zero gives inf or NaN as in numpy
    (which the Newton iteration detects and reports) instead of raising
    ZeroDivisionError from inside a kernel.  ``fastmath`` stays off: the
    arithmetic is the one written, to the last bit.
    """
    kwargs.setdefault("error_model", "numpy")
    if args and callable(args[0]):
        return Kernel(args[0], kwargs)
    return lambda f: Kernel(f, kwargs)
