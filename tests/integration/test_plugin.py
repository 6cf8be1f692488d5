"""A force element written outside mbsim, in the documented files only (docs/develop.md, "Adding an
element"): tests/plugin/hardening_spring.py, registered in a process of its own (tests/plugin/check.py in
the session's fresh process, tests/fresh.py: started as soon as this test is collected, it compiles the
engine afresh, with the kind in it, while the other tests run).

References: SciPy's solution of the Duffing oscillator's equation written in check.py (the kind's force,
independently), the reference solver (``mbsim verify``: second order), central differences of the forces
(the kind's stiffness through the mechanism at a state), the stored lengths (what animate draws).
"""
from __future__ import annotations


def test_a_force_element_written_outside_mbsim(fresh_folder):
    from tests import fresh
    got = fresh.result(fresh_folder, "plugin")
    assert "error" not in got, got.get("traceback")
    assert got["status"] == "completed"
    # registered after a scenario was read, in a process that had imported numba: it ran compiled
    assert got["compiled"] == {"law": True, "step loop": True}
    # the Duffing oscillator: second order to SciPy's solution
    e = got["duffing errors"]
    assert e[0] < 5e-3 and all(3.6 < a / b < 4.4 for a, b in zip(e, e[1:])), e
    # mbsim verify: the reference solver evaluates the kind, and the run is second order against it
    assert got["verify"]["passed"], got["verify"]
    assert all(1.9 < o < 2.1 for orders in got["verify"]["orders"].values() for o in orders), got["verify"]
    assert got["stiffness error"] < 1e-6
    anim = got["animate"]  # drawn by its trait (a line between its points), named in the key
    assert anim["lines"] == [0] and anim["springs"] == [1] and "hardening spring" in anim["key"]
    assert abs(anim["segment length"] - anim["stored length"]) <= 1e-9 * anim["stored length"]
    assert got["plot"] == ["duffing (hardening spring)", "hanger (spring)"]
    assert got["vtk exit"] == 0 and got["info"] == {"hardening_spring": 1, "spring": 1}
