"""Online active learners: a pure numpy/scipy library (no Django).

``learners.make(name, n_features=..., classes=[...], **params)`` builds any registered
learner; ``learners.REGISTRY`` lists them with their tasks and parameters.
"""

from . import baselines, dada, paa, soal  # noqa: F401  (each module registers its family)
from .base import BlockDecisions, Decision, Learner
from .registry import (
    REGISTRY,
    Param,
    Spec,
    from_bytes,
    from_state,
    get_spec,
    make,
    names_for_task,
    to_bytes,
    validate_params,
)

__all__ = [
    "REGISTRY", "BlockDecisions", "Decision", "Learner", "Param", "Spec", "from_bytes",
    "from_state", "get_spec", "make", "names_for_task", "to_bytes", "validate_params",
]
