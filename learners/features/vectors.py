"""Plain-vector featurizer: items that already are sparse numeric vectors.

Raw item (JSON-able), with 0-based indices ``0 <= index < n_features``:

* a list of ``[index, value]`` pairs, e.g. ``[[0, 1.5], [7, -2]]``, or
* a dict ``{index: value}``; keys may be ints or decimal strings (``{"7": -2}``), because
  JSON object keys are always strings.

Indices must be integers (``3.0`` and ``True`` are refused), each at most once; values must be
finite real numbers. An empty list/dict is the zero vector. Zero values are not stored.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..params import Param
from .base import BaseFeaturizer, FeatureError


class VectorsFeaturizer(BaseFeaturizer):
    """Validates index/value pairs and returns them as a CSR row (module docstring)."""

    kind = "vectors"
    name = "vectors"
    version = 1
    options = (
        Param("n_features", 100, int, "dimension of the vectors (set it to your data's; indices "
              "run from 0 to n_features - 1)", low=1, high=2**26, log=True),
    )

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.n_features = self.config()["n_features"]

    def _index(self, key: Any) -> int:
        if isinstance(key, str) and key.strip().isdecimal():
            key = int(key)
        if isinstance(key, bool) or not isinstance(key, numbers.Integral):
            raise FeatureError(f"vector index {key!r} is not an integer")
        index = int(key)
        if not 0 <= index < self.n_features:
            raise FeatureError(f"vector index {index} is out of range 0..{self.n_features - 1}")
        return index

    @staticmethod
    def _value(index: int, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise FeatureError(f"value at index {index} is not a number: {value!r}")
        out = float(value)
        if not math.isfinite(out):
            raise FeatureError(f"value at index {index} is not finite: {out}")
        return out

    def _pairs(self, raw: Any) -> list[tuple[Any, Any]]:
        if isinstance(raw, dict):
            return list(raw.items())
        if not isinstance(raw, (list, tuple)):
            raise FeatureError("a vector must be a list of [index, value] pairs or a dict "
                               f"{{index: value}}, got {type(raw).__name__}")
        pairs = []
        for k, pair in enumerate(raw):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise FeatureError(f"entry {k} of the vector is not an [index, value] pair: {pair!r}")
            pairs.append((pair[0], pair[1]))
        return pairs

    def _parse(self, raw: Any) -> tuple[np.ndarray, np.ndarray]:
        seen: dict[int, float] = {}
        for key, value in self._pairs(raw):
            index = self._index(key)
            if index in seen:
                raise FeatureError(f"vector index {index} appears more than once")
            seen[index] = self._value(index, value)
        return np.fromiter(seen.keys(), np.int64, len(seen)), np.fromiter(seen.values(), float, len(seen))

    def _rows(self, parsed: Sequence[tuple[np.ndarray, np.ndarray]]) -> sp.csr_matrix:
        indptr = np.zeros(len(parsed) + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(idx) for idx, _ in parsed])
        indices = np.concatenate([idx for idx, _ in parsed])
        data = np.concatenate([vals for _, vals in parsed])
        return sp.csr_matrix((data, indices, indptr), shape=(len(parsed), self.n_features))


FEATURIZER = VectorsFeaturizer
