"""Storage format of featurized rows: no pickle, O(nnz) bytes.

A row is ``uint32 nnz`` followed by ``nnz`` little-endian int32 column indices and ``nnz``
float64 values. :func:`encode` takes one CSR row; :func:`decode` returns a CSR row
``(1, n_features)`` ready for the learner.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

_HEADER = np.dtype("<u4")
_INDEX = np.dtype("<i4")
_VALUE = np.dtype("<f8")


def encode(row: sp.spmatrix | sp.sparray) -> bytes:
    """Bytes of one sparse row (shape ``(1, n)``)."""
    csr = sp.csr_matrix(row)
    if csr.shape[0] != 1:
        raise ValueError(f"expected one row, got shape {csr.shape}")
    csr.sum_duplicates()
    return (np.array([csr.nnz], dtype=_HEADER).tobytes() + csr.indices.astype(_INDEX).tobytes()
            + csr.data.astype(_VALUE).tobytes())


def encode_rows(X: sp.spmatrix | sp.sparray) -> list[bytes]:
    """:func:`encode` of every row of a CSR matrix, in order."""
    X = sp.csr_matrix(X)
    X.sum_duplicates()
    out = []
    for a, b in zip(X.indptr[:-1], X.indptr[1:], strict=True):
        out.append(np.array([b - a], dtype=_HEADER).tobytes() + X.indices[a:b].astype(_INDEX).tobytes()
                   + X.data[a:b].astype(_VALUE).tobytes())
    return out


def decode(data: bytes | memoryview | None, n_features: int) -> sp.csr_matrix:
    """Inverse of :func:`encode`; ValueError if the bytes are not a row of ``n_features`` or
    are None (an item whose content the retention sweep dropped, see :mod:`.retention`)."""
    idx, vals = decode_row(data, n_features)
    return sp.csr_matrix((vals, idx, np.array([0, len(idx)])), shape=(1, n_features))


def decode_row(data: bytes | memoryview | None, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decode` as the row's ``(int32 indices, float64 values)``, no sparse matrix (the
    learners' per-row fast path, :meth:`learners.base.Learner.decide_row`); same errors."""
    if data is None:
        raise ValueError("the item's vector was dropped by the retention sweep")
    buf = bytes(data)
    if len(buf) < _HEADER.itemsize:
        raise ValueError("stored vector is truncated")
    nnz = int(np.frombuffer(buf, dtype=_HEADER, count=1)[0])
    if len(buf) != _HEADER.itemsize + nnz * (_INDEX.itemsize + _VALUE.itemsize):
        raise ValueError("stored vector has the wrong length")
    idx = np.frombuffer(buf, dtype=_INDEX, count=nnz, offset=_HEADER.itemsize)
    vals = np.frombuffer(buf, dtype=_VALUE, count=nnz, offset=_HEADER.itemsize + nnz * _INDEX.itemsize)
    if nnz and (idx.min() < 0 or idx.max() >= n_features):
        raise ValueError(f"stored vector has an index outside 0..{n_features - 1}")
    return idx.astype(np.int32, copy=False), vals
