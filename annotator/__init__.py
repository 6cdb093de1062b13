"""The annotator Django project; importing it loads the Celery app so that tasks can be sent."""

from .celery import app as celery_app

__all__ = ["celery_app"]
