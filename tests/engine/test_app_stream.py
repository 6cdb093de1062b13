"""Stream engine and label pipeline, on the real database and learners."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from annotator.labelling.engine import learner_state
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.models import Item, Label, LearnerState
from learners.paa import PAA
from learners.registry import REGISTRY, register
from tests.support.app import digits_project, member

pytestmark = pytest.mark.django_db


def decisions(project):
    return list(Item.objects.filter(project=project, queried__isnull=False).order_by("seq")
                .values_list("seq", "prediction", "score", "query_prob", "queried", "model_version"))


def direct_loop(project, n_items):
    """What the engine must do without labels: decide every item in seq order, one RNG."""
    learner = project.new_learner(project.featurizer().n_features)
    rng = np.random.default_rng(project.rng_seed)
    out = []
    for item in Item.objects.filter(project=project).order_by("seq")[:n_items]:
        x = decode(item.vector, learner.n_features)
        d = learner.decide(x, rng)
        if not d.queried:
            learner.observe(x)
        out.append((item.seq, d.prediction, d.score, d.query_prob, d.queried, 0))
    return out


def test_decisions_reproduce_the_seeded_bernoulli_draws():
    # an untrained model has q = 1 everywhere; the random-query mode makes q < 1 from the start
    project = digits_project(40, look_ahead=1000, params={"query": "random", "p": 0.4})
    outcome = update_project(project.pk)
    assert outcome.decided == 40 and outcome.applied == 0
    log = decisions(project)
    assert log == direct_loop(project, 40)
    qs = [row[3] for row in log]
    assert all(0 < q <= 1 for q in qs)
    queried = [row[4] for row in log]
    assert any(queried) and not all(queried)  # both outcomes occur: Z really is a draw
    statuses = dict(Item.objects.filter(project=project).values_list("seq", "status"))
    assert all(statuses[s] == ("queued" if z else "auto") for s, *_, z, _v in log)
    state = LearnerState.objects.get(project=project)
    assert (state.n_decided, state.n_queried) == (40, sum(queried))


def test_same_seed_same_decisions_other_seed_differs():
    params = {"query": "random", "p": 0.4}
    a = digits_project(40, look_ahead=1000, params=params, rng_seed=11)
    b = digits_project(40, look_ahead=1000, params=params, rng_seed=11)
    c = digits_project(40, look_ahead=1000, params=params, rng_seed=12)
    for p in (a, b, c):
        update_project(p.pk)
    flags = [[row[4] for row in decisions(p)] for p in (a, b, c)]
    assert flags[0] == flags[1]
    assert flags[0] != flags[2]


def test_engine_stops_at_look_ahead_and_resumes_with_the_persisted_rng():
    project = digits_project(60, look_ahead=3, params={"query": "random", "p": 0.4})
    steps = 0
    while Item.objects.filter(project=project, status="pending").exists():
        update_project(project.pk)
        waiting = Item.objects.filter(project=project, status="queued")
        pending = Item.objects.filter(project=project, status="pending").exists()
        assert waiting.count() == 3 or not pending
        waiting.update(status="skipped")  # empty the queue without labels
        learner_state._CACHE.clear()  # next run reloads learner and RNG from the database
        steps += 1
    assert steps > 1
    assert decisions(project) == direct_loop(project, 60)


def test_paused_project_decides_nothing():
    project = digits_project(10, stream_state="paused")
    assert update_project(project.pk).decided == 0


def label_queued(project, user, n=None):
    """Give the gold label to queued items in seq order (through the ORM, not the pipeline)."""
    items = list(Item.objects.filter(project=project, status="queued").order_by("seq")[:n])
    for item in items:
        Label.objects.create(item=item, project=project, annotator=user, value=item.gold, seconds=1.0)
        item.status = "labelled"
        item.save(update_fields=["status"])
    return items


def test_apply_labels_is_idempotent_and_versions_count_labels():
    project = digits_project(30, look_ahead=5)
    user = member(project, "ann")
    update_project(project.pk)
    labelled = label_queued(project, user)
    assert len(labelled) == 5
    first = update_project(project.pk)
    second = update_project(project.pk)
    assert first.applied == 5 and second.applied == 0
    assert first.version == second.version == 5
    versions = list(Label.objects.filter(project=project).order_by("id")
                    .values_list("applied_version", flat=True))
    assert versions == [1, 2, 3, 4, 5]
    learner = learners.from_bytes(bytes(LearnerState.objects.get(project=project).blob))
    assert learner.n_labels == 5

    # the stored learner equals a learner taught the same labels in the same order
    expected = project.new_learner(learner.n_features)
    for item in labelled:
        expected.learn(decode(item.vector, learner.n_features), item.gold)
    got, want = learner.get_state()["arrays"], expected.get_state()["arrays"]
    assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in got)


def test_decisions_use_the_freshest_model_version():
    project = digits_project(30, look_ahead=2)
    user = member(project, "ann")
    update_project(project.pk)
    label_queued(project, user, 1)
    update_project(project.pk)
    newest = Item.objects.filter(project=project, status="queued").order_by("-seq").first()
    assert newest.model_version == 1


def test_delta_change_applies_to_next_decision_and_algorithm_change_rebuilds():
    project = digits_project(30, look_ahead=4)
    user = member(project, "ann")
    update_project(project.pk)
    labelled = label_queued(project, user)
    update_project(project.pk)

    project.params = {"delta": 0.05}
    project.save()
    outcome = update_project(project.pk)
    assert outcome.reconfigured
    learner = learners.from_bytes(bytes(LearnerState.objects.get(project=project).blob))
    assert learner.delta == 0.05 and learner.n_labels == 4

    project.algorithm, project.params = "mpaa", {"delta": 0.05}
    project.save()
    assert update_project(project.pk).reconfigured
    rebuilt = learners.from_bytes(bytes(LearnerState.objects.get(project=project).blob))
    assert rebuilt.name == "mpaa" and rebuilt.n_labels == 4
    expected = learners.make("mpaa", n_features=rebuilt.n_features, classes=project.classes, delta=0.05)
    for item in labelled:
        expected.learn(decode(item.vector, rebuilt.n_features), item.gold)
    np.testing.assert_array_equal(rebuilt.get_state()["arrays"]["W"], expected.get_state()["arrays"]["W"])


class CountingObserver(PAA):
    """A real (if simple) semi-supervised learner: PAA-I that counts the items it observed."""

    static_between_labels = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.observed = 0

    def _observe(self, idx, vals):
        self.observed += 1

    def _state_meta(self):
        return {"observed": self.observed}

    def _load_arrays(self, arrays, extra):
        super()._load_arrays(arrays, extra)
        self.observed = int(extra.get("observed", 0))


@pytest.fixture
def observer_learner():
    spec = REGISTRY["paa-i"]
    register("test-observer", CountingObserver, tasks=("binary",), params=spec.params,
             summary="test learner", **spec.fixed)
    yield "test-observer"
    del REGISTRY["test-observer"]


def test_auto_items_are_observed_in_the_pipeline(observer_learner):
    project = digits_project(None, task="binary", classes=[0, 1], algorithm=observer_learner,
                             params={"query": "random", "p": 0.5}, look_ahead=1000)
    from annotator.labelling.ingest import import_records
    from annotator.labelling.projects.demo import digit_records

    import_records(project, [r for r in digit_records(80, seed=2) if r.gold in (0, 1)])
    update_project(project.pk)
    auto = Item.objects.filter(project=project, status="auto").count()
    learner = learners.from_bytes(bytes(LearnerState.objects.get(project=project).blob))
    assert auto > 0 and learner.observed == auto


def test_a_backlog_is_decided_in_chunks_with_labels_applied_between_them(monkeypatch):
    """The state lock is released between chunks of decisions, so a label given while a
    backlog is decided is applied before the next chunk (its decisions use the newer model)."""
    from annotator.labelling.engine import pipeline

    monkeypatch.setattr(pipeline, "DECIDE_CHUNK", 10)
    monkeypatch.setattr(pipeline, "AFTER_LABELS", 10)
    project = digits_project(35, look_ahead=1000, params={"query": "random", "p": 0.5})
    user = member(project, "ann")
    chunks = []
    run_once = pipeline._run_once

    def chunk_then_label(project_id, limit):
        ran = run_once(project_id, limit)
        outcome = ran[0]
        chunks.append(outcome.decided)
        if len(chunks) == 1:  # between the first and second chunk, outside any transaction
            item = Item.objects.filter(project=project, status="queued").order_by("seq").first()
            Label.objects.create(item=item, project=project, annotator=user, value=item.gold)
        return ran

    monkeypatch.setattr(pipeline, "_run_once", chunk_then_label)
    outcome = update_project(project.pk)
    assert chunks == [10, 10, 10, 5] and outcome.decided == 35 and outcome.applied == 1
    versions = [v for *_, v in decisions(project)]
    assert versions == [0] * 10 + [1] * 25


def test_decisions_without_labels_keep_the_blob_and_the_round_counter():
    """A chunk of decisions rewrites the learner's blob only when the model changed;
    the round counter n_seen (which CSPAA's adaptive delta_t reads) is kept in its own column,
    so a worker that reloads the learner from the database decides exactly as one with it cached."""
    from tests.support.app import text_project

    texts = [f"message {i} {'win a prize' if i % 3 else 'see you at lunch'}" for i in range(60)]
    config = {"kind": "text", "name": "hashed-ngrams", "n_features": 2**10}
    runs = []
    for reload_every_step in (False, True):
        project = text_project(texts, algorithm="cspaa-adaptive", params={"delta": 0.5}, look_ahead=3,
                               featurizer_config=config, rng_seed=5)
        update_project(project.pk)
        user = member(project, f"ann{reload_every_step}")
        for item in Item.objects.filter(project=project, status="queued"):  # a model with margins
            value = "spam" if "win" in item.text else "ham"
            Label.objects.create(item=item, project=project, annotator=user, value=value, seconds=1.0)
            Item.objects.filter(pk=item.pk).update(status="labelled")
        update_project(project.pk)
        blob = bytes(LearnerState.objects.get(project=project).blob)
        assert learner_state.stored_learner(LearnerState.objects.get(project=project)).n_labels == 3
        while Item.objects.filter(project=project, status="pending").exists():
            update_project(project.pk)
            Item.objects.filter(project=project, status="queued").update(status="skipped")  # no labels
            if reload_every_step:
                learner_state._CACHE.clear()
        state = LearnerState.objects.get(project=project)
        assert bytes(state.blob) == blob  # never rewritten: no label, no parameter change
        assert state.n_seen == state.n_decided == 60
        assert learner_state.stored_learner(state).n_seen == 60
        runs.append(decisions(project))
    assert runs[0] == runs[1]
    assert len({row[3] for row in runs[0]}) > 1  # delta_t moved with the rounds


def test_an_applied_label_rewrites_the_blob():
    project = digits_project(30, look_ahead=5)
    update_project(project.pk)
    before = bytes(LearnerState.objects.get(project=project).blob)
    user = member(project, "ann")
    label_queued(project, user, 1)
    update_project(project.pk)
    state = LearnerState.objects.get(project=project)
    assert bytes(state.blob) != before and learner_state.stored_learner(state).n_labels == 1
