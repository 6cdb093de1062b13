"""Featurizers: raw items -> sparse float64 rows, shared by the app, replay and exported models.

One module per featurizer; each kind has one or more, chosen by name (DESIGN.md section 2,
``features/``; docs/FEATURES.md):

* ``image``: ``pixels`` (:mod:`.image`): bytes of an image file -> grayscale pixels in [0, 1].
* ``text``: ``hashed`` (:mod:`.text`): str (or UTF-8 bytes) -> hashed word unigrams + bigrams,
  sublinear counts, L2-normalised; ``minilm`` (:mod:`.embedding`): 384-dimensional
  all-MiniLM-L6-v2 sentence embeddings (weights from an installed package, run in numpy).
* ``url``: ``hashed`` (:mod:`.url`): str -> hashed lexical tokens plus character counts.
* ``vectors``: ``vectors`` (:mod:`.vectors`): ``[[index, value], ...]`` or ``{index: value}``.

Usage::

    f = make_featurizer(default_config("text"))          # the default; or a stored config
    featurizer_names("text")                             # ("hashed", "minilm")
    X = f.transform(["free entry now", "see you at 5"])   # csr (2, f.n_features)
    make_featurizer(f.config())                           # identical featurizer

A config is a JSON-able dict ``{"kind": ..., "featurizer": <name>, "version": ..., <options>}``;
missing options take their defaults, a missing ``featurizer`` the kind's legacy one.
Featurizer modules are imported on first use, so ``import learners`` does not pay for Pillow,
scikit-learn or the embedding model.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, runtime_checkable

import scipy.sparse as sp

from .base import BaseFeaturizer, FeatureError

#: kind -> featurizer name -> module (relative to this package) defining ``FEATURIZER``, the
#: class. The first name of a kind is its legacy featurizer: a stored config without a
#: ``"featurizer"`` key (written before there was a choice) means that one.
_MODULES = {
    "image": {"pixels": ".image"},
    "text": {"hashed": ".text", "minilm": ".embedding"},
    "url": {"hashed": ".url"},
    "vectors": {"vectors": ".vectors"},
}
KINDS = tuple(_MODULES)
#: a new project's featurizer per kind: the best measured one (benchmarks/FEATURIZERS.md)
DEFAULTS = {"image": "pixels", "text": "minilm", "url": "hashed", "vectors": "vectors"}


@runtime_checkable
class Featurizer(Protocol):
    """What the app, the replay and exported models rely on."""

    kind: str  # "image" | "text" | "url" | "vectors"
    name: str  # the featurizer's name within its kind (featurizer_names)
    n_features: int

    def config(self) -> dict[str, Any]: ...

    def transform_one(self, raw: Any) -> sp.csr_matrix: ...

    def transform(self, raws: Any) -> sp.csr_matrix: ...


def _check_kind(kind: Any) -> None:
    if kind not in _MODULES:
        raise ValueError(f"unknown featurizer kind {kind!r}; valid: {', '.join(KINDS)}")


def featurizer_names(kind: str) -> tuple[str, ...]:
    """The featurizer names of ``kind``, legacy one first; ValueError for an unknown kind."""
    _check_kind(kind)
    return tuple(_MODULES[kind])


def default_name(kind: str) -> str:
    """The featurizer a new project of ``kind`` gets; ValueError for an unknown kind."""
    _check_kind(kind)
    return DEFAULTS[kind]


def featurizer_class(kind: Any, name: Any = None) -> type[BaseFeaturizer]:
    """The class of featurizer ``name`` of ``kind`` (None: the legacy one, see ``_MODULES``).

    ValueError listing the valid kinds or names otherwise.
    """
    _check_kind(kind)
    names = _MODULES[kind]
    if name is None:
        name = next(iter(names))
    if name not in names:
        raise ValueError(f"unknown {kind} featurizer {name!r}; valid: {', '.join(names)}")
    return importlib.import_module(names[name], __name__).FEATURIZER


def default_config(kind: str, name: str | None = None) -> dict[str, Any]:
    """The config (every option present, with its default) of featurizer ``name`` of ``kind``;
    without ``name``, of the kind's default (:func:`default_name`)."""
    return featurizer_class(kind, name or default_name(kind)).default_config()


def make_featurizer(config: dict[str, Any]) -> Featurizer:
    """Build a featurizer from a config dict ``{"kind", "featurizer", "version", <options>}``.

    A missing ``featurizer`` means the kind's legacy featurizer (configs stored before there
    was a choice); missing options take their defaults. Raises ValueError naming the
    problem: not a dict, missing or unknown ``kind``, unknown ``featurizer``, a ``version``
    this code does not produce, an unknown option or a bad option value.
    """
    if not isinstance(config, dict):
        raise ValueError(f"featurizer config must be a dict, got {type(config).__name__}")
    if "kind" not in config:
        raise ValueError(f"featurizer config has no 'kind' (valid kinds: {', '.join(KINDS)})")
    options = dict(config)
    cls = featurizer_class(options.pop("kind"), options.pop("featurizer", None))
    version = options.pop("version", cls.version)
    if version != cls.version:
        raise ValueError(f"{cls.kind} featurizer {cls.name!r} config has version {version!r}, but "
                         f"this code implements version {cls.version}; the features would differ")
    return cls(**options)


__all__ = ["DEFAULTS", "KINDS", "FeatureError", "Featurizer", "default_config", "default_name",
           "featurizer_class", "featurizer_names", "make_featurizer"]
