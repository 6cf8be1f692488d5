"""The one switch from kind id to law (MuJoCo's ``switch`` over constraint types).

:func:`law` runs the law of kind ``kind`` on its instances ``lo … hi−1``.  As plain Python (what runs
uncompiled, e.g. under ``NUMBA_DISABLE_JIT=1`` or on a first run while numba compiles) it indexes the
registry; for numba it is generated from the registry as an ``if kind == 0: … elif kind == 1: …``
chain of direct calls (:func:`_compiled_switch`), so that registering a kind is all it takes.  The
registry is frozen when the switch is generated (:func:`mbsim.elements.freeze`).
"""
from __future__ import annotations

from .. import elements as registry  # ELEMENTS read at use: register() may extend it first
from ..kernels import on_numba

# The arguments every law takes, in order (the contract of docs/develop.md; a test checks it).
LAW_ARGUMENTS = ("lo", "hi", "p", "x", "t", "want", "y", "dy")


def law(kind, lo, hi, p, x, t, want, y, dy):
    """The law of kind id ``kind`` on instances ``lo … hi−1``; returns the first instance it finds
    undefined, or −1."""
    return registry.ELEMENTS[kind].law(lo, hi, p, x, t, want, y, dy)


def _compiled_switch(kind, lo, hi, p, x, t, want, y, dy):
    """numba's implementation of :func:`law`: a chain of direct calls, generated from the registry."""
    names = ", ".join(LAW_ARGUMENTS)
    kinds = registry.freeze()
    lines = [f"def switch(kind, {names}):"]
    for k in range(len(kinds)):
        lines.append(f"    {'if' if k == 0 else 'elif'} kind == {k}:")
        lines.append(f"        return law_{k}({names})")
    lines.append("    return -1")
    namespace = {f"law_{k}": cls.law for k, cls in enumerate(kinds)}  # kernels: numba calls them directly
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from the registry alone
    return namespace["switch"]


@on_numba
def _register_switch():
    from numba.extending import overload
    overload(law, jit_options={"error_model": "numpy"})(_compiled_switch)
