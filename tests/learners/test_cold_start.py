"""Cold start (learners/cold_start.py, Learner.start_from): the prior from class descriptions and
every registered learner's start from it."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from learners.cold_start import check_descriptions, class_prior
from learners.features import default_config, make_featurizer

DESCRIPTIONS = {"spam": "win a free prize, claim your cash reward", "ham": "see you at home for dinner"}


@pytest.fixture(scope="module")
def featurizer():
    return make_featurizer({**default_config("text", "hashed-ngrams"), "n_features": 2**12, "intercept": 1.0})


def test_the_prior_is_the_descriptions_rows_centred_without_intercept(featurizer):
    rows = featurizer.transform([DESCRIPTIONS["ham"], DESCRIPTIONS["spam"]]).toarray()
    rows[:, -1] = 0
    binary = class_prior(featurizer, ["ham", "spam"], DESCRIPTIONS, binary=True)
    np.testing.assert_allclose(binary, rows[1] - rows[0])
    multi = class_prior(featurizer, ["ham", "spam", "eggs"], DESCRIPTIONS, binary=False)
    assert multi.shape == (3, featurizer.n_features) and np.allclose(multi.sum(axis=0), 0)
    eggs = featurizer.transform(["eggs"]).toarray()[0]  # a class without description: its name
    eggs[-1] = 0
    np.testing.assert_allclose(multi[2], eggs - (rows[0] + rows[1] + eggs) / 3)


@pytest.mark.parametrize("name", sorted(learners.REGISTRY))
def test_every_learner_starts_from_the_prior_or_says_it_cannot(name, featurizer):
    spec = learners.get_spec(name)
    classes = ["ham", "spam"] if spec.cls.binary else ["ham", "spam", "eggs"]
    if not spec.cls.accepts_prior:
        lrn = learners.make(name, n_features=featurizer.n_features, classes=classes)
        with pytest.raises(ValueError, match="cannot start from prior weights"):
            lrn.start_from(np.zeros(featurizer.n_features))
        return
    texts = ["claim your free cash prize now", "home for dinner, see you"]
    X = featurizer.transform(texts)
    zero = learners.make(name, n_features=featurizer.n_features, classes=classes)
    lrn = learners.make(name, n_features=featurizer.n_features, classes=classes)
    lrn.start_from(class_prior(featurizer, classes, DESCRIPTIONS, spec.cls.binary))
    assert lrn.predict(X).tolist() == ["spam", "ham"]
    assert len(set(zero.predict(X).tolist())) == 1  # from zero, both items get the same class
    again = learners.from_bytes(learners.to_bytes(lrn))  # the start survives the state round trip
    assert again.predict(X).tolist() == ["spam", "ham"]
    lrn.learn(X[0], "ham")  # and learning goes on from there
    assert lrn.n_labels == 1
    with pytest.raises(ValueError, match="the prior must have shape"):
        learners.make(name, n_features=featurizer.n_features, classes=classes).start_from(np.zeros(3))


def test_dual_averaging_starts_at_the_prior_and_lets_it_fade():
    lrn = learners.make("d-ada", n_features=2, classes=["a", "b"], smoothing=1.0)
    lrn.start_from(np.array([2.0, 0.0]))
    assert lrn.w.tolist() == [2.0, 0.0] and lrn.theta.tolist() == [-2.0, 0.0]
    lrn.learn(np.array([1.0, 0.0]), "a")  # g = +x: theta = -1, s = 1, w = -theta / (1 + 1)
    assert lrn.w.tolist() == [0.5, 0.0]


@pytest.mark.parametrize("descriptions,needle", [
    ({"eggs": "breakfast"}, "'eggs' is not one of the classes"),
    ({"spam": ""}, "the description of 'spam' is empty"),
    ({"spam": "  \n"}, "the description of 'spam' is empty"),
    ({"spam": 3}, "the description of 'spam' must be text, got a number"),
    ({"spam": "x" * 1001}, "longer than 1000 characters"),
    (["spam"], "must be an object"),
    ({"spam": "an\x00advert"}, "the description of 'spam' contains a NUL character"),
    ({"spam": "an \ud800 advert"}, "the description of 'spam' contains a lone surrogate"),
])
def test_bad_descriptions_are_refused_with_their_reason(descriptions, needle):
    with pytest.raises(ValueError, match=needle):
        check_descriptions(descriptions, ["ham", "spam"])
    assert check_descriptions({1: " one "}, [1, 2]) == {"1": "one"}
