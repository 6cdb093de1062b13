"""The batch refit (learners/refit.py): the fit itself against scikit-learn, the check against the
online learner, and the exported refit predicting raw items without Django or pickle."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

import learners
from learners.base import state_from_bytes, state_to_bytes
from learners.features import default_config, make_featurizer
from learners.model_file import refit_description
from learners.refit import (
    MAX_WEIGHT,
    NEIGHBOURS,
    OWN_WEIGHT,
    STEPS,
    UNLABELLED_PER_LABEL,
    LinearModel,
    Neighbourhood,
    fit_softmax,
    importance_weights,
    paired_gain,
    refit,
    steps,
)
from tests.support import raw_data


def blobs(n: int, k: int, d: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(k, d))
    y = rng.integers(0, k, size=n)
    return centres[y] + rng.normal(size=(n, d)), y


@pytest.mark.parametrize("k", [2, 3])
def test_the_fit_is_scikit_learns_logistic_regression(k):
    X, y = blobs(300, k)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=300)
    ours = fit_softmax(sp.csr_matrix(X), y, w, list(range(k)), l2=1.0)
    theirs = LogisticRegression(C=1.0, tol=1e-10, max_iter=5000).fit(X, y, sample_weight=w)
    # scikit-learn fits two classes as one logistic margin: ours is the same model, centred
    proba = theirs.predict_proba(X)
    S = ours.class_scores(X)
    ours_proba = np.exp(S - S.max(axis=1, keepdims=True))
    ours_proba /= ours_proba.sum(axis=1, keepdims=True)
    if k == 2:  # two softmax rows +-v/2 penalise (l2/4)|v|^2 of the margin v: C = 1 is l2 = 2
        ours = fit_softmax(sp.csr_matrix(X), y, w, [0, 1], l2=2.0)
        ours_proba = 1 / (1 + np.exp(-ours.decision_function(X)))
        proba = proba[:, 1]
    np.testing.assert_allclose(ours_proba, proba, atol=2e-3)
    assert np.mean(ours.predict_codes(X) == theirs.predict(X)) > 0.99


def test_only_the_used_columns_get_weights():
    X = sp.csr_matrix((np.ones(4), ([0, 1, 2, 3], [5, 9, 5, 9])), shape=(4, 1000))
    model = fit_softmax(X, np.array([0, 1, 0, 1]), np.ones(4), ["a", "b"])
    assert model.columns.tolist() == [5, 9] and model.coef.shape == (2, 2)
    assert model.predict(X).tolist() == ["a", "b", "a", "b"]


def test_importance_weights_are_one_over_q_normalised_and_clipped():
    w = importance_weights(np.array([1.0, 0.5, 0.25]))
    np.testing.assert_allclose(w, np.array([1, 2, 4]) / (7 / 3))
    tiny = importance_weights(np.array([1.0] * 99 + [1e-6]))
    assert tiny.max() / np.median(tiny) == pytest.approx(MAX_WEIGHT) and tiny.mean() == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"in \(0, 1\]"):
        importance_weights(np.array([0.0, 1.0]))


def test_model_state_round_trips_and_refuses_other_shapes():
    X, y = blobs(60, 3)
    model = fit_softmax(sp.csr_matrix(X), y, np.ones(60), ["x", "y", "z"])
    back = LinearModel.from_state(state_from_bytes(state_to_bytes(model.get_state())))
    assert back.predict(X).tolist() == model.predict(X).tolist()
    state = model.get_state()
    state["arrays"]["coef"] = state["arrays"]["coef"][:2]
    with pytest.raises(ValueError, match="do not fit"):
        LinearModel.from_state(state)


def test_the_check_keeps_the_better_model_and_says_why():
    # a perceptron (pea) that saw each label once against a batch fit: on overlapping blobs the
    # batch fit is the better model, and the check must find it
    X, y = blobs(400, 3, seed=3)
    q = np.random.default_rng(4).uniform(0.2, 1.0, size=400)
    result = refit(lambda: learners.make("mpea", n_features=6, classes=[0, 1, 2]), sp.csr_matrix(X), y, q)
    assert result.chosen == "refit" and result.refit_cv > result.online_cv
    assert result.check["labels"] == 400 and result.check["folds"] == 5 and result.check["chosen"] == "refit"
    # too few labels, or a class without a label: no fit, the online learner stays
    few = refit(lambda: learners.make("mpea", n_features=6, classes=[0, 1, 2]), sp.csr_matrix(X[:10]),
                y[:10], q[:10])
    assert few.model is None and few.chosen == "online" and "10 labels" in few.check["skipped"]
    one_missing = refit(lambda: learners.make("mpea", n_features=6, classes=[0, 1, 2]),
                        sp.csr_matrix(X[y < 2]), y[y < 2], q[y < 2])
    assert one_missing.model is None and "class(es) [2]" in one_missing.check["skipped"]


def bags_of_words(n: int, seed: int, vocabulary: int = 300,
                  per_item: int = 5) -> tuple[sp.csr_matrix, np.ndarray]:
    """n items of 3 classes: each holds ``per_item`` words of its class's own ``vocabulary`` and 2
    of 100 words every class shares (columns past ``3 * vocabulary + 100`` stay unused). 150
    labels see about half of a class's words, so a labels-only fit misses the rest."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    rows = [np.concatenate([c * vocabulary + rng.choice(vocabulary, per_item, replace=False),
                            3 * vocabulary + rng.choice(100, 2, replace=False)]) for c in y]
    width = per_item + 2
    return sp.csr_matrix((np.ones(n * width), np.concatenate(rows), np.arange(n + 1) * width),
                         shape=(n, 3 * vocabulary + 200)), y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_self_training_is_kept_where_the_check_finds_it_better(seed):
    """The unlabelled items carry the words the labels never saw: their pseudo-labels give those
    words weights; the check sees the gain on its folds and keeps the self-trained fit, which is
    better on items it never saw."""
    X, y = bags_of_words(150 + 1800 + 600, seed)
    labelled, unlabelled, held_out = slice(0, 150), slice(150, 1950), slice(1950, None)
    fresh = lambda: learners.make("mpea", n_features=X.shape[1], classes=[0, 1, 2])  # noqa: E731
    labels_only = refit(fresh, X[labelled], y[labelled], np.ones(150))
    trained = refit(fresh, X[labelled], y[labelled], np.ones(150), unlabelled=X[unlabelled])
    assert "self_training" not in labels_only.check and labels_only.check["pseudo_labels"] is False
    used = trained.check["self_training"]
    assert used["used"] and used["gain"] > used["standard_error"] > 0 and trained.check["pseudo_labels"]
    # at most 10 unlabelled items per label, a seeded sample: the same one twice
    assert trained.check["unlabelled"] == UNLABELLED_PER_LABEL * 150 < 1800
    again = refit(fresh, X[labelled], y[labelled], np.ones(150), unlabelled=X[unlabelled])
    assert np.array_equal(again.model.coef, trained.model.coef)
    before = np.mean(labels_only.model.predict_codes(X[held_out]) == y[held_out])
    after = np.mean(trained.model.predict_codes(X[held_out]) == y[held_out])
    assert after > before + 0.02, (before, after)
    # the self-trained model has weights on words only unlabelled items hold
    assert len(trained.model.columns) > len(labels_only.model.columns)


def test_self_training_on_items_that_carry_no_signal_is_refused():
    """Unlabelled rows that share no column with the labels: their pseudo-labels are one class
    (the intercept's) and only pull the fit towards it; the check must keep the labels-only fit."""
    X, y = bags_of_words(150 + 600, 0)
    noise = sp.csr_matrix((np.ones(1000), np.random.default_rng(0).integers(1000, 1100, 1000),
                           np.arange(1001)), shape=(1000, X.shape[1]))
    fresh = lambda: learners.make("mpea", n_features=X.shape[1], classes=[0, 1, 2])  # noqa: E731
    labels_only = refit(fresh, X[:150], y[:150], np.ones(150))
    refused = refit(fresh, X[:150], y[:150], np.ones(150), unlabelled=noise)
    assert refused.check["self_training"]["used"] is False and refused.check["unlabelled"] == 1000
    assert np.array_equal(refused.model.coef, labels_only.model.coef)
    assert refused.refit_cv == labels_only.refit_cv


def test_the_neighbourhood_is_the_nearest_rows_by_cosine_never_the_item_itself(monkeypatch):
    """Against a brute-force cosine on rows with dense columns (used by every row) and sparse ones,
    in similarity blocks of a few rows (the block size only bounds memory)."""
    rng = np.random.default_rng(3)
    dense = rng.normal(size=(90, 5))
    sparse_part = sp.random(90, 40, density=0.05, random_state=4).toarray()
    rows = sp.csr_matrix(np.hstack([dense, 3 * sparse_part]))
    monkeypatch.setattr("learners.refit.SIMILARITY_BLOCK", 90 * 7)  # 7 rows per block
    hood = Neighbourhood.of(rows[:30], rows[30:], 6)
    unit = rows.toarray() / np.linalg.norm(rows.toarray(), axis=1, keepdims=True)
    sim = unit @ unit.T
    sim[np.arange(90), np.arange(90)] = -np.inf
    assert hood.index.shape == (90, 6) and hood.n_labelled == 30
    assert not np.any(hood.index == np.arange(90)[:, None])
    np.testing.assert_array_equal(hood.index, np.argsort(-sim, axis=1, kind="stable")[:, :6])


def test_a_pseudo_label_is_averaged_with_the_labels_the_fit_saw_and_the_other_items():
    """Row 0's neighbours: labelled rows 0, 1, 2 (class 1; row 1 not seen by the fit), then
    unlabelled row 1; only the first NEIGHBOURS usable ones count. Row 1's only neighbours are
    unseen labels: it keeps its own probabilities."""
    P = np.array([[0.8, 0.2], [0.6, 0.4]])
    index = np.array([[0, 1, 2, 4] + [0] * (2 * NEIGHBOURS - 4), [1] * (2 * NEIGHBOURS)])
    hood = Neighbourhood(np.vstack([np.zeros((3, 2 * NEIGHBOURS), dtype=int), index]), n_labelled=3)
    known = np.array([True, False, True])
    out = hood.smoothed(P, np.array([1, 1, 1]), known)
    usable = [[0.0, 1.0], [0.0, 1.0], P[1]] + [[0.0, 1.0]] * (NEIGHBOURS - 3)  # rows 0, 2, u1, 0...
    np.testing.assert_allclose(out[0], OWN_WEIGHT * P[0] + (1 - OWN_WEIGHT) * np.mean(usable, axis=0))
    np.testing.assert_allclose(out[1], P[1])
    np.testing.assert_allclose(out.sum(axis=1), 1.0)


def test_the_paired_gain_and_its_standard_error():
    better, base, w = np.array([1, 1, 0, 1]), np.array([1, 0, 0, 0]), np.array([1.0, 2.0, 1.0, 4.0])
    gain, se = paired_gain(better, base, w)
    assert gain == pytest.approx(6 / 8)  # (2 + 4) of the weight 8
    d = w * (better - base)
    assert se == pytest.approx(np.sqrt(np.sum((d - w * gain) ** 2)) / 8)
    assert paired_gain(base, base, w) == (0.0, 0.0)


def test_a_fit_warm_started_on_fewer_columns_reaches_the_same_optimum():
    X, y = bags_of_words(300, 4)
    few = fit_softmax(X[:100], y[:100], np.ones(100), [0, 1, 2], l2=0.1)
    cold = fit_softmax(X, y, np.ones(300), [0, 1, 2], l2=0.1)
    warm = fit_softmax(X, y, np.ones(300), [0, 1, 2], l2=0.1, start=few)
    assert set(few.columns) < set(warm.columns) and np.array_equal(warm.columns, cold.columns)
    np.testing.assert_allclose(warm.class_scores(X), cold.class_scores(X), atol=1e-3)


def test_progress_counts_every_step_and_its_exception_stops_the_fit():
    """What the app's refit job beats with (and stops by, when cancelled)."""
    X, y = blobs(200, 3, seed=5)
    q = np.ones(200)
    seen: list[int] = []
    fresh = lambda: learners.make("mpea", n_features=6, classes=[0, 1, 2])  # noqa: E731
    with_progress = refit(fresh, sp.csr_matrix(X), y, q, progress=seen.append)
    assert seen == list(range(1, STEPS + 1)) and STEPS == 32
    plain = refit(fresh, sp.csr_matrix(X), y, q)
    assert with_progress.check == plain.check and np.array_equal(with_progress.model.coef, plain.model.coef)
    seen.clear()  # with unlabelled items: the neighbourhood, a self-trained fit per fold, one at the end
    unlabelled = sp.csr_matrix(blobs(50, 3, seed=6)[0])
    refit(fresh, sp.csr_matrix(X), y, q, progress=seen.append, unlabelled=unlabelled)
    assert seen == list(range(1, steps(True) + 1)) and steps(True) == 38 and steps(False) == STEPS

    def stop(step: int) -> None:
        if step == 3:
            raise KeyboardInterrupt("cancelled")

    with pytest.raises(KeyboardInterrupt):
        refit(fresh, sp.csr_matrix(X), y, q, progress=stop)


def active_stream(name, featurizer, texts, labels, classes):
    """The app's loop, recording the labelled rows, their class codes and query probabilities."""
    lrn = learners.make(name, n_features=featurizer.n_features, classes=classes, delta=0.3)
    rng = np.random.default_rng(7)
    X = featurizer.transform(texts)
    rows, codes, qs = [], [], []
    for i, y in enumerate(labels):
        d = lrn.decide(X[i], rng)
        if d.queried:
            lrn.learn(X[i], y)
            rows.append(i)
            codes.append(classes.index(y))
            qs.append(d.query_prob)
    return lrn, X[rows], np.array(codes), np.array(qs)


@pytest.mark.datasets
def test_an_exported_refit_predicts_raw_items_without_django_or_pickle(tmp_path):
    texts, labels = raw_data.ag_news(1000)
    f = make_featurizer({**default_config("text", "hashed-ngrams"), "n_features": 2**15})
    lrn, X, codes, qs = active_stream("mpea", f, texts[:700], labels[:700], [1, 2, 3, 4])
    result = refit(lambda: learners.make("mpea", n_features=f.n_features, classes=[1, 2, 3, 4], delta=0.3),
                   X, codes, qs)
    assert result.chosen == "refit", result.check  # a perceptron's single pass loses to the batch fit
    held_out = texts[700:]
    expected = result.model.predict(f.transform(held_out)).tolist()
    online = lrn.predict(f.transform(held_out)).tolist()
    truth = labels[700:]
    assert np.mean(np.array(expected) == truth) > np.mean(np.array(online) == truth)

    learners.save_model(tmp_path / "news.npz", lrn, f, {"algorithm": "mpea"}, refit=result)
    card = json.loads((tmp_path / "news.json").read_text())
    assert card["model"]["used"] == "refit" and card["model"]["check"]["chosen"] == "refit"
    assert refit_description(result.check) in card["model"]["why"]
    with np.load(tmp_path / "news.npz", allow_pickle=False) as npz:
        assert "refit" in npz.files and npz["refit"].dtype == np.uint8
    (tmp_path / "held_out.json").write_text(json.dumps(held_out))
    code = ("import json, sys, learners\n"
            f"m = learners.load_model({str(tmp_path / 'news.npz')!r})\n"
            f"texts = json.loads(open({str(tmp_path / 'held_out.json')!r}).read())\n"
            "assert m.card['model']['used'] == 'refit' and m.refit is not None\n"
            "print(json.dumps(m.predict(texts)))\n"
            "assert not any(n == 'django' or n.startswith('django.') for n in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert json.loads(out.stdout) == expected


def xor(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Four blobs at (+-2, +-2), the class the sign of x * y: no linear model separates them."""
    rng = np.random.default_rng(seed)
    X = rng.choice([-2.0, 2.0], size=(n, 2)) + rng.normal(scale=0.5, size=(n, 2))
    return np.hstack([X, np.ones((n, 1))]), (X[:, 0] * X[:, 1] > 0).astype(int)


def test_neighbours_at_prediction_are_kept_where_they_help_and_travel_in_the_model_file(tmp_path):
    """On XOR the softmax regression is a coin toss and its neighbours are right: the check keeps
    them, the file carries them (no pickle) and the loaded model predicts as the fitted one."""
    X, y = xor(300, seed=1)
    q = np.random.default_rng(2).uniform(0.3, 1.0, size=300)
    fresh = lambda: learners.make("paa-i", n_features=3, classes=["odd", "even"])  # noqa: E731
    result = refit(fresh, sp.csr_matrix(X), y, q)
    record = result.check["neighbours_at_prediction"]
    assert record["used"] and record["gain"] > max(record["standard_error"], 0.3), record
    assert record["memory_rows"] == 300 and result.chosen == "refit"
    Xh, yh = xor(200, seed=3)
    assert np.mean(result.model.predict_codes(Xh) == yh) > 0.95
    m = result.model
    plain = LinearModel(m.classes, 3, m.columns, m.coef, m.intercept)  # the same fit, no memory
    assert np.mean(plain.predict_codes(Xh) == yh) < 0.75

    f = make_featurizer({"kind": "vectors", "n_features": 3})
    learners.save_model(tmp_path / "xor.npz", fresh(), f, {}, refit=result)
    loaded = learners.load_model(tmp_path / "xor.npz")
    assert "nearest of 300 rows" in loaded.card["model"]["why"]
    np.testing.assert_array_equal(loaded.refit.predict_codes(Xh), result.model.predict_codes(Xh))
    raw = [[[j, float(v)] for j, v in enumerate(row)] for row in Xh]  # the vectors kind's sparse pairs
    assert loaded.predict(raw) == result.model.predict(Xh).tolist()
    np.testing.assert_allclose(loaded.decision_function(raw), result.model.decision_function(Xh),
                               rtol=1e-5, atol=1e-5)

    state = result.model.get_state()
    state["arrays"]["memory_probs"] = state["arrays"]["memory_probs"][:, :1]
    with pytest.raises(ValueError, match="memory does not fit"):
        LinearModel.from_state(state)


def test_neighbours_that_change_nothing_are_refused():
    """Blobs a line separates: with and without neighbours the fit is as right, so the one-standard-
    error rule keeps the plain regression (and the file carries no rows)."""
    X, y = blobs(300, 2, seed=6)
    result = refit(lambda: learners.make("paa-i", n_features=6, classes=[0, 1]), sp.csr_matrix(X), y,
                   np.ones(300))
    assert not result.check["neighbours_at_prediction"]["used"] and result.model.memory is None
    assert result.model.get_state()["meta"]["format"] == "softmax-regression/1"


def test_a_refit_that_lost_is_not_exported_and_the_card_says_so(tmp_path):
    X, y = blobs(200, 2, seed=5)
    f = make_featurizer({"kind": "vectors", "n_features": 6})
    result = refit(lambda: learners.make("paa-i", n_features=6, classes=["a", "b"]), sp.csr_matrix(X), y,
                   np.ones(200))
    result.chosen = "online"  # as when the online learner won the check
    lrn = learners.make("paa-i", n_features=6, classes=["a", "b"])
    learners.save_model(tmp_path / "m.npz", lrn, f, {}, refit=result)
    model = learners.load_model(tmp_path / "m.npz")
    assert model.refit is None and model.card["model"]["used"] == "online"
    assert "did not beat it" in model.card["model"]["why"]
    with np.load(tmp_path / "m.npz", allow_pickle=False) as npz:
        assert "refit" not in npz.files


def test_the_replay_refits_at_the_end_and_scores_a_held_out_part(tmp_path, capsys):
    from learners.evaluation.cli import main

    X, y = blobs(600, 2, seed=8)
    lines = [f"{c} " + " ".join(f"{j + 1}:{v:.5f}" for j, v in enumerate(row))
             for row, c in zip(X, y, strict=True)]
    (tmp_path / "blobs.svm").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.json"
    assert main(["--data", str(tmp_path / "blobs.svm"), "--algo", "pea", "--budget", "20%", "--runs", "2",
                 "--refit", "--holdout", "30%", "--quiet", "--json", str(out)]) == 0
    mean = json.loads(out.read_text())["results"][0]["mean"]
    assert {"refit_chosen", "refit_cv_online", "refit_cv_refit", "holdout_online", "holdout_refit",
            "holdout_exported"} <= set(mean)
    exported = (mean["holdout_online"], mean["holdout_refit"])
    assert mean["holdout_exported"] in exported or 0 < mean["refit_chosen"] < 1
    assert "refit check: online" in capsys.readouterr().out
    assert main(["--data", str(tmp_path / "blobs.svm"), "--algo", "pea", "--holdout", "30%"]) == 2
