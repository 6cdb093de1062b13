"""Registry of learners: name -> class, tasks, parameters with defaults, ranges and help.

The web form, the replay CLI and :func:`make` are all generated from these entries, so a
learner registered here works everywhere without further changes.

Each family module calls :func:`register` at import time; :mod:`learners` imports every
family module so that the registry is complete once ``import learners`` returns.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .base import QUERY_MODES, TASKS, Learner, state_from_bytes, state_to_bytes
from .params import Param


def delta_param(default: float = 1.0, help: str | None = None) -> Param:
    """The admin's query knob, shared by every learner: larger delta, more queries."""
    return Param("delta", default, float,
                 help or "query-sampling parameter: larger delta queries more labels",
                 low=0.0, low_open=True, log=True)


#: Parameters every learner accepts besides its own (the query mode and the random rate).
COMMON_PARAMS: tuple[Param, ...] = (
    Param("query", "active", str, "which items are queried: the published rule ('active'), "
          "Bernoulli(p) ('random', the random-query baseline) or every item ('all', supervised)",
          choices=QUERY_MODES),
    Param("p", 0.1, float, "query probability used when query='random'", low=0.0, high=1.0,
          low_open=True),
)


@dataclass(frozen=True)
class Spec:
    """A registered learner: ``cls(n_features, classes, **fixed, **params)`` builds it."""

    name: str
    cls: type[Learner]
    tasks: frozenset[str]
    params: tuple[Param, ...]
    summary: str
    fixed: dict[str, Any] = field(default_factory=dict)

    def all_params(self) -> tuple[Param, ...]:
        """Own parameters (delta first) followed by :data:`COMMON_PARAMS`."""
        return self.params + COMMON_PARAMS

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.all_params()}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "tasks": sorted(self.tasks), "summary": self.summary,
                "params": [p.describe() for p in self.all_params()]}


REGISTRY: dict[str, Spec] = {}


def register(name: str, cls: type[Learner], *, tasks: Sequence[str], params: Sequence[Param],
             summary: str, **fixed: Any) -> Spec:
    """Add a learner under ``name``; ``fixed`` are constructor kwargs that define the variant.

    ``params`` must include a ``delta`` entry (use :func:`delta_param`).
    """
    if name in REGISTRY:
        raise ValueError(f"learner {name!r} is registered twice")
    unknown = set(tasks) - set(TASKS)
    if unknown:
        raise ValueError(f"unknown task(s) {sorted(unknown)} for {name!r}; valid: {TASKS}")
    if not any(p.name == "delta" for p in params):
        raise ValueError(f"learner {name!r} must declare a delta parameter")
    spec = Spec(name, cls, frozenset(tasks), tuple(params), summary, dict(fixed))
    REGISTRY[name] = spec
    return spec


def get_spec(name: str) -> Spec:
    """The registry entry for ``name``; ValueError listing the valid names otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; valid: {', '.join(sorted(REGISTRY))}") from None


def names_for_task(task: str) -> list[str]:
    """Registered names supporting ``task`` (binary / multiclass / cost-sensitive), sorted."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    return sorted(n for n, s in REGISTRY.items() if task in s.tasks)


#: a new project's learner of each task, and the replay's without ``--algo``: ``auto`` (the
#: measured best of its candidates, chosen online: docs/algorithms/auto.md) for binary and
#: multiclass tasks; cost-sensitive tasks keep CSPAA (auto's candidates are not cost-sensitive)
DEFAULT_ALGORITHM: dict[str, str] = {"binary": "auto", "multiclass": "auto", "cost-sensitive": "cspaa"}


def default_algorithm(task: str) -> str:
    """The registered learner a new project of ``task`` starts with (:data:`DEFAULT_ALGORITHM`)."""
    if task not in DEFAULT_ALGORITHM:
        raise ValueError(f"task must be one of {tuple(DEFAULT_ALGORITHM)}, got {task!r}")
    return DEFAULT_ALGORITHM[task]


def validate_params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Defaults of ``name`` overlaid with ``params``, each validated; ValueError on any problem."""
    spec = get_spec(name)
    by_name = {p.name: p for p in spec.all_params()}
    unknown = set(params) - set(by_name)
    if unknown:
        raise ValueError(f"unknown parameter(s) {sorted(unknown)} for {name!r}; "
                         f"valid: {', '.join(sorted(by_name))}")
    out = spec.defaults()
    for key, value in params.items():
        out[key] = by_name[key].validate(value)
    return out


def make(name: str, *, n_features: int, classes: Sequence[Hashable], **params: Any) -> Learner:
    """Build learner ``name`` for ``n_features`` inputs and the given class values.

    Raises ValueError for an unknown name, a bad parameter (naming it and its valid range)
    or a class list the learner cannot take (e.g. three classes for a binary learner).
    """
    spec = get_spec(name)
    values = validate_params(name, params)
    if spec.cls.binary and len(classes) != 2:
        raise ValueError(f"{name!r} is a binary learner: classes must list exactly 2 values, "
                         f"got {len(classes)}")
    learner = spec.cls(n_features, classes, **spec.fixed, **values)
    learner.name = name
    return learner


def from_state(state: dict[str, Any]) -> Learner:
    """Rebuild a learner from :meth:`Learner.get_state` output; it continues identically."""
    meta = state["meta"]
    learner = make(meta["name"], n_features=meta["n_features"], classes=meta["classes"],
                   **meta["params"])
    learner.set_state(state)
    return learner


def to_bytes(learner: Learner) -> bytes:
    """The learner's full state as ``.npz`` bytes (no pickle)."""
    return state_to_bytes(learner.get_state())


def from_bytes(data: bytes) -> Learner:
    """Inverse of :func:`to_bytes`."""
    return from_state(state_from_bytes(data))
