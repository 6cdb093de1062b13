"""Hybrid text featurizers: the MiniLM sentence embedding beside hashed character and word
n-grams (measured in benchmarks/TEXT_FEATURES.md).

Raw item: ``str`` or UTF-8 ``bytes``, as for the other text featurizers. Each text becomes one
sparse row of three blocks, in this column order:

1. ``embedding``: the 384-d all-MiniLM-L6-v2 embedding of :mod:`.embedding` (unit norm;
   ``max_tokens`` as there);
2. ``char``: character n-grams of 1 to ``char_max`` characters inside word boundaries (scikit-
   learn's ``char_wb`` analyzer: each word padded with a space), lowercased, hashed into
   ``n_features`` columns (signed 32-bit MurmurHash3, no alternating signs), counts as
   ``1 + log(tf)``, unit L2 norm;
3. ``word``: the word unigrams + bigrams of :mod:`.text` (``hashed-ngrams``) hashed into
   ``n_features`` columns, ``1 + log(tf)``, unit L2 norm;

each block multiplied by its weight (``embedding_weight``, ``char_weight``, ``word_weight``),
then the whole row by ``norm / sqrt(sum of the squared weights)``: a text with every weighted
block non-empty has L2 norm ``norm``. The factor is one constant, not a per-row normalisation,
so an empty block (a text with no word characters) stays zero and does not inflate the others.
Then the :data:`~.base.INTERCEPT` column (a new project gets it, as with ``minilm``).

Two names, two sets of defaults (the same class of rows):

* ``minilm-ngrams``: embedding 1 + word n-grams 1 (char 0). The words add the exact terms the
  embedding blurs: online accuracy at a 10% budget 0.972 -> 0.980 on SMS spam (D-AMD) and
  0.855 -> 0.859 on AG News (MD-AMD); a new text project's default.
* ``minilm-chars``: embedding 1 + char n-grams 1 + word n-grams 0.5, for short messages (SMS,
  chat): the character n-grams keep the surface forms that give spam away (``£``, ``txt``,
  ``150p``, ``WIN``): SMS 0.983 at 10% (every-label ceiling 0.978 -> 0.987), but on the longer
  AG News texts they cost (0.848 at 10%).

``norm`` 2 (the option's default): chosen when it gained 0.3-1 point over norm 1 on SMS (D-AMD
with ``eta`` 3 on norm-1 rows did the same); with the budget controller of now, norm 1 and 2
measure the same on both streams for these configs (benchmarks/TEXT_FEATURES.md).

A new project (``new_project``, both names) gets word weight 1.5 and row norm 1.5: the exact
words get more of each update. A stored config keeps the weights and norm it names, and one
without them means the defaults above, so existing projects keep their vectors. Measured over
10 permutations on SMS at 5 / 10 / 20% labels: ``minilm-ngrams`` D-AMD 0.977 / 0.981 / 0.982 ->
0.980 / 0.984 / 0.985, ``minilm-chars`` 0.981 / 0.983 / 0.986 -> 0.982 / 0.985 / 0.986, now
ahead of river's EntropySampler + logistic regression on the same vectors, which they trailed by
up to 0.2 point (docs/algorithms/common.md, "Text rows of a new project").

Memory: ``384 + 2 * n_features (+ 1)`` columns; the learners keep dense weights, so at the
default ``n_features = 2**18`` a weight vector is 4 MB of float64 per class (x2 for the
diagonal second-order learners). Speed: the embedding's (the n-grams cost about 1%).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ..params import Param
from .base import INTERCEPT, NEW_PROJECT_INTERCEPT, BaseFeaturizer, decode_utf8, empty_rows
from .embedding import DIM, MAX_TOKENS, encoder, model_dir
from .text import Counter, sublinear_l2, word_vectorizer


def _weight(block: str, default: float) -> Param:
    return Param(f"{block}_weight", default, float, f"weight of the {block} block (each block has "
                 "unit L2 norm before it is weighted; 0 leaves the block's columns empty)",
                 low=0.0, high=10.0)


def hybrid_options(char_weight: float, word_weight: float, max_tokens: Param = MAX_TOKENS,
                   norm: float = 2.0) -> tuple[Param, ...]:
    """The options of the hybrid featurizers, with the given default block weights, row norm and
    the embedding's token limit."""
    return (
        max_tokens,
        Param("char_max", 4, int, "longest character n-gram (n-grams of 1 to char_max "
              "characters inside word boundaries)", low=1, high=8),
        Param("n_features", 2**18, int, "hashed columns of the char block and of the word block "
              "each", low=2**4, high=2**22, log=True),
        _weight("embedding", 1.0),
        _weight("char", char_weight),
        _weight("word", word_weight),
        Param("norm", norm, float, "L2 norm of a row whose weighted blocks are all non-empty "
              "(before the intercept column)", low=0.0, high=100.0, low_open=True),
        INTERCEPT,
    )


def char_vectorizer(n_features: int, char_max: int) -> Counter:
    """Hashed character 1- to ``char_max``-grams inside word boundaries (block 2 of the module
    docstring). scikit-learn is imported here, by the featurizers whose char block is on only
    (its import costs ~150 MB per process, docs/performance.md)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(n_features=n_features, analyzer="char_wb", ngram_range=(1, char_max),
                             lowercase=True, alternate_sign=False, norm=None, dtype=np.float64)


class HybridTextFeaturizer(BaseFeaturizer):
    """``minilm-ngrams``: MiniLM embedding + hashed word n-grams, optional char n-grams
    (module docstring)."""

    kind = "text"
    name = "minilm-ngrams"
    version = 1
    options = hybrid_options(char_weight=0.0, word_weight=1.0)
    #: a new project's word weight and row norm, for both names (module docstring); stored
    #: configs keep theirs
    new_project: ClassVar[dict[str, Any]] = {"intercept": NEW_PROJECT_INTERCEPT, "word_weight": 1.5,
                                             "norm": 1.5}
    #: columns of the embedding block
    dim: ClassVar[int] = DIM

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        config = self.config()
        weights = np.array([config[f"{b}_weight"] for b in ("embedding", "char", "word")])
        if not weights.any():
            raise ValueError(f"{self.name}: at least one of embedding_weight, char_weight and "
                             "word_weight must be > 0")
        self._scale = config["norm"] / float(np.sqrt(weights @ weights))
        self._weights = weights * self._scale
        self.max_tokens: int = config["max_tokens"]
        hashed: int = config["n_features"]
        self._char = char_vectorizer(hashed, config["char_max"]) if weights[1] > 0 else None
        self._word = word_vectorizer(hashed)
        self.n_features = self.dim + 2 * hashed + self.intercept_columns()
        self.check_model()  # a missing or wrong model package is reported when the featurizer is built

    def check_model(self) -> None:
        """FeatureError when the package carrying the embedding's weights is missing or another version."""
        model_dir()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm embeddings ``(len(texts), dim)`` of ``texts`` (the first block, before its weight)."""
        return encoder().embed(texts, self.max_tokens)

    def _parse(self, raw: Any) -> str:
        return decode_utf8(raw, "text")

    def _rows(self, parsed: Sequence[str]) -> sp.csr_matrix:
        return self._blocks(self.embed(parsed), parsed)

    def combine(self, embedded: np.ndarray, texts: Sequence[str]) -> sp.csr_matrix:
        """The rows :meth:`transform` gives ``texts``, from their unit-norm embeddings
        ``embedded`` (len(texts), :attr:`dim`) computed elsewhere (e.g. by the ``minilm`` featurizer at
        the same ``max_tokens``): lets a benchmark compare configs without embedding again."""
        return self._finish(self._blocks(embedded, texts), len(texts))

    def _blocks(self, embedded: np.ndarray, texts: Sequence[str]) -> sp.csr_matrix:
        w_embedding, w_char, w_word = self._weights
        blocks = [sp.csr_matrix(np.asarray(embedded, dtype=np.float64) * w_embedding)]
        hashed = self._word.n_features
        for vectorizer, weight in ((self._char, w_char), (self._word, w_word)):
            # a block of weight 0 is all zeros: not counted at all (minilm-ngrams' char block)
            blocks.append(sublinear_l2(vectorizer, texts) * weight if vectorizer is not None and weight > 0
                          else empty_rows(len(texts), hashed))
        return sp.hstack(blocks, format="csr")


class ShortTextFeaturizer(HybridTextFeaturizer):
    """``minilm-chars``: the same rows with char n-grams on by default (module docstring)."""

    name = "minilm-chars"
    options = hybrid_options(char_weight=1.0, word_weight=0.5)


FEATURIZER = HybridTextFeaturizer
