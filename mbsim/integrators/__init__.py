"""Time integrators: a registry ``{name: class}`` so that a second scheme can sit beside the first."""
from .generalized_alpha import AlphaParameters, GeneralizedAlpha, State, StepResult, StepStatus  # noqa: F401

INTEGRATORS = {GeneralizedAlpha.name: GeneralizedAlpha}
