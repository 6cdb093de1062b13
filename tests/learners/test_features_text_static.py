"""``wordllama-ngrams`` (learners/features/text_static.py): the static embedding block, the same
vectors alone or in a batch, and the same vectors in the app, the replay and an exported model;
the projects of the other text featurizers keep theirs (tests/learners/test_features_text_hybrid.py)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from learners.evaluation.raw import featurizer_config, load_raw
from learners.features import DEFAULT, default_config, featurizer_names, make_featurizer, text_static
from learners.features.base import NEW_PROJECT_INTERCEPT

TEXTS = ["Free entry in 2 a wkly comp to win FA Cup final tkts 21st May 2005.", "see you at 5",
         "WINNER!! claim your £900 prize, call 09061701461", "Ok lar... Joking wif u oni...", "ok"]
HASHED = 2**10


def featurizer(**options):
    return make_featurizer({"kind": "text", "name": "wordllama-ngrams", "n_features": HASHED, **options})


def test_it_is_a_text_featurizer_but_not_the_default():
    assert "wordllama-ngrams" in featurizer_names("text")
    assert DEFAULT["text"] == "minilm-ngrams"  # it did not meet the accuracy bar (benchmarks/FAST_TEXT.md)
    config = default_config("text", "wordllama-ngrams")
    assert config["intercept"] == NEW_PROJECT_INTERCEPT
    assert config["word_weight"] == 1.5 and config["norm"] == 1.5
    assert make_featurizer(config).config() == config


def test_the_embedding_block_is_the_unit_mean_of_the_token_vectors():
    f = featurizer(intercept=0)
    table = text_static.static_embedding()
    tokens = table.tokenizer.encode("see you at 5", add_special_tokens=False).ids
    assert tokens
    mean = table.table[tokens].astype(np.float64).mean(0)
    expected = mean / np.linalg.norm(mean)
    X = f.transform(["see you at 5"]).toarray()[0]
    scale = 1.5 / np.sqrt(1 + 1.5**2)  # norm / sqrt(sum of squared weights), embedding weight 1
    np.testing.assert_allclose(X[:text_static.DIM], expected * scale, rtol=1e-5)
    word = X[text_static.DIM + HASHED:]
    assert np.isclose(np.linalg.norm(word), 1.5 * scale)
    assert f.n_features == text_static.DIM + 2 * HASHED


def test_a_text_embeds_to_the_same_bits_alone_or_in_a_batch():
    f = featurizer()
    batch = f.transform(TEXTS * 3)
    for i, text in enumerate(TEXTS):
        assert (f.transform_one(text) != batch[i]).nnz == 0


def test_a_text_without_tokens_has_an_empty_embedding_block():
    X = featurizer(intercept=0).transform(["", "ok"]).toarray()
    assert not X[0].any() and X[1, :text_static.DIM].any()


@pytest.mark.django_db
def test_the_app_the_replay_and_an_exported_model_see_the_same_vectors(tmp_path):
    from annotator.labelling.engine.pipeline import update_project
    from annotator.labelling.engine.stored_vectors import decode
    from annotator.labelling.ingest import import_records, parse_upload
    from annotator.labelling.projects.creation import create_project
    from annotator.labelling.reporting.export import export_model
    from learners import load_model

    texts = [f"{t} {i}" for i, t in enumerate(TEXTS * 8)]
    data = ("text,label\n" + "".join(f'"{t}",{"spam" if i % 2 else "ham"}\n'
                                     for i, t in enumerate(texts))).encode()
    path = tmp_path / "sms.csv"
    path.write_bytes(data)
    config = featurizer_config("text", "wordllama-ngrams", {"n_features": str(HASHED)})
    project = create_project(name="static", item_kind="text", classes=["ham", "spam"], task="binary",
                             algorithm="d-amd", featurizer_config=config)
    items = import_records(project, parse_upload(project, "sms.csv", data))
    n = project.featurizer().n_features
    X_app = sp.vstack([decode(it.vector, n) for it in items], format="csr")
    X_replay = load_raw([path], "text", config).X
    update_project(project.pk)
    export_model(project, tmp_path / "model.npz")
    X_export = load_model(tmp_path / "model.npz").featurizer.transform(texts)
    assert X_app.shape == X_replay.shape == X_export.shape == (40, n)
    assert (X_app != X_replay).nnz == 0 and (X_app != X_export).nnz == 0
