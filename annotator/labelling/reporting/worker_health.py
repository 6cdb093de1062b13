"""Worker health per Celery queue, for the dashboard: a worker that is busy is not a missing one.

Beat sends the heartbeat task to each queue (settings ``CELERY_BEAT_SCHEDULE``); the worker that
takes it records its hostname, the queue and the time (:class:`.models.WorkerHeartbeat`). A queue
is ``up`` when a heartbeat from it is younger than :data:`UP_PERIODS` periods. Otherwise it is
``busy`` when an import or a planner run is running and its worker beat within
``JOB_STALE_SECONDS`` (:func:`.jobs.live`: the workers are working, they will come back), and
``absent`` when nothing shows that any worker is there. Docs: ``docs/operations.md``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from annotator.labelling.engine import jobs
from annotator.labelling.models import ImportJob, PlannerRun, WorkerHeartbeat

#: a queue whose last heartbeat is younger than this many HEARTBEAT_SECONDS periods is up
UP_PERIODS = 3


def queue_health() -> list[dict[str, Any]]:
    """Per queue (labels first, then heavy): ``{"queue", "role", "state" (up/busy/absent),
    "age" (seconds since its last heartbeat, None if never), "busy_with" (running jobs)}``."""
    now = timezone.now()
    newest = dict(WorkerHeartbeat.objects.values("queue").annotate(m=Max("last_seen"))
                  .values_list("queue", "m"))
    running = jobs.live(ImportJob).count() + jobs.live(PlannerRun).count()
    out = []
    for queue, role in ((settings.CELERY_TASK_DEFAULT_QUEUE, "labels and decisions"),
                        (settings.CELERY_HEAVY_QUEUE, "imports and planner runs")):
        seen = newest.get(queue)
        age = (now - seen).total_seconds() if seen else None
        if age is not None and age <= UP_PERIODS * settings.HEARTBEAT_SECONDS:
            state = "up"
        else:
            state = "busy" if running else "absent"
        out.append({"queue": queue, "role": role, "state": state, "age": age, "busy_with": running})
    return out
