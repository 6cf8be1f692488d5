"""The element engine: the registry, the packed description, and the same source uncompiled.

The laws exist once, as compiled code; what keeps them honest are the
finite-difference and §8 tests of test_tangents.py (which iterate over the
registry), the reference solver (test_model.py, tests/verification) and this
file's check that the source runs, unchanged, as plain Python
(``NUMBA_DISABLE_JIT=1``, the way to debug a law) with the results the
compiled code gives.
"""
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from mbsim.elements import ELEMENTS
from mbsim.elements.engine import LAW_ARGUMENTS, evaluate_at
from mbsim.integrators import GeneralizedAlpha
from mbsim.model.model import Model
from tests.builders import scenario
from tests.unit.test_tangents import CASES, EXAMPLES, _kin, random_iterate, random_state, two_bodies

ROOT = Path(__file__).resolve().parents[2]


def every_kind_scenario():
    """Two moving bodies joined by one instance of every example variant of every registered kind,
    and each kind once more to world."""
    bodies, (A, B) = two_bodies("moving")
    conns = [replace(EXAMPLES[kind][variant](A, B), name=f"e{i}") for i, (kind, variant) in enumerate(CASES)]
    conns += [replace(next(iter(EXAMPLES[kind].values()))("world", A), name=f"w{i}")
              for i, kind in enumerate(EXAMPLES)]
    return scenario(bodies, conns, gravity=(0, 0, -9.81), rho_inf=0.7)


def snapshot(path=None):
    """Element outputs at a random iterate (no tangent, consistent, seed) and three compiled-loop steps."""
    sc = every_kind_scenario()
    ga = GeneralizedAlpha(Model(sc), sc.integrator)
    rng = np.random.default_rng(8)
    s = random_state(ga.model, rng)
    d, th = random_iterate(ga.model, s, rng)
    ctx = ga.prepare(s, 0.01)
    out = {}
    for mode in (None, "consistent", "seed"):
        ev = evaluate_at(ga.model.elements, _kin(ga, ctx, d, th), mode)
        out[f"{mode}/residual"], out[f"{mode}/out"] = ev.residual, ev.out
        if mode is not None:
            out[f"{mode}/tangent"] = ev.tangent
            out[f"{mode}/R"] = ga.evaluate(ctx, d, th, mode).R
    s0 = ga.initial_state()
    new, taken, iterations, _ = ga.advance(s0, 1e-3, 3)
    out["taken"], out["r"], out["q"], out["w"] = np.array(taken), new.r, new.q, new.w
    if path is not None:
        np.savez(path, **out)
    return out


def test_every_kind_in_the_packed_description():
    """Kinds sorted into contiguous ranges, scenario positions kept, parameters where the kind put them."""
    sc = every_kind_scenario()
    el = Model(sc).elements
    assert el.n == len(sc.connectors)
    assert sorted(el.index) == list(range(el.n))
    for k, cls in enumerate(ELEMENTS):
        lo, hi = el.start[k], el.start[k + 1]
        assert (el.kind[lo:hi] == k).all() and hi > lo
        for e in range(lo, hi):
            assert sc.connectors[el.index[e]].type == cls.type
    assert list(el.start) == sorted(el.start)


def test_every_law_takes_the_contract_arguments():
    import inspect
    for cls in ELEMENTS:
        assert tuple(inspect.signature(cls.law.py_func).parameters) == LAW_ARGUMENTS, cls.type


def test_the_same_source_runs_uncompiled(tmp_path):
    """NUMBA_DISABLE_JIT=1 runs every law, the switch and the compiled step loop as plain Python,
    with the compiled results (to 1e-12: the same arithmetic in the same order)."""
    path = tmp_path / "uncompiled.npz"
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(ROOT)}
    code = f"from tests.unit.test_elements import snapshot; snapshot({str(path)!r})"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plain = dict(np.load(path))
    compiled = snapshot()
    assert set(plain) == set(compiled)
    for key, value in compiled.items():
        scale = np.abs(np.nan_to_num(value, nan=0.0)).max(initial=1.0)
        assert np.allclose(plain[key], value, rtol=1e-12, atol=1e-12 * scale, equal_nan=True), key
