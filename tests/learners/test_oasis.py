"""OASIS / OSIS / OS: hand-checked building blocks, state round trip, registry, and evidence.

The evidence tests follow the paper's protocol (oasis.md section 6.2): every learner sees
the same stream; items 1 and 2 carry one label per class; OASIS queries by its rule and
records ``a`` queries; OSIS and OS get the same ``2 + a`` labels, the ``a`` extra ones at
random positions (the caller reveals them with ``learn``). Mistakes count on every item.
As in the paper, the streams are standardised to mean 0, SD 0.5 with the statistics of the
whole trial and the learners run with ``standardize=False`` (the paper's setting; the
online scaler is the product's deviation and is exercised by the other tests). They use
the paper's ``m = 1000`` particles. The trials live in :mod:`learners.evaluation.evidence`
(shared with ``benchmarks/reproduce.py``); ``python -m learners.evaluation.evidence --online``
prints the table with the learners' online scaler instead.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import cauchy

import learners
from learners import oasis as oa
from learners.evaluation.evidence import CUBES, EVIDENCE_M, cube_evidence, digits_evidence


class FixedRng:
    """A stand-in Generator returning prepared Cauchy draws and uniforms, in call order."""

    def __init__(self, cauchy_draws: list[float], uniforms: list[float]) -> None:
        self.cauchy_draws, self.uniforms = cauchy_draws, uniforms

    def standard_cauchy(self, size):
        return np.asarray(self.cauchy_draws, dtype=float).reshape(size)

    def random(self, size):
        return np.asarray(self.uniforms, dtype=float).reshape(size)


# ------------------------------------------------------------------------ building blocks
@pytest.mark.parametrize("z,p_plus,p_minus", [
    (-3.0, 0.1, 0.8), (-1.0, 0.1, 0.8), (-0.5, 0.1682, 0.4757), (0.0, 0.2828, 0.2828),
    (0.5, 0.4757, 0.1682), (1.0, 0.8, 0.1), (7.0, 0.8, 0.1),
])
def test_likelihood_matches_the_spec_table(z, p_plus, p_minus):
    lp = np.exp(oa.log_likelihood(np.array([z, z, z]), np.array([1, -1, 0])))
    np.testing.assert_allclose(lp, [p_plus, p_minus, p_plus + p_minus], atol=1e-4)
    # The paper's literal form min(1-G, max(G*A, C exp(-y C' z))) with C' = -KAPPA.
    for y, p in ((1, lp[0]), (-1, lp[1])):
        literal = min(1 - oa.GAMMA, max(oa.GAMMA * oa.ALPHA, oa.C * math.exp(y * oa.KAPPA * z)))
        assert p == pytest.approx(literal, rel=1e-12)
    assert 1.0 - lp[2] == pytest.approx({0.0: 0.4343, 0.5: 0.3561, -0.5: 0.3561}.get(z, 0.1), abs=5e-5)


def test_constants():
    assert abs(oa.C - 0.282842712) < 1e-9
    assert abs(-oa.KAPPA - -1.039720771) < 1e-9  # C' of the paper


def test_log_prior_is_iid_cauchy():
    W = np.array([[0.0, 1.0, -30.0], [2.5, 1e6, 0.1]])
    expected = cauchy.logpdf(W, scale=2.5).sum(axis=1)
    np.testing.assert_allclose(oa.log_prior(W, 2.5), expected, rtol=1e-12)


def test_eq4_prediction_and_disagreement_score():
    pi = np.array([0.25, 0.75])
    Z = np.array([0.5, -2.0])
    # P(+1) = 0.25 * 0.7388 + 0.75 * 1/9 (spec table); margin = 2P - 1.
    p_plus = 0.25 * 0.47568 / (0.47568 + 0.16818) + 0.75 / 9
    assert oa.predictive_margin(Z, pi) == pytest.approx(2 * p_plus - 1, abs=1e-4)
    assert oa.disagreement_score(Z, pi) == pytest.approx(0.5)
    assert oa.disagreement_score(np.array([0.0, 3.0]), pi) == pytest.approx(0.75)  # z=0: no vote
    assert oa.predictive_margin(np.zeros(2), pi) == 0.0  # an exact tie, no rounding


def test_ess_and_log_weight_normalisation():
    logpi, pi = oa.normalise_log_weights(np.log(np.array([2.0, 1.0, 1.0])) + 1000.0)
    np.testing.assert_allclose(pi, [0.5, 0.25, 0.25])
    np.testing.assert_allclose(np.exp(logpi), pi)
    assert oa.effective_sample_size(pi) == pytest.approx(1 / (0.25 + 2 * 0.0625))
    assert oa.effective_sample_size(np.full(8, 1 / 8)) == pytest.approx(8.0)


def test_systematic_resampling_by_hand():
    p = np.array([0.1, 0.2, 0.3, 0.4])  # cumulative 0.1, 0.3, 0.6, 1.0
    # u0 = 0.5: points 0.125, 0.375, 0.625, 0.875
    np.testing.assert_array_equal(oa.systematic_resample(p, 0.5), [1, 2, 3, 3])
    # u0 = 0: points 0, 0.25, 0.5, 0.75 (side='right': a point on a boundary goes up)
    np.testing.assert_array_equal(oa.systematic_resample(p, 0.0), [0, 1, 2, 3])
    # Systematic property: each index is drawn floor(m p) or ceil(m p) times.
    rng = np.random.default_rng(4)
    q = rng.dirichlet(np.ones(50))
    counts = np.bincount(oa.systematic_resample(q, rng.random()), minlength=50)
    assert np.all(counts >= np.floor(50 * q)) and np.all(counts <= np.ceil(50 * q))


def test_mh_acceptance_by_hand():
    # One labelled buffered item x = 1, y = +1; particles w = -2 and 0.5 (d = 1).
    W = np.array([[[-2.0], [0.5]]])
    Xb, Yb = np.array([[1.0]]), np.array([[1]])
    # Cauchy steps of 40 and -40 times scale 0.025 propose w = -1 and w = -0.5.
    # Particle 0: the likelihood stays 0.1 (z <= -1); prior ratio (1+0.64)/(1+0.16) > 1 -> accept.
    # Particle 1: same prior, likelihood 0.1682/0.4757 = exp(-KAPPA) = 1/sqrt(8) = 0.3536.
    new, acc = oa.mh_move(W, Xb, Yb, 2.5, 0.025, FixedRng([40.0, -40.0], [0.999, 0.35]))
    np.testing.assert_array_equal(acc, [[True, True]])
    np.testing.assert_allclose(new[0, :, 0], [-1.0, -0.5])
    new, acc = oa.mh_move(W, Xb, Yb, 2.5, 0.025, FixedRng([40.0, -40.0], [0.999, 0.36]))
    np.testing.assert_array_equal(acc, [[True, False]])
    np.testing.assert_allclose(new[0, :, 0], [-1.0, 0.5])


def test_running_scaler_targets_sd_one_half():
    rng = np.random.default_rng(0)
    X = rng.normal(3.0, 7.0, size=(500, 2))
    X[:, 1] = 4.0  # a constant feature maps to 0
    sc = oa.RunningScaler(2)
    assert np.all(sc.transform(X[0]) == 0.0)  # nothing seen yet
    for x in X:
        sc.update(x)
    F = sc.transform(X)
    assert abs(F[:, 0].mean()) < 1e-9 and F[:, 0].std() == pytest.approx(0.5)
    assert np.all(F[:, 1] == 0.0)


# --------------------------------------------------------------------------- the learner
def c_exp(z: float) -> float:
    """The spec's ``C exp(KAPPA z)`` = p(+1|z) for |z| <= 1."""
    return oa.C * math.exp(oa.KAPPA * z)


def _raw_learner(name: str = "oasis", **params) -> learners.Learner:
    """A 1-feature learner without scaling whose 4 particles are set by hand."""
    lrn = learners.make(name, n_features=1, classes=["neg", "pos"], m=4, standardize=False, **params)
    lrn.W[0, :, 0] = [2.0, -2.0, 0.5, 0.0]
    return lrn


def test_reweighting_by_hand_labelled_and_unlabelled():
    lrn = _raw_learner()
    lrn.learn(np.array([1.0]), "pos")  # factors p(+1|z): 0.8, 0.1, 0.4757, 0.2828
    f = np.array([0.8, 0.1, c_exp(0.5), oa.C])
    np.testing.assert_allclose(lrn.pi[0], f / f.sum())
    assert lrn.n_moves == 0  # ESS = 2.88 >= m/2
    lrn.observe(np.array([1.0]))  # factors p(+1)+p(-1): 0.9, 0.9, 0.6439, 0.5657
    g = f * np.array([0.9, 0.9, c_exp(0.5) + c_exp(-0.5), 2 * oa.C])
    np.testing.assert_allclose(lrn.pi[0], g / g.sum())
    os_ = _raw_learner("os")
    os_.observe(np.array([1.0]))  # os ignores unlabelled items
    np.testing.assert_allclose(os_.pi[0], 0.25)
    assert os_.buffer.size == 0


def test_resample_move_fires_below_half_ess_and_resets_weights():
    lrn = _raw_learner(seed=3)
    lrn.learn(np.array([1.0]), "pos")
    assert lrn.n_moves == 0  # weights 0.8 : 0.1 : 0.4757 : 0.2828, ESS 2.88 >= 2
    lrn.learn(np.array([1.0]), "pos")  # squared weights: ESS = 0.956^2 / 0.467 = 1.96 < 2
    assert lrn.n_moves == 1
    np.testing.assert_allclose(lrn.pi[0], 0.25)
    assert lrn.since_move == 0


def test_query_rules():
    x = np.array([1.0])
    lrn = _raw_learner(s0=0.6)  # votes +, -, +, none: score |0.25 - 0.25 + 0.25| = 0.25
    d = lrn.decide(x, np.random.default_rng(0))
    assert d.score == pytest.approx(0.25) and d.query_prob == 1.0 and d.queried
    assert d.prediction == "pos"  # margin 0.25 (tanh(K) - tanh(K) + tanh(K/2)) > 0
    assert _raw_learner(s0=0.2).query_probability(x) == 0.0
    assert _raw_learner(rule="bernoulli", delta=0.5).query_probability(x) == pytest.approx(0.5 / 0.75)
    assert _raw_learner("osis").query_probability(x) == 0.0
    assert _raw_learner("os", query="all").query_probability(x) == 1.0
    lrn.set_params(s0=0.1)
    assert lrn.query_probability(x) == 0.0


def _stream(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.arange(1, d + 1)
    return X, np.where(X[:, 0] + 0.2 * X[:, 1] > 0, "b", "a")


def _feed(lrn, X, y, rng, start: int, stop: int) -> list:
    out = []
    for t in range(start, stop):
        dec = lrn.decide(X[t], rng)
        out.append(dec)
        if dec.queried or t < 2:
            lrn.learn(X[t], y[t])
        else:
            lrn.observe(X[t])
    return out


@pytest.mark.parametrize("classes", [["a", "b"], ["a", "b", "c"]])
def test_state_round_trip_continues_identically(classes):
    X, y = _stream(600, 3, 1)
    if len(classes) == 3:
        y = np.where(X[:, 2] > 2, "c", y)
    lrn = learners.make("oasis", n_features=3, classes=classes, m=150, tau=30, rule="bernoulli",
                        delta=1.0, seed=7)
    r1 = np.random.default_rng(2)
    _feed(lrn, X, y, r1, 0, 200)
    clone = learners.from_bytes(learners.to_bytes(lrn))
    r2 = np.random.default_rng()
    r2.bit_generator.state = r1.bit_generator.state
    moves = lrn.n_moves
    assert _feed(lrn, X, y, r1, 200, 600) == _feed(clone, X, y, r2, 200, 600)
    assert lrn.n_moves > moves  # the internal generator was used after the save
    np.testing.assert_array_equal(lrn.W, clone.W)
    np.testing.assert_array_equal(lrn.logpi, clone.logpi)


def test_bad_state_is_refused():
    lrn = learners.make("oasis", n_features=2, classes=[0, 1], m=20)
    state = lrn.get_state()
    state["arrays"]["W"] = np.zeros((1, 10, 2))
    with pytest.raises(ValueError, match="state array 'W' must have shape"):
        learners.from_state(state)


# ---------------------------------------------------------------------------- registry
def test_registry_entries():
    for name in ("oasis", "osis", "os"):
        spec = learners.get_spec(name)
        assert spec.tasks == {"binary", "multiclass"}
        params = {p.name: p for p in spec.all_params()}
        assert params["m"].default == 1000 and params["tau"].default == 100
        assert params["nu"].default == 2.5 and params["proposal_scale"].default == 0.025
        assert all(p.help for p in params.values())
        assert ("s0" in params) == (name == "oasis") and ("rule" in params) == (name == "oasis")
    spec = learners.get_spec("oasis")
    assert {p.name: p.range_text() for p in spec.all_params()}["s0"] == "a number >= 0 and <= 1"
    assert "oasis" in learners.names_for_task("multiclass")
    assert learners.make("oasis", n_features=2, classes=[0, 1], m=10).binary
    assert not learners.make("oasis", n_features=2, classes=[0, 1, 2], m=10).binary


@pytest.mark.parametrize("name,params,message", [
    ("oasis", {"m": 1}, "m must be an integer >= 2"),
    ("oasis", {"tau": 2.5}, "tau must be an integer"),
    ("oasis", {"rule": "sometimes"}, "rule must be one of 'threshold', 'bernoulli'"),
    ("oasis", {"s0": 1.5}, "s0 must be a number >= 0 and <= 1"),
    ("oasis", {"nu": 0}, "nu must be a number > 0"),
    ("osis", {"s0": 0.1}, "unknown parameter"),
])
def test_bad_parameters_name_the_parameter(name, params, message):
    with pytest.raises(ValueError, match=message):
        learners.make(name, n_features=2, classes=[0, 1], **params)


# ---------------------------------------------------------------------------- evidence
def assert_ordering(res: np.ndarray) -> None:
    """OASIS < OSIS < OS on mean cumulative mistakes over the seeds (the paper's claim).

    With m = 1000 (the paper's value) the ordering holds in every setting; OSIS vs OS is
    closest on diced-cube-8 (269 vs 292) and digits 3 vs 5 (54 vs 59), where m = 300 made
    it a tie: the evidence runs at the paper's m for that reason.
    """
    oasis_mean, osis_mean, os_mean = res[:, :3].mean(axis=0)
    assert oasis_mean < osis_mean < os_mean, res.tolist()


@pytest.mark.slow
@pytest.mark.parametrize("kind,d", CUBES)
def test_oasis_beats_osis_beats_os_on_cubes(kind, d):
    assert_ordering(cube_evidence(kind, d, EVIDENCE_M))


@pytest.mark.slow
def test_oasis_beats_osis_beats_os_on_digits_3_vs_5():
    assert_ordering(digits_evidence(EVIDENCE_M))


@pytest.mark.slow
def test_one_vs_rest_on_ten_digits_is_well_above_chance():
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    first = [order[np.argmax(y[order] == c)] for c in range(10)]  # one initial label per class
    order = np.r_[first, np.setdiff1d(order, first)[rng.permutation(len(y) - 10)]]
    X = PCA(10, random_state=0).fit(X[order[:200]]).transform(X)
    train, test = order[:1200], order[1200:]
    lrn = learners.make("oasis", n_features=10, classes=list(range(10)), m=EVIDENCE_M, s0=0.1)
    for k, i in enumerate(train):
        dec = lrn.decide(X[i], rng)
        lrn.learn(X[i], y[i]) if k < 10 or dec.queried else lrn.observe(X[i])
    accuracy = float(np.mean(lrn.predict(X[test]) == y[test]))
    assert lrn.n_labels < 400 and accuracy > 0.25  # chance is 0.1



def test_no_filter_moves_while_the_scaler_warms_up_and_its_weights_hold_every_buffered_item():
    """Running scaler: during its first ``tau`` items no one-vs-rest filter resample-moves, and
    each filter's weights are the prior particles' likelihood of every buffered item under the
    current statistics (moves under the first items' scaling cost diced-cube-32 2.6x the
    mistakes of the paper's trial-wide scaling: oasis.md). After the warm-up the filters move.
    (This also retires the review bug of one shared ``since_move``: a filter that did not
    resample rebuilt its warm-up weights from the items since *another* filter moved.)"""
    rng = np.random.default_rng(0)
    lrn = learners.make("oasis", n_features=3, classes=["a", "b", "c"], m=40, tau=30)
    W0 = lrn.W.copy()
    X = rng.normal(size=(60, 3))
    labels = rng.choice(["a", "b", "c"], size=60)
    for i in range(60):
        if i % 2:
            lrn.learn(X[i], labels[i])
        else:
            lrn.observe(X[i])
        if i < 30:  # scaler.n = i + 1 <= tau
            assert np.array_equal(lrn.W, W0)
            Xb, Yb = lrn.buffer.items()
            Z = lrn.W @ lrn._features(Xb).T  # (K, m, n)
            expected = oa.normalise_log_weights(np.sum(oa.log_likelihood(Z, Yb[:, None, :]), axis=-1))[0]
            np.testing.assert_allclose(lrn.logpi, expected, atol=1e-9)
    assert lrn.n_moves > 0 and not np.array_equal(lrn.W, W0)


def test_a_2_18_feature_project_is_bounded_by_the_projection():
    """Hashed text (2^18 columns): the filter works in max_dim dimensions, memory stays small,
    a reloaded learner continues identically and the model card states the projection."""
    from learners.features import default_config, make_featurizer
    from learners.model_file import full_card

    feat = make_featurizer(default_config("text", "hashed-ngrams"))
    assert feat.n_features == 2**18 + 1  # and the intercept column
    texts = ["free entry to win a prize now", "see you at home tonight", "call now to claim",
             "are we meeting for lunch", "urgent prize waiting, reply now", "ok thanks"] * 5
    X = feat.transform(texts)
    lrn = learners.make("oasis", n_features=feat.n_features, classes=["ham", "spam", "other"])
    assert lrn.W.shape == (3, 1000, oa.MAX_DIM) and lrn.buffer.X.shape == (100, oa.MAX_DIM)
    held = lrn.W.nbytes + lrn.buffer.X.nbytes + lrn.scaler.mean.nbytes * 3
    assert held < 16 * 2**20
    rng = np.random.default_rng(1)
    for i in range(12):
        d = lrn.decide(X[i], rng)
        lrn.learn(X[i], ["spam", "ham"][i % 2]) if d.queried else lrn.observe(X[i])
    again = learners.from_bytes(learners.to_bytes(lrn))
    np.testing.assert_array_equal(lrn.decision_function(X[12:20]), again.decision_function(X[12:20]))
    # the projection is a function of the seed only: the same item, the same input
    np.testing.assert_array_equal(lrn._input(X[3].indices, X[3].data), again._input(X[3].indices, X[3].data))
    card = full_card(lrn, feat, {})
    assert f"projected to {oa.MAX_DIM} dimensions" in card["learner"]["notes"][0]


def test_projection_keeps_norms_in_expectation_and_is_seeded():
    proj = oa.RandomProjection(2**18, 256, seed=3)
    rng = np.random.default_rng(0)
    idx = rng.choice(2**18, size=40, replace=False)
    vals = rng.normal(size=40)
    z = proj(idx, vals)
    assert z.shape == (256,)
    assert abs(z @ z / (vals @ vals) - 1.0) < 0.3
    np.testing.assert_array_equal(z, oa.RandomProjection(2**18, 256, seed=3)(idx, vals))
    assert not np.array_equal(z, oa.RandomProjection(2**18, 256, seed=4)(idx, vals))
    assert set(np.unique(proj.signs(idx))) == {-1.0, 1.0}


def test_an_oversized_filter_is_refused_with_the_numbers():
    with pytest.raises(ValueError, match=r"MiB of particles.*lower m or max_dim"):
        learners.make("oasis", n_features=2**18, classes=list(range(10)), m=100_000, max_dim=4096)


def test_trial_wide_scaling_gives_the_papers_mistakes_on_a_small_cube():
    """The paper's Fig. 3 claim on sliced-cube-2 (T = 1000, s0 = 0.01, m = 1000), with the
    paper's trial-wide scaling as the replay's ``--scale standard-half`` makes it and the
    learner's own scaler off: OASIS "very quickly learns the true decision boundary and stops
    making mistakes" with next to no queries. The paper prints no counts (its figures only);
    tolerance stated here: at most 15 mistakes in a trial, none in the second half, at most 3
    queries, and OSIS and OS, with the same labels at random positions, make more on average.
    REPRODUCTION.md (20 trials): OASIS 3-4 mistakes, 0 in the second half."""
    from learners.evaluation.datasets import preprocess
    from learners.evaluation.evidence import cube_stream, figure_trial

    rows = []
    for seed in range(4):
        X, y = cube_stream("sliced", 2, 1000, seed)
        rescaled = preprocess(sp.csr_matrix(2.0 * X + 1.0), "standard-half").toarray()
        np.testing.assert_allclose(rescaled, X, atol=1e-9)  # the replay option is the paper's scaling
        rows.append(figure_trial(rescaled, y, seed, 0.01))
    for r in rows:
        assert r["oasis"] <= 15 and r["oasis_late"] == 0 and r["a"] <= 3, rows
    assert np.mean([r["oasis"] for r in rows]) < np.mean([r["osis"] for r in rows]) \
        < np.mean([r["os"] for r in rows]), rows


def test_mh_steps_defaults_to_the_papers_one_move():
    params = {p.name: p for p in learners.get_spec("oasis").all_params()}
    assert params["mh_steps"].default == 1
    one = learners.make("oasis", n_features=2, classes=[0, 1], m=50, seed=3, standardize=False)
    three = learners.make("oasis", n_features=2, classes=[0, 1], m=50, seed=3, standardize=False,
                          mh_steps=3)
    rng = np.random.default_rng(0)
    for x, label in zip(rng.normal(size=(20, 2)), [0, 1] * 10, strict=True):
        one.learn(x, label)
        three.learn(x, label)
    assert one.n_moves == three.n_moves > 0 and not np.array_equal(one.W, three.W)
