"""learners/features/word_hashing.py gives scikit-learn's HashingVectorizer counts and normalize's
rows bit for bit (so hashed-ngrams and minilm-ngrams projects keep their stored vectors)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.preprocessing import normalize
from sklearn.utils import murmurhash3_32

from learners.features.word_hashing import TOKEN_PATTERN, WordHasher, _murmur3_32, l2_rows

TEXTS = ["Go until jurong point, crazy.. Available only in bugis n great world la e buffet...",
         "WINNER!! As a valued network customer you have been selected to receivea £900 prize reward!",
         "", "   ", "a", "ÉCOLE Über straße 東京 タワー", "x" * 1001, "a b a b a b", "éé ab\u00a0cd 1 2 3",
         "Wall St. Bears Claw Back Into the Black (Reuters) Reuters - Short-sellers, Wall Street's dwindling"]


@pytest.mark.parametrize("token", ["", "a", "ab", "abc", "abcd", "abcde", "hello world", "東京", "x" * 97])
def test_murmurhash3_is_sklearns(token):
    buf = np.frombuffer(token.encode("utf-8"), dtype=np.uint8)
    assert _murmur3_32(buf, 0, len(buf)) == murmurhash3_32(token, 0)


@pytest.mark.parametrize("n_features", [16, 1000, 2**18])
@pytest.mark.parametrize("lowercase", [True, False])
def test_counts_and_rows_are_sklearns_bit_for_bit(n_features, lowercase):
    texts = TEXTS * 3
    ref = HashingVectorizer(n_features=n_features, ngram_range=(1, 2), token_pattern=TOKEN_PATTERN,
                            lowercase=lowercase, alternate_sign=False, norm=None,
                            dtype=np.float64).transform(texts).tocsr()
    mine = WordHasher(n_features, lowercase).transform(texts)
    assert mine.shape == ref.shape
    np.testing.assert_array_equal(mine.indptr, ref.indptr)
    np.testing.assert_array_equal(mine.indices, ref.indices)
    np.testing.assert_array_equal(mine.data, ref.data)
    np.testing.assert_array_equal(l2_rows(mine.copy()).data, normalize(ref, norm="l2").data)


def test_the_text_featurizers_no_longer_import_sklearn_for_their_words():
    import subprocess
    import sys

    code = ("import sys; from learners.features import make_featurizer, default_config;"
            "make_featurizer(default_config('text', 'hashed-ngrams')).transform(['a b']);"
            "make_featurizer(default_config('text', 'wordllama-ngrams')).transform(['a b']);"
            "print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
