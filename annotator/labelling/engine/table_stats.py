"""Planner statistics kept fresh by the writers themselves (docs/performance.md).

PostgreSQL plans a query from the statistics of the last ``ANALYZE``. After a large import
(or a large backlog decided: every decision rewrites its item's row) those describe a table
that no longer exists, and a bounded count can then be planned as a scan of every queued row:
the dashboard took 10x longer after 300,000 inserts until the table was analysed. Autovacuum
would analyse it, but it may be off or late (it is off on the benchmark machine).

So the code that writes many rows asks for an analyse when the rows changed since the last one
reach :data:`MIN_ROWS` and :data:`FRACTION` of the rows then known (autovacuum's own rule, with
a higher floor). One statement reads the change count (``n_mod_since_analyze``, which the
server's statistics collector updates about once a second: the rows just written are added to
it); one process at a time analyses (an advisory lock; the others skip). SQLite: nothing.
"""

from __future__ import annotations

import zlib

from django.db import connection, models, transaction

#: rows changed since the last analyse below which the statistics are left alone
MIN_ROWS = 10_000
#: ... and the fraction of the table's rows (as last analysed) they must reach
FRACTION = 0.1


def wants_analyze(changed: int, known_rows: float) -> bool:
    """The rule: ``changed`` rows since the last analyse of a table of ``known_rows`` rows then
    (``reltuples``: -1 or 0 when never analysed)."""
    return changed >= MIN_ROWS and changed >= FRACTION * max(known_rows, 0.0)


def analyze_if_stale(model: type[models.Model], written: int) -> bool:
    """After ``written`` rows of ``model`` were inserted or updated (committed): ``ANALYZE`` its
    table when :func:`wants_analyze` says so. True when this call analysed it. Call it outside a
    transaction or through :func:`after_commit` (the analyse must see the committed rows)."""
    if connection.vendor != "postgresql" or written <= 0:
        return False
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(s.n_mod_since_analyze, 0), c.reltuples FROM pg_class c "
                       "LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = %s::regclass",
                       [table])
        row = cursor.fetchone()
    if row is None or not wants_analyze(int(row[0]) + written, float(row[1])):
        return False
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [zlib.crc32(f"analyze {table}".encode())])
        (locked,) = cursor.fetchone()
        if not locked:
            return False  # another process is analysing it now
        cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")
    return True


def after_commit(model: type[models.Model], written: int) -> None:
    """:func:`analyze_if_stale` once the current transaction commits (at once outside one)."""
    if connection.vendor == "postgresql" and written > 0:
        transaction.on_commit(lambda: analyze_if_stale(model, written))
