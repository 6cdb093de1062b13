"""Budget mode (docs/budget.md): the control law, the thinning, the hard cap, its state, and the
ratio every registered learner holds on a long stream."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.budget import MAX_STEP, REPAY_SPAN, BudgetController, knob_name
from learners.evaluation.engine import replay_per_item
from learners.registry import REGISTRY

#: the rate law alone: no advance (plan R n) and no pace term
RATE_LAW_ONLY = {"horizon": 0.0, "pace_gain": 0.0}


def test_law_moves_log_knob_by_relative_error():
    ctl = BudgetController(0.2, 1.0, gain=0.1, boost=1.0, **RATE_LAW_ONLY)
    ctl.record(0.0, False)  # planned 0: error (0.2 - 0)/0.2 = 1
    assert ctl.value == pytest.approx(math.exp(0.1))
    ctl.record(0.5, True)  # planned 0.5 (no thinning at delta e^0.1): error -1.5
    assert ctl.value == pytest.approx(math.exp(0.1 - 0.15))
    assert (ctl.n_seen, ctl.n_queried, ctl.ratio) == (2, 1, 0.5)


def test_boost_decays_and_one_step_is_bounded():
    ctl = BudgetController(0.02, 1.0, gain=0.01, boost=4.0, **RATE_LAW_ONLY)
    assert ctl.step_gain() == pytest.approx(0.04)
    ctl.record(1.0, False)  # error -49, boosted step -1.96, bounded
    assert math.log(ctl.value) == pytest.approx(-MAX_STEP)
    ctl.n_seen = 10_000
    assert ctl.step_gain() == pytest.approx(0.01)


def test_thinning_below_the_knob_floor_down_to_the_target():
    ctl = BudgetController(0.1, 1e-3, low=1e-3, burst=1e9, **RATE_LAW_ONLY)
    for _ in range(2000):  # every item forced (q = 1): the knob cannot help, thinning must
        ctl.record(1.0, False)
    assert ctl.value == pytest.approx(1e-3) and ctl.thinning == pytest.approx(0.1, rel=1e-4)
    assert ctl.adjust(1.0) == pytest.approx(0.1, rel=1e-4)
    assert ctl.adjust(0.5) == pytest.approx(0.05, rel=1e-4)


def test_hard_cap_and_anti_windup():
    ctl = BudgetController(0.1, 1.0, burst=2.0, horizon=0.0)
    for _ in range(2):  # burst 2: two queries allowed at once (R (n + 1) + 2 >= n_queried + 1)
        assert ctl.adjust(1.0) > 0.0
        ctl.record(1.0, True)
    log_before = ctl.log_value
    assert ctl.capped() and ctl.adjust(1.0) == 0.0
    ctl.record(1.0, False)
    assert ctl.log_value == log_before  # the cap held the item: no step


def test_probability_knob_is_the_drawn_probability():
    ctl = BudgetController(0.05, 0.05, knob="p")
    assert ctl.adjust(0.0) == pytest.approx(0.05) and ctl.adjust(1.0) == pytest.approx(0.05)


def test_validation():
    for bad in (dict(target=0.0), dict(target=1.5), dict(target=0.1, initial=0.0),
                dict(target=0.1, gain=-1.0), dict(target=0.1, knob="C"), dict(target=0.1, burst=-1),
                dict(target=0.1, boost=0.5), dict(target=0.1, horizon=-1.0),
                dict(target=0.1, pace_gain=-1e-3)):
        with pytest.raises(ValueError):
            BudgetController(**bad)


def test_state_round_trip_continues_identically():
    a = BudgetController(0.1, 2.0)
    for q, z in ((0.9, True), (0.2, False), (0.05, False), (1.0, True)):
        a.record(q, z)
    b = BudgetController.from_state(a.get_state())
    for q, z in ((0.3, False), (0.8, True), (0.01, False)):
        assert a.adjust(q) == b.adjust(q)
        a.record(q, z)
        b.record(q, z)
    assert a.get_state() == b.get_state()


def test_state_saved_before_the_plan_continues_as_it_ran():
    old = {"target": 0.1, "knob": "delta", "gain": 0.005, "low": 2.0 ** -12, "high": 2.0 ** 12,
           "burst": 3.0, "boost": 4.0, "log_value": 0.0, "n_seen": 100, "n_queried": 10}
    ctl = BudgetController.from_state(old)
    assert (ctl.horizon, ctl.pace_gain, ctl.offset) == (0.0, 0.0, 0.0)
    assert ctl.plan(101) == pytest.approx(10.1)


def test_record_after_adjust_equals_record_alone():
    """record() reuses the figures adjust() computed for the same item; a controller that is
    only told the decisions (no adjust) takes exactly the same path, through the cap, the
    thinning, the advance's repayment and a retarget."""
    rng = np.random.default_rng(3)
    a, b = (BudgetController(0.05, 2.0, horizon=200.0) for _ in range(2))
    for t in range(4000):
        if t == 2500:
            a.retarget(0.1)
            b.retarget(0.1)
        q = float(rng.choice([1.0, 0.0, rng.random()]))
        ask = bool(rng.random() < a.adjust(q))
        if t % 7 == 0:
            a.adjust(rng.random())  # an adjust() for another q: record(q) must not reuse it
        a.record(q, ask)
        b.record(q, ask)
        assert (a.log_value, a.n_seen, a.n_queried) == (b.log_value, b.n_seen, b.n_queried)
    assert 0 < a.n_queried < 4000


def test_knob_name():
    assert knob_name("random") == "p" and knob_name("active") == "delta"
    assert learners.make("oasis", n_features=2, classes=[0, 1], m=2).budget_knob() == "s0"
    bernoulli = learners.make("oasis", n_features=2, classes=[0, 1], m=2, rule="bernoulli")
    assert bernoulli.budget_knob() == "delta"
    assert learners.make("osis", n_features=2, classes=[0, 1], m=2).budget_knob() == "p"


def _drifting_margin_stream(ctl: BudgetController, T: int, growth: float = 10.0) -> None:
    """q = delta/(delta+|m|) with |m| growing over time (a learner whose margins grow as it
    learns): the knob's working value drifts upwards and the controller must follow it."""
    rng = np.random.default_rng(3)
    scale = 0.5 * np.geomspace(1.0, growth, T)
    for t in range(T):
        m = abs(rng.normal()) * scale[t]
        q = ctl.adjust(ctl.value / (ctl.value + m))
        z = rng.random() < q
        ctl.record(ctl.value / (ctl.value + m), z)


def test_holds_ratio_on_long_synthetic_margin_stream():
    ctl = BudgetController(0.1, 1.0)
    _drifting_margin_stream(ctl, 100_000)
    assert abs(ctl.ratio - 0.1) < 0.01


def test_pace_term_removes_the_lag_behind_a_drifting_knob():
    # the rate law alone under-spends while the knob climbs (a ramp lags an integral law);
    # the pace term on the label deficit spends the plan
    T = 20_000
    lagging, paced = BudgetController(0.1, 1.0, **RATE_LAW_ONLY), BudgetController(0.1, 1.0)
    _drifting_margin_stream(lagging, T, growth=100.0)
    _drifting_margin_stream(paced, T, growth=100.0)
    assert lagging.ratio < 0.097
    assert abs(paced.ratio - 0.1) < 0.001


def test_plan_spends_the_advance_early_and_repays_it():
    ctl = BudgetController(0.1, 1.0, horizon=100.0)
    assert ctl.plan(0) == pytest.approx(10.0) and ctl.plan(100) == pytest.approx(20.0)
    end = 100 * (1 + REPAY_SPAN)
    assert ctl.plan(end) == pytest.approx(0.1 * end) and ctl.plan(5000) == pytest.approx(500.0)
    assert ctl.plan(200) == pytest.approx(0.1 * 200 + 10.0 * (1 - (200 - 100) / (REPAY_SPAN * 100)))
    while not ctl.capped():  # a stream that queries every item it may
        ctl.record(1.0, True)
    # the advance (10) and the burst (3) from the first item: n + 1 <= 0.1 (n + 1) + 13 up to n = 13
    assert ctl.n_queried == 14


def test_front_loads_then_holds_the_ratio_on_a_learning_stream():
    # margins start at 0 (every rule queries a learner that knows nothing) and grow: the
    # first horizon spends more than R, the whole stream R
    rng = np.random.default_rng(0)
    ctl = BudgetController(0.05, 1.0)
    T, first = 10_000, 0
    for t in range(T):
        m = abs(rng.normal()) * min(5.0, ctl.n_queried / 20.0)
        q = ctl.value / (ctl.value + m)
        z = rng.random() < ctl.adjust(q)
        ctl.record(q, z)
        first += int(z and t < ctl.horizon)
    assert first > 1.5 * 0.05 * ctl.horizon
    assert abs(ctl.ratio - 0.05) < 0.0025


def test_retarget_keeps_the_plan_continuous():
    ctl = BudgetController(0.1, 1.0)
    for _ in range(5000):
        ctl.record(0.1, False)
    before = ctl.plan(ctl.n_seen)
    ctl.retarget(0.2)  # a per-day budget whose arrival rate halved: no catch-up of the past
    assert ctl.plan(ctl.n_seen) == pytest.approx(before)
    assert ctl.plan(ctl.n_seen + 10) == pytest.approx(before + 2.0)
    with pytest.raises(ValueError):
        ctl.retarget(0.0)


def _stream(n: int, d: int, k: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """L2-normalised sparse items (as the app's featurizers give) and a linear labelling."""
    rng = np.random.default_rng(0)
    X = sp.random(n, d, density=0.5, random_state=1, format="csr")
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X)
    y = np.argmax(X @ rng.normal(size=(d, k)), axis=1).astype(np.int64)
    return X, y


SMALL = {"m": 100}  # fewer particles keep OASIS / OSIS / OS quick; the query rule is the same


@pytest.mark.parametrize("target", [0.02, 0.05, 0.2])
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "kmc" else n
                                  for n in sorted(REGISTRY)])
def test_every_registered_learner_holds_the_budget(name, target):
    """The achieved ratio within 25% of R, forced rules, OASIS and KMC included."""
    spec = REGISTRY[name]
    k = 4 if "multiclass" in spec.tasks else 2
    X, y = _stream(5000, 10, k)
    extra = SMALL if any(p.name == "m" for p in spec.params) else {}
    lrn = learners.make(name, n_features=10, classes=list(range(k)), **extra)
    ctl = BudgetController.for_learner(target, lrn)
    trace = replay_per_item(lrn, X, y, np.random.default_rng(1), budget=ctl)
    assert abs(trace.queried.mean() / target - 1.0) <= 0.25, trace.queried.mean()
    assert trace.queried.sum() <= target * len(y) + ctl.burst  # the hard cap


@pytest.mark.parametrize("algo,query", [("paa-i", "active"), ("paa-i", "random"), ("soal", "all")])
def test_holds_ratio_with_a_real_learner_in_every_query_mode(algo, query):
    X, y = _stream(8000, 20, 2)
    lrn = learners.make(algo, n_features=20, classes=[0, 1], query=query)
    ctl = BudgetController.for_learner(0.15, lrn)
    trace = replay_per_item(lrn, X, y, np.random.default_rng(1), budget=ctl)
    assert abs(trace.queried.mean() - 0.15) < 0.01


def test_without_a_budget_the_published_rule_is_untouched():
    X, y = _stream(400, 10, 2)
    a = learners.make("soal", n_features=10, classes=[0, 1])
    b = learners.make("soal", n_features=10, classes=[0, 1])
    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    for i in range(400):
        q = a.query_probability(X[i])
        d = b.decide(X[i], r2)
        assert d.query_prob == q and d.queried == (r1.random() < q)
        for lrn, z in ((a, d.queried), (b, d.queried)):
            lrn.learn(X[i], int(y[i])) if z else lrn.observe(X[i])


@pytest.mark.parametrize("target", [0.05, 0.10, 0.30])
@pytest.mark.parametrize("n", [200, 500])
def test_a_short_stream_of_known_length_holds_the_budget_from_its_first_item(n, target):
    """The default learner of both tasks on a 200- or 500-item stream whose length the
    controller knows: the whole stream, first item included, ends within 10% of R."""
    for k in (2, 4):
        name = learners.default_algorithm("binary" if k == 2 else "multiclass")
        X, y = _stream(n, 10, k)
        lrn = learners.make(name, n_features=10, classes=list(range(k)))
        ctl = BudgetController.for_learner(target, lrn, length=n)
        trace = replay_per_item(lrn, X, y, np.random.default_rng(1), budget=ctl)
        assert abs(trace.queried.mean() / target - 1.0) <= 0.10, (k, trace.queried.mean())
        # without the length the advance of R x 1000 labels is still unpaid at the end
        blind = learners.make(name, n_features=10, classes=list(range(k)))
        trace = replay_per_item(blind, X, y, np.random.default_rng(1),
                                budget=BudgetController.for_learner(target, blind))
        assert trace.queried.mean() > 1.25 * target


def test_the_plan_fits_a_known_length_and_only_grows_with_it():
    ctl = BudgetController(0.1, 1.0, length=600)
    assert ctl.fitted_horizon == pytest.approx(600 / (1 + REPAY_SPAN))
    assert ctl.plan(600) == pytest.approx(60.0)  # repaid by the last item
    assert ctl.fitted_burst == pytest.approx(0.05 * 0.1 * 600)
    ctl.fit_length(300)  # a shorter length is ignored: the stream has no fewer items
    assert ctl.length == 600
    ctl.fit_length(9000)  # long enough: the default plan, untouched
    assert (ctl.fitted_horizon, ctl.fitted_burst) == (ctl.horizon, ctl.burst)
    assert BudgetController.from_state(ctl.get_state()).get_state() == ctl.get_state()
    with pytest.raises(ValueError, match="length"):
        ctl.fit_length(0)


def test_catch_up_raises_the_probability_only_when_the_law_fell_behind():
    ctl = BudgetController(0.1, 1.0, length=100)
    assert ctl.catch_up() == 0.0  # on the plan: the advance is ahead of R
    for _ in range(80):
        ctl.record(0.0, False)  # a rule that never asks
    # 10 labels due over the last 20 items, less the slack of 5% of them (0.5)
    assert ctl.catch_up() == pytest.approx(9.5 / 20)
    assert ctl.adjust(0.0) == pytest.approx(9.5 / 20)
    assert BudgetController(0.1, 1.0).catch_up() == 0.0  # unknown length: never
