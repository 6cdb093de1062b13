"""The Django forms of every page that takes input: the console's learner, stream-settings and
member forms, the new-project page, the upload page and the delta planner.

One definition of each rule: a numeric or choice input is a :class:`learners.params.Param`, and
:func:`param_field` builds from it both the server's check (``Param.validate``) and the browser's
(``min`` / ``max`` / ``step`` / ``required``, and ``data-low-open`` / ``data-high-open`` for an
excluded bound, which ``static/labelling/bounds.js`` enforces with the same range text), so the
two never disagree. Errors are attached to their field; a bound form re-renders what was typed.

The console's stream-settings form is generated from :data:`PROJECT_SETTINGS`: to add a project
setting, add the model field to :class:`.models.Project` (and its migration) and one
:class:`ProjectSetting` entry here; the form, its bounds, its saving (through
:func:`.settings_changes.change_settings`, so it is recorded in the history) and the confirmation follow.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model

import learners
from annotator.labelling.models import OVERLAP_K_MAX, OVERLAP_K_MIN, ConsensusMethod, Membership, Project
from annotator.labelling.reporting.planner import MAX_CANDIDATES, candidate_params, check_cost
from annotator.labelling.teams.honeypots import MAX_RATE
from learners.budget import ADVANCE_HORIZON, REPAY_SPAN
from learners.cold_start import MAX_DESCRIPTION, check_descriptions
from learners.features import DEFAULT, KINDS, default_config, featurizer_names, make_featurizer
from learners.params import Param
from learners.uploads import FORMATS, IngestError, accepts, check_start, formats_for
from learners.uploads.input_rules import checked_text, parse_json

#: the learner each task starts with (changed in the console); one definition, in the registry
DEFAULT_ALGORITHM = learners.DEFAULT_ALGORITHM


class ParamField(forms.Field):
    """A form field checked by one :class:`Param` (``validate``); blank is None when not required."""

    def __init__(self, param: Param, **kwargs: Any) -> None:
        self.param = param
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Any:
        if value in self.empty_values or (isinstance(value, str) and not value.strip()):
            return None
        try:
            return self.param.validate(value.strip() if isinstance(value, str) else value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from None

    def validate(self, value: Any) -> None:
        if value is None and self.required:
            raise forms.ValidationError(f"{self.param.name} must be {self.param.range_text()} (got nothing)",
                                        code="required")


def _number(value: float | None) -> str | None:
    return None if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def bounds_attrs(param: Param) -> dict[str, str]:
    """The HTML attributes of a number input that state ``param``'s range to the browser."""
    attrs = {"step": "1" if param.kind is int else "any", "data-range": param.range_text()}
    for side, bound, is_open in (("min", param.low, param.low_open), ("max", param.high, param.high_open)):
        text = _number(bound)
        if text is not None:
            attrs[side] = text
            if is_open:  # HTML has no excluded bound: bounds.js refuses the bound itself
                attrs[f"data-{'low' if side == 'min' else 'high'}-open"] = text
    return attrs


def param_field(param: Param, *, label: str | None = None, required: bool = True,
                initial: Any = None, help_text: str | None = None) -> forms.Field:
    """The form field of ``param``: a checkbox (bool), a select (choices), a number input with the
    param's bounds (int, float) or a text input; validated by ``param.validate``."""
    kwargs: dict[str, Any] = {"label": label or param.name, "initial": initial,
                              "help_text": help_text if help_text is not None else
                              f"{param.help} ({param.range_text()}; default {param.default})"}
    if param.kind is bool:
        return forms.BooleanField(required=False, **kwargs)
    if param.choices is not None:
        return ParamField(param, required=required, widget=forms.Select(
            choices=[(c, c) for c in param.choices]), **kwargs)
    if param.kind in (int, float):
        return ParamField(param, required=required, widget=forms.NumberInput(attrs=bounds_attrs(param)),
                          **kwargs)
    return ParamField(param, required=required, **kwargs)


class TextField(forms.CharField):
    """Text checked by the app's one text rule (:func:`learners.uploads.input_rules.checked_text`:
    no NUL, no lone surrogate, ``limit`` characters at most), named ``what`` in its message."""

    def __init__(self, what: str, limit: int | None = None, **kwargs: Any) -> None:
        self.what, self.limit = what, limit
        super().__init__(**kwargs)
        self.validators = []  # Django's NUL check: checked_text says it with the field's name

    def to_python(self, value: Any) -> str:
        text = (super().to_python(value) or "").strip()
        try:
            return checked_text(text, self.what, self.limit)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None


class AppForm(forms.Form):
    """A form whose fields render through ``labelling/_field.html`` (error at the field)."""

    template_name = "labelling/_form.html"

    def __init__(self, data: Any = None, files: Any = None, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "%s")  # element ids are the field names (the pages' own ids)
        super().__init__(data, files, **kwargs)


def _with_defaults(data: Mapping[str, Any] | None, defaults: Mapping[str, Any]) -> Any:
    """``data`` with ``defaults`` for the keys it does not have (a POST without a parameter keeps
    the parameter's value, as the API-like callers and older forms expect)."""
    if data is None:
        return None
    merged = data.copy() if hasattr(data, "copy") else dict(data)
    for key, value in defaults.items():
        if key not in merged:
            merged[key] = value
    return merged


class LearnerForm(AppForm):
    """The algorithm (one that supports the project's task) and one field per registry parameter
    of the algorithm chosen (posted, else ``algorithm``, else the project's)."""

    algorithm = forms.ChoiceField(label="algorithm")

    def __init__(self, project: Project, data: Any = None, *, algorithm: str | None = None) -> None:
        names = learners.names_for_task(project.task)
        chosen = (data.get("algorithm") if data is not None else None) or algorithm or project.algorithm
        shown = chosen if chosen in names else project.algorithm
        spec = learners.get_spec(shown)
        values = project.learner_params() if shown == project.algorithm else spec.defaults()
        self.spec = spec
        defaults = {f"param-{p.name}": _initial(values[p.name])
                    for p in spec.all_params() if p.kind is not bool}
        super().__init__(_with_defaults(data, defaults), initial={"algorithm": shown})
        algorithms = self.fields["algorithm"]
        assert isinstance(algorithms, forms.ChoiceField)
        algorithms.choices = [(n, n) for n in names]
        algorithms.error_messages["invalid_choice"] = (
            f"algorithm must be one of {', '.join(names)} for a {project.task} project (got %(value)s)")
        self.fields["algorithm"].widget.attrs["title"] = "each algorithm's parameters follow"
        for p in spec.all_params():
            self.fields[f"param-{p.name}"] = param_field(p, initial=values[p.name])

    def params(self) -> dict[str, Any]:
        """The validated parameters (call after ``is_valid``)."""
        return learners.validate_params(self.spec.name, {p.name: self.cleaned_data[f"param-{p.name}"]
                                                         for p in self.spec.all_params()})


def _initial(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class ProjectSetting:
    """One field of the console's stream-settings form: the :class:`.models.Project` field named
    ``param.name``, checked by ``param``; ``blank_is_off``: an empty input stores None;
    ``kept_when_absent``: a POST without the field keeps the project's value (as for a choice)."""

    param: Param
    label: str
    blank_is_off: bool = False
    kept_when_absent: bool = False


#: upper bounds of the console's numbers: a day's labels fit the database's 32-bit column,
#: and no label costs more than a billion (an inf or 1e400 price would break the sums)
MAX_LABELS_PER_DAY = 2_147_483_647
MAX_PRICE_PER_LABEL = 1e9

#: the console's stream-settings form, in page order (module docstring: how to add one)
PROJECT_SETTINGS: tuple[ProjectSetting, ...] = (
    ProjectSetting(Param("stream_state", Project.StreamState.RUNNING, str,
                         "paused: no item is decided or served until it runs again",
                         choices=tuple(Project.StreamState.values)), "stream"),
    ProjectSetting(Param("show_prediction", False, bool, "annotators see the model's guess"),
                   "show the model's guess to annotators"),
    ProjectSetting(Param("dashboard_for_annotators", False, bool, "annotators may open the dashboard"),
                   "annotators may see the dashboard"),
    ProjectSetting(Param("items_for_annotators", False, bool,
                         "annotators may open the item browser (not while the project serves honeypots)"),
                   "annotators may browse the items"),
    ProjectSetting(Param("budget_ratio", None, float,
                         "blank = off; e.g. 0.1: the budget controller adapts delta so that about 10% of "
                         "the items are queried, counted from the first item: the budget's share of the "
                         f"first {ADVANCE_HORIZON:,.0f} items (a third of a shorter stream) may be spent "
                         f"early and is paid back by item {ADVANCE_HORIZON * (1 + REPAY_SPAN):,.0f} or "
                         "the stream's last item (docs/budget.md)",
                         low=0.0, high=1.0, low_open=True),
                   "label budget: target query ratio", blank_is_off=True),
    ProjectSetting(Param("budget_per_day", None, int,
                         "blank = off; turned into a ratio by the items that arrived in the last 24 hours",
                         low=1, high=MAX_LABELS_PER_DAY), "or labels per day", blank_is_off=True),
    ProjectSetting(Param("price_per_label", None, float,
                         "for the label cost on the dashboard (blank = not shown)",
                         low=0.0, high=MAX_PRICE_PER_LABEL), "price per label", blank_is_off=True),
    ProjectSetting(Param("audit_rate", 0.0, float,
                         "0 = off; e.g. 0.05: 5% of the items the model decides alone go to the reviewers, "
                         "for the audit estimate on the dashboard (docs/teams.md)", low=0.0, high=1.0),
                   "audit rate of auto-decisions", kept_when_absent=True),
    ProjectSetting(Param("blind_review", False, bool,
                         "reviewers see each label without the name of who gave it (docs/teams.md)"),
                   "blind review: hide annotator names from reviewers"),
    ProjectSetting(Param("honeypot_rate", 0.0, float,
                         "0 = off; e.g. 0.05: 5% of the items served to annotators are known-gold items, "
                         "not told which (annotator quality on the dashboard)", low=0.0, high=MAX_RATE),
                   "honeypot rate", kept_when_absent=True),
    ProjectSetting(Param("overlap_fraction", 0.0, float,
                         "0 = off; e.g. 0.2: each queried item is drawn with probability 0.2 to be "
                         "labelled by several annotators (docs/teams.md)", low=0.0, high=1.0),
                   "overlap: fraction of the queried items", kept_when_absent=True),
    ProjectSetting(Param("overlap_k", OVERLAP_K_MIN, int, "distinct annotators an overlapped item needs",
                         low=OVERLAP_K_MIN, high=OVERLAP_K_MAX), "overlap: annotators per item",
                   kept_when_absent=True),
    ProjectSetting(Param("consensus_method", ConsensusMethod.MAJORITY, str,
                         "how an overlapped item's opinions become the label the learner gets",
                         choices=tuple(ConsensusMethod.values)), "consensus"),
    ProjectSetting(Param("quality_target", None, float,
                         "blank = none; e.g. 0.97: the dashboard says when the evidence shows that at least "
                         "97% of the model's own labels are correct (docs/estimates.md)",
                         low=0.5, high=0.9999),
                   "quality target of the model's labels", blank_is_off=True),
    ProjectSetting(Param("quality_confidence", 0.95, float, "the confidence with which the target must hold",
                         low=0.5, high=0.999), "confidence of the target", kept_when_absent=True),
    ProjectSetting(Param("suspect_threshold", None, float,
                         "blank = by hand only; e.g. 0.9: every label whose probability of being wrong is "
                         "at least 0.9 goes to the review queue on its own (docs/estimates.md)",
                         low=0.5, high=1.0),
                   "send suspected label errors to review above", blank_is_off=True),
    ProjectSetting(Param("stop_at_target", False, bool, "stop asking people while the target holds"),
                   "stop asking people while the quality target holds (resume when it no longer does)"),
)


class StreamSettingsForm(AppForm):
    """The fields of :data:`PROJECT_SETTINGS`, initially the project's values."""

    def __init__(self, project: Project, data: Any = None) -> None:
        defaults = {s.param.name: getattr(project, s.param.name) for s in PROJECT_SETTINGS
                    if s.param.choices is not None or s.kept_when_absent}  # e.g. a POST without the radio
        super().__init__(_with_defaults(data, defaults))
        for s in PROJECT_SETTINGS:
            p, value = s.param, getattr(project, s.param.name)
            field = param_field(p, label=s.label, required=not s.blank_is_off, initial=value,
                                help_text="" if p.kind is bool else p.help)  # a checkbox: its label says it
            if p.choices is not None:
                field.widget = forms.RadioSelect(choices=[(c, c) for c in p.choices])
            self.fields[p.name] = field

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if data.get("budget_ratio") is not None and data.get("budget_per_day") is not None:
            self.add_error("budget_per_day", "set the budget as a query ratio or as labels per day, not both")
        return data


class MemberForm(AppForm):
    """Assign a user (by name) a role, or (``unassign``) remove them."""

    username = TextField("username", label="username")
    role = forms.ChoiceField(label="role", choices=Membership.Role.choices, initial=Membership.Role.ANNOTATOR,
                             required=False)

    def clean_username(self) -> Any:
        name = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise forms.ValidationError(f"no user named {name!r}")
        return user

    def clean_role(self) -> str:
        return self.cleaned_data.get("role") or Membership.Role.ANNOTATOR


def featurizer_choices(speed: Any) -> list[Any]:
    """The featurizer select's option groups (one per item kind), each option with its measured
    speed (``speed(name)`` -> text) and the kind's default marked."""
    return [("", "the item type's default")] + [
        (f"{kind} items", [(name, f"{name} · {speed(name)}" + (" · default" if name == DEFAULT[kind] else ""))
                           for name in featurizer_names(kind)]) for kind in KINDS]


def featurizer_defaults() -> list[tuple[str, str, str]]:
    """``(kind, name, default options as the JSON the options field takes)`` of every featurizer."""
    return [(kind, name, shown_options(kind, name)) for kind in KINDS for name in featurizer_names(kind)]


def shown_options(kind: str, name: str | None = None) -> str:
    """The default options of featurizer ``name`` of ``kind`` (None: the kind's default) as the
    JSON the options field takes (without ``kind``, ``name`` and ``version``)."""
    config = default_config(kind, name)
    return json.dumps({o: v for o, v in config.items() if o not in ("kind", "name", "version")})


def parse_descriptions(text: str, classes: Sequence[Any]) -> dict[str, str]:
    """Class descriptions typed one per line as ``class: description`` (blank lines ignored),
    checked by :func:`learners.cold_start.check_descriptions`; ValidationError naming the line
    or the problem (a class that does not exist, an empty description)."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, description = line.partition(":")
        if not sep:
            raise forms.ValidationError(f"line {number}: write 'class: description' (no ':' found)")
        if name.strip() in found:
            raise forms.ValidationError(f"line {number}: class {name.strip()!r} is described twice")
        found[name.strip()] = description
    try:
        return check_descriptions(found, classes)
    except ValueError as exc:
        raise forms.ValidationError(str(exc)) from None


def descriptions_text(descriptions: Mapping[str, str]) -> str:
    """The textarea form of stored descriptions (inverse of :func:`parse_descriptions`)."""
    return "\n".join(f"{name}: {text}" for name, text in descriptions.items())


def descriptions_field(initial: str = "") -> forms.Field:
    """The class-descriptions textarea of the new-project form and the console."""
    return TextField("the class descriptions", required=False, initial=initial, label="class descriptions",
                     widget=forms.Textarea(attrs={
                         "rows": 4, "cols": 60, "placeholder": "spam: an advert or a scam asking to reply"}),
                     help_text="text projects, optional: one line per class, 'class: description' "
                               f"(at most {MAX_DESCRIPTION} characters each); the learner starts from "
                               "what they say instead of from nothing (a class left out is described "
                               "by its name); docs/algorithms/cold_start.md")


class ClassDescriptionsForm(AppForm):
    """The console's class descriptions of a text project (blank: none, start from zero weights)."""

    def __init__(self, project: Project, data: Any = None) -> None:
        super().__init__(data)
        self.project = project
        self.fields["class_descriptions"] = descriptions_field(descriptions_text(project.class_descriptions))

    def clean_class_descriptions(self) -> dict[str, str]:
        # a project that is not of text: refused on saving (settings_changes.change_class_descriptions)
        return parse_descriptions(self.cleaned_data["class_descriptions"], self.project.classes)


class NewProjectForm(AppForm):
    """A project's name, task, item type, classes and featurizer (with options); the algorithm
    starts as :data:`DEFAULT_ALGORITHM` of the task."""

    name = TextField("the project name", Project._meta.get_field("name").max_length, label="name")
    task = forms.ChoiceField(label="task", choices=[(t, t) for t in DEFAULT_ALGORITHM])
    item_kind = forms.ChoiceField(label="item type", choices=[(k, k) for k in KINDS], initial="text")
    classes = TextField("the classes", label="classes",
                        widget=forms.TextInput(attrs={"placeholder": "ham, spam"}),
                              help_text="comma-separated; the order sets the shortcut keys (1, 2, ...); "
                                        "cost-sensitive: the rare, costly class second")
    featurizer_name = forms.ChoiceField(label="featurizer", required=False,
                                        help_text="speeds measured by benchmarks/featurizers.py on this kind "
                                                  "of machine (accuracy per featurizer: "
                                                  "benchmarks/FEATURIZERS.md)")
    featurizer = forms.CharField(label="featurizer options", required=False, widget=forms.TextInput(
        attrs={"size": 60, "placeholder": shown_options("text"),
               # static/labelling/new_project.js shows the chosen item type's default options here
               "data-placeholders": json.dumps({k: shown_options(k) for k in KINDS})}),
        help_text="optional JSON object; blank = the featurizer's defaults (listed below). Vectors items: "
                  "{\"n_features\": N} sets their dimension, N the largest feature index of your files "
                  "(fixed once the project exists; docs/uploads.md)")
    class_descriptions = descriptions_field()

    def __init__(self, data: Any = None, *, speed: Any = str) -> None:
        super().__init__(data)
        featurizers = self.fields["featurizer_name"]
        assert isinstance(featurizers, forms.ChoiceField)
        featurizers.choices = featurizer_choices(speed)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Project.objects.filter(name=name).exists():
            raise forms.ValidationError(f"a project named {name!r} exists already")
        return name

    def clean_classes(self) -> list[Any]:
        values = [v.strip() for v in self.cleaned_data["classes"].split(",") if v.strip()]
        if len(values) < 2 or len(set(values)) != len(values):
            raise forms.ValidationError("give at least two distinct values, comma-separated")
        if all(v.lstrip("-").isdigit() for v in values):
            return [int(v) for v in values]
        return values

    def clean_featurizer(self) -> dict[str, Any]:
        text = self.cleaned_data["featurizer"].strip()
        if not text:
            return {}
        try:
            options = parse_json(text, "featurizer options must be a JSON object")
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        if not isinstance(options, dict) or "kind" in options or "name" in options:
            raise forms.ValidationError("featurizer options must be a JSON object of options (without "
                                        "'kind' or 'name': choose the featurizer in its list)")
        return options

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        task, kind, classes = data.get("task"), data.get("item_kind"), data.get("classes")
        if task in ("binary", "cost-sensitive") and classes is not None and len(classes) != 2:
            self.add_error("classes", f"a {task} project has exactly two classes (got {len(classes)})")
        described = data.get("class_descriptions")
        if described and kind is not None and kind != Project.Kind.TEXT:
            self.add_error("class_descriptions", "class descriptions are for text projects only")
        elif described and classes is not None:
            try:
                data["class_descriptions"] = parse_descriptions(described, classes)
            except forms.ValidationError as exc:
                self.add_error("class_descriptions", exc)
        else:
            data["class_descriptions"] = {}
        if kind is None:
            return data
        name = data.get("featurizer_name") or DEFAULT[kind]
        if name not in featurizer_names(kind):
            self.add_error("featurizer_name", f"{name!r} is not one for {kind} items; valid: "
                                              f"{', '.join(featurizer_names(kind))}")
        elif "featurizer" in data:
            config = {"kind": kind, "name": name, **data["featurizer"]}
            try:
                make_featurizer(config)
            except (ValueError, TypeError) as exc:
                self.add_error("featurizer", str(exc))
            else:
                data["featurizer_config"] = config
        return data


class UploadForm(AppForm):
    """One file of an accepted format (``learners.uploads``), not empty, within the upload bound;
    with a ``project``, a format its item kind takes whose first records parse
    (:func:`learners.uploads.check_start`: a wrong header or kind is refused here, before the file
    is stored and a worker imports it). ``again``: import it even when the same file was imported
    recently (:func:`..ingest.new_job`; the page shows the box only once that refused it)."""

    file = forms.FileField(label="file", allow_empty_file=True)
    again = forms.BooleanField(label="import again", required=False,
                               help_text="import this file although the same file was imported in the last "
                                         "minutes: its items are stored twice (docs/uploads.md)")

    def __init__(self, *args: Any, project: Project | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project

    def clean_file(self) -> Any:
        f = self.cleaned_data["file"]
        name, size = f.name or "", f.size or 0
        if size > settings.MAX_UPLOAD_BYTES:
            raise forms.ValidationError(f"{name}: the file is larger than {settings.MAX_UPLOAD_BYTES} bytes")
        if size == 0:
            raise forms.ValidationError(f"{name}: the file is empty")
        if not accepts(name):
            suffix = Path(name).suffix.lower() or "(none)"
            raise forms.ValidationError(f"{name}: unsupported file type {suffix!r}; use one of "
                                        f"{formats_for(self.project.item_kind) if self.project else FORMATS}")
        if self.project is not None:
            try:
                check_start(self.project, name, f.file)
            except IngestError as exc:
                raise forms.ValidationError(f"{name}: {exc}") from None
        return f


#: permutations of a planner run (the planner form's ``runs``)
PLANNER_RUNS = Param("runs", 5, int, "random orders each setting is replayed in (mean and spread)",
                     low=1, high=20)


class PlannerForm(AppForm):
    """Up to :data:`MAX_CANDIDATES` rows ``algorithm-i`` / ``delta-i`` (blank rows ignored) and the
    number of permutations; each candidate checked as the run will build it."""

    def __init__(self, project: Project, data: Any = None, *, rows: Sequence[tuple[str, float]] = ()) -> None:
        super().__init__(_with_defaults(data, {"runs": PLANNER_RUNS.default}))
        self.project = project
        names = learners.names_for_task(project.task)
        delta = next(p for p in learners.get_spec(project.algorithm).params if p.name == "delta")
        for i in range(MAX_CANDIDATES):
            algorithm, value = rows[i] if i < len(rows) else ("", None)
            self.fields[f"algorithm-{i}"] = forms.CharField(  # checked with the delta, by candidate_params
                label=f"algorithm {i + 1}", required=False, initial=algorithm, widget=forms.Select(
                    choices=[("", "(none)")] + [(n, n) for n in names],
                    attrs={"aria-label": f"algorithm {i + 1}"}))
            self.fields[f"delta-{i}"] = forms.CharField(
                label=f"delta {i + 1}", required=False, initial=_initial(value) if value is not None else "",
                widget=forms.NumberInput(attrs={**bounds_attrs(delta), "aria-label": f"delta {i + 1}"}))
        self.fields["runs"] = param_field(PLANNER_RUNS, label="permutations", initial=PLANNER_RUNS.default,
                                          help_text=PLANNER_RUNS.help)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        candidates = []
        for i in range(MAX_CANDIDATES):
            algorithm, delta = data.get(f"algorithm-{i}", ""), (data.get(f"delta-{i}") or "").strip()
            if not algorithm and not delta:
                continue
            if not algorithm:
                self.add_error(f"algorithm-{i}", "choose the algorithm of this delta")
                continue
            try:
                params = candidate_params(self.project, algorithm, delta)
            except ValueError as exc:
                self.add_error(f"delta-{i}" if str(exc).startswith("delta") else f"algorithm-{i}", str(exc))
                continue
            candidates.append({"algorithm": algorithm, "delta": params["delta"]})
        if not candidates and not self.errors:
            raise forms.ValidationError("give at least one candidate (algorithm and delta)")
        if candidates and data.get("runs") is not None and not self.errors:
            try:
                data["cost"] = check_cost(self.project, len(candidates), data["runs"])
            except ValueError as exc:
                self.add_error("runs", str(exc))
        data["candidates"] = candidates
        return data

    def rows(self) -> list[tuple[Any, Any]]:
        """The (algorithm, delta) bound fields of each row, for the table."""
        return [(self[f"algorithm-{i}"], self[f"delta-{i}"]) for i in range(MAX_CANDIDATES)]
