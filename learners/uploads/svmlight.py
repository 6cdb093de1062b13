"""LIBSVM / svmlight files of vectors (``<label> <index>:<value> ...``, indices from 1).

Parsed by scikit-learn's ``load_svmlight_file``, a block of :data:`BLOCK_LINES` lines at a time
(memory does not grow with the file). The label becomes the known class when it
equals a class of the project; for two-class projects the LIBSVM convention also maps
-1 (or 0) to ``classes[0]`` and +1 to ``classes[1]`` (the learners' own convention). Any
other label, an index 0 or a malformed line rejects the file, naming the line; so does an index
beyond the project's dimension (its featurizer option ``n_features``, fixed when the project is
created), with a message naming the index, the dimension and the option that sets it
(:func:`beyond_dimension`, docs/uploads.md).
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import numpy as np

from .lines import binary_lines
from .records import IngestError, Record, Target, gold_of

#: LIBSVM files number features from 1; the records (and items) number them from 0.
FIRST_INDEX = 1
#: lines handed to scikit-learn's parser at once
BLOCK_LINES = 1000


def _load(data: bytes) -> tuple[Any, np.ndarray]:
    """scikit-learn's parse of ``data``, its dimension taken from the data (the project's is
    checked by :func:`_beyond`, which says it in the app's words)."""
    # imported here: scikit-learn costs ~1 s and ~120 MiB, paid only when a LIBSVM upload is read
    # (not by every worker's start or by ``python -m learners.replay``, docs/performance.md)
    from sklearn.datasets import load_svmlight_file

    return load_svmlight_file(io.BytesIO(data), zero_based=FIRST_INDEX == 0, dtype=np.float64)


def beyond_dimension(number: int, index: int, n_features: int) -> str:
    """The message refusing line ``number`` of a LIBSVM file, whose feature ``index`` (numbered
    from :data:`FIRST_INDEX`) is beyond a project's ``n_features``: the index, the dimension,
    the option that sets it and the value that would take this line."""
    last = n_features - 1 + FIRST_INDEX
    needed = index + 1 - FIRST_INDEX
    return (f"line {number}: feature index {index} is beyond this project's dimension, {n_features} "
            f"(LIBSVM indices {FIRST_INDEX} to {last}). A project's dimension is its featurizer option "
            f"n_features, fixed when the project is created: to import this file, create a vectors "
            f"project with the featurizer options {{\"n_features\": N}} (new-project page), N at least "
            f"{needed} and at least the largest feature index in the file")


def _beyond(X: Any, block: Sequence[tuple[int, bytes]], n_features: int | None) -> str | None:
    """:func:`beyond_dimension` of the first line of ``block`` (parsed as ``X``) holding an index
    beyond ``n_features``; None when none does or there is no dimension to keep to."""
    if not n_features or X.shape[1] <= n_features:
        return None
    for i, (number, _) in enumerate(block):
        indices = X.indices[X.indptr[i]:X.indptr[i + 1]]
        if len(indices) and indices.max() >= n_features:
            return beyond_dimension(number, int(indices.max()) + FIRST_INDEX, n_features)
    return None


def _first_bad_line(block: Sequence[tuple[int, bytes]], n_features: int | None) -> str:
    """Locate the first line sklearn refuses or that is beyond ``n_features`` (only called once
    its block failed)."""
    for number, line in block:
        try:
            X, _ = _load(line.rstrip(b"\r\n") + b"\n")
        except OverflowError:  # sklearn, for an index beyond a C long
            return f"line {number}: an index is too large"
        except ValueError as exc:
            return f"line {number}: {exc}"
        beyond = _beyond(X, [(number, line)], n_features)
        if beyond:
            return beyond
    return f"lines {block[0][0]}-{block[-1][0]} could not be parsed"


def _label_to_class(target: Target, label: float, where: str) -> Any:
    value: Any = int(label) if float(label).is_integer() else float(label)
    classes = target.classes
    if classes is None or any(value == c or str(value) == str(c) for c in classes):
        return gold_of(target, value, where)
    if len(classes) == 2 and value in (-1, 0, 1):
        return classes[1] if value == 1 else classes[0]
    raise IngestError(f"{where}: label {value!r} is not one of the classes {classes!r}")


def _blocks(fh: BinaryIO) -> Iterator[list[tuple[int, bytes]]]:
    """The lines holding a vector (not blank, not only a comment), :data:`BLOCK_LINES` at a time."""
    block: list[tuple[int, bytes]] = []
    for number, line in binary_lines(fh):
        if line.split(b"#", 1)[0].strip():
            block.append((number, line if line.endswith(b"\n") else line + b"\n"))
            if len(block) == BLOCK_LINES:
                yield block
                block = []
    if block:
        yield block


def iter_svmlight(target: Target, fh: BinaryIO) -> Iterator[Record]:
    """Records of a LIBSVM file read from ``fh`` (module docstring); IngestError naming the line."""
    if target.item_kind != "vectors":
        raise IngestError(f"LIBSVM files hold vectors, not {target.item_kind} items")
    n_features = int(target.featurizer_config.get("n_features", 0)) or None
    empty = True
    for block in _blocks(fh):
        try:
            X, y = _load(b"".join(line for _, line in block))
        except (ValueError, OverflowError):
            raise IngestError(_first_bad_line(block, n_features)) from None
        if _beyond(X, block, n_features):
            raise IngestError(_first_bad_line(block, n_features))
        for i, (number, _) in enumerate(block):
            where = f"line {number}"
            a, b = X.indptr[i], X.indptr[i + 1]
            pairs = [[int(j), float(v)] for j, v in zip(X.indices[a:b], X.data[a:b], strict=True)]
            yield Record(where, pairs, _label_to_class(target, y[i], where))
            empty = False
    if empty:
        raise IngestError("the file holds no vectors")
