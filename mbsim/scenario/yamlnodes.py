"""Strict reading of a YAML node graph: typed values that keep their line.

PyYAML is used only to *compose* the text into nodes (with marks); nothing is
*constructed*, so PyYAML's YAML 1.1 typing (``yes`` is true, ``1e-3`` is a
string, duplicate keys silently overwrite) never applies.  Scalars are typed
here by our own rules (SCENARIO.md, Errors) and every problem is collected
with its key path and line instead of raised, so a file reports all of its
problems at once.
"""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import numpy as np
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .errors import Problem

_CORE = "tag:yaml.org,2002:"
# Tags a scalar may carry explicitly and still be read by the rules below.
_PLAIN_TAGS = {_CORE + t for t in ("int", "float", "bool", "null")}
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_INTEGER = re.compile(r"[+-]?\d+\Z")
_NONFINITE = re.compile(r"[+-]?\.?(?:inf|infinity|nan)\Z", re.IGNORECASE)
# YAML 1.1 booleans; named as such in messages because that is what the
# writer most likely meant, and because other tools would read them so.
_BOOLEAN_WORDS = {"yes", "no", "on", "off", "y", "n", "true", "false"}
_NULL_WORDS = {"", "~", "null"}
TOP = "<top>"


class _Loader(yaml.SafeLoader):
    """SafeLoader that remembers whether a scalar's tag was written out.

    ``!!str 1e3`` and a plain ``1e3`` compose to identical nodes otherwise.
    """

    def compose_scalar_node(self, anchor):
        explicit = self.peek_event().tag is not None
        node = super().compose_scalar_node(anchor)
        node.explicit_tag = explicit
        return node


class _Untyped(yaml.resolver.BaseResolver):
    """Resolver for the C parser's fast path: plain scalars stay ``str``.

    :func:`kind` classifies scalars by its own rules, so PyYAML's implicit
    typing (a regular-expression match per scalar, most of the cost of
    loading a large model) is not needed; collections keep their core tags.
    """

    _TAGS = {yaml.ScalarNode: "tag:yaml.org,2002:str", yaml.SequenceNode: "tag:yaml.org,2002:seq",
             yaml.MappingNode: "tag:yaml.org,2002:map"}

    def resolve(self, kind_, value, implicit):
        return self._TAGS[kind_]


if getattr(yaml, "__with_libyaml__", False):
    from yaml.cyaml import CParser

    class _FastLoader(CParser, yaml.constructor.SafeConstructor, _Untyped):
        """libyaml's parser and composer with the untyped resolver."""

        def __init__(self, stream):
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            _Untyped.__init__(self)
else:  # pragma: no cover - PyYAML wheels ship libyaml
    _FastLoader = None


def compose_python(text: str) -> tuple[Optional[Node], list[Problem]]:
    """:func:`compose` with PyYAML's Python parser only."""
    return compose(text, fast=False)


def compose(text: str, fast: Optional[bool] = None) -> tuple[Optional[Node], list[Problem]]:
    """Compose ``text`` into a single YAML node graph.

    Returns
    -------
    node : yaml.Node or None
        The root node, or None when there is none or the text is not YAML.
    problems : list of Problem
        Empty on success; else one problem saying why there is no node.
    """
    loader = None
    try:
        # libyaml's C parser composes ~10× faster (a 1000-body chain: 0.5 s instead of 5 s) but
        # cannot tell "!!str 1e3" from a plain "1e3": any tag in the text takes the Python path.
        if fast is None:
            fast = _FastLoader is not None and "!" not in text
        loader = _FastLoader(text) if fast else _Loader(text)
        if not loader.check_node():
            return None, [Problem(TOP, None, "the file is empty; a scenario starts with 'mbsim: 1'")]
        node = loader.get_node()
        if loader.check_node():
            if fast:  # libyaml marks the second document's content, not its '---': ask the Python parser
                return compose_python(text)
            line = loader.peek_event().start_mark.line + 1
            message = "a scenario is a single YAML document; a second one starts here"
            return None, [Problem("<yaml>", line, message)]
        return node, []
    except yaml.MarkedYAMLError as e:
        if fast:  # say it in PyYAML's words, whichever parser found it
            return compose_python(text)
        mark = e.problem_mark or e.context_mark
        detail = "; ".join(s for s in (e.context, e.problem) if s)
        if mark is None:
            return None, [Problem("<yaml>", None, f"invalid YAML: {detail}")]
        return None, [Problem("<yaml>", mark.line + 1, f"invalid YAML (column {mark.column + 1}): {detail}")]
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1 if isinstance(e.position, int) else None
        return None, [Problem("<yaml>", line, f"character #x{e.character:04x} is not allowed in YAML")]
    except yaml.YAMLError as e:
        return None, [Problem("<yaml>", None, f"invalid YAML: {e}")]
    except RecursionError:
        return None, [Problem("<yaml>", None, "invalid YAML: nested too deeply")]
    finally:
        if loader is not None:
            loader.dispose()


# --------------------------------------------------------------------------
# node classification
# --------------------------------------------------------------------------
def line_of(node: Optional[Node]) -> Optional[int]:
    """1-based line where ``node`` starts (None for no node)."""
    return None if node is None else node.start_mark.line + 1


def kind(node: Node) -> str:
    """Classify a node by our rules.

    One of ``mapping``, ``list``, ``number`` (plain usual float form),
    ``nonfinite`` (plain inf/nan spellings), ``boolean`` (plain YAML 1.1
    boolean words), ``null``, ``text`` (other plain scalar), ``quoted``
    (quoted, block or ``!!str`` scalar) or ``tagged`` (any other explicit tag).
    """
    if isinstance(node, MappingNode):
        return "mapping" if node.tag == _CORE + "map" else "tagged"
    if isinstance(node, SequenceNode):
        return "list" if node.tag == _CORE + "seq" else "tagged"
    if getattr(node, "explicit_tag", False):
        if node.tag == _CORE + "str":
            return "quoted"
        if node.tag not in _PLAIN_TAGS:
            return "tagged"
    if node.style:  # None (Python composer) or "" (libyaml's) for a plain scalar
        return "quoted"
    value = node.value
    if _NUMBER.match(value):
        return "number"
    if _NONFINITE.match(value):
        return "nonfinite"
    if value.lower() in _BOOLEAN_WORDS:
        return "boolean"
    if value.lower() in _NULL_WORDS:
        return "null"
    return "text"


def _clip(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def describe(node: Node) -> str:
    """Say what a node is, for 'must be X, got Y' messages."""
    k = kind(node)
    if k == "mapping":
        return "a mapping"
    if k == "list":
        return "a list"
    if k == "tagged":
        return f"a value tagged {node.tag.replace(_CORE, '!!')!r} (YAML tags are not supported)"
    if k == "null":
        return "null (nothing)"
    text = _clip(node.value)
    return {
        "number": f"number {text}",
        "nonfinite": f"non-finite number {text}",
        "boolean": f"boolean {text!r}",
        "quoted": f"quoted text {text!r}",
        "text": f"text {text!r}",
    }[k]


def suggest(word: str, options: Iterable[str]) -> str:
    """Return `` (did you mean 'x'?)`` for a close option, else ''."""
    options = list(options)
    same_case = [o for o in options if o.lower() == word.lower()]
    close = same_case or difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def values_of(node: Node):
    """Plain Python values of a node graph, typed by :func:`kind` (not by PyYAML's YAML 1.1 rules):
    mappings → dict, lists → list, numbers → int (written as an integer) or float, ``true``/``false``
    → bool, null → None, any other scalar → its text.  For a graph that has passed validation (the
    base scenario of a parameter study, :mod:`mbsim.study`), so that the same values written out again
    by :func:`mbsim.scenario.loader.to_yaml` validate to the same scenario."""
    k = kind(node)
    if k in ("mapping", "tagged") and isinstance(node, MappingNode):
        return {key.value: values_of(value) for key, value in node.value}
    if k in ("list", "tagged") and isinstance(node, SequenceNode):
        return [values_of(item) for item in node.value]
    if k == "number":
        return int(node.value) if _INTEGER.match(node.value) else float(node.value)
    if k == "nonfinite":
        return float(node.value.lower().replace(".", "").replace("infinity", "inf"))
    if k == "boolean" and node.value.lower() in ("true", "false"):
        return node.value.lower() == "true"
    if k == "null":
        return None
    return node.value


def join(path: str, key: str) -> str:
    """Key path of ``key`` inside the mapping at ``path``."""
    return f"{path}.{key}" if path else key


# --------------------------------------------------------------------------
# the reader: typed getters that report instead of raising
# --------------------------------------------------------------------------
@dataclass
class Map:
    """A checked mapping: unique, known keys, each with its key and value node."""

    node: Node
    path: str
    items: dict  # key -> (key node, value node)

    @property
    def where(self) -> str:
        return self.path or TOP

    @property
    def line(self) -> Optional[int]:
        return line_of(self.node)

    def get(self, key: str) -> Optional[Node]:
        item = self.items.get(key)
        return None if item is None else item[1]

    def has(self, key: str) -> bool:
        return key in self.items

    def sub(self, key: str) -> str:
        return join(self.path, key)


class Reader:
    """Collects problems while reading typed values out of nodes.

    Every getter returns None exactly when it has reported a problem, so a
    caller can tell whether a part of the file was clean by comparing
    ``len(reader.problems)`` before and after.
    """

    def __init__(self):
        self.problems: list[Problem] = []
        # A block list or mapping starts on the line after its key; problems
        # with the whole value read better at the key's line.
        self._key_lines: dict[int, int] = {}

    def report(self, path: str, where, message: str) -> None:
        """Record a problem; ``where`` is a node, a line number or None."""
        if where is None or isinstance(where, int):
            line = where
        else:
            line = self._key_lines.get(id(where)) or line_of(where)
        self.problems.append(Problem(path or TOP, line, message))

    # -- containers --------------------------------------------------------
    def mapping(self, node: Node, path: str, keys: Iterable[str],
                foreign: Optional[dict] = None) -> Optional[Map]:
        """Check that ``node`` is a mapping with unique keys among ``keys``.

        ``foreign`` maps keys that are valid elsewhere (e.g. for another
        connector type) to a specific message.  Problems with keys are
        reported on the mapping's path at the key's line.  Merge keys
        (``<<``) are refused: they would hide where a value came from;
        aliases of whole values are fine.
        """
        if kind(node) != "mapping":
            self.report(path, node, f"must be a mapping, got {describe(node)}")
            return None
        keys = tuple(keys)
        where = path or TOP
        items: dict = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                self.report(where, key_node, f"a key must be a plain name, got {describe(key_node)}")
                continue
            key = key_node.value
            if key in items:
                first = line_of(items[key][0])
                self.report(where, key_node, f"duplicate key {key!r} (first at line {first})")
            elif key == "<<":
                self.report(where, key_node, "merge keys ('<<') are not supported; write the keys out")
            elif key in keys:
                items[key] = (key_node, value_node)
                if not isinstance(value_node, ScalarNode):
                    self._key_lines[id(value_node)] = line_of(key_node)
            elif foreign and key in foreign:
                self.report(where, key_node, foreign[key])
            else:
                self.report(where, key_node, f"unknown key {_clip(key)!r}{suggest(key, keys)}")
        return Map(node, path, items)

    def require(self, m: Map, key: str, why: str = "") -> Optional[Node]:
        """The value node of a required key, or None after reporting it missing."""
        node = m.get(key)
        if node is None:
            self.report(m.where, m.node, f"missing required key {key!r}{why}")
        return node

    def optional(self, m: Map, key: str, read, default):
        """``read(node, path)`` for a given key, else ``default``."""
        node = m.get(key)
        return default if node is None else read(node, m.sub(key))

    def required_number(self, m: Map, key: str, check: Optional[str]) -> Optional[float]:
        """A required key's finite number (``check`` as in :meth:`number`)."""
        node = self.require(m, key)
        return None if node is None else self.number(node, m.sub(key), check)

    def exactly_one(self, m: Map, options: tuple[str, ...]) -> Optional[str]:
        """The one key of ``options`` that ``m`` has, else report and None."""
        given = [k for k in options if m.has(k)]
        if len(given) == 1:
            return given[0]
        names = ", ".join(options)
        if given:
            self.report(m.where, m.node, f"give exactly one of {names}; got {' and '.join(given)}")
        else:
            self.report(m.where, m.node, f"must give one of {names}")
        return None

    def sequence(self, node: Node, path: str, what: str = "a list") -> Optional[list]:
        """The item nodes of a list node."""
        if kind(node) != "list":
            self.report(path, node, f"must be {what}, got {describe(node)}")
            return None
        return list(node.value)

    # -- scalars -------------------------------------------------------------
    def number(self, node: Node, path: str, check: Optional[str] = None) -> Optional[float]:
        """A finite number; ``check`` is ``'>0'`` or ``'>=0'``."""
        k = kind(node)
        if k == "number":
            value = float(node.value)  # overflow gives inf, never raises
            if not math.isfinite(value):
                self.report(path, node, f"must be finite, got {_clip(node.value)}")
                return None
            if check == ">0" and not value > 0:
                self.report(path, node, f"must be > 0, got {_clip(node.value)}")
                return None
            if check == ">=0" and not value >= 0:
                self.report(path, node, f"must be >= 0, got {_clip(node.value)}")
                return None
            return value
        if k == "nonfinite":
            self.report(path, node, f"must be finite, got {_clip(node.value)}")
        elif k == "quoted" and _NUMBER.match(node.value.strip()):
            self.report(path, node, f"must be a number, got {describe(node)}; remove the quotes")
        else:
            self.report(path, node, f"must be a number, got {describe(node)}")
        return None

    def integer(self, node: Node, path: str) -> Optional[int]:
        """A finite number written as an integer (``25``, not ``25.0``)."""
        if kind(node) == "number" and not _INTEGER.match(node.value):
            self.report(path, node, f"must be an integer, got {_clip(node.value)}")
            return None
        value = self.number(node, path)
        return None if value is None else int(value)

    def boolean(self, node: Node, path: str) -> Optional[bool]:
        """``true`` or ``false`` (any letter case), nothing else."""
        if kind(node) in ("boolean", "text"):
            word = node.value.lower()
            if word in ("true", "false"):
                return word == "true"
            if word in _BOOLEAN_WORDS:
                self.report(path, node, f"must be true or false, got {node.value!r}; write true or false")
                return None
        self.report(path, node, f"must be true or false, got {describe(node)}")
        return None

    def string(self, node: Node, path: str, nonempty: bool = False) -> Optional[str]:
        """Text, plain or quoted; numbers, booleans and null are refused."""
        k = kind(node)
        if k not in ("text", "quoted"):
            hint = "; quote it if you mean the text" if k in ("number", "nonfinite", "boolean") else ""
            self.report(path, node, f"must be a string, got {describe(node)}{hint}")
            return None
        if nonempty and not node.value.strip():
            self.report(path, node, "must not be empty")
            return None
        return node.value

    def name(self, node: Node, path: str) -> Optional[str]:
        """A name (of the scenario, a body, a connector, a joint): non-empty text without control
        characters -- a NUL cannot be stored in HDF5, a newline or escape would garble messages."""
        value = self.string(node, path, nonempty=True)
        if value is None:
            return None
        bad = next((i for i, ch in enumerate(value) if ord(ch) < 32 or ord(ch) == 127), None)
        if bad is not None:
            self.report(path, node, f"must not contain control characters; got U+{ord(value[bad]):04X} at "
                                    f"position {bad + 1} of {_clip(value)!r}")
            return None
        return value

    def choice(self, node: Node, path: str, options: Iterable[str], what: str) -> Optional[str]:
        """One word out of ``options``."""
        options = tuple(options)
        value = self.string(node, path)
        if value is None:
            return None
        if value not in options:
            self.report(path, node, f"unknown {what} {_clip(value)!r}{suggest(value, options)}; "
                                    f"expected one of {', '.join(options)}")
            return None
        return value

    # -- arrays --------------------------------------------------------------
    def numbers(self, node: Node, path: str, n: int,
                item: Optional[Callable] = None, what: str = "numbers") -> Optional[list]:
        """A list of exactly ``n`` items read by ``item`` (default: numbers)."""
        item = item or self.number
        nodes = self.sequence(node, path, f"a list of {n} {what}")
        if nodes is None:
            return None
        if len(nodes) != n:
            self.report(path, node, f"must have {n} entries, got {len(nodes)}")
            return None
        before = len(self.problems)
        values = [item(sub, f"{path}[{i}]") for i, sub in enumerate(nodes)]
        return None if len(self.problems) > before else values

    def vector(self, node: Node, path: str) -> Optional[np.ndarray]:
        """A 3-vector ``[x, y, z]``."""
        values = self.numbers(node, path, 3)
        return None if values is None else np.array(values, dtype=float)

    def unit(self, node: Node, path: str) -> Optional[np.ndarray]:
        """A non-zero 3-vector, normalised."""
        v = self.vector(node, path)
        if v is None:
            return None
        n = norm(v)
        if n == 0.0:
            self.report(path, node, "must not be the zero vector")
            return None
        return v / n

    def matrix(self, node: Node, path: str) -> Optional[np.ndarray]:
        """A 3×3 matrix written as 3 rows of 3 numbers."""
        rows = self.numbers(node, path, 3, item=self.vector, what="rows")
        return None if rows is None else np.array(rows, dtype=float)


def norm(v: np.ndarray) -> float:
    """Euclidean norm that neither overflows nor underflows for finite input."""
    scale = float(np.max(np.abs(v)))
    return 0.0 if scale == 0.0 else scale * float(np.sqrt(np.sum((v / scale) ** 2)))


# --------------------------------------------------------------------------
# a Python mapping as the node graph of its YAML text, without parsing it
# --------------------------------------------------------------------------
_STR, _SEQ, _MAP = _CORE + "str", _CORE + "seq", _CORE + "map"


def nodes_of(data: dict, flow: Callable[[object], str]) -> MappingNode:
    """The node graph that composing :func:`mbsim.scenario.loader.to_yaml`'s text of ``data`` gives
    (libyaml's composer, untyped scalars), built directly: the same kinds, values and line numbers,
    so the loader validates a Python mapping exactly as the text, without writing and re-reading
    it.  ``data`` holds plain Python values (dict, list, str, numbers, bool, None); ``flow`` is
    the JSON writer ``to_yaml`` uses for every value and non-identifier key."""
    marks: dict = {}

    def mark(line):
        m = marks.get(line)
        if m is None:
            m = marks[line] = yaml.Mark("<data>", 0, line, 0, None, None)
        return m

    def key(k, m, plain):
        if len(str(k)) > 1024:  # longer than a YAML simple key may be: the parser's error, not ours
            raise ValueError("key too long for YAML")
        if plain and isinstance(k, str) and k.isidentifier():
            return ScalarNode(_STR, k, m, m, "")
        if not plain and not isinstance(k, str):  # inside JSON: the key as JSON writes it (True -> "true")
            k = flow(k)
        return ScalarNode(_STR, str(k), m, m, '"')

    def value(v, m):
        t = type(v)
        if t is float:  # as JSON writes it (the most frequent case first)
            text = float.__repr__(v) if v - v == 0.0 else ("NaN" if v != v else "Infinity" if v > 0 else "-Infinity")
            return ScalarNode(_STR, text, m, m, "")
        if t is str:
            return ScalarNode(_STR, v, m, m, '"')
        if t is dict:
            return MappingNode(_MAP, [(key(k, m, False), value(x, m)) for k, x in v.items()], m, m, True)
        if t is list or t is tuple:
            return SequenceNode(_SEQ, [value(x, m) for x in v], m, m, True)
        if isinstance(v, dict):
            return MappingNode(_MAP, [(key(k, m, False), value(x, m)) for k, x in v.items()], m, m, True)
        if isinstance(v, (list, tuple)):
            return SequenceNode(_SEQ, [value(x, m) for x in v], m, m, True)
        if isinstance(v, str):
            return ScalarNode(_STR, v, m, m, '"')
        return ScalarNode(_STR, flow(v), m, m, "")  # ints, booleans, null and the rest as JSON writes them

    pairs, line = [], 0
    for k, v in data.items():
        m = mark(line)
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            items = []
            for x in v:
                line += 1
                items.append(value(x, mark(line)))
            pairs.append((key(k, m, True), SequenceNode(_SEQ, items, mark(line - len(v) + 1), mark(line), False)))
        elif isinstance(v, dict) and v:
            inner = []
            for k2, x in v.items():
                line += 1
                inner.append((key(k2, mark(line), True), value(x, mark(line))))
            pairs.append((key(k, m, True), MappingNode(_MAP, inner, mark(line - len(v) + 1), mark(line), False)))
        else:
            pairs.append((key(k, m, True), value(v, m)))
        line += 1
    top = mark(0)
    return MappingNode(_MAP, pairs, top, mark(line), False)
