"""Statics, modes and linearization from Python and the command line (THEORY §12; OUTPUT.md "Statics
and modes files").

>>> import mbsim
>>> hanging = {"mbsim": 1, "name": "pendulum", "gravity": [0, 0, -9.81],
...            "bodies": [{"name": "bob", "mass": 1.0, "inertia": [0.01, 0.01, 0.01],
...                        "position": [0.0, 0.0, -1.0]}],
...            "joints": [{"type": "revolute", "bodies": ["world", "bob"], "point": [0, 0, 0],
...                        "axis": [0, 1, 0]}]}
>>> modes = mbsim.modes(hanging)
>>> len(modes), round(float(modes.frequency[0]), 6)     # √(m g d / I_pivot) / 2π
(1, 0.49602)
"""
from __future__ import annotations

import os
import time as _time
from typing import Optional, Sequence, Union

import numpy as np

from .analysis.modes import Modes
from .analysis.statics import NoEquilibrium, StaticsFailed
from .api import Result, _check_writable
from .scenario import Scenario, load_scenario, scenario_from_dict

ABOUT = ("equilibrium", "initial")


class AnalysisError(ValueError):
    """An analysis that cannot be asked of this scenario (no moving body, more modes than degrees of
    freedom, an unknown input): the message says what to do.  The command line exits with status 2."""


# ------------------------------------------------------------------------------------------------
def _scenario(scenario) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, dict):
        return scenario_from_dict(scenario, analysis=True)
    return load_scenario(scenario, analysis=True)


def _mechanism(sc: Scenario):
    from .mechanics import Mechanism
    from .model.model import Model
    if not any(not b.fixed for b in sc.bodies):
        raise AnalysisError(f"'{sc.name}' has no moving body: there is nothing to balance or to vibrate; "
                            f"give a body that is not fixed")
    return Mechanism(Model(sc))


def _frames(mech, s, iterations: int, residual: float) -> dict:
    fr = mech.frame(s)
    fr.pop("_finite", None)
    out = {k: np.asarray(v)[None] for k, v in fr.items()}
    out["solver/iterations"] = np.array([iterations], np.int32)
    out["solver/residual_norm"] = np.array([residual])
    out["solver/step"] = np.array([0.0])
    return out


def _attributes(sc: Scenario, analysis: str, **more) -> dict:
    """The root attributes of an analysis' file: those of a run's (OUTPUT.md: the integrator the scenario
    names, its time settings when it has them), then the analysis' own."""
    from .integrators import INTEGRATORS
    from .io.writer import run_attributes
    integrator = INTEGRATORS[sc.integrator.method]
    attrs = {k: v for k, v in run_attributes(sc if sc.time is not None else _timeless(sc), integrator.name,
                                             integrator.parameters(sc.integrator), "").items()
             if sc.time is not None or not k.startswith(("time_", "output_"))}
    attrs.pop("linear_solver", None)
    attrs.update({"analysis": analysis, "newton_rtol": sc.statics.rtol or sc.integrator.rtol,
             "newton_atol": sc.statics.atol or sc.integrator.atol, "statics_time": sc.statics.time,
             "steps": 0, "rejected_steps": 0})
    attrs.update({k: v for k, v in more.items() if v is not None})
    return attrs


def _timeless(sc: Scenario) -> Scenario:
    """``sc`` with a placeholder time section (its attributes are left out of the file)."""
    from dataclasses import replace
    from .scenario.spec import TimeSpec
    return replace(sc, time=TimeSpec(end=1.0, step=1.0, adaptive=False, min_step=1.0))


def _write(path: str, sc: Scenario, frames: dict, result: Result) -> None:
    """Write ``result`` (its one frame ``frames``, its /modes) to ``path`` whole: under a temporary name,
    then moved into place (nothing half-written)."""
    from .io.writer import write_modes, write_trajectory
    counters = ("steps", "newton_iterations", "rejected_steps", "wall_time_s")
    attrs = {k: v for k, v in result.attrs.items() if k not in ("format", "status", "message") + counters}
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    tmp = f"{path}.part{os.getpid()}"
    try:
        write_trajectory(tmp, sc, frames, attrs, result.status, result.message,
                         {k: result.attrs[k] for k in counters if k in result.attrs})
        if "modes/frequency" in result._data:
            write_modes(tmp, _modes_of(result._data))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _modes_of(data: dict) -> dict:
    return {k[len("modes/"):]: v for k, v in data.items() if k.startswith("modes/")}


def default_output(sc: Scenario, analysis: str) -> str:
    """``outputs/<name>.<analysis>.h5`` (or beside ``output.file``: ``<stem>.<analysis>.h5``)."""
    base = sc.output_file
    stem = base[:-3] if base.endswith(".h5") else base
    return f"{stem}.{analysis}.h5"


# ------------------------------------------------------------------------------------------------
def _equilibrium(sc, mech, notify=None):
    from .analysis.statics import find_equilibrium
    return find_equilibrium(mech, sc.statics, sc.integrator, notify)


def statics(scenario: Union[str, os.PathLike, dict, Scenario], *, output: Optional[str] = None,
            overwrite: bool = False, notify=None) -> Result:
    """The static equilibrium of a scenario under its gravity, loads and drive positions at
    ``statics.time`` (THEORY §12; ``mbsim statics``), as a one-frame :class:`~mbsim.api.Result`:
    positions, reactions in ``joint(...)``, connector forces, and the attributes ``analysis``
    (``statics``), ``stability`` (stable, unstable, neutral) and ``load_factor_steps``.

    A mechanism without equilibrium (a free motion along which a net load acts) or a search that gives up
    gives a result with ``status`` ``failed`` and ``message`` saying why (:meth:`Result.raise_for_status`),
    holding the configuration as given; ``output`` writes the file either way.

    Raises
    ------
    ScenarioError, AnalysisError
        The scenario is invalid, or has no moving body.
    OutputFileError
        ``output`` exists and ``overwrite`` is False.
    """
    sc = _scenario(scenario)
    if output is not None:
        _check_writable(os.fspath(output), overwrite)
    mech = _mechanism(sc)
    t0 = _time.monotonic()
    try:
        eq = _equilibrium(sc, mech, notify)
        s, status, st = eq.state, "completed", eq.stability
        message = (f"completed: {st} equilibrium at t = {sc.statics.time:g} s after {eq.load_steps} load "
                   f"step{'s' if eq.load_steps != 1 else ''} and {eq.iterations} Newton iterations")
        steps, its, res = eq.load_steps, eq.iterations, eq.residual
    except StaticsFailed as exc:
        s = mech.state(sc.statics.time)
        from dataclasses import replace
        s = replace(s, v=np.zeros_like(s.v), w=np.zeros_like(s.w))
        status, message, st, steps, its, res = "failed", str(exc), None, None, exc.iterations, float("nan")
    attrs = _attributes(sc, "statics", stability=st, load_factor_steps=steps, newton_iterations=its,
                        wall_time_s=_time.monotonic() - t0)
    out = None if output is None else os.fspath(output)
    frames = _frames(mech, s, its, res)
    result = Result._from_frames(sc, frames, status, message, attrs, path=out)
    if out is not None:
        _write(out, sc, frames, result)
    return result


def linearize(scenario: Union[str, os.PathLike, dict, Scenario], about: str = "equilibrium",
              inputs: Sequence[str] = (), notify=None):
    """The linearized equations of a scenario about its equilibrium (default, solved first) or its initial
    state as given (THEORY §12): a :class:`mbsim.analysis.Linearization` with the sparse M, C, K, G, the
    kinematic term S, :meth:`~mbsim.analysis.Linearization.null_space` (a basis N of the constraint null
    space) and :meth:`~mbsim.analysis.Linearization.state_space` (A, B in the independent coordinates
    x = [z; ż], δq = N z; B a column per load named in ``inputs``, the response to a unit scale factor of
    that load's vector).

    Raises
    ------
    AnalysisError
        ``about`` is not one of equilibrium, initial; an input is not a load's name; no moving body.
    StaticsFailed, NoEquilibrium
        About the equilibrium, when there is none.
    """
    lin, _, _ = _linearization(_scenario(scenario), about, inputs, notify)
    return lin


def _linearization(sc, about, inputs, notify=None):
    from .analysis.linear import linearize_state
    if about not in ABOUT:
        raise AnalysisError(f"about must be one of {', '.join(ABOUT)}, got {about!r}")
    names = [ld.name for ld in sc.loads]
    for name in inputs:
        if name not in names:
            raise AnalysisError(f"input {name!r} is not a load of '{sc.name}'; its loads: "
                                f"{', '.join(names) or 'none'} (a load's name: its 'name' key, default "
                                f"<type>-<index> such as force-0)")
    mech = _mechanism(sc)
    info = {}
    if about == "equilibrium":
        eq = _equilibrium(sc, mech, notify)
        s = eq.state
        acc = None
        info.update(iterations=eq.iterations, load_steps=eq.load_steps, residual=eq.residual, stability=eq.stability)
    else:
        s0 = mech.state(0.0)
        a, al, lam = mech.accelerations(s0)
        from dataclasses import replace
        s = replace(s0, lam=lam)
        acc = (a, al)
        nm = mech.model.n_moving
        worst = float(np.max(np.abs(np.concatenate((a[:nm], al[:nm]))))) if nm else 0.0
        info["unbalanced"] = worst
    return linearize_state(mech, s, acc, inputs, about), mech, info


def modes(scenario: Union[str, os.PathLike, dict, Scenario], *, count: Optional[int] = None,
          about: str = "equilibrium", output: Optional[str] = None, overwrite: bool = False,
          notify=None, dense: Optional[bool] = None, export: Optional[str] = None) -> Modes:
    """The lowest modes of a scenario linearized about its equilibrium (default, solved first) or its
    initial state (THEORY §12; ``mbsim modes``): natural frequencies, damping ratios, complex shapes per
    body, rigid-body modes once per free degree of freedom (:class:`Modes`).

    ``count`` modes (default: 10, or all when there are fewer degrees of freedom); ``output`` also writes
    the OUTPUT.md modes file; ``dense`` forces (True) or forbids (False) the dense null-space path (default:
    dense up to 200 moving bodies, sparse shift-invert beyond); ``export`` also writes the linear model
    (:func:`export_linear`: ``.mat`` or ``.npz``).

    About a state that is not an equilibrium (``about="initial"`` with bodies accelerating), ``notify`` is
    told so: the linearization then includes the unbalanced forces.

    Raises
    ------
    AnalysisError
        More modes asked than degrees of freedom, no moving body, a wrong ``about``.
    StaticsFailed, NoEquilibrium
        About the equilibrium, when there is none.
    """
    from .analysis.modes import compute_modes, degrees_of_freedom, stability
    sc = _scenario(scenario)
    if output is not None:
        _check_writable(os.fspath(output), overwrite)
    if export is not None and not os.fspath(export).endswith((".mat", ".npz")):
        raise AnalysisError(f"the linear model is written to .mat (MATLAB) or .npz (numpy) files, got {export!r}")
    t0 = _time.monotonic()
    lin, mech, info = _linearization(sc, about, (), notify)
    dof = degrees_of_freedom(lin)
    if count is not None and count > dof:
        raise AnalysisError(f"{count} modes asked, but '{sc.name}' has {dof} degree{'s' if dof != 1 else ''} of "
                            f"freedom (6 per moving body less the joints' independent equations); ask for at "
                            f"most {dof}")
    if count is not None and count < 1:
        raise AnalysisError(f"count must be at least 1, got {count}")
    if dof == 0:
        raise AnalysisError(f"'{sc.name}' has no degree of freedom: its joints hold every body; nothing can vibrate")
    k = 10 if count is None else count  # (about a motion there can be more modes than degrees of freedom)
    if info.get("unbalanced", 0.0) > 0 and notify is not None:
        notify(f"the initial state is not an equilibrium (accelerations up to {info['unbalanced']:.3g} m/s² or "
               f"rad/s²): the linearization about it includes the unbalanced forces; --about equilibrium "
               f"linearizes about the equilibrium instead")
    ms = compute_modes(lin, k, dense)
    if export is not None:
        export_linear(lin, os.fspath(export))
    st = info["stability"] if "stability" in info else stability(lin)[0]
    m = mech.model
    B = len(sc.bodies)
    shape = np.zeros((len(ms.eigenvalue), B, 6), complex)
    for j in range(B):
        i = int(m.order[j])
        if i < m.n_moving:
            shape[:, j, :] = ms.shape[:, 6 * i:6 * i + 6]
    extra = {"modes/eigenvalue": np.stack((ms.eigenvalue.real, ms.eigenvalue.imag), axis=1),
             "modes/frequency": ms.frequency, "modes/damping_ratio": ms.damping_ratio,
             "modes/shape": shape.real.copy(), "modes/shape_imag": shape.imag.copy(),
             "modes/rigid_body": ms.rigid_body}
    message = (f"completed: {len(ms.eigenvalue)} modes about the {about} state ({st}); {dof} degrees of freedom; "
               f"{ms.method}")
    attrs = _attributes(sc, "modes", stability=st, linearized_about=about, degrees_of_freedom=dof,
                        load_factor_steps=info.get("load_steps"), newton_iterations=info.get("iterations", 0),
                        modes_method=ms.method, wall_time_s=_time.monotonic() - t0)
    out = None if output is None else os.fspath(output)
    frames = _frames(mech, lin.state, info.get("iterations", 0), info.get("residual", 0.0))
    result = Result._from_frames(sc, frames, "completed", message, attrs, path=out, extra=extra)
    if out is not None:
        _write(out, sc, frames, result)
    return Modes._from_data(result._data, result.attrs, result)


def export_linear(lin, path: str) -> None:
    """Write the linearization ``lin`` to ``path``: ``.mat`` (MATLAB, scipy.io.savemat; M, C, K, G sparse)
    or ``.npz`` (numpy; every matrix dense): M, C, K, G, S, N, A, B, and the names of the coordinates."""
    import scipy.io
    A, Bm, N = lin.state_space()
    coords = np.array([f"{b}.{c}" for b in lin.bodies for c in ("x", "y", "z", "rx", "ry", "rz")], dtype=object)
    data = {"M": lin.M, "C": lin.C, "K": lin.K, "G": lin.G, "S": lin.S, "N": N, "A": A, "B": Bm,
            "coordinates": coords, "inputs": np.array(list(lin.inputs), dtype=object), "about": lin.about}
    if path.endswith(".mat"):
        scipy.io.savemat(path, data, do_compression=True)
    elif path.endswith(".npz"):
        dense = {k: (v.toarray() if hasattr(v, "toarray") else v) for k, v in data.items()}
        dense["coordinates"] = np.array(list(coords), dtype=str)
        dense["inputs"] = np.array(list(lin.inputs), dtype=str)
        np.savez_compressed(path, **dense)
    else:
        raise AnalysisError(f"--export writes .mat (MATLAB) or .npz (numpy) files, got {path!r}")


__all__ = ["statics", "modes", "linearize", "Modes", "AnalysisError", "StaticsFailed", "NoEquilibrium",
           "export_linear", "default_output"]
