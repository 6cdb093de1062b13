"""Model export: save_model / load_model round trips on featurized real data, and bad files."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import learners
from learners.features import FeatureError, default_config, make_featurizer
from learners.model_file import card_path, model_bytes
from tests.support import raw_data

CARD = {"algorithm": "paa-i", "delta": 0.5, "labels_used": 0, "items_seen": 0,
        "metrics": {"query_ratio": 0.25}, "created": "2025-01-01T00:00:00Z", "model_version": 3}


def stream(name: str, featurizer, texts: list[str], labels: list, classes: list, **params):
    """Run the app's loop (decide, learn when queried) over featurized ``texts``."""
    lrn = learners.make(name, n_features=featurizer.n_features, classes=classes, **params)
    rng = np.random.default_rng(7)
    X = featurizer.transform(texts)
    for i, y in enumerate(labels):
        if lrn.decide(X[i], rng).queried:
            lrn.learn(X[i], y)
    return lrn


def tiny_model():
    f = make_featurizer({"kind": "vectors", "n_features": 3})
    lrn = learners.make("paa-i", n_features=3, classes=["no", "yes"])
    lrn.learn(f.transform_one([[0, 1.0]]), "yes")
    return lrn, f


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.datasets
def test_binary_text_model_predicts_identically_after_export(tmp_path):
    texts, labels = raw_data.sms(1200)
    f = make_featurizer({**default_config("text", "hashed-ngrams"), "n_features": 2**16})
    lrn = stream("paa-i", f, texts[:800], labels[:800], ["ham", "spam"], delta=0.5, C=1.0)
    assert 50 < lrn.n_labels < 800  # it really was active
    held_out = texts[800:]
    X = f.transform(held_out)
    before_pred, before_scores = lrn.predict(X).tolist(), lrn.decision_function(X)
    card = {**CARD, "labels_used": lrn.n_labels, "items_seen": lrn.n_seen}

    learners.save_model(tmp_path / "sms.npz", lrn, f, card)
    model = learners.load_model(tmp_path / "sms.npz")

    assert model.predict(held_out) == before_pred
    assert set(before_pred) == {"ham", "spam"}
    np.testing.assert_array_equal(model.decision_function(held_out), before_scores)
    assert model.featurizer.config() == f.config()
    np.testing.assert_array_equal(model.learner.w, lrn.w)
    assert (model.learner.n_seen, model.learner.n_labels) == (lrn.n_seen, lrn.n_labels)
    assert model.card["learner"] == {"name": "paa-i", "params": lrn.get_params(),
                                     "classes": ["ham", "spam"], "n_features": 2**16 + 1,
                                     "n_seen": 800, "n_labels": lrn.n_labels}
    assert model.card["featurizer"] == f.config()
    assert {k: model.card[k] for k in card} == card
    assert json.loads(card_path(tmp_path / "sms.npz").read_text()) == model.card
    assert files_in(tmp_path) == ["sms.json", "sms.npz"]  # no temporary files left


@pytest.mark.datasets
def test_multiclass_model_with_int_classes_round_trips(tmp_path):
    texts, labels = raw_data.ag_news(900)
    f = make_featurizer({**default_config("text", "hashed-ngrams"), "n_features": 2**15})
    lrn = stream("mpaa-i", f, texts[:600], labels[:600], [1, 2, 3, 4], delta=1.0)
    X = f.transform(texts[600:])
    before = lrn.predict(X).tolist()
    learners.save_model(str(tmp_path / "news.npz"), lrn, f, {"algorithm": "mpaa-i"})
    model = learners.load_model(str(tmp_path / "news.npz"))
    after = model.predict(texts[600:])
    assert after == before and all(type(c) is int for c in after)  # int classes stay ints
    assert np.mean(np.asarray(after) == np.asarray(labels[600:])) > 0.5  # chance: 0.25
    np.testing.assert_array_equal(model.decision_function(texts[600:]), lrn.decision_function(X))
    assert model.decision_function(texts[600:602]).shape == (2, 4)


def test_predict_reports_bad_raw_items_by_position(tmp_path):
    lrn, f = tiny_model()
    learners.save_model(tmp_path / "m.npz", lrn, f, {})
    model = learners.load_model(tmp_path / "m.npz")
    assert model.predict([[[0, 2.0]], {"0": -1}]) == ["yes", "no"]
    with pytest.raises(FeatureError, match="item 1: vector index 3 is out of range"):
        model.predict([[[0, 2.0]], [[3, 1.0]]])


def test_model_bytes_are_a_loadable_model_for_download_views(tmp_path):
    lrn, f = tiny_model()
    (tmp_path / "download.npz").write_bytes(model_bytes(lrn, f, {"algorithm": "paa-i"}))
    model = learners.load_model(tmp_path / "download.npz")
    assert model.predict([[[0, 1.0]], [[0, -1.0]]]) == ["yes", "no"]
    assert model.card["algorithm"] == "paa-i" and model.card["learner"]["name"] == "paa-i"


def test_card_json_accepts_numpy_scalars(tmp_path):
    lrn, f = tiny_model()
    learners.save_model(tmp_path / "m.npz", lrn, f, {"items_seen": np.int64(5), "acc": np.float32(0.5)})
    assert learners.load_model(tmp_path / "m.npz").card["items_seen"] == 5


@pytest.mark.parametrize("path,card,needle", [
    ("m.pkl", {}, "must end in .npz"),
    ("m.npz", {"metrics": {"accuracy": float("nan")}}, "card is not JSON-able"),
    ("m.npz", {"created": object()}, "card is not JSON-able"),
    ("m.npz", {"featurizer": {"kind": "text"}}, "card['featurizer']"),
    ("m.npz", {"learner": {"name": "paa"}}, "card['learner']"),
    ("m.npz", [], "card must be a dict"),
])
def test_save_refuses_bad_arguments_and_writes_nothing(tmp_path, path, card, needle):
    lrn, f = tiny_model()
    with pytest.raises(ValueError) as info:
        learners.save_model(tmp_path / path, lrn, f, card)
    assert needle in str(info.value)
    assert files_in(tmp_path) == []


def test_save_refuses_a_featurizer_of_another_width(tmp_path):
    lrn, _ = tiny_model()
    wide = make_featurizer({"kind": "vectors", "n_features": 5})
    with pytest.raises(ValueError, match="the learner has 3 features but the featurizer produces 5"):
        learners.save_model(tmp_path / "m.npz", lrn, wide, {})
    assert files_in(tmp_path) == []


def test_save_accepts_a_card_that_repeats_the_featurizer_config(tmp_path):
    lrn, f = tiny_model()
    learners.save_model(tmp_path / "m.npz", lrn, f, {"featurizer": f.config()})
    assert learners.load_model(tmp_path / "m.npz").card["featurizer"] == f.config()


def npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def model_entries(tmp_path) -> dict[str, np.ndarray]:
    lrn, f = tiny_model()
    learners.save_model(tmp_path / "good.npz", lrn, f, {})
    with np.load(tmp_path / "good.npz", allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def u8_json(value) -> np.ndarray:
    return np.frombuffer(json.dumps(value).encode(), dtype=np.uint8)


@pytest.mark.parametrize("make_bytes,needle", [
    (lambda e: b"hello, not a zip", "is not a model file"),
    (lambda e: npz_bytes(w=np.zeros(3)), "missing entries"),
    (lambda e: learners.to_bytes(tiny_model()[0]), "missing entries"),  # a bare learner state
    (lambda e: npz_bytes(**{**e, "card": np.array([{"a": 1}], dtype=object)}), "allow_pickle=False"),
    (lambda e: npz_bytes(**{**e, "format": u8_json({"format": "learners-model", "version": 2})}),
     "format record"),
    (lambda e: npz_bytes(**{**e, "featurizer": u8_json({"kind": "audio"})}),
     "unknown featurizer kind 'audio'"),
    (lambda e: npz_bytes(**{**e, "featurizer": u8_json({"kind": "vectors", "n_features": 4})}),
     "the learner has 3 features but the featurizer produces 4"),
    (lambda e: npz_bytes(**{**e, "learner_state": np.frombuffer(b"junk", np.uint8)}),
     "not a learner state file"),
])
def test_load_refuses_files_that_are_not_models(tmp_path, make_bytes, needle):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(make_bytes(model_entries(tmp_path)))
    with pytest.raises(ValueError) as info:
        learners.load_model(bad)
    assert needle in str(info.value)


def test_load_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model file"):
        learners.load_model(tmp_path / "absent.npz")


def test_loading_and_predicting_needs_no_django(tmp_path):
    lrn, f = tiny_model()
    learners.save_model(tmp_path / "m.npz", lrn, f, {})
    code = ("import sys, learners\n"
            f"m = learners.load_model({str(tmp_path / 'm.npz')!r})\n"
            "assert m.predict([[[0, 1.0]]]) == ['yes']\n"
            "assert not any(n == 'django' or n.startswith('django.') for n in sys.modules)\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


@pytest.mark.datasets
def test_url_model_with_the_default_featurizer_predicts_raw_urls_without_django(tmp_path):
    urls, types = raw_data.urls(1500)
    labels = ["benign" if t == "benign" else "malicious" for t in types]
    f = make_featurizer(default_config("url"))  # url-ngrams, a new project's
    lrn = stream("soal", f, urls[:1000], labels[:1000], ["benign", "malicious"])
    expected = lrn.predict(f.transform(urls[1000:])).tolist()
    assert set(expected) == {"benign", "malicious"}
    learners.save_model(tmp_path / "urls.npz", lrn, f, {})
    (tmp_path / "held_out.json").write_text(json.dumps(urls[1000:]))
    code = ("import json, sys, learners\n"
            f"m = learners.load_model({str(tmp_path / 'urls.npz')!r})\n"
            f"urls = json.loads(open({str(tmp_path / 'held_out.json')!r}).read())\n"
            "print(json.dumps(m.predict(urls)))\n"
            "assert not any(n == 'django' or n.startswith('django.') for n in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert json.loads(out.stdout) == expected
