"""Writing a few columns of many rows at once: one set-wise ``UPDATE ... FROM`` per chunk.

Django's ``bulk_update`` builds a ``CASE WHEN`` expression per column and row (about 95% of
the decision engine's time at scale); here Python only adapts the values and the
database joins the rows by primary key:

* PostgreSQL: ``UPDATE t SET ... FROM unnest(%b, %b, ...) AS v(pk_, c0, ...)`` with ONE array
  parameter per column, whatever the number of rows, bound server-side in binary (psycopg's
  client-side binding scans the statement text for placeholders, which cost more than the update
  itself with ``VALUES``, and quoted every array element as text: 4.4 against 0.9 us per row of
  four columns);
* SQLite (3.33+): ``WITH v(pk_, c0, ...) AS (VALUES (...), ...) UPDATE t SET ... FROM v``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg
from django.db import connection, models

#: Rows per statement: well under SQLite's 32,766 parameters for 8 columns.
CHUNK = 2000


def _column(field: models.Field | None) -> str:
    if field is None or field.column is None:
        raise ValueError(f"{field} has no column")
    return field.column


def _field(model: type[models.Model], name: str) -> models.Field:
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field):
        raise ValueError(f"{name!r} is not a column of {model.__name__}")
    return field


def _sets(fields: Sequence[models.Field], value: Any) -> str:
    qn = connection.ops.quote_name
    return ", ".join(f"{qn(_column(f))} = {value(i, f)}" for i, f in enumerate(fields))


def _prepared(field: models.Field, values: list[Any]) -> list[Any]:
    """``get_db_prep_save`` of ``values``, once per distinct value (a chunk of decisions shares
    one time and a few statuses; the time's adaptation alone cost more than the update)."""
    memo: dict[Any, Any] = {}
    for v in values:
        if v not in memo:
            memo[v] = field.get_db_prep_save(v, connection)
    return [memo[v] for v in values]


def _binding_cursor() -> Any:
    """A Django cursor (query logging and execute wrappers as usual) on a psycopg cursor that
    binds parameters server-side, so that ``%b`` sends them in binary (Django's own cursors bind
    client-side, as text)."""
    connection.ensure_connection()
    raw: Any = psycopg.Cursor(connection.connection)  # the stubs say a Django cursor; any DB-API one works
    return connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)


def _postgres(model: type[models.Model], fields: Sequence[models.Field],
              rows: Sequence[Sequence[Any]]) -> None:
    """One statement, one array per column (JSON as text, cast back per element)."""
    qn = connection.ops.quote_name
    table, pk = qn(model._meta.db_table), qn(_column(model._meta.pk))
    pk_type = (model._meta.pk.db_type(connection) or "bigint").split()[0] if model._meta.pk else "bigint"

    def is_json(f: models.Field) -> bool:
        return isinstance(f, models.JSONField)

    arrays: list[list[Any]] = [[r[0] for r in rows]]
    for i, f in enumerate(fields, start=1):
        if isinstance(f, models.JSONField):
            arrays.append([None if r[i] is None else json.dumps(r[i], cls=f.encoder) for r in rows])
        else:
            arrays.append(_prepared(f, [r[i] for r in rows]))
    types = [pk_type] + ["text" if is_json(f) else (f.db_type(connection) or "text") for f in fields]
    params = ", ".join(f"CAST(%b AS {t}[])" for t in types)
    names = ", ".join(["pk_"] + [f"c{i}" for i in range(len(fields))])
    sets = _sets(fields, lambda i, f: f"CAST(v.c{i} AS jsonb)" if is_json(f) else f"v.c{i}")
    with _binding_cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {sets} FROM unnest({params}) AS v({names}) "
                       f"WHERE {table}.{pk} = v.pk_", arrays)


def _values(model: type[models.Model], fields: Sequence[models.Field],
            rows: Sequence[Sequence[Any]]) -> None:
    """One ``VALUES`` table of the rows (SQLite and other backends)."""
    qn = connection.ops.quote_name
    table, pk = qn(model._meta.db_table), qn(_column(model._meta.pk))
    names = ["pk_"] + [f"c{i}" for i in range(len(fields))]
    row = "(" + ", ".join(["%s"] * len(names)) + ")"
    sets = _sets(fields, lambda i, f: f"v.c{i}")
    params: list[Any] = []
    for pk_value, *values in rows:
        params.append(pk_value)
        params.extend(f.get_db_prep_save(v, connection) for f, v in zip(fields, values, strict=True))
    with connection.cursor() as cursor:
        cursor.execute(f"WITH v ({', '.join(names)}) AS (VALUES {', '.join([row] * len(rows))}) "
                       f"UPDATE {table} SET {sets} FROM v WHERE {table}.{pk} = v.pk_", params)


def update_rows(model: type[models.Model], fields: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Set ``fields`` (names) of the rows ``(pk, value per field)`` of ``model``'s table,
    :data:`CHUNK` rows per statement. Values are adapted as ``save()`` adapts them (each field's
    ``get_db_prep_save``; JSON through the field's encoder)."""
    columns = [_field(model, name) for name in fields]
    write = _postgres if connection.vendor == "postgresql" else _values
    for start in range(0, len(rows), CHUNK):
        write(model, columns, rows[start:start + CHUNK])


def save_fields(objs: Sequence[models.Model], fields: Sequence[str]) -> None:
    """Write ``fields`` (names) of the saved instances ``objs`` (one model), see :func:`update_rows`."""
    if objs:
        attnames = [_field(type(objs[0]), name).attname for name in fields]
        update_rows(type(objs[0]), fields, [(o.pk, *(getattr(o, a) for a in attnames)) for o in objs])
