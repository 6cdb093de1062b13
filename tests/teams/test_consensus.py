"""Consensus into the learner: majority vote and Dawid-Skene EM
(:mod:`learners.aggregation`), a simulated team with one careless annotator, the reviewer's
decision (:func:`annotator.labelling.teams.consensus.resolve`) and a later consensus that overturns a
label the learner already had (its state then equals a replay of the final labels)."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from annotator.labelling.annotation.actions import lease_next, submit_label
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.engine.queue_counts import why_idle
from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.ingest import Record, import_records
from annotator.labelling.models import Consensus, Item, Label, LearnerState, Membership, Review
from annotator.labelling.projects.creation import create_project
from annotator.labelling.teams import consensus
from learners.aggregation import dawid_skene
from learners.evaluation.majority import majority_vote
from tests.support.app import digits_project, member


def test_majority_vote_needs_more_than_half():
    ops = np.array([[0, 0, 1], [0, 1, 1], [0, 2, 2],   # 2 of 3: class 1
                    [1, 0, 0], [1, 1, 1],              # a tie: none
                    [2, 0, 2], [2, 1, 0], [2, 2, 1]])  # three answers: none
    assert majority_vote(ops, 4, 3).tolist() == [1, -1, -1, -1]  # item 3 has no opinion
    with pytest.raises(ValueError, match="class index"):
        majority_vote(np.array([[0, 0, 3]]), 1, 3)


def _team_opinions(seed, n_items=400, n_classes=4, accuracies=(0.9, 0.85, 0.8, 0.75), k=3):
    """Opinions of a team: good annotators answer right with their accuracy (else a uniform
    other class); the last annotator is careless: always the first class. Each item gets k
    distinct annotators drawn at random."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(n_classes, size=n_items)
    n_annotators = len(accuracies) + 1
    ops = []
    for i in range(n_items):
        for a in rng.choice(n_annotators, size=k, replace=False):
            if a == n_annotators - 1:
                said = 0
            elif rng.random() < accuracies[a]:
                said = truth[i]
            else:
                said = (truth[i] + rng.integers(1, n_classes)) % n_classes
            ops.append((i, a, said))
    return np.array(ops), truth, n_annotators


@pytest.mark.parametrize("seed", range(5))
def test_dawid_skene_weighs_the_careless_annotator_down_and_beats_majority_vote(seed):
    ops, truth, n_annotators = _team_opinions(seed)
    fit = dawid_skene(ops, len(truth), n_annotators, 4)
    reliability = fit.reliability()
    assert np.argmin(reliability) == n_annotators - 1  # the careless one's weight falls
    assert reliability[-1] < 0.4 and reliability[:-1].min() > 0.65
    np.testing.assert_allclose(fit.posterior.sum(axis=1), 1.0)
    mv = majority_vote(ops, len(truth), 4)
    assert (fit.labels() == truth).mean() > (mv == truth).mean() + 0.03


def test_dawid_skene_recovers_the_confusion_of_a_known_team():
    ops, truth, n_annotators = _team_opinions(0, n_items=2000)
    fit = dawid_skene(ops, len(truth), n_annotators, 4)
    for a, acc in enumerate((0.9, 0.85, 0.8, 0.75)):
        assert abs(np.einsum("jj->j", fit.confusion[a]).mean() - acc) < 0.05
    assert fit.confusion[-1, :, 0].min() > 0.95  # the careless one says class 0 whatever it is
    assert 1 < fit.n_iter < 100


def _answer(rng, user_index, gold, accuracies):
    """What simulated annotator ``user_index`` says for a binary item of class ``gold``: the
    careless one (past the accuracies) a coin flip, the others right with their accuracy."""
    accuracy = accuracies[user_index] if user_index < len(accuracies) else 0.5
    return gold if rng.random() < accuracy else 1 - gold


def _records(n, seed):
    """``n`` binary vector items with gold: two overlapping Gaussian classes in 8 dimensions."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(2))
        x = rng.normal(0.0, 1.0, 8) + (0.6 if y else -0.6)
        out.append(Record(f"item {i}", [[j, float(v)] for j, v in enumerate(x)], y))
    return out


def _simulate_team(method, n_items=300, seed=0, accuracies=(0.95, 0.9, 0.7, 0.7)):
    """A binary project where every queried item needs 3 of 5 annotators (one careless),
    labelled through lease_next/submit_label with the pipeline run in-process."""
    project = create_project(name=f"team {method} {seed}", task="binary", item_kind="vectors", classes=[0, 1],
                             algorithm="paa-i", params={"delta": 100.0, "C": 0.1}, rng_seed=seed,
                             featurizer_config={"kind": "vectors", "n_features": 8},
                             overlap_fraction=1.0, overlap_k=3, consensus_method=method, look_ahead=6)
    import_records(project, _records(n_items, seed))
    users = [member(project, f"sim{i}") for i in range(len(accuracies) + 1)]
    rng = np.random.default_rng(seed)
    update_project(project.pk)
    while True:
        given = 0
        for index in rng.permutation(len(users)):
            item = lease_next(project, users[index])
            if item is not None:
                submit_label(project, item.pk, users[index], _answer(rng, index, item.gold, accuracies))
                given += 1
        update_project(project.pk)
        if not given and not Item.objects.filter(project=project, status__in=[
                "pending", "queued", "leased"]).exists():
            return project


def _learner_accuracy(project):
    state = LearnerState.objects.get(project=project)
    learner = learners.from_bytes(bytes(state.blob))
    items = list(Item.objects.filter(project=project).values_list("vector", "gold"))
    predicted = [learner.predict(decode(v, learner.n_features))[0] for v, _ in items]
    return float(np.mean(np.array(predicted) == np.array([g for _, g in items])))


def _replayed(project):
    """A fresh learner taught the project's final (primary) labels in applied order."""
    state = LearnerState.objects.get(project=project)
    got = learners.from_bytes(bytes(state.blob))
    want = project.new_learner(got.n_features)
    for value, vector in (Label.objects.filter(project=project, primary=True).order_by("applied_version")
                          .values_list("value", "item__vector")):
        want.learn(decode(vector, got.n_features), value)
    return got, want


@pytest.mark.django_db
@pytest.mark.slow
def test_a_team_with_a_careless_annotator_dawid_skene_teaches_the_learner_better():
    teams = {method: _simulate_team(method, seed=2) for method in ("majority", "dawid-skene")}
    weights = consensus.reliabilities(teams["dawid-skene"])
    assert min(weights, key=weights.get) == "sim4"  # the careless one's weight falls
    assert weights["sim4"] < 0.65 < min(w for name, w in weights.items() if name != "sim4")
    accuracy = {method: _learner_accuracy(p) for method, p in teams.items()}
    assert accuracy["dawid-skene"] > accuracy["majority"] + 0.03, accuracy
    for project in teams.values():
        assert not Label.objects.filter(project=project, primary=True, applied_version__isnull=True).exists()
        got, want = _replayed(project)  # consensuses overturned on the way: still the replay
        np.testing.assert_allclose(got.get_state()["arrays"]["w"], want.get_state()["arrays"]["w"])


def _k3_item(project, values):
    """Lease the first waiting item to three annotators in turn, who say ``values``."""
    users = [member(project, f"r{i}") for i in range(3)]
    item = None
    for user, value in zip(users, values, strict=True):
        leased = lease_next(project, user)
        item = item or leased
        assert leased.pk == item.pk
        submit_label(project, item.pk, user, value)
    return Item.objects.get(pk=item.pk)


@pytest.mark.django_db
def test_an_adjudication_that_overturns_the_majority_corrects_the_learner():
    project = digits_project(20, params={"delta": 100.0}, overlap_fraction=1.0, overlap_k=3, look_ahead=4)
    update_project(project.pk)
    first = _k3_item(project, [3, 3, 8])
    second = _k3_item(project, [1, 1, 1])
    update_project(project.pk)
    assert LearnerState.objects.get(project=project).version == 2
    assert Label.objects.get(item=first, primary=True).value == 3
    assert not consensus.disagreements(project).exists()
    assert [c.item_id for c in consensus.disagreements(project, include_outvoted=True)] == [first.pk]
    assert [lab.value for lab in consensus.opinions(first)] == [3, 3, 8]
    reviewer = member(project, "boss", Membership.Role.ADMIN)
    row = consensus.resolve(first, "8", by=reviewer)
    assert (row.value, row.status, row.decided_by, row.method) == (8, "adjudicated", reviewer, "adjudication")
    assert row.decided_at is not None
    assert LearnerState.objects.get(project=project).needs_rebuild  # the learner had 3
    final = Label.objects.get(item=first, primary=True)
    assert (final.value, final.annotator.username, final.kind) == (8, "r2", "opinion")
    update_project(project.pk)
    state = LearnerState.objects.get(project=project)
    assert not state.needs_rebuild and state.version == 4  # rebuilt (3), then the 8 applied (4)
    got, want = _replayed(project)
    assert got.n_labels == want.n_labels == 2
    np.testing.assert_array_equal(got.get_state()["arrays"]["W"], want.get_state()["arrays"]["W"])
    # final: a later opinion does not reopen it, and a value nobody gave is the reviewer's label
    consensus.resolve(second, 7, by=reviewer)
    made = Label.objects.get(item=second, primary=True)
    assert (made.value, made.kind, made.annotator) == (7, "adjudication", reviewer)
    update_project(project.pk)
    assert Consensus.objects.get(item=second).status == "adjudicated"
    with pytest.raises(ValueError):
        consensus.resolve(second, "eleven", by=reviewer)


@pytest.mark.django_db
def test_a_disputed_item_reaches_the_learner_only_after_adjudication():
    project = digits_project(20, params={"delta": 100.0}, overlap_fraction=1.0, overlap_k=3, look_ahead=4)
    update_project(project.pk)
    item = _k3_item(project, [2, 5, 9])
    assert why_idle(project) == "catching-up"  # the consensus is due: a worker has work
    update_project(project.pk)
    assert LearnerState.objects.get(project=project).version == 0
    assert [c.item_id for c in consensus.disagreements(project)] == [item.pk]
    review = Review.objects.get(item=item)  # opened by the pipeline that found it disputed
    assert (review.reason, review.decided_at) == ("disagreement", None)
    consensus.resolve(item, 5, by=member(project, "boss", Membership.Role.ADMIN))
    assert not Review.objects.filter(item=item).exists()  # decided by the admin: the review closed
    update_project(project.pk)
    assert LearnerState.objects.get(project=project).version == 1
    assert not consensus.disagreements(project).exists()


@pytest.mark.django_db
def test_switching_to_dawid_skene_reaggregates_every_open_consensus():
    project = digits_project(20, params={"delta": 100.0}, overlap_fraction=1.0, overlap_k=3, look_ahead=4)
    update_project(project.pk)
    item = _k3_item(project, [2, 5, 9])
    update_project(project.pk)
    assert Consensus.objects.get(item=item).value is None
    project.consensus_method = "dawid-skene"
    project.save()
    update_project(project.pk)
    row = Consensus.objects.get(item=item)
    assert row.method == "dawid-skene" and row.value in (2, 5, 9) and row.status == "disputed"
    assert Label.objects.get(item=item, primary=True).value == row.value
    assert LearnerState.objects.get(project=project).version == 1
