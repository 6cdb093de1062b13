"""Data model (docs/architecture.md): projects, members, items with their decision log, labels,
the learner state and import jobs.

Nothing here is pickled: vectors are raw little-endian arrays (:mod:`.stored_vectors`), learner
states are ``learners.to_bytes`` (``np.savez`` without pickle), the RNG state is JSON.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import connection, models
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone

import learners
from learners.cold_start import check_descriptions, class_prior
from learners.features import make_featurizer
from learners.uploads.records import MAX_FILENAME_LENGTH


def new_token() -> str:
    """A fresh random API token (43 URL-safe characters)."""
    return secrets.token_urlsafe(32)


#: annotators an overlapped item may need (the model's and the console's one bound, docs/teams.md)
OVERLAP_K_MIN, OVERLAP_K_MAX = 2, 5


class ConsensusMethod(models.TextChoices):
    """How the opinions on an overlapped item are aggregated (:mod:`.consensus`)."""

    MAJORITY = "majority"
    DAWID_SKENE = "dawid-skene"


class Project(models.Model):
    """An annotation project: what items look like, the classes, and the learner that drives it.

    ``algorithm`` + ``params`` are read at every pipeline run: a change of ``delta`` (or
    ``p`` / ``query``) applies to the next decision; a change of algorithm or of another
    parameter rebuilds the learner by replaying the applied labels in order.
    """

    class Task(models.TextChoices):
        BINARY = "binary"
        MULTICLASS = "multiclass"
        COST_SENSITIVE = "cost-sensitive"

    class Kind(models.TextChoices):
        IMAGE = "image"
        TEXT = "text"
        URL = "url"
        VECTORS = "vectors"

    class StreamState(models.TextChoices):
        RUNNING = "running"
        PAUSED = "paused"

    name = models.CharField(max_length=200, unique=True)
    task = models.CharField(max_length=20, choices=Task.choices, default=Task.MULTICLASS)
    item_kind = models.CharField(max_length=10, choices=Kind.choices)
    classes = models.JSONField(help_text="class values (str or int), e.g. [\"ham\", \"spam\"]")
    featurizer_config = models.JSONField(help_text="learners.features config; 'kind' = item kind")
    algorithm = models.CharField(max_length=50, default="auto", help_text="a registered learner "
                                 "(learners.registry); new projects: learners.DEFAULT_ALGORITHM")
    params = models.JSONField(default=dict, blank=True, help_text="learner parameters incl. delta")
    rng_seed = models.BigIntegerField(default=0)
    stream_state = models.CharField(max_length=10, choices=StreamState.choices,
                                    default=StreamState.RUNNING)
    look_ahead = models.PositiveIntegerField(
        default=0, help_text="queued items kept ready; 0 = max(4, 2 x active annotators)")
    lease_seconds = models.PositiveIntegerField(default=300)
    api_token = models.CharField(max_length=64, default=new_token, unique=True)
    show_prediction = models.BooleanField(default=False, help_text="show the model's guess to annotators")
    dashboard_for_annotators = models.BooleanField(default=False,
                                                   help_text="annotators may open the dashboard too")
    items_for_annotators = models.BooleanField(default=False, db_default=False,
                                               help_text="annotators may open the item browser too "
                                               "(read only; docs/dataset.md)")
    blind_review = models.BooleanField(default=False, help_text="reviewers do not see who gave each label")
    budget_ratio = models.FloatField(null=True, blank=True, help_text="label budget as a target query "
                                     "ratio in (0, 1]: the budget controller adapts delta (None = off)")
    budget_per_day = models.PositiveIntegerField(null=True, blank=True, help_text="label budget in labels "
                                                 "per day, turned into a target ratio by the arrival rate")
    price_per_label = models.FloatField(null=True, blank=True,
                                        help_text="money per label, for the dashboard's label cost")
    retention_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="drop the raw content and vector of items decided and not "
        "queried this many days ago (their decision log stays); None = keep everything")
    overlap_fraction = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="fraction of the queried items that several annotators label (0 = off, 1 = all); "
        "each queried item is drawn with this probability, logged on the item")
    overlap_k = models.PositiveSmallIntegerField(
        default=OVERLAP_K_MIN,
        validators=[MinValueValidator(OVERLAP_K_MIN), MaxValueValidator(OVERLAP_K_MAX)],
        help_text="distinct annotators an overlapped item needs (2-5)")
    consensus_method = models.CharField(
        max_length=12, choices=ConsensusMethod.choices, default=ConsensusMethod.MAJORITY,
        help_text="how an overlapped item's opinions become the label the learner gets")
    audit_rate = models.FloatField(default=0.0, help_text="fraction in [0, 1] of the items the model "
                                   "decides alone that are sent to reviewers (audit); 0 = no audit")
    honeypot_rate = models.FloatField(default=0.0, help_text="fraction in [0, 0.5] of the items served to "
                                      "annotators that are known-gold items (not told which); 0 = none")
    quality_target = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.5), MaxValueValidator(0.9999)],
        help_text="the share of the model's own labels that must be correct, e.g. 0.97 (None = no target; "
        "docs/estimates.md, \"Stop rule\")")
    quality_confidence = models.FloatField(
        default=0.95, validators=[MinValueValidator(0.5), MaxValueValidator(0.999)],
        help_text="confidence with which the target must hold (the interval's level)")
    stop_at_target = models.BooleanField(
        default=False,
        help_text="stop asking people while the target holds (and resume when it no longer does)")
    asking_stopped = models.BooleanField(
        default=False, help_text="set by the workers: the stop rule holds and the stream asks nobody")
    suspect_threshold = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.5), MaxValueValidator(1.0)],
        help_text="labels whose probability of being wrong is at least this go to the reviewers on their own "
        "(None = only by hand; docs/estimates.md)")
    stopped_from_seq = models.BigIntegerField(
        null=True, blank=True, help_text="set by the workers: the first item of the stop rule's last pause "
        "(None while the rule is off or never held)")
    class_descriptions = models.JSONField(
        default=dict, blank=True, help_text="text projects: a description per class (class -> text) "
        "the learner starts from instead of zero weights (docs/algorithms/cold_start.md); "
        "a class without one is described by its name, once any class has one")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """Validate algorithm, params, classes and featurizer together (used by forms/admin)."""
        try:
            self.check_config()
        except ValueError as exc:
            raise ValidationError(str(exc)) from None

    def check_config(self) -> None:
        """ValueError naming the problem when the learner or featurizer cannot be built."""
        config = self.featurizer_config
        if not isinstance(config, dict) or config.get("kind") != self.item_kind:
            raise ValueError(f"featurizer_config must have kind {self.item_kind!r}")
        featurizer = make_featurizer(self.featurizer_config)
        if self.class_descriptions:
            if self.item_kind != self.Kind.TEXT:
                raise ValueError("class descriptions are for text projects only")
            self.class_descriptions = check_descriptions(self.class_descriptions, self.classes)
        spec = learners.get_spec(self.algorithm)
        if self.task not in spec.tasks:
            raise ValueError(f"algorithm {self.algorithm!r} does not support task {self.task!r} "
                             f"(it supports {', '.join(sorted(spec.tasks))})")
        self.new_learner(featurizer.n_features)

    def featurizer(self) -> Any:
        """The project's featurizer (``learners.features``)."""
        return make_featurizer(self.featurizer_config)

    def new_learner(self, n_features: int) -> learners.Learner:
        """An untrained learner built from ``algorithm`` and ``params`` via the registry; a text
        project with :attr:`class_descriptions` starts it from their prior
        (``learners.cold_start.class_prior``) when the learner has weights to start from."""
        learner = learners.make(self.algorithm, n_features=n_features, classes=self.classes, **self.params)
        if self.class_descriptions and self.item_kind == self.Kind.TEXT and learner.accepts_prior:
            learner.start_from(class_prior(self.featurizer(), learner.classes, self.class_descriptions,
                                           learner.binary))
        return learner

    def parse_class(self, value: Any) -> Any:
        """The class value equal to ``value`` or to its string form; ValueError otherwise.

        Forms and CSV cells give strings, so ``"3"`` matches the int class ``3``; a float that is a
        whole number is that number (``1.0`` is ``1``). A bool is refused (``true`` would equal
        ``1``, ``false`` ``0``), and so is a float that is not a whole number, NaN and infinity
        included: the message names the value as the JSON gave it. The one rule of every class
        value a user gives (uploads, labels, reviews, filters); the JSON API's schema refuses
        the same values first.
        """
        if isinstance(value, bool):
            raise ValueError(f"{json.dumps(value)} is a yes/no value (JSON boolean), not one of the classes "
                             f"{self.classes!r}")
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError(f"{json.dumps(value)} is not a whole number, not one of the classes "
                                 f"{self.classes!r}")
            value = int(value)
        for c in self.classes:
            if value == c or str(value) == str(c):
                return c
        raise ValueError(f"{value!r} is not one of the classes {self.classes!r}")

    def learner_params(self) -> dict[str, Any]:
        """``params`` completed with the registry defaults and validated."""
        return learners.validate_params(self.algorithm, self.params)


class Membership(models.Model):
    """A user's role in a project. Staff users see every project without a membership."""

    class Role(models.TextChoices):
        ANNOTATOR = "annotator"
        ADMIN = "admin"
        REVIEWER = "reviewer"  # decides disagreements and audits in the review queue (docs/teams.md)

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.ANNOTATOR)
    last_waited = models.DateTimeField(null=True, blank=True, help_text="last time the user asked for an "
                                       "item and none waited (the look-ahead counts them as active)")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project"], name="one_membership")]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


def pending_q() -> Q:
    """Items the learner has not decided yet."""
    return Q(status=Item.Status.PENDING)


def pending_exists(project_ref: Any) -> models.Exists:
    """SQL ``EXISTS``: the project (a pk or ``OuterRef``) has an item not decided yet, by the
    ``(project, seq)`` index: the first undecided item has ``seq = learner_state.n_decided``."""
    decided = LearnerState.objects.filter(project=project_ref).values("n_decided")[:1]
    return models.Exists(Item.objects.filter(pending_q(), project=project_ref,
                                              seq__gte=models.Subquery(decided)))


def waiting_q(now: Any) -> Q:
    """Items an annotator can lease at ``now``: queued, or leased with a lease that expired.

    The one definition of "waiting" (the queue, the look-ahead, the project list, the API's and
    the dashboard's counts); a ``Q`` so that the lease query can combine it with other rules.
    """
    return Q(queue_status=Item.Status.QUEUED) | Q(queue_status=Item.Status.LEASED, lease_expires__lt=now)


def live_lease_q(now: Any) -> Q:
    """Items leased to anyone with a lease that has not expired at ``now`` (a live lease)."""
    return Q(queue_status=Item.Status.LEASED, lease_expires__gte=now)


def leased_by_q(user: Any, now: Any) -> Q:
    """Items leased to ``user`` with a live lease at ``now``."""
    return live_lease_q(now) & Q(lease_owner=user)


class ItemQuerySet(models.QuerySet):
    """The item states, one definition each (``now`` defaults to the current time)."""

    def pending(self) -> ItemQuerySet:
        """Not decided yet, see :func:`pending_q`. Items are decided in ``seq`` order, so these are
        the items from ``seq = LearnerState.n_decided`` on; the queries that must stay fast at
        millions of items say so (:func:`pending_exists`, the stream engine)."""
        return self.filter(pending_q())

    def decided(self) -> ItemQuerySet:
        """Decided by the learner (queried or not), whatever happened since."""
        return self.filter(queried__isnull=False)

    def waiting(self, now: Any = None) -> ItemQuerySet:
        """Leasable now, see :func:`waiting_q`."""
        return self.filter(waiting_q(now or timezone.now()))

    def leased_by(self, user: Any, now: Any = None) -> ItemQuerySet:
        """``user``'s live lease (at most one per project), see :func:`leased_by_q`."""
        return self.filter(leased_by_q(user, now or timezone.now()))

    def live_leases(self, now: Any = None) -> ItemQuerySet:
        """Leased to anyone with a lease that has not expired."""
        return self.filter(live_lease_q(now or timezone.now()))


class Item(models.Model):
    """One item of the stream, its featurized vector and the learner's decision about it.

    Raw content: ``text`` (text and URL items), ``data`` + ``filename`` (image file bytes,
    kept in the database so that every worker host sees them and imports stay atomic) or
    ``vector_pairs`` (vectors: ``[[index, value], ...]``, 0-based).
    ``vector``: the featurized row, see :mod:`.stored_vectors`.
    Decision log (None until decided): ``prediction`` (a class value), ``score``,
    ``query_prob`` (q in [0, 1]), ``queried`` (the Bernoulli outcome), ``model_version``
    (learner version the decision used) and ``decided_at``.
    """

    class Status(models.TextChoices):
        PENDING = "pending"  # not decided yet
        AUTO = "auto"  # decided, not queried: done
        QUEUED = "queued"  # decided, queried: waits for an annotator
        LEASED = "leased"  # shown to an annotator until lease_expires
        LABELLED = "labelled"
        SKIPPED = "skipped"

    #: queried items still without a label, leased or not (the IW accuracy prefix stops at the first)
    AWAITING_LABEL = (Status.QUEUED, Status.LEASED)

    objects = ItemQuerySet.as_manager()

    # no index of its own (the (project, seq) constraint's index serves it): each index
    # costs every decision a write
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="items", db_index=False)
    seq = models.BigIntegerField(help_text="arrival order within the project (0-based)")
    text = models.TextField(blank=True, default="")
    data = models.BinaryField(null=True, blank=True)
    filename = models.CharField(max_length=MAX_FILENAME_LENGTH, blank=True, default="")
    vector_pairs = models.JSONField(null=True, blank=True)
    vector = models.BinaryField(null=True, help_text="None once dropped by the retention sweep")
    gold = models.JSONField(null=True, blank=True, help_text="known true class (hidden from annotators)")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    # ``status`` while queued or leased, else NULL, computed by the database. The queue's
    # partial indexes and the queries that walk them (waiting_q, live_lease_q) read this column
    # and not ``status``: deciding an item (pending -> auto, most of a stream) then changes no
    # column any index reads, and PostgreSQL rewrites the row heap-only (HOT: no index entry),
    # when its page has room (the table's fillfactor, migration 0016; docs/operations.md)
    queue_status = models.GeneratedField(
        expression=Case(When(status__in=["queued", "leased"], then=F("status")), default=Value(None)),
        output_field=models.CharField(max_length=10, null=True), db_persist=True)
    lease_owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, db_index=False,
                                    on_delete=models.SET_NULL, related_name="leases")
    lease_expires = models.DateTimeField(null=True, blank=True)
    prediction = models.JSONField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    query_prob = models.FloatField(null=True, blank=True)
    queried = models.BooleanField(null=True, blank=True)
    model_version = models.BigIntegerField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    # db defaults: the PostgreSQL import (COPY) writes the other columns only
    overlap_k = models.PositiveSmallIntegerField(db_default=1, help_text="distinct annotators the item "
                                                 "needs before it leaves the queue (1 = not overlapped)")
    overlap_prob = models.FloatField(null=True, blank=True, help_text="probability with which a queried "
                                     "item was drawn for overlap (the project's fraction then; None = "
                                     "no draw: not queried, or overlap off)")
    n_opinions = models.PositiveSmallIntegerField(db_default=0, help_text="standing opinions (labels not "
                                                  "undone) so far; an overlapped item waits for overlap_k")
    audit_prob = models.FloatField(null=True, blank=True, help_text="auto items decided while the project "
                                   "audited: the probability it was sent to reviewers (None otherwise)")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "seq"], name="one_seq_per_project")]
        # no index on the churning status column but partial ones on queue_status, which
        # hold the queue only (queued and leased items), for the lease query and the waiting counts; pending
        # items are found by seq (decided in seq order, see .stream). ``item_leases``: the leased
        # items alone (a few, one per annotator), for the live leases whatever the queue's length;
        # ``item_lease_owner``: the foreign key's index without the rows that have no owner (all
        # but the leased ones), which every status change would otherwise write to
        indexes = [models.Index(fields=["project", "seq"], name="item_queue",
                                condition=Q(queue_status__in=["queued", "leased"])),
                   models.Index(fields=["project", "lease_expires"], name="item_leases",
                                condition=Q(queue_status="leased")),
                   models.Index(fields=["lease_owner"], name="item_lease_owner",
                                condition=Q(lease_owner__isnull=False)),
                   # the audit's population (.audit): empty for a project that never audited, so
                   # its dashboard does not count the decision log (the decisions of a project
                   # that audits set audit_prob, so they are not heap-only)
                   models.Index(fields=["project", "seq"], name="item_audited",
                                condition=Q(audit_prob__isnull=False))]
        ordering = ["project", "seq"]

    def __str__(self) -> str:
        return f"{self.project_id}#{self.seq}"

    def has_live_lease(self, now: Any) -> bool:
        """This row is leased with a lease that has not expired at ``now`` (:func:`live_lease_q`)."""
        return self.status == Item.Status.LEASED and self.lease_expires >= now

    def raw(self) -> Any:
        """The raw item as the project's featurizer takes it (bytes, str or pairs)."""
        if self.data is not None:
            return bytes(self.data)
        if self.vector_pairs is not None:
            return self.vector_pairs
        return self.text


class Label(models.Model):
    """An annotator's answer for an item.

    ``primary``: the label the learner uses. A second label for an item someone already
    labelled (e.g. after a lease expired) is kept as an extra opinion (``primary=False``)
    and never applied. On an overlapped item no opinion is primary until its consensus
    (:mod:`.consensus`) makes one so. ``kind``: an annotator's opinion, or a reviewer's
    adjudication whose value no annotator gave (not an opinion: agreement leaves it out).
    ``applied_version``: the learner version that includes this label (None = not applied yet);
    labels are applied in ``id`` order. ``drawn``: False for an admin's relabel
    (:mod:`.annotation.relabel`), which the importance-weighted estimates leave out.
    """

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="labels")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="labels")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                  related_name="labels")
    class Kind(models.TextChoices):
        OPINION = "opinion"
        ADJUDICATION = "adjudication"

    value = models.JSONField()
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.OPINION)
    seconds = models.FloatField(null=True, blank=True, help_text="time the annotator spent")
    primary = models.BooleanField(default=True)
    created = models.DateTimeField(auto_now_add=True)
    applied_version = models.BigIntegerField(null=True, blank=True)
    undone_at = models.DateTimeField(null=True, blank=True,
                                     help_text="set when the annotator undid this label (it is then "
                                               "not primary and the learner is rebuilt without it)")
    # docs/dataset.md: the importance-weighted estimates weight a label by 1/q, q the probability
    # with which the query rule drew its item; an admin's relabel (.annotation.relabel) was chosen
    # by a person, with no such probability, so it teaches the learner but never enters them
    drawn = models.BooleanField(db_default=True, default=True, help_text="the label answers a draw "
                                "of the query rule (False: an admin relabelled the item by choice)")

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["project", "applied_version"]),
                   # the look-ahead counts who labelled in the last lease period, on every pipeline run
                   models.Index(fields=["project", "created"]),
                   # the dashboard's fingerprint: the newest undo, not a scan of the labels
                   models.Index(fields=["project", "undone_at"])]

    def __str__(self) -> str:
        return f"{self.item} = {self.value!r}"


class LabelsGiven(models.Model):
    """The number of labels people gave in a project (docs/cost.md, "Label cost"): every
    ``Label`` of kind opinion drawn here, undone and changed ones included. A counter rather than a
    count of the label rows, so that the dashboard reads one row whatever the number of labels;
    :meth:`add` is called in the transaction that stores each such label (labels are never
    deleted, so it never decreases). Migration 0040 counted the labels stored before it."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, primary_key=True,
                                   related_name="labels_given")
    given = models.BigIntegerField(default=0)

    @classmethod
    def add(cls, project_id: int, n: int = 1) -> None:
        """Count ``n`` more labels given in the project (call in the transaction storing them): one
        upsert statement (PostgreSQL and SQLite alike), so a label request costs the same
        statements whether or not it is the project's first."""
        table = connection.ops.quote_name(cls._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table} (project_id, given) VALUES (%s, %s) "
                           f"ON CONFLICT (project_id) DO UPDATE SET given = {table}.given + excluded.given",
                           [project_id, n])

    @classmethod
    def of(cls, project_id: int) -> int:
        """The labels given in the project so far (0 before its first)."""
        return cls.objects.filter(project_id=project_id).values_list("given", flat=True).first() or 0


class Consensus(models.Model):
    """The aggregated label of an overlapped item once its ``overlap_k`` opinions are in, or a
    reviewer's decision on any item (:mod:`.consensus`, docs/teams.md).

    ``status``: ``agreed`` (unanimous), ``majority`` (a value won against a dissent),
    ``disputed`` (no strict majority: under the majority method ``value`` is None and nothing
    reaches the learner until a reviewer decides; under Dawid-Skene ``value`` is its class) or
    ``adjudicated`` (a reviewer decided: final, never recomputed). ``method``: how ``value`` was
    reached (majority, dawid-skene or adjudication). ``decided_by``: the reviewer (None unless
    adjudicated). ``due``: new or withdrawn opinions wait for the pipeline to aggregate them.
    """

    class Status(models.TextChoices):
        AGREED = "agreed"
        MAJORITY = "majority"
        DISPUTED = "disputed"
        ADJUDICATED = "adjudicated"

    item = models.OneToOneField(Item, on_delete=models.CASCADE, primary_key=True, related_name="consensus")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="consensuses")
    value = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DISPUTED)
    method = models.CharField(max_length=12, default="")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="adjudications")
    decided_at = models.DateTimeField(null=True, blank=True)
    due = models.BooleanField(default=True)

    class Meta:
        indexes = [models.Index(fields=["project", "status"]),
                   models.Index(fields=["project"], name="consensus_due", condition=Q(due=True))]

    def __str__(self) -> str:
        return f"{self.item} -> {self.value!r} ({self.status})"


class LearnerState(models.Model):
    """The project's learner and stream RNG, locked (``select_for_update``) by every writer.

    ``version``: number of labels applied (each applied label makes a new model version).
    ``revision``: bumped on every save (decisions also change the state: counters, RNG),
    the key of the per-worker learner cache.
    ``blob``: ``learners.to_bytes(learner)``, written only when the model changed (labels,
    parameters, a rebuild; every save for a learner that is not ``static_between_labels``);
    ``n_seen``: the learner's round counter, written with every save (decisions advance it
    between blobs); None: the blob's own (:mod:`.learner_state`: rewriting a 2 MB
    blob per chunk of decisions was half the decision engine's time).
    ``rng_state``: the numpy bit generator state (big integers stored as strings), advanced
    by every decision. ``untaught``: labels applied without being taught (their item had no
    vector left, :func:`.pipeline.apply_labels`). ``pipeline_error`` / ``pipeline_failed_at``:
    the last failure of the project's pipeline in a worker (:func:`.pipeline.update_project_recorded`),
    written outside the lock after the failed run rolled back. Kept here rather than on
    Project so that the pipeline, which holds this row's lock, never rewrites the Project row
    (it would overwrite an admin's concurrent change of delta).
    """

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="learner_state")
    version = models.BigIntegerField(default=0)
    revision = models.BigIntegerField(default=0)
    blob = models.BinaryField()
    rng_state = models.JSONField()
    needs_rebuild = models.BooleanField(default=False, help_text="an applied label was undone: the "
                                        "pipeline rebuilds the learner from the remaining labels")
    budget_state = models.JSONField(null=True, blank=True,
                                    help_text="the budget controller's state (learners.budget), None = off")
    n_decided = models.BigIntegerField(default=0)
    n_queried = models.BigIntegerField(default=0)
    n_seen = models.BigIntegerField(null=True, blank=True)
    untaught = models.BigIntegerField(default=0, help_text="primary labels the pipeline applied without "
                                      "teaching them: their item's vector was gone (dropped by the "
                                      "retention sweep; docs/operations.md, Retention)")
    pipeline_error = models.CharField(max_length=500, blank=True, default="",
                                      help_text="why the project's last pipeline run failed (blank: "
                                      "it did not); cleared by the next run that succeeds")
    pipeline_failed_at = models.DateTimeField(null=True, blank=True,
                                              help_text="when the project's pipeline last failed")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.project} v{self.version}"


def job_stale_cutoff() -> Any:
    """Jobs (imports, planner runs) whose last beat is older than this are taken for dead
    (``JOB_STALE_SECONDS``; the life cycle is in :mod:`.jobs`)."""
    from datetime import timedelta

    return timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS)


class BackgroundJob:
    """What the pages show of an :class:`ImportJob`, a :class:`PlannerRun` or a :class:`RefitRun`."""

    # the fields of these models that this mixin reads
    status: str
    heartbeat: Any

    @property
    def shown_status(self) -> str:
        """The status, except ``stalled`` for a RUNNING job whose worker stopped beating (never
        "running" for a dead job; the sweep restarts it)."""
        if self.status == "running" and self.heartbeat < job_stale_cutoff():
            return "stalled"
        return self.status


class ImportJob(BackgroundJob, models.Model):
    """An upload being imported by a worker: progress for the page, then the outcome.

    The uploaded file (``size`` bytes) is held in :class:`UploadPart` rows until the import
    finishes (in the database so that a worker on another host can read it, in parts so that
    neither side holds it whole); they are deleted afterwards. ``done`` counts the items
    stored so far: an import is written in chunks, each committed with its count.
    ``known`` and ``ignored_columns`` are what the first pass over the file found
    (:func:`..ingest.survey`), shown on the import's page (:func:`..ingest.import_notes`).
    ``sha256``: the digest of the file's bytes, by which an upload of the same file while an
    earlier import of it runs or has just finished is refused unless confirmed
    (:func:`..ingest.new_job`, docs/uploads.md).
    """

    class Status(models.TextChoices):
        WAITING = "waiting"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="imports")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    filename = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.WAITING)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    known = models.PositiveIntegerField(null=True, blank=True, help_text="items that came with a class (a "
                                        "known class or labels given elsewhere); None: not counted yet")
    ignored_columns = models.JSONField(default=list, blank=True, help_text="the file's columns (or JSON "
                                       "keys) no rule reads, in file order; one more than the shown "
                                       "maximum means there were more")
    sha256 = models.CharField(max_length=64, blank=True, default="", help_text="hex digest of the file")
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)
    #: runs of this job so far (:func:`.jobs.claim`); the last beat of the running one, or when
    #: it was last sent (:func:`.jobs.restart_stale` sends it again when this gets old)
    attempt = models.PositiveIntegerField(default=0)
    heartbeat = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["project", "sha256"], name="import_same_file")]

    def __str__(self) -> str:
        return f"import {self.filename} ({self.status})"


class UploadPart(models.Model):
    """One consecutive piece of an :class:`ImportJob`'s file, ``index`` 0, 1, ... in file order
    (written and read by :mod:`.ingest.upload_file`)."""

    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="parts")
    index = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="upload_part_order")]


class ImportChunk(models.Model):
    """One consecutive run of an :class:`ImportJob`'s records, featurized by whichever worker takes
    it (:mod:`.ingest.fanout`): ``records`` from the file's record ``start`` on (JSON, written by
    the job's first task), then ``vectors`` (the encoded rows, once featurized). Deleted in the
    transaction that inserts its items, so a chunk is inserted at most once; ``(job, index)`` is
    unique, so staging it again never doubles it."""

    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    start = models.PositiveIntegerField(help_text="position of its first record in the file (0-based)")
    count = models.PositiveIntegerField()
    records = models.JSONField()
    vectors = models.BinaryField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="one_chunk_per_index")]


class Skip(models.Model):
    """An annotator passed on an item: it goes back to the queue for the others, not for them."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="skips")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="skips")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "annotator"], name="one_skip_per_annotator")]


class LapsedLease(models.Model):
    """An annotator's lease that passed from them before they labelled the item: it expired and
    another annotator leased the item, or another action took it (an undo leasing the item back to
    its labeller, a reviewer's decision). Their late label is still taken where the item takes one
    (docs/teams.md, "Who may label an item"; :func:`.annotation.actions.offered`)."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="lapsed_leases")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                  related_name="lapsed_leases")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "annotator"],
                                               name="one_lapsed_lease_per_annotator")]

    @staticmethod
    def note(item_id: int, owner_id: int | None) -> None:
        """Record that ``owner_id``'s lease on item ``item_id`` passes from them (the caller holds
        the item's row lock and takes the lease away); nothing for no owner. Noting the same
        lease twice changes nothing."""
        if owner_id is not None:
            LapsedLease.objects.bulk_create([LapsedLease(item_id=item_id, annotator_id=owner_id)],
                                            ignore_conflicts=True)


class ProjectChange(models.Model):
    """One change of a project setting from the console: who, when, which field, old -> new (JSON)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="changes")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    field = models.CharField(max_length=50)
    old = models.JSONField(null=True)
    new = models.JSONField(null=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]


class WorkerHeartbeat(models.Model):
    """The last time a Celery worker (by hostname) took the periodic heartbeat task from a queue."""

    hostname = models.CharField(max_length=255)
    queue = models.CharField(max_length=255, default="")
    last_seen = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["hostname", "queue"], name="one_heartbeat_per_queue")]


class PlannerRun(BackgroundJob, models.Model):
    """A delta-planner replay: up to 4 candidate settings replayed on the project's known labels.

    ``candidates``: ``[{"algorithm": name, "delta": float}, ...]``; ``results``: per candidate the
    mean accuracy, query ratio and F1 (binary) over ``runs`` permutations; ``done`` / ``total``
    count (candidate, permutation) replays for the progress bar.
    """

    Status = ImportJob.Status  # the same life cycle: waiting, running, done, failed (, cancelled)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="planner_runs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)
    candidates = models.JSONField()
    runs = models.PositiveIntegerField(default=5)
    source = models.CharField(max_length=10, default="", help_text="gold or labels: what the replay used")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.WAITING)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    results = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    #: items x candidates x runs: item steps replayed (bounded by settings.PLANNER_MAX_COST)
    cost = models.PositiveBigIntegerField(default=0)
    attempt = models.PositiveIntegerField(default=0)  # as ImportJob's
    heartbeat = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created", "-id"]


class RefitRun(BackgroundJob, models.Model):
    """The batch refit of an export (docs/algorithms/refit.md) fitted by a heavy-queue worker on
    every applied label of the project (:mod:`.reporting.refit_runs`), and its outcome.

    ``done`` / ``total``: steps of the fit (label pages read, then the check's fits). The outcome,
    once DONE: ``model_version`` (the learner state's ``version`` the labels were read at),
    ``fingerprint`` (of the configuration the check's online learner was built from,
    :func:`.refit_runs.config_fingerprint`), ``labels`` (labels fitted), ``chosen`` (``refit`` or
    ``online``), ``figures`` (the check's JSON record, :attr:`learners.refit.RefitResult.check`) and
    ``model`` (the batch fit as the model file stores it, :func:`learners.model_file.refit_bytes`;
    None when no fit was tried). An export uses it while it is current
    (:func:`.refit_runs.current_run`).
    """

    Status = ImportJob.Status  # the same life cycle: waiting, running, done, failed (, cancelled)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="refit_runs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.WAITING)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    finished = models.DateTimeField(null=True, blank=True)
    model_version = models.BigIntegerField(null=True, blank=True)
    fingerprint = models.CharField(max_length=40, blank=True, default="")
    labels = models.PositiveIntegerField(default=0)
    chosen = models.CharField(max_length=10, blank=True, default="")
    figures = models.JSONField(null=True, blank=True)
    model = models.BinaryField(null=True, blank=True)
    attempt = models.PositiveIntegerField(default=0)  # as ImportJob's
    heartbeat = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created", "-id"]


class StreamStats(models.Model):
    """Running aggregates of a project's decision log (:mod:`.running_totals`): what the metrics,
    the dashboard and the model card read instead of the log, so their cost does not grow with
    the stream. Written only under the learner-state lock (pipeline, undo).

    ``gold_n`` / ``gold_correct``: decided items with a gold class / right predictions among them.
    ``labels``, ``labels_correct``, ``seconds_sum``, ``seconds_n``: applied primary labels drawn
    by the query rule, the ones equal to the logged prediction, and their annotator seconds
    (labels with a time); ``undrawn_queried``: the applied primary labels not drawn on queried
    items (the queue's counters, :func:`.queue_counts.awaiting_label`).
    ``label_classes`` / ``auto_classes``: the applied primary labels per class and the items
    decided without a query per predicted class (keys: the class as text).
    ``frontier``: the importance-weighted estimate covers the items with ``seq < frontier``
    (the stream before the first queried item waiting for its label); ``iw_seen``: those
    items less the ones left out (``left_out``), ``iw_m``: labelled queried items among them,
    ``iw_s1`` = sum of c/q and ``iw_s2`` = sum of c(1-q)/q^2 over them (c = label right).
    ``gold_cells``, ``iw_cells``, ``iw_auto``: the per-class forms of the gold counts and of the
    importance-weighted sums (docs/estimates.md); items logged with ``query_prob`` 0 (nobody could
    be asked: held by the label budget's cap, decided while the stop rule held, ...) are outside
    the estimator's stream, and ``unasked`` counts them per cause.
    ``left_out``: the items of the covered prefix the walk left out of the estimator's stream, per
    cause (q = 0, relabelled, in dispute, skipped: docs/estimates.md, "What the estimates cover").
    ``checkpoints``: the curves' points, ``[t, gold_n, gold_correct, queried, iw_seen, iw_m,
    iw_s1, iw_s2, [iw_cells, iw_auto, left_out]]`` after the first ``t`` decided items, kept every ``step``
    decided items (at
    most 120: the step doubles); the gold and query counts are fixed when item ``t`` is decided,
    the importance-weighted sums are set once the frontier passes ``t`` (None before, and again
    after an undo moved the frontier back).
    """

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="stream_stats")
    gold_n = models.BigIntegerField(default=0)
    gold_correct = models.BigIntegerField(default=0)
    labels = models.BigIntegerField(default=0)
    labels_correct = models.BigIntegerField(default=0)
    seconds_sum = models.FloatField(default=0.0)
    seconds_n = models.BigIntegerField(default=0)
    frontier = models.BigIntegerField(default=0)
    iw_seen = models.BigIntegerField(default=0)
    iw_m = models.BigIntegerField(default=0)
    iw_s1 = models.FloatField(default=0.0)
    iw_s2 = models.FloatField(default=0.0)
    step = models.BigIntegerField(default=1)
    checkpoints = models.JSONField(default=list)
    retained_from = models.BigIntegerField(default=0, help_text="the retention sweep dropped the "
                                           "content of the auto items with seq below this")
    label_classes = models.JSONField(default=dict, help_text="applied primary labels per class "
                                     "({str(class): count}), the dashboard's class distribution")
    auto_classes = models.JSONField(default=dict, help_text="items decided and not queried per "
                                    "predicted class ({str(class): count})")
    gold_cells = models.JSONField(default=dict, help_text="decided items with a gold class per (gold, "
                                  "prediction): {json [str(gold), str(prediction)]: count}")
    iw_cells = models.JSONField(default=dict, help_text="labelled queried items of the covered prefix per "
                                "(label, prediction): {json [str(label), str(prediction)]: [m, sum 1/q, "
                                "sum (1-q)/q^2]} (docs/estimates.md)")
    iw_auto = models.JSONField(default=dict, help_text="items of the covered prefix decided without a "
                               "query per predicted class ({str(class): count})")
    unasked = models.JSONField(default=dict, help_text="decided items logged with query probability 0 "
                               "(nobody could be asked; outside the estimates) per cause ({cause: count}, "
                               "engine/decision_log.py UNASKED_CAUSES)")
    # None: aggregates from before the walk counted them, built again from the log on first use
    left_out = models.JSONField(null=True, default=dict, help_text="items of the covered prefix (seq < "
                                "frontier) outside the estimator's stream per cause ({cause: count}, "
                                "engine/decision_log.py LEFT_OUT_CAUSES)")
    undrawn_queried = models.BigIntegerField(default=0, help_text="applied primary labels not drawn by "
                                             "the query rule on queried items (an admin's relabel of a "
                                             "queued or labelled item): items that wait no more, which "
                                             "``labels`` leaves out")


class CostView(models.Model):
    """A project's cost-per-accuracy view (:mod:`.cost_view`, docs/cost.md), computed by a worker
    (``tasks.compute_cost_view``) and stored here, so no request replays the baseline.

    ``fingerprint``: of the inputs it was computed from (:func:`.cost_view.inputs_fingerprint`:
    the project's algorithm, parameters, classes and the number of gold rows); ``view``: the
    result (None: too few usable rows). ``requested`` / ``requested_at``: the fingerprint a
    worker was last asked to compute, and when (a lost message is asked again after a while).
    """

    project = models.OneToOneField(Project, on_delete=models.CASCADE, primary_key=True,
                                   related_name="cost_view")
    fingerprint = models.CharField(max_length=40, blank=True, default="")
    view = models.JSONField(null=True, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    requested = models.CharField(max_length=40, blank=True, default="")
    requested_at = models.DateTimeField(null=True, blank=True)


class Review(models.Model):
    """An item in the review queue (docs/teams.md, "Review"): a disagreement between annotators or
    an audit of an auto-decision. Reviewers lease one at a time like annotators lease items; the
    decision (``value``, ``decided_by``, ``decided_at``) is final.

    ``sample_prob``: for an audit, the probability with which the item was sampled (its
    ``Item.audit_prob``); None for a disagreement.
    """

    class Reason(models.TextChoices):
        DISAGREEMENT = "disagreement"
        AUDIT = "audit"
        SUSPECT = "suspect"  # a label suspected wrong (:mod:`.suspects`, docs/estimates.md)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="reviews")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="reviews")
    reason = models.CharField(max_length=12, choices=Reason.choices)
    sample_prob = models.FloatField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    lease_owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="review_leases")
    lease_expires = models.DateTimeField(null=True, blank=True)
    value = models.JSONField(null=True, blank=True, help_text="the reviewer's class (None while open)")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="reviews_decided")
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "reason"], name="one_review_per_reason")]
        indexes = [models.Index(fields=["project", "decided_at"])]
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.reason} of {self.item}"


class Honeypot(models.Model):
    """A known-gold item served to an annotator as if it were queued (docs/teams.md,
    "Honeypots"); ``label`` is their answer (a non-primary :class:`Label`), None while open."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="honeypots")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="honeypots")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                  related_name="honeypots")
    served = models.DateTimeField(auto_now_add=True)
    label = models.OneToOneField(Label, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="honeypot")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "annotator"],
                                               name="one_honeypot_per_annotator")]


class WebhookEvent(models.TextChoices):
    """The events a project's webhooks can subscribe to (docs/webhooks.md)."""

    LABEL_CREATED = "label.created"
    ITEM_QUERIED = "item.queried"
    MODEL_VERSION = "model.version"
    IMPORT_FINISHED = "import.finished"
    BUDGET_REACHED = "budget.reached"


class WebhookEndpoint(models.Model):
    """A URL a project's events are posted to, signed with its own secret (Standard Webhooks).

    The secret (``whsec_`` + base64 of 24 random bytes) is kept as is, since every delivery
    signs with it; the pages and the API show it once, when it is made or rotated."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    url = models.CharField(max_length=2000)
    events = models.JSONField(default=list, help_text="the WebhookEvent values it receives")
    secret = models.CharField(max_length=100)
    created = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    def __str__(self) -> str:
        return f"webhook {self.pk} of {self.project_id}: {self.url}"


class WebhookDelivery(models.Model):
    """One event for one endpoint: the outbox row written where the event happens, then the
    delivery log (status, attempts, last error) the worker keeps while it posts it."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"  # every attempt failed, or the address became forbidden

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    msg_id = models.CharField(max_length=40, unique=True, help_text="the webhook-id header")
    event = models.CharField(max_length=30, choices=WebhookEvent.choices)
    payload = models.JSONField()
    created = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt = models.DateTimeField(null=True, blank=True, help_text="null once delivered or failed")
    last_status = models.IntegerField(null=True, blank=True, help_text="the last answer's HTTP status")
    last_error = models.CharField(max_length=500, blank=True, default="")
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["project", "next_attempt"], name="webhook_due"),
                   models.Index(fields=["endpoint", "-created"], name="webhook_log")]


class SsoIdentity(models.Model):
    """The OpenID Connect subject a user logs in as (single sign-on, docs/operations.md): users
    are found by ``(issuer, subject)``, never by an e-mail address the provider may let anyone set."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="sso_identity")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="one_sso_identity")]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.issuer} {self.subject}"


class LabelStudioTask(models.Model):
    """A task of a Label Studio project that uses this project as its ML backend, and the item
    that holds it here (created on the first ``/predict`` or annotation that names the task;
    :mod:`.annotation.label_studio`)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="label_studio_tasks")
    task_id = models.BigIntegerField(help_text="the task's id in Label Studio")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    annotation_id = models.BigIntegerField(null=True, blank=True, help_text="the Label Studio annotation "
                                           "whose class is the item's label here (None: none)")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "task_id"], name="one_item_per_ls_task")]

    def __str__(self) -> str:
        return f"{self.project_id}: Label Studio task {self.task_id} -> item {self.item_id}"
