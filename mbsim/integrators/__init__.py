"""Time integrators: a registry ``{name: class}`` so that a second scheme can sit beside the first.

:class:`Integrator` is everything the driver (:mod:`mbsim.driver`) uses of one;
the driver reads these members and calls these methods, and writes none of
an integrator's attributes.
"""
from __future__ import annotations

from typing import Protocol

from .generalized_alpha import AlphaParameters, GeneralizedAlpha, State, StepResult, StepStatus  # noqa: F401


class Integrator(Protocol):
    """The contract between the driver and a time integrator.

    1. ``name`` (str) is written to the result file's ``integrator`` attribute;
       ``params`` has ``rho_inf``, ``alpha_f``, ``alpha_m``, ``beta``, ``gamma``
       for the file's header.
    2. ``solver.kind`` names the linear solver (file attribute and summary).
    3. ``n_steps`` and ``n_iterations`` count the steps taken and Newton
       corrections applied; ``timing`` maps phase names to seconds.  A resumed
       run continues them with :meth:`continue_counts`.  ``n_floor`` counts the
       steps whose iteration ended at the round-off floor of the joints'
       equations (nearly dependent at a dead point; the run's message
       says so).
    4. ``initial_state()`` is the :class:`State` at t = 0 (initial
       accelerations included); ``powers(s)`` the dissipated and load powers
       of a state read back from a file.
    5. ``step(s, dt)`` takes one step and returns a :class:`StepResult`: a
       failed step leaves ``s`` usable and says why.
    6. ``restart(s)`` is called at every stored frame and returns the state
       to continue from (the integrator may drop history there).
    7. ``can_advance`` says whether ``advance(s, dt, n)`` and
       ``advance_frames(s, dt, k0, nframes, spf, buffers)`` can take blocks of
       fixed steps in compiled code; when they stop early the driver redoes
       the next step with ``step``.
    8. ``warm_up(s, dt, frame_every)`` compiles or loads what the run will
       call, before the clock starts, and leaves every counter as it was.
    9. ``multipliers(s)`` gives the joints' multipliers of a state read back
       from a file (those of the constrained equations at its time, THEORY
       §11), None for a model without joints.
    10. ``frame(s)`` gives the OUTPUT.md per-frame quantities of a state (the
        writer's frame), with ``_finite`` saying whether they are finite.
    11. Error-controlled steps (``time.tolerance``, THEORY §14): ``rescaled(s,
        dt)`` is ``s`` ready for a step of ``dt`` after one of another size (the
        scheme's own accelerations moved to it: second order across step
        changes), and ``accelerations(s)`` the true accelerations (a, α) of
        every body at a state and the joints' multipliers (the error estimate
        and the interpolated frames); where ``can_advance``,
        ``advance_controlled(s, ctl, settings, acc0, buffers, t_stop,
        max_steps)`` takes them in one compiled call.
    12. ``checkpoint(s)`` is everything the next steps read of a state, as
        named arrays (a result file's ``/checkpoint``: a run with
        error-controlled steps is resumed from it), and
        ``from_checkpoint(c)`` the state again, to the last bit.
    """

    name: str
    params: AlphaParameters
    solver: object  # has ``kind`` (str)
    n_steps: int
    n_iterations: int
    n_floor: int
    timing: dict

    def initial_state(self) -> State: ...

    def powers(self, s: State) -> tuple: ...

    def step(self, s: State, dt: float) -> StepResult: ...

    def restart(self, s: State) -> State: ...

    def multipliers(self, s: State): ...

    def frame(self, s: State) -> dict: ...

    def rescaled(self, s: State, dt: float) -> State: ...

    def accelerations(self, s: State) -> tuple: ...

    def advance_controlled(self, s: State, ctl, settings: tuple, acc0, buffers: dict, t_stop: float,
                           max_steps: int): ...

    def checkpoint(self, s: State) -> dict: ...

    def from_checkpoint(self, c: dict) -> State: ...

    def continue_counts(self, steps: int, iterations: int) -> None: ...

    def warm_up(self, s: State, dt: float, frame_every: int) -> None: ...

    @property
    def can_advance(self) -> bool: ...

    def advance(self, s: State, dt: float, nsteps: int): ...

    def advance_frames(self, s: State, dt: float, k0: int, nframes: int, spf: int, buffers: dict): ...


INTEGRATORS = {GeneralizedAlpha.name: GeneralizedAlpha}
