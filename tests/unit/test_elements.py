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
from mbsim.integrators import GeneralizedAlpha
from mbsim.mechanics import Mechanism
from mbsim.mechanics.laws import LAW_ARGUMENTS
from mbsim.model.model import Model
from tests.builders import scenario
from tests.unit.test_joints import CASES as JOINT_CASES, _scenario as _joint_scenario
from tests.unit.test_tangents import CASES, EXAMPLES, random_iterate, random_state, two_bodies

ROOT = Path(__file__).resolve().parents[2]


def every_kind_scenario():
    """Two moving bodies joined by one instance of every example variant of every registered kind,
    and each kind once more to world."""
    bodies, (A, B) = two_bodies("moving")
    conns = [replace(EXAMPLES[kind][variant](A, B), name=f"e{i}") for i, (kind, variant) in enumerate(CASES)]
    conns += [replace(next(iter(EXAMPLES[kind].values()))("world", A), name=f"w{i}")
              for i, kind in enumerate(EXAMPLES)]
    # and one joint of every type and drive between A and B (their rows need not hold here)
    joints = [replace(_joint_scenario(case, False).joints[0], name=f"j{i}", body_a=A, body_b=B)
              for i, case in enumerate(JOINT_CASES)]
    return scenario(bodies, conns, gravity=(0, 0, -9.81), rho_inf=0.7, joints=joints)


def snapshot(path=None):
    """Every element at a state (forces and their derivatives, through the mechanism at a state), the
    step's residual and tangent at a random iterate (no tangent, consistent, seed; the blocks of every
    instance too) and three compiled-loop steps."""
    sc = every_kind_scenario()
    ga = GeneralizedAlpha(Model(sc), sc.integrator)
    rng = np.random.default_rng(8)
    s = random_state(ga.model, rng)
    d, th = random_iterate(ga.model, s, rng)
    out = {}
    ev = Mechanism(ga.model).evaluate(s, derivatives=True)
    for k in ("f", "phi", "force", "moment", "length", "potential", "power"):
        out[f"state/{k}"] = getattr(ev, k)
    for k in ("K", "C", "G"):
        out[f"state/{k}"] = getattr(ev, k).toarray()
    for mode in (None, "consistent", "seed"):
        it = ga.iterate(s, 0.01, d, th, tangent=mode, blocks=mode is not None)
        out[f"{mode}/R"] = it.R
        if mode is not None:
            out[f"{mode}/K"] = it.K.toarray()
            out[f"{mode}/blocks"] = it.blocks
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
    assert el.n == len(sc.connectors) + len(sc.joints)
    assert sorted(el.index[~el.joint]) == list(range(len(sc.connectors)))
    assert sorted(el.index[el.joint]) == list(range(len(sc.joints)))
    for k, cls in enumerate(ELEMENTS):
        lo, hi = el.start[k], el.start[k + 1]
        assert (el.kind[lo:hi] == k).all() and hi > lo
        for e in range(lo, hi):
            assert cls.owns(getattr(sc, cls.section)[el.index[e]])  # (its type; a variant: its keys too)
            assert el.joint[e] == (cls.section == "joints")
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


PROBE = r"""
import numpy as np
from mbsim.elements import base
from mbsim.elements.spring import Spring
p = np.zeros((1, 8)); p[0, 6] = 5.0  # k = 5, L0 = 0: f = k d on A, p_d = -f
x, y, dy = np.zeros((1, base.N_X)), np.zeros((1, base.N_Y)), np.zeros((1, base.N_DY))
x[0, base.X_D] = 1.0  # d = (1, 0, 0): p_d = (-5, 0, 0)
Spring.law(0, 1, p, x, 0.0, base.VALUES, y, dy)
print(y[0, base.Y_P], sum(Spring.law.dispatcher.stats.cache_hits.values()))
"""


def test_an_edit_of_a_shared_helper_recompiles_the_laws_that_call_it(tmp_path):
    """numba checks only each function's own file; mbsim stamps every cache entry with a digest of all
    its compiled sources, so an edit of kernels/vec.py (not of spring.py) must reach the cached spring law
    -- also with NUMBA_CACHE_DIR, where numba keeps the cache away from the sources."""
    import shutil
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "mbsim", copy / "mbsim", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(copy), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def probe():
        done = subprocess.run([sys.executable, "-c", PROBE], cwd=copy, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        value, hits = done.stdout.split()
        return float(value), int(hits)

    assert probe() == (-5.0, 0)
    assert probe() == (-5.0, 1)  # from the cache
    helpers = copy / "mbsim" / "kernels" / "vec.py"
    text = helpers.read_text()
    assert text.count("    x[ui, _u(c)] = a[0]\n") == 1
    helpers.write_text(text.replace("    x[ui, _u(c)] = a[0]\n", "    x[ui, _u(c)] = 2.0 * a[0]\n"))
    assert probe() == (-10.0, 0)  # recompiled with the edited helper


def test_the_stamped_cache_locator_is_numbas_own_with_the_sources_digest():
    """The locator mbsim puts first in numba's list answers for mbsim's compiled sources only, and
    behaves as the locator numba would have chosen (numba reads private attributes such as
    ``_py_file`` when it declines to cache a function), with the digest added to the stamp."""
    import inspect

    import mbsim.kernels as mk
    from mbsim.elements import spring
    spring.law.dispatcher  # numba imported, the locator installed
    py_func = spring.law.py_func
    loc = mk._StampedLocator.from_function(py_func, inspect.getfile(py_func))
    assert loc is not None and loc._py_file == inspect.getfile(py_func)
    assert loc.get_source_stamp()[1] == mk._SOURCES
    assert mk._StampedLocator.from_function(_outside, __file__) is None


def _outside():
    """Not in mbsim's compiled sources: the stamped locator leaves it to numba."""
