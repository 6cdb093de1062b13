"""The worker: Celery tasks and the one module that sends them."""
