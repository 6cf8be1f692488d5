"""Scenario loading and validation (SCENARIO.md): one test per rule.

Each refusal is checked for its key path, its line and a distinctive part of
its message.  Documents are built line by line with ``doc`` so that the
expected line numbers can be read off the test.
"""
import math
import pathlib

import numpy as np
import pytest
import yaml  # only to build variants of the example in the junk test

from mbsim.scenario import (
    Constant, JointSpec, Problem, Ramp, ScenarioError, Sine, SmoothRamp, Table, load_scenario, parse_scenario,
    scenario_from_dict,
)
from tests.integration._examples_util import example_paths

# Lines 1-4 of most documents below: the smallest valid scenario.
BASE = (
    "mbsim: 1",
    "time: {end: 1, step: 0.1}",
    "bodies:",
    "  - {name: bob, mass: 1, inertia: [1, 1, 1]}",
)

EXAMPLE = """\
mbsim: 1                      # format version, required
name: two-body-demo
description: A body hanging from a fixed base by a spring and a dashpot.
gravity: [0, 0, -9.81]
time:
  end: 2.0
  step: 1.0e-3
integrator:
  rho_inf: 0.9
  tangent: consistent
  newton: {max_iterations: 25, rtol: 1.0e-8, atol: 1.0e-10}
output:
  interval: 1.0e-2
bodies:
  - name: base
    fixed: true
    position: [0, 0, 0]
  - name: bob
    mass: 1.0
    inertia: [0.01, 0.02, 0.03]
    position: [0, 0, -1]
    orientation: {axis_angle: {axis: [0, 0, 1], angle: 0.3}}
    velocity: [0.5, 0, 0]
    angular_velocity: [0, 0, 2.0]
connectors:
  - name: hanger
    type: spring
    bodies: [base, bob]
    points: [[0, 0, 0], [0, 0, -0.9]]
    stiffness: 200.0
    rest_length: 0.8
  - name: shock
    type: damper
    bodies: [base, bob]
    points: [[0, 0, 0], [0, 0, -0.9]]
    damping: 1.5
  - name: swivel
    type: torsional_damper
    bodies: [base, bob]
    damping: 0.05
    joint: revolute          # same as projection: P2
    axis: [0, 0, 1]
loads:
  - type: force
    body: bob
    vector: [1, 0, 0]
    scale: {sine: {amplitude: 1.0, frequency: 0.5}}
"""


def doc(*lines):
    """Join lines into a document; line i of the file is ``lines[i - 1]``."""
    return "\n".join(lines) + "\n"


def refused(text, source=None):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, source)
    return info.value


def expect(text, path, line, fragment, source=None):
    """Assert the refusal of ``text`` lists a problem at ``path``/``line`` containing ``fragment``."""
    err = refused(text, source)
    found = [p for p in err.problems if p.path == path and fragment in p.message]
    assert found, f"no problem {path!r} ~ {fragment!r} in\n{err}"
    assert found[0].line == line, str(found[0])
    return found[0]


def quat_axis_angle(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])


# --------------------------------------------------------------------------
# the file and its YAML
# --------------------------------------------------------------------------
def test_what_is_not_a_regular_file_is_refused_before_it_is_opened(tmp_path, monkeypatch):
    """issue 15: a FIFO blocked open() forever, /dev/zero was read until memory ran out."""
    import os
    cases = [(tmp_path, "is a directory, not a regular file")]
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.yaml")
        cases.append((tmp_path / "pipe.yaml", "is a FIFO (named pipe), not a regular file"))
    if os.path.exists("/dev/zero"):
        cases.append(("/dev/zero", "is a character device, not a regular file"))
    for path, message in cases:
        with pytest.raises(ScenarioError) as info:
            load_scenario(path)
        [p] = info.value.problems
        assert (p.path, p.line) == ("<file>", None) and message in p.message


def test_scenario_files_above_the_size_cap_are_refused(tmp_path, monkeypatch):
    from mbsim.scenario import loader
    monkeypatch.setattr(loader, "MAX_SCENARIO_BYTES", 1000)
    big = tmp_path / "big.yaml"
    big.write_text(doc(*BASE) + "#" * 1000)
    with pytest.raises(ScenarioError) as info:
        load_scenario(big)
    assert "MiB; scenario files above" in info.value.problems[0].message
    with pytest.raises(ScenarioError, match="scenario files above"):
        parse_scenario(big.read_text())
    small = tmp_path / "small.yaml"
    small.write_text(doc(*BASE))
    assert load_scenario(small).bodies  # below the cap: read as before


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path / "nope.yaml")
    [p] = info.value.problems
    assert (p.path, p.line) == ("<file>", None) and "cannot read" in p.message


def test_directory_is_refused(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path)
    assert info.value.problems[0].path == "<file>"


def test_non_utf8_file(tmp_path):
    f = tmp_path / "latin1.yaml"
    f.write_bytes(b"mbsim: 1\nname: caf\xe9\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    [p] = info.value.problems
    assert (p.path, p.line) == ("<file>", 2) and "not UTF-8" in p.message
    assert info.value.source == str(f)


def test_yaml_syntax_error_has_line():
    expect(doc("mbsim: 1", "time:", "  end: [1, 2", "bodies: []"), "<yaml>", 4, "invalid YAML")


def test_empty_file():
    expect("# nothing here\n", "<top>", None, "empty")


def test_top_level_must_be_mapping():
    expect(doc("- mbsim: 1"), "<top>", 1, "must be a mapping")


def test_multiple_documents():
    expect(doc(*BASE, "---", "mbsim: 1"), "<yaml>", 5, "single YAML document")


def test_duplicate_key_reported_at_second():
    expect(doc(*BASE[:3], "  - name: bob", "    mass: 1", "    inertia: [1, 1, 1]", "    mass: 2"),
           "bodies[0]", 7, "duplicate key 'mass' (first at line 5)")


def test_unknown_key_with_hint():
    expect(doc(*BASE, "gravty: [0, 0, -9.81]"), "<top>", 5, "unknown key 'gravty' (did you mean 'gravity'?)")


def test_merge_key_refused():
    expect(doc(*BASE, "integrator:", "  <<: {rho_inf: 0.5}"), "integrator", 6, "merge keys")


def test_aliases_reuse_values():
    s = parse_scenario(doc("mbsim: 1", "time: {end: 1, step: 0.1}", "bodies:",
                           "  - {name: a, mass: 1, inertia: &I [1, 2, 3]}",
                           "  - {name: b, mass: 1, inertia: *I}"))
    assert np.array_equal(s.bodies[1].inertia, np.diag([1.0, 2.0, 3.0]))


def test_yaml_tags_refused():
    expect(doc(*BASE, "gravity: !!python/tuple [0, 0, 1]"), "gravity", 5, "YAML tags are not supported")


# --------------------------------------------------------------------------
# scalars
# --------------------------------------------------------------------------
@pytest.mark.parametrize("text, value", [
    ("1e-3", 1e-3), (".5", 0.5), ("1.0E+3", 1000.0), ("-2", -2.0), ("+3", 3.0), ("5.", 5.0), ("7", 7.0)])
def test_usual_float_forms_are_numbers(text, value):
    s = parse_scenario(doc(*BASE, f"gravity: [{text}, 0, 0]"))
    assert s.gravity[0] == value


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "true", "false"])
def test_booleans_are_not_numbers(word):
    expect(doc(*BASE, f"gravity: [0, {word}, 0]"), "gravity[1]", 5, f"must be a number, got boolean '{word}'")


@pytest.mark.parametrize("word", [".inf", "-.inf", ".nan", "inf", "nan", "1e999", "9" * 400])
def test_non_finite_numbers(word):
    expect(doc(*BASE, f"gravity: [0, 0, {word}]"), "gravity[2]", 5, "must be finite")


def test_quoted_number_is_not_a_number():
    expect(doc(*BASE, "gravity: [0, '1.5', 0]"), "gravity[1]", 5, "remove the quotes")


@pytest.mark.parametrize("junk, said", [("{a: 1}", "got a mapping"), ("[1, 2]", "got a list"),
                                        ("~", "got null"), ("abc", "got text 'abc'")])
def test_junk_where_a_number_belongs(junk, said):
    expect(doc(*BASE, f"gravity: [0, 0, {junk}]"), "gravity[2]", 5, f"must be a number, {said}")


def test_vector_needs_three_numbers():
    expect(doc(*BASE, "gravity: [0, -9.81]"), "gravity", 5, "must have 3 entries, got 2")


# --------------------------------------------------------------------------
# top level
# --------------------------------------------------------------------------
def test_format_version_required():
    expect(doc(*BASE[1:]), "<top>", 1, "missing required key 'mbsim'")


@pytest.mark.parametrize("version", ["2", "1.0", "'1'", "yes"])
def test_format_version_must_be_1(version):
    expect(doc(f"mbsim: {version}", *BASE[1:]), "mbsim", 1, "must be 1")


def test_name_must_be_a_string():
    expect(doc(*BASE, "name: 12"), "name", 5, "must be a string, got number 12")


def test_name_defaults():
    assert parse_scenario(doc(*BASE), "runs/pendulum.v2.yaml").name == "pendulum.v2"
    assert parse_scenario(doc(*BASE)).name == "scenario"
    assert parse_scenario(doc(*BASE, "name: '12'")).name == "12"
    assert parse_scenario(doc(*BASE, "name: Pendel – Schwingung ∂")).name == "Pendel – Schwingung ∂"


def test_description_must_be_text():
    expect(doc(*BASE, "description: [a, b]"), "description", 5, "must be a string")
    assert parse_scenario(doc(*BASE)).description == ""


def test_time_required():
    expect(doc("mbsim: 1", *BASE[2:]), "<top>", 1, "missing required key 'time'")


def test_time_end_and_step_required():
    expect(doc("mbsim: 1", "time:", "  end: 1", *BASE[2:]), "time", 2, "missing required key 'step'")


@pytest.mark.parametrize("key, value", [("end", "0"), ("step", "-0.1")])
def test_time_values_positive(key, value):
    values = {"end": "1", "step": "0.1", key: value}
    expect(doc("mbsim: 1", f"time: {{end: {values['end']}, step: {values['step']}}}", *BASE[2:]),
           f"time.{key}", 2, "must be > 0")


def test_step_must_not_exceed_end():
    expect(doc("mbsim: 1", "time:", "  end: 1", "  step: 2", *BASE[2:]),
           "time.step", 4, "time.step must not exceed time.end")


# --------------------------------------------------------------------------
# integrator and output
# --------------------------------------------------------------------------
def test_integrator_defaults_and_null():
    for extra in ((), ("integrator:",), ("integrator:", "  newton:")):
        s = parse_scenario(doc(*BASE, *extra))
        i = s.integrator
        assert (i.rho_inf, i.tangent, i.max_iterations, i.rtol, i.atol) == (0.9, "consistent", 25, 1e-8, 1e-10)
        assert s.output.interval == 0.1 and s.output_file == "outputs/scenario.h5"


def test_integrator_joints_defaults_and_null():
    for extra in ((), ("integrator:",), ("integrator:", "  joints:"), ("integrator: {joints: {}}",)):
        i = parse_scenario(doc(*BASE, *extra)).integrator
        assert (i.redundant, i.velocities) == ("remove", "project")
    i = parse_scenario(doc(*BASE, "integrator:", "  joints: {redundant: refuse, velocities: refuse}")).integrator
    assert (i.redundant, i.velocities) == ("refuse", "refuse")
    i = parse_scenario(doc(*BASE, "integrator:", "  joints:", "    velocities: refuse")).integrator
    assert (i.redundant, i.velocities) == ("remove", "refuse")


@pytest.mark.parametrize("line, path, fragment", [
    ("    redundant: drop", "integrator.joints.redundant",
     "unknown value 'drop'; expected one of remove, refuse"),
    ("    redundant: Refuse", "integrator.joints.redundant", "did you mean 'refuse'?"),
    ("    velocities: projct", "integrator.joints.velocities",
     "unknown value 'projct' (did you mean 'project'?); expected one of project, refuse"),
    ("    velocities: true", "integrator.joints.velocities", "must be a string"),
    ("    velocity: project", "integrator.joints", "unknown key 'velocity' (did you mean 'velocities'?)"),
])
def test_integrator_joints_refuses_bad_values(line, path, fragment):
    expect(doc(*BASE, "integrator:", "  joints:", line), path, 7, fragment)


def test_integrator_joints_must_be_a_mapping():
    expect(doc(*BASE, "integrator: {joints: remove}"), "integrator.joints", 5, "must be a mapping")


@pytest.mark.parametrize("rho", ["-0.1", "1.5"])
def test_rho_inf_in_unit_interval(rho):
    expect(doc(*BASE, "integrator:", f"  rho_inf: {rho}"), "integrator.rho_inf", 6, "must be in [0, 1]")


def test_tangent_choice_with_hint():
    expect(doc(*BASE, "integrator: {tangent: sed}"), "integrator.tangent", 5, "did you mean 'seed'?")


@pytest.mark.parametrize("value, said", [("2.5", "must be an integer"), ("25.0", "must be an integer"),
                                         ("0", "must be a positive integer")])
def test_max_iterations_positive_integer(value, said):
    expect(doc(*BASE, "integrator:", "  newton:", f"    max_iterations: {value}"),
           "integrator.newton.max_iterations", 7, said)


@pytest.mark.parametrize("key", ["rtol", "atol"])
def test_tolerances_positive(key):
    expect(doc(*BASE, "integrator:", f"  newton: {{{key}: 0}}"), f"integrator.newton.{key}", 6, "must be > 0")


def test_output_interval_whole_multiple_of_step():
    expect(doc(*BASE, "output:", "  interval: 0.15"), "output.interval", 6, "whole multiple of time.step")
    expect(doc(*BASE, "output:", "  interval: 0.05"), "output.interval", 6, "whole multiple of time.step")
    # 0.3 / 0.1 = 2.9999999999999996: a whole multiple up to round-off
    assert parse_scenario(doc(*BASE, "output: {interval: 0.3}")).output.interval == 0.3


def test_output_interval_may_exceed_end():
    assert parse_scenario(doc(*BASE, "output: {interval: 5}")).output.interval == 5.0


def test_output_file():
    expect(doc(*BASE, "output: {file: 12}"), "output.file", 5, "must be a string")
    assert parse_scenario(doc(*BASE, "output: {file: out/x.h5}")).output_file == "out/x.h5"


# --------------------------------------------------------------------------
# bodies
# --------------------------------------------------------------------------
def test_bodies_required():
    expect(doc(*BASE[:2]), "<top>", 1, "missing required key 'bodies'")


def test_bodies_not_empty():
    expect(doc(*BASE[:2], "bodies: []"), "bodies", 3, "at least one body")


def test_bodies_must_be_a_list():
    expect(doc(*BASE[:2], "bodies: {name: bob}"), "bodies", 3, "must be a list of bodies")


def test_body_name_required():
    expect(doc(*BASE, "  - {mass: 1, inertia: [1, 1, 1]}"), "bodies[1]", 5, "missing required key 'name'")


def test_body_name_not_empty():
    expect(doc(*BASE, "  - {name: '', mass: 1, inertia: [1, 1, 1]}"), "bodies[1].name", 5, "must not be empty")


def test_values_the_solver_cannot_take_are_refused():
    """issue 15: a step whose βΔt² underflows (ZeroDivisionError), an iteration limit that cannot be
    allocated (MemoryError), principal moments 600 orders apart (LinAlgError in the run)."""
    top = [line for line in BASE if not line.startswith("time")]
    expect(doc(*top[:1], "time: {end: 1.0e-300, step: 1.0e-300}", *top[1:]), "time.step", 2,
           "must be at least 1e-100 s, got 1.0e-300")
    expect(doc(*top[:1], "time: {end: 1, step: 0.01, adaptive: true, min_step: 1.0e-200}", *top[1:]),
           "time.min_step", 2, "must be at least 1e-100 s")
    assert parse_scenario(doc(*top[:1], "time: {end: 1.0e-99, step: 1.0e-99}", *top[1:])).time.min_step == 1e-100
    expect(doc(*BASE, "integrator: {newton: {max_iterations: 9223372036854775808}}"),
           "integrator.newton.max_iterations", 5, "must be at most 1000")
    assert parse_scenario(doc(*BASE, "integrator: {newton: {max_iterations: 1000}}")).integrator.max_iterations == 1000
    expect(doc(*BASE, "  - {name: rod, mass: 1, inertia: [1.0e-300, 1, 1.0e+300]}"), "bodies[1].inertia", 5,
           "the smallest principal moment must exceed 1e-12 × the largest, got 1e-300 and 1e+300")
    assert parse_scenario(doc(*BASE, "  - {name: rod, mass: 1, inertia: [2.0e-12, 1, 1]}")).bodies[-1].inertia[0, 0] == 2e-12


def test_masses_inertias_positions_and_joint_points_are_bounded():
    """issue 27: a mass of 1e308 on a revolute joint made the joints' equations singular at t = 0
    (SingularJoints escaped mbsim.simulate).  Masses and principal moments must lie in [1e-100, 1e100]
    (m/(βΔt²) finite down to Δt = 1e-100 s; MAX_MASS in mbsim/scenario/loader.py says why), body positions
    and joint points within 1e150 of the origin (the connectors' bound); physical extremes pass."""
    expect(doc(*BASE, "  - {name: heavy, mass: 1.0e+308, inertia: [1, 1, 1]}"), "bodies[1].mass", 5,
           "must be between 1e-100 and 1e+100, got 1.0e+308 (the scheme forms m/(βΔt²)")
    expect(doc(*BASE, "  - {name: light, mass: 1.0e-101, inertia: [1, 1, 1]}"), "bodies[1].mass", 5,
           "must be between 1e-100 and 1e+100, got 1.0e-101")
    expect(doc(*BASE, "  - {name: base, fixed: true, mass: 1.0e+200}"), "bodies[1].mass", 5, "must be between")
    expect(doc(*BASE, "  - {name: wheel, mass: 1, inertia: [1.0e+101, 1.0e+101, 1.0e+101]}"), "bodies[1].inertia", 5,
           "principal moments must be between 1e-100 and 1e+100, got 1e+101 to 1e+101 (the scheme forms J/(βΔt²)")
    expect(doc(*BASE, "  - {name: dust, mass: 1, inertia: [[1.0e-101, 0, 0], [0, 1.0e-101, 0], [0, 0, 1.0e-101]]}"),
           "bodies[1].inertia", 5, "principal moments must be between 1e-100 and 1e+100, got 1e-101 to 1e-101")
    # matrices whose largest principal moment, not their largest entry, is beyond the bound (or beyond doubles)
    expect(doc(*BASE, "  - {name: big, mass: 1, inertia: [[1.0e+100, 9.0e+99, 0], [9.0e+99, 1.0e+100, 0], "
                      "[0, 0, 1.0e+100]]}"),
           "bodies[1].inertia", 5, "principal moments must be between 1e-100 and 1e+100, got 1e+99 to 1.9e+100")
    expect(doc(*BASE, "  - {name: big, mass: 1, inertia: [[1.0e+308, 9.0e+307, 0], [9.0e+307, 1.0e+308, 0], "
                      "[0, 0, 1.0e+308]]}"),
           "bodies[1].inertia", 5, "principal moments must be between 1e-100 and 1e+100, got 1e+307 to inf")
    expect(doc(*BASE, "  - {name: far, mass: 1, inertia: [1, 1, 1], position: [0, -1.0e+151, 0]}"),
           "bodies[1].position", 5, "too large: farther than 1e+150 from the origin")
    expect(joints("  - {type: spherical, bodies: [bob, arm], point: [0, 0, 1.0e+200]}"), "joints[0].point", 7,
           "too large: farther than 1e+150 from the origin")
    # the anisotropy rule still speaks first for moments both absurd and 600 orders apart
    expect(doc(*BASE, "  - {name: rod, mass: 1, inertia: [1.0e-300, 1, 1.0e+300]}"), "bodies[1].inertia", 5,
           "the smallest principal moment must exceed 1e-12")
    for mass, moments, position in [(1e-12, "[1.0e-24, 2.0e-24, 2.5e-24]", "[1.0e-6, 0, 0]"),  # a micro-mechanism
                                    (2e30, "[6.0e+46, 6.0e+46, 6.1e+46]", "[1.5e+11, 0, 0]"),  # a star, 1 AU out
                                    (1e-100, "[1.0e-100, 1.0e-100, 1.0e-100]", "[1.0e+150, 0, -1.0e+150]"),
                                    (1e100, "[[1.0e+100, 0, 0], [0, 1.0e+100, 0], [0, 0, 1.0e+100]]", "[0, 0, 0]")]:
        sc = parse_scenario(doc(*BASE, f"  - {{name: x, mass: {mass!r}, inertia: {moments}, position: {position}}}"))
        assert sc.bodies[-1].mass == mass


def test_loads_and_drives_must_be_finite_at_the_start():
    """issue 15: a sine of frequency 1e308 is NaN at t = 0 (2π f overflows, times t = 0) and stored NaN
    accelerations in frame 0; a drive's rates are needed at t = 0 for the initial accelerations."""
    expect(doc(*BASE, "loads:", "  - {type: force, body: bob, vector: [1, 0, 0], "
                                "scale: {sine: {amplitude: 1, frequency: 1.0e+308, phase: 0.5}}}"),
           "loads[0].scale", 6, "the load is not finite at t = 0: vector × scale = [nan, nan, nan]")
    expect(doc(*BASE, "loads:", "  - {type: force, body: bob, vector: [1.0e+300, 0, 0], scale: {constant: 1.0e+300}}"),
           "loads[0].scale", 6, "the load is not finite at t = 0: vector × scale = [inf, 0, 0]")
    assert parse_scenario(doc(*BASE, "loads:", "  - {type: torque, body: bob, vector: [1.0e+308, 0, 0]}")).loads
    expect(joints("  - {type: revolute, bodies: [world, arm], point: [0, 0, 0], axis: [0, 0, 1], "
                  "drive: {angle: {sine: {amplitude: 1.0e+300, frequency: 1.0e+10}}}}"),
           "joints[0].drive.angle", 7, "is not finite at t = 0: F, F' and F'' are 0, inf")


def test_initial_values_must_survive_the_first_evaluation():
    """issue 15: 1e200 m/s was accepted and frame 0's kinetic energy overflowed (now refused here)."""
    expect(doc(*BASE, "  - {name: fast, mass: 1, inertia: [1, 1, 1], velocity: [1.0e+200, 0, 0]}"),
           "bodies[1].velocity", 5, "too large: the body's momentum or kinetic energy at t = 0 is not finite")
    expect(doc(*BASE, "  - {name: spin, mass: 1, inertia: [1, 1, 1], angular_velocity: [0, 1.0e+160, 0]}"),
           "bodies[1].angular_velocity", 5, "too large")
    expect(doc(*BASE, "  - {name: far, mass: 1, inertia: [1, 1, 1], position: [1.0e+300, 0, 0], velocity: [0, 1.0e+10, 0]}"),
           "bodies[1].position", 5, "too large")
    assert parse_scenario(doc(*BASE, "  - {name: ok, mass: 1, inertia: [1, 1, 1], velocity: [1.0e+100, 0, 0]}")).bodies


def test_names_refuse_control_characters():
    """A NUL cannot be stored in HDF5 (issue 15: it reached the writer as a ValueError); a newline or
    an escape would garble every message that quotes the name."""
    expect(doc(*BASE, '  - {name: "a\\0b", mass: 1, inertia: [1, 1, 1]}'), "bodies[1].name", 5,
           "must not contain control characters; got U+0000 at position 2")
    expect(doc(*BASE, 'name: "x\\ny"'), "name", 5, "got U+000A at position 2")
    expect(connectors('  - {name: "s\\x1b[31m", type: damper, bodies: [world, bob], points: [[0, 0, 0], [0, 0, 1]], '
                      'damping: 1}'), "connectors[0].name", 6, "got U+001B at position 2")
    expect(joints('  - {name: "j\\x7f", type: spherical, bodies: [bob, arm], point: [0, 0, 0]}'), "joints[0].name", 7,
           "got U+007F at position 2")


def test_world_is_reserved():
    expect(doc(*BASE, "  - {name: world, fixed: true}"), "bodies[1].name", 5, "reserved")


def test_duplicate_body_name():
    expect(doc(*BASE, "  - {name: bob, fixed: true}"), "bodies[1].name", 5,
           "duplicate body name 'bob' (first at line 4)")


@pytest.mark.parametrize("word", ["yes", "no", "on", "off"])
def test_fixed_only_true_or_false(word):
    expect(doc(*BASE, f"  - {{name: base, fixed: {word}}}"), "bodies[1].fixed", 5, "write true or false")


def test_fixed_accepts_any_letter_case():
    s = parse_scenario(doc(*BASE, "  - {name: base, fixed: TRUE}",
                           "  - {name: b2, fixed: False, mass: 1, inertia: [1, 1, 1]}"))
    assert [b.fixed for b in s.bodies] == [False, True, False]


@pytest.mark.parametrize("key", ["mass", "inertia"])
def test_mass_and_inertia_required_unless_fixed(key):
    other = "inertia: [1, 1, 1]" if key == "mass" else "mass: 1"
    expect(doc(*BASE, f"  - {{name: b2, {other}}}"), "bodies[1]", 5, f"missing required key '{key}'")


@pytest.mark.parametrize("mass", ["0", "-1"])
def test_mass_positive(mass):
    expect(doc(*BASE[:3], f"  - {{name: bob, mass: {mass}, inertia: [1, 1, 1]}}"),
           "bodies[0].mass", 4, "must be > 0")


def test_principal_moments_positive():
    expect(doc(*BASE[:3], "  - {name: bob, mass: 1, inertia: [1, 0, 1]}"),
           "bodies[0].inertia[1]", 4, "must be > 0")


def test_inertia_matrix_symmetric():
    expect(doc(*BASE[:3], "  - name: bob", "    mass: 1", "    inertia: [[1, 0.1, 0], [0.2, 1, 0], [0, 0, 1]]"),
           "bodies[0].inertia", 6, "must be symmetric")


def test_inertia_matrix_positive_definite():
    p = expect(doc(*BASE[:3], "  - name: bob", "    mass: 1", "    inertia: [[1, 2, 0], [2, 1, 0], [0, 0, 1]]"),
               "bodies[0].inertia", 6, "must be positive definite")
    assert "-1, 1, 3" in p.message  # eigenvalues of [[1, 2], [2, 1]] are -1 and 3


def test_inertia_matrix_accepted():
    s = parse_scenario(doc(*BASE[:3], "  - {name: bob, mass: 1, inertia: [[2, 1, 0], [1, 2, 0], [0, 0, 1]]}"))
    assert np.array_equal(s.bodies[0].inertia, [[2, 1, 0], [1, 2, 0], [0, 0, 1]])


@pytest.mark.parametrize("inertia, said", [("[1, 1]", "got 2 entries"), ("[[1, 0, 0], 1, 1]", "mix"),
                                           ("{I1: 1}", "got a mapping")])
def test_inertia_form(inertia, said):
    expect(doc(*BASE[:3], f"  - {{name: bob, mass: 1, inertia: {inertia}}}"), "bodies[0].inertia", 4, said)


# lines 1-6 with bob written as a block mapping, so that keys can follow at line 7
BLOCK = (*BASE[:3], "  - name: bob", "    mass: 1", "    inertia: [1, 1, 1]")


def test_orientation_needs_exactly_one_form():
    expect(doc(*BLOCK, "    orientation: {quaternion: [1, 0, 0, 0], rotation_vector: [0, 0, 0]}"),
           "bodies[0].orientation", 7, "give exactly one of")
    expect(doc(*BLOCK, "    orientation: {}"), "bodies[0].orientation", 7, "must give one of")


def test_quaternion_norm():
    expect(doc(*BLOCK, "    orientation: {quaternion: [1, 0, 0, 0.01]}"),
           "bodies[0].orientation.quaternion", 7, "must have norm 1")
    expect(doc(*BLOCK, "    orientation: {quaternion: [0, 0, 0, 0]}"),
           "bodies[0].orientation.quaternion", 7, "must not be zero")
    q = parse_scenario(doc(*BLOCK, "    orientation: {quaternion: [1.0000005, 0, 0, 0]}")).bodies[0].orientation
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-15)


def test_axis_angle_axis_non_zero():
    expect(doc(*BLOCK, "    orientation: {axis_angle: {axis: [0, 0, 0], angle: 1}}"),
           "bodies[0].orientation.axis_angle.axis", 7, "must not be the zero vector")


def test_orientation_forms_agree():
    n, angle = np.array([1.0, 2.0, 2.0]) / 3.0, 0.7
    forms = [f"{{quaternion: {quat_axis_angle(n, angle).tolist()}}}",
             "{axis_angle: {axis: [1, 2, 2], angle: 0.7}}",
             f"{{rotation_vector: {(angle * n).tolist()}}}"]
    qs = [parse_scenario(doc(*BLOCK, f"    orientation: {f}")).bodies[0].orientation for f in forms]
    for q in qs:
        np.testing.assert_allclose(q, quat_axis_angle(n, angle), atol=1e-12)
    identity = parse_scenario(doc(*BLOCK, "    orientation: {rotation_vector: [0, 0, 0]}")).bodies[0].orientation
    assert np.array_equal(identity, [1, 0, 0, 0])


def test_fixed_body_never_moves():
    expect(doc(*BASE, "  - name: base", "    fixed: true", "    angular_velocity: [0, 0, 1]"),
           "bodies[1].angular_velocity", 7, "a fixed body never moves")
    s = parse_scenario(doc(*BASE, "  - {name: base, fixed: true, velocity: [0, 0, 0], position: [1, 2, 3]}"))
    assert np.array_equal(s.bodies[1].position, [1, 2, 3])


def test_fixed_body_mass_and_inertia():
    s = parse_scenario(doc(*BASE, "  - {name: base, fixed: true}",
                           "  - {name: heavy, fixed: true, mass: 5, inertia: [1, 2, 3]}"))
    assert s.bodies[1].mass == 0.0 and not s.bodies[1].inertia.any()
    assert s.bodies[2].mass == 5.0 and np.array_equal(s.bodies[2].inertia, np.diag([1, 2, 3]))
    expect(doc(*BASE, "  - {name: base, fixed: true, mass: -1}"), "bodies[1].mass", 5, "must be > 0")


def test_at_least_one_moving_body():
    expect(doc(*BASE[:3], "  - {name: base, fixed: true}"), "bodies", 3, "at least one body must not be fixed")


# --------------------------------------------------------------------------
# connectors (documents start at line 5 with "connectors:", the item at 6)
# --------------------------------------------------------------------------
def connectors(*lines):
    return doc(*BASE, "connectors:", *lines)


def test_connectors_optional():
    for extra in ((), ("connectors:",), ("connectors: []",)):
        assert parse_scenario(doc(*BASE, *extra)).connectors == ()


def test_connector_type_required():
    expect(connectors("  - {bodies: [world, bob], damping: 1}"), "connectors[0]", 6, "missing required key 'type'")


def test_connector_type_unknown_with_hint():
    expect(connectors("  - type: sprung"), "connectors[0].type", 6, "did you mean 'spring'?")


def test_key_of_another_connector_type():
    expect(connectors("  - type: damper", "    bodies: [world, bob]", "    points: [[0, 0, 0], [0, 0, 0]]",
                      "    damping: 1", "    stiffness: 3"),
           "connectors[0]", 10, "'stiffness' is not a key of a damper")


def test_axial_damper():
    base = "  - {type: damper, bodies: [world, bob], damping: 1, "
    s = parse_scenario(connectors(base + "points: [[0, 0, 0], [0, 0, 1]], axial: true}",
                                  base + "points: [[0, 0, 0], [0, 0, 0]]}"))
    assert s.connectors[0].params["axial"] is True and s.connectors[1].params["axial"] is False
    expect(connectors(base + "points: [[0, 0, 0], [0, 0, 1]], axial: 1}"), "connectors[0].axial", 6,
           "must be true or false, got")
    expect(connectors(base + "points: [[0, 0, 0], [0, 0, 1]], axial: yes}"), "connectors[0].axial", 6,
           "write true or false")
    expect(connectors(base + "points: [[1, 2, 3], [1, 2, 3]], axial: true}"), "connectors[0].points", 6,
           "an axial damper needs two distinct points")
    expect(connectors(base + "points: [[-1.0e+200, 0, 0], [1.0e+200, 0, 0]], axial: true}"), "connectors[0].points", 6,
           "the points are too far apart for a finite length")
    expect(connectors(base + "points: [[-1.0e+200, 0, 0], [1.0e+200, 0, 0]]}"), "connectors[0].points", 6,
           "the points are too far apart for a finite length")  # issue 15: a damper wrote inf lengths
    expect(connectors(base + "points: [[0, 0, 0], [0, 0, 1]], axail: true}"), "connectors[0]", 6,
           "did you mean 'axial'?")


def test_connector_unknown_key_with_hint():
    expect(connectors("  - {type: damper, bodies: [world, bob], points: [[0, 0, 0], [0, 0, 0]], dampng: 1}"),
           "connectors[0]", 6, "did you mean 'damping'?")


def test_connector_unknown_body_with_hint():
    expect(connectors("  - type: damper", "    bodies: [world, bobb]"),
           "connectors[0].bodies[1]", 7, "unknown body 'bobb' (did you mean 'bob'?)")


def test_connector_needs_two_bodies():
    expect(connectors("  - {type: damper, bodies: [bob], points: [[0, 0, 0], [0, 0, 0]], damping: 1}"),
           "connectors[0].bodies", 6, "must have 2 entries")


def test_connector_cannot_join_body_to_itself():
    expect(connectors("  - type: damper", "    bodies: [bob, bob]"),
           "connectors[0].bodies", 7, "a connector cannot join a body to itself")


def test_connector_joining_two_fixed_bodies():
    text = doc(*BASE, "  - {name: base, fixed: true}", "connectors:", "  - type: damper",
               "    bodies: [world, base]")
    expect(text, "connectors[0].bodies", 8, "joins two fixed bodies")


def test_connector_names_unique():
    spring = "type: spring, bodies: [world, bob], points: [[0, 0, 0], [0, 0, 1]], stiffness: 1"
    expect(connectors(f"  - {{name: a, {spring}}}", f"  - {{name: a, {spring}}}"),
           "connectors[1].name", 7, "duplicate connector name 'a' (first at line 6)")
    # the default name of item 0 is spring-0, which item 1 takes explicitly
    expect(connectors(f"  - {{{spring}}}", f"  - {{name: spring-0, {spring}}}"),
           "connectors[1].name", 7, "duplicate connector name 'spring-0'")
    expect(connectors(f"  - {{name: spring-1, {spring}}}", f"  - {{{spring}}}"),
           "connectors[1]", 7, "duplicate default connector name 'spring-1'")


def test_spring_required_keys():
    err = refused(connectors("  - {type: spring, bodies: [world, bob]}"))
    messages = {p.message for p in err.problems if p.path == "connectors[0]" and p.line == 6}
    # the force: `stiffness`, or a `force_curve` or a `law` instead (SCENARIO.md, force curves and user laws)
    assert {"missing required key 'points'", "must give one of stiffness, force_curve, law"} <= messages


def test_spring_values_non_negative():
    expect(connectors("  - type: spring", "    bodies: [world, bob]", "    points: [[0, 0, 0], [0, 0, 1]]",
                      "    stiffness: -1", "    rest_length: -2"), "connectors[0].stiffness", 9, "must be >= 0")
    expect(connectors("  - type: spring", "    bodies: [world, bob]", "    points: [[0, 0, 0], [0, 0, 1]]",
                      "    stiffness: 1", "    rest_length: -2"), "connectors[0].rest_length", 10, "must be >= 0")


def test_points_are_two_vectors():
    expect(connectors("  - {type: spring, bodies: [world, bob], points: [[0, 0, 0], [0, 1]], stiffness: 1}"),
           "connectors[0].points[1]", 6, "must have 3 entries")


def test_damper_damping_required():
    expect(connectors("  - {type: damper, bodies: [world, bob], points: [[0, 0, 0], [0, 0, 1]]}"),
           "connectors[0]", 6, "missing required key 'damping'")


TD = "  - {type: torsional_damper, bodies: [world, bob], damping: 1, "


def test_torsional_damper_projection_or_joint():
    expect(connectors("  - {type: torsional_damper, bodies: [world, bob], damping: 1}"),
           "connectors[0]", 6, "must give one of projection, joint")
    expect(connectors(TD + "projection: P1, joint: lock}"),
           "connectors[0]", 6, "give exactly one of projection, joint")


@pytest.mark.parametrize("how", ["projection: P3", "projection: P2", "joint: cylindrical"])
def test_torsional_damper_axis_required(how):
    expect(connectors("  - type: torsional_damper", "    bodies: [world, bob]", "    damping: 1", f"    {how}"),
           "connectors[0]", 6, "missing required key 'axis'")


def test_torsional_damper_axis_non_zero():
    expect(connectors(TD + "projection: P3, axis: [0, 0, 0]}"),
           "connectors[0].axis", 6, "must not be the zero vector")


def test_torsional_damper_unknown_projection_and_joint():
    expect(connectors(TD + "projection: p2, axis: [0, 0, 1]}"),
           "connectors[0].projection", 6, "did you mean 'P2'?")
    expect(connectors(TD + "joint: hinge}"),
           "connectors[0].joint", 6, "unknown joint 'hinge'")


def test_torsional_damper_resolution():
    s = parse_scenario(connectors(
        TD + "projection: P1, axis: [0, 0, 5]}",
        TD + "joint: spherical}",
        TD + "joint: planar, axis: [0, 3, 4]}",
        TD + "projection: P3, axis: [2, 0, 0]}"))
    c = s.connectors
    assert [(x.projection, x.joint) for x in c] == [
        ("P1", None), ("none", "spherical"), ("P2", "planar"), ("P3", None)]
    assert c[0].axis is None and c[1].axis is None
    np.testing.assert_allclose(c[2].axis, [0, 0.6, 0.8], rtol=1e-15)
    assert np.array_equal(c[3].axis, [1, 0, 0])
    assert [x.name for x in c] == [f"torsional_damper-{i}" for i in range(4)]


# --------------------------------------------------------------------------
# joints (documents: bob at line 4, arm at 5, "joints:" at 6, the item at 7)
# --------------------------------------------------------------------------
ARM = "  - {name: arm, mass: 1, inertia: [1, 1, 1], position: [1, 0, 0]}"


def joints(*lines):
    return doc(*BASE, ARM, "joints:", *lines)


ALL_JOINTS = (
    "  - {type: spherical, bodies: [world, bob], point: [0, 0, 0]}",                               # 7
    "  - type: revolute",                                                                            # 8
    "    name: hinge",
    "    bodies: [bob, arm]",
    "    point: [0.5, 0, 0]",
    "    axis: [0, 0, 2]",
    "    drive: {angle: {smooth_ramp: {t0: 0, t1: 1, to: 1.5}}}",
    "  - {type: prismatic, bodies: [bob, arm], point: [0, 0, 0], axis: [3, 4, 0],"                 # 14
    " drive: {displacement: {ramp: {t0: 0.5, t1: 1, to: 0.2}}}}",
    "  - type: cylindrical",                                                                         # 15
    "    bodies: [bob, arm]",
    "    point: [1, 2, 3]",
    "    axis: [0, -1, 0]",
    "    drive:",
    "      angle: {sine: {amplitude: 0.1, frequency: 2}}",
    "      displacement: {table: [[0, 0], [1, 0.5]]}",
    "  - {type: planar, bodies: [world, arm], point: [0, 0, 1], axis: [0, 0, 1]}",                  # 22
    "  - {type: universal, bodies: [bob, arm], point: [0, 0, 0], axes: [[2, 0, 0], [0, 0, -5]]}",   # 23
    "  - {type: lock, bodies: [bob, arm], point: [7, 8, 9]}",                                        # 24
    "  - {type: distance, bodies: [world, arm], points: [[1, 0, 0], [4, 4, 0]]}",                    # 25
    "  - {type: distance, bodies: [world, arm], points: [[1, 0, 0], [4, 4, 0]], length: 5.0}",       # 26
)


def test_joints_optional():
    for extra in ((), ("joints:",), ("joints: []",)):
        s = parse_scenario(doc(*BASE, *extra))
        assert s.joints == ()
    expect(doc(*BASE, "joints: {type: lock}"), "joints", 5, "must be a list")


def test_every_joint_type_loads_into_its_spec():
    s = parse_scenario(joints(*ALL_JOINTS))
    j = s.joints
    assert all(isinstance(x, JointSpec) for x in j)
    assert [x.type for x in j] == ["spherical", "revolute", "prismatic", "cylindrical", "planar", "universal",
                                   "lock", "distance", "distance"]
    assert [x.name for x in j] == ["spherical-0", "hinge", "prismatic-2", "cylindrical-3", "planar-4",
                                   "universal-5", "lock-6", "distance-7", "distance-8"]
    assert [x.line for x in j] == [7, 8, 14, 15, 22, 23, 24, 25, 26]
    assert [(x.body_a, x.body_b) for x in j][:2] == [("world", "bob"), ("bob", "arm")]
    sph, rev, pri, cyl, pla, uni, lock, dist, dist_given = j
    # point: every type but distance; axis: revolute, prismatic, cylindrical, planar (normalised)
    assert np.array_equal(sph.point, [0, 0, 0]) and sph.axis is None and sph.axes is None and sph.points is None
    assert np.array_equal(rev.point, [0.5, 0, 0]) and np.array_equal(rev.axis, [0, 0, 1])
    np.testing.assert_allclose(pri.axis, [0.6, 0.8, 0], rtol=1e-15)
    assert np.array_equal(cyl.point, [1, 2, 3]) and np.array_equal(cyl.axis, [0, -1, 0])
    assert np.array_equal(pla.axis, [0, 0, 1]) and pla.angle is None and pla.displacement is None
    assert uni.axis is None and np.array_equal(uni.axes, [[1, 0, 0], [0, 0, -1]]) and uni.axes.shape == (2, 3)
    assert np.array_equal(lock.point, [7, 8, 9]) and lock.axis is None
    assert dist.point is None and np.array_equal(dist.points, [[1, 0, 0], [4, 4, 0]]) and dist.length == 5.0
    assert dist_given.length == 5.0
    for x in j:
        for a in (x.point, x.axis, x.axes, x.points):
            assert a is None or (a.dtype == float and not a.flags.writeable)
    # drives: the time functions, None where absent
    assert isinstance(rev.angle, SmoothRamp) and rev.displacement is None
    assert (rev.angle.t0, rev.angle.t1, rev.angle.start, rev.angle.end) == (0, 1, 0, 1.5)
    assert isinstance(pri.displacement, Ramp) and pri.angle is None and pri.displacement.end == 0.2
    assert isinstance(cyl.angle, Sine) and isinstance(cyl.displacement, Table)
    assert cyl.angle(0.0) == 0.0 and cyl.displacement(1.0) == 0.5
    assert all(x.angle is None and x.displacement is None for x in (sph, pla, uni, lock, dist))


def test_joint_names_are_their_own_namespace():
    """A joint may share a connector's name, and a default joint name a connector's."""
    s = parse_scenario(doc(*BASE, ARM,
                           "connectors:",
                           "  - {name: lock-0, type: damper, bodies: [bob, arm], points: [[0, 0, 0], [1, 0, 0]], "
                           "damping: 1}",
                           "  - {name: hinge, type: damper, bodies: [bob, arm], points: [[0, 0, 0], [1, 0, 0]], "
                           "damping: 1}",
                           "joints:",
                           "  - {type: lock, bodies: [bob, arm], point: [0, 0, 0]}",
                           "  - {name: hinge, type: spherical, bodies: [bob, arm], point: [0, 0, 0]}"))
    assert [c.name for c in s.connectors] == ["lock-0", "hinge"] and [x.name for x in s.joints] == ["lock-0", "hinge"]


def test_joint_names_unique():
    lock = "type: lock, bodies: [bob, arm], point: [0, 0, 0]"
    expect(joints(f"  - {{name: a, {lock}}}", f"  - {{name: a, {lock}}}"),
           "joints[1].name", 8, "duplicate joint name 'a' (first at line 7)")
    expect(joints(f"  - {{{lock}}}", f"  - {{name: lock-0, {lock}}}"),
           "joints[1].name", 8, "duplicate joint name 'lock-0'")
    expect(joints(f"  - {{name: lock-1, {lock}}}", f"  - {{{lock}}}"),
           "joints[1]", 8, "duplicate default joint name 'lock-1'")
    expect(joints(f"  - {{name: '', {lock}}}"), "joints[0].name", 7, "must not be empty")


def test_joint_item_must_be_a_mapping():
    expect(joints("  - lock"), "joints[0]", 7, "must be a mapping, got text 'lock'")


def test_joint_type_required():
    expect(joints("  - {bodies: [bob, arm], point: [0, 0, 0]}"), "joints[0]", 7, "missing required key 'type'")


def test_joint_type_unknown_with_hint():
    p = expect(joints("  - {type: revolut, bodies: [bob, arm], point: [0, 0, 0], axis: [0, 0, 1]}"),
               "joints[0].type", 7, "unknown joint type 'revolut' (did you mean 'revolute'?)")
    assert p.message.endswith("expected one of spherical, revolute, prismatic, cylindrical, planar, universal, "
                              "lock, distance")
    # a type is written as it is stored: no aliases, no other letter case
    expect(joints("  - {type: Hinge, bodies: [bob, arm], point: [0, 0, 0]}"), "joints[0].type", 7,
           "unknown joint type 'Hinge'")
    expect(joints("  - {type: Lock, bodies: [bob, arm], point: [0, 0, 0]}"), "joints[0].type", 7,
           "did you mean 'lock'?")
    # with an unknown type, only keys that no joint type has are refused
    err = refused(joints("  - {type: hinge, bodies: [bob, arm], point: [0, 0, 0], axis: [0, 0, 1], dirve: {}}"))
    assert [(p.path, p.message) for p in err.problems if p.path == "joints[0]"] == [
        ("joints[0]", "unknown key 'dirve' (did you mean 'drive'?)")]


def test_joint_and_connector_types_belong_to_their_own_sections():
    p = expect(connectors("  - {type: revolute, bodies: [world, bob]}"), "connectors[0].type", 6,
               "unknown connector type 'revolute'")
    assert p.message.endswith("; 'revolute' is a joint type: list it under joints")
    p = expect(joints("  - {type: dashpot, bodies: [world, bob]}"), "joints[0].type", 7, "unknown joint type 'dashpot'")
    assert p.message.endswith("; 'dashpot' is a connector type: list it under connectors")
    assert "joint type" not in refused(connectors("  - {type: hinge, bodies: [world, bob]}")).problems[0].message


def test_joint_unknown_key_with_hint():
    expect(joints("  - type: revolute", "    bodies: [bob, arm]", "    point: [0, 0, 0]", "    axsi: [0, 0, 1]"),
           "joints[0]", 10, "unknown key 'axsi' (did you mean 'axis'?)")
    expect(joints("  - {type: spherical, bodies: [bob, arm], pont: [0, 0, 0]}"),
           "joints[0]", 7, "unknown key 'pont' (did you mean 'point'?)")


@pytest.mark.parametrize("jtype, key, value, owners", [
    ("spherical", "axis", "[0, 0, 1]", "revolute, prismatic, cylindrical, planar"),
    ("revolute", "axes", "[[1, 0, 0], [0, 1, 0]]", "universal"),
    ("lock", "length", "1", "distance"),
    ("universal", "points", "[[0, 0, 0], [1, 0, 0]]", "distance"),
    ("distance", "point", "[0, 0, 0]", "spherical, revolute, prismatic, cylindrical, planar, universal, lock"),
])
def test_key_of_another_joint_type(jtype, key, value, owners):
    expect(joints(f"  - type: {jtype}", "    bodies: [bob, arm]", f"    {key}: {value}"),
           "joints[0]", 9, f"{key!r} is not a key of a {jtype} joint (it belongs to: {owners})")


def test_joint_bodies():
    expect(joints("  - type: lock", "    bodies: [bob, amr]", "    point: [0, 0, 0]"),
           "joints[0].bodies[1]", 8, "unknown body 'amr' (did you mean 'arm'?)")
    expect(joints("  - {type: lock, bodies: [bob], point: [0, 0, 0]}"), "joints[0].bodies", 7, "must have 2 entries")
    expect(joints("  - {type: lock, point: [0, 0, 0]}"), "joints[0]", 7, "missing required key 'bodies'")
    expect(joints("  - type: lock", "    bodies: [arm, arm]", "    point: [0, 0, 0]"),
           "joints[0].bodies", 8, "a joint cannot join a body to itself ('arm')")
    text = doc(*BASE, "  - {name: base, fixed: true}", "joints:", "  - type: lock", "    bodies: [world, base]",
               "    point: [0, 0, 0]")
    expect(text, "joints[0].bodies", 8, "joins two fixed bodies ('world' and 'base'); at least one must move")


@pytest.mark.parametrize("jtype", ["spherical", "revolute", "prismatic", "cylindrical", "planar", "universal",
                                   "lock"])
def test_joint_point_required(jtype):
    expect(joints(f"  - {{type: {jtype}, bodies: [bob, arm]}}"), "joints[0]", 7, "missing required key 'point'")


def test_joint_point_is_a_vector():
    expect(joints("  - {type: spherical, bodies: [bob, arm], point: [0, 0]}"), "joints[0].point", 7,
           "must have 3 entries, got 2")
    expect(joints("  - {type: spherical, bodies: [bob, arm], point: [0, .inf, 0]}"), "joints[0].point[1]", 7,
           "must be finite")


@pytest.mark.parametrize("jtype", ["revolute", "prismatic", "cylindrical", "planar"])
def test_joint_axis_required_and_non_zero(jtype):
    expect(joints(f"  - {{type: {jtype}, bodies: [bob, arm], point: [0, 0, 0]}}"), "joints[0]", 7,
           "missing required key 'axis'")
    expect(joints(f"  - {{type: {jtype}, bodies: [bob, arm], point: [0, 0, 0], axis: [0, 0, 0]}}"),
           "joints[0].axis", 7, "must not be the zero vector")
    expect(joints(f"  - {{type: {jtype}, bodies: [bob, arm], point: [0, 0, 0], axis: [0, 1e999, 0]}}"),
           "joints[0].axis[1]", 7, "must be finite")


def test_joint_axis_normalised_without_overflow():
    s = parse_scenario(joints("  - {type: revolute, bodies: [bob, arm], point: [0, 0, 0], axis: [3e307, 4e307, 0]}",
                              "  - {type: revolute, bodies: [bob, arm], point: [0, 0, 0], axis: [0, 0, 1e-320]}"))
    np.testing.assert_allclose(s.joints[0].axis, [0.6, 0.8, 0], rtol=1e-15)
    assert np.array_equal(s.joints[1].axis, [0, 0, 1])


def test_universal_axes():
    uni = "  - {type: universal, bodies: [bob, arm], point: [0, 0, 0], "
    expect(joints(uni + "}"), "joints[0]", 7, "missing required key 'axes'")
    expect(joints(uni + "axes: [[1, 0, 0]]}"), "joints[0].axes", 7, "must have 2 entries, got 1")
    expect(joints(uni + "axes: [[1, 0, 0], [0, 0, 0]]}"), "joints[0].axes[1]", 7, "must not be the zero vector")
    expect(joints("  - type: universal", "    bodies: [bob, arm]", "    point: [0, 0, 0]",
                  "    axes: [[1, 0, 0], [1, 1, 0]]"),
           "joints[0].axes", 10, "must be perpendicular at t = 0 (|cos| ≤ 1e-6); the angle between them is 45°")
    expect(joints(uni + "axes: [[1, 0, 0], [-1, 0, 0]]}"), "joints[0].axes", 7, "the angle between them is 180°")
    # |cos| ≤ 1e-6 passes (and the axes are stored as written, normalised)
    s = parse_scenario(joints(uni + "axes: [[1, 0, 0], [1e-6, 1, 0]]}"))
    np.testing.assert_allclose(s.joints[0].axes[1], [1e-6, 1, 0], rtol=1e-12)
    expect(joints(uni + "axes: [[1, 0, 0], [2e-6, 1, 0]]}"), "joints[0].axes", 7, "must be perpendicular")


def test_distance_points_and_length():
    dist = "  - {type: distance, bodies: [world, arm], "
    expect(joints(dist + "}"), "joints[0]", 7, "missing required key 'points'")
    expect(joints(dist + "points: [[0, 0, 0], [0, 1]]}"), "joints[0].points[1]", 7, "must have 3 entries")
    expect(joints(dist + "points: [[1, 2, 3], [1, 2, 3]]}"), "joints[0].points", 7,
           "the two points coincide; a distance joint needs two different points")
    expect(joints(dist + "points: [[-1e308, 0, 0], [1e308, 0, 0]]}"), "joints[0].points", 7,
           "the points are too far apart for a finite length")
    expect(joints(dist + "points: [[0, 0, 0], [3, 4, 0]], length: 0}"), "joints[0].length", 7, "must be > 0")
    expect(joints(dist + "points: [[0, 0, 0], [3, 4, 0]], length: -1}"), "joints[0].length", 7, "must be > 0")
    # far apart but finite is refused too: the law squares the distance (issue 15)
    expect(joints(dist + "points: [[-1e308, 0, 0], [0.5e308, 0, 0]]}"), "joints[0].points", 7,
           "the points are too far apart for a finite length (farther than 1e+150 m")
    s = parse_scenario(joints(dist + "points: [[-0.5e150, 0, 0], [0.5e150, 0, 0]]}"))
    assert s.joints[0].length == 1e150


def test_distance_length_must_match_the_initial_distance():
    p = expect(joints("  - name: rod", "    type: distance", "    bodies: [world, arm]",
                      "    points: [[1, 0, 0], [4, 4, 0]]", "    length: 5.5"),
               "joints[0].length", 11, "joint 'rod' is not satisfied at t = 0")
    assert "length 5.5 but the points are 5 apart (gap 0.5)" in p.message
    expect(joints("  - {type: distance, bodies: [world, arm], points: [[0, 0, 0], [0, 0, 1]], length: 0.999}"),
           "joints[0].length", 7, "joint 'distance-0' is not satisfied at t = 0: length 0.999 but the points are 1 "
                                  "apart (gap -0.001)")
    # within 1e-9 · max(1, d0): accepted, and stored as written
    s = parse_scenario(joints(
        "  - {type: distance, bodies: [world, arm], points: [[0, 0, 0], [0, 0, 1]], length: 1.0000000009}",
        "  - {type: distance, bodies: [world, arm], points: [[0, 0, 0], [0, 0, 1e-6]], length: 1.0e-6}",
        "  - {type: distance, bodies: [world, arm], points: [[0, 0, 0], [0, 0, 1000]], length: 1000.0000009}"))
    assert [x.length for x in s.joints] == [1.0000000009, 1e-6, 1000.0000009]
    expect(joints("  - {type: distance, bodies: [world, arm], points: [[0, 0, 0], [0, 0, 1e-6]], length: 1.1e-6}"),
           "joints[0].length", 7, "is not satisfied")
    expect(joints("  - {type: distance, bodies: [world, arm], points: [[0, 0, 0], [0, 0, 1000]], "
                  "length: 1000.000002}"), "joints[0].length", 7, "is not satisfied")


@pytest.mark.parametrize("jtype", ["spherical", "planar", "universal", "lock", "distance"])
def test_drive_only_on_driven_types(jtype):
    expect(joints(f"  - type: {jtype}", "    bodies: [bob, arm]", "    drive: {angle: {constant: 0}}"),
           "joints[0].drive", 9,
           f"a {jtype} joint takes no drive; only revolute, prismatic and cylindrical joints do")


@pytest.mark.parametrize("jtype, drive, fragment", [
    ("revolute", "{displacement: {constant: 0}}",
     "a revolute joint has no 'displacement' drive; it takes angle ('displacement' drives prismatic and "
     "cylindrical joints)"),
    ("prismatic", "{angle: {constant: 0}}",
     "a prismatic joint has no 'angle' drive; it takes displacement ('angle' drives revolute and cylindrical "
     "joints)"),
    ("revolute", "{angel: {constant: 0}}",
     "unknown drive 'angel' (did you mean 'angle'?); a revolute joint takes angle"),
    ("cylindrical", "{displacment: {constant: 0}}",
     "unknown drive 'displacment' (did you mean 'displacement'?); a cylindrical joint takes angle and/or "
     "displacement"),
    ("revolute", "{}", "must give angle"),
    ("cylindrical", "{}", "must give angle and/or displacement"),
    ("revolute", "~", "must be a mapping, got null"),
    ("revolute", "{constant: 0}", "unknown drive 'constant'"),
])
def test_drive_keys(jtype, drive, fragment):
    expect(joints(f"  - type: {jtype}", "    bodies: [bob, arm]", "    point: [0, 0, 0]", "    axis: [1, 0, 0]",
                  f"    drive: {drive}"),
           "joints[0].drive", 11, fragment)


@pytest.mark.parametrize("key, function, shown", [
    ("angle", "{constant: 0.5}", "got F(0) = 0.5"),
    ("angle", "{ramp: {t0: 0, t1: 1, from: 1, to: 0}}", "got F(0) = 1"),
    ("displacement", "{sine: {amplitude: 1, frequency: 1, offset: 0.25}}", "got F(0) = 0.25"),
    ("displacement", "{sine: {amplitude: 2, frequency: 1, phase: 1.5707963267948966}}", "got F(0) = 2"),
    ("angle", "{table: [[-1, 0], [1, 4e-12]]}", "got F(0) = 2e-12"),  # the limit is |F(0)| ≤ 1e-12
    ("displacement", "{smooth_ramp: {t0: 1, t1: 2, from: -3}}", "got F(0) = -3"),
])
def test_drive_starts_at_zero(key, function, shown):
    p = expect(joints("  - type: cylindrical", "    bodies: [bob, arm]", "    point: [0, 0, 0]", "    axis: [1, 0, 0]",
                      "    drive:", f"      {key}: {function}"),
               f"joints[0].drive.{key}", 12, "must be 0 at t = 0 (drives are measured from the initial configuration)")
    assert shown in p.message


def test_drive_time_functions():
    s = parse_scenario(joints(
        "  - type: cylindrical",
        "    bodies: [bob, arm]",
        "    point: [0, 0, 0]",
        "    axis: [1, 0, 0]",
        "    drive:",
        "      angle: {smooth_ramp: {t0: 0, t1: 2, to: 3}}",
        "      displacement: {sine: {amplitude: 1, frequency: 1, phase: 3.141592653589793}}",
        "  - {type: revolute, bodies: [bob, arm], point: [0, 0, 0], axis: [1, 0, 0], "
        "drive: {angle: {table: [[-1, -1], [0, 0], [1, 1e-13]]}}}",
        "  - {type: prismatic, bodies: [bob, arm], point: [0, 0, 0], axis: [1, 0, 0], "
        "drive: {displacement: {constant: 0}}}"))
    cyl, rev, pri = s.joints
    assert isinstance(cyl.angle, SmoothRamp) and cyl.angle(1.0) == 1.5 and cyl.angle.derivative(0.0) == 0.0
    assert isinstance(cyl.displacement, Sine)  # sin(π) ≈ 1.2e-16: zero within 1e-12
    assert isinstance(rev.angle, Table) and isinstance(pri.displacement, Constant)
    # a bad function inside a drive is reported at its own path
    expect(joints("  - {type: revolute, bodies: [bob, arm], point: [0, 0, 0], axis: [1, 0, 0], "
                  "drive: {angle: {smooth_ramp: {t0: 1, t1: 1}}}}"),
           "joints[0].drive.angle.smooth_ramp.t1", 7, "must be greater than t0 (1)")
    expect(joints("  - {type: revolute, bodies: [bob, arm], point: [0, 0, 0], axis: [1, 0, 0], "
                  "drive: {angle: 0}}"), "joints[0].drive.angle", 7, "must be a mapping, got number 0")


def test_every_joint_problem_reported_at_once():
    text = joints(
        "  - {type: sphrical, bodies: [bob, arm], point: [0, 0, 0]}",                              # 7
        "  - {type: revolute, bodies: [bob, bob], point: [0, 0, 0], axis: [0, 0, 0]}",             # 8
        "  - {type: universal, bodies: [bob, arm], point: [0, 0, 0], axes: [[1, 0, 0], [1, 1, 0]]}",  # 9
        "  - {type: distance, bodies: [world, arm], points: [[0, 0, 0], [1, 0, 0]], length: 2}",   # 10
        "  - {type: spherical, bodies: [bob, arm], axis: [0, 0, 1], drive: {angle: {constant: 0}}}",  # 11
        "  - {type: revolute, bodies: [bob, arm], point: [0, 0, 0], axis: [0, 0, 1],"              # 12
        " drive: {displacement: {constant: 0}}}",
        "  - {type: prismatic, bodies: [bob, ghost], point: [0, 0, 0], axis: [1, 0, 0],"           # 13
        " drive: {displacement: {constant: 1}}}",
        "  - {type: lock, bodies: [bob, arm], point: [0, 0, 0]}",                                  # 14
        "  - {name: lock-7, type: lock, bodies: [bob, arm], point: [0, 0, 0]}")                    # 15
    err = refused(text)
    got = {(p.path, p.line) for p in err.problems}
    assert got == {("joints[0].type", 7), ("joints[1].bodies", 8), ("joints[1].axis", 8), ("joints[2].axes", 9),
                   ("joints[3].length", 10), ("joints[4]", 11), ("joints[4].drive", 11), ("joints[5].drive", 12),
                   ("joints[6].bodies[1]", 13), ("joints[6].drive.displacement", 13), ("joints[8].name", 15)}
    assert len(err.problems) == 12  # joints[4] misses 'point' and has 'axis'
    assert [p.line for p in err.problems] == sorted(p.line for p in err.problems)


# --------------------------------------------------------------------------
# loads (documents: "loads:" at line 5, the item at 6)
# --------------------------------------------------------------------------
def loads(*lines):
    return doc(*BASE, "loads:", *lines)


def test_load_needs_a_moving_body():
    expect(loads("  - {type: force, body: world, vector: [1, 0, 0]}"),
           "loads[0].body", 6, "a load needs a moving body")
    text = doc(*BASE, "  - {name: base, fixed: true}", "loads:",
               "  - {type: torque, body: base, vector: [1, 0, 0]}")
    expect(text, "loads[0].body", 7, "a load needs a moving body")


def test_load_unknown_body():
    expect(loads("  - {type: force, body: Bob, vector: [1, 0, 0]}"), "loads[0].body", 6, "did you mean 'bob'?")


def test_load_type():
    expect(loads("  - {type: forse, body: bob, vector: [1, 0, 0]}"), "loads[0].type", 6, "did you mean 'force'?")


def test_load_vector_required():
    expect(loads("  - {type: force, body: bob}"), "loads[0]", 6, "missing required key 'vector'")


@pytest.mark.parametrize("scale, path, fragment", [
    ("{}", "loads[0].scale", "must give one of constant, ramp, sine, table"),
    ("{constant: 1, sine: {amplitude: 1, frequency: 1}}", "loads[0].scale", "give exactly one of"),
    ("{constant: yes}", "loads[0].scale.constant", "must be a number"),
    ("{ramp: {t0: 1, t1: 1}}", "loads[0].scale.ramp.t1", "must be greater than t0"),
    ("{ramp: {t1: 1}}", "loads[0].scale.ramp", "missing required key 't0'"),
    ("{smooth_ramp: {t0: 2, t1: 1}}", "loads[0].scale.smooth_ramp.t1", "must be greater than t0 (2)"),
    ("{smooth_ramp: {t0: 0}}", "loads[0].scale.smooth_ramp", "missing required key 't1'"),
    ("{smooth_ramp: {t0: 0, t1: 1, form: 1}}", "loads[0].scale.smooth_ramp", "did you mean 'from'?"),
    ("{smooth_ramp: {t0: 0, t1: 1}, ramp: {t0: 0, t1: 1}}", "loads[0].scale",
     "give exactly one of constant, ramp, sine, table, smooth_ramp; got ramp and smooth_ramp"),
    ("{smoth_ramp: {t0: 0, t1: 1}}", "loads[0].scale", "unknown key 'smoth_ramp' (did you mean 'smooth_ramp'?)"),
    ("{sine: {frequency: 1}}", "loads[0].scale.sine", "missing required key 'amplitude'"),
    ("{sine: {amplitude: 1, frequency: 1, phse: 0}}", "loads[0].scale.sine", "did you mean 'phase'?"),
    ("{table: [[0, 1]]}", "loads[0].scale.table", "at least 2 rows"),
    ("{table: [[0, 1], [1, 2, 3]]}", "loads[0].scale.table[1]", "must have 2 entries"),
    ("{table: [[0, 1], [2, 2], [2, 3]]}", "loads[0].scale.table[2]", "strictly increasing"),
    ("{cosine: {amplitude: 1}}", "loads[0].scale", "unknown key 'cosine'"),
])
def test_time_function_rules(scale, path, fragment):
    text = loads("  - type: force", "    body: bob", "    vector: [1, 0, 0]", f"    scale: {scale}")
    expect(text, path, 9, fragment)


def test_time_functions_evaluate():
    s = parse_scenario(loads(
        "  - {type: force, body: bob, vector: [1, 0, 0]}",
        "  - {type: force, body: bob, vector: [1, 0, 0], scale: {constant: 2.5}}",
        "  - {type: force, body: bob, vector: [1, 0, 0], scale: {ramp: {t0: 1, t1: 3, from: 2, to: 6}}}",
        "  - {type: force, body: bob, vector: [1, 0, 0], scale: {ramp: {t0: 0, t1: 2}}}",
        "  - {type: force, body: bob, vector: [1, 0, 0], scale: {sine: {amplitude: 2, frequency: 0.25, "
        "phase: 1.5707963267948966, offset: 1}}}",
        "  - {type: torque, body: bob, vector: [0, 0, 1], scale: {table: [[0, 0], [1, 2], [3, 0]]}}",
        "  - {type: force, body: bob, vector: [1, 0, 0], scale: {smooth_ramp: {t0: 1, t1: 3, from: 2, to: 6}}}",
        "  - {type: force, body: bob, vector: [1, 0, 0], scale: {smooth_ramp: {t0: 0, t1: 2}}}"))
    f = [load.scale for load in s.loads]
    assert isinstance(f[0], Constant) and f[0](7.0) == 1.0
    assert isinstance(f[1], Constant) and f[1](7.0) == 2.5
    assert isinstance(f[2], Ramp)
    np.testing.assert_allclose(f[2](np.array([0.0, 1.0, 2.0, 3.0, 5.0])), [2, 2, 4, 6, 6])
    np.testing.assert_allclose(f[3](np.array([-1.0, 1.0, 9.0])), [0, 0.5, 1])  # from 0 to 1 by default
    # 1 + 2 sin(2π·0.25·t + π/2) = 1 + 2 cos(π t / 2)
    assert isinstance(f[4], Sine)
    np.testing.assert_allclose(f[4](np.array([0.0, 1.0, 2.0])), [3, 1, -1], atol=1e-14)
    assert isinstance(f[5], Table)
    np.testing.assert_allclose(f[5](np.array([-1.0, 0.5, 2.0, 4.0])), [0, 1, 1, 0])
    assert s.loads[5].type == "torque"
    assert isinstance(f[6], SmoothRamp) and (f[6].t0, f[6].t1, f[6].start, f[6].end) == (1, 3, 2, 6)
    np.testing.assert_allclose(f[6](np.array([0.0, 1.0, 2.0, 3.0, 5.0])), [2, 2, 4, 6, 6])
    assert isinstance(f[7], SmoothRamp) and (f[7].start, f[7].end) == (0, 1)  # from 0 to 1 by default
    np.testing.assert_allclose(f[7](np.array([-1.0, 0.5, 1.0, 9.0])), [0, 0.103515625, 0.5, 1])


# --------------------------------------------------------------------------
# the whole thing
# --------------------------------------------------------------------------
def test_example_loads_with_the_right_values(tmp_path):
    f = tmp_path / "demo.yaml"
    f.write_text(EXAMPLE.replace("type: damper", "type: dashpot"), encoding="utf-8")
    s = load_scenario(f)
    assert s.name == "two-body-demo" and s.source == str(f) and s.version == 1
    assert s.description.startswith("A body hanging")
    assert np.array_equal(s.gravity, [0, 0, -9.81])
    assert (s.time.end, s.time.step, s.output.interval) == (2.0, 1e-3, 1e-2)
    assert s.output_file == "outputs/two-body-demo.h5"
    base, bob = s.bodies
    assert base.fixed and base.mass == 0.0 and not base.inertia.any() and base.line == 15
    assert bob.mass == 1.0 and np.array_equal(bob.inertia, np.diag([0.01, 0.02, 0.03]))
    np.testing.assert_allclose(bob.orientation, [math.cos(0.15), 0, 0, math.sin(0.15)], rtol=1e-15)
    assert np.array_equal(bob.velocity, [0.5, 0, 0]) and np.array_equal(bob.angular_velocity, [0, 0, 2])
    hanger, shock, swivel = s.connectors
    assert (hanger.type, hanger.stiffness, hanger.rest_length) == ("spring", 200.0, 0.8)
    assert shock.type == "damper" and shock.damping == 1.5  # written as the alias dashpot
    assert (swivel.projection, swivel.joint) == ("P2", "revolute") and np.array_equal(swivel.axis, [0, 0, 1])
    assert (hanger.body_a, hanger.body_b) == ("base", "bob")
    [load] = s.loads
    assert isinstance(load.scale, Sine) and (load.scale.amplitude, load.scale.frequency) == (1.0, 0.5)
    assert not bob.position.flags.writeable and not hanger.points.flags.writeable


def test_spring_rest_length_defaults_to_initial_distance():
    s = parse_scenario(connectors("  - {type: spring, bodies: [world, bob], points: [[1, 0, 0], [4, 4, 0]], "
                                  "stiffness: 1}"))
    assert s.connectors[0].rest_length == 5.0 and s.connectors[0].name == "spring-0"


def test_every_problem_reported_at_once():
    text = doc("mbsim: 1",                                 # 1
               "time: {end: 1, step: yes}",                # 2
               "integrator: {rho_inf: 2}",                 # 3
               "bodies:",                                  # 4
               "  - {name: bob, mass: -1, inertia: [1, 1, 1]}",   # 5
               "connectors:",                              # 6
               "  - {type: spring, bodies: [bob, ghost]}",  # 7
               "loads:",                                   # 8
               "  - {type: force, body: world, vector: [1, 0, 0]}")  # 9
    err = refused(text, "many.yaml")
    got = [(p.path, p.line) for p in err.problems]
    for where in [("time.step", 2), ("integrator.rho_inf", 3), ("bodies[0].mass", 5),
                  ("connectors[0].bodies[1]", 7), ("connectors[0]", 7), ("loads[0].body", 9)]:
        assert where in got
    assert [line for _, line in got] == sorted(line for _, line in got)
    lines = str(err).splitlines()
    assert lines[0] == f"many.yaml: {len(err.problems)} problems"
    assert all(line.startswith("  ") for line in lines[1:]) and len(lines) == len(err.problems) + 1


def test_problem_and_error_text():
    assert str(Problem("bodies[1].inertia", 14, "must be positive definite")) == \
        "bodies[1].inertia (line 14): must be positive definite"
    assert str(Problem("<file>", None, "cannot read")) == "<file>: cannot read"
    assert str(ScenarioError([Problem("a", 1, "b")], "f.yaml")) == "f.yaml: 1 problem\n  a (line 1): b"


def test_text_is_kept_exactly(tmp_path):
    raw = ("# comment ✓\r\n" + EXAMPLE.replace("\n", "\r\n") + "\r\n\r\n").encode("utf-8")
    f = tmp_path / "crlf.yaml"
    f.write_bytes(raw)
    assert load_scenario(f).text.encode("utf-8") == raw
    assert parse_scenario(EXAMPLE).text == EXAMPLE


def test_scenario_from_dict():
    data = {
        "mbsim": 1,
        "time": {"end": 1.0, "step": np.float64(1e-3)},
        "bodies": [{"name": "bob", "mass": 2, "inertia": np.array([1.0, 2.0, 3.0]),
                    "orientation": {"rotation_vector": (0.0, 0.0, 0.5)}}],
        "connectors": [{"type": "dashpot", "bodies": ["world", "bob"], "points": [[0, 0, 0], [0, 0, 1]],
                        "damping": 1e-3}],
    }
    s = scenario_from_dict(data, name="api")
    assert s.name == "api" and s.source is None and s.text.startswith("mbsim: 1\n")
    assert s.time.step == 1e-3 and s.connectors[0].damping == 1e-3 and s.connectors[0].type == "damper"
    np.testing.assert_allclose(s.bodies[0].orientation, quat_axis_angle([0, 0, 1], 0.5), atol=1e-15)
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict({**data, "gravity": [0, 0, float("nan")]})
    [p] = info.value.problems
    assert p.path == "gravity[2]" and "must be finite" in p.message
    assert s.text.splitlines()[0] == "mbsim: 1"


def test_scenario_from_dict_passes_joints_through():
    data = yaml.safe_load(joints(*ALL_JOINTS))
    data["integrator"] = {"joints": {"redundant": "refuse"}}
    data["joints"][1]["axis"] = np.array([0.0, 0.0, 2.0])
    s = scenario_from_dict(data)
    assert "joints:\n  - {" in s.text and "integrator:\n  joints: {" in s.text
    assert [x.name for x in s.joints][:2] == ["spherical-0", "hinge"] and s.integrator.redundant == "refuse"
    import dataclasses
    from_text = parse_scenario(joints(*ALL_JOINTS)).joints  # the same joints, on other lines
    _same([dataclasses.replace(x, line=None) for x in s.joints],
          [dataclasses.replace(x, line=None) for x in from_text])
    _same(s.joints, parse_scenario(s.text).joints)
    assert isinstance(s.joints[1].angle, SmoothRamp) and np.array_equal(s.joints[1].axis, [0, 0, 1])
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict({**data, "joints": [{"type": "hinge", "bodies": ["world", "bob"]}]})
    [p] = info.value.problems
    assert p.path == "joints[0].type" and "unknown joint type 'hinge'" in p.message


JUNK = ["~", "yes", "'x'", "-1", "0", "[]", "{}", "[1, 2, 3]", "[[1]]", "{a: 1}", ".nan", "1e999", "!!set {a}"]
SLOTS = ["mbsim", "name", "gravity", "time", "time.end", "integrator", "integrator.newton", "output",
         "output.interval", "bodies", "bodies.0", "bodies.1.mass", "bodies.1.inertia", "bodies.1.orientation",
         "bodies.1.orientation.axis_angle", "connectors", "connectors.0", "connectors.0.bodies",
         "connectors.0.points", "connectors.2.joint", "connectors.2.axis", "loads", "loads.0.scale",
         "loads.0.scale.sine"]


JOINT_EXAMPLE = joints(*ALL_JOINTS, "integrator: {joints: {redundant: remove}}")
JOINT_SLOTS = ["joints", "joints.0", "joints.0.type", "joints.0.name", "joints.0.bodies", "joints.0.point",
               "joints.1.axis", "joints.1.drive", "joints.1.drive.angle", "joints.1.drive.angle.smooth_ramp",
               "joints.3.drive.displacement", "joints.5.axes", "joints.7.points", "joints.8.length",
               "integrator.joints", "integrator.joints.redundant"]


@pytest.mark.parametrize("slot", SLOTS + [f"joint-example:{slot}" for slot in JOINT_SLOTS])
def test_junk_anywhere_gives_scenario_error_not_traceback(slot):
    """Replace one value of the example by each junk value: a Scenario or a ScenarioError, nothing else."""
    example = EXAMPLE
    if slot.startswith("joint-example:"):
        example, slot = JOINT_EXAMPLE, slot.split(":", 1)[1]
    for junk in JUNK:
        data = yaml.safe_load(example)
        *parents, last = slot.split(".")
        target = data
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        marker = "__JUNK__"
        if isinstance(target, list):
            target[int(last)] = marker
        else:
            target[last] = marker
        text = yaml.safe_dump(data, sort_keys=False).replace(f"'{marker}'", junk).replace(marker, junk)
        try:
            parse_scenario(text)
        except ScenarioError as e:
            assert e.problems and all(isinstance(p, Problem) for p in e.problems)


# ---------------------------------------------------------------------------
# libyaml's C parser (the fast path) and PyYAML's Python parser read alike
# ---------------------------------------------------------------------------
def _problems_with(text, fast, monkeypatch):
    import mbsim.scenario.loader as ld
    import mbsim.scenario.yamlnodes as yn
    monkeypatch.setattr(ld, "compose", lambda t: yn.compose(t, fast=fast))
    try:
        sc = parse_scenario(text)
        return [(b.name, b.mass, tuple(b.position)) for b in sc.bodies]
    except ScenarioError as e:
        return [(p.path, p.line, p.message) for p in e.problems]


@pytest.mark.parametrize("text", [
    *(p.read_text() for p in example_paths()),
    doc(*BASE, "---", "mbsim: 1"),
    doc(*BASE, "gravty: [0, 0, yes]"),
    joints(*ALL_JOINTS),
    joints("  - {type: sphrical, bodies: [bob, arm], axis: [0, 0, 1], drive: {angel: {constant: 1}}}",
           "  - type: revolute", "    bodies: [arm, arm]", "    drive:", "      angle: {smooth_ramp: {t0: 1}}"),
    "mbsim: 1\ntime: {end: 1, step: '1e-3'}\nbodies: [{name: a, mass: 1e-3, inertia: [1, 1, 1]}]\n",
    "a: [1, 2\n",
])
def test_c_and_python_yaml_parsers_agree(text, monkeypatch):
    fast = _problems_with(text, True, monkeypatch)
    slow = _problems_with(text, False, monkeypatch)
    assert fast == slow


# ---------------------------------------------------------------------------
# a dict is validated from its node graph, exactly as its YAML text would be
# ---------------------------------------------------------------------------
def _same(a, b, where="scenario"):
    """Recursive equality of specs (dataclasses, arrays, tuples, time functions)."""
    import dataclasses
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert np.array_equal(a, b, equal_nan=True), where
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), where
    else:
        assert a == b, where


def _outcome(fn, data):
    try:
        return fn(data), None
    except ScenarioError as exc:
        return None, [(p.path, p.line, p.message) for p in exc.problems]


EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "scenarios"


def _dict_variants():
    base = yaml.safe_load((EXAMPLES / "pendulum.yaml").read_text())
    out = [yaml.safe_load(p.read_text()) for p in example_paths()]
    bad = [
        {"bodies": "x"}, {"connectors": [{"type": "sping"}]}, {"time": {"end": "1", "step": None}},
        {"gravity": [0, 0, float("nan")]}, {"gravity": [0, 0, float("inf")]}, {1: 2}, {"mbsim": True},
        {"time": {"end": 1.0, "step": 0.001, "adaptive": "yes"}}, {"integrator": {"newton": {"rtol": -1}}},
        {"bodies": [{"name": True, "mass": 1, "inertia": [1, 1, 1]}]}, {"output": {"interval": 0.0015}},
        {"bodies": [{"name": "a", "mass": 1, "inertia": [1, 1, 1], "velocity": [1, 2]}, {"name": "a"}]},
        {"connectors": [{"name": "k", "type": "spring", "bodies": ["world", "nothing"], "points": [[0, 0, 0]],
                         "stiffness": "stiff", "extra": {None: 1, True: 2, 1.5: 3}}]},
        {"loads": [{"type": "force", "body": "b", "vector": [1, 2, 3], "scale": {"sine": {"amplitude": 1}}}]},
        {"name": "", "description": 5, "not a key": 1, "2": 3},
        {"name": "n\x85m", "description": "a\u2028b"},  # YAML line breaks that JSON leaves alone
        {"k" * 1100: 1},  # longer than a YAML key may be
        {"joints": [{"type": "revolute", "bodies": ["world", "bob"], "point": [0, 0, 0], "axis": [0, 0, 3],
                     "drive": {"angle": {"smooth_ramp": {"t0": 0, "t1": 1, "to": 2}}}},
                    {"type": "distance", "bodies": ["world", "bob"], "points": [[0, 0, 0], [0, 0, 2]]}],
         "integrator": {"joints": {"velocities": "refuse"}}},
        {"joints": [{"type": "univresal", "bodies": ["world", "bob"], "axes": [[1, 0, 0], [1, 1, 0]]},
                    {"type": "universal", "bodies": ["world", "world"], "point": [0, 0, 0],
                     "axes": [[1, 0, 0], [1, 1, 0]], "drive": {"angle": {"constant": 1}}},
                    {"type": "distance", "bodies": ["world", "bob"], "points": [[0, 0, 0], [0, 0, 2]], "length": 3},
                    {"type": "prismatic", "bodies": ["world", "bob"], "point": [0, 0, 0], "axis": [0, 0, 0],
                     "drive": {"angle": None, "displacement": {"constant": 0.5}}}],
         "integrator": {"joints": {"redundant": None}}},
    ]
    for patch in bad:
        d = dict(base)
        d.update(patch)
        out.append(d)
    return out


@pytest.mark.parametrize("data", _dict_variants(), ids=lambda d: str(d.get("name", "?"))[:20])
def test_a_dict_is_judged_exactly_as_its_yaml_text(data):
    """scenario_from_dict builds the node graph of to_yaml's text straight from the dict: the same
    scenario, or the same problems with the same paths and lines, as parsing that text."""
    from mbsim.scenario.loader import to_yaml, _plain
    direct, direct_problems = _outcome(scenario_from_dict, data)
    parsed, parsed_problems = _outcome(lambda d: parse_scenario(to_yaml(_plain(d))), data)
    assert direct_problems == parsed_problems
    if direct is not None:
        _same(direct, parsed)
