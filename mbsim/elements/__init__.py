"""Element kinds, one file each, and their registry.

``ELEMENTS`` lists the kinds; a kind's position in it is its kind id in the
packed arrays (:class:`mbsim.elements.base.Elements`).  Adding a kind is its
file plus one line here (docs/develop.md, "Adding an element"); a kind
defined elsewhere (a test's, a plug-in's) joins with :func:`register`.
"""
from .base import FORCE, LENGTH, MOMENT, N_OUT, POTENTIAL, POWER, ElementEval, ElementKind, Elements  # noqa: F401
from .damper import Damper
from .joints import KINDS as JOINTS
from .spring import Spring
from .torsional import TorsionalDamper

ELEMENTS: tuple[type[ElementKind], ...] = (
    Spring,
    Damper,
    TorsionalDamper,
) + JOINTS

BY_TYPE: dict[str, type[ElementKind]] = {k.type: k for k in ELEMENTS}


def register(kind: type[ElementKind]) -> None:
    """Add an element kind defined outside this package to the registry (its kind id: the next).

    Must run before the first compiled call of the process (the compiled switch from kind id
    to law is generated once, from the registry as it is then); the kind's source joins the
    digest that stamps numba's cache entries, so the cache of a process without it is not
    reused.  Raises ValueError for a type name already taken, RuntimeError when too late.
    """
    global ELEMENTS
    from .. import kernels
    if kernels.compiled_switch_built():
        raise RuntimeError("element kinds must be registered before the first simulation of the process")
    if kind.type in BY_TYPE or any(kind.type in k.aliases for k in ELEMENTS):
        raise ValueError(f"an element kind called {kind.type!r} is already registered")
    kernels.stamp_source(kind.law.py_func)
    ELEMENTS = ELEMENTS + (kind,)
    BY_TYPE[kind.type] = kind
