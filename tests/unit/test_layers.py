"""The contract between the driver and the integrator (mbsim.integrators.Integrator)."""
import ast
import inspect
from pathlib import Path

import mbsim.driver
from mbsim.integrators import INTEGRATORS, Integrator


def _members(protocol) -> set:
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {n for n, v in vars(protocol).items()
              if not n.startswith("_") and (callable(v) or isinstance(v, property))}
    return names


def test_every_integrator_has_every_member_of_the_contract():
    members = _members(Integrator)
    assert {"step", "restart", "advance_frames", "continue_counts", "n_steps", "can_advance"} <= members
    for cls in INTEGRATORS.values():
        missing = {m for m in members if not hasattr(cls, m) and m not in _instance_attributes(cls)}
        assert not missing, f"{cls.__name__} lacks {sorted(missing)}"


def _instance_attributes(cls) -> set:
    """Attributes the constructor assigns (self.x = ...)."""
    tree = ast.parse(inspect.getsource(cls.__init__).strip().replace("\n    ", "\n"))
    return {t.attr for node in ast.walk(tree) if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
            and t.value.id == "self"}


def test_the_driver_uses_only_the_contract_and_writes_no_integrator_attribute():
    tree = ast.parse(Path(mbsim.driver.__file__).read_text())
    members = _members(Integrator)

    def is_integ(node):
        return (isinstance(node, ast.Name) and node.id == "integ") or (
            isinstance(node, ast.Attribute) and node.attr == "integ")

    used, written = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_integ(node.value):
            used.add(node.attr)
            if isinstance(node.ctx, ast.Store):
                written.add(node.attr)
    assert not written, f"the driver writes integrator attributes: {sorted(written)}"
    assert used <= members, f"beyond the contract: {sorted(used - members)}"
