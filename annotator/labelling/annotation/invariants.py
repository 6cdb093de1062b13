"""What the database must satisfy after any sequence of repeated or concurrent requests
(docs/architecture.md, "Repeated and concurrent requests"): the checks a stress test and an
operator run against a project.

* every item's ``n_opinions`` equals its standing opinions (labels of kind opinion, not undone,
  not the answer to a honeypot);
* an item has at most one primary label, and a primary label is never undone;
* the running totals count the applied labels: ``StreamStats.labels`` (and its per-class counts)
  equal the standing primary labels drawn by the query rule with an ``applied_version``, and
  ``StreamStats.undrawn_queried`` the others on queried items (checked once the pipeline ran: a
  label not applied yet is not counted yet);
* at most one standing opinion per annotator and item;
* the labels-given counter (``LabelsGiven``, the label cost) equals the opinions drawn here.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db.models import Count, Exists, OuterRef, Q

from annotator.labelling.models import Honeypot, Item, Label, LabelsGiven, Project, StreamStats


def standing_opinions(project: Project | int) -> Any:
    """The project's labels that count in ``Item.n_opinions``: opinions not undone, honeypot
    answers left out."""
    return (Label.objects.filter(project=project, kind=Label.Kind.OPINION, undone_at__isnull=True)
            .exclude(Exists(Honeypot.objects.filter(label=OuterRef("pk")))))


def violations(project: Project | int) -> list[str]:
    """Every broken invariant of ``project`` (module docstring), one line each; empty when all
    hold. Reads the whole project: for tests, benchmarks and an operator's check, not a request."""
    out: list[str] = []
    counted = Counter(standing_opinions(project).values_list("item_id", flat=True))
    for pk, n in Item.objects.filter(project=project).filter(
            Q(n_opinions__gt=0) | Q(pk__in=list(counted))).values_list("pk", "n_opinions"):
        if counted.get(pk, 0) != n:
            out.append(f"item {pk}: n_opinions = {n} but {counted.get(pk, 0)} standing opinion(s)")
    labels = Label.objects.filter(project=project)
    for row in (labels.filter(primary=True, undone_at__isnull=True).values("item_id")
                .annotate(n=Count("id")).filter(n__gt=1)):
        out.append(f"item {row['item_id']}: {row['n']} primary labels")
    out += [f"label {pk}: primary but undone" for pk in
            labels.filter(primary=True, undone_at__isnull=False).values_list("pk", flat=True)]
    for row in (standing_opinions(project).values("item_id", "annotator_id").annotate(n=Count("id"))
                .filter(n__gt=1)):
        out.append(f"item {row['item_id']}: {row['n']} standing opinions of annotator {row['annotator_id']}")
    given, counted_given = (labels.filter(kind=Label.Kind.OPINION, drawn=True).count(),
                            LabelsGiven.of(project.pk if isinstance(project, Project) else project))
    if counted_given != given:
        out.append(f"labels given counted {counted_given}, the labels say {given}")
    stats = StreamStats.objects.filter(project=project).first()
    # the totals count the labels the query rule drew (running_totals.record_applied): an admin's
    # relabel and a label given in Label Studio (drawn=False) teach the learner but are not counted
    applied = labels.filter(primary=True, undone_at__isnull=True, applied_version__isnull=False, drawn=True)
    if stats is not None:
        n_applied = applied.count()
        if stats.labels != n_applied:
            out.append(f"running totals count {stats.labels} applied labels, the labels say {n_applied}")
        per_class = Counter(str(v) for v in applied.values_list("value", flat=True))
        kept = {k: v for k, v in (stats.label_classes or {}).items() if v}
        if kept != dict(per_class):
            out.append(f"running totals per class {kept} != applied labels per class {dict(per_class)}")
        undrawn = labels.filter(primary=True, undone_at__isnull=True, applied_version__isnull=False,
                                drawn=False, item__queried=True).count()
        if stats.undrawn_queried != undrawn:
            out.append(f"running totals count {stats.undrawn_queried} applied labels not drawn on queried "
                       f"items, the labels say {undrawn}")
    return out
