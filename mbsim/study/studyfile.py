"""Study files (docs/sweep.md) → a validated :class:`Study` with every case's scenario.

The study file is read by the scenario loader's own machinery
(:mod:`mbsim.scenario.yamlnodes`: strict typing, every problem with its key
path and line, did-you-mean), and every case's scenario is validated by
:func:`mbsim.scenario.scenario_from_dict` before anything runs: a study with
one invalid case is refused whole (:class:`StudyError`), naming the case and
its parameter values.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Optional

from ..scenario import Problem, Scenario, ScenarioError, load_scenario, scenario_from_dict
from ..scenario.loader import _plain, read_text, to_yaml
from ..scenario.yamlnodes import TOP, Reader, _clip, compose, describe, kind, line_of, suggest, values_of
from . import designs, keypaths, metrics
from .designs import DISTRIBUTIONS, METHODS, RANGES, Design, ParameterSpec

_TOP_KEYS = ("scenario", "description", "parameters", "design", "metrics", "output")
_METRIC_KEYS = ("quantity", "reduce", "window")
_SPEC_FORMS = RANGES + DISTRIBUTIONS
# columns of the summary table besides the parameters and the metrics
TABLE_COLUMNS = ("case", "status", "message", "steps", "newton_iterations", "wall_time_s")
MAX_CASES = 1_000_000  # a study larger than this is refused (a typo in a linspace, most likely)
MAX_VALUES = 100_000  # values of one linspace / logspace
SHOWN_CASES = 10  # invalid cases listed in full; the rest are counted


class StudyError(ScenarioError):
    """A study was refused: ``problems`` lists everything found in the study file, or the cases whose
    scenario is invalid (with their parameter values).  A :class:`~mbsim.scenario.ScenarioError`
    (invalid input, reported the same way, exit status 2 on the command line)."""

    def report(self) -> str:
        n = len(self.problems)
        head = f"{self.source or '<study>'}: {n} problem{'' if n == 1 else 's'}"
        return "\n".join([head] + [f"  {p}" for p in self.problems])


@dataclass(frozen=True)
class Case:
    """One case: its index, its parameter values (in parameter order) and its validated scenario text."""

    index: int
    values: tuple
    data: dict = field(repr=False)  # the scenario's values, parameters applied (what the worker validates again)
    text: str = field(repr=False)  # the scenario text the case's result file stores (/scenario)

    @property
    def file_name(self) -> str:
        return f"case_{self.index:05d}.h5"


@dataclass(frozen=True)
class Study:
    """A validated study: the base scenario, parameters, design, metrics, and every case."""

    source: Optional[str]
    scenario_path: str
    scenario: Scenario
    parameters: tuple
    design: Design
    metrics: tuple
    output: Optional[str]
    description: str
    cases: tuple

    @property
    def base(self) -> str:
        """The base scenario's directory: where its springs' user laws are looked for first (a case's scenario
        is made from values, without a file)."""
        return os.path.dirname(os.path.abspath(self.scenario_path))

    @property
    def name(self) -> str:
        """The study's name: its file name without extension (else the scenario's name)."""
        if self.source:
            return os.path.splitext(os.path.basename(self.source))[0]
        return f"{self.scenario.name}-study"

    @property
    def parameter_names(self) -> list:
        return [p.path for p in self.parameters]

    def describe_values(self, values) -> str:
        """``damping = 2, mass = 1`` for the table and messages."""
        return ", ".join(f"{p.path} = {_show(v)}" for p, v in zip(self.parameters, values))


def _show(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:.10g}"
    return str(v)


# --------------------------------------------------------------------------
# entry points
# --------------------------------------------------------------------------
def load_study(path) -> Study:
    """Read and validate the study file at ``path`` and every case (StudyError listing the problems)."""
    source = os.fspath(path)
    try:
        text = read_text(source)
    except ScenarioError as exc:
        raise StudyError(exc.problems, source) from None
    return parse_study(text, source)


def study_from_dict(data: dict) -> Study:
    """Validate a study given as a Python mapping (the study file's contents); a relative ``scenario``
    path is taken from the current directory."""
    if not isinstance(data, dict):
        raise TypeError(f"a study must be a file path or a dict, got {type(data).__name__}")
    data = {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in data.items()}
    try:
        text = to_yaml(_plain(data))
    except (TypeError, ValueError) as exc:
        raise StudyError([Problem("<data>", None, f"cannot be written as YAML: {exc}")]) from None
    return parse_study(text, None)


def parse_study(text: str, source: Optional[str] = None) -> Study:
    """Validate study ``text`` (``source``: the file it came from, for messages and relative paths)."""
    root, problems = compose(text)
    if root is None:
        raise StudyError(problems, source)
    r = Reader()
    parts = _read(r, root, source)
    if r.problems:
        raise StudyError(sorted(r.problems, key=lambda p: p.line or 0), source)
    values = parts.pop("_values")
    return _with_cases(Study(source=source, cases=(), **parts), values)


# --------------------------------------------------------------------------
# the file
# --------------------------------------------------------------------------
def _read(r: Reader, root, source) -> dict:
    if kind(root) != "mapping":
        r.report(TOP, root, f"a study must be a mapping with the keys scenario, parameters, design and metrics, "
                            f"got {describe(root)}")
        return {}
    m = r.mapping(root, "", _TOP_KEYS)
    description = r.optional(m, "description", r.string, "")
    output = r.optional(m, "output", lambda n, p: r.string(n, p, nonempty=True), None)
    node = r.require(m, "scenario", " (the path of the base scenario, relative to the study file)")
    scenario_path, scenario, values = None, None, None
    if node is not None:
        written = r.string(node, "scenario", nonempty=True)
        if written is not None:
            scenario_path, scenario, values = _base(r, node, written, source)
    node = r.require(m, "parameters", " (key path: values, for each parameter of the study)")
    parameters = [] if node is None else _parameters(r, node, scenario, values)
    design_node = r.require(m, "design", " (grid, or {samples: N, method: lhs, seed: S})")
    design = None if design_node is None else _design(r, design_node)
    node = r.require(m, "metrics", " (name: {quantity: ..., reduce: ...}, for each number to keep per case)")
    metric_list = [] if node is None or scenario is None else _metrics(r, node, scenario, parameters)
    if design is not None and parameters:
        _check_design(r, design, design_node, parameters)
    return dict(scenario_path=scenario_path, scenario=scenario, parameters=tuple(parameters), design=design,
                metrics=tuple(metric_list), output=output, description=description or "",
                _values=values) if not r.problems else {}


def _base(r: Reader, node, written: str, source):
    """The base scenario: validated, and its values (to which the parameters are applied)."""
    where = os.path.dirname(os.path.abspath(source)) if source else os.getcwd()
    path = os.path.normpath(os.path.join(where, os.path.expanduser(written)))
    if not os.path.exists(path):
        rel = "the study file" if source else "the current directory"
        r.report("scenario", node, f"no such file: {written!r} ({path}; the path is relative to {rel})")
        return None, None, None
    try:
        sc = load_scenario(path)
    except ScenarioError as exc:
        n = len(exc.problems)
        shown = "; ".join(str(p) for p in exc.problems[:5]) + ("; …" if n > 5 else "")
        r.report("scenario", node, f"{written} is not a valid scenario ({n} problem{'' if n == 1 else 's'}, "
                                   f"`mbsim validate {path}` lists them): {shown}")
        return None, None, None
    root, _ = compose(sc.text)
    values = values_of(root)
    values["name"] = sc.name  # the cases keep the base scenario's name, also when it was the file's
    return path, sc, values


def _parameters(r: Reader, node, scenario: Optional[Scenario], values: Optional[dict]) -> list:
    if kind(node) != "mapping":
        r.report("parameters", node, f"must be a mapping of key paths to values, got {describe(node)}")
        return []
    if not node.value:
        r.report("parameters", node, "must name at least one parameter")
        return []
    out, seen, targets = [], {}, []
    for key_node, value_node in node.value:
        if kind(key_node) not in ("text", "quoted"):
            r.report("parameters", key_node, f"a key path must be text such as connectors[shock].damping, "
                                             f"got {describe(key_node)}")
            continue
        text = key_node.value
        path = f"parameters.{text}"
        if text in seen:
            r.report("parameters", key_node, f"duplicate parameter {_clip(text)!r} (first at line {seen[text]})")
            continue
        seen[text] = line_of(key_node)
        before = len(r.problems)
        segments = _target(r, key_node, text, path, scenario, values, targets)
        spec = _spec(r, value_node, path)
        if spec is None or segments is None or len(r.problems) > before:
            continue
        p = ParameterSpec(path=text, segments=segments, line=line_of(key_node), **spec)
        if values is not None:
            _probe(r, key_node, p, values, scenario)
        out.append(p)
    return out


def _target(r: Reader, key_node, text: str, path: str, scenario, values, targets: list):
    """The parsed key path of a parameter, checked against the base scenario."""
    try:
        segments = keypaths.parse(text)
    except keypaths.KeyPathError as exc:
        r.report(path, key_node, str(exc))
        return None
    last = segments[-1]
    if last.kind == "key" and last.value in ("name", "type"):
        r.report(path, key_node, f"a {last.value} cannot be a parameter: key paths and metrics refer to the "
                                 f"scenario's names, and a type decides which keys an item has")
        return None
    if values is None:  # the base scenario is broken (reported): nothing to check against
        return segments
    try:
        keypaths.resolve(values, segments, scenario)
    except keypaths.KeyPathError as exc:
        r.report(path, key_node, str(exc))
        return None
    canonical = _canonical(values, segments, scenario)
    for other_text, other in targets:
        n = min(len(canonical), len(other))
        if canonical[:n] == other[:n]:
            r.report(path, key_node, f"sets the same value as parameter {other_text!r}"
                     if len(canonical) == len(other) else
                     f"overlaps parameter {other_text!r}: one sets a value inside the other's")
            return None
    targets.append((text, canonical))
    return segments


def _canonical(values, segments, scenario) -> tuple:
    """The key path with names resolved to list indices (two spellings of one place compare equal)."""
    out, node = [], values
    for i, seg in enumerate(segments):
        if seg.kind == "key":
            out.append(seg.value)
            node = node.get(seg.value) if isinstance(node, dict) else None
        else:
            index = keypaths._index(node, seg, segments[:i], scenario)
            out.append(index)
            node = node[index]
    return tuple(out)


def _probe(r: Reader, key_node, p: ParameterSpec, values: dict, scenario) -> None:
    """A key the base scenario does not have yet: ask the scenario loader whether such a key exists
    there (its message has the did-you-mean), with the parameter's first value."""
    target = keypaths.resolve(values, p.segments, scenario)
    if target.exists:
        return
    data = copy.deepcopy(values)
    value = p.values[0] if p.values is not None else p.arguments[0]
    keypaths.assign(data, p.segments, value, scenario)
    try:
        scenario_from_dict(data, base=os.path.dirname(scenario.source) if scenario.source else None)
    except ScenarioError as exc:
        for q in exc.problems:
            if q.message.startswith(("unknown key", "'")) and "key" in q.message:
                r.report(f"parameters.{p.path}", key_node, f"the scenario cannot have this key: {q.path}: {q.message}")
                return


def _spec(r: Reader, node, path: str) -> Optional[dict]:
    """A list of values, ``{linspace|logspace: [a, b, n]}`` or ``{uniform|normal|lognormal: [a, b]}``."""
    k = kind(node)
    if k == "list":
        items = node.value
        if not items:
            r.report(path, node, "must list at least one value")
            return None
        before = len(r.problems)
        vals = [_scalar(r, item, f"{path}[{i}]") for i, item in enumerate(items)]
        if len(r.problems) > before:
            return None
        kinds = {_kind_of(v) for v in vals}
        if len(kinds) > 1:
            r.report(path, node, f"values must all be of one kind, got {' and '.join(sorted(kinds))}")
            return None
        for i, v in enumerate(vals):
            if v in vals[:i]:
                r.report(f"{path}[{i}]", items[i], f"value {_show(v)} is listed twice (first at "
                                                   f"[{vals.index(v)}]); each value makes its own cases")
                return None
        return {"values": tuple(vals)}
    if k != "mapping":
        r.report(path, node, f"must be a list of values, or one of {', '.join(f'{{{f}: ...}}' for f in _SPEC_FORMS)}, "
                             f"got {describe(node)}")
        return None
    m = r.mapping(node, path, _SPEC_FORMS)
    if m is None:
        return None
    form = r.exactly_one(m, _SPEC_FORMS)
    if form is None:
        return None
    sub, value = m.sub(form), m.get(form)
    if form in RANGES:
        nums = r.numbers(value, sub, 3, what="numbers [first, last, count]")
        if nums is None:
            return None
        a, b, n = nums
        count = value.value[2]
        if kind(count) != "number" or not count.value.lstrip("+").isdigit() or not 1 <= n <= MAX_VALUES:
            r.report(f"{sub}[2]", count, f"the count must be a whole number from 1 to {MAX_VALUES}, got {count.value}")
            return None
        if form == "logspace" and not (a > 0 and b > 0):
            r.report(sub, value, f"logspace takes the first and last values themselves (not exponents), both > 0; "
                                 f"got {a:g} and {b:g}")
            return None
        vals = (designs.linspace if form == "linspace" else designs.logspace)(a, b, int(n))
        if len(set(vals)) < len(vals):
            r.report(sub, value, f"gives equal values ({a:g} to {b:g} in {int(n)} steps); each value makes its "
                                 f"own cases")
            return None
        return {"values": vals, "form": form}
    nums = r.numbers(value, sub, 2, what=("numbers [low, high]" if form == "uniform" else "numbers [mu, sigma]"))
    if nums is None:
        return None
    a, b = nums
    if form == "uniform" and not b > a:
        r.report(sub, value, f"needs low < high, got [{a:g}, {b:g}]")
        return None
    if form != "uniform" and not b > 0:
        r.report(f"{sub}[1]", value.value[1], f"sigma must be > 0, got {b:g}")
        return None
    return {"distribution": form, "arguments": (a, b), "form": form}


def _scalar(r: Reader, node, path: str):
    """One value of a list: a number (int when written as one), true/false, or text."""
    k = kind(node)
    if k == "number":
        return r.integer(node, path) if node.value.lstrip("+-").isdigit() else r.number(node, path)
    if k == "boolean":
        return r.boolean(node, path)
    if k in ("text", "quoted"):
        return node.value
    if k == "nonfinite":
        r.report(path, node, f"must be finite, got {_clip(node.value)}")
        return None
    r.report(path, node, f"must be a number, true/false or text, got {describe(node)}")
    return None


def _kind_of(v) -> str:
    if isinstance(v, bool):
        return "booleans"
    if isinstance(v, (int, float)):
        return "numbers"
    return "text"


def _design(r: Reader, node) -> Optional[Design]:
    k = kind(node)
    if k in ("text", "quoted"):
        if node.value == "grid":
            return Design("grid")
        r.report("design", node, f"unknown design {_clip(node.value)!r}{suggest(node.value, ('grid', 'samples'))}; "
                                 f"write grid, or {{samples: N, method: lhs, seed: S}}")
        return None
    if k != "mapping":
        r.report("design", node, f"must be grid or {{samples: N, method: lhs, seed: S}}, got {describe(node)}")
        return None
    m = r.mapping(node, "design", ("samples", "method", "seed"))
    if m is None:
        return None
    before = len(r.problems)
    n_node = r.require(m, "samples", " (the number of cases)")
    n = None if n_node is None else r.integer(n_node, "design.samples")
    if n is not None and not 1 <= n <= MAX_CASES:
        r.report("design.samples", n_node, f"must be 1 to {MAX_CASES}, got {n_node.value}")
    method = r.optional(m, "method", lambda nd, p: r.choice(nd, p, METHODS, "method"), "lhs")
    s_node = r.require(m, "seed", " (an integer: the same seed draws the same cases)")
    seed = None if s_node is None else r.integer(s_node, "design.seed")
    if seed is not None and seed < 0:
        r.report("design.seed", s_node, f"must be >= 0, got {s_node.value}")
    if len(r.problems) > before:
        return None
    return Design("samples", samples=n, method=method, seed=seed)


def _check_design(r: Reader, design: Design, node, parameters) -> None:
    if design.kind == "grid":
        for p in parameters:
            if p.random:
                r.report(f"parameters.{p.path}", p.line, f"a {p.distribution} distribution needs a samples design "
                                                         f"(design: {{samples: N, method: lhs, seed: S}}); a grid "
                                                         f"takes lists of values")
        if not r.problems and designs.grid_size(parameters) > MAX_CASES:
            r.report("design", node, f"the grid has {designs.grid_size(parameters)} cases, more than {MAX_CASES}")


def _metrics(r: Reader, node, scenario: Scenario, parameters) -> list:
    if kind(node) != "mapping":
        r.report("metrics", node, f"must be a mapping of names to {{quantity: ..., reduce: ...}}, got {describe(node)}")
        return []
    if not node.value:
        r.report("metrics", node, "must name at least one metric")
        return []
    names = {"bodies": [b.name for b in scenario.bodies], "connectors": [c.name for c in scenario.connectors],
             "joints": [j.name for j in scenario.joints]}
    taken = set(TABLE_COLUMNS) | {p.path for p in parameters}
    out, seen = [], {}
    for key_node, value_node in node.value:
        name = r.name(key_node, "metrics")
        if name is None:
            continue
        path = f"metrics.{name}"
        if name in seen:
            r.report("metrics", key_node, f"duplicate metric {_clip(name)!r} (first at line {seen[name]})")
            continue
        seen[name] = line_of(key_node)
        if name in taken:
            r.report(path, key_node, f"{name!r} is already a column of the table (a parameter or one of "
                                     f"{', '.join(TABLE_COLUMNS)}); choose another name")
            continue
        m = r.mapping(value_node, path, _METRIC_KEYS)
        if m is None:
            continue
        before = len(r.problems)
        q_node, red_node = r.require(m, "quantity"), r.require(m, "reduce")
        quantity = None
        if q_node is not None:
            text = r.string(q_node, m.sub("quantity"), nonempty=True)
            if text is not None:
                try:
                    quantity = metrics.parse_quantity(text, names)
                except metrics.MetricError as exc:
                    r.report(m.sub("quantity"), q_node, str(exc))
        how = None if red_node is None else r.choice(red_node, m.sub("reduce"), metrics.REDUCTIONS, "reduction")
        window = r.optional(m, "window", lambda n, p: _window(r, n, p), None)
        if len(r.problems) == before:
            out.append(metrics.Metric(name, quantity, how, window))
    return out


def _window(r: Reader, node, path: str) -> Optional[tuple]:
    nums = r.numbers(node, path, 2, what="times [t0, t1] in s")
    if nums is None:
        return None
    t0, t1 = nums
    if t0 < 0 or not t1 >= t0:
        r.report(path, node, f"must be [t0, t1] with 0 <= t0 <= t1, got [{t0:g}, {t1:g}]")
        return None
    return (t0, t1)


# --------------------------------------------------------------------------
# the cases
# --------------------------------------------------------------------------
def _with_cases(study: Study, values: dict) -> Study:
    """Every case's scenario, validated by the scenario loader; StudyError naming each invalid case."""
    table = designs.cases(study.parameters, study.design)
    cases, problems, bad = [], [], 0
    for index, vals in enumerate(table):
        data = copy.deepcopy(values)
        for p, v in zip(study.parameters, vals):
            keypaths.assign(data, p.segments, v, study.scenario)
        try:
            sc = scenario_from_dict(data, base=study.base)
        except ScenarioError as exc:
            bad += 1
            if bad <= SHOWN_CASES:
                what = "; ".join(f"{q.path}: {q.message}" for q in exc.problems)
                problems.append(Problem(f"case {index}", None, f"({study.describe_values(vals)}) is not a valid "
                                                               f"scenario: {what}"))
            continue
        late = _windows_outside(study.metrics, sc)
        if late:
            bad += 1
            if bad <= SHOWN_CASES:
                problems.append(Problem(f"case {index}", None, f"({study.describe_values(vals)}): {late}"))
            continue
        cases.append(Case(index, tuple(vals), data, sc.text))
    if bad:
        if bad > SHOWN_CASES:
            problems.append(Problem("cases", None, f"… and {bad - SHOWN_CASES} more invalid cases "
                                                   f"({bad} of {len(table)} in all)"))
        problems.append(Problem("cases", None, "the study was not started: fix the parameter values (or the base "
                                               "scenario) so that every case is a valid scenario"))
        raise StudyError(problems, study.source)
    return dataclasses.replace(study, cases=tuple(cases))


def _windows_outside(metric_list, sc: Scenario) -> str:
    """Why a metric's window holds no frame of this case's run ('' when every window holds one)."""
    end, interval = sc.time.end, sc.output.interval
    for m in metric_list:
        if m.window is None:
            continue
        t0, t1 = m.window
        tol = metrics._WINDOW_RTOL * max(1.0, abs(t0), abs(t1))
        if t0 > end + tol:
            return f"metric {m.name!r}: the window starts at {t0:g} s, after the run ends (time.end = {end:g} s)"
        first = math.ceil((t0 - tol) / interval)
        if first * interval > min(t1, end) + tol:
            return (f"metric {m.name!r}: no stored frame lies in the window [{t0:g}, {t1:g}] s (frames every "
                    f"{interval:g} s); widen it or make output.interval smaller")
    return ""


__all__ = ["Study", "Case", "StudyError", "load_study", "study_from_dict", "parse_study", "TABLE_COLUMNS"]
