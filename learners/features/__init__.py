"""Featurizers: raw items -> sparse float64 rows, shared by the app, replay and exported models.

One module per kind (docs/architecture.md, ``learners/``):

* ``image``: ``pixels`` (:mod:`.image`): bytes of an image file -> grayscale pixels in [0, 1];
  ``deskew-hog`` (:mod:`.image_hog`): deskewed histograms of oriented gradients (scikit-image).
* ``text``: ``hashed-ngrams`` (:mod:`.text`): str (or UTF-8 bytes) -> hashed word unigrams +
  bigrams, sublinear counts, L2-normalised; ``minilm`` (:mod:`.embedding`): the 384-d
  all-MiniLM-L6-v2 sentence embedding (weights from an installed package, run in numpy);
  ``minilm-ngrams`` and ``minilm-chars`` (:mod:`.text_hybrid`): that embedding beside hashed
  word n-grams (and, for ``minilm-chars``, character n-grams); ``wordllama-ngrams``
  (:mod:`.text_static`): a static token embedding (WordLlama's table, from an installed package)
  beside the same word n-grams, about 30x faster.
* ``url``: ``url-ngrams`` (:mod:`.url_ngrams`): str -> hashed character 2- to 5-grams of the
  whole URL, L2-normalised; ``url-lexical`` (:mod:`.url`): hashed lexical tokens plus character
  counts, L2-normalised.
* ``vectors`` (:mod:`.vectors`): ``[[index, value], ...]`` or ``{index: value}`` -> the vector.

Usage::

    f = make_featurizer(default_config("text"))          # or a stored config dict
    X = f.transform(["free entry now", "see you at 5"])   # csr (2, f.n_features)
    make_featurizer(f.config())                           # identical featurizer

A config is a JSON-able dict ``{"kind": ..., "name": ..., "version": ..., <options>}``;
missing options take their defaults (a project being created gets
:func:`new_project_config`: the featurizer's new-project values, e.g. minilm's intercept column,
where they differ). ``name`` picks one of the kind's featurizers
(:func:`featurizer_names`); a config without it (stored before names existed) means the
kind's original featurizer, so its features never change. :data:`DEFAULT` names a new
project's featurizer of each kind. Featurizer modules are imported on first use, so
``import learners`` does not pay for Pillow, scikit-learn or the text embedding.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import scipy.sparse as sp

from .base import BaseFeaturizer, FeatureError

#: featurizer name -> (kind, module relative to this package defining ``FEATURIZER``, or
#: ``module:Class`` for another class of the module), each kind's names in the order they are
#: listed to users.
_FEATURIZERS = {
    "pixels": ("image", ".image"),
    "deskew-hog": ("image", ".image_hog"),
    "hashed-ngrams": ("text", ".text"),
    "minilm": ("text", ".embedding"),
    "minilm-ngrams": ("text", ".text_hybrid"),
    "minilm-chars": ("text", ".text_hybrid:ShortTextFeaturizer"),
    "wordllama-ngrams": ("text", ".text_static"),
    "url-ngrams": ("url", ".url_ngrams"),
    "url-lexical": ("url", ".url"),
    "vectors": ("vectors", ".vectors"),
}
KINDS = ("image", "text", "url", "vectors")
#: what a config without ``name`` means: the one featurizer each kind had before names existed.
ORIGINAL = {"image": "pixels", "text": "hashed-ngrams", "url": "url-lexical", "vectors": "vectors"}
#: a new project's featurizer of each kind: the best measured one (benchmarks/FEATURIZERS.md).
DEFAULT = {**ORIGINAL, "image": "deskew-hog", "text": "minilm-ngrams", "url": "url-ngrams"}


#: items/s of each featurizer as benchmarks/featurizers.py measured them (it writes this file)
SPEEDS_FILE = Path(__file__).with_name("speeds.json")


def measured_speed(name: str) -> float | None:
    """Featurizing speed of featurizer ``name`` in items/s from the last full run of
    benchmarks/featurizers.py (``SPEEDS_FILE``); None when it was not measured."""
    try:
        speeds = json.loads(SPEEDS_FILE.read_text())
    except FileNotFoundError:
        return None
    value = speeds.get(name)
    return float(value) if value is not None else None


@runtime_checkable
class Featurizer(Protocol):
    """What the app, the replay and exported models rely on."""

    kind: ClassVar[str]  # "image" | "text" | "url" | "vectors"
    n_features: int

    def config(self) -> dict[str, Any]: ...

    def transform_one(self, raw: Any) -> sp.csr_matrix: ...

    def transform(self, raws: Any) -> sp.csr_matrix: ...


def featurizer_names(kind: Any) -> list[str]:
    """Names of the featurizers of ``kind`` (ValueError listing the valid kinds otherwise)."""
    if kind not in KINDS:
        raise ValueError(f"unknown featurizer kind {kind!r}; valid: {', '.join(KINDS)}")
    return [name for name, (k, _) in _FEATURIZERS.items() if k == kind]


def featurizer_class(kind: Any, name: Any = None) -> type[BaseFeaturizer]:
    """The class of featurizer ``name`` of ``kind`` (None: the kind's :data:`ORIGINAL`).

    ValueError listing the valid kinds, or the kind's valid names, otherwise.
    """
    names = featurizer_names(kind)
    name = ORIGINAL[kind] if name is None else name
    if name not in names:
        raise ValueError(f"unknown {kind} featurizer {name!r}; valid: {', '.join(names)}")
    module, _, attribute = _FEATURIZERS[name][1].partition(":")
    cls: type[BaseFeaturizer] = getattr(importlib.import_module(module, __name__), attribute or "FEATURIZER")
    return cls


def default_config(kind: str, name: str | None = None) -> dict[str, Any]:
    """The config of featurizer ``name`` of ``kind`` (None: :data:`DEFAULT`), every option
    present with its default."""
    return featurizer_class(kind, DEFAULT.get(kind) if name is None else name).default_config()


def new_project_config(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with each option it does not give at the value a new project gets
    (``new_project`` of the featurizer class, else the option's default): what a project being
    created stores. A stored config is read with :func:`make_featurizer` instead, where a
    missing option means its default. ValueError as :func:`make_featurizer` for a bad kind or name.
    """
    if not isinstance(config, dict) or "kind" not in config:
        return config  # make_featurizer names the problem
    return {**featurizer_class(config["kind"], config.get("name")).default_config(), **config}


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
    cls = featurizer_class(options.pop("kind"), options.pop("name", None))
    version = options.pop("version", cls.version)
    if version != cls.version:
        raise ValueError(f"{cls.kind} featurizer config has version {version!r}, but this code "
                         f"implements version {cls.version}; the features would differ")
    return cls(**options)


__all__ = ["DEFAULT", "KINDS", "ORIGINAL", "SPEEDS_FILE", "FeatureError", "Featurizer", "default_config",
           "featurizer_class", "featurizer_names", "make_featurizer", "measured_speed", "new_project_config"]
