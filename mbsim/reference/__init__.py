"""Independent reference solver for the continuous equations of motion.

Integrates the physics of THEORY §1, §6, §7, §9 and §11 (joints) with a high-order
Runge–Kutta method of SciPy at tight tolerances, to verify the
generalized-α integrator.  Shares no code with ``mbsim.model``,
``mbsim.elements`` or ``mbsim.integrators``; imports only the scenario specs,
NumPy and SciPy.
"""
from .equations import Constraints, Energies, EquationsOfMotion, Forces, equations_of_motion
from .solve import ReferenceSolution, output_times, solve_reference

__all__ = ["Constraints", "Energies", "EquationsOfMotion", "Forces", "ReferenceSolution",
           "equations_of_motion", "output_times", "solve_reference"]
