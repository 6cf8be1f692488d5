"""Strict YAML scenario loading and validation (SCENARIO.md)."""
from .spec import (  # noqa: F401
    WORLD, BodySpec, ConnectorSpec, LoadSpec, Scenario, TimeSpec, IntegratorSpec, OutputSpec,
    Constant, Ramp, SmoothRamp, Sine, Table, JointSpec, JOINT_TYPES, DRIVEN,
)
from .errors import Problem, ScenarioError  # noqa: F401
from .loader import load_scenario, parse_scenario, scenario_from_dict  # noqa: F401
