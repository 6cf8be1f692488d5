"""Element kinds, one file each, and their registry.

``ELEMENTS`` lists the kinds; a kind's position in it is its kind id in the packed arrays
(:class:`mbsim.elements.base.Elements`).  Adding a kind is its file plus one line here
(docs/develop.md, "Adding an element"); a kind defined elsewhere (a test's, a plug-in's) joins with
:func:`register`.
"""
from .base import ElementKind, Elements  # noqa: F401
from .bushing import Bushing
from .damper import Damper
from .joints import KINDS as JOINTS
from .spring import Spring
from .torsional import TorsionalDamper
from .torsional_spring import TorsionalSpring, TorsionalSpringAxis
from .user_law import SpringLaw

ELEMENTS: tuple[type[ElementKind], ...] = (
    Spring,
    Damper,
    TorsionalDamper,
    Bushing,
    TorsionalSpring,
    TorsionalSpringAxis,
    SpringLaw,
) + JOINTS

BY_TYPE: dict[str, type[ElementKind]] = {k.type: k for k in ELEMENTS}

_frozen = False  # set when the compiled switch from kind id to law has been generated (mbsim.mechanics.laws)


def freeze() -> tuple:
    """The registry as the compiled engine sees it, from now on fixed in this process."""
    global _frozen
    _frozen = True
    return ELEMENTS


def register(kind: type[ElementKind]) -> None:
    """Add an element kind defined outside this package to the registry (its kind id: the next).

    Works at any time before the engine is first compiled or loaded in this process (the first
    simulation, or the first evaluation of a mechanism at a state): scenarios may have been loaded
    and numba imported before.  The kind's source joins the digest that stamps numba's cache entries,
    so the cache of a process without it is not reused.  Raises ValueError for a type name already
    taken, RuntimeError when the engine is compiled already.
    """
    global ELEMENTS
    from .. import kernels
    if _frozen:
        raise RuntimeError("element kinds must be registered before the first simulation of the process "
                           "(the compiled engine has been built from the registry as it was)")
    taken = {k.type for k in ELEMENTS} | {a for k in ELEMENTS for a in k.aliases}
    if kind.type in taken or any(a in taken for a in kind.aliases):
        raise ValueError(f"an element kind called {kind.type!r} is already registered")
    kernels.stamp_source(kind.law.py_func)
    ELEMENTS = ELEMENTS + (kind,)
    BY_TYPE[kind.type] = kind
