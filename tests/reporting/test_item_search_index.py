"""The item browser's text search on PostgreSQL (docs/dataset.md, "Indexes"): migration 0031's
trigram index exists, matches the SQL Django runs for ``q`` (so the database can answer a search
from it), and is skipped without error when the extension cannot be created. Run with
``DATABASE_URL=postgres://...`` (skipped on SQLite)."""

from __future__ import annotations

import importlib
import os

import pytest
from django.db import connection

from annotator.labelling.models import Item
from annotator.labelling.reporting.item_browser import browse
from tests.support.app import text_project
from tests.support.resources import require_postgresql

pytestmark = [pytest.mark.services, pytest.mark.django_db]

MIGRATION = importlib.import_module("annotator.labelling.migrations.0031_item_text_trigram")


@pytest.fixture
def postgresql(services) -> None:
    require_postgresql()


def _index_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [MIGRATION.INDEX])
        return cursor.fetchone() is not None


def test_the_text_search_can_use_the_trigram_index(postgresql):
    assert _index_exists()
    project = text_project(["Free entry now", "see you at lunch", "FREE prize", "ok"])
    found = browse(project, {"q": "free"})
    assert [r["text"] for r in found.rows] == ["Free entry now", "FREE prize"]
    assert browse(project, {"q": "xyzzy"}).rows == []
    # the plan of Django's own icontains SQL, the table scan ruled out: the trigram index serves it
    query = Item.objects.filter(text__icontains="xyzzy").order_by().values("id").query
    sql, params = query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")  # not the (project, seq) walk either
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert MIGRATION.INDEX in plan, plan


def test_without_the_privilege_the_migration_keeps_the_plain_scan(postgresql):
    """A user who may not create the extension: the migration skips the index, without error
    (all of it inside the test's transaction, rolled back afterwards)."""
    role = f"desk_no_create_{os.getpid()}"
    with connection.cursor() as cursor:
        cursor.execute("DROP EXTENSION pg_trgm CASCADE")  # drops the index too
        cursor.execute(f'CREATE ROLE "{role}"')
        cursor.execute(f'GRANT ALL ON TABLE labelling_item TO "{role}"')
        cursor.execute(f'SET LOCAL ROLE "{role}"')
        with connection.schema_editor() as editor:
            MIGRATION.add_index(None, editor)
        cursor.execute("RESET ROLE")
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        assert cursor.fetchone() is None
    assert not _index_exists()
    project = text_project(["Free entry now", "ok"])
    assert [r["text"] for r in browse(project, {"q": "free"}).rows] == ["Free entry now"]
