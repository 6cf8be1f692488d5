"""The mechanism at a state (THEORY §12): one engine that every analysis stands on.

Each element kind's law gives, at a state of its points and axes, its generalized force and its
derivatives (:mod:`mbsim.elements.base`); this package gathers that state from the bodies
(:mod:`.gather`), runs the laws through one switch (:mod:`.laws`), applies the chain rule to the
bodies' unknowns (:mod:`.chain`) and scatters into the global system (:mod:`.assembly`).  Its public
face is :class:`Mechanism`: for a model and a state (q, v, t, λ), the forces f, the stiffness K,
damping C and mass M, the constraint rows Φ and their Jacobian G (:class:`Evaluation`); the
constrained equations at a state (initial accelerations, reactions, velocity projection); the frame
quantities of a run.  The generalized-α integrator (:mod:`mbsim.integrators`) stands on the same
functions.
"""
from .mechanism import Evaluation, Mechanism, SingularJoints, State  # noqa: F401
