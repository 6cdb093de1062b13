"""Online active learners: a pure numpy/scipy library (no Django).

``learners.make(name, n_features=..., classes=[...], **params)`` builds any registered
learner; ``learners.REGISTRY`` lists them with their tasks and parameters.
``learners.features`` turns raw items into vectors; ``learners.load_model(path)`` reads an
exported model (``save_model``) that featurizes and predicts raw items.
"""

from typing import TYPE_CHECKING, Any

from . import auto, baselines, dada, kmc, oasis, paa, soal  # noqa: F401  (each module registers its family)
from .base import BlockDecisions, Decision, Learner
from .registry import (
    DEFAULT_ALGORITHM,
    REGISTRY,
    Param,
    Spec,
    default_algorithm,
    from_bytes,
    from_state,
    get_spec,
    make,
    names_for_task,
    to_bytes,
    validate_params,
)

if TYPE_CHECKING:
    from .model_file import ExportedModel, load_model, save_model

# exported models (featurizers, the batch refit and scipy.optimize behind them) load on first use:
# a replay that never touches them should not pay their import (docs/performance.md)
_LAZY = {"ExportedModel", "load_model", "save_model"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import model_file

        return getattr(model_file, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_ALGORITHM", "REGISTRY", "BlockDecisions", "Decision", "ExportedModel", "Learner", "Param",
    "Spec", "default_algorithm", "from_bytes",
    "from_state", "get_spec", "load_model", "make", "names_for_task", "save_model", "to_bytes",
    "validate_params",
]
