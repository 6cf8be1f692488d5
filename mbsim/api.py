"""The Python API: run a scenario or open a result file, and read it by name.

From a scenario to named arrays in two lines::

    res = mbsim.simulate("scenarios/pendulum.yaml", end=0.1)
    res.body("bob").position                  # (T, 3) m

:func:`simulate` runs in memory (``output=`` writes the file as well),
:func:`load` opens a file written by ``mbsim run``; both return a
:class:`Result`, which names what OUTPUT.md stores: ``res.time``,
``res.body(name).position / .orientation / .velocity / ...``,
``res.connector(name).force / .moment / .length``,
``res.joint(name).force / .moment / .position_error / .angle_error``, ``res.energy.kinetic``,
``res.momentum.linear``, ``res.solver.iterations``, and every dataset by
its path (``res["bodies/position"]``).  ``res.to_xarray()`` labels the
same arrays with dimensions and units, ``res.save(path)`` writes a result
kept in memory to an OUTPUT.md file.

Errors follow the command line's exit codes: a scenario (or an override)
that breaks SCENARIO.md raises :class:`~mbsim.scenario.ScenarioError`
before anything runs, an output path that cannot be written raises
:class:`~mbsim.driver.OutputFileError`, but a run the solver gives up on
does *not* raise: its Result has ``status == "failed"``, a ``message``
saying where and why, and every frame computed before the failing step
(as the file would).  Call :meth:`Result.raise_for_status` to turn that
into a :class:`SimulationError`.

Examples
--------
A ball falling for 0.1 s, kept in memory:

>>> import mbsim
>>> ball = {"mbsim": 1, "name": "drop", "gravity": [0, 0, -9.81],
...         "time": {"end": 0.1, "step": 0.01},
...         "bodies": [{"name": "ball", "mass": 1.0, "inertia": [0.1, 0.1, 0.1]}]}
>>> res = mbsim.simulate(ball)
>>> res
<Result 'drop' completed: 11 frames, t = 0 … 0.1 s, 1 body, 0 connectors>
>>> z = res.body("ball").position[:, 2]
>>> round(float(z[-1]), 9)                # z = -g t^2 / 2: constant accelerations are exact
-0.04905
"""
from __future__ import annotations

import dataclasses
import math
import os
from types import MappingProxyType, SimpleNamespace
from typing import Mapping, Optional, Union

import numpy as np

from . import __version__
from .energy import energy_balance, energy_drift
from .io.reader import ResultFileError, read_modes, read_trajectory  # noqa: F401  (ResultFileError: load's documented error)
from .io.writer import (COUNTERS, FORMAT, FORMAT_VERSION, FRAME_DATASETS, ROOT_ATTRIBUTES, frame_datasets,
                        run_attributes, utc_now)
from .kernels.rotations import quat_to_matrix
from .scenario import Problem, Scenario, ScenarioError, load_scenario, scenario_from_dict
from .scenario.loader import DEFAULT_MIN_STEP
from .scenario.yamlnodes import suggest

__all__ = ["simulate", "load", "apply_overrides", "Result", "BodyTrajectory", "ConnectorTrajectory",
           "JointTrajectory", "Energy", "SimulationError", "OverrideError", "UnknownNameError", "OVERRIDES"]

PathLike = Union[str, "os.PathLike[str]"]

# keyword of simulate() -> key path in a scenario file (SCENARIO.md); the loader checks the values.
OVERRIDES = MappingProxyType({
    "end": ("time", "end"),
    "step": ("time", "step"),
    "adaptive": ("time", "adaptive"),
    "min_step": ("time", "min_step"),
    "tolerance": ("time", "tolerance"),
    "max_step": ("time", "max_step"),
    "rho_inf": ("integrator", "rho_inf"),
    "tangent": ("integrator", "tangent"),
    "max_iterations": ("integrator", "newton", "max_iterations"),
    "rtol": ("integrator", "newton", "rtol"),
    "atol": ("integrator", "newton", "atol"),
    "modified": ("integrator", "newton", "modified"),
    "interval": ("output", "interval"),
})

# Root attributes the writer sets itself (write_trajectory's own arguments or the time of writing).
_WRITER_ATTRS = ("format",) + ROOT_ATTRIBUTES


class SimulationError(Exception):
    """A run that did not complete (status ``failed`` or ``interrupted``, or a file still ``running``).

    Raised by :meth:`Result.raise_for_status`, never by :func:`simulate` itself.

    Attributes
    ----------
    result : Result
        The result, with every frame computed before the stop.
    status : str
        Its status.
    """

    def __init__(self, result: "Result"):
        self.result = result
        self.status = result.status
        t = f", last frame at t = {result.time[-1]:.9g} s" if len(result) else ", no frame"
        super().__init__(f"{result.scenario_name}: {result.status}: {result.message} ({len(result)} "
                         f"frame{'' if len(result) == 1 else 's'} kept{t})")


class OverrideError(ScenarioError, ValueError):
    """Overrides given to :func:`simulate` make the scenario invalid.

    A :class:`~mbsim.scenario.ScenarioError` (invalid input, like a broken
    file) and a :class:`ValueError` (a bad argument value).  ``problems``
    name the scenario keys as SCENARIO.md does (``output.interval``), the
    messages are the file loader's own.
    """


class UnknownNameError(KeyError):
    """No body, connector, joint or dataset of that name; the message lists the names there are.

    A KeyError whose text is shown as written (a plain KeyError quotes it).
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


# --------------------------------------------------------------------------
# running and loading
# --------------------------------------------------------------------------
def simulate(scenario: Union[PathLike, Mapping, Scenario], *, output: Optional[PathLike] = None,
             overwrite: bool = False, end: Optional[float] = None, step: Optional[float] = None,
             rho_inf: Optional[float] = None, tangent: Optional[str] = None, interval: Optional[float] = None,
             adaptive: Optional[bool] = None, min_step: Optional[float] = None,
             tolerance: Optional[Mapping] = None, max_step: Optional[float] = None,
             max_iterations: Optional[int] = None, rtol: Optional[float] = None, atol: Optional[float] = None,
             modified: Optional[bool] = None, progress: bool = False, allow_large: bool = False,
             **unknown) -> "Result":
    """Simulate a scenario and return its trajectory as a :class:`Result`.

    Parameters
    ----------
    scenario : str, os.PathLike, dict or Scenario
        A scenario file (YAML, SCENARIO.md), the same content as a dict, or
        an already validated :class:`~mbsim.scenario.Scenario`.
    output : str or os.PathLike, optional
        Also write the trajectory to this HDF5 file (OUTPUT.md), as
        ``mbsim run -o`` does.  Default: keep it in memory only; the
        scenario's ``output.file`` is ignored (:meth:`Result.save` writes
        it later).
    overwrite : bool
        Replace an existing file at ``output`` (never done otherwise).
    end, step, adaptive, min_step : float, float, bool, float, optional
        Override ``time.end``, ``time.step`` [s], ``time.adaptive`` and
        ``time.min_step`` [s].
    tolerance, max_step : dict, float, optional
        Override ``time.tolerance`` (``{"rtol": 1e-6, "atol": 1e-6}``: steps chosen by their error,
        THEORY §14) and ``time.max_step`` [s].  A scenario's own tolerance is kept under the other
        overrides.
    rho_inf, tangent : float, str, optional
        Override ``integrator.rho_inf`` and ``integrator.tangent``.
    max_iterations, rtol, atol, modified : int, float, float, bool, optional
        Override ``integrator.newton.*`` (``modified=False``: full Newton, a
        fresh tangent at every iteration; see docs/newton.md).
    interval : float, optional
        Override ``output.interval`` [s].
    progress : bool
        Show the progress bar on stderr.
    allow_large : bool
        Run even when the run would need more than 1e10 steps or more memory than is free (as
        ``mbsim run --allow-large``); a trajectory larger than the free disk space is refused anyway.

    Overrides are checked by the scenario loader's own rules, see
    :func:`apply_overrides` (which also says how ``step`` carries the
    default output interval and minimum step along).

    Returns
    -------
    Result
        ``status`` ``completed``; or ``failed`` (the solver gave up) /
        ``interrupted`` (Ctrl-C) with ``message`` saying where and why and
        every frame computed before.  These do not raise: use
        :meth:`Result.raise_for_status`.

    Raises
    ------
    ScenarioError
        The scenario breaks SCENARIO.md (every problem listed).
    OverrideError
        An override value breaks it (also a ValueError).
    TypeError
        An unknown keyword (the message lists the valid ones).
    OutputFileError
        ``output`` cannot be written, or exists and ``overwrite`` is False.
    ResourceError
        The run would need more steps than is sensible (1e10), more memory than
        the machine has free, or a larger file than the free disk space; the
        message gives the estimate (``allow_large=True`` runs the first two anyway).
    JointError
        The joints refuse the scenario (``integrator.joints``: redundant
        equations or inconsistent initial velocities with ``refuse``; also a
        ValueError).

    Examples
    --------
    >>> import mbsim
    >>> spring = {"mbsim": 1, "name": "oscillator", "time": {"end": 0.2, "step": 0.01},
    ...           "bodies": [{"name": "mass", "mass": 1.0, "inertia": [1, 1, 1], "position": [1.1, 0, 0]}],
    ...           "connectors": [{"name": "k", "type": "spring", "bodies": ["world", "mass"],
    ...                           "points": [[0, 0, 0], [1.1, 0, 0]], "stiffness": 100.0, "rest_length": 1.0}]}
    >>> res = mbsim.simulate(spring, end=0.1, interval=0.05)
    >>> res.time
    array([0.  , 0.05, 0.1 ])
    >>> res.connector("k").force[0]           # k (L - L0) n on body A (world), n from A to B
    array([10.,  0.,  0.])
    >>> mbsim.simulate(spring, interval=0.015)
    Traceback (most recent call last):
    ...
    mbsim.api.OverrideError: overrides (interval=0.015): 1 problem
      output.interval: must be a whole multiple of time.step (0.01), got 0.015 (1.5 steps)
    """
    if unknown:
        raise TypeError(_unknown_keywords("simulate", unknown))
    sc = _as_scenario(scenario)
    given = dict(end=end, step=step, adaptive=adaptive, min_step=min_step, tolerance=tolerance, max_step=max_step,
                 rho_inf=rho_inf, tangent=tangent,
                 max_iterations=max_iterations, rtol=rtol, atol=atol, modified=modified, interval=interval)
    sc = apply_overrides(sc, **{k: v for k, v in given.items() if v is not None})
    from . import driver  # the step loop and numba: imported when a run needs them, not to read a result
    out = None if output is None else os.fspath(output)
    if out is not None:
        _check_writable(out, overwrite)  # in this API's words (the driver's message names --overwrite)
    summary = driver.run(sc, out, progress=progress, write=out is not None, keep_frames=True,
                         overwrite=out is not None, allow_large=allow_large)
    return Result._from_run(sc, summary)


def load(path: PathLike) -> "Result":
    """Open a trajectory file written by ``mbsim run`` (or :func:`simulate`, :meth:`Result.save`).

    The whole file is read into memory.  A file whose per-frame datasets
    hold different numbers of frames (a run killed while writing) is read
    up to the shortest of them, with an
    :class:`~mbsim.io.reader.UnequalLengthsWarning`; its ``status`` is
    then usually still ``running``.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.h5`` file.

    Raises
    ------
    ResultFileError
        Not HDF5, not an mbsim trajectory, or datasets of OUTPUT.md missing.

    Examples
    --------
    >>> import os, tempfile, mbsim
    >>> ball = {"mbsim": 1, "name": "drop", "gravity": [0, 0, -9.81], "time": {"end": 0.1, "step": 0.01},
    ...         "bodies": [{"name": "ball", "mass": 1.0, "inertia": [0.1, 0.1, 0.1]}]}
    >>> path = os.path.join(tempfile.mkdtemp(), "drop.h5")
    >>> res = mbsim.simulate(ball, output=path)
    >>> back = mbsim.load(path)
    >>> back.status, len(back), back.bodies
    ('completed', 11, ['ball'])
    >>> bool((back.body("ball").velocity == res.body("ball").velocity).all())
    True
    """
    path = os.fspath(path)
    data = read_trajectory(path, common_length=True)  # the validating reader: every OUTPUT.md dataset checked
    attrs = data.pop("attrs")
    modes = read_modes(path)  # a modes file's /modes (OUTPUT.md, "Statics and modes files")
    if modes is not None:
        data.update({f"modes/{k}": v for k, v in modes.items() if isinstance(v, np.ndarray)})
    return Result(data, attrs, path=path)


def apply_overrides(scenario: Scenario, **overrides) -> Scenario:
    """Return ``scenario`` with settings replaced, checked by the scenario file's rules.

    Parameters
    ----------
    scenario : Scenario
        A validated scenario.
    **overrides
        Any of :data:`OVERRIDES` (``end``, ``step``, ``adaptive``,
        ``min_step``, ``tolerance``, ``max_step``, ``rho_inf``, ``tangent``, ``max_iterations``,
        ``rtol``, ``atol``, ``modified``, ``interval``).

    Notes
    -----
    The settings (``time``, ``integrator`` and ``output.interval``) with
    the overrides in place are written out as a small scenario and
    validated by :func:`~mbsim.scenario.scenario_from_dict`, so every rule
    of SCENARIO.md applies exactly as to a file (types, ranges, ``step ≤
    end``, ``interval`` a whole multiple of ``step``, ``min_step ≤
    step``), and the specs the loader builds from them replace those of
    ``scenario``.  The bodies, connectors and loads are not touched (nor
    re-checked).  ``Scenario.text`` stays the text as read; the settings
    actually used are in the result's root attributes (``time_end``,
    ``time_step``, ``output_interval``, ``rho_inf``, ...).

    A new ``step`` without a new ``interval`` keeps an output interval that
    was a whole multiple of the old step, except one *equal* to the old step
    (the default: a frame every step), which becomes the new step; likewise
    a ``min_step`` at its default (1e-6 of the step) follows the new step.

    Raises
    ------
    TypeError
        An unknown keyword.
    OverrideError
        A value the scenario file could not have (a ScenarioError and a ValueError).
    """
    unknown = {k: v for k, v in overrides.items() if k not in OVERRIDES}
    if unknown:
        raise TypeError(_unknown_keywords("apply_overrides", unknown))
    if not overrides:
        return scenario
    t, i = scenario.time, scenario.integrator
    settings = {
        "time": {"end": t.end, "step": t.step, "adaptive": t.adaptive, "min_step": t.min_step},
        "integrator": {"rho_inf": i.rho_inf, "tangent": i.tangent,
                       "newton": {"max_iterations": i.max_iterations, "rtol": i.rtol, "atol": i.atol,
                                  "modified": i.modified}},
        "output": {"interval": scenario.output.interval},
    }
    if t.controlled:  # (error-controlled steps: kept unless overridden)
        settings["time"].update(tolerance={"rtol": t.rtol, "atol": t.atol}, controller=t.controller)
        if t.max_step is not None:
            settings["time"]["max_step"] = t.max_step
    if t.min_step is None or ("step" in overrides and t.min_step == DEFAULT_MIN_STEP * t.step):
        del settings["time"]["min_step"]  # the loader's default, from the (new) step
    if "step" in overrides and scenario.output.interval == t.step:
        del settings["output"]["interval"]  # likewise
    for key, value in overrides.items():
        *sections, leaf = OVERRIDES[key]
        target = settings
        for s in sections:
            target = target[s]
        target[leaf] = value
    probe = {"mbsim": 1, "name": "overrides", **settings,
             "bodies": [{"name": "probe", "mass": 1.0, "inertia": [1.0, 1.0, 1.0]}]}
    shown = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
    try:
        checked = scenario_from_dict(probe)
    except ScenarioError as exc:
        # Lines refer to the probe's text, not to anything the user wrote: drop them.
        problems = [Problem(p.path, None, p.message) for p in exc.problems]
        raise OverrideError(problems, f"overrides ({shown})") from None
    return dataclasses.replace(scenario, time=checked.time, integrator=checked.integrator,
                               output=dataclasses.replace(scenario.output, interval=checked.output.interval))


def _check_writable(path: str, overwrite: bool) -> None:
    from . import driver
    if os.path.isdir(path):
        raise driver.OutputFileError(path, "it is a directory; give a file name such as DIR/result.h5")
    if not overwrite and os.path.lexists(path):
        raise driver.OutputFileError(path, "the file exists; pass overwrite=True to replace it, "
                                           "or choose another path")


def _as_scenario(scenario) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, Mapping):
        return scenario_from_dict(dict(scenario))
    if isinstance(scenario, (str, os.PathLike)):
        return load_scenario(scenario)
    raise TypeError(f"scenario must be a file path, a dict or a Scenario, got {type(scenario).__name__}")


def _unknown_keywords(func: str, unknown: dict) -> str:
    names = ", ".join(repr(k) + suggest(k, OVERRIDES) for k in unknown)
    s = "s" if len(unknown) > 1 else ""
    return (f"{func}() got unexpected keyword argument{s} {names}; the settings it can override are "
            f"{', '.join(OVERRIDES)}")


# --------------------------------------------------------------------------
# the result
# --------------------------------------------------------------------------
class Result:
    """A trajectory: every frame of one run, by name (OUTPUT.md's datasets).

    Made by :func:`simulate` and :func:`load`, not directly.  All arrays are
    read-only numpy arrays; the named accessors return views of them (no
    copies).  T is the number of frames, B of bodies, C of connectors, J of
    joints (0 for a scenario without joints, whose result holds no
    ``joints/`` datasets, as its file has no ``/joints`` group).

    Attributes
    ----------
    path : str or None
        The file the result was read from or written to (None: memory only).
    scenario : Scenario or None
        The scenario as run, overrides applied (None for a loaded file: see
        ``scenario_text``).

    Examples
    --------
    >>> import mbsim
    >>> res = mbsim.simulate({"mbsim": 1, "name": "drop", "gravity": [0, 0, -9.81],
    ...                       "time": {"end": 0.1, "step": 0.01},
    ...                       "bodies": [{"name": "ball", "mass": 2.0, "inertia": [0.1, 0.1, 0.1]}]})
    >>> res.body("ball")
    <BodyTrajectory 'ball': mass 2 kg, 11 frames>
    >>> res.body("ball").velocity[-1]         # v = g t
    array([ 0.   ,  0.   , -0.981])
    >>> res["momentum/linear"][-1]            # raw access by OUTPUT.md path
    array([ 0.   ,  0.   , -1.962])
    >>> float(res.energy.drift) < 1e-12       # kinetic + potential is conserved
    True
    >>> res.body("bal")
    Traceback (most recent call last):
    ...
    mbsim.api.UnknownNameError: no body 'bal' in 'drop' (did you mean 'ball'?); its bodies: ball
    """

    def __init__(self, data: dict, attrs: dict, *, path: Optional[str] = None,
                 scenario: Optional[Scenario] = None):
        self._data = {}
        for k, v in data.items():
            if isinstance(v, np.ndarray):
                v.setflags(write=False)
            elif isinstance(v, list):
                v = tuple(v)
            self._data[k] = v
        self._attrs = dict(attrs)
        self.path = path
        self.scenario = scenario
        self._body_index = {n: i for i, n in enumerate(self._data["bodies/name"])}
        self._connector_index = {n: i for i, n in enumerate(self._data["connectors/name"])}
        self._joint_index = {n: i for i, n in enumerate(self._data.get("joints/name", ()))}

    @classmethod
    def _from_run(cls, sc: Scenario, summary: "driver.RunSummary") -> "Result":
        # The root attributes mbsim run writes (the writer's header and io.writer.run_attributes);
        # tests/integration/test_api.py checks that they agree with a written file.
        from .integrators import INTEGRATORS
        integrator = INTEGRATORS[sc.integrator.method]
        p = integrator.parameters(sc.integrator)
        attrs = {
            **run_attributes(sc, integrator.name, p, summary.linear_solver),
            "steps": summary.steps, "newton_iterations": summary.newton_iterations,
            "rejected_steps": summary.rejected_steps, "wall_time_s": summary.wall_time_s,
        }
        if summary.smallest_step is not None:  # error-controlled steps (time.tolerance)
            attrs.update(smallest_step=summary.smallest_step, largest_step=summary.largest_step)
        return cls._from_frames(sc, summary.frames_data or {}, summary.status, summary.message, attrs,
                                summary.output)

    @classmethod
    def _from_frames(cls, sc: Scenario, frames: dict, status: str, message: str, attrs: dict,
                     path: Optional[str] = None, extra: Optional[dict] = None) -> "Result":
        """A result of ``frames`` (OUTPUT.md paths → arrays stacked over frames) with the writer's header
        attributes, ``attrs`` and the datasets ``extra`` (``modes/...``)."""
        B, C, J = len(sc.bodies), len(sc.connectors), len(sc.joints)
        data = {}
        for k, (tail, _, _) in frame_datasets(J).items():
            shape = tuple({"B": B, "C": C, "J": J}.get(d, d) for d in tail)
            dtype = np.int32 if k == "solver/iterations" else np.float64  # as the writer stores them
            data[k] = np.asarray(frames[k], dtype=dtype) if k in frames else np.empty((0,) + shape, dtype)
        data.update({
            "bodies/name": [b.name for b in sc.bodies],
            "bodies/fixed": np.array([b.fixed for b in sc.bodies], dtype=bool),
            "bodies/mass": np.array([0.0 if b.fixed else b.mass for b in sc.bodies]),
            "connectors/name": [c.name for c in sc.connectors],
            "connectors/type": [c.type for c in sc.connectors],
            "connectors/body_a": [c.body_a for c in sc.connectors],
            "connectors/body_b": [c.body_b for c in sc.connectors],
            "scenario": sc.text,
        })
        if J:
            data.update({"joints/name": [j.name for j in sc.joints], "joints/type": [j.type for j in sc.joints],
                         "joints/body_a": [j.body_a for j in sc.joints],
                         "joints/body_b": [j.body_b for j in sc.joints]})
        data.update(extra or {})
        attrs = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "mbsim_version": __version__,
            "scenario_name": sc.name, "status": status, "message": message, "created_utc": utc_now(), **attrs,
        }
        return cls(data, attrs, path=path, scenario=sc)

    # ---- what the run was ------------------------------------------------
    @property
    def status(self) -> str:
        """``completed``, ``failed``, ``interrupted``, or ``running`` (a file whose writer never finished)."""
        return str(self._attrs.get("status", ""))

    @property
    def message(self) -> str:
        """Human-readable outcome (for ``failed``: where and why)."""
        return str(self._attrs.get("message", ""))

    @property
    def scenario_name(self) -> str:
        return str(self._attrs.get("scenario_name", ""))

    @property
    def scenario_text(self) -> str:
        """The scenario file's text as it was read (``/scenario``)."""
        return self._data["scenario"]

    @property
    def attrs(self) -> dict:
        """The root attributes (OUTPUT.md): status, integrator settings, counters... (a copy)."""
        return dict(self._attrs)

    def raise_for_status(self) -> "Result":
        """Return ``self`` if the run completed, else raise :class:`SimulationError`.

        Examples
        --------
        >>> import mbsim
        >>> ball = {"mbsim": 1, "time": {"end": 0.1, "step": 0.01},
        ...         "bodies": [{"name": "ball", "mass": 1.0, "inertia": [0.1, 0.1, 0.1]}]}
        >>> len(mbsim.simulate(ball).raise_for_status())
        11
        """
        if self.status != "completed":
            raise SimulationError(self)
        return self

    @property
    def analysis(self) -> str:
        """``dynamics`` (a time integration), ``statics`` or ``modes`` (OUTPUT.md, "Statics and modes files")."""
        return str(self._attrs.get("analysis", "dynamics"))

    @property
    def modes(self):
        """The modes of a modes result (:class:`mbsim.analysis.modes.Modes`: frequencies, damping ratios,
        shapes by body); UnknownNameError for any other result."""
        if "modes/frequency" not in self._data:
            raise UnknownNameError(f"this result ({self.analysis}) has no modes; `mbsim modes SCENARIO` or "
                                   f"mbsim.modes(...) computes them")
        from .analysis.modes import Modes
        return Modes._from_data(self._data, self._attrs, self)

    # ---- frames ----------------------------------------------------------
    @property
    def time(self) -> np.ndarray:
        """(T,) s: time of each frame; frame 0 is t = 0."""
        return self._data["time"]

    def __len__(self) -> int:
        return len(self._data["time"])

    def __getitem__(self, path: str):
        """A dataset by its OUTPUT.md path (``"bodies/position"``, leading ``/`` optional)."""
        key = path.lstrip("/") if isinstance(path, str) else path
        try:
            return self._data[key]
        except (KeyError, TypeError):
            raise UnknownNameError(f"no dataset {path!r}{suggest(str(key), self._data)}; datasets: "
                               f"{', '.join(sorted(self._data))}") from None

    def __contains__(self, path) -> bool:
        return isinstance(path, str) and path.lstrip("/") in self._data

    def keys(self) -> list:
        """The dataset paths, as ``res[path]`` takes them."""
        return sorted(self._data)

    # ---- bodies, connectors and joints --------------------------------------
    @property
    def bodies(self) -> list:
        """Body names, in scenario order (fixed bodies included, ``world`` not)."""
        return list(self._data["bodies/name"])

    @property
    def connectors(self) -> list:
        """Connector names, in scenario order."""
        return list(self._data["connectors/name"])

    @property
    def joints(self) -> list:
        """Joint names, in scenario order (empty when the scenario has no joints)."""
        return list(self._joint_index)

    def body(self, name: str) -> "BodyTrajectory":
        """The trajectory of body ``name`` (KeyError with the names there are, if unknown)."""
        return BodyTrajectory(self, self._index(self._body_index, name, "body", "bodies"))

    def connector(self, name: str) -> "ConnectorTrajectory":
        """The force, moment and length of connector ``name`` over time."""
        return ConnectorTrajectory(self, self._index(self._connector_index, name, "connector", "connectors"))

    def joint(self, name: str) -> "JointTrajectory":
        """The reaction force and moment and the constraint errors of joint ``name`` over time.

        Examples
        --------
        >>> import mbsim
        >>> hanging = {"mbsim": 1, "name": "hanging", "gravity": [0, 0, -9.81], "time": {"end": 0.1, "step": 0.01},
        ...            "bodies": [{"name": "bob", "mass": 2.0, "inertia": [0.1, 0.1, 0.1], "position": [0, 0, -1]}],
        ...            "joints": [{"name": "pin", "type": "spherical", "bodies": ["world", "bob"],
        ...                        "point": [0, 0, 0]}]}
        >>> res = mbsim.simulate(hanging)
        >>> res.joints, res.joint("pin").bodies
        (['pin'], ('world', 'bob'))
        >>> res.joint("pin").force[-1].round(9)   # on world (A): the bob's weight, m g, hangs from it
        array([  0.  ,   0.  , -19.62])
        >>> res.joint("pn")
        Traceback (most recent call last):
        ...
        mbsim.api.UnknownNameError: no joint 'pn' in 'hanging' (did you mean 'pin'?); its joints: pin
        """
        return JointTrajectory(self, self._index(self._joint_index, name, "joint", "joints"))

    def _index(self, index: dict, name, what: str, plural: str) -> int:
        try:
            return index[name]
        except (KeyError, TypeError):
            pass
        names = list(index)
        listed = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
        hint = suggest(name, names) if isinstance(name, str) else ""
        have = f"its {plural}: {listed}" if names else f"it has no {plural}"
        raise UnknownNameError(f"no {what} {name!r} in {self.scenario_name!r}{hint}; {have}")

    # ---- whole-system quantities -----------------------------------------
    @property
    def energy(self) -> "Energy":
        """Energies over time: ``kinetic``, ``potential``, ``dissipated``, ``external_work``, ``balance``, ``drift``."""
        return Energy(self)

    @property
    def momentum(self) -> SimpleNamespace:
        """``linear`` (T, 3) kg m/s and ``angular`` (T, 3) kg m²/s about the world origin."""
        return SimpleNamespace(linear=self._data["momentum/linear"], angular=self._data["momentum/angular"])

    @property
    def solver(self) -> SimpleNamespace:
        """Per frame: Newton ``iterations``, final ``residual_norm`` and ``step`` size of the step ending there."""
        d = self._data
        return SimpleNamespace(iterations=d["solver/iterations"], residual_norm=d["solver/residual_norm"],
                               step=d["solver/step"])

    def __repr__(self) -> str:
        T = len(self)
        span = f", t = {_g(self.time[0])} … {_g(self.time[-1])} s" if T else ""
        nb, nc, nj = len(self._body_index), len(self._connector_index), len(self._joint_index)
        joints = f", {nj} joint{'' if nj == 1 else 's'}" if nj else ""
        return (f"<Result {self.scenario_name!r} {self.status}: {T} frame{'' if T == 1 else 's'}{span}, "
                f"{nb} bod{'y' if nb == 1 else 'ies'}, {nc} connector{'' if nc == 1 else 's'}{joints}>")

    # ---- conversions -----------------------------------------------------
    def to_xarray(self):
        """The trajectory as an :class:`xarray.Dataset` (needs ``pip install xarray``).

        Coordinates ``time``, ``body``, ``connector``, ``xyz`` (x, y, z) and
        ``quat`` (w, x, y, z), plus ``mass``/``fixed`` along ``body`` and
        ``connector_type``/``body_a``/``body_b`` along ``connector``.
        Variables: ``position``, ``orientation``, ``velocity``,
        ``angular_velocity``, ``acceleration``, ``angular_acceleration``
        (time, body, xyz|quat); ``connector_force``, ``connector_moment``
        (time, connector, xyz), ``connector_length`` (time, connector);
        ``energy_kinetic``, ``energy_potential``, ``energy_dissipated``,
        ``energy_external_work``, ``energy_balance``, ``solver_iterations``,
        ``solver_residual_norm``, ``solver_step`` (time);
        ``momentum_linear``, ``momentum_angular`` (time, xyz).  With joints
        also the coordinate ``joint`` with ``joint_type``, ``joint_body_a``,
        ``joint_body_b`` along it and the variables ``joint_force``,
        ``joint_moment`` (time, joint, xyz), ``joint_position_error``,
        ``joint_angle_error`` (time, joint) (none of these without joints,
        as the file has no ``/joints`` group).  Each has ``units`` and
        ``description`` attributes; the dataset's attributes are the file's
        root attributes plus ``scenario`` (the text).

        Raises
        ------
        ImportError
            xarray is not installed.

        Examples
        --------
        >>> import mbsim
        >>> res = mbsim.simulate({"mbsim": 1, "name": "drop", "gravity": [0, 0, -9.81],
        ...                       "time": {"end": 0.1, "step": 0.01},
        ...                       "bodies": [{"name": "ball", "mass": 1.0, "inertia": [0.1, 0.1, 0.1]}]})
        >>> ds = res.to_xarray()
        >>> ds["position"].dims, ds["position"].attrs["units"]
        (('time', 'body', 'xyz'), 'm')
        >>> round(float(ds["velocity"].sel(body="ball", xyz="z").isel(time=-1)), 9)
        -0.981
        """
        try:
            import xarray as xr
        except ImportError:
            raise ImportError("Result.to_xarray() needs xarray, which is not installed: "
                              "pip install xarray") from None
        d = self._data
        dims = {"B": "body", "C": "connector", "J": "joint", 3: "xyz", 4: "quat"}
        variables = {}
        for path, (tail, units, desc) in frame_datasets(len(self._joint_index)).items():
            if path == "time":
                continue
            group, leaf = path.split("/")
            name = {"bodies": leaf, "connectors": f"connector_{leaf}", "joints": f"joint_{leaf}"}.get(
                group, f"{group}_{leaf}")
            variables[name] = xr.Variable(("time",) + tuple(dims[t] for t in tail), d[path],
                                          {"units": units, "description": desc})
        balance = self.energy.balance
        variables["energy_balance"] = xr.Variable(("time",), balance, {
            "units": "J", "description": "kinetic + potential + dissipated - external_work (constant for the "
                                         "exact motion)"})
        coords = {
            "time": ("time", d["time"], {"units": "s", "description": FRAME_DATASETS["time"][2]}),
            "body": ("body", np.array(list(d["bodies/name"]), dtype=str),
                     {"description": "body names, in scenario order"}),
            "connector": ("connector", np.array(list(d["connectors/name"]), dtype=str),
                          {"description": "connector names, in scenario order"}),
            "xyz": ("xyz", ["x", "y", "z"], {"description": "world-frame components"}),
            "quat": ("quat", ["w", "x", "y", "z"], {"description": "quaternion components [w, x, y, z]"}),
            "mass": ("body", d["bodies/mass"], {"units": "kg", "description": "body mass (0 for fixed bodies)"}),
            "fixed": ("body", d["bodies/fixed"], {"description": "true for fixed bodies"}),
            "connector_type": ("connector", np.array(list(d["connectors/type"]), dtype=str),
                               {"description": "connector type"}),
            "body_a": ("connector", np.array(list(d["connectors/body_a"]), dtype=str),
                       {"description": "name of body A"}),
            "body_b": ("connector", np.array(list(d["connectors/body_b"]), dtype=str),
                       {"description": "name of body B"}),
        }
        if self._joint_index:
            coords.update({
                "joint": ("joint", np.array(list(d["joints/name"]), dtype=str),
                          {"description": "joint names, in scenario order"}),
                "joint_type": ("joint", np.array(list(d["joints/type"]), dtype=str), {"description": "joint type"}),
                "joint_body_a": ("joint", np.array(list(d["joints/body_a"]), dtype=str),
                                 {"description": "name of the joint's body A"}),
                "joint_body_b": ("joint", np.array(list(d["joints/body_b"]), dtype=str),
                                 {"description": "name of the joint's body B"}),
            })
        attrs = {k: v for k, v in self._attrs.items() if v is not None}
        attrs["scenario"] = self.scenario_text
        return xr.Dataset(variables, coords=coords, attrs=attrs)

    def save(self, path: PathLike, *, overwrite: bool = False) -> str:
        """Write the result to an HDF5 file in the OUTPUT.md layout and return its path.

        The file holds the same arrays, status, message, scenario text,
        settings and counters; ``created_utc`` and ``mbsim_version`` are
        those of this writing.  ``path`` becomes ``self.path``.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        overwrite : bool
            Replace an existing file (never done otherwise).

        Raises
        ------
        OutputFileError
            The file exists (without ``overwrite``) or cannot be written.

        Examples
        --------
        >>> import os, tempfile, mbsim
        >>> res = mbsim.simulate({"mbsim": 1, "time": {"end": 0.1, "step": 0.01},
        ...                       "bodies": [{"name": "ball", "mass": 1.0, "inertia": [0.1, 0.1, 0.1]}]})
        >>> path = res.save(os.path.join(tempfile.mkdtemp(), "ball.h5"))
        >>> mbsim.load(path)
        <Result 'scenario' completed: 11 frames, t = 0 … 0.1 s, 1 body, 0 connectors>
        """
        from .io.writer import write_trajectory
        path = os.fspath(path)
        _check_writable(path, overwrite)
        d = self._data
        # write_trajectory needs only names, fixed flags, masses, connector and joint ends and the text
        # of a scenario.
        def ends(group):
            return [SimpleNamespace(name=n, type=t, body_a=a, body_b=b)
                    for n, t, a, b in zip(*(d.get(f"{group}/{k}", ()) for k in ("name", "type", "body_a", "body_b")))]
        static = SimpleNamespace(
            name=self.scenario_name, text=self.scenario_text,
            bodies=[SimpleNamespace(name=n, fixed=bool(f), mass=float(m))
                    for n, f, m in zip(d["bodies/name"], d["bodies/fixed"], d["bodies/mass"])],
            connectors=ends("connectors"), joints=ends("joints"))
        attrs = {k: v for k, v in self._attrs.items() if k not in _WRITER_ATTRS and v is not None}
        counters = {k: self._attrs[k] for k in COUNTERS if k in self._attrs}
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            write_trajectory(path, static, {k: d[k] for k in frame_datasets(len(static.joints))}, attrs,
                             status=self.status,
                             message=self.message, counters=counters)
            if "modes/frequency" in d:  # a modes result: its /modes too
                from .io.writer import write_modes
                write_modes(path, {k[len("modes/"):]: v for k, v in d.items() if k.startswith("modes/")})
        except OSError as exc:
            from . import driver
            raise driver.OutputFileError(path, os.strerror(exc.errno) if exc.errno else str(exc)) from exc
        self.path = path
        return path


class BodyTrajectory:
    """One body's motion over time (views into the :class:`Result`'s arrays).

    Attributes
    ----------
    name : str
    index : int
        Position in ``Result.bodies`` (the B axis of ``res["bodies/..."]``).
    """

    __slots__ = ("_result", "index", "name")

    def __init__(self, result: Result, index: int):
        self._result, self.index = result, index
        self.name = result._data["bodies/name"][index]

    def _get(self, key):
        return self._result._data[key][:, self.index]

    @property
    def mass(self) -> float:
        """kg (0 for a fixed body)."""
        return float(self._result._data["bodies/mass"][self.index])

    @property
    def fixed(self) -> bool:
        return bool(self._result._data["bodies/fixed"][self.index])

    @property
    def position(self) -> np.ndarray:
        """(T, 3) m: centre of mass, world frame."""
        return self._get("bodies/position")

    @property
    def orientation(self) -> np.ndarray:
        """(T, 4): unit quaternion [w, x, y, z], body-to-world."""
        return self._get("bodies/orientation")

    @property
    def velocity(self) -> np.ndarray:
        """(T, 3) m/s: centre-of-mass velocity."""
        return self._get("bodies/velocity")

    @property
    def angular_velocity(self) -> np.ndarray:
        """(T, 3) rad/s: spatial angular velocity (world frame)."""
        return self._get("bodies/angular_velocity")

    @property
    def acceleration(self) -> np.ndarray:
        """(T, 3) m/s²: centre-of-mass acceleration."""
        return self._get("bodies/acceleration")

    @property
    def angular_acceleration(self) -> np.ndarray:
        """(T, 3) rad/s²: spatial angular acceleration."""
        return self._get("bodies/angular_acceleration")

    def rotation_matrices(self) -> np.ndarray:
        """(T, 3, 3): body-to-world rotation matrices from the quaternions (a new array)."""
        return quat_to_matrix(self.orientation)

    def __repr__(self) -> str:
        what = "fixed" if self.fixed else f"mass {_g(self.mass)} kg"
        return f"<BodyTrajectory {self.name!r}: {what}, {len(self._result)} frames>"


class ConnectorTrajectory:
    """One connector's action over time (views into the :class:`Result`'s arrays).

    Attributes
    ----------
    name, type, body_a, body_b : str
    index : int
        Position in ``Result.connectors``.
    """

    __slots__ = ("_result", "index", "name", "type", "body_a", "body_b")

    def __init__(self, result: Result, index: int):
        d = result._data
        self._result, self.index = result, index
        self.name, self.type = d["connectors/name"][index], d["connectors/type"][index]
        self.body_a, self.body_b = d["connectors/body_a"][index], d["connectors/body_b"][index]

    @property
    def force(self) -> np.ndarray:
        """(T, 3) N: force on body A (B receives the opposite)."""
        return self._result._data["connectors/force"][:, self.index]

    @property
    def moment(self) -> np.ndarray:
        """(T, 3) N m: pure moment on body A (zero for springs and dampers)."""
        return self._result._data["connectors/moment"][:, self.index]

    @property
    def length(self) -> np.ndarray:
        """(T,) m: distance between the insertion points (NaN for a torsional damper)."""
        return self._result._data["connectors/length"][:, self.index]

    def __repr__(self) -> str:
        return (f"<ConnectorTrajectory {self.name!r}: {self.type} {self.body_a} → {self.body_b}, "
                f"{len(self._result)} frames>")


class JointTrajectory:
    """One joint's reaction and constraint errors over time (views into the :class:`Result`'s arrays).

    Attributes
    ----------
    name, type, body_a, body_b : str
    bodies : tuple of str
        ``(body_a, body_b)``, as the scenario's ``bodies: [A, B]``.
    index : int
        Position in ``Result.joints`` (the J axis of ``res["joints/..."]``).
    """

    __slots__ = ("_result", "index", "name", "type", "body_a", "body_b")

    def __init__(self, result: Result, index: int):
        d = result._data
        self._result, self.index = result, index
        self.name, self.type = d["joints/name"][index], d["joints/type"][index]
        self.body_a, self.body_b = d["joints/body_a"][index], d["joints/body_b"][index]

    @property
    def bodies(self) -> tuple:
        return (self.body_a, self.body_b)

    def _get(self, leaf):
        return self._result._data[f"joints/{leaf}"][:, self.index]

    @property
    def force(self) -> np.ndarray:
        """(T, 3) N: reaction force the joint exerts on body A (B receives the opposite), drive force included."""
        return self._get("force")

    @property
    def moment(self) -> np.ndarray:
        """(T, 3) N m: reaction moment on body A about the joint's point (a distance joint: about A's
        point), drive torque included."""
        return self._get("moment")

    @property
    def position_error(self) -> np.ndarray:
        """(T,) m: norm of the joint's translational constraint residuals."""
        return self._get("position_error")

    @property
    def angle_error(self) -> np.ndarray:
        """(T,) rad: norm of its rotational constraint residuals (0 where it has none)."""
        return self._get("angle_error")

    def __repr__(self) -> str:
        return (f"<JointTrajectory {self.name!r}: {self.type} {self.body_a} → {self.body_b}, "
                f"{len(self._result)} frames>")


class Energy:
    """Energies over time [J] (OUTPUT.md ``/energy``) and their balance."""

    __slots__ = ("_result",)

    def __init__(self, result: Result):
        self._result = result

    def _get(self, leaf):
        return self._result._data[f"energy/{leaf}"]

    @property
    def kinetic(self) -> np.ndarray:
        """(T,) J: Σ ½ m v·v + ½ ω·Jω."""
        return self._get("kinetic")

    @property
    def potential(self) -> np.ndarray:
        """(T,) J: springs plus gravity."""
        return self._get("potential")

    @property
    def dissipated(self) -> np.ndarray:
        """(T,) J: work removed by dampers since t = 0."""
        return self._get("dissipated")

    @property
    def external_work(self) -> np.ndarray:
        """(T,) J: work done by loads and joint drives since t = 0."""
        return self._get("external_work")

    @property
    def balance(self) -> np.ndarray:
        """(T,) J: kinetic + potential + dissipated − external_work (constant for the exact motion)."""
        b = energy_balance(self.kinetic, self.potential, self.dissipated, self.external_work)
        b.setflags(write=False)
        return b

    @property
    def drift(self) -> float:
        """J: the largest departure of ``balance`` from its initial value (what ``mbsim info`` reports)."""
        return energy_drift(self.kinetic, self.potential, self.dissipated, self.external_work)[0]

    @property
    def relative_drift(self) -> float:
        """``drift`` relative to the largest energy magnitude seen."""
        return energy_drift(self.kinetic, self.potential, self.dissipated, self.external_work)[1]

    def __repr__(self) -> str:
        return f"<Energy: {len(self._result)} frames, drift {self.drift:.3e} J>"


def _g(x) -> str:
    x = float(x)
    return f"{x:.6g}" if math.isfinite(x) else str(x)
