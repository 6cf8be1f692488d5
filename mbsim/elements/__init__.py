"""Connector kinds, one file each, and the registry ``{type name: class}``."""
from .base import ConnectorKind, ElementEval  # noqa: F401
from .damper import Damper
from .spring import Spring
from .torsional import TorsionalDamper

ELEMENTS: dict[str, type[ConnectorKind]] = {
    Spring.type: Spring,
    Damper.type: Damper,
    TorsionalDamper.type: TorsionalDamper,
}
