"""Raw streams for the replay: the app's upload files, featurized as a project of that kind.

``python -m learners.replay --data FILE --kind text|url|image`` reads FILE with
:func:`learners.uploads.parse_upload` (the parser of the app's ingest: CSV/JSONL of text or
URLs, ZIP of images with ``labels.csv`` or class folders, each optionally ``.gz``) and
featurizes the items with :func:`learners.uploads.featurize_chunks` and the featurizer a new
project of that kind would get (``learners.features.DEFAULT``), or the one named, configured
by ``KEY=VALUE`` options. So the replay sees the vectors the app would store.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..features import DEFAULT, default_config, featurizer_names, make_featurizer
from ..uploads import IngestError, OpenTarget, Record, featurize_chunks, parse_upload
from .datasets import Dataset, class_values

#: item kinds a raw file can hold (vectors go through the numeric readers instead)
RAW_KINDS = ("text", "url", "image")


def featurizer_config(kind: str, name: str | None = None,
                      options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The complete config of featurizer ``name`` of ``kind`` (None: a new project's default)
    with ``options`` (strings are converted); ValueError naming a bad name or option."""
    if kind not in RAW_KINDS:
        raise ValueError(f"unknown item kind {kind!r}; valid: {', '.join(RAW_KINDS)}")
    name = DEFAULT[kind] if name is None else name
    if name not in featurizer_names(kind):
        raise ValueError(f"unknown {kind} featurizer {name!r}; valid: {', '.join(featurizer_names(kind))}")
    return make_featurizer({**default_config(kind, name), **(options or {})}).config()


def read_records(path: Path, kind: str) -> list[Record]:
    """Every record of one upload file, each with its label; ValueError naming the file, and
    the line or entry, when the file cannot be parsed or an item has no label."""
    try:
        records = parse_upload(OpenTarget(kind), path.name, path.read_bytes())
    except IngestError as exc:
        raise ValueError(f"{path}: {exc}") from None
    unlabelled = [r for r in records if r.gold is None]
    if len(unlabelled) == len(records):
        where = ("no labels.csv and no class folders" if kind == "image"
                 else "no 'label' column (or 'gold')")
        raise ValueError(f"{path}: {where}; the replay needs the class of every item")
    if unlabelled:
        raise ValueError(f"{path}: {unlabelled[0].where}: no label; the replay needs the class of every item")
    return records


def load_raw(paths: Sequence[str | Path], kind: str, config: dict[str, Any]) -> Dataset:
    """The labelled stream of the upload files ``paths`` (concatenated in order), featurized
    by ``config``: CSR float64 (n, n_features) rows and class values (ints when every label
    is an integer). ValueError with a one-line message naming the file for every problem."""
    featurizer = make_featurizer(config)
    files = [Path(p) for p in paths]
    if not files:
        raise ValueError("no data file given")
    parts: list[tuple[sp.csr_matrix, list[Any]]] = []
    for p in files:
        if not p.is_file():
            raise ValueError(f"data file not found: {p}")
        records = read_records(p, kind)
        try:
            X = sp.vstack(list(featurize_chunks(featurizer, records)), format="csr")
        except IngestError as exc:
            raise ValueError(f"{p}: {exc}") from None
        parts.append((X, [r.gold for r in records]))
    X = sp.vstack([x for x, _ in parts], format="csr")
    y = class_values(np.array([g for _, golds in parts for g in golds], dtype=object))
    return Dataset(X, y, " + ".join(str(p) for p in files))
