"""Key paths into a scenario: ``connectors[shock].damping``, ``bodies[bob].velocity[0]``, ``time.step``.

A key path is keys joined by dots, each key optionally followed by selectors
in brackets: ``[name]`` picks the item of a list whose ``name`` is that (the
loader's default names, such as ``spring-0``, count for connectors and joints
without one), ``[i]`` the item at index i (from 0).  A name that looks like a
number is written quoted: ``bodies['7']``.

:func:`parse` turns the text into segments; :func:`resolve` walks them through
a scenario's values (:func:`mbsim.scenario.yamlnodes.values_of`) and says what
is wrong in the loader's words (did-you-mean for unknown names); :func:`assign`
sets a value there.  What the value may be is the scenario loader's business:
the study validates every case with it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Union

from ..scenario.yamlnodes import suggest

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SELECTOR = re.compile(r"\[(?:'([^']*)'|\"([^\"]*)\"|([^\]\[]*))\]")
_INDEX = re.compile(r"\d+\Z")


class KeyPathError(ValueError):
    """A key path that cannot be parsed or does not lead anywhere in the scenario; the message says why."""


@dataclass(frozen=True)
class Segment:
    """One step of a key path: a mapping key, a list index, or a list item by name."""

    kind: str  # "key" | "index" | "name"
    value: Union[str, int]

    def __str__(self) -> str:
        if self.kind == "key":
            return f".{self.value}"
        if self.kind == "index":
            return f"[{self.value}]"
        return f"[{self.value}]" if not _INDEX.match(str(self.value)) else f"['{self.value}']"


def parse(text: str) -> tuple[Segment, ...]:
    """The segments of key path ``text`` (KeyPathError when it is not one)."""
    if not isinstance(text, str) or not text.strip():
        raise KeyPathError("a key path must be text such as connectors[shock].damping")
    segments: list[Segment] = []
    pos, want_key = 0, True
    while True:
        if want_key:
            m = _KEY.match(text, pos)
            if m is None:
                got = f"{text[pos]!r}" if pos < len(text) else "the end"
                raise KeyPathError(f"expected a key (letters, digits and _) at position {pos + 1} of {text!r}, "
                                   f"got {got}")
            segments.append(Segment("key", m.group(0)))
            pos, want_key = m.end(), False
        if pos == len(text):
            return tuple(segments)
        if text[pos] == ".":
            pos, want_key = pos + 1, True
            continue
        if text[pos] != "[":
            raise KeyPathError(f"unexpected {text[pos]!r} at position {pos + 1} of {text!r}; keys are joined by "
                               f"'.', list items selected by [name] or [index]")
        m = _SELECTOR.match(text, pos)
        if m is None:
            raise KeyPathError(f"unclosed or nested '[' at position {pos + 1} of {text!r}")
        quoted = m.group(1) if m.group(1) is not None else m.group(2)
        inner = m.group(3).strip() if quoted is None else quoted
        if not inner:
            raise KeyPathError(f"empty [] in {text!r}; give a name or an index")
        if quoted is None and inner.lstrip("-").isdigit():
            if inner.startswith("-"):
                raise KeyPathError(f"negative index [{inner}] in {text!r}; indices count from 0")
            segments.append(Segment("index", int(inner)))
        else:
            segments.append(Segment("name", inner))
        pos = m.end()


def format_path(segments) -> str:
    """The text of a key path (inverse of :func:`parse`)."""
    return "".join(str(s) for s in segments).lstrip(".")


def item_names(scenario, section: str) -> Optional[list]:
    """Names of the items of a list section of a validated scenario (loader defaults included)."""
    if section in ("bodies", "connectors", "joints"):
        return [item.name for item in getattr(scenario, section)]
    return None


@dataclass
class Target:
    """Where a key path leads: the container and the key or index in it (``exists``: already set)."""

    container: Union[dict, list]
    key: Union[str, int]
    exists: bool


def resolve(data: dict, segments, scenario=None) -> Target:
    """Follow ``segments`` through the scenario values ``data`` (not modified).

    Missing mapping keys are allowed (the value will be added: ``integrator.rho_inf`` in a scenario
    without an ``integrator`` section); missing list items are not.  ``scenario``, the validated
    base scenario, gives the loader's default names of unnamed connectors and joints.
    """
    node: object = data
    where = "the scenario"
    path: list[Segment] = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg.kind == "key":
            if node is None:  # a section not given: it will be created
                node = {}
            if not isinstance(node, dict):
                raise KeyPathError(f"{where} is {_what(node)}, not a mapping: it has no key {seg.value!r}")
            if last:
                return Target(node, seg.value, seg.value in node)
            node = node.get(seg.value)
        else:
            if node is None:
                raise KeyPathError(f"{where} is not given in the scenario: nothing to select "
                                   f"{str(seg)} from; write it out in the scenario")
            if not isinstance(node, list):
                raise KeyPathError(f"{where} is {_what(node)}, not a list: {str(seg)} selects a list item")
            if seg.kind == "index":
                if seg.value >= len(node):
                    raise KeyPathError(f"{where} has {len(node)} item{'' if len(node) == 1 else 's'}: "
                                       f"no index {seg.value} (indices count from 0)")
                index = seg.value
            else:
                names = _names_in(node, path, scenario)
                if names is None:
                    raise KeyPathError(f"the items of {where} have no names: select one by index, e.g. "
                                       f"{format_path(path)}[0]")
                if seg.value not in names:
                    shown = ", ".join(n for n in names if n is not None)
                    raise KeyPathError(f"{where} has no item named {seg.value!r}{suggest(seg.value, names)}; "
                                       f"its names: {shown}")
                index = names.index(seg.value)
            if last:
                return Target(node, index, True)
            node = node[index]
        path.append(seg)
        where = format_path(path)
    raise KeyPathError("an empty key path")  # pragma: no cover - parse() never returns one


def assign(data: dict, segments, value, scenario=None) -> None:
    """Set the value at ``segments`` in ``data`` (in place), creating missing mapping sections."""
    node = data
    for i, seg in enumerate(segments[:-1]):
        if seg.kind == "key":
            nxt = node.get(seg.value)
            if nxt is None:
                nxt = node[seg.value] = {}
            node = nxt
        else:
            node = node[_index(node, seg, segments[:i], scenario)]
    seg = segments[-1]
    if seg.kind == "key":
        node[seg.value] = value
    else:
        node[_index(node, seg, segments[:-1], scenario)] = value


def _index(node: list, seg: Segment, path, scenario) -> int:
    if seg.kind == "index":
        return seg.value
    return _names_in(node, list(path), scenario).index(seg.value)


def _names_in(items: list, path, scenario) -> Optional[list]:
    """The names of list items (None when they have none)."""
    section = format_path(path) if len(path) == 1 and path[0].kind == "key" else None
    names = item_names(scenario, section) if scenario is not None and section else None
    if names is not None and len(names) == len(items):
        return names
    if items and all(isinstance(x, dict) and isinstance(x.get("name"), str) for x in items):
        return [x["name"] for x in items]
    return None


def _what(node) -> str:
    if isinstance(node, list):
        return "a list"
    if isinstance(node, bool):
        return f"the value {str(node).lower()}"
    if isinstance(node, (int, float, str)):
        return f"the value {node!r}"
    return "null"
