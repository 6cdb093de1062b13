"""The audit of auto-decisions (docs/teams.md "Audit of auto-decisions").

While a project's ``audit_rate`` is above 0, every item the model decides alone (status AUTO) is
sent to the reviewers with probability ``audit_rate``: the probability is logged on the item
(``Item.audit_prob``) and a sampled item gets a :class:`~.models.Review` with reason ``audit``.
The draw is a uniform number derived from the project's seed and the item's ``seq`` by a hash,
not from the learner's random generator: the learner's decisions, its query probabilities and
the budget controller are exactly what they would be without the audit (audited items are not
queried and are never taught to the learner), so the query ratio the budget controls is unchanged.

:func:`audit_estimate` turns the reviewers' decisions into the accuracy of the model's own labels
(:func:`learners.evaluation.metrics.audit_accuracy`: inverse-probability weighted, 95% interval).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from annotator.labelling.models import Item, Project, Review
from learners.evaluation.metrics import audit_accuracy
from learners.evaluation.per_class import z_of


def audit_uniform(seed: int, seq: int) -> float:
    """A uniform number in [0, 1) fixed by the project's seed and the item's ``seq`` (64 bits of a
    BLAKE2b hash): independent of the learner's random generator, reproducible."""
    digest = hashlib.blake2b(f"audit:{seed}:{seq}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def sampled(project: Project, seq: int) -> tuple[float | None, bool]:
    """``(audit_prob, sampled)`` for an item the model decided alone: ``(None, False)`` while the
    project does not audit, else the project's rate and the outcome of its draw."""
    rate = float(project.audit_rate or 0.0)
    if rate <= 0.0:
        return None, False
    return rate, audit_uniform(project.rng_seed, seq) < rate


def open_audits(project: Project, samples: list[tuple[int, float | None]]) -> None:
    """Queue the sampled items ``(item id, audit_prob)`` for the reviewers (one insert)."""
    Review.objects.bulk_create([Review(project=project, item_id=pk, reason=Review.Reason.AUDIT,
                                       sample_prob=prob) for pk, prob in samples])


def audit_estimate(project: Project, confidence: float = 0.95, from_seq: int | None = None) -> dict[str, Any]:
    """The accuracy of the model's own labels from the decided audits, JSON-able:
    ``{"value", "low", "high", "n" (audits decided), "covers" (auto items of the population),
    "open" (audits waiting for a reviewer), "classes": {str(predicted class): {"value", "low",
    "high", "n"}}}`` (the first three None without a decided audit; the interval at ``confidence``).

    The population is the auto items decided while the project audited (``audit_prob`` logged),
    up to the first audited item still waiting for a reviewer (its ``seq``): the estimate needs
    every audit of the stream it covers, as the importance-weighted one needs every queried label.
    ``from_seq``: only the items from that ``seq`` on decided while the stop rule held (logged with
    query probability 0, docs/estimates.md "Stop rule"); None: every audited item.
    """
    audits = Review.objects.filter(project=project, reason=Review.Reason.AUDIT)
    if from_seq is not None:
        audits = audits.filter(item__query_prob=0, item__seq__gte=from_seq)
    first_open = (audits.filter(decided_at__isnull=True).order_by("item__seq")
                  .values_list("item__seq", flat=True).first())
    population = Item.objects.filter(project=project, status=Item.Status.AUTO, audit_prob__isnull=False)
    if from_seq is not None:
        population = population.filter(query_prob=0, seq__gte=from_seq)
    decided = audits.filter(decided_at__isnull=False)
    if first_open is not None:
        population = population.filter(seq__lt=first_open)
        decided = decided.filter(item__seq__lt=first_open)
    rows = list(decided.values_list("value", "item__prediction", "sample_prob"))
    z = z_of(confidence)

    def estimate(chosen: list[Any]) -> dict[str, Any]:
        est = audit_accuracy(np.array([value == prediction for value, prediction, _ in chosen], dtype=bool),
                             np.array([p for _, _, p in chosen], dtype=float), z)
        return {"value": est.value, "low": est.low, "high": est.high, "n": est.n}

    per_class = {str(c): estimate([r for r in rows if str(r[1]) == str(c)]) for c in project.classes}
    return {**estimate(rows), "classes": per_class,
            "covers": population.count(), "open": audits.filter(decided_at__isnull=True).count()}
