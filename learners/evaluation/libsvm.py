"""A compiled LIBSVM/svmlight reader that gives exactly what scikit-learn's reader gives.

``read_libsvm(paths, n_features)`` returns ``(X, y)`` like
``sklearn.datasets.load_svmlight_files(paths, n_features=n_features)`` stacked (zero-based
indices when some file uses index 0, else one-based; ``qid:`` tokens and ``#`` comments
ignored), or None when a file holds anything outside the fast path, and the caller then uses
scikit-learn's reader, which also produces the error messages. The fast path accepts labels
and values written as plain decimals (``[+-]digits[.digits][e[+-]digits]``) whose digits fit in
an exact double (at most 2^53) with a decimal exponent of at most 22 in size: for those,
``mantissa * 10^e`` (or ``/ 10^-e``) is one correctly rounded operation on exact operands, so
the value equals what ``strtod`` returns (Clinger's fast path). Anything else (longer
mantissas, ``inf``/``nan``, hex, malformed tokens) returns None.

Why: scikit-learn's reader took 130 ms of a 200 ms one-pass replay of a8a; this one takes
a few ms after numba's first compilation (cached on disk).
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from numba import njit

_POW10 = np.array([10.0 ** k for k in range(23)])
_MAX_EXACT = 2 ** 53


@njit(cache=True)
def _number(buf, pos, end, pow10):
    """Parse a decimal at ``buf[pos:end]``; returns (value, next position, ok)."""
    sign = 1.0
    if pos < end and (buf[pos] == 43 or buf[pos] == 45):  # '+' '-'
        if buf[pos] == 45:
            sign = -1.0
        pos += 1
    mant = 0
    digits = 0
    exp10 = 0
    seen = False
    while pos < end and 48 <= buf[pos] <= 57:
        if mant < 10 ** 17:
            mant = mant * 10 + (buf[pos] - 48)
        else:
            digits = 99  # too long for the fast path
        pos += 1
        seen = True
    if pos < end and buf[pos] == 46:  # '.'
        pos += 1
        while pos < end and 48 <= buf[pos] <= 57:
            if mant < 10 ** 17:
                mant = mant * 10 + (buf[pos] - 48)
                exp10 -= 1
            else:
                digits = 99
            pos += 1
            seen = True
    if not seen:
        return 0.0, pos, False
    if pos < end and (buf[pos] == 101 or buf[pos] == 69):  # 'e' 'E'
        pos += 1
        esign = 1
        if pos < end and (buf[pos] == 43 or buf[pos] == 45):
            if buf[pos] == 45:
                esign = -1
            pos += 1
        e = 0
        eseen = False
        while pos < end and 48 <= buf[pos] <= 57:
            if e < 10000:
                e = e * 10 + (buf[pos] - 48)
            pos += 1
            eseen = True
        if not eseen:
            return 0.0, pos, False
        exp10 += esign * e
    if digits == 99 or mant > 9007199254740992 or exp10 > 22 or exp10 < -22:
        return 0.0, pos, False
    value = float(mant)
    if exp10 > 0:
        value = value * pow10[exp10]
    elif exp10 < 0:
        value = value / pow10[-exp10]
    return sign * value, pos, True


@njit(cache=True)
def _is_space(c):
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@njit(cache=True)
def _parse(buf, pow10):
    """Parse a whole file; returns (labels, indptr, indices, values, ok)."""
    n = len(buf)
    lines = 1
    colons = 0
    for i in range(n):
        if buf[i] == 10:
            lines += 1
        elif buf[i] == 58:
            colons += 1
    labels = np.empty(lines)
    indptr = np.zeros(lines + 1, dtype=np.int64)
    indices = np.empty(colons, dtype=np.int64)
    values = np.empty(colons)
    row = 0
    nnz = 0
    pos = 0
    while pos < n:
        end = pos
        while end < n and buf[end] != 10:
            end += 1
        line_end = end
        for k in range(pos, end):  # a comment ends the line
            if buf[k] == 35:
                line_end = k
                break
        p = pos
        while p < line_end and _is_space(buf[p]):
            p += 1
        if p < line_end:
            label, p, ok = _number(buf, p, line_end, pow10)
            if not ok or (p < line_end and not _is_space(buf[p])):
                return labels, indptr, indices, values, False
            labels[row] = label
            while True:
                while p < line_end and _is_space(buf[p]):
                    p += 1
                if p >= line_end:
                    break
                if (p + 4 <= line_end and buf[p] == 113 and buf[p + 1] == 105 and buf[p + 2] == 100
                        and buf[p + 3] == 58):  # "qid:"
                    p += 4
                    while p < line_end and not _is_space(buf[p]):
                        p += 1
                    continue
                idx = 0
                start = p
                while p < line_end and 48 <= buf[p] <= 57 and p - start < 12:
                    idx = idx * 10 + (buf[p] - 48)
                    p += 1
                if p == start or p >= line_end or buf[p] != 58:
                    return labels, indptr, indices, values, False
                if nnz > indptr[row] and idx <= indices[nnz - 1]:
                    return labels, indptr, indices, values, False  # unsorted: leave it to sklearn
                p += 1
                val, p, ok = _number(buf, p, line_end, pow10)
                if not ok or (p < line_end and not _is_space(buf[p])):
                    return labels, indptr, indices, values, False
                indices[nnz] = idx
                values[nnz] = val
                nnz += 1
            row += 1
            indptr[row] = nnz
        pos = end + 1
    return labels[:row], indptr[:row + 1], indices[:nnz], values[:nnz], True


def _read_bytes(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.name.lower().endswith(".gz") else path.read_bytes()


def read_libsvm(paths: Sequence[Path], n_features: int | None) -> tuple[sp.csr_matrix, np.ndarray] | None:
    """``(X (n, d) CSR float64, y (n,) float64)`` of the files stacked, or None (see module doc).

    Files that cannot be read (missing, bad gzip) also give None: the caller's reader reports them.
    """
    parts = []
    for path in paths:
        try:
            buf = np.frombuffer(_read_bytes(Path(path)), dtype=np.uint8)
        except (OSError, EOFError, gzip.BadGzipFile):
            return None
        labels, indptr, indices, values, ok = _parse(buf, _POW10)
        if not ok:
            return None
        parts.append((labels, indptr, indices, values))
    if not parts or not any(len(p[0]) for p in parts):
        return None
    all_indices = [p[2] for p in parts if len(p[2])]
    zero_based = any(int(ix.min()) == 0 for ix in all_indices)
    if not zero_based:
        parts = [(lab, ptr, ix - 1, val) for lab, ptr, ix, val in parts]
    d = max((int(ix.max()) + 1 for _, _, ix, _ in parts if len(ix)), default=0)
    if n_features is not None:
        if n_features < d:
            return None  # scikit-learn raises the message
        d = n_features
    blocks = [sp.csr_matrix((val, ix, ptr), shape=(len(lab), d)) for lab, ptr, ix, val in parts]
    return sp.vstack(blocks, format="csr"), np.concatenate([p[0] for p in parts])
