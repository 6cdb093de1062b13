"""The Celery app. Configuration comes from Django settings (names prefixed ``CELERY_``).

Start a worker with ``celery -A annotator worker`` (``-B`` also runs the periodic sweep).
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")

app = Celery("annotator")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
