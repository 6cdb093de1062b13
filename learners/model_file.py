"""Exported models: one self-describing ``.npz`` (learner + featurizer + card), no pickle.

Layout of the ``.npz`` written by :func:`save_model` (every entry a numeric numpy array, read
back with ``np.load(..., allow_pickle=False)``):

* ``format``: UTF-8 JSON ``{"format": "learners-model", "version": 1}`` as uint8;
* ``learner_state``: the bytes of :func:`learners.base.state_to_bytes` (itself an ``.npz``
  with the learner's arrays and JSON meta) as uint8;
* ``featurizer``: the featurizer's config as UTF-8 JSON in uint8;
* ``card``: the model card as UTF-8 JSON in uint8;
* ``refit`` (only when the export kept a batch refit, docs/algorithms/refit.md): the bytes of
  :func:`learners.base.state_to_bytes` of the :class:`learners.refit.LinearModel` that predicts
  in place of the online learner. The card's ``model`` record says which one predicts
  (``"used": "refit"`` or ``"online"``) and how that was checked.

The card is also written beside the model as ``<name>.json`` for people; loading uses only
the ``.npz``. Both files are written to temporary names and renamed into place, so a failed
export leaves no half-written model.
"""

from __future__ import annotations

import io
import json
import os
import uuid
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .base import Learner, state_from_bytes, state_to_bytes
from .features import Featurizer, make_featurizer
from .refit import NEIGHBOURS, LinearModel, RefitResult
from .registry import from_state

FORMAT = {"format": "learners-model", "version": 1}
_ENTRIES = ("format", "learner_state", "featurizer", "card")


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):  # numpy scalars in metrics, counters
        return obj.item()
    raise TypeError(f"{type(obj).__name__} is not JSON-able")


def _json_bytes(value: Any, what: str, indent: int | None = None) -> bytes:
    try:
        return json.dumps(value, allow_nan=False, default=_json_default, indent=indent,
                          sort_keys=indent is not None).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the {what} is not JSON-able: {exc}") from None


def _u8(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8)


def refit_bytes(model: LinearModel) -> bytes:
    """The bytes of the file's ``refit`` entry for ``model`` (:func:`learners.base.state_to_bytes`
    of its state, no pickle); also how the app stores a refit job's model."""
    return state_to_bytes(model.get_state())


def refit_from_bytes(data: bytes) -> LinearModel:
    """Inverse of :func:`refit_bytes`; ValueError for bytes that are not such a model."""
    return LinearModel.from_state(state_from_bytes(data))


def card_path(path: str | os.PathLike[str]) -> Path:
    """The human-readable card beside a model: ``model.npz`` -> ``model.json``."""
    return Path(path).with_suffix(".json")


def refit_description(check: dict[str, Any]) -> str:
    """What the refit of a check's record (:attr:`learners.refit.RefitResult.check`) is, in words:
    its weighting and L2, whether it was self-trained and whether it predicts with neighbours."""
    weights = "importance weights 1/q" if check.get("weighting") == "1/q" else "every label weighing 1"
    parts = [f"softmax regression fitted on the labelled items with {weights}, l2 {check.get('l2', 0):g}"]
    if check.get("pseudo_labels"):
        parts.append(f"self-trained on {check.get('unlabelled', 0)} items without a label")
    if (check.get("neighbours_at_prediction") or {}).get("used"):
        parts.append(f"predicting with its {NEIGHBOURS} nearest of "
                     f"{check['neighbours_at_prediction'].get('memory_rows')} rows it carries")
    return "; ".join(parts) + " (docs/algorithms/refit.md)"


def model_record(refit: RefitResult | None) -> dict[str, Any]:
    """The card's ``model`` record: which model predicts and how that was decided.

    ``used``: ``"refit"`` (the batch fit, kept when it beat the online learner in the check of
    :func:`learners.refit.refit`) or ``"online"``; ``check``: that check's record (None when no
    refit was tried).
    """
    if refit is None:
        return {"used": "online", "check": None,
                "why": "no batch refit was tried; the online learner as the stream left it"}
    used = "refit" if refit.chosen == "refit" and refit.model is not None else "online"
    return {"used": used, "check": refit.check,
            "why": (f"the batch refit ({refit_description(refit.check)}) beat the online learner in the check"
                    if used == "refit"
                    else "the online learner as the stream left it: the batch refit "
                         + ("did not beat it in the check" if refit.model is not None
                            else "was not tried: " + str(refit.check.get("skipped"))))}


def full_card(learner: Learner, featurizer: Featurizer, card: dict[str, Any],
              refit: RefitResult | None = None) -> dict[str, Any]:
    """The caller's card plus what makes the file self-describing.

    Adds ``learner`` (name, params, classes, n_features, items seen, labels applied, and the
    learner's :meth:`Learner.model_notes` when it has any), ``featurizer`` (its config) and
    ``model`` (:func:`model_record` of ``refit``: which model predicts). The caller's own keys
    (algorithm, delta, metrics, ...) are kept as given; a caller value for ``learner``,
    ``featurizer`` or ``model`` that contradicts the objects is a ValueError.
    """
    if not isinstance(card, dict):
        raise ValueError(f"card must be a dict, got {type(card).__name__}")
    own = {
        "learner": {"name": learner.name, "params": learner.get_params(),
                    "classes": list(learner.classes), "n_features": learner.n_features,
                    "n_seen": learner.n_seen, "n_labels": learner.n_labels},
        "featurizer": featurizer.config(),
        "model": model_record(refit),
    }
    notes = learner.model_notes()
    if notes:  # e.g. OASIS's input projection (docs/algorithms/oasis.md)
        own["learner"]["notes"] = notes
    for key, value in own.items():
        if key in card and json.loads(_json_bytes(card[key], f"card's {key!r}")) != value:
            raise ValueError(f"card[{key!r}] = {card[key]!r} contradicts the {key} being saved ({value!r})")
    return {**card, **own}


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a fresh temporary file beside ``path``, then rename it into place."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "xb") as fh:  # normal permissions (umask), unlike mkstemp's 0600
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _model_files(learner: Learner, featurizer: Featurizer, card: dict[str, Any],
                 refit: RefitResult | None = None) -> tuple[bytes, bytes]:
    """``(npz bytes, human JSON card bytes)`` of a model; ValueError for bad arguments."""
    if learner.n_features != featurizer.n_features:
        raise ValueError(f"the learner has {learner.n_features} features but the featurizer "
                         f"produces {featurizer.n_features}")
    if not learner.name:
        raise ValueError("the learner has no registry name; build it with learners.make()")
    completed = full_card(learner, featurizer, card, refit)
    entries: dict[str, Any] = {
        "format": _u8(_json_bytes(FORMAT, "format record")),
        "learner_state": _u8(state_to_bytes(learner.get_state())),
        "featurizer": _u8(_json_bytes(featurizer.config(), "featurizer config")),
        "card": _u8(_json_bytes(completed, "card")),
    }
    if completed["model"]["used"] == "refit":
        assert refit is not None and refit.model is not None
        if refit.model.n_features != learner.n_features or list(refit.model.classes) != list(learner.classes):
            raise ValueError("the refit model's classes or width differ from the learner's")
        entries["refit"] = _u8(refit_bytes(refit.model))
    buf = io.BytesIO()
    np.savez_compressed(buf, **entries)
    return buf.getvalue(), _json_bytes(completed, "card", indent=2) + b"\n"


def model_bytes(learner: Learner, featurizer: Featurizer, card: dict[str, Any],
                refit: RefitResult | None = None) -> bytes:
    """The ``.npz`` content :func:`save_model` writes (for download views that stream it)."""
    return _model_files(learner, featurizer, card, refit)[0]


def save_model(path: str | os.PathLike[str], learner: Learner, featurizer: Featurizer,
               card: dict[str, Any], refit: RefitResult | None = None) -> None:
    """Write ``learner`` + ``featurizer`` + ``card`` to ``path`` (must end in ``.npz``).

    ``refit``: the outcome of :func:`learners.refit.refit` on the learner's labels; when it
    chose the batch fit, the file holds it and :func:`load_model`'s model predicts with it
    (the card's ``model`` record says so either way).

    Also writes the completed card (see :func:`full_card`) as JSON to ``card_path(path)``.
    Raises ValueError for a path not ending in ``.npz``, a learner/featurizer width
    mismatch or a card that is not JSON-able; nothing is written then.
    """
    path = Path(path)
    if path.suffix != ".npz":
        raise ValueError(f"model path must end in .npz, got {str(path)!r}")
    data, human = _model_files(learner, featurizer, card, refit)
    _write_atomic(path, data)
    _write_atomic(card_path(path), human)


class ExportedModel:
    """A loaded model: featurizes raw items and predicts, with no Django or app code.

    learner: the :class:`learners.Learner` as it was when exported.
    featurizer: the featurizer rebuilt from its config.
    card: the model card (dict) stored in the file.
    refit: the batch refit that predicts in place of the learner (the card's ``model.used`` is
        ``"refit"``), or None: the learner predicts.
    """

    def __init__(self, learner: Learner, featurizer: Featurizer, card: dict[str, Any],
                 refit: LinearModel | None = None) -> None:
        self.learner = learner
        self.featurizer = featurizer
        self.card = card
        self.refit = refit

    @property
    def predictor(self) -> Learner | LinearModel:
        """The model that predicts: the refit when the file holds one, else the learner."""
        return self.learner if self.refit is None else self.refit

    def predict(self, raw_items: Iterable[Any]) -> list[Any]:
        """Predicted class values (as in the card's classes) of raw items, in order.

        Raises FeatureError (a ValueError) naming the position of the first bad item.
        """
        return self.predictor.predict(self.featurizer.transform(raw_items)).tolist()

    def decision_function(self, raw_items: Iterable[Any]) -> np.ndarray:
        """Scores of raw items: margins (n,) for binary learners, class scores (n, k) otherwise."""
        return self.predictor.decision_function(self.featurizer.transform(raw_items))

    def __repr__(self) -> str:
        used = "" if self.refit is None else ", refit"
        return f"ExportedModel({self.learner.name!r}{used}, featurizer={self.featurizer.kind!r})"


def load_model(path: str | os.PathLike[str]) -> ExportedModel:
    """Read a file written by :func:`save_model` (``allow_pickle=False``).

    Raises ValueError saying why ``path`` is not a usable model file (not an npz, missing
    entries, another format version, unknown algorithm or featurizer, widths that disagree);
    FileNotFoundError when it does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no model file at {path}")
    try:
        with np.load(path, allow_pickle=False) as npz:
            missing = [e for e in _ENTRIES if e not in npz.files]
            if missing:
                raise ValueError(f"missing entries {missing}")
            raw = {e: npz[e] for e in _ENTRIES}
            refit_raw = npz["refit"] if "refit" in npz.files else None
        fmt = json.loads(raw["format"].tobytes())
        if fmt != FORMAT:
            raise ValueError(f"format record is {fmt!r}, expected {FORMAT!r}")
        state = state_from_bytes(raw["learner_state"].tobytes())
        featurizer_config = json.loads(raw["featurizer"].tobytes())
        card = json.loads(raw["card"].tobytes())
        if not isinstance(card, dict) or not isinstance(featurizer_config, dict):
            raise ValueError("card and featurizer entries must be JSON objects")
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path} is not a model file written by learners.save_model: {exc}") from None
    try:
        learner = from_state(state)
        featurizer = make_featurizer(featurizer_config)
        refit = None if refit_raw is None else refit_from_bytes(refit_raw.tobytes())
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: cannot rebuild the model: {exc}") from None
    if learner.n_features != featurizer.n_features:
        raise ValueError(f"{path}: the learner has {learner.n_features} features but the "
                         f"featurizer produces {featurizer.n_features}")
    if refit is not None and (refit.n_features, refit.classes) != (learner.n_features, list(learner.classes)):
        raise ValueError(f"{path}: the refit model's classes or width differ from the learner's")
    return ExportedModel(learner, featurizer, card, refit)
