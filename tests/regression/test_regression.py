"""Regression suite: every example against its stored reference trajectory.

``tests/reference/<example>.h5`` was produced by mbsim's independent
reference solver (DOP853 at rtol 1e-11 on the continuous equations of motion,
no code shared with the generalized-α path; ``make_references.py`` says how
and regenerates them).  Each example is run by mbsim over the reference's
span on the reference's frame grid, at its own Δt and at 2Δt.

Tolerances (the one table, TOLERANCE below).  Generalized-α is second order
(THEORY §2; the verification tests measure 2.00 ± 0.05), so its global error
is e(Δt) = C Δt² + O(Δt³) with an error constant C that depends on the
example.  The two runs measure C: y(2Δt) − y(Δt) = 3 C Δt², hence
e(Δt) ≈ |y(2Δt) − y(Δt)| / 3.  A quantity passes when

    max |y(Δt) − y_ref|  ≤  FACTOR · max |y(2Δt) − y(Δt)| / 3  +  floor

with FACTOR = 2 (room for the O(Δt³) term and for maxima taken at different
frames) and a floor far below any discretization error (the reference's own
accuracy and round-off).  A wrong model fails this however small its error
constant is, because both mbsim runs agree with each other and not with
the reference; an integrator that lost its second order fails it too
(a first-order error is |y(2Δt) − y(Δt)|, three times the estimate).
Besides, every example must meet the absolute accuracy the README claims:
positions within 1e-4 × the scene size, orientations within 1e-4 rad.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from mbsim.driver import run
from mbsim.io.reader import read_trajectory
from mbsim.model.model import Model
from mbsim.scenario import load_scenario
from tests.integration._examples_util import ANGLE_TOL, POSITION_TOL, example_paths, rotation_angle, scene_size

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "reference"
FACTOR = 2.0

# quantity -> (how to measure it from a frames dict, absolute floor)
TOLERANCE = {
    "position [m]": ("bodies/position", 1e-9),
    "rotation angle [rad]": ("bodies/orientation", 1e-9),
    "velocity [m/s]": ("bodies/velocity", 1e-8),
    "angular velocity [rad/s]": ("bodies/angular_velocity", 1e-8),
    "energy [J]": ("energy", 1e-8),
    "joint reaction force [N]": ("joints/force", 1e-7),  # only in files of models with joints
    "joint reaction moment [N m]": ("joints/moment", 1e-7),
}


def difference(quantity: str, a: dict, b: dict) -> float:
    """Largest difference of one quantity between two frame dicts on the same grid."""
    key = TOLERANCE[quantity][0]
    if key == "bodies/orientation":
        return float(rotation_angle(a[key], b[key]).max())
    if key == "energy":
        return max(float(np.abs(a[f"energy/{k}"] - b[f"energy/{k}"]).max())
                   for k in ("kinetic", "potential", "dissipated", "external_work"))
    return float(np.abs(a[key] - b[key]).max())


def simulate(sc, ref, step):
    """mbsim over the reference's span on its frame grid, with time step ``step``."""
    t = ref["time"]
    interval = t[1] - t[0]
    sc = dataclasses.replace(sc, time=dataclasses.replace(sc.time, step=step),
                             output=dataclasses.replace(sc.output, interval=interval))
    res = run(sc, write=False, keep_frames=True, end=float(t[-1]))
    assert res.status == "completed", res.message
    f = res.frames_data
    assert np.allclose(f["time"], t, rtol=0, atol=1e-9 * t[-1])
    return f


def regression_errors(path: Path) -> dict:
    """Per quantity: (error against the reference at Δt, allowed error)."""
    sc = load_scenario(str(path))
    ref_file = REFERENCE_DIR / f"{path.stem}.h5"
    if not ref_file.exists():
        pytest.fail(f"no reference for {path.name}: run python tests/reference/make_references.py {path.stem}")
    ref = read_trajectory(ref_file)
    assert ref["scenario"] == sc.text, (
        f"{path.name} changed since its reference was made: run "
        f"python tests/reference/make_references.py {path.stem}")
    fine = simulate(sc, ref, sc.time.step)
    coarse = simulate(sc, ref, 2 * sc.time.step)
    out = {}
    # How a reaction splits among redundant joints is not determined by rigid-body mechanics: mbsim gives
    # the removed equations none of it, the reference solver the minimum-norm split (mbsim.verify skips
    # them alike); the motion is compared all the same.
    split = bool(sc.joints) and any(j.removed for j in Model(sc).joints)
    for q, (key, floor) in TOLERANCE.items():
        if key.startswith("joints/") and (not sc.joints or split):
            continue
        out[q] = (difference(q, fine, ref), FACTOR * difference(q, coarse, fine) / 3 + floor)
    out["_scene"] = scene_size(sc)
    return out


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.stem)
def test_example_matches_its_reference(path):
    errs = regression_errors(path)
    scene = errs.pop("_scene")
    failures = {q: e for q, e in errs.items() if not e[0] <= e[1]}
    assert not failures, "\n".join(f"{q}: error {e:.3e} > allowed {tol:.3e}" for q, (e, tol) in failures.items())
    assert errs["position [m]"][0] <= POSITION_TOL * scene
    assert errs["rotation angle [rad]"][0] <= ANGLE_TOL


def prepare_mutants(kinds) -> dict:
    """In a fresh process, before anything is compiled: wrap the compiled law of every kind in ``kinds``
    (type names) in a mutant, and give the packed parameter rows a last column that says, instance by
    instance, which mutation to apply (0: none) -- one compilation serves all cases.  Returns the switch
    ``{"kind": type, "how": code}`` :func:`run_mutants` sets case by case (no mutation until then)."""
    import numpy as np
    from mbsim.elements import ELEMENTS, base
    from mbsim.kernels import njit
    current = {"kind": None, "how": 0.0}

    def mutant(law):
        @njit(cache=False)
        def wrong(lo, hi, p, x, t, want, y, dy):
            failed = law(lo, hi, p, x, t, want, y, dy)
            last = p.shape[1] - 1
            for e in range(lo, hi):
                if p[e, last] == 1.0:  # the action's sign flipped (its derivatives as well)
                    for j in range(9):
                        y[e, base.Y_P + j] = -y[e, base.Y_P + j]
                    y[e, base.Y_POWER] = -y[e, base.Y_POWER]
                    if want & base.DERIVATIVES:
                        for j in range(base.DG):
                            dy[e, j] = -dy[e, j]
            return failed
        return wrong

    for cls in ELEMENTS:
        if cls.type in kinds:
            cls.law = mutant(cls.law)
    init = base.Elements.__init__

    def with_mutation_column(self, kinds_, connectors, *args):
        init(self, kinds_, connectors, *args)
        mine = np.array([self.kinds[k].type == current["kind"] for k in self.kind], dtype=bool)
        code = np.where(mine, current["how"], 0.0)
        self.data = np.ascontiguousarray(np.concatenate((self.data, code.reshape(-1, 1)), axis=1))
        if current["how"] == 2.0:  # its points moved to the bodies' centres: no moments z × f about them
            self.arms[mine] = 0.0

    base.Elements.__init__ = with_mutation_column
    return current


def run_mutants(cases, current) -> dict:
    """Each case (kind, mutation, example paths) against the examples' references: its verdict."""
    caught = {}
    for kind, how, paths in cases:
        current.update(kind=kind, how=float(how))
        verdict = "not caught"
        for path in paths:
            try:
                errs = regression_errors(Path(path))
            except AssertionError as exc:  # the wrong model does not even run to the end: caught as well
                verdict = f"caught: the run failed ({str(exc).splitlines()[0][:80]})"
                break
            errs.pop("_scene")
            bad = [q for q, (e, tol) in errs.items() if e > tol]
            if bad:
                verdict = f"caught by {Path(path).stem}: {', '.join(bad)}"
                break
        caught[f"{kind}: {['', 'flipped sign', 'points at the centres'][how]}"] = verdict
    current.update(kind=None, how=0.0)
    return caught


def _mutations():
    """(kind, mutation code, example paths) for every registered element kind: its action's sign
    flipped (1), and for the kinds that act at points, its points moved to the bodies' centres (2: the
    moments z × f of its forces about them gone); the examples with a reference that use the kind, the
    cheapest first (bodies × steps: a mutant that is not caught runs the whole example)."""
    from mbsim.elements import ELEMENTS
    out = []
    for k in ELEMENTS:
        using = sorted((len(sc.bodies) * sc.time.end / sc.time.step, str(p)) for p in example_paths()
                       if (REFERENCE_DIR / f"{p.stem}.h5").exists()
                       for sc in [load_scenario(str(p))]
                       if any(k.owns(c) for c in (*sc.connectors, *sc.joints)))
        for how in (1, 2) if k.points is not None else (1,):
            out.append((k.type, how, [p for _, p in using]))
    return out


def test_the_suite_fails_on_a_wrong_model(fresh_folder):
    """The checks above, on the examples that use each registered element kind, with that kind's
    compiled law deliberately wrong (its action's sign flipped; its points at the centres), must fail
    for at least one example each.  In a fresh process whose numba cache is its own, so that the
    mutants never reach the real cache (tests/fresh.py: started early, and the kind written outside
    mbsim is checked in the same process)."""
    from tests import fresh
    cases = _mutations()
    assert all(paths for _, _, paths in cases), [k for k, _, paths in cases if not paths]
    verdicts = fresh.result(fresh_folder, "mutants")
    assert len(verdicts) == len(cases)
    assert all(v.startswith("caught") for v in verdicts.values()), verdicts
