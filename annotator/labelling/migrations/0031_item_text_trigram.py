"""A trigram index for the item browser's text search on PostgreSQL (docs/dataset.md, "Indexes").

``q`` is Django's ``icontains``, which PostgreSQL runs as ``UPPER(text) LIKE UPPER('%q%')``: a GIN
index of ``pg_trgm`` on ``UPPER(text)`` answers it from the index, so that a search matching
nothing no longer reads every item. The extension must exist or be creatable by the database
user (a superuser, or a trusted extension's owner); when it cannot be, the migration skips the
index and the search keeps its plain scan (correct, slower at 1M items). SQLite: nothing.
The text of an item never changes, so the index does not end the heap-only updates of the
stream's decisions."""

from django.db import DatabaseError, migrations, transaction

INDEX = "item_text_trgm"


def _has_trgm(schema_editor) -> bool:
    """True once ``pg_trgm`` is installed (created here when it can be; a failure rolls back only
    its savepoint)."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        if cursor.fetchone():
            return True
        try:
            with transaction.atomic(using=schema_editor.connection.alias):
                cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except DatabaseError:  # no privilege or no contrib package: keep the plain scan
            return False
    return True


def add_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql" and _has_trgm(schema_editor):
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON labelling_item "
                              "USING gin (UPPER(text) gin_trgm_ops)")


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):

    dependencies = [("labelling", "0030_import_chunks")]

    operations = [migrations.RunPython(add_index, drop_index)]
