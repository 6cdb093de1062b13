"""Races of state-changing requests (docs/architecture.md, "Repeated and concurrent requests"):
each scenario sends the same request (or conflicting ones) from several threads at once,
through Django's test client (the whole view, middleware and transactions), on the configured
database (PostgreSQL for the row locks), then checks what the database holds.

Shared by ``tests/annotation/test_races.py`` (asserts 0 on every count) and
``benchmarks/races.py`` (counts over many rounds), hence here and not under ``tests/``.
Each scenario returns an :class:`Outcome`:
the answers' status codes, ``doubled`` (an action applied more than once), ``lost`` (an answered
write missing, or an opinion lost) and :func:`.invariants.violations` after the pipeline ran.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.utils import timezone

from annotator.labelling.annotation.invariants import violations
from annotator.labelling.engine import learner_state
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.ingest import import_records
from annotator.labelling.models import (
    Consensus,
    Item,
    Label,
    Membership,
    PlannerRun,
    Project,
    Review,
    Skip,
)
from annotator.labelling.projects.creation import create_project
from annotator.labelling.projects.demo import digit_records
from harness.chosen_labels import lease_chosen

_names = itertools.count()

HX = {"HTTP_HX_REQUEST": "true"}
#: a planner form of the smallest run (tests/reporting/test_ui_planner.py's format)
PLANNER_FORM = {"algorithm-0": "mpaa-i", "delta-0": "0.1", "runs": "1"}


@dataclass
class Outcome:
    """What one race did: ``statuses`` of its answers; the counts must all be 0."""

    name: str
    statuses: list[int]
    doubled: int = 0
    lost: int = 0
    broken: list[str] = field(default_factory=list)

    @property
    def server_errors(self) -> int:
        return sum(s >= 500 for s in self.statuses)


#: the leased item's id on a queue panel
DATA_ITEM = re.compile(rb'data-item="(\d+)"')


def digits_project(n: int, **fields: Any) -> Project:
    """A multiclass image project of ``n`` demo digits (gold labels kept), mpaa-i by default;
    ``fields`` override the defaults (the tests' projects too: ``tests/support/app.py``)."""
    defaults = dict(name=f"digits {next(_names)}", task="multiclass", item_kind="image",
                    classes=list(range(10)), algorithm="mpaa-i", params={"delta": 1.0},
                    featurizer_config={"kind": "image", "width": 16, "height": 16, "invert": True},
                    rng_seed=7)
    project = create_project(**{**defaults, **fields})
    if n:
        import_records(project, digit_records(n, seed=1))
    return project


def member(project: Project, username: str, role: str = Membership.Role.ANNOTATOR) -> Any:
    """A user with ``role`` in ``project`` (created if needed)."""
    user = get_user_model().objects.filter(username=username).first() or \
        get_user_model().objects.create_user(username, password="race-password-1")
    Membership.objects.get_or_create(user=user, project=project, defaults={"role": role})
    return user


def leased_item_id(response: Any) -> int | None:
    """The item id a queue panel shows, None when nothing waits."""
    found = DATA_ITEM.search(response.content)
    return int(found.group(1)) if found else None


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def race(calls: list[Callable[[], Any]]) -> list[int]:
    """Run ``calls`` (each sends one request) in threads released together; their status codes,
    in order (599 for an exception: it counts as a server error)."""
    barrier = threading.Barrier(len(calls))
    out = [0] * len(calls)

    def run(k: int) -> None:
        try:
            barrier.wait()
            out[k] = calls[k]().status_code
        except Exception:  # counted as a 5xx by the caller
            out[k] = 599
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _settle(project: Project) -> list[str]:
    """Run the pipeline as a worker would (labels applied, consensus settled), then the checks."""
    learner_state._CACHE.clear()
    update_project(project.pk)
    return violations(project)


def _queued(k: int, n: int = 12) -> Project:
    """Demo digits decided with delta 100 (nearly every item waits), overlap ``k`` on all of them."""
    extra = {"overlap_fraction": 1.0, "overlap_k": k} if k > 1 else {}
    project = digits_project(n, params={"delta": 100.0}, lease_seconds=600, look_ahead=100, **extra)
    update_project(project.pk)
    return project


def _label(client: Client, project: Project, item: int, value: Any) -> Any:
    return client.post(f"/projects/{project.pk}/items/{item}/label", {"value": str(value)}, **HX)


def _lease(client: Client, project: Project) -> int:
    item = leased_item_id(client.get(f"/projects/{project.pk}/", **HX))
    assert item is not None, "nothing queued"
    return item


def _opinions(k: int, first: str, other: str, second: Any = 1) -> tuple[Project, int, Any, Any, Client]:
    """A project with overlap ``k``; ``first`` labels the first item 1 through the queue, then
    (``k`` > 1) ``other`` labels it ``second``: ``(project, item id, first, other, first's client)``."""
    project = _queued(k)
    a, b = member(project, first), member(project, other)
    ca = client_for(a)
    item = _lease(ca, project)
    _label(ca, project, item, 1)
    if k > 1:
        cb = client_for(b)
        assert _lease(cb, project) == item
        _label(cb, project, item, second)
    return project, item, a, b, ca


def undo_twice_over(n: int = 3, k: int = 2) -> Outcome:
    """Two annotators label one item (``k`` = 2: both opinions count); one of them sends ``n``
    undos at once. Exactly one may apply; the other opinion stands."""
    project, item, a, b, ca = _opinions(k, "ua", "ub")
    statuses = race([lambda: ca.post(f"/projects/{project.pk}/undo", **HX) for _ in range(n)])
    undone = Label.objects.filter(item_id=item, annotator=a, undone_at__isnull=False).count()
    b_stands = k == 1 or Label.objects.filter(item_id=item, annotator=b, undone_at__isnull=True).exists()
    doubled = max(0, undone - 1) + max(0, statuses.count(200) - 1)
    return Outcome(f"undo x{n} (overlap {k})", statuses, doubled=doubled,
                   lost=(undone == 0) + (not b_stands), broken=_settle(project))


def label_repeated(n: int = 4) -> Outcome:
    """One annotator posts the label of their leased item ``n`` times at once: one label."""
    project = _queued(1)
    a = member(project, "la")
    ca = client_for(a)
    item = _lease(ca, project)
    statuses = race([lambda: _label(ca, project, item, 2) for _ in range(n)])
    stored = Label.objects.filter(item_id=item, annotator=a).count()
    return Outcome(f"label x{n}", statuses, doubled=max(0, stored - 1),
                   lost=int(200 in statuses and stored == 0), broken=_settle(project))


def labels_of_many(n: int = 4, k: int = 2) -> Outcome:
    """``n`` annotators label one waiting overlapped item at once, each of them offered it (their
    leases on it expired in turn: late labels): every answered label is stored (the item takes
    ``k``; the later ones are refused, docs/teams.md "Who may label an item")."""
    project = _queued(k)
    users = [member(project, f"m{j}") for j in range(n)]
    clients = [client_for(u) for u in users]
    item = Item.objects.filter(project=project, status=Item.Status.QUEUED).order_by("seq").first()
    assert item is not None
    for user in users:
        assert lease_chosen(project, item.pk, user)
        Item.objects.filter(pk=item.pk).update(lease_expires=timezone.now() - timedelta(seconds=1))
    statuses = race([lambda c=c: _label(c, project, item.pk, 3) for c in clients])
    stored = {u for u in Label.objects.filter(item=item).values_list("annotator_id", flat=True)}
    answered = {u.pk for u, s in zip(users, statuses, strict=True) if s == 200}
    return Outcome(f"label by {n} annotators (overlap {k})", statuses, lost=len(answered - stored),
                   broken=_settle(project))


def skip_repeated(n: int = 4) -> Outcome:
    """One annotator skips their leased item ``n`` times at once: one skip, the item back in the
    queue; every repeat answers as the first."""
    project = _queued(1)
    a = member(project, "sa")
    ca = client_for(a)
    item = _lease(ca, project)
    statuses = race([lambda: ca.post(f"/projects/{project.pk}/items/{item}/skip", **HX) for _ in range(n)])
    skips = Skip.objects.filter(item_id=item, annotator=a).count()
    back = Item.objects.filter(pk=item).exclude(lease_owner=a).exists()
    return Outcome(f"skip x{n}", statuses, doubled=max(0, skips - 1), lost=(skips == 0) + (not back),
                   broken=_settle(project))


def change_repeated(n: int = 4, k: int = 2, same: bool = True) -> Outcome:
    """An annotator changes one label ``n`` times at once, to one value (``same``: every answer
    200, one new label) or to ``n`` different values (one applies, the others 409)."""
    project, item, a, _, ca = _opinions(k, "ca", "cb")
    label = Label.objects.get(item_id=item, annotator=a)
    values = [5] * n if same else list(range(2, 2 + n))
    url = f"/projects/{project.pk}/labels/{label.pk}/change"
    statuses = race([lambda v=v: ca.post(url, {"value": str(v)}, **HX) for v in values])
    standing = list(Label.objects.filter(item_id=item, annotator=a, undone_at__isnull=True))
    made = Label.objects.filter(item_id=item, annotator=a).count() - 1
    name = f"change x{n} ({'one value' if same else 'different values'}, overlap {k})"
    return Outcome(name, statuses, doubled=max(0, made - 1), lost=int(len(standing) != 1),
                   broken=_settle(project))


def undo_against_change(k: int = 2) -> Outcome:
    """An undo and a change of the same (latest) label at once: one of them applies."""
    project, item, a, _, ca = _opinions(k, "xa", "xb")
    label = Label.objects.get(item_id=item, annotator=a)
    change = f"/projects/{project.pk}/labels/{label.pk}/change"
    statuses = race([lambda: ca.post(f"/projects/{project.pk}/undo", **HX),
                     lambda: ca.post(change, {"value": "4"}, **HX)])
    # either order ends with no standing label of ``a``: undo first (the change is refused), or
    # the change first and the undo takes back its replacement (the latest label)
    standing = Label.objects.filter(item_id=item, annotator=a, undone_at__isnull=True).count()
    return Outcome(f"undo against change (overlap {k})", statuses, doubled=standing,
                   lost=int(statuses[0] != 200), broken=_settle(project))


def decide_repeated(n: int = 3) -> Outcome:
    """Two annotators disagree on an overlapped item; its reviewer sends the decision ``n``
    times at once while a second reviewer sends another: one decision, applied once."""
    project, item, *_ = _opinions(2, "da", "db", second=2)
    update_project(project.pk)  # the consensus: disputed
    r1, r2 = member(project, "r1", Membership.Role.REVIEWER), member(project, "r2", Membership.Role.REVIEWER)
    c1, c2 = client_for(r1), client_for(r2)
    c1.get(f"/projects/{project.pk}/review/", **HX)
    review = Review.objects.get(project=project, item_id=item)
    url = f"/projects/{project.pk}/reviews/{review.pk}/decide"
    statuses = race([lambda: c1.post(url, {"value": "1"}, **HX) for _ in range(n)]
                    + [lambda: c2.post(url, {"value": "2"}, **HX)])
    decisions = Review.objects.filter(item_id=item, decided_at__isnull=False).count()
    adjudicated = Consensus.objects.filter(item_id=item, status=Consensus.Status.ADJUDICATED).count()
    extra = Label.objects.filter(item_id=item, kind=Label.Kind.ADJUDICATION).count()  # none: "1" was given
    return Outcome(f"review decision x{n} + another reviewer", statuses,
                   doubled=max(0, decisions - 1) + extra,
                   lost=int(decisions == 0 or adjudicated != 1), broken=_settle(project))


def planner_starts(n: int = 5) -> Outcome:
    """An admin starts ``n`` planner runs at once: at most ``PLANNER_MAX_QUEUED`` are queued."""
    project = digits_project(20)
    admin = member(project, "pa", Membership.Role.ADMIN)
    clients = [client_for(admin) for _ in range(n)]
    statuses = race([lambda c=c: c.post(f"/projects/{project.pk}/planner", PLANNER_FORM) for c in clients])
    runs = PlannerRun.objects.filter(project=project).count()
    limit = settings.PLANNER_MAX_QUEUED
    return Outcome(f"planner start x{n}", statuses, doubled=max(0, runs - limit),
                   lost=int(runs != min(n, limit) or statuses.count(302) != runs), broken=violations(project))


#: every scenario by name, in the order the test and the benchmark run them
SCENARIOS: dict[str, Callable[[], Outcome]] = {
    "undo-overlap": undo_twice_over, "undo-plain": lambda: undo_twice_over(k=1),
    "label-repeat": label_repeated, "label-many": labels_of_many, "skip-repeat": skip_repeated,
    "change-same": change_repeated, "change-different": lambda: change_repeated(same=False),
    "change-plain": lambda: change_repeated(k=1), "undo-vs-change": undo_against_change,
    "decide": decide_repeated, "planner-start": planner_starts,
}
