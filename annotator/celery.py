"""The Celery app. Configuration comes from Django settings (names prefixed ``CELERY_``).

Start a worker with ``celery -A annotator worker`` (``-B`` also runs the periodic sweep).
"""

import os

from celery import Celery

from . import broker  # noqa: F401  (filesystem:// URLs use the atomic-write transport)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")

app = Celery("annotator")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
