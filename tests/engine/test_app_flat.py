"""The hot requests cost the same whatever the stream's and the queue's length.

* The waiting count read from the counters (queues longer than ``queue_counts.COUNT_CAP``) equals the
  rows it stands for, through leases, expired leases, labels applied or not, skips and undos.
* The label + next request, the metrics API, the dashboard and the model export issue the same SQL
  statements on a stream ten times longer with a queue ten times longer; on PostgreSQL they also
  read the same number of item rows (``pg_stat_xact_user_tables``: rows the transaction fetched),
  the export only those of the labels not applied yet.

Counts, never timings: the timings are benchmarks/scale.py's (benchmarks/SCALE.md).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotator.labelling.annotation.actions import lease_next, skip_item, submit_label, undo_last_label
from annotator.labelling.engine import queue_counts
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Label, Membership
from harness.chosen_labels import label_chosen
from tests.support.app import digits_project, leased_item_id, member

HX = {"HTTP_HX_REQUEST": "true"}


def rows_waiting(project) -> int:
    """The definition: every waiting row, counted."""
    return Item.objects.filter(project=project).waiting().count()


@pytest.mark.django_db
def test_the_waiting_count_from_the_counters_equals_the_rows(monkeypatch):
    monkeypatch.setattr(queue_counts, "COUNT_CAP", 2)  # every count below goes through the counters
    project = digits_project(120, params={"delta": 100.0}, look_ahead=40)
    update_project(project.pk)
    a, b, c = (member(project, name) for name in "abc")
    checks = []

    def check(what: str) -> None:
        checks.append(what)
        assert queue_counts.waiting_count(project) == rows_waiting(project), what

    check("decided")
    first = lease_next(project, a)
    lease_next(project, b)
    check("two leases")
    submit_label(project, first.pk, a, first.gold)
    check("a label not applied yet")
    update_project(project.pk)
    check("applied, the queue topped up")
    Item.objects.filter(project=project, status="leased", lease_owner=b).update(
        lease_expires=timezone.now() - timedelta(seconds=1))
    check("an expired lease")
    taken = lease_next(project, c)  # c takes b's expired item or the next one
    check("leased again")
    skip_item(taken, c)
    check("skipped")
    nxt = lease_next(project, a)
    submit_label(project, nxt.pk, a, nxt.gold)
    update_project(project.pk)
    undo_last_label(project, a)  # an applied label undone: the item is leased to a again
    check("undone")
    update_project(project.pk)  # the rebuild
    late = lease_next(project, b)
    submit_label(project, late.pk, b, late.gold)
    label_chosen(project, late.pk, c, late.gold)  # a late second opinion: not primary
    check("a second opinion")
    assert rows_waiting(project) > queue_counts.COUNT_CAP  # the counters were what was compared


def long_queue_project(n: int):
    """``n`` digits nearly all queued (a queue of about ``n`` items), an annotator on the queue page."""
    project = digits_project(n, params={"delta": 100.0}, look_ahead=n)
    update_project(project.pk)
    project.look_ahead = 8
    project.save(update_fields=["look_ahead"])
    admin = member(project, f"boss{n}", role=Membership.Role.ADMIN)
    person = Client()
    person.force_login(member(project, f"ann{n}"))
    board = Client()
    board.force_login(admin)
    return project, person, board


def costs(n: int, rows: bool = False) -> dict[str, int]:
    """SQL statements (or, ``rows``: item rows fetched, PostgreSQL) of a label + next request, the
    metrics API and the dashboard panel on a project of ``n`` items with a queue of about ``n``."""
    project, person, board = long_queue_project(n)
    page = person.get(f"/projects/{project.pk}/")
    item = Item.objects.get(pk=leased_item_id(page))
    requests = {
        "label + next": lambda: person.post(f"/projects/{project.pk}/items/{item.pk}/label",
                                            {"value": item.gold}, **HX),
        "metrics": lambda: board.get(f"/api/projects/{project.pk}/metrics"),
        "dashboard": lambda: board.get(f"/projects/{project.pk}/dashboard/panel", **HX),
        "model export": lambda: board.get(f"/projects/{project.pk}/export/model.npz"),
    }
    out = {}
    for name, request in requests.items():
        before = items_fetched() if rows else 0
        with CaptureQueriesContext(connection) as queries:
            answer = request()
        assert answer.status_code == 200, (name, answer.content[:300])
        out[name] = items_fetched() - before if rows else len(queries.captured_queries)
    return out


def items_fetched() -> int:
    """Item rows this transaction fetched so far (:func:`rows_fetched`)."""
    return rows_fetched("labelling_item")


@pytest.mark.django_db
def test_the_hot_requests_issue_the_same_statements_on_a_ten_times_longer_queue(monkeypatch):
    monkeypatch.setattr(queue_counts, "COUNT_CAP", 20)  # both queues are longer: the counters count them
    small, large = costs(60), costs(600)
    assert small == large, (small, large)


@pytest.mark.services
@pytest.mark.django_db
def test_the_hot_requests_read_as_many_item_rows_on_a_ten_times_longer_queue(services, monkeypatch,
                                                                            settings):
    """PostgreSQL: rows fetched, not plans; the queue index's few rows per request, not the queue.
    (The dashboard's cost view reads its first ``BASELINE_MAX_ITEMS`` gold rows, cached: bounded
    by that setting, lowered here below both streams.)"""
    monkeypatch.setattr(queue_counts, "COUNT_CAP", 20)
    settings.BASELINE_MAX_ITEMS = 20
    small, large = costs(60, rows=True), costs(600, rows=True)
    for name in small:
        assert large[name] <= small[name] + 5, (name, small, large)
        assert large[name] < 200, (name, large)  # a tenth of the queue at most
    assert large["model export"] <= 1, large  # the item of the one label not applied yet


@pytest.mark.django_db
def test_a_label_given_during_a_backlog_commits_its_model_version_before_the_next_chunk(monkeypatch):
    """Label -> new model version while a backlog is decided: the transaction that applies the
    label decides at most ``AFTER_LABELS`` items, then commits (the new version is visible), and
    the next chunks go on at full size; every decision after the label used the newer model."""
    from annotator.labelling.engine import pipeline

    monkeypatch.setattr(pipeline, "DECIDE_CHUNK", 20)
    monkeypatch.setattr(pipeline, "AFTER_LABELS", 4)
    monkeypatch.setattr(pipeline, "CHUNK_SECONDS", 1e6)  # sizes by count here, never by the clock
    project = digits_project(60, look_ahead=1000, params={"query": "random", "p": 0.5})
    user = member(project, "ann")
    steps: list[tuple[int, int]] = []
    run_once = pipeline._run_once

    def chunk_then_label(project_id, limit):
        ran = run_once(project_id, limit)
        steps.append((ran[0].applied, ran[0].decided))
        if len(steps) == 2:  # between two chunks, outside any transaction
            item = Item.objects.filter(project=project, status="queued").order_by("seq").first()
            label_chosen(project, item.pk, user, item.gold)
        return ran

    monkeypatch.setattr(pipeline, "_run_once", chunk_then_label)
    update_project(project.pk)
    assert steps == [(0, 4), (0, 20), (1, 4), (0, 20), (0, 12)], steps
    versions = list(Item.objects.filter(project=project).order_by("seq")
                    .values_list("model_version", flat=True))
    assert versions == [0] * 24 + [1] * 36


@pytest.mark.django_db
def test_a_label_given_during_a_chunk_stops_it_and_commits_with_it(monkeypatch):
    """A label stored while a chunk decides (here: between two of its steps) stops the chunk at
    the next step; the chunk applies it before its commit, and the next chunks go on."""
    from annotator.labelling.engine import pipeline, stream

    monkeypatch.setattr(pipeline, "DECIDE_CHUNK", 20)
    monkeypatch.setattr(pipeline, "AFTER_LABELS", 4)
    monkeypatch.setattr(pipeline, "CHUNK_SECONDS", 1e6)
    monkeypatch.setattr(pipeline, "STEP_SECONDS", 0)  # steps of AFTER_LABELS here, never by the clock
    project = digits_project(60, look_ahead=1000, params={"query": "random", "p": 0.5})
    user = member(project, "ann")
    calls = []
    advance = stream.advance

    def advance_then_label(lk, counts, limit, free=None):
        done = advance(lk, counts, limit, free)
        calls.append(done)
        if len(calls) == 3:  # the second chunk's second step: an annotator labels meanwhile
            item = Item.objects.filter(project=project, status="queued").order_by("seq").first()
            label_chosen(project, item.pk, user, item.gold)
        return done

    steps: list[tuple[int, int]] = []
    run_once = pipeline._run_once

    def record(project_id, limit):
        ran = run_once(project_id, limit)
        steps.append((ran[0].applied, ran[0].decided))
        return ran

    monkeypatch.setattr(stream, "advance", advance_then_label)
    monkeypatch.setattr(pipeline, "_run_once", record)
    update_project(project.pk)
    assert steps == [(0, 4), (1, 8), (0, 20), (0, 20), (0, 8)], steps
    versions = list(Item.objects.filter(project=project).order_by("seq")
                    .values_list("model_version", flat=True))
    assert versions == [0] * 12 + [1] * 48


@pytest.mark.django_db
def test_the_steps_of_a_chunk_grow_to_the_step_seconds(monkeypatch):
    """Within a chunk, the first step decides AFTER_LABELS items and the next ones as many as take
    STEP_SECONDS at the rate of the step before (up to the stream's BATCH and the chunk's rest): few
    statements per decision on a long backlog, a look for a waiting label between steps."""
    from annotator.labelling.engine import pipeline, stream

    monkeypatch.setattr(pipeline, "DECIDE_CHUNK", 50)
    monkeypatch.setattr(pipeline, "AFTER_LABELS", 4)
    monkeypatch.setattr(pipeline, "CHUNK_SECONDS", 1e6)
    monkeypatch.setattr(stream, "BATCH", 30)
    project = digits_project(60, look_ahead=1000, params={"query": "random", "p": 0.5})
    calls: list[int] = []
    advance = stream.advance

    def record(lk, counts, limit, free=None):
        calls.append(limit)
        return advance(lk, counts, limit, free)

    monkeypatch.setattr(stream, "advance", record)
    monkeypatch.setattr(pipeline, "STEP_SECONDS", 1e6)  # any measured rate asks for a whole BATCH
    update_project(project.pk)
    # chunk 1: AFTER_LABELS items; chunk 2 (50): 4, the BATCH, the chunk's rest; chunk 3: 4, then a
    # BATCH that finds the 2 items left
    assert calls == [4, 4, 30, 16, 4, 30], calls
    assert Item.objects.filter(project=project, status="pending").count() == 0


def labelled_board(n: int):
    """A project of ``n`` digits, each labelled by two annotators two days ago (agreement and
    quality have something to read; the labels-per-hour chart, the last 24 hours, has none), and
    an admin's client on its dashboard."""
    project = digits_project(n, params={"delta": 100.0}, look_ahead=n)
    update_project(project.pk)
    a, b = member(project, f"a{n}"), member(project, f"b{n}")
    items = Item.objects.filter(project=project).order_by("seq")
    labels = Label.objects.bulk_create([Label(item=item, project=project, annotator=user, value=item.gold,
                                              seconds=2.0, primary=user is a)
                                        for item in items for user in (a, b)])
    start = timezone.now() - timedelta(days=2)
    for k, label in enumerate(labels):  # a second apart, applied
        label.created, label.applied_version = start + timedelta(seconds=k), k + 1
    Label.objects.bulk_update(labels, ["created", "applied_version"])
    board = Client()
    board.force_login(member(project, f"boss{n}", role=Membership.Role.ADMIN))
    return project, board


def dashboard_label_costs(n: int, rows: bool = False) -> int:
    """SQL statements (``rows``: label rows fetched, PostgreSQL) of a dashboard panel request on a
    project with ``2 n`` labels."""
    project, board = labelled_board(n)
    if rows:  # the plans of a big table: on a few hundred rows PostgreSQL would scan them all
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE labelling_label")
            cursor.execute("SET LOCAL enable_seqscan = off")
    before = rows_fetched("labelling_label") if rows else 0
    with CaptureQueriesContext(connection) as queries:
        answer = board.get(f"/projects/{project.pk}/dashboard/panel", **HX)
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "Krippendorff" in page and "over the project's newest 20 labels" in page
    return rows_fetched("labelling_label") - before if rows else len(queries.captured_queries)


def rows_fetched(table: str) -> int:
    """Rows of ``table`` this transaction fetched so far: by sequential scans and through indexes."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) "
                       "FROM pg_stat_xact_user_tables WHERE relname = %s", [table])
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_the_dashboard_issues_the_same_statements_with_ten_times_more_labels(settings):
    """Per-annotator figures, agreement and quality read a window of the newest labels
    (``DASHBOARD_LABEL_WINDOW``), whatever the number of labels."""
    settings.DASHBOARD_LABEL_WINDOW = 20
    assert dashboard_label_costs(30) == dashboard_label_costs(300)


@pytest.mark.services
@pytest.mark.django_db
def test_decisions_without_a_query_are_heap_only_updates(services):
    """PostgreSQL: deciding an item without a query changes no column an index reads (the queue
    indexes read ``queue_status``, not ``status``) and finds room on its page (the item table's
    fillfactor), so it writes no index entry (HOT). A few rows per page may not fit (the new
    version is larger: the decision's columns); a queried item joins the queue index."""
    from tests.support.app import text_project

    texts = [f"message number {i} about {'prizes' if i % 3 else 'lunch'} and more" for i in range(400)]
    project = text_project(texts, look_ahead=1000, budget_ratio=0.05)
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'labelling_item'")
        assert "fillfactor=45" in cursor.fetchone()[0]

    def updates() -> tuple[int, int]:  # a difference: the view may also hold earlier tests' counts
        with connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(n_tup_upd, 0), coalesce(n_tup_hot_upd, 0) "
                           "FROM pg_stat_xact_user_tables WHERE relname = 'labelling_item'")
            return cursor.fetchone()

    before = updates()
    update_project(project.pk)
    updated, hot = (b - a for a, b in zip(before, updates(), strict=True))
    auto = Item.objects.filter(project=project, status="auto").count()
    queued = Item.objects.filter(project=project, status="queued").count()
    assert auto + queued == 400 and auto > 200 and queued > 0, (auto, queued)
    assert updated == 400 and auto * 0.9 <= hot <= auto, (updated, hot, auto)
    assert Item.objects.filter(project=project).waiting().count() == queued  # through item_queue


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_the_pipeline_commits_asynchronously_and_only_itself(services, monkeypatch, settings):
    """PostgreSQL: the pipeline's transactions run with ``synchronous_commit = off``
    (``DECIDE_ASYNC_COMMIT``; why it is safe: docs/operations.md), set LOCAL: the connection's
    other transactions (labels, uploads) keep the server's setting; on with the setting off.
    (Real transactions here: inside a test's transaction, SET LOCAL would outlive the pipeline's
    savepoint, which is why the pipeline sets it only in a transaction of its own.)"""
    from annotator.labelling.engine import stream

    def setting() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            return cursor.fetchone()[0]

    seen: list[str] = []
    advance = stream.advance

    def record(lk, counts, limit, free=None):
        seen.append(setting())
        return advance(lk, counts, limit, free)

    monkeypatch.setattr(stream, "advance", record)
    outside = setting()
    assert outside == "on"
    project = digits_project(5, look_ahead=1000)
    update_project(project.pk)
    assert seen and set(seen) == {"off"} and setting() == outside, seen
    settings.DECIDE_ASYNC_COMMIT = False
    seen.clear()
    first = Item.objects.get(project=project, seq=0)
    Item.objects.create(project=project, seq=5, data=first.data, vector=first.vector)  # one more to decide
    update_project(project.pk)
    assert seen and set(seen) == {"on"}, seen


@pytest.mark.services
@pytest.mark.django_db
def test_the_dashboard_reads_as_many_label_rows_with_ten_times_more_labels(services, settings):
    settings.DASHBOARD_LABEL_WINDOW = 20
    small, large = dashboard_label_costs(30, rows=True), dashboard_label_costs(300, rows=True)
    assert large <= small + 5, (small, large)
    assert large < 150, large  # a quarter of the labels at most: the window, not the table
