"""Set up Django for a benchmark script on a throw-away database (never the dev database).

SQLite (default): a file in a temporary folder. PostgreSQL (``--postgres URL`` in the
scripts): a fresh database ``annotator_bench_<pid>`` created on that server and dropped at exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent


def setup(postgres: str | None = None, broker: str | None = None, reuse: str | None = None) -> str:
    """Configure the environment, create and migrate the database; returns its DATABASE_URL.
    ``reuse``: the name of an existing PostgreSQL database to migrate and use (kept at exit)."""
    tmp = Path(tempfile.mkdtemp(prefix="annotator-bench-"))
    atexit.register(shutil.rmtree, tmp, True)
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    os.environ.setdefault("HTTPS", "0")  # loopback http
    os.environ["VAR_DIR"] = str(tmp)
    os.environ["CELERY_TASK_DEFAULT_QUEUE"] = f"annotator-bench-{os.getpid()}"
    if broker:
        os.environ["CELERY_BROKER_URL"] = broker
    if postgres and reuse:
        url = urlunsplit(urlsplit(postgres)._replace(path=f"/{reuse}"))
    elif postgres:
        import psycopg

        name = f"annotator_bench_{os.getpid()}"
        admin = postgres
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

        def drop() -> None:
            from django.db import connections

            connections.close_all()
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

        atexit.register(drop)
        parts = urlsplit(postgres)
        url = urlunsplit(parts._replace(path=f"/{name}"))
    else:
        url = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "annotator.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return url
