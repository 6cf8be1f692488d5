"""Strict YAML scenario loading and validation (SCENARIO.md)."""
from .spec import (  # noqa: F401
    WORLD, BodySpec, ConnectorSpec, LoadSpec, Scenario, TimeSpec, IntegratorSpec, OutputSpec,
    Constant, Ramp, Sine, Table,
)
