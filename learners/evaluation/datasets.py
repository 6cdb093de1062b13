"""Labelled data files for replays: LIBSVM/svmlight, CSV and MATLAB ``.mat``, plus preprocessing.

:func:`load` reads one or more files (concatenated in order, as the papers merge the train
and test parts into one stream) and returns a :class:`Dataset`: a CSR float64 matrix
``X`` (n, d) without explicit zeros and a label array ``y`` (n,) of class values (``int``
when every label is integral, else ``str``). ``.gz`` files are decompressed transparently.

Formats (``fmt``; ``"auto"`` picks by extension, ignoring a trailing ``.gz``):

* ``libsvm``: ``label idx:val ...``, indices from 1 (an index 0 anywhere makes the files
  zero-based, as scikit-learn's ``zero_based="auto"``). Parsed by
  :func:`sklearn.datasets.load_svmlight_files`; a malformed file is re-scanned line by
  line so that the error names the first bad line (``.csv`` -> csv, ``.mat`` -> mat,
  anything else -> libsvm).
* ``csv``: one item per row, numeric features; an optional header row (detected when the
  label column's first cell or any feature cell is not a number); the label is the last
  column unless ``label_column`` (name or 0-based position) says otherwise.
* ``mat``: laid out like ``BaseHock.mat``: one (sparse or dense) matrix variable ``data``
  (n, d + 1) whose last column is the label.

:func:`preprocess` applies the replay's ``--scale`` and ``--bias`` options to a whole
matrix before streaming (the papers' prepared data sets were scaled offline).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

FORMATS = ("libsvm", "csv", "mat")
SCALES = ("none", "maxabs", "minmax", "standard", "l2", "standard+l2", "standard-half")


@dataclass(frozen=True)
class Dataset:
    """A labelled data set: ``X`` CSR float64 (n, d), ``y`` (n,) class values, ``source`` for reports."""

    X: sp.csr_matrix
    y: np.ndarray
    source: str

    @property
    def classes(self) -> list:
        """Sorted distinct class values."""
        return sorted(set(self.y.tolist()))


def detect_format(path: str | Path) -> str:
    """``csv`` / ``mat`` / ``libsvm`` from the file name (a trailing ``.gz`` is ignored)."""
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(".csv"):
        return "csv"
    if name.endswith(".mat"):
        return "mat"
    return "libsvm"


def load(paths: str | Path | Sequence[str | Path], fmt: str = "auto", *, n_features: int | None = None,
         label_column: str | int | None = None) -> Dataset:
    """Read one file or several files of the same format, concatenated in the order given.

    n_features: force the number of features (LIBSVM: files may not use the last index).
    Raises ValueError with a one-line message naming the file (and line) for every problem:
    missing file, unknown format, malformed line, inconsistent feature counts.
    """
    files = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    if not files:
        raise ValueError("no data file given")
    for p in files:
        if not p.is_file():
            raise ValueError(f"data file not found: {p}")
    fmts = {detect_format(p) if fmt == "auto" else fmt for p in files}
    if len(fmts) != 1:
        raise ValueError(f"all data files must have the same format, got {sorted(fmts)}")
    (kind,) = fmts
    if kind not in FORMATS:
        raise ValueError(f"unknown format {kind!r}; valid: auto, {', '.join(FORMATS)}")
    if kind == "libsvm":
        X, y = _load_libsvm(files, n_features)
    else:
        parts = [_load_csv(p, label_column) if kind == "csv" else _load_mat(p) for p in files]
        d = max(Xp.shape[1] for Xp, _ in parts)
        if n_features is not None:
            if n_features < d:
                raise ValueError(f"n_features={n_features} but the data have {d} features")
            d = n_features
        X = sp.vstack([sp.csr_matrix((Xp.data, Xp.indices, Xp.indptr), shape=(Xp.shape[0], d))
                       for Xp, _ in parts], format="csr")
        y = np.concatenate([yp for _, yp in parts])
    if X.shape[0] == 0:
        raise ValueError(f"no items in {', '.join(map(str, files))}")
    X = sp.csr_matrix(X, dtype=np.float64)
    X.eliminate_zeros()  # stored zeros ("1:0.0") must not differ from absent features
    X.sort_indices()
    if not np.all(np.isfinite(X.data)):
        raise ValueError(f"non-finite feature values in {', '.join(map(str, files))}")
    return Dataset(X, class_values(y), " + ".join(str(p) for p in files))


def class_values(y: np.ndarray) -> np.ndarray:
    """Class values as ints when all labels are integral numbers, else as strings."""
    if y.dtype.kind in "fiu":
        yf = y.astype(np.float64)
        if np.all(np.isfinite(yf)) and np.all(yf == np.round(yf)):
            return yf.astype(np.int64)
        return np.array([repr(float(v)) for v in yf], dtype=object)
    try:
        return class_values(np.array([float(v) for v in y]))
    except ValueError:
        return np.array([str(v) for v in y], dtype=object)


# ---------------------------------------------------------------------------- LIBSVM
def _load_libsvm(paths: list[Path], n_features: int | None) -> tuple[sp.csr_matrix, np.ndarray]:
    """The compiled reader when the files fit its fast path (same numbers), else scikit-learn's."""
    from .libsvm import read_libsvm

    fast = read_libsvm(paths, n_features)
    if fast is not None:
        return fast
    # imported only off the fast path: scikit-learn costs ~1 s and ~120 MiB (docs/performance.md)
    from sklearn.datasets import load_svmlight_files

    try:
        out = load_svmlight_files([str(p) for p in paths], n_features=n_features, dtype=np.float64)
    except (ValueError, RuntimeError, UnicodeDecodeError) as exc:
        for p in paths:
            _scan_libsvm(p)  # raises with the line number when a line is malformed
        raise ValueError(f"cannot read {', '.join(map(str, paths))} as LIBSVM: {exc}") from None
    Xs, ys = out[0::2], out[1::2]
    return sp.vstack(Xs, format="csr"), np.concatenate(ys)


_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_LIBSVM_LINE = re.compile(rf"^\s*(\S+)((?:\s+(?:qid:\d+))?(?:\s+\d+:{_NUMBER})*)\s*$")


def _open_text(path: Path) -> io.TextIOBase:
    raw = gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")  # noqa: SIM115
    return io.TextIOWrapper(raw, encoding="utf-8", errors="strict")


def _scan_libsvm(path: Path) -> None:
    """Raise ValueError naming the first malformed line of a LIBSVM file (None if all are fine)."""
    try:
        with _open_text(path) as fh:
            for lineno, line in enumerate(fh, start=1):
                body = line.split("#", 1)[0]
                if not body.strip():
                    continue
                m = _LIBSVM_LINE.match(body)
                if m is None:
                    raise ValueError(f"{path}: line {lineno}: malformed LIBSVM line: {line.strip()[:80]!r}")
                try:
                    float(m.group(1))
                except ValueError:
                    label = m.group(1)
                    raise ValueError(f"{path}: line {lineno}: label {label!r} is not a number") from None
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile) as exc:
        raise ValueError(f"{path}: cannot read: {exc}") from None


# ------------------------------------------------------------------------------- CSV
def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _load_csv(path: Path, label_column: str | int | None) -> tuple[sp.csr_matrix, np.ndarray]:
    try:
        with _open_text(path) as fh:
            rows = [r for r in csv.reader(fh) if r]
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile, csv.Error) as exc:
        raise ValueError(f"{path}: cannot read as CSV: {exc}") from None
    if not rows:
        raise ValueError(f"{path}: empty CSV file")
    header: list[str] | None = None
    if any(not _is_number(c) for c in rows[0]):
        header, rows = rows[0], rows[1:]
    width = len(header) if header is not None else len(rows[0]) if rows else 0
    if width < 2:
        raise ValueError(f"{path}: a CSV needs at least one feature column and a label column")
    col = _label_index(path, label_column, header, width)
    first = 2 if header is not None else 1
    feats = np.empty((len(rows), width - 1))
    labels: list[str] = []
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"{path}: line {i + first}: {len(row)} fields, expected {width}")
        labels.append(row[col].strip())
        values = row[:col] + row[col + 1:]
        try:
            feats[i] = [float(v) for v in values]
        except ValueError:
            bad = next(v for v in values if not _is_number(v))
            raise ValueError(f"{path}: line {i + first}: feature value {bad!r} is not a number") from None
    return sp.csr_matrix(feats), np.array(labels, dtype=object)


def _label_index(path: Path, label_column: str | int | None, header: list[str] | None, width: int) -> int:
    if label_column is None:
        return width - 1
    if isinstance(label_column, str) and not label_column.lstrip("-").isdigit():
        if header is None or label_column not in header:
            raise ValueError(f"{path}: no column named {label_column!r} (header: {header})")
        return header.index(label_column)
    idx = int(label_column)
    if not -width <= idx < width:
        raise ValueError(f"{path}: label column {idx} out of range for {width} columns")
    return idx % width


# ------------------------------------------------------------------------------- MAT
def _load_mat(path: Path) -> tuple[sp.csr_matrix, np.ndarray]:
    import scipy.io  # only MATLAB files need it (lazy: the replay's start, docs/performance.md)

    try:
        if path.name.lower().endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                content = scipy.io.loadmat(io.BytesIO(fh.read()))
        else:
            content = scipy.io.loadmat(str(path))
    except (OSError, EOFError, ValueError, NotImplementedError, TypeError, gzip.BadGzipFile) as exc:
        raise ValueError(f"{path}: cannot read as a MATLAB file: {exc}") from None
    if "data" not in content:
        names = sorted(k for k in content if not k.startswith("__"))
        raise ValueError(f"{path}: no variable 'data' (expected the BaseHock layout); variables: {names}")
    data = sp.csr_matrix(content["data"], dtype=np.float64)
    if data.ndim != 2 or data.shape[1] < 2:
        raise ValueError(f"{path}: 'data' must be a matrix with features and a last label column")
    y = data[:, -1].toarray().ravel()
    return data[:, :-1].tocsr(), y


# ------------------------------------------------------------------------ preprocessing
def preprocess(X: sp.csr_matrix, scale: str = "none", bias: bool = False) -> sp.csr_matrix:
    """Scale a whole matrix once, before streaming, and optionally append a constant feature.

    * ``none``: unchanged.
    * ``maxabs``: each feature divided by its largest absolute value (sparsity kept).
    * ``minmax``: each feature mapped linearly to [-1, 1] like LIBSVM's ``svm-scale``
      (a constant feature becomes 0, as svm-scale leaves it out). Absent entries are 0
      before scaling, so the result is generally dense.
    * ``standard``: z-scores ``(x - mean)/std`` (population std; a constant feature becomes 0).
    * ``l2``: each row divided by its Euclidean norm (all-zero rows stay zero).
    * ``standard+l2``: z-scores, then unit rows.
    * ``standard-half``: half z-scores, mean 0 and SD 0.5: the OASIS paper's standardisation
      with the statistics of the whole trial (the file: a permutation only reorders it), to be
      replayed with OASIS's own running scaler off (``--param standardize=false``).

    bias: append a feature equal to 1 to every row (after scaling).
    Returns a new CSR float64 matrix without explicit zeros.
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    if scale == "maxabs":
        m = np.asarray(abs(X).max(axis=0).todense()).ravel()
        X = X @ sp.diags(np.divide(1.0, m, out=np.zeros_like(m), where=m > 0))
    elif scale == "minmax":
        lo = np.asarray(X.min(axis=0).todense()).ravel()
        hi = np.asarray(X.max(axis=0).todense()).ravel()
        span = hi - lo
        inv = np.divide(2.0, span, out=np.zeros_like(span), where=span > 0)
        X = sp.csr_matrix((X.toarray() - lo) * inv - np.where(span > 0, 1.0, 0.0))
    elif scale in ("standard", "standard+l2", "standard-half"):
        mean = np.asarray(X.mean(axis=0)).ravel()
        sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
        std = np.sqrt(np.maximum(sq - mean**2, 0.0))
        inv = np.divide(0.5 if scale == "standard-half" else 1.0, std, out=np.zeros_like(std), where=std > 0)
        X = sp.csr_matrix((X.toarray() - mean) * inv)
    if scale in ("l2", "standard+l2"):
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        X = sp.diags(np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)) @ X
    if bias:
        X = sp.hstack([X, np.ones((X.shape[0], 1))])
    X = sp.csr_matrix(X, dtype=np.float64)
    X.eliminate_zeros()
    X.sort_indices()
    return X
