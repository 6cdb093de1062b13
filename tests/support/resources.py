"""The rules for tests that need outside resources.

* the data-sets folder beside the repository (real data, docs/architecture.md "Data sets"):
  tests marked ``datasets`` use :func:`shared_dataset`,
  which skips with a clear message when the folder is absent outside CI and fails in CI.
* PostgreSQL and Redis: tests marked ``services`` must fail, not skip, when
  ``REQUIRE_SERVICES=1`` (set by ``.ci/run``) and the services are unreachable
  (:func:`services_problem`, read by the ``services`` fixture of ``conftest.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"


def services_required() -> bool:
    """True when service-backed tests must fail rather than skip (CI)."""
    return os.environ.get("REQUIRE_SERVICES") == "1" or os.environ.get("CI") == "true"


def absent(message: str) -> None:
    """A resource the test needs is absent: fail in CI (:func:`services_required`), else skip."""
    if services_required():
        pytest.fail(f"required in CI (REQUIRE_SERVICES=1): {message}")
    pytest.skip(message)


def shared_dataset(relative: str) -> Path:
    """Path of a file under :data:`DATASETS`; skip (laptop) or fail (CI) when missing."""
    path = DATASETS / relative
    if not path.exists():
        absent(f"dataset {path} is missing (the {DATASETS} folder is not beside the repo)")
    return path


def require_postgresql() -> None:
    """The test runs only on PostgreSQL: skip (laptop) or fail (CI) on another database."""
    from django.db import connection

    if connection.vendor != "postgresql":
        absent("this session runs on SQLite; run it with DATABASE_URL=postgres://...")


def _reachable(host: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def services_problem() -> str | None:
    """Why the PostgreSQL + Redis tests cannot run in this session, or None if they can."""
    from urllib.parse import urlsplit

    from django.conf import settings

    db = settings.DATABASES["default"]
    broker = settings.CELERY_BROKER_URL
    if not db["ENGINE"].endswith("postgresql") or not broker.startswith("redis://"):
        return ("this session runs on DATABASE_URL/CELERY_BROKER_URL that are not PostgreSQL/Redis; "
                "`make test` runs the services tests in a second session with both set")
    if not _reachable(db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432)):
        return f"PostgreSQL at {db['HOST']}:{db['PORT']} is unreachable"
    redis = urlsplit(broker)
    if not _reachable(redis.hostname or "127.0.0.1", redis.port or 6379):
        return f"Redis at {redis.hostname}:{redis.port} is unreachable"
    return None
