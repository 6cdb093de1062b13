"""The Celery app. Configuration comes from Django settings (names prefixed ``CELERY_``).

Start a worker with ``celery -A annotator worker`` (``-B`` also runs the periodic sweep).
"""

import os
from typing import Any

from celery import Celery
from celery.signals import task_postrun, task_prerun

from . import broker  # noqa: F401  (filesystem:// URLs use the atomic-write transport)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")

app = Celery("annotator")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["annotator.labelling.worker"])  # annotator/labelling/worker/tasks.py


@task_prerun.connect
@task_postrun.connect
def close_old_database_connections(sender: Any = None, **_: Any) -> None:
    """Around every task a worker runs, what Django does around every request: close the
    database connection only when it is broken or older than ``CONN_MAX_AGE``.

    Celery's own Django fixup closes it before and after every task unless
    ``CELERY_DB_REUSE_MAX`` is set (settings.py sets it out of reach), so each label cost the
    worker a new PostgreSQL connection: about half of the worker's CPU per label.

    Eager tasks (``task.apply()`` in the caller's process) are left alone, as the fixup does:
    they run inside the caller's transaction, where closing would break its connection.
    """
    if sender is not None and getattr(sender.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()
