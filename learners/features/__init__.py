"""Featurizers: raw items -> sparse float64 rows, shared by the app, replay and exported models.

One module per kind (docs/architecture.md, ``learners/``):

* ``image`` (:mod:`.image`): bytes of an image file -> grayscale pixels in [0, 1].
* ``text`` (:mod:`.text`): str (or UTF-8 bytes) -> hashed word unigrams + bigrams,
  sublinear counts, L2-normalised.
* ``url`` (:mod:`.url`): str -> hashed lexical tokens plus character counts, L2-normalised.
* ``vectors`` (:mod:`.vectors`): ``[[index, value], ...]`` or ``{index: value}`` -> the vector.

Usage::

    f = make_featurizer(default_config("text"))          # or a stored config dict
    X = f.transform(["free entry now", "see you at 5"])   # csr (2, f.n_features)
    make_featurizer(f.config())                           # identical featurizer

A config is a JSON-able dict ``{"kind": ..., "version": ..., <options>}``; missing options
take their defaults. Kind modules are imported on first use, so ``import learners`` does not
pay for Pillow or scikit-learn.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, runtime_checkable

import scipy.sparse as sp

from .base import BaseFeaturizer, FeatureError

#: kind -> module (relative to this package) defining ``FEATURIZER``, the class for that kind.
_MODULES = {"image": ".image", "text": ".text", "url": ".url", "vectors": ".vectors"}
KINDS = tuple(_MODULES)


@runtime_checkable
class Featurizer(Protocol):
    """What the app, the replay and exported models rely on."""

    kind: str  # "image" | "text" | "url" | "vectors"
    n_features: int

    def config(self) -> dict[str, Any]: ...

    def transform_one(self, raw: Any) -> sp.csr_matrix: ...

    def transform(self, raws: Any) -> sp.csr_matrix: ...


def featurizer_class(kind: Any) -> type[BaseFeaturizer]:
    """The featurizer class for ``kind``; ValueError listing the valid kinds otherwise."""
    if kind not in _MODULES:
        raise ValueError(f"unknown featurizer kind {kind!r}; valid: {', '.join(KINDS)}")
    return importlib.import_module(_MODULES[kind], __name__).FEATURIZER


def default_config(kind: str) -> dict[str, Any]:
    """The default config of ``kind`` (every option present, with its default)."""
    return featurizer_class(kind).default_config()


def make_featurizer(config: dict[str, Any]) -> Featurizer:
    """Build a featurizer from a config dict.

    Raises ValueError naming the problem: not a dict, missing or unknown ``kind``, a
    ``version`` this code does not produce, an unknown option or a bad option value.
    """
    if not isinstance(config, dict):
        raise ValueError(f"featurizer config must be a dict, got {type(config).__name__}")
    if "kind" not in config:
        raise ValueError(f"featurizer config has no 'kind' (valid kinds: {', '.join(KINDS)})")
    options = dict(config)
    cls = featurizer_class(options.pop("kind"))
    version = options.pop("version", cls.version)
    if version != cls.version:
        raise ValueError(f"{cls.kind} featurizer config has version {version!r}, but this code "
                         f"implements version {cls.version}; the features would differ")
    return cls(**options)


__all__ = ["KINDS", "FeatureError", "Featurizer", "default_config", "featurizer_class",
           "make_featurizer"]
