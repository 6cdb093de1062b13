"""Settings for the test suite: the app's settings with per-run folders, queue and databases.

Each pytest process gets its own run id (its pid), so concurrent runs on one machine never
share a broker folder, a queue or a test database:

* default session: a SQLite FILE test database (so a real worker process can open it) and the
  filesystem broker, both under ``<tmp>/annotator-test-<run>/``;
* with ``DATABASE_URL=postgres://...`` (``make test`` second session): the test database is
  ``test_annotator_<run>``; with ``CELERY_BROKER_URL=redis://...`` the queue is
  ``annotator-test-<run>``.

The variables are put in ``os.environ`` so a worker subprocess started by a test inherits them.
"""

import os
import tempfile
from pathlib import Path

RUN = os.environ.setdefault("ANNOTATOR_TEST_RUN", str(os.getpid()))
TMP = Path(tempfile.gettempdir()) / f"annotator-test-{RUN}"
os.environ.setdefault("SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("HTTPS", "0")  # the test client and the live server speak plain http
os.environ.setdefault("VAR_DIR", str(TMP))
os.environ.setdefault("CELERY_TASK_DEFAULT_QUEUE", f"annotator-test-{RUN}")

from annotator.settings import *  # noqa: E402, F403

DATABASES["default"]["TEST"] = {  # noqa: F405
    "NAME": str(TMP / "test.sqlite3") if DATABASES["default"]["ENGINE"].endswith("sqlite3")  # noqa: F405
    else f"test_annotator_{RUN}",
}
# plus the hosts of ALLOWED_HOSTS (a server in another network namespace, tests/test_hosts.py)
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost",
                 *(h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip())]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
LOGGING = {"version": 1, "disable_existing_loggers": False}
