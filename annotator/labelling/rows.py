"""Writing a few columns of many rows at once: one ``UPDATE ... FROM (VALUES ...)`` per chunk.

Django's ``bulk_update`` builds a ``CASE WHEN`` expression per column and row (about 95% of
the decision engine's time at scale, issue 18); here Python only adapts the values and the
database joins the rows by primary key. The same statement runs on SQLite (3.33+: ``UPDATE
... FROM`` with a ``WITH`` table) and PostgreSQL (where the columns are cast to their types,
since ``VALUES`` parameters arrive untyped).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, models

#: Rows per statement: well under SQLite's 32,766 and PostgreSQL's 65,535 parameters for 8 columns.
CHUNK = 2000


def _statement(model: type[models.Model], fields: Sequence[models.Field], n_rows: int) -> str:
    qn = connection.ops.quote_name
    table, pk = qn(model._meta.db_table), qn(_column(model._meta.pk))
    names = ["pk_"] + [f"c{i}" for i in range(len(fields))]
    row = "(" + ", ".join(["%s"] * len(names)) + ")"
    postgres = connection.vendor == "postgresql"

    def value(i: int, field: models.Field) -> str:
        return f"CAST(v.c{i} AS {field.db_type(connection) or 'text'})" if postgres else f"v.c{i}"

    sets = ", ".join(f"{qn(_column(f))} = {value(i, f)}" for i, f in enumerate(fields))
    pk_type = (model._meta.pk.db_type(connection) or "bigint").split()[0]  # "integer" on SQLite
    pk_value = f"CAST(v.pk_ AS {pk_type})" if postgres else "v.pk_"
    return (f"WITH v ({', '.join(names)}) AS (VALUES {', '.join([row] * n_rows)}) "
            f"UPDATE {table} SET {sets} FROM v WHERE {table}.{pk} = {pk_value}")


def _column(field: models.Field | None) -> str:
    if field is None or field.column is None:
        raise ValueError(f"{field} has no column")
    return field.column


def _field(model: type[models.Model], name: str) -> models.Field:
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field):
        raise ValueError(f"{name!r} is not a column of {model.__name__}")
    return field


def update_rows(model: type[models.Model], fields: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Set ``fields`` (names) of the rows ``(pk, value per field)`` of ``model``'s table,
    :data:`CHUNK` rows per statement. Values go through each field's ``get_db_prep_save``
    (JSON, dates), so the stored form is the one ``save()`` writes."""
    columns = [_field(model, name) for name in fields]
    with connection.cursor() as cursor:
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start:start + CHUNK]
            params: list = []
            for pk, *values in chunk:
                params.append(pk)
                params.extend(f.get_db_prep_save(v, connection) for f, v in zip(columns, values, strict=True))
            cursor.execute(_statement(model, columns, len(chunk)), params)


def save_fields(objs: Sequence[models.Model], fields: Sequence[str]) -> None:
    """Write ``fields`` (names) of the saved instances ``objs`` (one model), see :func:`update_rows`."""
    if objs:
        attnames = [_field(type(objs[0]), name).attname for name in fields]
        update_rows(type(objs[0]), fields, [(o.pk, *(getattr(o, a) for a in attnames)) for o in objs])
