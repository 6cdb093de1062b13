"""The hybrid text featurizers (``minilm-ngrams``, ``minilm-chars``): their three blocks and
weights, options, bad inputs, and a project of kind text using one, replayed from the same
upload file."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from learners.evaluation.raw import featurizer_config, load_raw
from learners.features import FeatureError, default_config, embedding, featurizer_names, make_featurizer
from learners.features.base import NEW_PROJECT_INTERCEPT

TEXTS = ["Free entry in 2 a wkly comp to win FA Cup final tkts 21st May 2005.", "see you at 5",
         "WINNER!! claim your £900 prize, call 09061701461", "Ok lar... Joking wif u oni...", "ok"]
HASHED = 2**10


def hybrid(name: str = "minilm-chars", **options):
    return make_featurizer({"kind": "text", "name": name, "n_features": HASHED, **options})


def blocks(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The embedding, char and word blocks of rows made with n_features=HASHED."""
    A = X.toarray()
    d = embedding.DIM
    return A[:, :d], A[:, d:d + HASHED], A[:, d + HASHED:d + 2 * HASHED]


def norms(A: np.ndarray) -> np.ndarray:
    return np.linalg.norm(A, axis=1)


def test_rows_are_the_weighted_embedding_char_and_word_blocks():
    """Module docstring of learners/features/text_hybrid.py: each block has unit norm times its
    weight, the row is scaled so that its norm is ``norm``; the embedding block is the minilm
    vector and the word block the hashed-ngrams row."""
    f = hybrid(intercept=0)
    X = f.transform(TEXTS)
    assert X.shape == (5, embedding.DIM + 2 * HASHED) == (5, f.n_features) and X.format == "csr"
    scale = 2.0 / np.sqrt(1.0 + 1.0 + 0.25)  # defaults: norm 2, weights 1, 1, 0.5
    emb, char, word = blocks(X)
    minilm = make_featurizer({"kind": "text", "name": "minilm"}).transform(TEXTS).toarray()
    np.testing.assert_allclose(emb, minilm * scale, atol=1e-6)
    hashed = make_featurizer({"kind": "text", "name": "hashed-ngrams", "n_features": HASHED})
    np.testing.assert_allclose(word, hashed.transform(TEXTS).toarray() * 0.5 * scale, rtol=1e-12)
    np.testing.assert_allclose(norms(char), scale, rtol=1e-12)
    np.testing.assert_allclose(norms(X.toarray()), 2.0, rtol=1e-6)
    # "ok" padded as " ok ": " ", "o", "k", " o", "ok", "k ", " ok", "ok ", " ok " (9 n-grams)
    assert (char >= 0).all() and (char[4] > 0).sum() == 9
    # char n-grams are lowercased: case does not change them, but the embedding is uncased too
    np.testing.assert_allclose(f.transform(["FREE PRIZE"]).toarray(), f.transform(["free prize"]).toarray(),
                               atol=1e-6)


def test_minilm_ngrams_is_the_embedding_and_word_blocks_and_the_text_default():
    f = hybrid("minilm-ngrams", intercept=0)
    emb, char, word = blocks(f.transform(TEXTS))
    assert not char.any()  # char_weight 0 by default
    scale = 2.0 / np.sqrt(2.0)  # weights 1, 0, 1; norm 2
    hashed = make_featurizer({"kind": "text", "name": "hashed-ngrams", "n_features": HASHED})
    np.testing.assert_allclose(word, hashed.transform(TEXTS).toarray() * scale, rtol=1e-12)
    np.testing.assert_allclose(norms(emb), scale, rtol=1e-5)
    assert default_config("text")["name"] == "minilm-ngrams"
    # the same class of rows: minilm-chars' weights given to minilm-ngrams give minilm-chars' rows
    same = hybrid("minilm-ngrams", char_weight=1, word_weight=0.5).transform(TEXTS)
    np.testing.assert_array_equal(same.toarray(), hybrid().transform(TEXTS).toarray())


def test_a_new_project_gets_word_weight_and_norm_1_5_and_stored_configs_keep_theirs():
    """A new project's hybrid rows: word block 1.5, row norm 1.5 (module docstring); a stored
    config without those options means the options' defaults, so an existing project's vectors
    do not change."""
    config = default_config("text", "minilm-ngrams")
    assert (config["word_weight"], config["norm"], config["intercept"]) == (1.5, 1.5, NEW_PROJECT_INTERCEPT)
    chars = default_config("text", "minilm-chars")
    assert (chars["word_weight"], chars["norm"], chars["char_weight"]) == (1.5, 1.5, 1.0)
    old_chars = hybrid("minilm-chars").config()  # a stored minilm-chars config without them
    assert (old_chars["word_weight"], old_chars["norm"]) == (0.5, 2.0)
    new = make_featurizer({**config, "n_features": HASHED, "intercept": 0})
    stored = hybrid("minilm-ngrams", intercept=0)  # no word_weight, no norm: the old meaning
    assert stored.config()["word_weight"] == 1.0 and stored.config()["norm"] == 2.0
    emb_new, _, word_new = blocks(new.transform(TEXTS))
    emb_old, _, word_old = blocks(stored.transform(TEXTS))
    scale_new, scale_old = 1.5 / np.sqrt(1 + 1.5**2), 2.0 / np.sqrt(2.0)
    np.testing.assert_allclose(emb_new, emb_old * scale_new / scale_old, rtol=1e-12)
    np.testing.assert_allclose(word_new, word_old * 1.5 * scale_new / scale_old, rtol=1e-12)
    np.testing.assert_allclose(norms(new.transform(TEXTS).toarray()), 1.5, rtol=1e-6)


def test_rows_from_embeddings_computed_elsewhere_equal_the_transform():
    f = hybrid()
    minilm = make_featurizer({"kind": "text", "name": "minilm"}).transform(TEXTS).toarray()
    np.testing.assert_array_equal(f.combine(minilm, TEXTS).toarray(), f.transform(TEXTS).toarray())


def test_weights_and_norm_options():
    _, char, word = blocks(hybrid(intercept=0, word_weight=0, norm=1).transform(TEXTS))
    assert not word.any()  # a weight of 0 leaves the block empty
    np.testing.assert_allclose(norms(char), 1 / np.sqrt(2), rtol=1e-12)
    weighted = hybrid(intercept=0, embedding_weight=3, char_weight=4, word_weight=0)
    emb, char, _ = blocks(weighted.transform(TEXTS))
    np.testing.assert_allclose(norms(emb), 2 * 3 / 5, rtol=1e-5)
    np.testing.assert_allclose(norms(char), 2 * 4 / 5, rtol=1e-12)
    # longer char n-grams: more distinct n-grams per text
    short, long_ = (blocks(hybrid(intercept=0, char_max=m).transform(TEXTS))[1] for m in (2, 6))
    assert ((long_ > 0).sum(axis=1) > (short > 0).sum(axis=1)).all()


def test_empty_text_and_text_without_words():
    X = hybrid(intercept=0).transform(["", "!!!"])
    emb, char, word = blocks(X)
    assert norms(emb).min() > 0  # [CLS] [SEP] still embeds
    assert not char[0].any() and not word.any()  # no words: the n-gram blocks stay zero, not rescaled
    assert char[1].any()  # "!!!" is a whitespace-separated token: char_wb n-grams of it


def test_a_new_project_gets_the_intercept_column_and_configs_round_trip():
    config = default_config("text", "minilm-chars")
    assert config["intercept"] == NEW_PROJECT_INTERCEPT > 0
    f = make_featurizer(config)
    assert f.n_features == embedding.DIM + 2 * 2**18 + 1
    X = f.transform(TEXTS[:2])
    np.testing.assert_array_equal(X.toarray()[:, -1], NEW_PROJECT_INTERCEPT)
    np.testing.assert_array_equal(make_featurizer(f.config()).transform(TEXTS[:2]).toarray(), X.toarray())
    np.testing.assert_allclose(f.transform_one(TEXTS[1]).toarray(), X[1:].toarray(), atol=1e-5)
    assert {"minilm-ngrams", "minilm-chars"} <= set(featurizer_names("text"))


@pytest.mark.parametrize("options,needle", [
    ({"embedding_weight": 0, "char_weight": 0, "word_weight": 0}, "at least one of embedding_weight"),
    ({"char_weight": -1}, "char_weight must be a number >= 0"),
    ({"char_max": 0}, "char_max must be an integer >= 1"),
    ({"norm": 0}, "norm must be a number > 0"),
    ({"max_tokens": 4}, "max_tokens must be an integer >= 8"),
    ({"width": 8}, "unknown option(s) ['width']"),
])
def test_bad_configs_name_the_problem(options, needle):
    with pytest.raises(ValueError) as info:
        hybrid(**options)
    assert needle in str(info.value)


@pytest.mark.parametrize("raw,needle", [(b"abc\xff", "text is not valid UTF-8 at byte 3"),
                                        (17, "text item must be a string, got int")])
def test_bad_items_are_feature_errors(raw, needle):
    with pytest.raises(FeatureError, match="item 1: " + needle):
        hybrid().transform(["fine", raw])


@pytest.mark.django_db
def test_a_text_project_with_the_hybrid_featurizer_stores_what_the_replay_reads(tmp_path):
    """A project of kind text configured with minilm-chars imports an upload through the app's
    ingest; the replay of the same file with ``--featurizer minilm-chars`` sees the same vectors
    (a new project's minilm-ngrams: tests/learners/test_replay_raw.py, through the default)."""
    from annotator.labelling.engine.stored_vectors import decode
    from annotator.labelling.ingest import import_records, parse_upload
    from annotator.labelling.projects.creation import create_project

    data = ("text,label\n" + "".join(f'"{t}",{"spam" if i % 2 else "ham"}\n'
                                     for i, t in enumerate(TEXTS * 8))).encode()
    path = tmp_path / "sms.csv"
    path.write_bytes(data)
    config = featurizer_config("text", "minilm-chars", {"n_features": str(HASHED)})
    project = create_project(name="hybrid", item_kind="text", classes=["ham", "spam"], task="binary",
                             algorithm="d-amd", featurizer_config=config)
    items = import_records(project, parse_upload(project, "sms.csv", data))
    n = project.featurizer().n_features
    assert n == embedding.DIM + 2 * HASHED + 1
    X_app = sp.vstack([decode(it.vector, n) for it in items], format="csr")
    ds = load_raw([path], "text", config)
    assert ds.X.shape == X_app.shape == (40, n)
    assert (X_app != ds.X).nnz == 0
    assert [str(it.gold) for it in items] == [str(v) for v in ds.y]
