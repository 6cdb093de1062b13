"""The item table's planner statistics (docs/performance.md, :mod:`.engine.table_stats`):
a large import analyses it on PostgreSQL, a small one does not, and the bounded waiting count
is planned as a walk of the queue index even when the statistics say no item is queued."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotator.labelling.engine import queue_counts, table_stats
from annotator.labelling.ingest import import_records
from annotator.labelling.models import Item
from annotator.labelling.projects.creation import create_project
from tests.support.app import vector_records


def test_the_rule_needs_both_the_floor_and_the_fraction():
    assert not table_stats.wants_analyze(table_stats.MIN_ROWS - 1, -1)  # never analysed, few rows
    assert table_stats.wants_analyze(table_stats.MIN_ROWS, -1)
    assert not table_stats.wants_analyze(table_stats.MIN_ROWS, 20 * table_stats.MIN_ROWS)  # 5% of a big table
    assert table_stats.wants_analyze(2 * table_stats.MIN_ROWS, 20 * table_stats.MIN_ROWS)


def vectors_project(n: int):
    project = create_project(name=f"vectors {n}", task="binary", item_kind="vectors", classes=[0, 1],
                             featurizer_config={"kind": "vectors", "n_features": 8}, algorithm="paa-i")
    import_records(project, vector_records([0, 1], n))
    return project


def analysed_rows() -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'labelling_item'::regclass")
        return float(cursor.fetchone()[0])


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_large_import_analyses_the_item_table_and_a_small_one_does_not(services, monkeypatch):
    monkeypatch.setattr(table_stats, "MIN_ROWS", 300)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE labelling_item")  # whatever earlier tests left: an empty table now
    before = analysed_rows()
    vectors_project(100)  # under the floor
    assert analysed_rows() == before
    vectors_project(400)  # 500 rows written since the analyse, over the floor and the fraction
    assert analysed_rows() == before + 500


@pytest.mark.services
@pytest.mark.django_db
def test_the_waiting_count_walks_the_queue_index_with_stale_statistics(services):
    project = vectors_project(5000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE labelling_item")  # statistics of a table where nothing is queued
    Item.objects.filter(project=project).update(queue_status=Item.Status.QUEUED, status=Item.Status.QUEUED)
    with CaptureQueriesContext(connection) as queries:
        queue_counts.waiting_count(project)  # beyond the cap: the counters give the rest
    count_sql = next(q["sql"] for q in queries.captured_queries if "LIMIT" in q["sql"])
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + count_sql)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "item_queue" in plan and "Bitmap" not in plan and "Sort" not in plan, plan
