"""Analyses at a state (THEORY §12): static equilibrium, linearization, modes.

They stand on :class:`mbsim.mechanics.Mechanism` (forces, stiffness K, damping C, mass M, the joints'
rows Φ and Jacobian G at a state) and on nothing of the time step:

- :mod:`.statics`: the equilibrium at rest, Newton on the scaled saddle-point system with load
  stepping, a line search and a limit on rotation updates; its stability from the reduced stiffness;
  the free motions under load that have no equilibrium;
- :mod:`.linear`: the linearized equations about a state, the constraint null space, the first-order
  (state-space) form in independent coordinates;
- :mod:`.modes`: damped and undamped modes, dense on the null space for small models, sparse
  shift-invert on the saddle-point pencil for large ones.
"""
from .linear import Linearization, linearize_state  # noqa: F401
from .modes import ModeSet, compute_modes  # noqa: F401
from .statics import Equilibrium, NoEquilibrium, StaticsFailed, solve_statics  # noqa: F401
