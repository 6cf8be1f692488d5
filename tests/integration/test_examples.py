"""Every example in ``scenarios/`` runs and writes a conforming trajectory file.

(Its accuracy against the independent reference solver — positions within
1e-4 × the scene size, orientations within 1e-4 rad — is checked by the
regression suite, tests/regression, against stored reference trajectories.)

Each example is simulated once, at its own time step, over a
shortened span (``_examples_util.span_for``: at most 1 s, 0.25 s for models
with more than 20 moving bodies), writing its HDF5 file to a temporary
directory.  That one run is then

- checked against OUTPUT.md with the shared ``check_output.py`` (against a
  copy of the scenario whose ``time.end`` is the shortened one, because the
  tool compares a completed file's frame grid with the scenario's end time).

Two examples also document closed-form solutions in their headers; those
are checked too.
"""
from __future__ import annotations

import itertools
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from mbsim.driver import run
from mbsim.scenario import load_scenario
from mbsim.scenario.spec import JOINT_PROJECTION
from tests import contract

from ._examples_util import (HEADER_PARTS, POSITION_TOL, SCENARIO_DIR, example_paths,
                             scene_size, shortened_copy, span_for)

EXAMPLES = example_paths()
IDS = [p.stem for p in EXAMPLES]


class _Runs:
    """One mbsim run per example and session, shared by the tests below."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.cache: dict[Path, tuple] = {}
        self.rows: dict[str, dict] = {}

    def get(self, path: Path):
        if path not in self.cache:
            sc = load_scenario(str(path))
            span = span_for(sc)
            out = self.dir / f"{path.stem}.h5"
            start = time.perf_counter()
            summary = run(sc, str(out), end=span, keep_frames=True)
            self.rows.setdefault(path.stem, {}).update(
                span=span, step=sc.time.step, steps=summary.steps,
                it_per_step=summary.iterations_per_step, mbsim_s=time.perf_counter() - start)
            self.cache[path] = (sc, span, summary, out)
        return self.cache[path]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return _Runs(tmp_path_factory.mktemp("examples"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 6, f"expected at least six examples in {SCENARIO_DIR}"


def test_examples_cover_the_format():
    """Together the examples use every connector kind and form, every load and
    time-function kind, every orientation form, fixed bodies, the implicit
    world, gravity and a chain of at least 50 bodies (read from the raw YAML,
    since validation folds aliases and joints away)."""
    seen = set()
    for path in EXAMPLES:
        with open(path) as fh:
            doc = yaml.safe_load(fh)
        bodies = doc.get("bodies") or []
        if any(float(g) != 0.0 for g in doc.get("gravity") or [0]):
            seen.add("gravity")
        if len(bodies) >= 50:
            seen.add("chain of 50")
        seen.update("fixed body" for b in bodies if b.get("fixed"))
        seen.update(f"orientation {next(iter(b['orientation']))}" for b in bodies if "orientation" in b)
        for c in doc.get("connectors") or []:
            seen.add(c["type"])
            if "world" in c["bodies"]:
                seen.add("world")
            if c["type"] == "spring" and float(c.get("rest_length", -1)) == 0.0:
                seen.add("zero-length spring")
            if c["type"] == "torsional_damper":
                if "projection" in c:
                    seen.add(f"projection {c['projection']}")
                else:
                    seen.add(f"joint -> {JOINT_PROJECTION[c['joint']]}")
        for j in doc.get("joints") or []:
            seen.update("joint limits" for k in ("limits", "angle_limits", "displacement_limits") if k in j)
        for ld in doc.get("loads") or []:
            seen.add(f"{ld['type']} {next(iter(ld.get('scale', {'constant': 1})))}")
    wanted = {"gravity", "chain of 50", "fixed body", "world", "spring", "zero-length spring", "damper",
              "dashpot", "torsional_damper", "joint limits"}
    wanted |= {f"orientation {k}" for k in ("quaternion", "axis_angle", "rotation_vector")}
    wanted |= {f"projection {p}" for p in ("P1", "P2", "P3", "none")}
    wanted |= {f"joint -> {p}" for p in ("P1", "P2", "none")}  # no joint kind maps to P3
    wanted |= {f"{kind} {fn}" for kind in ("force", "torque") for fn in ("constant", "ramp", "sine", "table")}
    assert not wanted - seen, f"no example uses: {sorted(wanted - seen)}"


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_example_has_header(path):
    """Each file opens with a comment block saying what it models, shows, what to look at, how long it runs."""
    lines = path.read_text().splitlines()
    assert lines and lines[0].startswith("#"), f"{path.name} does not start with a comment header"
    header = "\n".join(itertools.takewhile(lambda line: line.startswith("#"), lines))
    missing = [part for part in HEADER_PARTS if part not in header]
    assert not missing, f"{path.name}: header lacks {missing}"


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_example_runs_and_conforms(path, runs, tmp_path):
    sc, span, summary, out = runs.get(path)
    assert summary.status == "completed", summary.message
    assert summary.t_end == pytest.approx(span, rel=1e-12, abs=1e-12)
    problems = contract.check_output()(str(out), str(shortened_copy(path, span, tmp_path / path.name)))
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------
# closed forms promised in two headers (parameters read from the files)
# ---------------------------------------------------------------------------
def _by_name(items, name):
    return next(x for x in items if x.name == name)


def test_mass_spring_damper_closed_form(runs):
    """u'' + (c/m) u' + (k/m) u = 0, u(0) = x0, u'(0) = 0, for the three damping levels."""
    path = SCENARIO_DIR / "mass_spring_damper.yaml"
    sc, span, summary, _ = runs.get(path)
    t = summary.frames_data["time"]
    x = summary.frames_data["bodies/position"]
    names = [b.name for b in sc.bodies]
    worst = 0.0
    for block in ("underdamped", "critical", "overdamped"):
        b = _by_name(sc.bodies, block)
        spring = next(c for c in sc.connectors if c.type == "spring" and c.body_b == block)
        damper = next(c for c in sc.connectors if c.type == "damper" and c.body_b == block)
        m, k, c, L0 = b.mass, spring.stiffness, damper.damping, spring.rest_length
        x0 = np.linalg.norm(spring.points[1] - spring.points[0]) - L0
        w0, zeta = np.sqrt(k / m), c / (2.0 * np.sqrt(k * m))
        if zeta < 1.0 - 1e-12:
            wd = w0 * np.sqrt(1.0 - zeta**2)
            u = x0 * np.exp(-zeta * w0 * t) * (np.cos(wd * t) + zeta * w0 / wd * np.sin(wd * t))
        elif zeta > 1.0 + 1e-12:
            s1 = -w0 * (zeta - np.sqrt(zeta**2 - 1.0))
            s2 = -w0 * (zeta + np.sqrt(zeta**2 - 1.0))
            u = x0 * (s1 * np.exp(s2 * t) - s2 * np.exp(s1 * t)) / (s1 - s2)
        else:
            u = x0 * np.exp(-w0 * t) * (1.0 + w0 * t)
        exact = b.position + np.outer(u - x0, [1.0, 0.0, 0.0])
        err = np.linalg.norm(x[:, names.index(block)] - exact, axis=-1).max()
        worst = max(worst, err)
    assert worst < POSITION_TOL * scene_size(sc)


def test_spin_down_closed_form(runs):
    """Spherical balls on torsional dampers to world: the damped components of
    ω decay as exp(−χ t / J), the others stay."""
    path = SCENARIO_DIR / "spin_down.yaml"
    sc, span, summary, _ = runs.get(path)
    t = summary.frames_data["time"]
    w = summary.frames_data["bodies/angular_velocity"]
    names = [b.name for b in sc.bodies]
    checked = 0
    for c in sc.connectors:
        b = _by_name(sc.bodies, c.body_b)
        J = b.inertia[0, 0]
        if c.body_a != "world" or not np.allclose(b.inertia, J * np.eye(3)):
            continue  # only the balls have a closed form
        P = {"P1": np.eye(3), "none": np.zeros((3, 3))}.get(c.projection)
        if P is None:
            n = c.axis
            P = np.eye(3) - np.outer(n, n) if c.projection == "P2" else np.outer(n, n)
        w0 = b.angular_velocity
        decay = np.exp(-c.damping * t / J)[:, None]
        exact = (w0 - P @ w0) + decay * (P @ w0)
        err = np.abs(w[:, names.index(b.name)] - exact).max()
        assert err < 1e-4 * np.linalg.norm(w0), (b.name, err)
        checked += 1
    assert checked >= 4
