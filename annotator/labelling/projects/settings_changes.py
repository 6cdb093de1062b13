"""The one service that changes project settings and records each change (who, when, old -> new).

The console, the delta planner's "use this setting", the Django admin and the API's class
descriptions all go through here,
so the history (:class:`.models.ProjectChange`) is the same whichever page made the change:
one entry per field that changed, ``params`` split into one entry per parameter
(``params.delta``, ...) with the complete parameter set (registry defaults filled in) on both
sides. The API token is never written into the history: its rotation (:func:`rotate_api_token`)
is recorded without either token.
"""

from __future__ import annotations

from typing import Any

from annotator.labelling.models import LearnerState, Project, ProjectChange, new_token
from learners.cold_start import check_descriptions

#: Project fields never recorded: set once, or secret.
UNRECORDED = {"id", "created", "api_token"}


def record(project: Project, user: Any, field: str, old: Any, new: Any) -> bool:
    """Add one history entry when ``old != new`` (values JSON-able; ``user`` may be None); True
    when it did."""
    if old == new:
        return False
    ProjectChange.objects.create(project=project, user=user, field=field, old=old, new=new)
    return True


def snapshot(project: Project) -> dict[str, Any]:
    """The recorded settings of ``project`` as ``{field: value}``, ``params`` as ``params.<name>``
    over the complete (validated) parameter set. ValueError when the params are invalid."""
    values: dict[str, Any] = {}
    for field in Project._meta.concrete_fields:
        if field.name in UNRECORDED:
            continue
        if field.name == "params":
            values.update({f"params.{k}": v for k, v in sorted(project.learner_params().items())})
        else:
            values[field.name] = field.value_from_object(project)
    return values


def record_changes(project: Project, user: Any, before: dict[str, Any]) -> list[str]:
    """Record every difference between ``before`` (a :func:`snapshot`) and the project now;
    the fields recorded."""
    after = snapshot(project)
    return [field for field in list(after) + [f for f in before if f not in after]
            if record(project, user, field, before.get(field), after.get(field))]


def change_settings(project: Project, user: Any, **new: Any) -> list[str]:
    """Set ``new`` fields of ``project`` (locked by the caller), validate, save and record; the
    fields that changed (as recorded: ``params.delta``, ...).

    ValueError (naming the problem) when the algorithm, its params or the featurizer config
    would be invalid; nothing is saved then. ``params`` should be validated by the caller
    (the registry's :func:`learners.validate_params`).
    """
    before = snapshot(project)
    for field, value in new.items():
        setattr(project, field, value)
    if {"algorithm", "params", "task", "classes", "featurizer_config", "item_kind",
            "class_descriptions"} & set(new):
        project.check_config()
    project.save(update_fields=list(new))
    return record_changes(project, user, before)


def change_class_descriptions(project: Project, user: Any, descriptions: Any) -> list[str]:
    """Replace a text project's class descriptions (docs/algorithms/cold_start.md; ``project``
    locked by the caller) through :func:`change_settings`; the fields that changed.

    descriptions: class -> text (``{}``: none, the learner starts from zero weights). ValueError
    naming the problem, nothing saved: not a text project, not a mapping, a class that does not
    exist, an empty or overlong text (:func:`learners.cold_start.check_descriptions`). When they
    changed, the learner is marked for a rebuild: the pipeline restarts it from them and teaches it
    the applied labels again (the caller asks a worker, ``send.items_changed``).
    """
    if project.item_kind != Project.Kind.TEXT:
        raise ValueError("class descriptions are for text projects only")
    checked = check_descriptions(descriptions, project.classes)
    changed = change_settings(project, user, class_descriptions=checked)
    if changed:
        LearnerState.objects.filter(project=project).update(needs_rebuild=True)
    return changed


#: the history entry of a token rotation: what was there, what is there now (never a token)
TOKEN_ROTATED = ("api_token", "the previous token (revoked)", "a new token")


def rotate_api_token(project: Project, user: Any) -> str:
    """Give ``project`` (locked by the caller) a new API token and return it (README, "API tokens").
    The old one stops working at once: every API call reads the token from the database, and the
    Label Studio backend token, an HMAC of it, changes with it (docs/label_studio.md: a new
    backend URL). Recorded in the history without either token (:data:`TOKEN_ROTATED`)."""
    project.api_token = new_token()
    project.save(update_fields=["api_token"])
    field, old, new = TOKEN_ROTATED
    record(project, user, field, old, new)
    return project.api_token
