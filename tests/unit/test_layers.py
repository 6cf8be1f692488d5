"""The engine's structure: the contract between the driver and the integrator (mbsim.integrators.Integrator),
the layers of docs/develop.md (which package may import which), the one frame layout."""
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


# ------------------------------------------------------------------------------------------------
# The layers of docs/develop.md: which package of mbsim may import which (every import statement of
# mbsim/, at module level or inside a function).
ALLOWED = {
    "kernels": set(),
    "elements": {"kernels"},
    "linalg": {"kernels"},
    "scenario": {"elements"},
    "mechanics": {"elements", "kernels", "linalg"},
    "model": {"scenario", "elements", "mechanics", "kernels"},
    "integrators": {"mechanics", "elements", "kernels"},
    "stepping": set(), "energy": set(), "exitcodes": set(), "resources": {"stepping"},
    "compiling": {"integrators", "model", "scenario", "stepping", "kernels"},
    "io": {"energy", "resources", "__version__"},
    "reference": {"scenario", "kernels", "elements"},
    "analysis": {"mechanics", "kernels"},
}
LOWER = {"kernels", "elements", "linalg", "scenario", "mechanics", "model", "integrators", "stepping", "energy",
         "exitcodes", "resources", "compiling", "io", "reference", "analysis", "__version__"}
ALLOWED.update({
    "driver": LOWER - {"reference"},
    "api": LOWER | {"driver"}, "verify": LOWER | {"driver"}, "compare": LOWER, "viz": LOWER, "export": LOWER | {"viz"},
    "study": LOWER | {"driver", "api"}, "analyses": LOWER | {"api"},
})


def _imports() -> dict:
    """{package: the packages of mbsim it imports} (a module of mbsim/ directly is its own package)."""
    root = Path(mbsim.__file__).parent
    out: dict = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root.parent).with_suffix("").parts  # ("mbsim", "mechanics", "gather")
        pkg = rel[1]
        here = list(rel[:-1]) if rel[-1] != "__init__" else list(rel[:-1])
        found = out.setdefault(pkg, set())
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = (here[:len(here) - node.level + 1] if node.level else [])
                mod = base + (node.module.split(".") if node.module else [])
                targets = [mod + [a.name] for a in node.names] if not node.module or len(mod) < 2 else [mod]
            elif isinstance(node, ast.Import):
                targets = [a.name.split(".") for a in node.names]
            for t in targets:
                if len(t) > 1 and t[0] == "mbsim" and t[1] != pkg:
                    found.add(t[1])
    return out


def test_the_packages_import_each_other_one_way_only():
    imports = _imports()
    for pkg, allowed in ALLOWED.items():
        extra = imports.get(pkg, set()) - allowed
        assert not extra, f"mbsim.{pkg} imports {sorted(extra)} (docs/develop.md, the layers, allows {sorted(allowed)})"
    # and no package is missing from the table but the top ones (cli, the package's __init__)
    assert set(imports) - set(ALLOWED) <= {"cli", "__init__", "__main__"}, set(imports) - set(ALLOWED)


def test_the_frame_buffers_are_the_files_frame_datasets():
    """One frame layout: the compiled loop's buffers (mbsim.mechanics.frames) give exactly the per-frame
    datasets of OUTPUT.md the writer stores (mbsim.io.writer), with and without joints."""
    from mbsim.io.writer import SOLVER_KEYS, frame_datasets
    from mbsim.mechanics import frames
    for joints in (0, 2):
        got = set(frames.datasets(frames.buffers(3, 2, 1, joints), 1, [0.0]))
        assert got | set(SOLVER_KEYS) == set(frame_datasets(joints)), got ^ set(frame_datasets(joints))
