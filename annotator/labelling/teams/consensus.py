"""Consensus (docs/teams.md): when an overlapped item's label reaches the learner.

An overlapped item (:mod:`.overlap`) gets no primary label while its opinions come in. Once its
``overlap_k`` opinions are in, :func:`mark_due` creates its :class:`.models.Consensus` row (or
marks it due again) and the pipeline's :func:`settle`, under the learner-state lock, aggregates:

* ``majority`` (the project's ``consensus_method``): the class more than half of the opinions
  give; none (a tie, or three different answers) = ``disputed``: nothing reaches the learner
  until a reviewer decides (:func:`resolve`);
* ``dawid-skene``: Dawid-Skene EM (:func:`learners.aggregation.dawid_skene`) over every
  overlapped item of the project not adjudicated, refitted whenever one becomes due: each item
  takes its most probable class, and an item settled earlier may change class as the
  annotators' estimated reliabilities move. Items without a strict majority are still listed
  as ``disputed`` for the reviewers, with Dawid-Skene's class in the learner meanwhile.

The consensus class becomes the item's primary label: the earliest standing opinion with that
class (a reviewer's class that no annotator gave is stored as a ``Label`` of kind
``adjudication`` by the reviewer). When that replaces a primary label the learner already
learnt, the learner is rebuilt from the final labels (``LearnerState.needs_rebuild``, as an
undo does: a new model version whose state equals a replay of the final labels). The running
totals follow either way: a label replaced leaves them (:func:`.running_totals.record_undo`), and
an item's first label, given after the estimates' frontier passed it in dispute, joins them
(:func:`.running_totals.record_new_primary`, docs/estimates.md).

:func:`resolve` is the reviewer's final decision (any item; status ``adjudicated``, never
recomputed); :func:`disagreements` lists the items waiting for one; :func:`opinions` gives an
item's opinions. Wherever a consensus changes (:func:`settle`, :func:`withdraw`, :func:`resolve`)
the review queue follows in the same transaction (:func:`sync_reviews`): a disputed item has an
open disagreement review, a settled one none. Nothing here sends tasks: the callers ask
:mod:`.send` for ``apply_labels``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from annotator.labelling.engine import running_totals
from annotator.labelling.engine.learner_state import Locked
from annotator.labelling.models import (
    Consensus,
    ConsensusMethod,
    Item,
    Label,
    LapsedLease,
    LearnerState,
    Project,
    Review,
    StreamStats,
)
from annotator.labelling.webhooks import outbox
from learners.aggregation import DawidSkene, dawid_skene

ADJUDICATION = "adjudication"
#: the consensus method of an admin's relabel (:mod:`.annotation.relabel`)
RELABEL = "relabel"


class ContentDroppedError(ValueError):
    """:func:`resolve` of an item whose content the retention sweep dropped: no learner could be
    taught its label (it has no vector left), so nothing is stored (docs/operations.md,
    "Retention")."""


def mark_due(item: Item) -> None:
    """``item``'s opinions are all in (or one more came): the pipeline aggregates them next. An
    adjudicated item stays as the reviewer decided."""
    row, created = Consensus.objects.get_or_create(item_id=item.pk, defaults={"project_id": item.project_id})
    if not created and row.status != Consensus.Status.ADJUDICATED and not row.due:
        Consensus.objects.filter(pk=row.pk).update(due=True)


def is_due(item_id: int) -> bool:
    """The item's opinions wait for :func:`settle`."""
    return Consensus.objects.filter(item_id=item_id, due=True).exists()


def is_adjudicated(item_id: int) -> bool:
    """A reviewer decided the item (:func:`resolve`)."""
    return Consensus.objects.filter(item_id=item_id, status=Consensus.Status.ADJUDICATED).exists()


def opinions(item: Item | int) -> list[Label]:
    """The item's standing opinions (not undone, annotator known, not a reviewer's
    adjudication), in label order, with their annotators."""
    item_id = item if isinstance(item, int) else item.pk
    return list(Label.objects.filter(item_id=item_id, kind=Label.Kind.OPINION, undone_at__isnull=True,
                                     annotator__isnull=False).select_related("annotator").order_by("id"))


def disputed_q(prefix: str = "") -> Q:
    """THE rule of a disputed item, on :class:`.models.Consensus` rows (``prefix``: the path to
    them, e.g. ``"consensus__"`` from items): aggregated (not ``due``) with status ``disputed``.
    A row whose opinions wait for :func:`settle` is not disputed yet, whatever its status says.
    The review queue's disagreements (:func:`sync_reviews`), the dataset's ``disputed``
    provenance and the opinions export all read it."""
    return Q(**{f"{prefix}status": Consensus.Status.DISPUTED, f"{prefix}due": False})


def disagreements(project: Project, include_outvoted: bool = False) -> QuerySet[Consensus]:
    """Items waiting for a reviewer, in arrival order: disputed (:func:`disputed_q`: no strict
    majority), and with ``include_outvoted`` also ``majority`` (a class won against a dissent).
    Adjudicated items and items whose opinions wait for :func:`settle` are never listed."""
    statuses = [Consensus.Status.DISPUTED] + ([Consensus.Status.MAJORITY] if include_outvoted else [])
    return (Consensus.objects.filter(project=project, status__in=statuses, due=False)
            .select_related("item").order_by("item__seq"))


def sync_reviews(project_id: int, item_ids: list[int]) -> None:
    """The review queue follows the consensus of the items ``item_ids`` (called where it changes,
    in the same transaction: :func:`settle`, :func:`withdraw`, :func:`resolve`): a disputed item
    (:func:`disputed_q`) without a disagreement review gets one; an item that is not disputed
    (settled by a later opinion, withdrawn by an undo, decided by a reviewer or an admin) loses
    its open disagreement review, leased or not (a reviewer holding it is told it closed).
    Decided reviews are never touched. So the reviews API, the review page and the exports
    count the same disagreements without anyone opening the review queue."""
    if not item_ids:
        return
    reason = Review.Reason.DISAGREEMENT
    disputed = set(Consensus.objects.filter(disputed_q(), item_id__in=item_ids)
                   .values_list("item_id", flat=True))
    if disputed:
        have = set(Review.objects.filter(item_id__in=disputed, reason=reason)
                   .values_list("item_id", flat=True))
        Review.objects.bulk_create([Review(project_id=project_id, item_id=pk, reason=reason)
                                    for pk in sorted(disputed - have)], ignore_conflicts=True)
    Review.objects.filter(item_id__in=[pk for pk in item_ids if pk not in disputed], reason=reason,
                          decided_at__isnull=True).delete()


def values(project: Project, items: Any = None) -> dict[int, Any]:
    """``{item id: class}`` of the items whose consensus is settled: agreed, majority or
    adjudicated (a disputed item is left out, even with Dawid-Skene's class in the learner);
    among ``items`` (ids, or a query of them) when given."""
    settled = [Consensus.Status.AGREED, Consensus.Status.MAJORITY, Consensus.Status.ADJUDICATED]
    found = Consensus.objects.filter(project=project, status__in=settled, value__isnull=False)
    if items is not None:
        found = found.filter(item_id__in=items)
    return dict(found.values_list("item_id", "value"))


def demote(label: Label, item: Item, counts: StreamStats) -> bool:
    """``label`` stops being ``item``'s primary label (uncounted from ``counts`` as an undo is);
    True if the learner had learnt it (the caller asks for a rebuild). Under the state lock."""
    label.primary = False
    label.save(update_fields=["primary"])
    running_totals.record_undo(counts, label, item.seq, item.prediction)
    return label.applied_version is not None


def _set_final(item: Item, value: Any, counts: StreamStats, by: Any = None, drawn: bool = True) -> bool:
    """Make the earliest standing opinion with class ``value`` the item's primary label (None:
    no primary label); with a reviewer ``by`` and no such opinion, a new adjudication label.
    Not ``drawn`` (an admin's relabel, :mod:`.annotation.relabel`): always ``by``'s own label, marked so.
    True if a label the learner had learnt was replaced (a rebuild is needed)."""
    labels = list(Label.objects.filter(item_id=item.pk, undone_at__isnull=True).order_by("id"))
    current = next((lab for lab in labels if lab.primary), None)
    target, made = None, False
    if value is not None:
        matching = [lab for lab in labels if lab.value == value and lab.annotator_id is not None
                    and lab.drawn == drawn]
        target = next((lab for lab in matching if lab.kind == Label.Kind.OPINION and drawn), None) or next(
            (lab for lab in matching if lab.kind == Label.Kind.ADJUDICATION and lab.annotator_id ==
             getattr(by, "pk", None)), None)
        if target is None and by is not None:
            target, made = Label.objects.create(item_id=item.pk, project_id=item.project_id, annotator=by,
                                                value=value, primary=False, kind=Label.Kind.ADJUDICATION,
                                                drawn=drawn), True
    if current is not None and target is not None and current.pk == target.pk:
        return False
    rebuild = demote(current, item, counts) if current is not None else False
    if target is not None:
        target.primary, target.applied_version = True, None  # applied again, in its new place
        target.save(update_fields=["primary", "applied_version"])
        if current is None:  # an item the estimates left out, in dispute, may join them now
            running_totals.record_new_primary(counts, item.seq, bool(item.queried))
    if made and target is not None:  # a person's label stored: a reviewer's, an admin's, Label Studio's
        outbox.labels_created(item.project_id, [target])
    return rebuild


def withdraw(item: Item, counts: StreamStats) -> bool:
    """An opinion of the overlapped ``item`` is being undone: its consensus (unless adjudicated)
    is removed and its primary label leaves the learner until the opinions are all in again.
    True if the learner had learnt that label. Under the state lock."""
    row = Consensus.objects.filter(item_id=item.pk).first()
    if row is None or row.status == Consensus.Status.ADJUDICATED:
        return False
    row.delete()
    sync_reviews(item.project_id, [item.pk])
    return _set_final(item, None, counts)


def _majority(values: list[Any]) -> tuple[Any, str]:
    """``(class, status)`` of a list of opinions: the strict majority's class or None."""
    tally: dict[str, list[Any]] = {}
    for v in values:
        tally.setdefault(repr(v), []).append(v)
    best = max(tally.values(), key=len) if tally else []
    if len(tally) == 1:
        return best[0], Consensus.Status.AGREED
    if best and len(best) * 2 > len(values):
        return best[0], Consensus.Status.MAJORITY
    return None, Consensus.Status.DISPUTED


def settle(lk: Locked, counts: StreamStats) -> list[Consensus]:
    """Aggregate the project's due consensuses (module docstring) and set their items' primary
    labels; sets ``lk.state.needs_rebuild`` when a label the learner had was overturned. Also
    re-aggregates every consensus when the project's method changed. Returns the consensuses
    written (with their items). Called by the pipeline under the state lock."""
    project = lk.project
    method = project.consensus_method
    open_rows = Consensus.objects.filter(project=project).exclude(status=Consensus.Status.ADJUDICATED)
    if not open_rows.filter(due=True).exists() and not open_rows.exclude(method=method).exists():
        return []
    if method == ConsensusMethod.DAWID_SKENE:
        rows = list(open_rows.select_related("item"))
    else:
        rows = list(open_rows.filter(due=True).select_related("item")) + list(
            open_rows.filter(due=False).exclude(method=method).select_related("item"))
    by_item = {row.item_id: row for row in rows}
    found: dict[int, list[tuple[int, Any]]] = {pk: [] for pk in by_item}
    for item_id, user_id, value in (Label.objects.filter(item_id__in=list(by_item), kind=Label.Kind.OPINION,
                                                         undone_at__isnull=True, annotator__isnull=False)
                                    .order_by("id").values_list("item_id", "annotator_id", "value")):
        found[item_id].append((user_id, value))
    chosen = _dawid_skene(project, found) if method == ConsensusMethod.DAWID_SKENE else {}
    written = []
    rebuild = False
    for row in rows:
        values = [v for _, v in found[row.item_id]]
        value, status = _majority(values)
        if method == ConsensusMethod.DAWID_SKENE:
            value = chosen.get(row.item_id, value)
        if not row.due and row.method == method and row.value == value and row.status == status:
            continue
        rebuild = _set_final(row.item, value, counts) or rebuild
        row.value, row.status, row.method, row.due = value, status, method, False
        row.decided_at = timezone.now()
        row.save(update_fields=["value", "status", "method", "due", "decided_at"])
        written.append(row)
    if rebuild:
        lk.state.needs_rebuild = True
    sync_reviews(project.pk, [row.item_id for row in written])
    return written


def _fit(project: Project, found: dict[int, list[tuple[int, Any]]]
         ) -> tuple[list[int], list[int], DawidSkene] | None:
    """``(item ids, user ids, fit)``: Dawid-Skene over the opinions ``found`` (``{item id:
    [(user id, class)]}``); None without an opinion."""
    code = {repr(c): j for j, c in enumerate(project.classes)}
    items = sorted(found)
    users = sorted({u for ops in found.values() for u, _ in ops})
    row_of, col_of = {pk: i for i, pk in enumerate(items)}, {u: a for a, u in enumerate(users)}
    triples = np.array([(row_of[pk], col_of[u], code[repr(v)]) for pk in items for u, v in found[pk]
                        if repr(v) in code], dtype=np.int64).reshape(-1, 3)
    if not len(triples):
        return None
    return items, users, dawid_skene(triples, len(items), len(users), len(code))


def _dawid_skene(project: Project, found: dict[int, list[tuple[int, Any]]]) -> dict[int, Any]:
    """``{item id: most probable class}`` by Dawid-Skene over the opinions ``found``."""
    fit = _fit(project, found)
    if fit is None:
        return {}
    items, _, result = fit
    return {pk: project.classes[j] for pk, j in zip(items, result.labels(), strict=True) if found[pk]}


def _overlap_fit(project: Project) -> tuple[dict[int, str], tuple[list[int], list[int], DawidSkene] | None]:
    """``(usernames by user id, :func:`_fit`)`` over the project's completed overlapped items."""
    found: dict[int, list[tuple[int, Any]]] = {}
    names: dict[int, str] = {}
    for item_id, user_id, name, value in (
            Label.objects.filter(project=project, kind=Label.Kind.OPINION, undone_at__isnull=True,
                                 annotator__isnull=False, item__consensus__isnull=False)
            .order_by("id").values_list("item_id", "annotator_id", "annotator__username", "value")):
        found.setdefault(item_id, []).append((user_id, value))
        names[user_id] = name
    return names, _fit(project, found)


def reliabilities(project: Project) -> dict[str, float]:
    """Each annotator's estimated accuracy (:meth:`learners.aggregation.DawidSkene.reliability`)
    from a Dawid-Skene fit over the project's completed overlapped items, by username; empty
    without such items. The weight of their votes under the ``dawid-skene`` method."""
    names, fit = _overlap_fit(project)
    if fit is None:
        return {}
    users, result = fit[1], fit[2]
    return {names[u]: float(r) for u, r in zip(users, result.reliability(), strict=True)}


def annotator_confusions(project: Project) -> dict[int, np.ndarray]:
    """Each annotator's Dawid-Skene confusion matrix ``pi[j, l]`` = P(says class l | true class j)
    (k, k, in ``project.classes`` order) by user id, from the same fit as :func:`reliabilities`;
    empty without completed overlapped items."""
    _, fit = _overlap_fit(project)
    if fit is None:
        return {}
    users, result = fit[1], fit[2]
    return {u: result.confusion[a] for a, u in enumerate(users)}


def resolve(item: Item, value: Any, by: Any, method: str = ADJUDICATION, drawn: bool = True) -> Consensus:
    """A reviewer's final decision: ``item``'s label is ``value`` (a class, or its string form),
    decided by ``by`` now (``method`` recorded on the consensus; an admin's relabel passes
    :data:`RELABEL` and ``drawn=False``, see :func:`_set_final`). Any item (overlapped or not,
    even one the model decided alone): the item leaves the queue, its primary label becomes the
    matching opinion (or a new adjudication label by ``by``) and a label the learner had is
    overturned by a rebuild (a new model version). Recorded as status ``adjudicated`` with who
    and when; :func:`settle` never changes it again. ValueError for a value that is not a class.
    :class:`ContentDroppedError` for an item whose content the retention sweep dropped (checked
    under the learner-state lock, which the sweep holds while it drops: :func:`.retention.droppable_q`
    keeps the vector of an item once a label names it). Nothing is stored on either error.
    The caller sends ``apply_labels`` (:func:`.send.labels_changed`)."""
    project = item.project
    cls = project.parse_class(value)
    with transaction.atomic():
        LearnerState.objects.select_for_update().filter(project=project).values("pk").first()
        item = Item.objects.select_for_update().get(pk=item.pk)
        if item.vector is None:
            raise ContentDroppedError(
                f"item #{item.seq} cannot be relabelled: the retention sweep dropped its content "
                "(decided before the project's retention window), so no model can learn from it")
        counts = running_totals.load(project.pk)
        row, _ = Consensus.objects.get_or_create(item_id=item.pk, defaults={"project_id": project.pk})
        if _set_final(item, cls, counts, by=by, drawn=drawn):
            LearnerState.objects.filter(project=project).update(needs_rebuild=True)
        row.value, row.status, row.method, row.due = cls, Consensus.Status.ADJUDICATED, method, False
        row.decided_by, row.decided_at = by, timezone.now()
        row.save()
        sync_reviews(project.pk, [item.pk])
        if item.status in Item.AWAITING_LABEL:
            if item.status == Item.Status.LEASED:  # the holder's late label stays an extra opinion
                LapsedLease.note(item.pk, item.lease_owner_id)
            Item.objects.filter(pk=item.pk).update(status=Item.Status.LABELLED, lease_owner=None,
                                                   lease_expires=None)
        return row
