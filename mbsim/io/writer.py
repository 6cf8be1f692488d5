"""HDF5 trajectory writer (OUTPUT.md, format version 1).

Frames are buffered in memory and written in blocks to resizable, chunked
datasets; after every block the counters are updated and the file is
flushed, so a run that stops for any reason — SIGKILL included — leaves
every flushed frame readable with plain h5py, and ``status`` (``running``
until the end) says whether it finished.  The file is created under a
temporary name and moved into place once its header is on disk.  All
per-frame datasets are resized together to the same length before the data
of a block is written.
"""
from __future__ import annotations

import datetime as _dt
import os
import time
from typing import Callable, Optional

import h5py
import numpy as np

from .. import __version__
from ..resources import estimate, frame_bytes

FORMAT = "mbsim-trajectory"
FORMAT_VERSION = 1
# root attributes the writer sets on every result besides ``format`` (OUTPUT.md), the counters last
COUNTERS = ("steps", "newton_iterations", "rejected_steps", "wall_time_s")
ROOT_ATTRIBUTES = ("format_version", "mbsim_version", "scenario_name", "status", "message", "created_utc") + COUNTERS

# path -> (trailing shape with 'B'/'C' placeholders, units, description)
FRAME_DATASETS = {
    "time": ((), "s", "time of each frame; frame 0 is t = 0"),
    "bodies/position": (("B", 3), "m", "centre of mass, world frame"),
    "bodies/orientation": (("B", 4), "1", "unit quaternion [w, x, y, z], body-to-world"),
    "bodies/velocity": (("B", 3), "m/s", "centre-of-mass velocity, world frame"),
    "bodies/angular_velocity": (("B", 3), "rad/s", "spatial angular velocity, world frame"),
    "bodies/acceleration": (("B", 3), "m/s^2", "centre-of-mass acceleration, world frame"),
    "bodies/angular_acceleration": (("B", 3), "rad/s^2", "spatial angular acceleration, world frame"),
    "connectors/force": (("C", 3), "N", "force the connector exerts on body A (B receives the opposite)"),
    "connectors/moment": (("C", 3), "N*m",
                          "pure moment on body A (zero for springs and dampers; excludes the moment of the force)"),
    "connectors/length": (("C",), "m", "distance between the insertion points; NaN where a connector has none"),
    "energy/kinetic": ((), "J", "sum of 1/2 m v.v + 1/2 w.Jw over bodies"),
    "energy/potential": ((), "J", "spring energy sum 1/2 k (L - L0)^2 plus gravity -sum m g.r"),
    "energy/dissipated": ((), "J", "work removed by dampers since t = 0"),
    "energy/external_work": ((), "J", "work done by loads since t = 0 (gravity is in the potential)"),
    "momentum/linear": ((3,), "kg*m/s", "sum of m v over moving bodies"),
    "momentum/angular": ((3,), "kg*m^2/s", "sum of r x m v + J w about the world origin"),
    "solver/iterations": ((), "1", "Newton iterations of the step that ended at this frame (0 for frame 0)"),
    "solver/residual_norm": ((), "N", "final residual norm (2-norm) of that step"),
    "solver/step": ((), "s", "time-step size used for that step"),
}
# only in files of scenarios with joints (OUTPUT.md: the group exists only when J > 0)
JOINT_DATASETS = {
    "joints/force": (("J", 3), "N", "reaction force the joint exerts on body A (B receives the opposite), "
                                    "drive force included"),
    "joints/moment": (("J", 3), "N*m", "reaction moment on body A about the joint's point (for distance: about "
                                       "A's point), drive torque included"),
    "joints/position_error": (("J",), "m", "norm of the joint's translational constraint residuals"),
    "joints/angle_error": (("J",), "rad", "norm of the joint's rotational constraint residuals; 0 where it has none"),
}
SOLVER_KEYS = ("solver/iterations", "solver/residual_norm", "solver/step")


def run_attributes(scenario, integrator: str, params, linear_solver: str, velocity_projection=None) -> dict:
    """The root attributes of a run's result that describe how it was computed (OUTPUT.md; besides
    :data:`ROOT_ATTRIBUTES`, which the writer keeps): the integrator's name and parameters (``params``:
    rho_inf, alpha_f, alpha_m, beta, gamma), the linear solver, the Newton and time settings, and the
    initial velocities' projection when the joints made one.  The one place that lists them: ``mbsim run``
    and the in-memory results of ``mbsim.simulate`` write these."""
    sc = scenario
    attrs = {
        "analysis": "dynamics",
        "rho_inf": params.rho_inf, "alpha_f": params.alpha_f, "alpha_m": params.alpha_m, "beta": params.beta,
        "gamma": params.gamma, "tangent": sc.integrator.tangent, "integrator": integrator,
        "linear_solver": linear_solver,
        "newton_max_iterations": sc.integrator.max_iterations,
        "newton_rtol": sc.integrator.rtol, "newton_atol": sc.integrator.atol,
        "newton_modified": sc.integrator.modified,
        "time_step": sc.time.step, "time_end": sc.time.end, "output_interval": sc.output.interval,
        "time_adaptive": sc.time.adaptive, "time_min_step": sc.time.min_step,
    }
    if velocity_projection:
        attrs["velocity_projection"] = _projection_json(velocity_projection)
    return attrs


def _projection_json(projection: dict) -> str:
    """``{body: (Δv, Δω)}`` as the ``velocity_projection`` attribute: JSON, per body the changes of its
    velocity [m/s] and angular velocity [rad/s] at t = 0."""
    import json
    return json.dumps({name: {"velocity": [float(x) for x in dv], "angular_velocity": [float(x) for x in dw]}
                       for name, (dv, dw) in projection.items()})


def frame_datasets(n_joints: int) -> dict:
    """The per-frame datasets of a file: FRAME_DATASETS, and JOINT_DATASETS when there are joints."""
    return {**FRAME_DATASETS, **JOINT_DATASETS} if n_joints else FRAME_DATASETS
FLUSH_BYTES = 16 * 1024**2  # a block of frames is written when it reaches this size (or after flush_seconds)


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def _header(f, scenario, attrs: dict) -> None:
    """Root attributes, ``/scenario`` and the static body and connector datasets."""
    f.attrs["format"] = FORMAT
    f.attrs["format_version"] = FORMAT_VERSION
    f.attrs["mbsim_version"] = __version__
    f.attrs["scenario_name"] = scenario.name
    f.attrs["status"] = "running"
    f.attrs["message"] = "the run is in progress"
    f.attrs["created_utc"] = utc_now()
    for k, v in attrs.items():
        f.attrs[k] = v
    for k in COUNTERS:
        f.attrs[k] = 0.0 if k == "wall_time_s" else 0

    st = h5py.string_dtype("utf-8")
    f.create_dataset("scenario", data=scenario.text, dtype=st)

    def static(path, data, dtype, units, desc):
        if dtype is not None:  # strings: an object array keeps empty lists well-typed
            data = np.array(list(data), dtype=object)
        ds = f.create_dataset(path, data=data, dtype=dtype)
        ds.attrs["units"] = units
        ds.attrs["description"] = desc

    bodies, conns = scenario.bodies, scenario.connectors
    static("bodies/name", [b.name for b in bodies], st, "1", "body names, in scenario order")
    static("bodies/fixed", np.array([b.fixed for b in bodies], dtype=bool), None, "1", "true for fixed bodies")
    static("bodies/mass", np.array([0.0 if b.fixed else b.mass for b in bodies]), None, "kg",
           "body mass (0 for fixed bodies)")
    static("connectors/name", [c.name for c in conns], st, "1", "connector names, in scenario order")
    static("connectors/type", [c.type for c in conns], st, "1", "connector type")
    static("connectors/body_a", [c.body_a for c in conns], st, "1", "name of body A")
    static("connectors/body_b", [c.body_b for c in conns], st, "1", "name of body B")
    joints = getattr(scenario, "joints", ())
    if joints:
        static("joints/name", [j.name for j in joints], st, "1", "joint names, in scenario order")
        static("joints/type", [j.type for j in joints], st, "1", "joint type")
        static("joints/body_a", [j.body_a for j in joints], st, "1", "name of body A")
        static("joints/body_b", [j.body_b for j in joints], st, "1", "name of body B")


def _frame_shape(path: str, scenario) -> tuple:
    tail = frame_datasets(1)[path][0]
    sizes = {"B": len(scenario.bodies), "C": len(scenario.connectors), "J": len(getattr(scenario, "joints", ()))}
    return tuple(sizes.get(d, d) for d in tail)


def _frame_dtype(path: str):
    return np.int32 if path == "solver/iterations" else np.float64


def _chunk_rows(expected: int, cap: int) -> int:
    """Frames per chunk of a per-frame dataset: the frames the run will store (``expected``) in as
    few chunks of at most ``cap`` frames (about 1 MiB) as it takes, of equal size -- HDF5 stores whole
    chunks, so a chunk sized for 37 000 frames made a 3-frame file 10-14 MB.  A run that stores more
    (resumed with a later end) adds chunks of the same size."""
    cap = max(1, int(cap))
    n = int(min(max(1, expected), 2**40))
    pieces = -(-n // cap)
    return int(-(-n // pieces))


class TrajectoryWriter:
    """Write one run to ``path``.

    Parameters
    ----------
    path : str
        Output file (created or truncated).
    scenario : Scenario
        Static data (names, masses, the scenario text).
    attrs : dict
        Integrator settings and solver description for the root attributes.
    flush_frames : int, optional
        Frames per block written at once; default: as many as make about
        FLUSH_BYTES (writing is cheap per byte and costly per call).
    flush_seconds : float
        A block is also written when this much wall time passed since the last.
    """

    def __init__(self, path, scenario, attrs: dict, flush_frames: Optional[int] = None, flush_seconds: float = 2.0,
                 counters: Optional[Callable[[], dict]] = None, _file=None, _frames: int = 0):
        self.path = str(path)
        if flush_frames is None:
            B = len(scenario.bodies) if scenario is not None else 0
            C = len(scenario.connectors) if scenario is not None else 0
            J = len(scenario.joints) if scenario is not None else 0
            flush_frames = FLUSH_BYTES // frame_bytes(B, C, J)
        self.flush_frames = max(1, int(flush_frames))
        self.flush_seconds = flush_seconds
        self.counters = counters
        self._arr: Optional[dict] = None  # preallocated frame buffers, created at the first frame
        self._n = 0  # frames buffered
        self._last_flush = time.monotonic()
        self.frames = _frames
        self._checkpoint = None  # (arrays, attributes) handed by checkpoint(), written at the next flush
        self._sequence = 0  # of the last checkpoint written
        if _file is not None:  # see resume()
            self.f = _file
            self.keys = tuple(k for k in frame_datasets(1) if k in _file)
            slots = _file.get(CHECKPOINT_GROUP, {})
            self._sequence = max((int(slots[k].attrs.get("sequence", 0)) for k in CHECKPOINT_SLOTS if k in slots),
                                 default=0)
            return
        self.keys = tuple(frame_datasets(len(scenario.joints)))

        # Build the file under a temporary name and move it into place only once its
        # header is complete and on disk: a kill during creation never leaves a
        # half-written file at the result path (nor destroys a file already there).
        d, base = os.path.split(os.path.abspath(self.path))
        tmp = os.path.join(d, f".{base}.{os.getpid()}.part")
        f = self.f = h5py.File(tmp, "w")
        try:
            _header(f, scenario, attrs)
            expected = estimate(scenario).frames
            for path_, (_, units, desc) in frame_datasets(len(scenario.joints)).items():
                shape = _frame_shape(path_, scenario)
                row = int(np.prod(shape)) * 8 or 8
                chunk_rows = _chunk_rows(expected, min(self.flush_frames, (1 << 20) // row))
                # an empty axis (no connectors) must be extendible for HDF5 to accept a chunk of 1 along it
                ds = f.create_dataset(path_, shape=(0,) + shape,
                                      maxshape=(None,) + tuple(s or None for s in shape),
                                      dtype=_frame_dtype(path_),
                                      chunks=(chunk_rows,) + tuple(max(1, s) for s in shape))
                ds.attrs["units"] = units
                ds.attrs["description"] = desc
            f.flush()
            os.replace(tmp, self.path)
        except BaseException:
            f.close()
            self.f = None
            if os.path.exists(tmp):
                os.remove(tmp)
            raise

    @classmethod
    def resume(cls, path, attrs: dict, counters: Optional[Callable[[], dict]] = None,
               flush_frames: int = 256, flush_seconds: float = 2.0,
               frames: Optional[int] = None) -> "TrajectoryWriter":
        """Reopen an unfinished result to append to it.

        Per-frame datasets of unequal length (a process killed while flushing)
        are cut to the shortest, so every frame kept is complete, and to
        ``frames`` when given (the frames of the checkpoint the run goes on
        from).  ``status`` becomes ``running`` again and ``attrs`` are updated.
        """
        f = h5py.File(str(path), "r+")
        keys = [k for k in frame_datasets(1) if k in f]
        T = min(f[k].shape[0] for k in keys)
        if frames is not None:
            T = min(T, int(frames))
        for k in keys:
            if f[k].shape[0] != T:
                f[k].resize(T, axis=0)
        for k, v in attrs.items():
            f.attrs[k] = v
        f.attrs["status"] = "running"
        f.attrs["message"] = "the run is in progress (resumed)"
        f.flush()
        return cls(path, None, {}, flush_frames, flush_seconds, counters, _file=f, _frames=T)

    # ------------------------------------------------------------------
    def _buffers(self) -> dict:
        """The preallocated block of ``flush_frames`` rows per dataset, made at the first frame."""
        if self._arr is None:
            self._arr = {k: np.empty((self.flush_frames,) + self.f[k].shape[1:], dtype=self.f[k].dtype)
                         for k in self.keys}
        return self._arr

    def append(self, frame: dict, iterations: int, residual_norm: float, step: float):
        """Buffer one frame (see :meth:`mbsim.mechanics.Mechanism.frame`)."""
        i, arr = self._n, self._buffers()
        for k, v in frame.items():
            arr[k][i] = v
        arr["solver/iterations"][i] = iterations
        arr["solver/residual_norm"][i] = residual_norm
        arr["solver/step"][i] = step
        self._n = i + 1
        if self._n >= self.flush_frames or time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def append_block(self, frames: dict, iterations, residual_norms, steps):
        """Buffer ``m`` frames at once: ``frames`` maps the same keys as :meth:`append`
        to arrays with a leading axis of length ``m`` (as do the three solver arrays)."""
        arr = self._buffers()
        frames = dict(frames, **{"solver/iterations": iterations, "solver/residual_norm": residual_norms,
                                 "solver/step": steps})
        m = len(frames["time"])
        j = 0
        while j < m:
            i = self._n
            n = min(m - j, self.flush_frames - i)
            for k, v in frames.items():
                arr[k][i:i + n] = v[j:j + n]
            self._n = i + n
            j += n
            if self._n >= self.flush_frames:
                self.flush()
        if time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def checkpoint(self, arrays: dict, attrs: dict):
        """Keep a state the run can be continued from (``--resume`` of a run with error-controlled steps):
        ``arrays`` (name → array, the same names and shapes every time) and ``attrs``, whose ``frames`` is
        the count of frames appended up to that state.  Written at the next flush, after the frames
        (:func:`_write_checkpoint`); only the newest one handed is kept."""
        self._checkpoint = (arrays, attrs)
        if time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def flush(self, counters: dict | None = None):
        """Write buffered frames, update the work counters, flush the file; then the newest checkpoint.

        All per-frame datasets are resized to the new length before any data
        is written, so between flushes they always agree in length.
        """
        n = self._n
        f = self.f
        if n:
            T0, T1 = self.frames, self.frames + n
            for k in self.keys:
                f[k].resize(T1, axis=0)
            for k in self.keys:
                f[k][T0:T1] = self._arr[k][:n]
            self.frames = T1
            self._n = 0
        counters = counters if counters is not None else (self.counters() if self.counters else None)
        if counters:
            for k, v in counters.items():
                f.attrs[k] = v
        f.flush()
        if self._checkpoint is not None and self._checkpoint[1]["frames"] <= self.frames:
            self._sequence += 1
            _write_checkpoint(f, self._sequence, *self._checkpoint)
            self._checkpoint = None
        self._last_flush = time.monotonic()

    def close(self, status: str, message: str, counters: dict | None = None):
        """Write what is buffered, set the final ``status`` and ``message``, close the file."""
        if self.f is None:
            return
        self.flush(counters)
        self.f.attrs["status"] = status
        self.f.attrs["message"] = message
        self.f.flush()
        self.f.close()
        self.f = None


# A run with error-controlled steps keeps the newest state it can be continued from in /checkpoint
# (docs/output.md): two slots written in turn, each marked complete only after its data are flushed, so
# that a process killed while writing one leaves the other whole.
CHECKPOINT_GROUP = "checkpoint"
CHECKPOINT_SLOTS = ("0", "1")


def _write_checkpoint(f, sequence: int, arrays: dict, attrs: dict) -> None:
    """Write checkpoint number ``sequence`` into the slot the last one did not use."""
    group = f.require_group(CHECKPOINT_GROUP)
    if "description" not in group.attrs:
        group.attrs["description"] = ("the newest state this run can be continued from (mbsim run --resume): "
                                      "two slots; take the complete one of the larger sequence")
    slot = group.require_group(CHECKPOINT_SLOTS[sequence % 2])
    slot.attrs["complete"] = False
    f.flush()
    for k, v in arrays.items():
        v = np.asarray(v, dtype=np.float64)
        if k in slot and slot[k].shape != v.shape:
            del slot[k]
        if k in slot:
            slot[k][...] = v
        else:
            slot.create_dataset(k, data=v)
    f.flush()
    for k, v in attrs.items():
        slot.attrs[k] = v
    slot.attrs["sequence"] = sequence
    slot.attrs["complete"] = True
    f.flush()


def write_trajectory(path, scenario, frames: dict, attrs: dict, status: str = "completed",
                     message: str = "", counters: dict | None = None, compression: str | None = None) -> None:
    """Write a whole trajectory at once (e.g. a reference solution) in the OUTPUT.md layout.

    ``frames`` maps every per-frame dataset path of FRAME_DATASETS to an array
    stacked over frames (``"time"`` (T,), ``"bodies/position"`` (T, B, 3), …).
    The datasets are written at their final size (not resizable), and with
    ``compression="gzip"`` compressed with byte shuffling: a compact file
    for archiving, such as the test references.
    """
    with h5py.File(str(path), "w", libver=("v110", "latest")) as f:
        _header(f, scenario, attrs)
        for path_, (_, units, desc) in frame_datasets(len(getattr(scenario, "joints", ()))).items():
            data = np.asarray(frames[path_], dtype=_frame_dtype(path_))
            if data.shape[1:] != _frame_shape(path_, scenario):
                raise ValueError(f"{path_}: shape {data.shape} does not fit the scenario")
            ds = f.create_dataset(path_, data=data, compression=compression,
                                  shuffle=compression is not None and data.size > 0)
            ds.attrs["units"] = units
            ds.attrs["description"] = desc
        for k, v in (counters or {}).items():
            f.attrs[k] = v
        f.attrs["status"] = status
        f.attrs["message"] = message


# /modes of a modes file (OUTPUT.md, "Statics and modes files"): name -> (units, description)
MODE_DATASETS = {
    "eigenvalue": ("1/s", "s = [Re, Im] of each mode, Im >= 0 (THEORY §12)"),
    "frequency": ("Hz", "natural frequency |s|/(2 pi); 0 for a rigid-body mode"),
    "damping_ratio": ("1", "-Re s/|s| (0 undamped; NaN for a rigid-body mode)"),
    "shape": ("m, rad", "[dr, dtheta] per body, world axes, real part; the entry of largest modulus exactly 1"),
    "shape_imag": ("m, rad", "imaginary part of the shape, same scaling"),
    "rigid_body": ("1", "whether the mode is a rigid-body mode (a motion nothing resists)"),
}


def write_modes(path, modes: dict) -> None:
    """Add the group ``/modes`` to the trajectory file at ``path``: ``modes`` maps every name of
    :data:`MODE_DATASETS` to its array."""
    with h5py.File(str(path), "a") as f:
        g = f.create_group("modes")
        for name, (units, desc) in MODE_DATASETS.items():
            ds = g.create_dataset(name, data=np.asarray(modes[name]))
            ds.attrs["units"] = units
            ds.attrs["description"] = desc

