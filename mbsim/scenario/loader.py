"""Scenario files (SCENARIO.md, format version 1) → validated frozen specs.

The whole file is checked before anything is built and every problem is
reported at once, each with its key path and line (ScenarioError).  Choices
SCENARIO.md leaves open, made here:

- an explicit null counts as "not given" only for the optional sections
  ``integrator``, ``integrator.newton``, ``integrator.joints``, ``output``,
  ``connectors``, ``joints`` and ``loads``; anywhere else null is refused
  like any other wrong value;
- ``ramp`` and ``smooth_ramp``: ``t0`` and ``t1`` are required with t1 > t0,
  ``from`` defaults to 0 and ``to`` to 1 (a ramp up to the full vector);
  ``table`` needs at least two rows;
- joint names are a namespace of their own (a joint may share a connector's
  name); a drive's F(0) counts as 0 within 1e-12, and a distance joint's
  ``length`` equals the initial distance d0 within 1e-9 · max(1, d0);
- ``output.interval`` is stored as written (it is a whole multiple of
  ``time.step`` within a relative 1e-9, so ``round(interval / step)`` is the
  stride); it may exceed ``time.end``;
- a 3×3 inertia within the symmetry tolerance is stored symmetrized, and
  positive definite means every eigenvalue > 1e-12 · the largest |eigenvalue|
  (for ``[I1, I2, I3]`` too: the smallest moment > 1e-12 · the largest);
- a torsional damper's ``axis`` under P1/none is read (it must be numbers)
  but not stored;
- names are any non-blank text; a number, boolean or null where a name
  belongs is refused (quote it).

Extension of SCENARIO.md (allowed by its "the program may accept more"):
``time.adaptive`` (true/false, default false) switches on step cut-back and
regrowth (mbsim.stepping); ``time.min_step`` (> 0, ≤ ``time.step``, default
1e-6 · ``time.step``) is the smallest step it may cut to.  With
``time.tolerance`` (SCENARIO.md; ``rtol`` in (0, 1], ``atol`` in (0, 1] m or
rad, default ``rtol``) the steps are error-controlled, ``time.max_step`` (≥
``time.step``, default unbounded) the largest, ``time.controller`` (``pi``,
default, or ``elementary``) the step-size rule, and ``output.interval`` any
positive value.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import json
import math
import os
import re
import stat
from typing import Optional

import numpy as np
import yaml

from .errors import Problem, ScenarioError
from .spec import STEP_CONTROLLERS
from .spec import (
    DRIVEN, JOINT_TYPES, METHODS, TANGENTS, WORLD, BodySpec, Constant, ConnectorSpec, IntegratorSpec, JointSpec,
    LoadSpec, OutputSpec, Ramp, Scenario, Sine, SmoothRamp, StaticsSpec, Table, TimeSpec, frozen_array,
)
from .yamlnodes import TOP, Map, Reader, _clip, compose, describe, join, kind, line_of, nodes_of, norm, suggest

__all__ = ["load_scenario", "parse_scenario", "scenario_from_dict", "read_text"]

_TOP_KEYS = ("mbsim", "name", "description", "gravity", "time", "integrator", "output",
             "bodies", "connectors", "joints", "loads", "statics", "initial")
_BODY_KEYS = ("name", "fixed", "mass", "inertia", "position", "orientation", "velocity",
              "angular_velocity")
_ORIENTATIONS = ("quaternion", "axis_angle", "rotation_vector")
_CONNECTOR_COMMON = ("name", "type", "bodies")  # every element kind's keys besides its own (mbsim.elements)
_TIME_FUNCTIONS = ("constant", "ramp", "sine", "table", "smooth_ramp")
_JOINT_COMMON = ("name", "type", "bodies", "drive")  # every joint type's keys besides its own
_JOINT_OWN = dict(zip(JOINT_TYPES, (
    ("point",),  # spherical
    ("point", "axis"),  # revolute
    ("point", "axis"),  # prismatic
    ("point", "axis"),  # cylindrical
    ("point", "axis"),  # planar
    ("point", "axes"),  # universal
    ("point",),  # lock
    ("points", "length"),  # distance
)))
# joint stops (THEORY §13): the key and the coordinate it limits, per type
_JOINT_LIMITS = {"revolute": (("limits", "angle"),), "prismatic": (("limits", "displacement"),),
                 "cylindrical": (("angle_limits", "angle"), ("displacement_limits", "displacement"))}
_JOINT_KEYS = {jtype: _JOINT_COMMON + own + tuple(k for k, _ in _JOINT_LIMITS.get(jtype, ()))
               for jtype, own in _JOINT_OWN.items()}
_JOINT_EVERY = sorted({k for own in _JOINT_KEYS.values() for k in own})
_JOINT_FOREIGN = {jtype: {k: f"{k!r} is not a key of a {jtype} joint (it belongs to: "
                             f"{', '.join(t for t, own_ in _JOINT_KEYS.items() if k in own_)})"
                          for k in _JOINT_EVERY if k not in own}
                  for jtype, own in _JOINT_KEYS.items()}
_DRIVE_ZERO = 1e-12  # |F(0)| allowed for a drive
_LENGTH_RTOL = 1e-9  # a distance joint's length vs the initial distance, relative to max(1, distance)
_PERPENDICULAR = 1e-6  # |cos| allowed between a universal joint's axes
_SYMMETRY_RTOL = 1e-9
_EIGEN_RTOL = 1e-12
_UNIT_TOL = 1e-6
_MULTIPLE_RTOL = 1e-9
DEFAULT_MIN_STEP = 1e-6  # time.min_step default, as a fraction of time.step (about 20 halvings)
SMALLEST_STEP = 1e-100  # [s] time.step and min_step: 1/(βΔt²) times a position must stay finite
MAX_ITERATIONS = 1000  # integrator.newton.max_iterations: the work arrays and counters are sized by it
# Masses and principal moments of inertia of the bodies (in the scenario's units; kg and kg·m² in SI).
# Upper bound: every tangent holds m/(βΔt²) and J/(βΔt²) (β ≥ 1/4), and the joints' rows are scaled by
# m_ref/(βΔt²) and J_ref/(βΔt²) (the mean mass and mean largest moment): at the smallest step, SMALLEST_STEP,
# that is up to 4e200·m, so m, J ≤ 1e100 keep them below 4e300 -- with the margin the products the laws and
# the energies form with a mass still need (m·|r| and m·g·r with points up to MAX_EXTENT = 1e150 m from the
# origin: 1e251; the sum of a million masses: 1e106).  A mass of 1e308 on a revolute joint made the
# joints' equations singular at t = 0 (SingularJoints escaped mbsim.simulate); 1e200 made every step's
# residual infinite.  Lower bound, the mirror image: the initial accelerations F/m and M/J and the angular
# tolerances divide by m and J, so 1/m, 1/J ≤ 1e100 keep them as finite as the forces allow, and m/(βΔt²)
# stays a normal double for every step up to 1e100 s (a mass of 5e-324 made the accelerations infinite).
# Physical models sit far inside: a micro-mechanism (1e-12 kg, 1e-24 kg·m²) to a star (2e30 kg,
# 6e46 kg·m²).  How far apart the principal moments of one body may be is _EIGEN_RTOL's rule.
MIN_MASS, MAX_MASS = 1e-100, 1e100
MIN_MOMENT, MAX_MOMENT = 1e-100, 1e100


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------
def load_scenario(path, *, analysis: bool = False) -> Scenario:
    """Read, validate and return the scenario in the file at ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        A UTF-8 YAML file (SCENARIO.md).
    analysis : bool
        Read it for an analysis at a state (``mbsim statics``, ``mbsim modes``): ``time`` and ``output``
        are not needed and are ignored if present (``Scenario.time`` is then None).

    Raises
    ------
    ScenarioError
        Listing every problem: an unreadable or non-UTF-8 file, invalid
        YAML, or anything that breaks SCENARIO.md.
    """
    source = os.fspath(path)
    return parse_scenario(read_text(source), source, analysis=analysis)


def read_text(path) -> str:
    """The UTF-8 text of the YAML file at ``path`` (a scenario, or a parameter study), read with the
    scenario's safeguards: a regular file (a FIFO or a device is refused before it is opened) of at
    most MAX_SCENARIO_BYTES.

    Raises
    ------
    ScenarioError
        The file cannot be read, is not a regular file, is too large or is not UTF-8.
    """
    source = os.fspath(path)
    try:
        # what open() would block on (a FIFO) or read without end (/dev/zero) is refused before it is opened
        st = os.stat(source)
        if not stat.S_ISREG(st.st_mode):
            what = "a directory" if stat.S_ISDIR(st.st_mode) else _SPECIAL.get(stat.S_IFMT(st.st_mode), "not a file")
            raise ScenarioError([Problem("<file>", None, f"is {what}, not a regular file; give a YAML file")],
                                source)
        if st.st_size > MAX_SCENARIO_BYTES:
            raise ScenarioError([Problem("<file>", None, _too_large(st.st_size))], source)
        with open(source, "rb") as f:
            raw = f.read(MAX_SCENARIO_BYTES + 1)  # a file growing while read is still bounded
    except OSError as e:
        raise ScenarioError([Problem("<file>", None, f"cannot read: {e.strerror or e}")], source) from None
    if len(raw) > MAX_SCENARIO_BYTES:
        raise ScenarioError([Problem("<file>", None, _too_large(len(raw)))], source)
    return _decode(raw, source)


# Larger scenario files are refused: validating keeps the YAML node graph, about 90 bytes per byte of
# text (433 MiB for the 4.8 MB of a 10 000-body chain), so 64 MiB (~130 000 bodies) needs ~6 GB.
MAX_SCENARIO_BYTES = 64 * 1024**2
_SPECIAL = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
            stat.S_IFSOCK: "a socket"}


def _too_large(size: int) -> str:
    return (f"is {size / 1024**2:.1f} MiB; scenario files above {MAX_SCENARIO_BYTES // 1024**2} MiB are refused "
            f"(validating one takes about 90 bytes of memory per byte of text)")


def parse_scenario(text: str, source: Optional[str] = None, *, analysis: bool = False, laws: bool = True) -> Scenario:
    """Validate scenario ``text`` (already read) and return the Scenario.

    Parameters
    ----------
    text : str
        The YAML text; kept exactly in ``Scenario.text``.  UTF-8 bytes are
        accepted too.
    source : str, optional
        Path the text came from: used in messages and for the default name.
    analysis : bool
        As :func:`load_scenario`'s.
    laws : bool
        Import, compile and try the springs' user laws (THEORY §13; from the directory of ``source`` first),
        refusing one that fails; False: check only their form (a scenario read back from a result, whose
        law module may not be at hand: such a scenario cannot be run).
    """
    if len(text) > MAX_SCENARIO_BYTES:
        raise ScenarioError([Problem("<file>", None, _too_large(len(text)))], source)
    if isinstance(text, (bytes, bytearray)):
        text = _decode(bytes(text), source)
    default = os.path.splitext(os.path.basename(source))[0] if source else ""
    return _parse(text, source, default or "scenario", analysis, laws)


def scenario_from_dict(data: dict, name: Optional[str] = None, *, analysis: bool = False,
                       base: Optional[str] = None) -> Scenario:
    """Validate a scenario given as a Python mapping (the YAML file's contents).

    The mapping is written as YAML text (:func:`to_yaml`, kept as
    ``Scenario.text``) and validated as that text would be, by exactly the
    file rules, with line numbers in problems that refer to it -- but from
    the node graph built straight from the mapping
    (:func:`mbsim.scenario.yamlnodes.nodes_of`), not by parsing the text
    again.  Tuples, numpy arrays and numpy scalars are turned into lists
    and numbers first.

    Parameters
    ----------
    data : dict
        Keys and values as in a scenario file.
    name : str, optional
        Scenario name when ``data`` has no ``name`` (default ``scenario``).
    base : str, optional
        The directory where the springs' user laws are looked for first (else only on ``sys.path``): a
        sweep's cases, made from the values of a scenario file, look beside that file.
    """
    try:
        with _gc_paused():
            plain = _plain(data)
            text = to_yaml(plain)
    except (yaml.YAMLError, RecursionError, TypeError, ValueError) as e:
        raise ScenarioError([Problem("<data>", None, f"cannot be written as YAML: {e}")]) from None
    if (not isinstance(plain, dict) or not plain or yaml.reader.Reader.NON_PRINTABLE.search(text)
            or _YAML_BREAKS.search(text)):
        return _parse(text, None, name or "scenario", analysis, base=base)  # what the YAML reader says
    with _gc_paused():
        try:
            root = nodes_of(plain, _flow)
        except (RecursionError, ValueError):  # too deep, or a key YAML cannot hold: as the parser says
            return _parse(text, None, name or "scenario", analysis, base=base)
        return _validate(root, text, None, name or "scenario", analysis, base=base)


def to_yaml(data) -> str:
    """YAML text of a scenario mapping: block style at the top, one flow line per list item.

    Flow collections are written as JSON, which YAML reads as flow style —
    fast for models of many bodies (PyYAML's emitter is pure Python) and
    readable: every body, connector and load on its own line.
    """
    if not isinstance(data, dict):
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)

    flow = _flow
    lines = []
    for key, value in data.items():
        k = flow(str(key)) if not isinstance(key, str) or not key.isidentifier() else key
        if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            lines.append(f"{k}:")
            lines.extend(f"  - {flow(item)}" for item in value)
        elif isinstance(value, dict) and value:
            lines.append(f"{k}:")
            lines.extend(f"  {flow(str(k2)) if not isinstance(k2, str) or not k2.isidentifier() else k2}: "
                         f"{flow(v2)}" for k2, v2 in value.items())
        else:
            lines.append(f"{k}: {flow(value)}")
    return "\n".join(lines) + "\n"


# Characters JSON leaves as they are and YAML reads as line breaks (NEL, LS, PS).
_YAML_BREAKS = re.compile("[\x85\u2028\u2029]")


def _flow(v) -> str:
    """A value as one line of JSON, which YAML reads as flow style."""
    return json.dumps(v, ensure_ascii=False, allow_nan=True)


def _decode(raw: bytes, source: Optional[str]) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        message = f"is not UTF-8 text (byte 0x{raw[e.start]:02x} at line {line})"
        raise ScenarioError([Problem("<file>", line, message)], source) from None


def _plain(value):
    """Python-API values → what yaml.safe_dump can write."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


# --------------------------------------------------------------------------
# the top level
# --------------------------------------------------------------------------
@contextlib.contextmanager
def _gc_paused():
    """Pause Python's cyclic garbage collector.

    Composing and validating a scenario allocates millions of small objects and
    frees none of them in cycles; each allocation threshold crossed starts a
    collection that walks all of them, which made reading a 10 000-body scenario
    take 12 s instead of 2.5 s.  Reference counting still frees everything.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _parse(text: str, source: Optional[str], default_name: str, analysis: bool = False,
           laws: bool = True, base: Optional[str] = None) -> Scenario:
    with _gc_paused():
        return _parse_unpaused(text, source, default_name, analysis, laws, base)


def _parse_unpaused(text: str, source: Optional[str], default_name: str, analysis: bool, laws: bool,
                    base: Optional[str]) -> Scenario:
    root, problems = compose(text)
    if root is None:
        raise ScenarioError(problems, source)
    return _validate(root, text, source, default_name, analysis, laws, base)


def _validate(root, text: str, source: Optional[str], default_name: str, analysis: bool = False,
              laws: bool = True, base: Optional[str] = None) -> Scenario:
    r = Reader()
    # what reading a spring's user law needs (mbsim.elements.spring): where its module is looked for first,
    # and whether it is imported and compiled
    r.base = base if base is not None else (os.path.dirname(os.path.abspath(source)) if source else None)
    r.laws = laws
    scenario = _scenario(r, root, default_name, text, source, analysis)
    if r.problems:
        # Stable sort: file order, problems without a line first.
        raise ScenarioError(sorted(r.problems, key=lambda p: p.line or 0), source)
    return scenario




def _scenario(r: Reader, root, default_name: str, text: str, source, analysis: bool = False) -> Optional[Scenario]:
    if kind(root) != "mapping":
        r.report(TOP, root, f"a scenario must be a mapping of keys (starting with 'mbsim: 1'), "
                            f"got {describe(root)}")
        return None
    m = r.mapping(root, "", _TOP_KEYS)
    version = r.require(m, "mbsim")
    if version is not None and not (kind(version) == "number" and version.value.lstrip("+") == "1"):
        r.report("mbsim", version, f"must be 1 (the format version this program reads), "
                                   f"got {describe(version)}")
    name = r.optional(m, "name", r.name, default_name)
    description = r.optional(m, "description", r.string, "")
    gravity = r.optional(m, "gravity", r.vector, np.zeros(3))
    if analysis:  # statics and modes: time and output ignored (SCENARIO.md, analyses beside the time integration)
        quiet = Reader()
        time = _time(quiet, m) if m.has("time") else None
        output = _section(quiet, m, "output", lambda r, node, path: _output(r, node, path, time)) if time else None
        if quiet.problems:
            time = output = None
    else:
        time = _time(r, m)
        output = _section(r, m, "output", lambda r, node, path: _output(r, node, path, time))
    integrator = _section(r, m, "integrator", _integrator)
    bodies = _bodies(r, m)
    known = {WORLD: (True, None)}
    known.update((b.name, (b.fixed, b.line)) for b in bodies if b is not None and b.name is not None)
    connectors = _items(r, m, "connectors", lambda node, path, i: _connector(r, node, path, i, known))
    _unique_names(r, connectors, "connectors", "connector")
    joints = _items(r, m, "joints", lambda node, path, i: _joint(r, node, path, i, known))
    _unique_names(r, joints, "joints", "joint")
    loads = _items(r, m, "loads", lambda node, path, i: _load(r, node, path, known, i))
    _unique_load_names(r, m, loads)
    statics = _section(r, m, "statics", _statics) or StaticsSpec()
    initial = r.optional(m, "initial", lambda n, p: r.choice(n, p, ("as_given", "equilibrium"), "value"), "as_given")
    if r.problems:
        return None
    return Scenario(
        name=name, description=description, gravity=frozen_array(gravity), time=time,
        integrator=integrator or IntegratorSpec(),
        output=output or OutputSpec(interval=time.step if time is not None else 0.0),
        bodies=tuple(b.spec for b in bodies), connectors=tuple(c.spec for c in connectors),
        loads=tuple(loads), joints=tuple(j.spec for j in joints), text=text, source=source,
        statics=statics, initial=initial,
    )


def _section(r: Reader, m: Map, key: str, read):
    """An optional mapping section; absent or null → None (the defaults)."""
    node = m.get(key)
    if node is None or kind(node) == "null":
        return None
    return read(r, node, m.sub(key))


def _items(r: Reader, m: Map, key: str, read) -> list:
    """An optional list section (absent, null or []), each item read by ``read``."""
    node = m.get(key)
    if node is None or kind(node) == "null":
        return []
    nodes = r.sequence(node, key)
    if nodes is None:
        return []
    return [read(item, f"{key}[{i}]", i) for i, item in enumerate(nodes)]


def _time(r: Reader, top: Map) -> Optional[TimeSpec]:
    node = r.require(top, "time")
    m = None if node is None else r.mapping(node, "time", ("end", "step", "adaptive", "min_step", "tolerance",
                                                           "max_step", "controller"))
    if m is None:
        return None
    end_node, step_node = r.require(m, "end"), r.require(m, "step")
    end = None if end_node is None else r.number(end_node, "time.end", ">0")
    step = None if step_node is None else r.number(step_node, "time.step", ">0")
    if end is None or step is None:
        return None
    if step > end:
        r.report("time.step", step_node, f"time.step must not exceed time.end ({end_node.value}), "
                                         f"got {step_node.value}")
        return None
    if step < SMALLEST_STEP:
        r.report("time.step", step_node, f"must be at least {SMALLEST_STEP:g} s, got {step_node.value} "
                                         f"(the scheme divides by βΔt², which would overflow)")
        return None
    adaptive = r.optional(m, "adaptive", r.boolean, False)
    rtol, atol, max_step, ok = _tolerance(r, m, step, step_node)
    controller = r.optional(m, "controller", lambda n, p: r.choice(n, p, STEP_CONTROLLERS, "controller"), "pi")
    if m.get("controller") is not None and rtol is None and ok:
        r.report("time.controller", m.get("controller"), "only with time.tolerance (error-controlled steps)")
        ok = False
    ok = ok and controller is not None
    min_step = r.optional(m, "min_step", lambda n, p: r.number(n, p, ">0"), max(DEFAULT_MIN_STEP * step, SMALLEST_STEP))
    if min_step is not None and min_step < SMALLEST_STEP:
        r.report("time.min_step", m.get("min_step"), f"must be at least {SMALLEST_STEP:g} s, got "
                                                     f"{m.get('min_step').value} (the scheme divides by βΔt²)")
        return None
    if min_step is not None and min_step > step:
        r.report("time.min_step", m.get("min_step"),
                 f"must not exceed time.step ({step_node.value}), got {m.get('min_step').value}")
        return None
    if adaptive is None or min_step is None or not ok:
        return None
    return TimeSpec(end=end, step=step, adaptive=adaptive or rtol is not None, min_step=min_step, rtol=rtol,
                    atol=atol, max_step=max_step, controller=controller)


def _tolerance(r: Reader, m, step: float, step_node) -> tuple:
    """``time.tolerance`` {rtol, atol} and ``time.max_step``: (rtol, atol, max_step, ok), every problem
    reported (THEORY §14: the steps chosen by their error)."""
    rtol = atol = max_step = None
    ok = True
    node = m.get("tolerance")
    if node is not None and kind(node) != "null":
        tm = r.mapping(node, "time.tolerance", ("rtol", "atol"))
        if tm is None:
            return None, None, None, False
        values = {}
        for key in ("rtol", "atol"):
            if tm.get(key) is None:
                continue
            v = r.number(tm.get(key), tm.sub(key))
            if v is None:
                ok = False
            elif not 0.0 < v <= 1.0:
                unit = "m for positions, rad for rotations" if key == "atol" else "relative"
                r.report(tm.sub(key), tm.get(key), f"must be in (0, 1] ({unit}), got {tm.get(key).value}")
                ok = False
            else:
                values[key] = v
        if tm.get("rtol") is None:
            r.report("time.tolerance", node, "needs rtol (and optionally atol, default rtol): "
                                             "time: {tolerance: {rtol: 1e-6, atol: 1e-6}}")
            ok = False
        rtol, atol = values.get("rtol"), values.get("atol")
        if ok and atol is None:
            atol = rtol
    max_node = m.get("max_step")
    if max_node is not None:
        max_step = r.number(max_node, "time.max_step", ">0")
        if max_step is None:
            ok = False
        elif rtol is None and ok and node is None:
            r.report("time.max_step", max_node, "only with time.tolerance (error-controlled steps); with fixed "
                                               "or cut-back steps time.step is the largest")
            ok = False
        elif max_step < step:
            r.report("time.max_step", max_node, f"must not be below time.step ({step_node.value}), the first "
                                               f"step, got {max_node.value}")
            ok = False
    return rtol, atol, max_step, ok


def _integrator(r: Reader, node, path: str) -> Optional[IntegratorSpec]:
    m = r.mapping(node, path, ("method", "rho_inf", "tangent", "newton", "joints"))
    if m is None:
        return None
    method = r.optional(m, "method", lambda n, p: r.choice(n, p, METHODS, "method"), IntegratorSpec.method)
    rho = r.optional(m, "rho_inf", r.number, 0.9)
    if rho is not None and not 0.0 <= rho <= 1.0:
        r.report(m.sub("rho_inf"), m.get("rho_inf"), f"must be in [0, 1], got {m.get('rho_inf').value}")
    tangent = r.optional(m, "tangent", lambda n, p: r.choice(n, p, TANGENTS, "tangent"), "consistent")
    newton = {}
    newton_node = m.get("newton")
    if newton_node is not None and kind(newton_node) != "null":
        nm = r.mapping(newton_node, m.sub("newton"), ("max_iterations", "rtol", "atol", "modified"))
        if nm is not None:
            iterations = r.optional(nm, "max_iterations", r.integer, 25)
            if iterations is not None and iterations < 1:
                r.report(nm.sub("max_iterations"), nm.get("max_iterations"),
                         f"must be a positive integer, got {nm.get('max_iterations').value}")
            elif iterations is not None and iterations > MAX_ITERATIONS:
                r.report(nm.sub("max_iterations"), nm.get("max_iterations"),
                         f"must be at most {MAX_ITERATIONS}, got {_clip(nm.get('max_iterations').value)} (a Newton "
                         f"iteration that has not converged in {MAX_ITERATIONS} iterations will not: use a smaller "
                         f"time.step or time.adaptive)")
                iterations = None
            newton = dict(
                max_iterations=iterations,
                rtol=r.optional(nm, "rtol", lambda n, p: r.number(n, p, ">0"), 1e-8),
                atol=r.optional(nm, "atol", lambda n, p: r.number(n, p, ">0"), 1e-10),
                modified=r.optional(nm, "modified", r.boolean, IntegratorSpec.modified),
            )
    joints = {}
    joints_node = m.get("joints")
    if joints_node is not None and kind(joints_node) != "null":
        jm = r.mapping(joints_node, m.sub("joints"), ("redundant", "velocities"))
        if jm is not None:
            joints = {key: r.optional(jm, key, lambda n, p, options=options: r.choice(n, p, options, "value"),
                                      getattr(IntegratorSpec, key))
                      for key, options in (("redundant", ("remove", "refuse")),
                                           ("velocities", ("project", "refuse")))}
    return IntegratorSpec(method=method, rho_inf=rho, tangent=tangent, **newton, **joints)


def _output(r: Reader, node, path: str, time: Optional[TimeSpec]) -> Optional[OutputSpec]:
    m = r.mapping(node, path, ("interval", "file"))
    if m is None:
        return None
    file = r.optional(m, "file", lambda n, p: r.string(n, p, nonempty=True), None)
    interval_node = m.get("interval")
    if interval_node is None:
        return None if time is None else OutputSpec(interval=time.step, file=file)
    interval = r.number(interval_node, m.sub("interval"), ">0")
    if interval is None or time is None:
        return None
    if time.controlled:  # frames are interpolated between the steps: any interval
        return OutputSpec(interval=interval, file=file)
    ratio = interval / time.step
    if not math.isfinite(ratio):
        r.report(m.sub("interval"), interval_node, f"is too many time steps ({ratio}) of {time.step:g}")
        return None
    if round(ratio) < 1 or abs(ratio - round(ratio)) > _MULTIPLE_RTOL * ratio:
        r.report(m.sub("interval"), interval_node,
                 f"must be a whole multiple of time.step ({time.step:g}), got {interval_node.value} "
                 f"({ratio:.6g} steps)")
        return None
    return OutputSpec(interval=interval, file=file)


# --------------------------------------------------------------------------
# bodies
# --------------------------------------------------------------------------
class _Body:
    """What connectors and loads need to know about a body, even a broken one."""

    def __init__(self, name, fixed, line, name_node=None, spec=None):
        self.name, self.fixed, self.line, self.name_node, self.spec = name, fixed, line, name_node, spec


def _bodies(r: Reader, top: Map) -> list[_Body]:
    node = r.require(top, "bodies")
    nodes = None if node is None else r.sequence(node, "bodies", "a list of bodies")
    if nodes is None:
        return []
    if not nodes:
        r.report("bodies", node, "must list at least one body")
        return []
    bodies = [_body(r, item, f"bodies[{i}]") for i, item in enumerate(nodes)]
    seen: dict[str, int] = {}
    for i, b in enumerate(bodies):
        if b.name is None:
            continue
        path = f"bodies[{i}].name"
        if b.name == WORLD:
            r.report(path, b.name_node, f"{WORLD!r} is reserved for the implicit fixed body at the origin")
            b.name = None
        elif b.name in seen:
            r.report(path, b.name_node, f"duplicate body name {b.name!r} (first at line {seen[b.name]})")
            b.name = None
        else:
            seen[b.name] = line_of(b.name_node)
    if all(b.fixed is True for b in bodies):
        r.report("bodies", node, "at least one body must not be fixed")
    return bodies


def _body(r: Reader, node, path: str) -> _Body:
    m = r.mapping(node, path, _BODY_KEYS)
    if m is None:
        return _Body(None, None, line_of(node))
    before = len(r.problems)
    name_node = r.require(m, "name")
    name = None if name_node is None else r.name(name_node, m.sub("name"))
    fixed = r.optional(m, "fixed", r.boolean, False)
    why = " (a body that is not fixed needs it)"
    mass, inertia = 0.0, np.zeros((3, 3))
    if m.has("mass"):
        mass = r.number(m.get("mass"), m.sub("mass"), ">0")
        if mass is not None and not MIN_MASS <= mass <= MAX_MASS:
            r.report(m.sub("mass"), m.get("mass"),
                     f"must be between {MIN_MASS:g} and {MAX_MASS:g}, got {_clip(m.get('mass').value)} "
                     f"({_BOUND_WHY.format(what='m')})")
            mass = None
    elif fixed is False:
        r.require(m, "mass", why)
    if m.has("inertia"):
        inertia = _inertia(r, m.get("inertia"), m.sub("inertia"))
    elif fixed is False:
        r.require(m, "inertia", why)
    position = r.optional(m, "position", r.vector, np.zeros(3))
    if position is not None and m.has("position") and not _within_extent(r, m.get("position"), m.sub("position"),
                                                                         position):
        position = None
    orientation = r.optional(m, "orientation", lambda n, p: _orientation(r, n, p),
                            np.array([1.0, 0.0, 0.0, 0.0]))
    velocity = r.optional(m, "velocity", r.vector, np.zeros(3))
    omega = r.optional(m, "angular_velocity", r.vector, np.zeros(3))
    if fixed:
        for key, value in (("velocity", velocity), ("angular_velocity", omega)):
            if value is not None and np.any(value != 0.0):
                r.report(m.sub(key), m.get(key), f"a fixed body never moves; {key} must be zero or left out")
    if len(r.problems) == before and not fixed:
        _first_evaluation(r, m, mass, inertia, position, velocity, omega)
    body = _Body(name, fixed, m.line, name_node)
    if len(r.problems) == before:
        body.spec = BodySpec(
            name=name, fixed=fixed, mass=mass, inertia=frozen_array(inertia),
            position=frozen_array(position), orientation=frozen_array(orientation),
            velocity=frozen_array(velocity), angular_velocity=frozen_array(omega), line=m.line,
        )
    return body


def _within_extent(r: Reader, node, path: str, point: np.ndarray) -> bool:
    """Whether a body's position or a joint's point is within MAX_EXTENT of the origin, the connectors'
    bound (else reported): the joints' and connectors' laws square the arms from a body's centre to their
    points, so a body 1e200 m from its joint made the joints' equations singular at t = 0 (SingularJoints
    escaped mbsim.simulate); within the bound an arm is at most 2e150 m and m·|r| at most 1e250."""
    from ..elements.base import MAX_EXTENT  # (the connectors' bound)
    if np.abs(point).max() <= MAX_EXTENT:
        return True
    r.report(path, node, f"too large: farther than {MAX_EXTENT:g} from the origin (the laws square the arms "
                         f"from a body's centre to its joints' and connectors' points: beyond this they overflow)")
    return False


def _first_evaluation(r: Reader, m: Map, mass, inertia, position, velocity, omega) -> None:
    """A moving body's initial values must survive the first evaluation: its momenta and kinetic
    energy (stored in frame 0) and its angular momentum about the origin finite (issue 15: 1e200 m/s
    was accepted and overflowed frame 0)."""
    with np.errstate(all="ignore"):
        p = mass * velocity
        jw = inertia @ omega
        checks = (("velocity", (p, mass * float(velocity @ velocity))),
                  ("angular_velocity", (jw, float(omega @ jw))),
                  ("position", (np.cross(position, p),)))
    for key, values in checks:
        if not all(np.all(np.isfinite(v)) for v in values):
            node = m.get(key)
            r.report(m.sub(key), node if node is not None else m.node,
                     f"too large: the body's momentum or kinetic energy at t = 0 is not finite (numbers beyond "
                     f"double precision)")
            return


# why masses and moments are bounded (MAX_MASS), said in the refusal
_BOUND_WHY = ("the scheme forms {what}/(βΔt²) with Δt down to 1e-100 s and divides by {what}: outside these bounds "
              "that arithmetic leaves double precision")


def _moments_bounded(r: Reader, node, path: str, smallest: float, largest: float) -> bool:
    """Whether the principal moments ``smallest`` ... ``largest`` are within MIN_MOMENT and MAX_MOMENT
    (else reported)."""
    if MIN_MOMENT <= smallest and largest <= MAX_MOMENT:
        return True
    r.report(path, node, f"principal moments must be between {MIN_MOMENT:g} and {MAX_MOMENT:g}, got "
                         f"{smallest:.6g} to {largest:.6g} ({_BOUND_WHY.format(what='J')})")
    return False


def _inertia(r: Reader, node, path: str) -> Optional[np.ndarray]:
    """``[I1, I2, I3]`` (all > 0) or a symmetric positive-definite 3×3 matrix, its principal moments
    within MIN_MOMENT and MAX_MOMENT."""
    form = "must be [I1, I2, I3] or a 3×3 matrix (3 rows of 3 numbers)"
    rows = r.sequence(node, path, "[I1, I2, I3] or a 3×3 matrix")
    if rows is None:
        return None
    kinds = {kind(row) for row in rows}
    if len(rows) != 3:
        r.report(path, node, f"{form}, got {len(rows)} entries")
        return None
    if kinds & {"list", "mapping", "tagged"} and kinds != {"list"}:
        r.report(path, node, f"{form}, got a mix of numbers and lists")
        return None
    if kinds != {"list"}:
        moments = r.numbers(node, path, 3, item=lambda n, p: r.number(n, p, ">0"))
        if moments is not None and not min(moments) > _EIGEN_RTOL * max(moments):
            # the matrix form's rule: a body this ill-conditioned has no computable rotation
            r.report(path, node, f"must be positive definite to working precision: the smallest principal moment "
                                 f"must exceed {_EIGEN_RTOL:g} × the largest, got {min(moments):g} and "
                                 f"{max(moments):g}")
            return None
        if moments is not None and not _moments_bounded(r, node, path, min(moments), max(moments)):
            return None
        return None if moments is None else np.diag(moments)
    a = r.matrix(node, path)
    if a is None:
        return None
    scale = float(np.max(np.abs(a))) or 1.0
    a = a / scale  # eigenvalues of huge or tiny entries without overflow
    asym = np.abs(a - a.T)
    if np.max(asym) > _SYMMETRY_RTOL:
        i, j = np.unravel_index(np.argmax(asym), a.shape)
        r.report(path, node, f"must be symmetric; [{i}][{j}] = {a[i, j] * scale:g} "
                             f"but [{j}][{i}] = {a[j, i] * scale:g}")
        return None
    a = 0.5 * (a + a.T)  # within round-off of the written matrix; exact symmetry downstream
    eig = np.linalg.eigvalsh(a)
    if not eig[0] > _EIGEN_RTOL * np.max(np.abs(eig)):
        shown = ", ".join(f"{float(e) * scale:.6g}" for e in eig)  # (Python floats: inf without a warning)
        r.report(path, node, f"must be positive definite; eigenvalues are {shown}")
        return None
    # (eigenvalues compared before scaling back: the largest may exceed the largest entry 3-fold)
    if not (eig[0] >= MIN_MOMENT / scale and eig[-1] <= MAX_MOMENT / scale):
        _moments_bounded(r, node, path, float(eig[0]) * scale, float(eig[-1]) * scale)
        return None
    return a * scale






def _orientation(r: Reader, node, path: str) -> Optional[np.ndarray]:
    """One of the three forms → unit quaternion [w, x, y, z] (body-to-world)."""
    m = r.mapping(node, path, _ORIENTATIONS)
    if m is None:
        return None
    form = r.exactly_one(m, _ORIENTATIONS)
    if form is None:
        return None
    sub, value = m.sub(form), m.get(form)
    if form == "quaternion":
        q = r.numbers(value, sub, 4)
        if q is None:
            return None
        q = np.array(q)
        n = norm(q)
        if n == 0.0:
            r.report(sub, value, "must not be zero")
            return None
        if abs(n - 1.0) > _UNIT_TOL:
            r.report(sub, value, f"must have norm 1 (within {_UNIT_TOL:g}), got norm {n:.9g}")
            return None
        return q / n
    if form == "axis_angle":
        am = r.mapping(value, sub, ("axis", "angle"))
        if am is None:
            return None
        axis_node, angle_node = r.require(am, "axis"), r.require(am, "angle")
        axis = None if axis_node is None else r.unit(axis_node, am.sub("axis"))
        angle = None if angle_node is None else r.number(angle_node, am.sub("angle"))
        if axis is None or angle is None:
            return None
        return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])
    v = r.vector(value, sub)
    if v is None:
        return None
    theta = norm(v)
    if not math.isfinite(theta):
        r.report(sub, value, "is too long for a finite angle")
        return None
    # sin(θ/2)/θ written with sinc so that θ → 0 needs no special case
    return np.concatenate([[math.cos(theta / 2)], 0.5 * np.sinc(theta / (2 * math.pi)) * v])


# --------------------------------------------------------------------------
# connectors
# --------------------------------------------------------------------------
class _Connector:
    """A connector's (or a joint's) name (for the uniqueness check) and its spec when it is clean."""

    def __init__(self, name, name_node, node, spec=None):
        self.name, self.name_node, self.node, self.spec = name, name_node, node, spec


def _connector_rules() -> tuple[dict, dict, dict, list]:
    """:func:`_rules_of` the element registry as it is now (a kind registered later counts from then on)."""
    from ..elements import ELEMENTS
    return _rules_of(ELEMENTS)


@functools.lru_cache(maxsize=4)
def _rules_of(registry: tuple) -> tuple[dict, dict, dict, list]:
    """From the element registry (each kind's file declares its keys and reads them): the keys of every
    kind by type, the aliases of the type names, per type a message for each key that belongs to other
    types only, and every key of any type.  Kinds of the ``joints`` section (``section``) are not
    connector types: the loader reads joints itself (:func:`_joint`)."""
    kinds = [k for k in registry if getattr(k, "section", "connectors") == "connectors"
             and getattr(k, "variant_of", None) is None]  # (a variant is read as the type it is written as)
    keys = {k.type: _CONNECTOR_COMMON + k.keys for k in kinds}
    aliases = {alias: k.type for k in kinds for alias in k.aliases}
    every = sorted({k for own in keys.values() for k in own})
    foreign = {ctype: {k: f"{k!r} is not a key of a {ctype} (it belongs to: "
                          f"{', '.join(t for t, own_ in keys.items() if k in own_)})"
                       for k in every if k not in own}
               for ctype, own in keys.items()}
    return keys, aliases, foreign, every


def _connector(r: Reader, node, path: str, index: int, known: dict) -> _Connector:
    if kind(node) != "mapping":
        r.report(path, node, f"must be a mapping, got {describe(node)}")
        return _Connector(None, None, node)
    keys, aliases, foreign, every = _connector_rules()
    ctype = _connector_type(r, node, path, keys, aliases, elsewhere=JOINT_TYPES)
    if ctype is None:  # keys cannot be judged by type: only refuse keys no type has
        m = r.mapping(node, path, every)
    else:
        m = r.mapping(node, path, keys[ctype], foreign[ctype])
    before = len(r.problems)
    name_node = m.get("name")
    if name_node is not None:
        name = r.name(name_node, m.sub("name"))
    else:
        name = None if ctype is None else f"{ctype}-{index}"
    result = _Connector(name, name_node, node)
    pair = _connector_bodies(r, m, known)
    if ctype is None:
        return result
    from ..elements import BY_TYPE
    fields = BY_TYPE[ctype].read(r, m)
    if len(r.problems) > before or pair is None:
        return result
    named = set(ConnectorSpec.__dataclass_fields__)
    fields = {k: frozen_array(v) if isinstance(v, np.ndarray) else v for k, v in fields.items()}
    params = {k: v for k, v in fields.items() if k not in named}
    fields = {k: v for k, v in fields.items() if k in named}
    result.spec = ConnectorSpec(name=name, type=ctype, body_a=pair[0], body_b=pair[1], line=m.line, params=params,
                                **fields)
    return result


def _connector_type(r: Reader, node, path: str, keys: dict, aliases: dict, what: str = "connector",
                    elsewhere: tuple = ()) -> Optional[str]:
    """The stored type (alias resolved); read first because it decides the allowed keys.  ``elsewhere``:
    the types of the other list section (a joint type among connectors, or the reverse)."""
    type_node = next((v for k, v in node.value if getattr(k, "value", None) == "type"), None)
    if type_node is None:
        r.report(path, node, "missing required key 'type'")
        return None
    written = r.string(type_node, join(path, "type"))
    if written is None:
        return None
    ctype = aliases.get(written, written)
    if ctype not in keys:
        options = list(keys) + list(aliases)
        other = "joint" if what == "connector" else "connector"
        hint = f"; {written!r} is a {other} type: list it under {other}s" if written in elsewhere else ""
        r.report(join(path, "type"), type_node, f"unknown {what} type {written!r}"
                 f"{suggest(written, options)}; expected one of {', '.join(options)}{hint}")
        return None
    return ctype


def _connector_bodies(r: Reader, m: Map, known: dict, what: str = "connector") -> Optional[tuple[str, str]]:
    """``bodies: [A, B]``: two different declared bodies (or world), not both fixed."""
    node = r.require(m, "bodies")
    path = m.sub("bodies")
    names = None if node is None else r.numbers(node, path, 2, item=r.string, what="body names")
    if names is None:
        return None
    ok = True
    for i, name in enumerate(names):
        if name not in known:
            r.report(f"{path}[{i}]", node.value[i],
                     f"unknown body {name!r}{suggest(name, known)}; declare it under bodies or use {WORLD!r}")
            ok = False
    if not ok:
        return None
    a, b = names
    if a == b:
        r.report(path, node, f"a {what} cannot join a body to itself ({a!r})")
        return None
    if known[a][0] is True and known[b][0] is True:
        r.report(path, node, f"joins two fixed bodies ({a!r} and {b!r}); at least one must move")
        return None
    return a, b


def _unique_names(r: Reader, items: list[_Connector], key: str, what: str) -> None:
    """Names unique within one list section (``key``: connectors or joints, each a namespace)."""
    seen: dict[str, int] = {}
    for i, c in enumerate(items):
        if c.name is None:
            continue
        explicit = c.name_node is not None
        where = c.name_node if explicit else c.node
        if c.name in seen:
            which = f"{what} name" if explicit else f"default {what} name"
            r.report(f"{key}[{i}]" + (".name" if explicit else ""), where,
                     f"duplicate {which} {c.name!r} (first at line {seen[c.name]})")
        else:
            seen[c.name] = line_of(where)


# --------------------------------------------------------------------------
# joints
# --------------------------------------------------------------------------
def _joint(r: Reader, node, path: str, index: int, known: dict) -> _Connector:
    if kind(node) != "mapping":
        r.report(path, node, f"must be a mapping, got {describe(node)}")
        return _Connector(None, None, node)
    keys, aliases, _, _ = _connector_rules()
    jtype = _connector_type(r, node, path, _JOINT_KEYS, {}, "joint", (*keys, *aliases))
    if jtype is None:  # keys cannot be judged by type: only refuse keys no type has
        m = r.mapping(node, path, _JOINT_EVERY)
    else:
        m = r.mapping(node, path, _JOINT_KEYS[jtype], _JOINT_FOREIGN[jtype])
    before = len(r.problems)
    name_node = m.get("name")
    if name_node is not None:
        name = r.name(name_node, m.sub("name"))
    else:
        name = None if jtype is None else f"{jtype}-{index}"
    result = _Connector(name, name_node, node)
    pair = _connector_bodies(r, m, known, "joint")
    if jtype is None:
        return result
    fields = _joint_geometry(r, m, jtype, name)
    fields.update(_drive(r, m, jtype))
    fields["stops"] = _limits(r, m, jtype)
    if len(r.problems) > before or pair is None:
        return result
    fields = {k: frozen_array(v) if isinstance(v, np.ndarray) else v for k, v in fields.items()}
    result.spec = JointSpec(name=name, type=jtype, body_a=pair[0], body_b=pair[1], line=m.line, **fields)
    return result


def _limits(r: Reader, m: Map, jtype: str) -> tuple:
    """``limits`` (or a cylindrical joint's ``angle_limits``, ``displacement_limits``): ``{lower, upper,
    stiffness, damping}`` on the joint's angle [rad, through full turns] or offset [m] from the initial
    configuration."""
    out = []
    for key, coordinate in _JOINT_LIMITS.get(jtype, ()):
        node = m.get(key)
        if node is None:
            continue
        path = m.sub(key)
        lm = r.mapping(node, path, ("lower", "upper", "stiffness", "damping"))
        if lm is None:
            continue
        before = len(r.problems)
        lower = r.optional(lm, "lower", r.number, None)
        upper = r.optional(lm, "upper", r.number, None)
        k = r.required_number(lm, "stiffness", ">0")
        c = r.optional(lm, "damping", lambda n, p: r.number(n, p, ">=0"), 0.0)
        if not lm.has("lower") and not lm.has("upper"):
            r.report(path, node, "must give lower, upper or both")
        if lower is not None and upper is not None and not lower < upper:
            r.report(lm.sub("upper"), lm.get("upper"), f"must be greater than lower ({lower:g}), got {upper:g}")
        if len(r.problems) > before or k is None or c is None:
            continue
        out.append((coordinate, -math.inf if lower is None else float(lower),
                    math.inf if upper is None else float(upper), float(k), float(c)))
    return tuple(out)


def _joint_geometry(r: Reader, m: Map, jtype: str, name: Optional[str]) -> dict:
    """``point``, ``axis``, ``axes`` or ``points`` and ``length``: the keys of ``jtype``, checked."""
    own = _JOINT_OWN[jtype]
    fields = {}
    if "point" in own:
        node = r.require(m, "point")
        fields["point"] = None if node is None else r.vector(node, m.sub("point"))
        if fields["point"] is not None and not _within_extent(r, node, m.sub("point"), fields["point"]):
            fields["point"] = None
    if "axis" in own:
        node = r.require(m, "axis")
        fields["axis"] = None if node is None else r.unit(node, m.sub("axis"))
    if "axes" in own:
        node = r.require(m, "axes")
        path = m.sub("axes")
        axes = None if node is None else r.numbers(node, path, 2, item=r.unit, what="axes")
        if axes is not None:
            cos = float(np.dot(axes[0], axes[1]))
            if abs(cos) > _PERPENDICULAR:
                angle = math.degrees(math.acos(min(1.0, max(-1.0, cos))))
                r.report(path, node, f"must be perpendicular at t = 0 (|cos| ≤ 1e-6); "
                                     f"the angle between them is {angle:.6g}°")
                axes = None
        fields["axes"] = None if axes is None else np.array(axes)
    if "points" in own:
        fields.update(_distance(r, m, name))
    return fields


def _distance(r: Reader, m: Map, name: Optional[str]) -> dict:
    """A distance joint's ``points`` and ``length`` (the initial distance; a given one must match it)."""
    node = r.require(m, "points")
    points = None if node is None else r.numbers(node, m.sub("points"), 2, item=r.vector, what="points")
    initial = None
    if points is not None:
        points = np.array(points)
        # halves first, so far-apart points give inf (refused) instead of overflowing
        from ..elements.base import MAX_EXTENT  # (the connectors' bound)
        initial = 2.0 * norm(0.5 * points[1] - 0.5 * points[0])
        if not initial <= MAX_EXTENT or np.abs(points).max() > MAX_EXTENT:  # the law squares the distance
            r.report(m.sub("points"), m.get("points"), f"the points are too far apart for a finite length "
                                                       f"(farther than {MAX_EXTENT:g} m from each other or from the "
                                                       f"origin: their squares overflow)")
            initial = None
        elif initial == 0.0:
            r.report(m.sub("points"), m.get("points"),
                     "the two points coincide; a distance joint needs two different points")
            initial = None
    length = r.optional(m, "length", lambda n, p: r.number(n, p, ">0"), initial)
    if m.has("length") and length is not None and initial is not None:
        gap = length - initial
        if abs(gap) > _LENGTH_RTOL * max(1.0, initial):
            joint = "the joint" if name is None else f"joint {name!r}"
            r.report(m.sub("length"), m.get("length"),
                     f"{joint} is not satisfied at t = 0: length {length:.12g} but the points are "
                     f"{initial:.12g} apart (gap {gap:.3g}); the initial positions must satisfy every joint "
                     f"(leave length out to use the initial distance)")
            length = None
    return dict(points=points, length=length)


def _drive(r: Reader, m: Map, jtype: str) -> dict:
    """``drive: {angle: F, displacement: F}`` as the type allows (DRIVEN), each F(0) = 0."""
    node = m.get("drive")
    if node is None:
        return {}
    path = m.sub("drive")
    allowed = DRIVEN.get(jtype, ())
    if not allowed:
        *some, last = DRIVEN
        r.report(path, node, f"a {jtype} joint takes no drive; only {', '.join(some)} and {last} joints do")
        return {}
    takes = " and/or ".join(allowed)
    foreign = {}
    if kind(node) == "mapping":
        for key_node, _ in node.value:
            key = getattr(key_node, "value", None)
            if not isinstance(key, str) or key in allowed:
                continue
            others = [t for t, ds in DRIVEN.items() if key in ds]
            if others:
                foreign[key] = (f"a {jtype} joint has no {key!r} drive{suggest(key, allowed)}; it takes {takes} "
                                f"({key!r} drives {' and '.join(others)} joints)")
            else:
                foreign[key] = f"unknown drive {_clip(key)!r}{suggest(key, allowed)}; a {jtype} joint takes {takes}"
    dm = r.mapping(node, path, allowed, foreign)
    if dm is None:
        return {}
    if not node.value:
        r.report(path, node, f"must give {takes}")
        return {}
    drives = {}
    for key in allowed:
        f = r.optional(dm, key, lambda n, p: _time_function(r, n, p), None)
        if f is not None:
            with np.errstate(all="ignore"):
                rates = [float(f.derivative(0.0, k)) for k in (0, 1, 2)]
            if not all(math.isfinite(x) for x in rates):
                r.report(dm.sub(key), dm.get(key), f"is not finite at t = 0: F, F' and F'' are "
                                                   f"{', '.join(f'{x:g}' for x in rates)} (numbers beyond double "
                                                   f"precision)")
                continue
            f0 = rates[0]
            if not abs(f0) <= _DRIVE_ZERO:
                r.report(dm.sub(key), dm.get(key),
                         f"must be 0 at t = 0 (drives are measured from the initial configuration), "
                         f"got F(0) = {f0:.6g}")
                continue
        drives[key] = f
    return drives


# --------------------------------------------------------------------------
# loads and time functions
# --------------------------------------------------------------------------
def _load(r: Reader, node, path: str, known: dict, index: int = 0) -> Optional[LoadSpec]:
    m = r.mapping(node, path, ("name", "type", "body", "vector", "scale"))
    if m is None:
        return None
    before = len(r.problems)
    type_node, body_node, vector_node = (r.require(m, k) for k in ("type", "body", "vector"))
    ltype = None if type_node is None else r.choice(type_node, m.sub("type"), ("force", "torque"), "load type")
    body = None if body_node is None else r.string(body_node, m.sub("body"))
    if body is not None:
        if body not in known:
            r.report(m.sub("body"), body_node, f"unknown body {body!r}{suggest(body, known)}")
        elif known[body][0] is True:
            r.report(m.sub("body"), body_node, f"a load needs a moving body; {body!r} is fixed")
    vector = None if vector_node is None else r.vector(vector_node, m.sub("vector"))
    scale = r.optional(m, "scale", lambda n, p: _time_function(r, n, p), Constant())
    name = r.optional(m, "name", r.name, f"{ltype}-{index}")
    if len(r.problems) > before:
        return None
    with np.errstate(all="ignore"):
        first = np.asarray(vector, dtype=float) * float(scale(0.0))
    if not np.all(np.isfinite(first)):
        where = "scale" if m.has("scale") else "vector"
        r.report(m.sub(where), m.get(where), f"the load is not finite at t = 0: vector × scale = "
                                             f"[{', '.join(f'{x:g}' for x in first)}] (numbers beyond double precision)")
        return None
    return LoadSpec(type=ltype, body=body, vector=frozen_array(vector), scale=scale, line=m.line, name=name)


def _unique_load_names(r: Reader, top: Map, loads: list) -> None:
    """Load names unique among the loads (the inputs of mbsim.linearize are named by them)."""
    seen: dict = {}
    for i, ld in enumerate(loads):
        if ld is None:
            continue
        if ld.name in seen:
            r.report(f"loads[{i}].name", ld.line, f"duplicate load name {ld.name!r} (first: loads[{seen[ld.name]}])")
        else:
            seen[ld.name] = i


def _statics(r: Reader, node, path: str) -> Optional[StaticsSpec]:
    """``statics``: the time of the loads and drives, the first load increment, the tolerances."""
    m = r.mapping(node, path, ("time", "load_steps", "tolerance"))
    if m is None:
        return None
    t = r.optional(m, "time", lambda n, p: r.number(n, p, ">=0"), 0.0)
    first = r.optional(m, "load_steps", lambda n, p: r.number(n, p, ">0"), None)
    if first is not None and first > 1.0:
        r.report(m.sub("load_steps"), m.get("load_steps"), f"is the first increment of the load factor, "
                                                            f"in (0, 1]; got {m.get('load_steps').value}")
        first = None
    rtol = atol = None
    tn = m.get("tolerance")
    if tn is not None and kind(tn) != "null":
        tm = r.mapping(tn, m.sub("tolerance"), ("rtol", "atol"))
        if tm is not None:
            rtol = r.optional(tm, "rtol", lambda n, p: r.number(n, p, ">0"), None)
            atol = r.optional(tm, "atol", lambda n, p: r.number(n, p, ">0"), None)
    if t is None:
        return None
    return StaticsSpec(time=t, load_steps=first, rtol=rtol, atol=atol)


def _time_function(r: Reader, node, path: str):
    """``{constant: c}``, ``{ramp: ...}``, ``{sine: ...}``, ``{table: ...}`` or ``{smooth_ramp: ...}``."""
    m = r.mapping(node, path, _TIME_FUNCTIONS)
    form = None if m is None else r.exactly_one(m, _TIME_FUNCTIONS)
    if form is None:
        return None
    sub, value = m.sub(form), m.get(form)
    if form == "constant":
        c = r.number(value, sub)
        return None if c is None else Constant(c)
    if form == "table":
        return _table(r, value, sub)
    ramp = form in ("ramp", "smooth_ramp")
    keys = ("t0", "t1", "from", "to") if ramp else ("amplitude", "frequency", "phase", "offset")
    fm = r.mapping(value, sub, keys)
    if fm is None:
        return None
    before = len(r.problems)
    a, b = (r.required_number(fm, k, None) for k in keys[:2])
    c, d = (r.optional(fm, k, r.number, default) for k, default in
            zip(keys[2:], (0.0, 1.0) if ramp else (0.0, 0.0)))
    if len(r.problems) > before:
        return None
    if form == "sine":
        return Sine(amplitude=a, frequency=b, phase=c, offset=d)
    if not b > a:
        r.report(fm.sub("t1"), fm.get("t1"), f"must be greater than t0 ({fm.get('t0').value})")
        return None
    return (SmoothRamp if form == "smooth_ramp" else Ramp)(t0=a, t1=b, start=c, end=d)


def _table(r: Reader, node, path: str) -> Optional[Table]:
    rows = r.sequence(node, path, "a list of [t, s] rows")
    if rows is None:
        return None
    if len(rows) < 2:
        r.report(path, node, f"needs at least 2 rows [t, s], got {len(rows)}")
        return None
    values = r.numbers(node, path, len(rows), item=lambda n, p: r.numbers(n, p, 2), what="[t, s] rows")
    if values is None:
        return None
    table = np.array(values)
    for i in range(1, len(table)):
        if not table[i, 0] > table[i - 1, 0]:
            r.report(f"{path}[{i}]", rows[i], f"times must be strictly increasing; "
                                              f"t = {table[i, 0]:g} follows t = {table[i - 1, 0]:g}")
            return None
    return Table(times=frozen_array(table[:, 0]), values=frozen_array(table[:, 1]))
