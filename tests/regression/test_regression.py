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
    for q, (_, floor) in TOLERANCE.items():
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


def _mutations():
    """(kind, mutation) for every registered element kind: its action's sign flipped, and for the kinds
    that act at points, the moment z × f of their forces about the body centres left out."""
    from mbsim.elements import ELEMENTS
    return [(k.type, how) for k in ELEMENTS for how in ("flipped sign", "arm moment left out")
            if how == "flipped sign" or k.arms is not None]


@pytest.mark.parametrize("kind,mutation", _mutations())
def test_the_suite_fails_on_a_wrong_model(kind, mutation, monkeypatch):
    """The same checks on the examples that use ``kind``, with that kind's law deliberately wrong,
    must fail for at least one of them.  The laws are compiled, so the mutation is made on their output as the Python step reads
    it (mbsim.elements.engine.evaluate_at), and the run is kept off the compiled step loop."""
    from mbsim.elements import FORCE, MOMENT, POWER, ElementEval
    from mbsim.elements import engine
    from mbsim.integrators import GeneralizedAlpha
    using = [(len(sc.bodies), p) for p in example_paths() if (REFERENCE_DIR / f"{p.stem}.h5").exists()
             for sc in [load_scenario(str(p))] if any(c.type == kind for c in sc.connectors)]
    assert using, f"no example with a reference uses the element kind {kind!r}"
    original = engine.evaluate_at

    def wrong(el, kin, tangent=None):
        ev = original(el, kin, tangent)
        k = [c.type for c in el.kinds].index(kind)
        lo, hi = el.start[k], el.start[k + 1]
        res, out = ev.residual.copy(), ev.out.copy()
        K = None if ev.tangent is None else ev.tangent.copy()
        if mutation == "flipped sign":
            res[lo:hi] *= -1
            out[lo:hi, FORCE:MOMENT + 3] *= -1
            out[lo:hi, POWER] *= -1
            if K is not None:
                K[lo:hi] *= -1
        else:
            f, m = out[lo:hi, FORCE:FORCE + 3], out[lo:hi, MOMENT:MOMENT + 3]
            res[lo:hi] = np.concatenate((f, m, -f, -m), axis=1)
        return ElementEval(residual=res, tangent=K, out=out, failed=ev.failed)

    monkeypatch.setattr(engine, "evaluate_at", wrong)
    monkeypatch.setattr(GeneralizedAlpha, "can_advance", property(lambda self: False))
    seen = {}
    for _, path in sorted(using):  # the smallest first (the runs stay off the compiled loop)
        try:
            errs = regression_errors(path)
        except AssertionError as exc:  # the wrong model does not even run to the end: caught as well
            assert "failed" in str(exc)
            return
        errs.pop("_scene")
        if any(e > tol for e, tol in errs.values()):
            return
        seen[path.stem] = errs
    pytest.fail(f"no example caught the mutation: {seen}")
