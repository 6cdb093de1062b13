"""This project as the ML backend of a Label Studio project (docs/label_studio.md).

Label Studio calls its ML backend at ``<url>/health``, ``<url>/setup``, ``<url>/predict`` and,
through the webhook it registers when the backend is added, ``<url>/webhook`` with every project
event. The routes are in :mod:`..api.label_studio`; what they do is here:

* :func:`items_for_tasks`: a task Label Studio names becomes an item of this project the first
  time (featurized and inserted like an API item, remembered in :class:`..models.LabelStudioTask`),
  so the stream engine decides it and the learner can be taught its label; a task this project
  exported (its ``meta.item_id`` an item of this project holding the task's content) is that item;
* :func:`predictions`: the stored learner's class for each task with ``score`` = its query
  probability now (sort the Data Manager by "Prediction score", descending, to label first what
  the learner would ask about) and ``model_version`` = the learner's version;
* :func:`annotation_event`: an annotation created or updated there becomes the item's label
  here through the label path (:mod:`..ingest.opinions` for an item not decided yet, the admin's
  relabel, :func:`.consensus.resolve`, for a decided one: a label not drawn by the query rule, a
  new model version, every counter kept); a deleted one is retracted as an undo retracts a label.
  The latest annotation of a task is its label here.

The token is per project, derived from the project's API token (:func:`backend_token`): a new
API token makes a new backend URL. Label Studio's webhook carries no credentials of the ML
backend connection, so the token is a part of the URL path.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence
from typing import Any

import scipy.sparse as sp
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotator.labelling.engine import running_totals
from annotator.labelling.engine.learner_state import stored_learner
from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.ingest import import_ids, item_content
from annotator.labelling.ingest.opinions import LABEL_STUDIO, outside_user
from annotator.labelling.models import Consensus, Item, Label, LabelStudioTask, LearnerState, Project
from annotator.labelling.teams import consensus
from annotator.labelling.webhooks import outbox
from learners.uploads import IngestError, Record
from learners.uploads.input_rules import whole_number
from learners.uploads.label_studio import annotator_name, choice_of, task_record

#: the annotation events that teach the learner, and the one that takes a label back
TEACHING = ("ANNOTATION_CREATED", "ANNOTATION_UPDATED")
DELETED = ("ANNOTATIONS_DELETED",)
#: most tasks one ``/predict`` call may name
MAX_TASKS = 1000
_CHOICES = re.compile(r"<Choices\b([^>]*)>", re.IGNORECASE)
_ATTR = re.compile(r"""\b(name|toName)\s*=\s*["']([^"']+)["']""")


class BackendError(ValueError):
    """A request Label Studio sent cannot be served (the message says why; a 400)."""


def backend_token(project: Project) -> str:
    """The project's ML-backend token: an HMAC of its API token, so it can be shown in a URL
    without giving the API token away, and changes with it."""
    key = settings.SECRET_KEY.encode()
    return hmac.new(key, f"label-studio-ml:{project.api_token}".encode(), hashlib.sha256).hexdigest()[:40]


def token_ok(project: Project | None, given: str) -> bool:
    """Whether ``given`` is ``project``'s backend token (constant time; False for no project)."""
    expected = backend_token(project) if project is not None else "0" * 40
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode()) and project is not None


def control_names(label_config: Any) -> tuple[str, str]:
    """``(from_name, to_name)`` of the ``<Choices>`` control of a Label Studio labelling config;
    BackendError when it has none (a span ``<Labels>`` project, say)."""
    if not isinstance(label_config, str):
        raise BackendError("the request holds no labelling config")
    for match in _CHOICES.finditer(label_config):
        attrs = dict(_ATTR.findall(match.group(1)))
        if "name" in attrs and "toName" in attrs:
            return attrs["name"], attrs["toName"]
    raise BackendError("the labelling config has no <Choices name=... toName=...> control; this backend "
                       "serves Choices classifications only")


def _ls_id(value: Any, what: str) -> int:
    """A Label Studio id (a task's, an annotation's) from a JSON body: a whole number within the
    column's range (:func:`learners.uploads.input_rules.whole_number`); BackendError otherwise."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise BackendError(f"{what} must be an integer")
    try:
        return whole_number(value, what)
    except ValueError as exc:
        raise BackendError(str(exc)) from None


def _task_id(task: Any, where: str) -> int:
    return _ls_id(task.get("id") if isinstance(task, dict) else None, f"{where}: the task's 'id'")


def _exported_items(project: Project, tasks: dict[int, Any], records: dict[int, Record]) -> dict[int, int]:
    """``{task id: item id}`` of the ``tasks`` that are items of ``project`` exported to Label
    Studio (:mod:`..reporting.label_studio`): the task's ``meta.item_id`` (an integer) is an item
    of this project, and the task's content (``records``, read from its ``data``) is what that
    item stores. An item of another project, or an id whose item holds other content (the task
    was edited there, or came from another install whose ids mean other items), is not honoured:
    the task is then imported as a new item."""
    claims: dict[int, int] = {}
    for tid, task in tasks.items():
        meta = task.get("meta")
        given = meta.get("item_id") if isinstance(meta, dict) else None
        try:
            claims[tid] = whole_number(given, "meta.item_id")
        except ValueError:
            continue
    if not claims:
        return {}
    rows = Item.objects.filter(project=project, pk__in=set(claims.values())).values_list("pk", "text", "data")
    stored = {pk: (text, None if data is None else bytes(data)) for pk, text, data in rows}
    out = {}
    for tid, pk in claims.items():
        text, data, _, _ = item_content(project, records[tid])
        if pk in stored and stored[pk] == (text, data):
            out[tid] = pk
    return out


def items_for_tasks(project: Project, tasks: Sequence[Any]) -> list[int]:
    """The item id of each task (``{"id", "data", "meta"}``), in order, in one transaction. A task
    seen for the first time is remembered (:class:`..models.LabelStudioTask`) with the item it
    was exported from when it is one (:func:`_exported_items`: ``meta.item_id``, an item of this
    project with the task's content; several tasks may name one item), else with a new pending
    item imported from it. BackendError naming the task for a task without an id or content
    (nothing is stored then)."""
    ids = [_task_id(task, f"task {i}") for i, task in enumerate(tasks)]
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # one import per task
        known = dict(LabelStudioTask.objects.filter(project=project, task_id__in=ids)
                     .values_list("task_id", "item_id"))
        new = {tid: task for tid, task in zip(ids, tasks, strict=True) if tid not in known}
        if new:
            try:
                records = {tid: task_record(project, i, {"id": tid, "data": task.get("data")})
                           for i, (tid, task) in enumerate(new.items())}
                found = _exported_items(project, new, records)
                fresh = [tid for tid in new if tid not in found]
                made = import_ids(project, [records[tid] for tid in fresh]) if fresh else []
            except IngestError as exc:
                raise BackendError(str(exc)) from None
            found.update((tid, pk) for tid, (pk, _) in zip(fresh, made, strict=True))
            LabelStudioTask.objects.bulk_create(
                LabelStudioTask(project=project, task_id=tid, item_id=pk) for tid, pk in found.items())
            known.update(found)
    return [known[tid] for tid in ids]


def model_version(project: Project) -> str:
    """The learner's version as Label Studio shows it."""
    version = LearnerState.objects.filter(project=project).values_list("version", flat=True).first()
    return f"v{version or 0}"


def predictions(project: Project, item_ids: Sequence[int], names: tuple[str, str]) -> list[dict[str, Any]]:
    """One Label Studio prediction per item, in order: the stored learner's class, ``score`` =
    the probability the learner would query the item now, ``model_version``. Reads the learner
    as last saved (no lock, nothing written, no random draw)."""
    state = LearnerState.objects.get(project=project)
    learner = stored_learner(state)
    vectors = dict(Item.objects.filter(pk__in=item_ids).values_list("pk", "vector"))
    X = sp.vstack([decode(vectors[pk], learner.n_features) for pk in item_ids], format="csr")
    block = learner.decide_block(X)
    version = f"v{state.version}"
    from_name, to_name = names
    out = []
    for code, q in zip(block.codes, block.query_probs, strict=True):
        cls = learner.classes[int(code)]
        out.append({"model_version": version, "score": float(q), "result": [
            {"from_name": from_name, "to_name": to_name, "type": "choices",
             "value": {"choices": [str(cls)]}}]})
    return out


def _lock(project: Project) -> None:
    """The learner state row, FIRST (the pipeline's lock order: state, then labels and items)."""
    LearnerState.objects.select_for_update().filter(project=project).values("pk").first()


def _standing(item_id: int) -> Label | None:
    return Label.objects.filter(item_id=item_id, primary=True, undone_at__isnull=True).first()


def _retract(project: Project, label: Label, item: Item) -> None:
    """Take ``label`` back as an undo does (:func:`.actions._retract`'s rule for a label that is
    its item's primary one): uncounted, undone, a rebuild if the learner had it."""
    counts = running_totals.load(project.pk)
    rebuild = consensus.demote(label, item, counts)
    Label.objects.filter(pk=label.pk).update(undone_at=timezone.now())
    if item.n_opinions:
        Item.objects.filter(pk=item.pk).update(n_opinions=item.n_opinions - 1)
    if rebuild:
        LearnerState.objects.filter(project=project).update(needs_rebuild=True)


def _teach(project: Project, item_id: int, value: Any, who: str) -> None:
    """``value`` becomes the item's label, given by ``who`` in Label Studio (module docstring)."""
    user = outside_user(LABEL_STUDIO, who)
    with transaction.atomic():
        _lock(project)
        item = Item.objects.select_for_update().get(pk=item_id)
        item.project = project
        if item.status != Item.Status.PENDING:
            consensus.resolve(item, value, user, method=consensus.RELABEL, drawn=False)
            return
        current = _standing(item.pk)
        if current is not None and current.value == value and current.annotator_id == user.pk:
            return
        if current is not None:
            _retract(project, current, item)
            item.refresh_from_db(fields=["n_opinions"])
        label = Label.objects.create(item=item, project=project, annotator=user, value=value, primary=True,
                                     drawn=False)
        Item.objects.filter(pk=item.pk).update(n_opinions=item.n_opinions + 1)
        outbox.labels_created(project.pk, [label])  # a decided item's: consensus.resolve tells it


def _forget(project: Project, item_id: int) -> bool:
    """The item's label from Label Studio is taken back; False when it has none."""
    with transaction.atomic():
        _lock(project)
        item = Item.objects.select_for_update().get(pk=item_id)
        label = _standing(item.pk)
        name = label.annotator.username if label is not None and label.annotator is not None else ""
        if label is None or not name.startswith(LABEL_STUDIO + "+"):
            return False
        _retract(project, label, item)
        Consensus.objects.filter(item_id=item.pk).delete()
        consensus.sync_reviews(project.pk, [item.pk])
        return True


def annotation_event(project: Project, payload: Any) -> dict[str, Any]:
    """Serve one webhook call (``{"action", "task", "annotation", ...}``): what it did, as
    ``{"action", "item_id" (or "item_ids"), "taught" / "retracted"}``. Other actions are
    answered ``{"ignored": action}``. BackendError for a malformed annotation or a class the
    project does not have (nothing stored)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("action"), str):
        raise BackendError("the body must be a JSON object with an 'action'")
    action = payload["action"]
    if action in TEACHING:
        task, annotation = payload.get("task"), payload.get("annotation")
        if not isinstance(task, dict) or not isinstance(annotation, dict):
            raise BackendError(f"{action} needs 'task' and 'annotation' objects")
        where = f"task {task.get('id')}, annotation {annotation.get('id')}"
        annotation_id = annotation.get("id")
        if isinstance(annotation_id, int):  # stored: checked first (nothing stored on a refusal)
            _ls_id(annotation_id, f"{where}: the annotation's 'id'")
        try:
            value = choice_of(project, annotation.get("result", []), where)
        except IngestError as exc:
            raise BackendError(str(exc)) from None
        (item_id,) = items_for_tasks(project, [task])
        if annotation.get("was_cancelled") or value is None:
            return {"action": action, "item_id": item_id, "taught": False}
        _teach(project, item_id, value, annotator_name(annotation))
        LabelStudioTask.objects.filter(project=project, item_id=item_id).update(
            annotation_id=annotation_id if isinstance(annotation_id, int) else None)
        return {"action": action, "item_id": item_id, "taught": True}
    if action in DELETED:
        # Label Studio sends the deleted annotations' ids only: {"annotations": [{"id": 5}, ...]}
        found = payload.get("annotations") or ([payload["annotation"]] if payload.get("annotation") else [])
        ids = [a.get("id") if isinstance(a, dict) else a for a in found]
        known = [_ls_id(i, "a deleted annotation's 'id'") for i in ids if isinstance(i, int)]
        item_ids = list(LabelStudioTask.objects.filter(project=project, annotation_id__in=known)
            .values_list("item_id", flat=True))
        retracted = [pk for pk in item_ids if _forget(project, pk)]
        LabelStudioTask.objects.filter(project=project, item_id__in=retracted).update(annotation_id=None)
        return {"action": action, "item_ids": retracted, "retracted": bool(retracted)}
    return {"ignored": action}
