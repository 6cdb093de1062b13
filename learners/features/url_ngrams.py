"""URL featurizer ``url-ngrams``: hashed character n-grams of the whole URL.

Raw item: a URL string (or UTF-8 bytes), read only as text (nothing is resolved or fetched).
Any non-empty string is accepted; an empty or all-whitespace one is refused, as by
``url-lexical`` (:mod:`.url`).

Features: the URL, stripped (and lowercased when ``lowercase``), is framed as ``^<url>$`` so
that n-grams at its start and end differ from the same characters inside it (a URL that starts
with ``http://`` or ``www.``, one that ends in ``.php`` or ``/``); every character n-gram of
the framed string with ``ngram_min <= n <= ngram_max`` is counted, the counts are hashed into
``n_features`` columns by scikit-learn's ``HashingVectorizer`` (``analyzer="char"``: signed
32-bit MurmurHash3, stable across processes; no alternating signs) and the row is scaled to
L2 norm ``norm`` (1 when a stored config does not give it, 1.5 for a new project). No
parsing: host, path, query and their punctuation all show up as n-grams, so a malformed URL
is featurized like any other string.

Why n-grams rather than parsed tokens (benchmarks/URL_FEATURES.md): on the 10,000 labelled
URLs the n-grams of the whole string let the same learners reach about 0.97 online accuracy
with every label, where ``url-lexical`` stops at 0.94; n-grams generalise across unseen host
names and path words (``paypa1``, ``-secure-``, hex run lengths) that whole-token features
only match exactly. Adding the lexical tokens and counts of ``url-lexical`` as a second block
did not help.

Why a new project's rows have norm 1.5 rather than 1 (benchmarks/URL_FEATURES.md): the learners
have no feature scaling of their own, and on these sparse rows the larger norm makes each
queried label move D-AMD, MD-AMD and SOAL further (their regularisation, eta / gamma, is fixed
by their papers); D-AMD gains about half a point at 5-20% labels, MD-AMD on the 4-class URL
task one point, which puts them ahead of river's tuned peer on the same vectors
(docs/algorithms/common.md, "Inputs").

No intercept column for a new project (option ``intercept``, base.py, default 0): unlike the
text embedding's, it cost about a point at a 10% budget on the binary URL stream
(benchmarks/URL_FEATURES.md, docs/algorithms/common.md "Inputs: the intercept column").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ..params import Param
from .base import INTERCEPT, ROW_NORM, BaseFeaturizer, FeatureError, decode_utf8, hashed_columns, scale_rows


def _framed(url: str) -> str:
    """``^url$``: the marks make the first and last n-grams of a URL features of their own."""
    return f"^{url}$"


class UrlNgramFeaturizer(BaseFeaturizer):
    """Hashed character n-grams of the framed URL, rows of L2 norm ``norm`` (module docstring)."""

    kind = "url"
    name = "url-ngrams"
    version = 1
    options = (
        hashed_columns(low=2**5),
        Param("ngram_min", 2, int, "shortest character n-gram", low=1, high=8),
        Param("ngram_max", 5, int, "longest character n-gram (at least ngram_min)", low=1, high=8),
        Param("lowercase", True, bool, "lowercase the URL (host names are case-insensitive)"),
        ROW_NORM,
        INTERCEPT,
    )
    new_project: ClassVar[dict[str, Any]] = {"norm": 1.5}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        config = self.config()
        if config["ngram_min"] > config["ngram_max"]:
            raise ValueError(f"ngram_min ({config['ngram_min']}) must be at most ngram_max "
                             f"({config['ngram_max']})")
        self.lowercase: bool = config["lowercase"]
        self.norm: float = config["norm"]
        self._hashed = config["n_features"]
        self.n_features = self._hashed + self.intercept_columns()
        # imported here: scikit-learn costs a process ~150 MB, and only URL projects need it
        from sklearn.feature_extraction.text import HashingVectorizer

        self._vectorizer = HashingVectorizer(
            analyzer="char", ngram_range=(config["ngram_min"], config["ngram_max"]),
            preprocessor=_framed, lowercase=False, n_features=self._hashed,
            alternate_sign=False, norm="l2", dtype=np.float64)

    def _parse(self, raw: Any) -> str:
        url = decode_utf8(raw, "URL").strip()
        if not url:
            raise FeatureError("URL is empty")
        return url.lower() if self.lowercase else url

    def _rows(self, parsed: Sequence[str]) -> sp.csr_matrix:
        return scale_rows(self._vectorizer.transform(parsed), self.norm)


FEATURIZER = UrlNgramFeaturizer
