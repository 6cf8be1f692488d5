"""Driver of the reference solver: integrate with SciPy and collect the output.

`solve_reference` integrates the continuous equations of `equations` with a
high-order explicit Runge–Kutta method of ``scipy.integrate.solve_ivp`` at
tight tolerances and returns the same quantities, in the same shapes, as the
trajectory file of OUTPUT.md, so that a generalized-α run can be compared
with it frame by frame.

With joints the integration runs in segments that end at output times, a few
integrator steps long at least, and the state is projected back onto the
constraint manifold at the end of each (`EquationsOfMotion.project`) before
the next segment starts.
"""
from __future__ import annotations

import time as _time
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from mbsim.scenario.spec import Scenario

from .equations import equations_of_motion


@dataclass
class ReferenceSolution:
    """Reference trajectory at the requested times (world frame, SI if input is SI).

    T frames, B declared bodies (fixed included, ``world`` excluded, scenario
    order), C connectors, J joints (scenario order).

    Attributes
    ----------
    time : ndarray, (T,)
    position, velocity, acceleration : ndarray, (T, B, 3)
        Centre of mass [m, m/s, m/s²]; fixed bodies keep their initial
        position with zero velocity and acceleration.
    orientation : ndarray, (T, B, 4)
        Unit quaternion [w, x, y, z], body-to-world, sign chosen so that
        w ≥ 0.  The series therefore jumps to −q when w crosses zero:
        compare orientations up to sign (or as rotation matrices).
    angular_velocity, angular_acceleration : ndarray, (T, B, 3)
        Spatial [rad/s, rad/s²].
    connector_force, connector_moment : ndarray, (T, C, 3)
        Force [N] and pure moment [N·m] on body A (OUTPUT.md ``/connectors``).
    connector_length : ndarray, (T, C)
        Distance between the insertion points [m]; NaN for torsional dampers.
    kinetic, potential, dissipated, external_work : ndarray, (T,)
        Energies [J] of THEORY §9; ``dissipated`` and ``external_work`` are
        integrated with the motion, from 0 at t = 0; ``external_work``
        includes the work of the joint drives.
    linear_momentum, angular_momentum : ndarray, (T, 3)
        Σ m v and Σ (r × m v + J ω) about the origin, moving bodies.
    nfev : int
        Right-hand-side evaluations of the integrator.
    method : str
    rtol, atol : float
        Integrator settings used.
    wall_time_s : float
        Wall time of the whole call [s].
    body_names, connector_names : tuple of str
    joint_force, joint_moment : ndarray, (T, J, 3)
        Reaction force [N] each joint exerts on its body A (B receives the
        opposite) and its moment [N·m] about the joint's point (a distance
        joint: A's point), drive force and torque included (OUTPUT.md
        ``/joints``).  Computed from the state at each frame by the index-1
        solve; with redundant joints the minimum-norm split of the multipliers.
    joint_position_error, joint_angle_error : ndarray, (T, J)
        Norm of each joint's translational [m] and rotational [rad]
        constraint residuals (0 where it has none).
    joint_names : tuple of str
    """

    time: np.ndarray
    position: np.ndarray
    orientation: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray
    acceleration: np.ndarray
    angular_acceleration: np.ndarray
    connector_force: np.ndarray
    connector_moment: np.ndarray
    connector_length: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray
    dissipated: np.ndarray
    external_work: np.ndarray
    linear_momentum: np.ndarray
    angular_momentum: np.ndarray
    nfev: int
    method: str
    rtol: float
    atol: float
    wall_time_s: float
    body_names: tuple = ()
    connector_names: tuple = ()
    joint_force: np.ndarray = None
    joint_moment: np.ndarray = None
    joint_position_error: np.ndarray = None
    joint_angle_error: np.ndarray = None
    joint_names: tuple = ()

    def frames(self) -> dict:
        """The solution keyed by OUTPUT.md dataset paths (for :func:`mbsim.io.writer.write_trajectory`).

        The solver datasets hold 0 iterations, NaN residuals and the spacing of
        the requested times (the reference takes its own adaptive steps).  The
        ``joints/`` datasets are present only when there are joints (OUTPUT.md).
        """
        T = len(self.time)
        step = np.concatenate(([0.0], np.diff(self.time)))
        joints = {} if not self.joint_names else {
            "joints/force": self.joint_force, "joints/moment": self.joint_moment,
            "joints/position_error": self.joint_position_error,
            "joints/angle_error": self.joint_angle_error,
        }
        return {
            "time": self.time, "bodies/position": self.position, "bodies/orientation": self.orientation,
            "bodies/velocity": self.velocity, "bodies/angular_velocity": self.angular_velocity,
            "bodies/acceleration": self.acceleration, "bodies/angular_acceleration": self.angular_acceleration,
            "connectors/force": self.connector_force, "connectors/moment": self.connector_moment,
            "connectors/length": self.connector_length, "energy/kinetic": self.kinetic,
            "energy/potential": self.potential, "energy/dissipated": self.dissipated,
            "energy/external_work": self.external_work, "momentum/linear": self.linear_momentum,
            "momentum/angular": self.angular_momentum, "solver/iterations": np.zeros(T, dtype=int),
            "solver/residual_norm": np.full(T, np.nan), "solver/step": step, **joints,
        }


def _stack(items, name):
    return np.array([getattr(x, name) for x in items])


def output_times(end: float, interval: float) -> np.ndarray:
    """Output grid of SCENARIO.md: 0, interval, 2·interval, … and ``end`` itself.

    A grid point within 1e-9·interval of ``end`` is replaced by ``end`` so
    that rounding never yields a near-duplicate last frame.
    """
    k = np.arange(int(np.floor(end / interval * (1.0 + 1e-12))) + 1)
    t = k * interval
    return np.append(t[t < end - 1e-9 * interval], end)


SEGMENT_STEPS = 1
"""With joints, the least length of a segment between projections, in integrator steps.

1: every output time at least a step after the last projection is a segment's
end, integrated to exactly (as accurate as a step's end; a double pendulum
over 10 s, frames every 10 ms, rtol 1e-12: energy drift 4e-12 J, against
2.4e-11 J with 4, where most frames are interpolated).  Denser output times
cost about 2 steps per step (3.7× the evaluations of an unprojected run at
1 ms frames, 1.9× with 4)."""


def _integrate_projected(eom, times, method, rtol, atol):
    """Integrate in segments, projecting onto the joints at the end of each.

    A segment ends exactly at an output time (no interpolation there) at
    least `SEGMENT_STEPS` of the integrator's own steps after it starts (the
    largest step of the previous segment; doubled when a segment took one
    cut step only).  So the state is projected at every output time when the
    output times are further apart than that, and every few steps when they
    are closer; output times inside a segment come from the method's dense
    output (7th order for DOP853), as without joints, and are projected for
    output only (their interpolation error, ~rtol, would otherwise show as
    a joint residual).  Each segment starts with the last step size.

    Returns the states at ``times`` (T, 13 N + 2) and the number of
    right-hand-side evaluations.
    """
    stops = np.unique(times[times > 0.0])
    states = {0.0: eom.y0}
    y, t0, nfev, step, i = eom.y0, 0.0, 0, 0.0, 0
    while i < stops.size:
        j = max(i, min(int(np.searchsorted(stops, t0 + SEGMENT_STEPS * step)), stops.size - 1))
        t1 = stops[j]
        sol = solve_ivp(eom.rhs, (t0, t1), y, method=method, rtol=rtol, atol=atol, dense_output=j > i,
                        first_step=min(step, t1 - t0) if step > 0.0 else None)
        if not sol.success:
            raise RuntimeError(f"reference solver ({method}) failed: {sol.message}")
        nfev += int(sol.nfev)
        if j > i:  # interpolated frames are projected too, but the integration goes on unprojected
            states.update((t, eom.project(yt, t)) for t, yt in zip(stops[i:j], sol.sol(stops[i:j]).T))
        steps = np.diff(sol.t)  # the last one is cut to land on t1
        step = steps[:-1].max() if steps.size > 1 else 2.0 * max(step, t1 - t0)
        y, t0, i = eom.project(sol.y[:, -1], t1), t1, j + 1
        states[t1] = y
    return np.array([states[t] for t in times]), nfev


def solve_reference(scenario: Scenario, times=None, *, end=None, method="DOP853",
                    rtol=1e-11, atol=1e-12, project=True, poses=None) -> ReferenceSolution:
    """Integrate the continuous equations of motion of ``scenario``.

    Parameters
    ----------
    scenario : Scenario
        Validated scenario (``mbsim.scenario.spec``).
    times : array_like, (T,), optional
        Non-decreasing output times ≥ 0 [s]; the integration runs from 0 to
        ``times[-1]``.  Default: `output_times` (``end``, ``output.interval``).
    end : float, optional
        Final time for the default grid; default ``scenario.time.end``.
        Not allowed together with ``times``.
    method : str
        ``solve_ivp`` method (an explicit one: the equations are not stiff
        unless the scenario is).
    rtol, atol : float
        ``solve_ivp`` tolerances, applied to every state component.
    project : bool
        With joints: project the state onto the constraint manifold at every
        output time (every few integrator steps where output times are closer
        than that; `_integrate_projected`) and restart the integration from
        there (default).  False
        integrates the index-1 equations in one go and lets them drift (for
        measuring the drift).  Without joints it has no effect.
    poses : (positions (B, 3), orientations (B, 4)), optional
        Start from these poses of the declared bodies (scenario order) at rest instead of the scenario's
        initial state: the equilibrium of ``initial: equilibrium``, which the caller solves (the reference
        integrates the dynamics from it; it does not search equilibria).

    Returns
    -------
    ReferenceSolution

    Raises
    ------
    RuntimeError
        If ``solve_ivp`` fails (its message is included), a spring with
        rest length > 0 reaches zero length, or the joints cannot be closed.
    """
    start = _time.perf_counter()
    if times is None:
        times = output_times(scenario.time.end if end is None else float(end),
                             scenario.output.interval)
    elif end is not None:
        raise ValueError("give either `times` or `end`, not both")
    times = np.asarray(times, dtype=float).reshape(-1)
    if times.size == 0 or times[0] < 0.0 or np.any(np.diff(times) < 0.0):
        raise ValueError("`times` must be a non-empty, non-decreasing sequence of times >= 0")

    eom = equations_of_motion(scenario)
    if poses is not None:
        eom.start_at(*poses)
    if eom.joint_names and project:
        states, nfev = _integrate_projected(eom, times, method, rtol, atol)
    elif times[-1] > 0.0:
        sol = solve_ivp(eom.rhs, (0.0, times[-1]), eom.y0, method=method, t_eval=times,
                        rtol=rtol, atol=atol)
        if not sol.success:
            raise RuntimeError(f"reference solver ({method}) failed: {sol.message}")
        states, nfev = sol.y.T, int(sol.nfev)
    else:  # nothing to integrate: every requested frame is the initial state
        states, nfev = np.tile(eom.y0, (times.size, 1)), 0

    eom.restart_turns()  # the frames from t = 0 again: the angles counted through full turns along them
    frames = [(eom.body_states(y), eom.forces(y, t), eom.energies(y, t), eom.split(y)[4:])
              for t, y in zip(times, states)]
    bodies, forces, energies, work = zip(*frames)
    r, q, v, w = (np.array(a) for a in zip(*bodies))
    q = np.where(q[..., :1] < 0.0, -q, q)  # canonical sign, documented above
    return ReferenceSolution(
        time=times, position=r, orientation=q, velocity=v, angular_velocity=w,
        acceleration=_stack(forces, "acceleration"),
        angular_acceleration=_stack(forces, "angular_acceleration"),
        connector_force=_stack(forces, "connector_force").reshape(times.size, -1, 3),
        connector_moment=_stack(forces, "connector_moment").reshape(times.size, -1, 3),
        connector_length=_stack(forces, "connector_length").reshape(times.size, -1),
        kinetic=_stack(energies, "kinetic"), potential=_stack(energies, "potential"),
        dissipated=np.array([d for d, _ in work]), external_work=np.array([e for _, e in work]),
        linear_momentum=_stack(energies, "linear_momentum"),
        angular_momentum=_stack(energies, "angular_momentum"),
        nfev=nfev, method=method, rtol=rtol, atol=atol,
        wall_time_s=_time.perf_counter() - start,
        body_names=eom.body_names, connector_names=eom.connector_names,
        joint_force=_stack(forces, "joint_force").reshape(times.size, -1, 3),
        joint_moment=_stack(forces, "joint_moment").reshape(times.size, -1, 3),
        joint_position_error=_stack(forces, "joint_position_error").reshape(times.size, -1),
        joint_angle_error=_stack(forces, "joint_angle_error").reshape(times.size, -1),
        joint_names=eom.joint_names,
    )
