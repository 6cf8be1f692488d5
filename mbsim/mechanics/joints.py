"""The joints at t = 0 (THEORY §11, initial conditions; SCENARIO.md, joints): redundant equations and
initial velocities, settled once when the model is built.

- **Redundancy.**  Only joints on a closed loop of the body graph (all fixed bodies and ``world``
  are one node; a joint that is a bridge of it cannot depend on the others) are tested: their rows
  of the constraint Jacobian G, each normalised, are taken in scenario order and a row that adds
  nothing to the span of those before it (Gram–Schmidt, twice, relative residual below
  :data:`RANK_TOL`) is dependent.  So the later joint of a loop gives up its equations, and the
  reactions are split the way the remaining equations determine them.
- **Velocities.**  ``G v = Ḟ(0)`` must hold; otherwise the velocities are replaced by the closest
  ones in the kinetic-energy norm that satisfy it, ``v = v₀ − M⁻¹Gᵀ(GM⁻¹Gᵀ)⁻¹(Gv₀ − Ḟ)``, solved as
  the saddle-point system ``[M Gᵀ; G 0] [v; μ] = [M v₀; Ḟ]`` (SciPy's sparse LU).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

RANK_TOL = 1e-9  # a normalised row whose part outside the span of the rows before it is below this is dependent
VELOCITY_TOL = 1e-10  # relative mismatch of G v = Ḟ below which the initial velocities are left alone


class JointError(ValueError):
    """The joints refuse the scenario (``integrator.joints``: ``redundant: refuse``, ``velocities: refuse``)."""


class SingularJoints(JointError):
    """The joints' equations are dependent at a state (:meth:`mbsim.mechanics.Mechanism.constrained`): a
    lock-up, or masses so far apart that the equations' pivots drown in round-off.  A run that meets it
    at t = 0 fails with ``failure = "singular"`` and says so in its file (:func:`mbsim.driver.run`)."""


def jacobian(model, r, q, v, w, t: float = 0.0):
    """The joints' Jacobian G (n_unknowns × 6·n_moving, CSR) at a state (:class:`mbsim.mechanics.Mechanism`)."""
    from .mechanism import Mechanism
    mech = Mechanism(model)
    return mech.jacobian(mech.state(t, r, q, v, w))[1]


def _summary(items) -> str:
    """``[(joint, type, equations), …]`` said once per kind of joint and equations: ``joint 'C' (revolute):
    …`` for one, ``revolute joints 'C1', 'C2', …, 'C40' (40): …`` for many (A02's 40 four-bars each give up
    the same three equations: said once, not forty times)."""
    groups: dict = {}
    for name, jtype, rows in items:
        groups.setdefault((jtype, rows), []).append(name)
    parts = []
    for (jtype, rows), names in groups.items():
        if len(names) == 1:
            parts.append(f"joint '{names[0]}' ({jtype}): {rows}")
            continue
        shown = [f"'{n}'" for n in names] if len(names) <= 6 else [f"'{n}'" for n in names[:3]] + ["…", f"'{names[-1]}'"]
        parts.append(f"{jtype} joints {', '.join(shown)} ({len(names)}): {rows}")
    return "; ".join(parts)


def bridges(n_nodes: int, edges) -> set:
    """The edges (indices into ``edges``, pairs of nodes) whose removal disconnects their graph."""
    adj = [[] for _ in range(n_nodes)]
    for k, (a, b) in enumerate(edges):
        adj[a].append((b, k))
        adj[b].append((a, k))
    low, seen, out, counter = [0] * n_nodes, [-1] * n_nodes, set(), 0
    for root in range(n_nodes):
        if seen[root] >= 0:
            continue
        seen[root] = low[root] = counter
        counter += 1
        stack = [(root, -1, iter(adj[root]))]
        while stack:
            node, via, it = stack[-1]
            for nxt, k in it:
                if k == via:
                    continue
                if seen[nxt] < 0:
                    seen[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append((nxt, k, iter(adj[nxt])))
                    break
                low[node] = min(low[node], seen[nxt])
            else:
                stack.pop()
                if stack:
                    parent = stack[-1][0]
                    low[parent] = min(low[parent], low[node])
                    if low[node] > seen[parent]:
                        out.add(via)
    return out


def dependent_rows(model, G) -> dict:
    """``{joint scenario index: positions of its dependent rows}`` (see the module docstring)."""
    el, nm = model.elements, model.n_moving
    joints = [int(e) for e in np.flatnonzero(el.joint)]
    node = lambda b: b if b < nm else nm  # noqa: E731 - every fixed body is the ground node
    edges = [(node(el.body[e, 0]), node(el.body[e, 1])) for e in joints]
    cut = bridges(nm + 1, edges)
    loop = sorted((int(el.index[e]), e) for k, e in enumerate(joints) if k not in cut)
    if not loop:
        return {}
    rows = [(idx, i, el.first[e] + i) for idx, e in loop for i in range(int(np.sum(el.unknown_element == e)))]
    A = G[[r for _, _, r in rows]].toarray()
    cols = np.flatnonzero(np.any(A != 0.0, axis=0))
    A = A[:, cols]
    basis = np.zeros((0, A.shape[1]))
    out: dict = {}
    for (idx, i, _), a in zip(rows, A):
        norm = np.linalg.norm(a)
        x = a / norm if norm > 0 else a
        for _ in range(2):
            x = x - basis.T @ (basis @ x)
        rest = np.linalg.norm(x)
        if rest <= RANK_TOL:
            out.setdefault(idx, []).append(i)
        else:
            basis = np.vstack((basis, x / rest))
    return out


def settle(model, scenario) -> None:
    """Redundant equations and initial velocities of ``model``'s joints (the module docstring): drops
    or refuses the redundant equations (rebuilding ``model.elements``), projects or refuses the
    velocities (``model.v0``, ``model.w0``), and fills ``model.joint_notes`` (what to tell the
    user) and ``model.velocity_projection`` ({body: (Δv, Δω)}).  Raises JointError."""
    from ..elements.joints import all_rows, describe_row
    model.joint_notes, model.velocity_projection = [], {}
    Fdot = model.targets([0.0])[0, 1]
    G = jacobian(model, model.r0, model.q0, model.v0, model.w0)
    dependent = dependent_rows(model, G)
    if dependent:
        joints = scenario.joints
        what = _summary([(joints[j].name, joints[j].type,
                          ", ".join(describe_row(joints[j], all_rows(joints[j])[i]) for i in rows))
                         for j, rows in sorted(dependent.items())])
        n = sum(len(r) for r in dependent.values())
        if scenario.integrator.redundant == "refuse":
            raise JointError(f"{n} joint equation{'s' if n > 1 else ''} depend on the others at t = 0 (redundant "
                             f"joints, integrator.joints.redundant: refuse): {what}")
        model.joint_notes.append(f"{n} redundant joint equation{'s' if n > 1 else ''} removed (their share of the "
                                 f"reactions is reported as zero): {what}")
        specs = tuple(replace(s, removed=tuple(dependent.get(k, ()))) for k, s in enumerate(joints))
        model.rebuild_elements(specs)
        Fdot = model.targets([0.0])[0, 1]
        G = jacobian(model, model.r0, model.q0, model.v0, model.w0)
    nm = model.n_moving
    u = np.concatenate((model.v0[:nm], model.w0[:nm]), axis=1).ravel()
    mismatch = G @ u - Fdot
    scale = max(1.0, float(np.abs(u).max(initial=0.0)))
    if not np.any(np.abs(mismatch) > VELOCITY_TOL * scale):
        return
    el = model.elements
    bad = sorted({int(el.unknown_element[j]) for j in np.flatnonzero(np.abs(mismatch) > VELOCITY_TOL * scale)})
    names = ", ".join(f"'{el.names[e]}' (|G v − Ḟ| = "
                      f"{np.linalg.norm(mismatch[el.unknown_element == e]):.3g})" for e in bad)
    if scenario.integrator.velocities == "refuse":
        raise JointError(f"the initial velocities violate joint{'s' if len(bad) > 1 else ''} {names} "
                         f"(integrator.joints.velocities: refuse)")
    # [M Gᵀ; G 0] [v; μ] = [M v₀; Ḟ]
    R = model.rotations0[:nm]
    J = R @ model.inertia[:nm] @ R.transpose(0, 2, 1)
    import scipy.sparse as sp  # (imported when needed: 0.1 s, which a run without inconsistent velocities saves)
    import scipy.sparse.linalg  # noqa: F401
    blocks = [sp.block_diag((model.mass[i] * np.eye(3), J[i])) for i in range(nm)]
    M = sp.block_diag(blocks, format="csr")
    K = sp.bmat([[M, G.T], [G, None]], format="csc")
    x = sp.linalg.spsolve(K, np.concatenate((M @ u, Fdot)))
    v = x[:6 * nm].reshape(nm, 6)
    changed = []
    for i in range(nm):
        dv, dw = v[i, :3] - model.v0[i], v[i, 3:] - model.w0[i]
        if np.linalg.norm(dv) > VELOCITY_TOL * scale or np.linalg.norm(dw) > VELOCITY_TOL * scale:
            model.velocity_projection[model.names[i]] = (dv, dw)
            changed.append(f"'{model.names[i]}' by |Δv| = {np.linalg.norm(dv):.3g} m/s, "
                           f"|Δω| = {np.linalg.norm(dw):.3g} rad/s")
    model.v0[:nm], model.w0[:nm] = v[:, :3], v[:, 3:]
    model.joint_notes.append(f"initial velocities made consistent with joint{'s' if len(bad) > 1 else ''} "
                             f"{', '.join(repr(el.names[e]) for e in bad)} (the smallest change in kinetic "
                             f"energy): {'; '.join(changed)}")


SINGULAR_DROP = 0.05  # how far the conditioning of the row-normalised G has fallen from t = 0's at a lock-up
SINGULAR_MAX_ROWS = 3000  # a dense SVD beyond this costs more than the diagnosis is worth


def _conditioning(model, r, q, v, w):
    """(smallest / largest singular value of the row-normalised G, per-row weight of the singular
    direction) at a state."""
    G = jacobian(model, r, q, v, w)
    A = G.toarray()
    norms = np.linalg.norm(A, axis=1)
    if np.any(norms == 0.0):  # an equation with no Jacobian at all
        return 0.0, (norms == 0.0).astype(float)
    U, sv, _ = np.linalg.svd(A / norms[:, None])  # full U: with more rows than columns, a null vector
    sv = np.concatenate((sv, np.zeros(A.shape[0] - sv.size)))
    return sv[-1] / sv[0], np.abs(U[:, -1])


def lock_up(model, r, q, v, w) -> str:
    """Which joints have (nearly) dependent equations at a state, for the message of a failed step: ''
    when the joints' Jacobian is about as well conditioned there as at t = 0 (or too large to decompose).

    The rows of G, each normalised, are decomposed (SVD); when the ratio of the smallest singular
    value to the largest has fallen below :data:`SINGULAR_DROP` times its value at t = 0, the joints
    whose rows carry the singular direction (the left singular vector's entries above a tenth of its
    largest) are named: a slider-crank pushed through its dead point, a four-bar at its toggle."""
    el = model.elements
    if not el.n_unknowns or el.n_unknowns > SINGULAR_MAX_ROWS:
        return ""
    if "_conditioning0" not in model.__dict__:
        model._conditioning0 = _conditioning(model, model.r0, model.q0, model.v0, model.w0)[0]
    ratio, weight = _conditioning(model, r, q, v, w)
    if ratio > SINGULAR_DROP * model._conditioning0:
        return ""
    involved = sorted({int(el.unknown_element[j]) for j in np.flatnonzero(weight > 0.1 * weight.max())},
                      key=lambda e: int(el.index[e]))
    names = ", ".join(repr(el.names[e]) for e in involved)
    return (f"the equations of joint{'s' if len(involved) > 1 else ''} {names} are nearly dependent (the "
            f"conditioning of their normalised Jacobian has fallen from {model._conditioning0:.1e} at t = 0 to "
            f"{ratio:.1e}): the mechanism is at a dead point or locked up")
