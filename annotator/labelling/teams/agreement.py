"""Inter-annotator agreement (docs/teams.md): pairwise Cohen's kappa and
Krippendorff's alpha (nominal) over the items that two or more annotators labelled.

An *opinion* is an ``(item id, annotator, label value)`` triple: every label of the project that
was not undone and whose annotator still exists, primary or not, except a reviewer's
adjudication (:mod:`.consensus`) (a second opinion is stored as a
non-primary :class:`~.models.Label`). An annotator gives at most one such label per item
(:func:`.actions.submit_label` refuses a second one). The pure functions take the triples;
:func:`project_opinions` reads them from the database.

Each figure comes with the number of items behind it: kappa of a pair over the items both
labelled, alpha over the items with two or more opinions. A figure is None when it is undefined:
no such item, or every opinion the same class (chance agreement is then 1 and both statistics
are 0 / 0). Cohen's kappa is scikit-learn's (already a dependency); alpha is computed here from
the coincidence matrix of Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability" (the
``krippendorff`` package is GPL-3.0-or-later, which would bind the app's distribution: README).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import Count, QuerySet

from annotator.labelling.models import Label, Project

#: ``(item id, annotator name, label value)``; label values are class values (str or int)
Opinion = tuple[Hashable, str, Hashable]


@dataclass(frozen=True)
class Agreement:
    """An agreement figure in [-1, 1] (None = undefined, see the module docstring) and
    ``n_items``, the number of items it was computed on."""

    value: float | None
    n_items: int


def by_item(opinions: Iterable[Opinion]) -> dict[Hashable, dict[str, Hashable]]:
    """``{item: {annotator: label}}`` of the items with two or more annotators.

    ValueError when an annotator has two opinions on one item (the data model forbids it).
    """
    items: dict[Hashable, dict[str, Hashable]] = defaultdict(dict)
    for item, annotator, label in opinions:
        if annotator in items[item]:
            raise ValueError(f"annotator {annotator!r} has two opinions on item {item!r}")
        items[item][annotator] = label
    return {item: labels for item, labels in items.items() if len(labels) >= 2}


def cohen_kappa(first: list[Hashable], second: list[Hashable]) -> Agreement:
    """Cohen's kappa of two raters' labels on the same items (``first[i]`` and ``second[i]`` are
    the labels of item i). None when there is no item or a single class among all the labels."""
    if len(first) != len(second):
        raise ValueError(f"{len(first)} labels against {len(second)}")
    if len(set(first) | set(second)) < 2:
        return Agreement(None, len(first))
    # imported here: scikit-learn costs every worker ~2 s and ~270 MiB at django.setup()
    # when imported with the module (docs/performance.md)
    from sklearn.metrics import cohen_kappa_score

    codes = _codes([*first, *second])
    kappa = cohen_kappa_score([codes[x] for x in first], [codes[x] for x in second])
    return Agreement(float(kappa), len(first))


def pairwise_kappa(opinions: Iterable[Opinion]) -> dict[tuple[str, str], Agreement]:
    """Cohen's kappa of every pair of annotators ``(a, b)``, ``a < b``, over the items both
    labelled; pairs without a common item are left out."""
    pairs: dict[tuple[str, str], tuple[list[Hashable], list[Hashable]]] = {}
    for labels in by_item(opinions).values():
        for a, b in combinations(sorted(labels), 2):
            first, second = pairs.setdefault((a, b), ([], []))
            first.append(labels[a])
            second.append(labels[b])
    return {pair: cohen_kappa(*pairs[pair]) for pair in sorted(pairs)}


def krippendorff_alpha(opinions: Iterable[Opinion]) -> Agreement:
    """Krippendorff's alpha (nominal) over the items with two or more opinions, any number of
    annotators per item (missing opinions allowed)."""
    items = by_item(opinions)
    values = {label for labels in items.values() for label in labels.values()}
    if len(values) < 2:
        return Agreement(None, len(items))
    codes = _codes(values)
    # coincidences: each unit's m opinions give m (m - 1) ordered pairs of different annotators,
    # each weighing 1 / (m - 1); alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k
    o = np.zeros((len(codes), len(codes)))
    for labels in items.values():
        counts = np.bincount([codes[v] for v in labels.values()], minlength=len(codes)).astype(float)
        o += (np.outer(counts, counts) - np.diag(counts)) / (counts.sum() - 1)
    n_c = o.sum(axis=1)
    observed = o.sum() - np.trace(o)
    expected = n_c.sum() ** 2 - np.sum(n_c ** 2)
    alpha = 1.0 - (n_c.sum() - 1) * observed / expected
    return Agreement(float(alpha), len(items))


def _codes(values: Iterable[Hashable]) -> dict[Hashable, int]:
    """An integer code per distinct label value (nominal: the order means nothing)."""
    return {value: i for i, value in enumerate(sorted(set(values), key=repr))}


def recent_labels(project: Project) -> QuerySet[Label]:
    """The project's newest labels, :data:`~django.conf.settings.DASHBOARD_LABEL_WINDOW` of them
    (more on a tie of creation times), read through the ``(project, created)`` index: the
    dashboard's window, so that a poll reads as many label rows at any length of the stream.
    Undone ones included (callers filter)."""
    labels = Label.objects.filter(project=project)
    window = settings.DASHBOARD_LABEL_WINDOW
    start = labels.order_by("-created").values_list("created", flat=True)[window - 1:window].first()
    return labels if start is None else labels.filter(created__gte=start)


def project_opinions(project: Project, labels: QuerySet[Label] | None = None) -> list[Opinion]:
    """The project's opinions (see the module docstring) on the items with two or more of them,
    in label order (the database leaves out the rest: most items have one label); among
    ``labels`` only (e.g. :func:`recent_labels`; default: every label of the project)."""
    labels = Label.objects.filter(project=project) if labels is None else labels
    standing = labels.filter(undone_at__isnull=True, annotator__isnull=False, kind=Label.Kind.OPINION)
    overlapped = standing.values("item_id").annotate(n=Count("id")).filter(n__gte=2).values("item_id")
    rows = (standing.filter(item_id__in=overlapped).order_by("id")
            .values_list("item_id", "annotator__username", "value"))
    return [(item, annotator, value) for item, annotator, value in rows]


def project_agreement(project: Project, labels: QuerySet[Label] | None = None) -> dict[str, Any]:
    """``{"alpha": {"value", "n_items"}, "pairs": [{"annotators": [a, b], "kappa", "n_items"}]}``
    of the project's opinions (JSON-able, for the API and the dashboard), among ``labels`` as
    :func:`project_opinions`."""
    opinions = project_opinions(project, labels)
    alpha = krippendorff_alpha(opinions)
    return {"alpha": {"value": alpha.value, "n_items": alpha.n_items},
            "pairs": [{"annotators": list(pair), "kappa": k.value, "n_items": k.n_items}
                      for pair, k in pairwise_kappa(opinions).items()]}


#: The usual reading of an agreement coefficient (kappa, alpha): Landis and Koch (1977), "The
#: measurement of observer agreement for categorical data", Biometrics 33(1), table of p. 165:
#: upper bounds of each band, below 0 is "poor".
LANDIS_KOCH = ((0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"),
               (1.0, "almost perfect"))


def agreement_band(value: float | None) -> str:
    """The Landis-Koch reading of an agreement coefficient in [-1, 1] (:data:`LANDIS_KOCH`);
    "" for None (undefined)."""
    if value is None:
        return ""
    if value < 0:
        return "poor"
    return next((name for bound, name in LANDIS_KOCH if value <= bound), "almost perfect")

