"""Run by tests/unit/test_own_unknowns.py in a process of its own (uncompiled, NUMBA_DISABLE_JIT=1):
registers the test element tests/rod.py and prints what the tests check, as JSON."""
import json
import sys
from dataclasses import replace

import numpy as np

import mbsim.elements as E
from tests.rod import Rod

E.register(Rod)

from scipy.integrate import solve_ivp  # noqa: E402

from mbsim import linalg  # noqa: E402
from mbsim.mechanics.assembly import unknown_blocks  # noqa: E402
from mbsim.integrators import GeneralizedAlpha  # noqa: E402
from mbsim.model.model import Model  # noqa: E402
from mbsim.scenario import scenario_from_dict  # noqa: E402

out = {}
G, L, TH0, M = 9.81, 1.0, 0.6, 2.0


def pendulum_dict(dt, end, rho=0.8, interval=None):
    p = [L * np.sin(TH0), 0, -L * np.cos(TH0)]
    d = {"mbsim": 1, "name": "rod", "gravity": [0, 0, -G], "time": {"end": end, "step": dt},
         "integrator": {"rho_inf": rho},
         "bodies": [{"name": "bob", "mass": M, "inertia": [0.1, 0.1, 0.1], "position": p}],
         "connectors": [{"name": "rod", "type": "rod", "bodies": ["world", "bob"], "points": [[0, 0, 0], p]}]}
    if interval:
        d["output"] = {"interval": interval}
    return d


def exact_start(s):
    """How far the initial acceleration (the constrained equations at t = 0, THEORY §11) is from the
    pendulum's true one, gravity plus the tension m g cos θ0 along the rod."""
    p = s.r[0]
    return float(np.abs(s.a[0] - (np.array([0, 0, -G]) - G * np.cos(TH0) * p / L)).max())


# 1. planar pendulum on a rod vs the pendulum equation (scipy), three step sizes
ref = solve_ivp(lambda t, y: [y[1], -G / L * np.sin(y[0])], (0, 0.5), [TH0, 0], rtol=1e-12, atol=1e-12,
                dense_output=True)
rows = []
for rho in (0.0, 0.8, 1.0):
    for dt in (0.02, 0.01, 0.005):
        sc = scenario_from_dict(pendulum_dict(dt, 0.5, rho))
        ga = GeneralizedAlpha(Model(sc), sc.integrator)
        s = ga.initial_state()
        start = exact_start(s)
        phi = 0.0
        for k in range(int(round(0.5 / dt))):
            res = ga.step(s, dt)
            assert res.ok, res.message
            s = res.state
            phi = max(phi, abs(np.linalg.norm(s.r[0]) - L))
        th, om = ref.sol(0.5)
        t_lam = 0.5 - (1 - ga.params.alpha_f) * dt  # the multiplier of the last step belongs to t_n + α_f Δt
        th_l, om_l = ref.sol(t_lam)
        rows.append({"rho": rho, "dt": dt, "x_error": abs(s.r[0, 0] - L * np.sin(th)), "phi": phi, "start": start,
                     "tension_error": abs(s.lam[0] - M * (G * np.cos(th_l) + L * om_l ** 2)),
                     "iterations": ga.n_iterations / ga.n_steps, "strategy": ga.solver.strategy})
out["pendulum"] = rows

# 2. the consistent tangent, rows and columns of the multiplier included, against central differences
rng = np.random.default_rng(7)
d = {"mbsim": 1, "name": "two", "gravity": [0, 0, -G], "time": {"end": 1, "step": 0.01},
     "bodies": [{"name": "a", "mass": 1.5, "inertia": [0.1, 0.2, 0.3], "position": [0.2, 0.1, -1.0],
                 "orientation": {"axis_angle": {"axis": [1, 2, 3], "angle": 0.7}}},
                {"name": "b", "mass": 0.7, "inertia": [0.05, 0.04, 0.03], "position": [0.9, -0.3, -1.5]}],
     "connectors": [{"type": "rod", "bodies": ["world", "a"], "points": [[0, 0, 0.1], [0.25, 0.05, -0.9]]},
                    {"type": "rod", "bodies": ["a", "b"], "points": [[0.3, 0.0, -1.1], [0.8, -0.2, -1.4]]},
                    {"type": "spring", "bodies": ["a", "b"], "points": [[0.2, 0.1, -1.0], [0.9, -0.3, -1.5]],
                     "stiffness": 50.0, "rest_length": 0.5}]}
sc = scenario_from_dict(d)
model = Model(sc)
ga = GeneralizedAlpha(model, sc.integrator)
s0 = ga.initial_state()
nm, n = model.n_moving, model.n_all
v, a, w, al = (np.zeros((n, 3)) for _ in range(4))
v[:nm], a[:nm], w[:nm], al[:nm] = (rng.normal(size=(nm, 3)) * f for f in (1.0, 3.0, 3.0, 10.0))
s = replace(s0, v=v, a=a, w=w, al=al)
dt = 0.01
dd, th = np.zeros((n, 3)), np.zeros((n, 3))
dd[:nm], th[:nm] = rng.normal(size=(nm, 3)) * 0.05, rng.normal(size=(nm, 3)) * 0.4
lam = np.array([17.0, -4.0])
scale = model.unknown_reference / (ga.params.beta * dt * dt)
nd = model.ndof
K = ga.iterate(s, dt, dd, th, lam, "consistent").K.toarray()
Kfd = np.empty((nd, nd))
eps = 1e-6
for j in range(nd):
    du = np.zeros(nd)
    du[j] = eps
    Rp = ga.iterate(s, dt, *ga.update(dd, th, du[:6 * nm]), lam + scale * du[6 * nm:]).R
    Rm = ga.iterate(s, dt, *ga.update(dd, th, -du[:6 * nm]), lam - scale * du[6 * nm:]).R
    Kfd[:, j] = -(Rp - Rm) / (2 * eps)
out["tangent"] = {"ndof": nd, "error": float(np.abs(K - Kfd).max() / np.abs(Kfd).max()),
                  "own_rows": float(np.abs(Kfd[6 * nm:]).max()), "own_cols": float(np.abs(Kfd[:, 6 * nm:]).max())}

# 3. a hanging chain of 21 bodies on rods: the block LU (each body with its parent rod's multiplier as
#    one pivoted 7×7 block, no fill) against the dense LU
N = 21
chain = {"mbsim": 1, "name": "chain", "gravity": [0, 0, -G], "time": {"end": 1, "step": 0.005},
         "bodies": [{"name": f"b{i}", "mass": 1.0, "inertia": [0.01, 0.01, 0.01], "position": [0.1 * (i + 1), 0, 0],
                     "velocity": [0, 0.1 * i, 0]} for i in range(N)],
         "connectors": [{"type": "rod", "bodies": ["world" if i == 0 else f"b{i - 1}", f"b{i}"],
                         "points": [[0.1 * i, 0, 0], [0.1 * (i + 1), 0, 0]]} for i in range(N)][::-1]}


def block_and_dense(d, steps=30):
    """30 steps of ``d`` with the block LU (its size is above DENSE_MAX_DOFS) and with the dense LU:
    {strategy: (positions, multipliers, storage)}, and the model."""
    finals, limit = {}, linalg.DENSE_MAX_DOFS
    for dense_max in (limit, 10 ** 6):
        linalg.DENSE_MAX_DOFS = dense_max
        sc = scenario_from_dict(d)
        model = Model(sc)
        ga = GeneralizedAlpha(model, sc.integrator)
        s = ga.initial_state()
        for k in range(steps):
            res = ga.step(s, sc.time.step)
            assert res.ok, res.message
            s = res.state
        finals[ga.solver.strategy] = (s.r[:model.n_moving].copy(), s.lam.copy(), ga.solver.storage_size)
    linalg.DENSE_MAX_DOFS = limit
    return finals, model


finals, model = block_and_dense(chain)
blocks, last = unknown_blocks(model)
rb, lb, size = finals["block"]
rd, ld, _ = finals["dense"]
own = blocks[6 * N:]
bodies = [model.elements.body[model.elements.unknown_element[u], 1] for u in range(N)]
out["chain"] = {"position_difference": float(np.abs(rb - rd).max()),
                "multiplier_difference": float(np.abs(lb - ld).max() / np.abs(ld).max()),
                "storage": int(size), "fill_free_storage": 49 * N + 2 * 42 * (N - 1),  # 7×7 pivots, couplings 7×6 and 6×7: the parent's body
                "grouped_with_child": bool(np.array_equal(own, bodies)), "last": list(last)}

# 3b. the same chain held at both ends (a loop through world): one rod closes the loop, its multiplier
#     is a block of its own, eliminated last
R0 = 1.0
phi = np.pi * np.arange(1, N + 1) / (N + 1)
pts = np.stack((-R0 * np.cos(phi), np.zeros(N), -R0 * np.sin(phi)), axis=1)
ends = [[-R0, 0, 0]] + pts.tolist() + [[R0, 0, 0]]
names = ["world"] + [f"b{i}" for i in range(N)] + ["world"]
ring = {"mbsim": 1, "name": "ring", "gravity": [0, 0, -G], "time": {"end": 1, "step": 0.005},
        "bodies": [{"name": f"b{i}", "mass": 1.0, "inertia": [0.01, 0.01, 0.01], "position": pts[i].tolist(),
                    "velocity": [0, 0.2 * np.sin(3 * phi[i]), 0]} for i in range(N)],
        "connectors": [{"type": "rod", "bodies": [names[i], names[i + 1]], "points": [ends[i], ends[i + 1]]}
                       for i in range(N + 1)]}
finals, model = block_and_dense(ring)
blocks, last = unknown_blocks(model)
lengths = np.linalg.norm(np.diff(np.concatenate(([ends[0]], finals["block"][0], [ends[-1]])), axis=0), axis=1)
out["ring"] = {"position_difference": float(np.abs(finals["block"][0] - finals["dense"][0]).max()),
               "multiplier_difference": float(np.abs(finals["block"][1] - finals["dense"][1]).max()
                                              / np.abs(finals["dense"][1]).max()),
               "last": [int(x) for x in last], "own_blocks": int(len(set(blocks[6 * N:]))),
               "length_error": float(np.abs(lengths - np.linalg.norm(np.diff(ends, axis=0), axis=1)).max())}

# 4. frames, the result file and resume: element-owned unknowns restart at every frame, so a
#    resumed run repeats the uninterrupted one to the last bit
import h5py  # noqa: E402

import mbsim.driver  # noqa: E402
from mbsim.driver import run  # noqa: E402

tmp = sys.argv[1]
sc = scenario_from_dict(pendulum_dict(0.01, 0.4, 0.8, interval=0.05))
whole = run(sc, f"{tmp}/whole.h5")
mbsim.driver.CALL_SECONDS = 0.0
calls = []
originals = {name: getattr(GeneralizedAlpha, name) for name in ("advance_frames", "advance", "step")}
for name, real in originals.items():

    def interrupting(self, *args, _real=real, **kw):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return _real(self, *args, **kw)
    setattr(GeneralizedAlpha, name, interrupting)
first = run(sc, f"{tmp}/part.h5")
for name, real in originals.items():
    setattr(GeneralizedAlpha, name, real)
second = run(sc, f"{tmp}/part.h5", resume=True)
with h5py.File(f"{tmp}/whole.h5") as fa, h5py.File(f"{tmp}/part.h5") as fb:
    same = all(np.array_equal(fa[k][:], fb[k][:]) for k in ("bodies/position", "bodies/velocity",
                                                             "connectors/force", "connectors/length"))
    length = fa["connectors/length"][:, 0]
    force, pos = fa["connectors/force"][:, 0], fa["bodies/position"][:, 0]
out["run"] = {"whole": whole.status, "first": first.status, "second": second.status, "identical": bool(same),
              "frames": int(len(length)), "length_error": float(np.abs(length - L).max()),
              # the rod pulls the bob towards the pivot: the force on A (world) points at the bob
              "force_direction": float(np.abs(np.cross(force, pos)).max() / np.abs(force).max()),
              "tension_positive": bool(np.all(np.einsum("ij,ij->i", force[1:], pos[1:]) > 0)),
              "frame0_force": float(np.abs(force[0]).max())}
# 5. a model without instances of a kind with own unknowns keeps 12-wide blocks (the fast paths)
plain = dict(pendulum_dict(0.01, 0.1), connectors=[{"type": "spring", "bodies": ["world", "bob"],
                                                     "points": [[0, 0, 0], [0.3, 0, -0.8]], "stiffness": 10.0}])
out["widths"] = [Model(scenario_from_dict(plain)).elements.width, Model(scenario_from_dict(pendulum_dict(0.01, 0.1)))
                 .elements.width]
print(json.dumps(out))
