"""Hashed word unigram + bigram counts without scikit-learn, bit for bit scikit-learn's.

``WordHasher(n_features, lowercase).transform(texts)`` equals
``HashingVectorizer(n_features=n_features, ngram_range=(1, 2), token_pattern=TOKEN_PATTERN,
lowercase=lowercase, alternate_sign=False, norm=None, dtype=np.float64).transform(texts)``
(tests/learners/test_word_hashing.py compares them): the tokens are ``re.findall`` of the
pattern on the (lowercased) text, the bigrams the tokens joined by one space, each hashed by
MurmurHash3 (x86, 32 bits, seed 0, signed) of its UTF-8 bytes into column ``abs(h) % n_features``
(``h = -2**31`` as scikit-learn maps it), counts summed, indices sorted. :func:`l2_rows` is
scikit-learn's ``normalize(X, norm="l2")`` for CSR (squares summed in stored order).

Why not scikit-learn: importing it costs every process that featurizes text ~150 MB and a second
of CPU (docs/performance.md); the word n-grams are the only part of it the text featurizers
need (``minilm-chars``' character n-grams still use it).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from numba import njit

#: scikit-learn's default token pattern but single characters count too (module docstring of .text)
TOKEN_PATTERN = r"(?u)\b\w+\b"


_M32 = 0xFFFFFFFF


@njit(cache=True)
def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


@njit(cache=True)
def _murmur3_32(buf: np.ndarray, start: int, end: int) -> int:
    """MurmurHash3_x86_32 of ``buf[start:end]`` with seed 0, as a signed 32-bit integer (64-bit
    integers masked to 32 bits after each product: numba widens uint32 arithmetic)."""
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = 0
    n = end - start
    blocks = n // 4
    for i in range(blocks):
        j = start + 4 * i
        k = (int(buf[j]) | (int(buf[j + 1]) << 8) | (int(buf[j + 2]) << 16)
             | (int(buf[j + 3]) << 24))
        k = _rotl((k * c1) & _M32, 15)
        h ^= (k * c2) & _M32
        h = (_rotl(h, 13) * 5 + 0xE6546B64) & _M32
    tail = start + 4 * blocks
    k = 0
    rest = n & 3
    if rest >= 3:
        k ^= int(buf[tail + 2]) << 16
    if rest >= 2:
        k ^= int(buf[tail + 1]) << 8
    if rest >= 1:
        k ^= int(buf[tail])
        k = _rotl((k * c1) & _M32, 15)
        h ^= (k * c2) & _M32
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h - (1 << 32) if h >= (1 << 31) else h


@njit(cache=True)
def _columns(buf: np.ndarray, offsets: np.ndarray, n_features: int) -> np.ndarray:
    """The column of each token ``buf[offsets[i]:offsets[i + 1]]`` (scikit-learn's rule)."""
    out = np.empty(len(offsets) - 1, dtype=np.int64)
    for i in range(len(offsets) - 1):
        h = np.int64(_murmur3_32(buf, offsets[i], offsets[i + 1]))
        if h == -2147483648:
            out[i] = (2147483647 - (n_features - 1)) % n_features
        else:
            out[i] = abs(h) % n_features
    return out


@njit(cache=True)
def _l2_in_place(indptr: np.ndarray, data: np.ndarray) -> None:
    for r in range(len(indptr) - 1):
        s = 0.0
        for j in range(indptr[r], indptr[r + 1]):
            s += data[j] * data[j]
        if s == 0.0:
            continue
        s = np.sqrt(s)
        for j in range(indptr[r], indptr[r + 1]):
            data[j] /= s


def l2_rows(X: sp.csr_matrix) -> sp.csr_matrix:
    """``X`` (CSR float64) with each non-empty row scaled to unit L2 norm, in place; returned."""
    _l2_in_place(X.indptr, X.data)
    return X


class WordHasher:
    """Hashed word unigram + bigram counts (module docstring); ``n_features`` columns."""

    def __init__(self, n_features: int, lowercase: bool = True) -> None:
        self.n_features = n_features
        self.lowercase = lowercase
        self._tokens = re.compile(TOKEN_PATTERN)

    def _ngrams(self, text: str) -> list[str]:
        tokens = self._tokens.findall(text.lower() if self.lowercase else text)
        return tokens + [f"{a} {b}" for a, b in itertools.pairwise(tokens)]

    #: texts hashed at once: the n-grams' bytes objects of a block are all alive together
    BLOCK = 64

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """Counts ``(len(texts), n_features)`` float64, duplicates summed, indices sorted.

        Hashed :data:`BLOCK` texts at a time, so the n-grams' Python objects held at once do not
        grow with ``len(texts)``; the columns are the same.
        """
        blocks: list[np.ndarray] = []
        indptr = [0]
        for start in range(0, len(texts), self.BLOCK):
            encoded: list[bytes] = []
            for text in texts[start:start + self.BLOCK]:
                grams = self._ngrams(text)
                encoded.extend(g.encode("utf-8") for g in grams)
                indptr.append(indptr[-1] + len(grams))
            lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
            offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            buf = np.frombuffer(b"".join(encoded), dtype=np.uint8)
            blocks.append(_columns(buf, offsets, self.n_features))
        columns = (np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64)).astype(np.int32)
        rows = np.array(indptr, dtype=np.int32)
        X = sp.csr_matrix((np.ones(len(columns), dtype=np.float64), columns, rows),
                          shape=(len(texts), self.n_features))
        X.sum_duplicates()
        return X
