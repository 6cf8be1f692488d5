"""Compiled primitives (numba): how a kernel is compiled and cached, small vectors and rotations, the LUs.

:func:`njit` marks a function for numba, which compiles it at its first use
(:class:`Kernel`): importing mbsim -- to validate a scenario, or to import the
element kinds for their scenario keys -- does not import numba (~0.35 s); the
first compiled call does.  Without numba (an unsupported platform), and under
``NUMBA_DISABLE_JIT=1`` for debugging, the same source runs as plain Python,
slowly, with the same results.

numba's on-disk cache checks only the source file of each function, while a
compiled function embeds the code of everything it calls: after an edit of
an element law the cached step loop would still run the old law.  So every
mbsim kernel's cache entry is stamped with a digest of *all* the compiled
sources (``mbsim/kernels``, ``mbsim/elements``, ``mbsim/mechanics``, ``mbsim/integrators``, and the
element kinds registered from outside) as this process imported them
(:class:`_Stamped`, a numba cache locator): an edit anywhere invalidates every
entry, wherever numba keeps its cache (next to the sources, ``NUMBA_CACHE_DIR``,
the user's cache directory).

:func:`plain_python` runs the kernels as plain Python in one context only (a
thread, an asyncio task), the same source with the same arithmetic: what
:mod:`mbsim.compiling` does for a run on a cold cache, while a simulation in
another thread of the process runs compiled.  When a run does so is decided
where runs are started (:mod:`mbsim.compiling`); this module imports nothing of
mbsim outside this package.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import importlib.util
import sys
import threading
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

NUMBA = importlib.util.find_spec("numba") is not None

# the packages whose kernels call each other: an edit of any of them reaches every compiled function
_COMPILED_SOURCES = tuple(Path(__file__).parent.parent / d for d in ("kernels", "elements", "mechanics", "integrators"))
_ON_NUMBA: list[Callable[[], None]] = []  # run once numba is imported (overload registrations)
_ready = False
_preparing = False
_lock = threading.RLock()  # numba's preparation: once, by whichever thread asks first

# Whether the kernels called in this context run as plain Python: a context variable, so that each thread
# (each asyncio task, each contextvars.Context) has its own and a run can choose for itself
# (mbsim.compiling: a run on a cold cache).  Set it with plain_python() or, for the duration of a with
# block that resets it, PLAIN.set().
PLAIN: contextvars.ContextVar[bool] = contextvars.ContextVar("mbsim_plain_python", default=False)


class Kernel:
    """A function that numba compiles at its first use.

    Called from Python, it calls the compiled function (:attr:`dispatcher`), or, where :data:`PLAIN` is
    set (:func:`plain_python`), the plain function (:attr:`py_func`, run as :func:`_plain_twin`);
    referenced from another kernel, numba types it as that function, so kernels call each other
    directly in compiled code, as their plain twins do in plain Python.
    """

    def __init__(self, func, options: dict):
        self.py_func = func
        self.options = options
        self._dispatcher = None
        self._target = self._first_call  # what __call__ calls, compiled
        self._plain = None  # what __call__ calls, plain: py_func's twin (_plain_twin), made at the first such call
        self.__name__, self.__qualname__ = func.__name__, func.__qualname__
        self.__module__, self.__doc__, self.__wrapped__ = func.__module__, func.__doc__, func

    @property
    def dispatcher(self):
        """numba's dispatcher of this function (the function itself without numba)."""
        if self._dispatcher is None:
            _prepare()
            if NUMBA:
                import numba
                from numba.core.compiler_lock import global_compiler_lock
                # numba's own lock (which a compilation in another thread holds when it types this kernel):
                # one dispatcher per kernel, whichever thread asks first
                with global_compiler_lock:
                    if self._dispatcher is None:
                        self._dispatcher = numba.njit(**self.options)(self.py_func)
            else:  # pragma: no cover - numba is a dependency; this is the escape hatch
                self._dispatcher = self.py_func
        return self._dispatcher

    def _first_call(self, *args):
        self._target = self.dispatcher
        return self._target(*args)

    def __call__(self, *args):
        if PLAIN.get():
            return (self._plain or _plain_twin(self))(*args)
        return self._target(*args)

    def __repr__(self):
        return f"<kernel {self.__module__}.{self.__qualname__}>"


_plain_spaces: dict[int, tuple] = {}  # id(a kernel's module globals) -> (those globals, their copy for plain twins)


def _plain_twin(k: Kernel):
    """The plain function of kernel ``k``, as :meth:`Kernel.__call__` runs it under :data:`PLAIN`:
    ``py_func``'s code over a copy of its module's globals in which every kernel is such a twin too.

    So a plain kernel calls the kernels it names directly, as plain functions (through the Kernel
    objects a call costs about as much as a small kernel's arithmetic: a plain run of
    scenarios/pendulum.yaml took 6 % longer), while the modules' own globals stay as they are: the
    kernels that numba, compiling in another thread, must see.  The copy is taken at the module's first
    plain call (the globals of mbsim's compiled sources are constants, functions and modules); what a
    kernel reaches through a module or a class (``engine.evaluate``, an element kind's law) is a Kernel
    object, read at the call.
    """
    with _lock:
        if k._plain is None:
            f = k.py_func
            g = f.__globals__
            entry = _plain_spaces.get(id(g))
            if entry is not None and entry[0] is g:
                k._plain = _twin_function(f, entry[1])
            else:
                space = dict(g)
                _plain_spaces[id(g)] = (g, space)  # before it is filled: kernels that call each other
                k._plain = _twin_function(f, space)
                for name, value in list(g.items()):
                    if isinstance(value, Kernel):
                        space[name] = value._plain or _plain_twin(value)
                    elif value is unsigned:
                        space[name] = _plain_unsigned
        return k._plain


def _plain_unsigned(i):
    """:data:`unsigned` in plain twins: the index as it is (a cast to numpy.uint64 costs plain Python a
    numpy scalar per array access and buys nothing there; the indices it is for are non-negative)."""
    return i


def _twin_function(f, space: dict):
    import types
    twin = types.FunctionType(f.__code__, space, f.__name__, f.__defaults__, f.__closure__)
    twin.__kwdefaults__, twin.__qualname__, twin.__module__ = f.__kwdefaults__, f.__qualname__, f.__module__
    twin.__doc__ = f.__doc__
    return twin


@contextlib.contextmanager
def plain_python(on: bool = True) -> Iterator[None]:
    """Within the block, in this context only (this thread, this asyncio task), every kernel runs as
    plain Python (``on``) or compiled; other threads keep their own choice.  The same source, the same
    arithmetic: the same results."""
    token = PLAIN.set(on)
    try:
        yield
    finally:
        PLAIN.reset(token)


def on_numba(register: Callable[[], None]) -> Callable[[], None]:
    """Run ``register`` once numba is imported (before the first compilation), e.g. an overload."""
    with _lock:
        _ON_NUMBA.append(register)
        if _ready and NUMBA:
            register()
    return register


def _prepare() -> None:
    global _ready, _preparing
    if _ready:
        return
    with _lock:
        if _ready or _preparing:  # done by another thread meanwhile; or a registration asks again
            return
        _preparing = True
        try:
            if NUMBA:
                from numba.core.typing.typeof import typeof
                from numba.extending import typeof_impl

                @typeof_impl.register(Kernel)
                def _typeof_kernel(val, c):
                    return typeof(val.dispatcher, c.purpose)

                impl = _cache_impl()
                if not any(c is _StampedLocator for c in impl._locator_classes):
                    impl._locator_classes = [_StampedLocator, *impl._locator_classes]
                for register in _ON_NUMBA:  # (one that an import here adds is run too)
                    register()
        finally:
            _preparing = False
        _ready = True  # last: another thread that finds it set finds numba prepared


def _cache_impl():
    """numba's cache implementation class, which lists the cache locators (renamed across versions)."""
    from numba.core import caching
    return getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")


def _sources_digest() -> str:
    """Digest of every compiled source of mbsim, as read now."""
    digest = hashlib.blake2b(digest_size=16)
    for p in sorted(p for d in _COMPILED_SOURCES for p in d.glob("*.py")):
        digest.update(p.name.encode())
        digest.update(p.read_bytes())
    return digest.hexdigest()


_SOURCES = _sources_digest()  # at import: the sources this process runs, even if they change later


def sources_digest() -> str:
    """The digest of the compiled sources this process runs (with the element kinds registered from
    outside), which stamps every cache entry of mbsim's kernels."""
    return _SOURCES


def prepare() -> None:
    """Import numba and prepare it for mbsim's kernels (done by the first compiled call otherwise)."""
    _prepare()


def stamp_source(func) -> None:
    """Add the source file of ``func`` (an element kind registered from outside mbsim) to the
    digest that stamps every cache entry."""
    global _SOURCES
    import inspect
    digest = hashlib.blake2b(_SOURCES.encode(), digest_size=16)
    digest.update(Path(inspect.getsourcefile(func)).read_bytes())
    _SOURCES = digest.hexdigest()
_OURS = tuple(str(d.resolve()) for d in _COMPILED_SOURCES)


class _Stamped:
    """The cache locator numba would use for an mbsim kernel, with :data:`_SOURCES` in its stamp."""

    def __init__(self, locator):
        self._locator = locator

    def __getattr__(self, name):  # everything numba asks of its locators but the stamp: numba's own answer
        return getattr(self._locator, name)

    def get_source_stamp(self):
        return (self._locator.get_source_stamp(), _SOURCES)


class _StampedLocator:
    """First in numba's list of cache locators: takes the functions of mbsim's compiled sources."""

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            resolved = str(Path(py_file).resolve())
        except (OSError, TypeError):
            return None
        if not resolved.startswith(_OURS):
            return None
        for other in _cache_impl()._locator_classes:
            if other is cls:
                continue
            locator = other.from_function(py_func, py_file)
            if locator is not None:
                return _Stamped(locator)
        return None


# Indices of flat storage, or gathered by index, cast to unsigned (``unsigned(i)``): numba tests every
# signed index for a negative value to wrap around (a compare and a branch per access, which also keeps
# loops from being vectorized) and skips that for an unsigned one -- 40 % of an 11×11 LU, 30 % of a block
# solve.  Only for indices known to be non-negative (no bounds check follows either way); plain Python
# runs the same source (a numpy integer is an index too).
unsigned = np.uint64


def njit(*args, allocates: bool = False, **kwargs):
    """Mark a function for numba (``numba.njit`` at its first use, see :class:`Kernel`) with numpy's
    error model, and without reference counting unless it ``allocates``.

    ``error_model="numpy"``: a division by zero gives inf or NaN as in numpy
    (which the Newton iteration detects and reports) instead of raising
    ZeroDivisionError from inside a kernel.  ``fastmath`` stays off: the
    arithmetic is the one written, to the last bit.

    ``allocates=False`` (the default): the function creates no array and returns none; it only reads
    and writes the arrays it is given, which its caller keeps alive.  numba then compiles it without its
    runtime's reference counting (``_nrt=False``): with it, every array reachable from the arguments
    (the arrays in a tuple of arrays too) costs two atomic updates per call, one at entry and one at
    exit, which the step loop's calls paid some thousand times per step -- 57 % of a one-joint step's
    time (perf, scenario of benchmarks/joint_chain.py at N = 1: 95 000 steps/s with, 238 000 without).
    An allocation in such a function is refused when it compiles ("NRT required but not enabled").
    ``allocates=True`` for the few that set up work arrays (:func:`mbsim.integrators.step.run`).
    """
    kwargs.setdefault("error_model", "numpy")
    kwargs["_nrt"] = bool(allocates)  # explicit: numba would take the setting of the kernel that calls it
    if args and callable(args[0]):
        return Kernel(args[0], kwargs)
    return lambda f: Kernel(f, kwargs)


if "numba" in sys.modules:  # numba already in use: mbsim's kernels can be referenced from any jitted code
    _prepare()
