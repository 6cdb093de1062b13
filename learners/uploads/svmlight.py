"""LIBSVM / svmlight files of vectors (``<label> <index>:<value> ...``, indices from 1).

Parsed by scikit-learn's ``load_svmlight_file``. The label becomes the known class when it
equals a class of the project; for two-class projects the LIBSVM convention also maps
-1 (or 0) to ``classes[0]`` and +1 to ``classes[1]`` (the learners' own convention). Any
other label, an index 0 or beyond the project's ``n_features``, or a malformed line rejects
the file, naming the line.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from sklearn.datasets import load_svmlight_file

from .records import IngestError, Record, Target, gold_of

#: LIBSVM files number features from 1; the records (and items) number them from 0.
FIRST_INDEX = 1


def _load(data: bytes, n_features: int | None) -> tuple[Any, np.ndarray]:
    return load_svmlight_file(io.BytesIO(data), n_features=n_features, zero_based=FIRST_INDEX == 0,
                              dtype=np.float64)


def _first_bad_line(data: bytes, n_features: int | None) -> str:
    """Locate the first line sklearn refuses (only called once the whole file failed)."""
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.split(b"#", 1)[0].strip():
            continue
        try:
            _load(line + b"\n", n_features)
        except OverflowError:  # sklearn, for an index beyond a C long
            return f"line {number}: an index is too large"
        except ValueError as exc:
            return f"line {number}: {exc}"
    return "the file could not be parsed"


def _label_to_class(target: Target, label: float, where: str) -> Any:
    value: Any = int(label) if float(label).is_integer() else float(label)
    classes = target.classes
    if classes is None or any(value == c or str(value) == str(c) for c in classes):
        return gold_of(target, value, where)
    if len(classes) == 2 and value in (-1, 0, 1):
        return classes[1] if value == 1 else classes[0]
    raise IngestError(f"{where}: label {value!r} is not one of the classes {classes!r}")


def parse_svmlight(target: Target, data: bytes) -> list[Record]:
    """Records of a LIBSVM file (module docstring); IngestError naming the line otherwise."""
    if target.item_kind != "vectors":
        raise IngestError(f"LIBSVM files hold vectors, not {target.item_kind} items")
    n_features = int(target.featurizer_config.get("n_features", 0)) or None
    try:
        X, y = _load(data, n_features)
    except (ValueError, OverflowError):
        raise IngestError(_first_bad_line(data, n_features)) from None
    if X.shape[0] == 0:
        raise IngestError("the file holds no vectors")
    lines = [n for n, line in enumerate(data.splitlines(), start=1) if line.split(b"#", 1)[0].strip()]
    out = []
    for i in range(X.shape[0]):
        where = f"line {lines[i]}"
        a, b = X.indptr[i], X.indptr[i + 1]
        pairs = [[int(j), float(v)] for j, v in zip(X.indices[a:b], X.data[a:b], strict=True)]
        out.append(Record(where, pairs, _label_to_class(target, y[i], where)))
    return out
