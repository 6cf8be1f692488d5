"""Element kinds, one file each, and their registry.

``ELEMENTS`` lists the kinds; a kind's position in it is its kind id in the
packed arrays (:class:`mbsim.elements.base.Elements`).  Adding a kind is its
file plus one line here (docs/develop.md, "Adding an element").
"""
from .base import FORCE, LENGTH, MOMENT, N_OUT, POTENTIAL, POWER, ElementEval, ElementKind, Elements  # noqa: F401
from .damper import Damper
from .spring import Spring
from .torsional import TorsionalDamper

ELEMENTS: tuple[type[ElementKind], ...] = (
    Spring,
    Damper,
    TorsionalDamper,
)

BY_TYPE: dict[str, type[ElementKind]] = {k.type: k for k in ELEMENTS}
