"""Every input page is a Django form, through the test client: an error is shown
at its field and the typed values are kept; the browser's bounds come from the same Param the
server validates with; a switch of algorithm leaves no stale error; a save is confirmed (Django
messages); the planner keeps the settings tried (point 5); a missing page is the app's 404 even
with DEBUG on."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

import learners
from annotator.labelling.models import Membership, PlannerRun, Project, ProjectChange
from annotator.labelling.reporting import planner
from annotator.labelling.web.forms import PLANNER_RUNS, PROJECT_SETTINGS, bounds_attrs
from learners.budget import ADVANCE_HORIZON, REPAY_SPAN
from tests.support.app import digits_project, member, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def project():
    return digits_project(0)


@pytest.fixture
def admin_client(client, project):
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    return client


def _field(response, name):
    """The ``.field`` container of the form field ``name`` on the answered page."""
    return parse(response.content).by_id(f"field-{name}")


def _selected(page, name: str) -> str:
    """The value of the selected option of the select ``name``."""
    return page.find("select", name=name).find("option", selected="").attrs["value"]


def _messages(response) -> list[str]:
    return [li.text for li in parse(response.content).find_all("li", class_="message")]


def test_a_bad_parameter_is_refused_at_its_field_with_every_typed_value_kept(admin_client, project):
    response = admin_client.post(f"/projects/{project.pk}/console", {
        "action": "learner", "algorithm": "mpaa-i", "param-delta": "0", "param-C": "2.5",
        "param-query": "random", "param-p": "0.3"})
    assert response.status_code == 400
    delta = _field(response, "param-delta")
    assert "invalid" in delta.classes
    assert "delta must be a number > 0 (got '0')" in delta.find(class_="error").text
    page = parse(response.content)
    typed = {name: page.find("input", name=f"param-{name}").attrs["value"] for name in ("delta", "C", "p")}
    assert typed == {"delta": "0", "C": "2.5", "p": "0.3"}  # what was typed, not the stored values
    assert page.find("option", value="random").attrs.get("selected") is not None
    delta_input = page.find("input", name="param-delta")
    assert delta_input.attrs["aria-invalid"] == "true"
    assert "param-delta_error" in delta_input.attrs["aria-describedby"]
    assert not page.find_all(class_="error", id="param-C_error")  # only the bad field says so
    project.refresh_from_db()
    assert project.params == {"delta": 1.0} and not ProjectChange.objects.exists()


def test_the_browser_bounds_are_the_servers_param(admin_client, project):
    """Every numeric input of every algorithm states the Param's own bounds; an excluded bound is
    marked for bounds.js, whose message is the Param's range text."""
    for algorithm in learners.names_for_task(project.task):
        fields = parse(admin_client.get(f"/projects/{project.pk}/console/params",
                                        {"algorithm": algorithm}, **HX).content)
        for param in learners.get_spec(algorithm).all_params():
            control = fields.find(name=f"param-{param.name}")
            if param.kind in (int, float) and param.choices is None:
                for key, value in bounds_attrs(param).items():
                    assert control.attrs.get(key) == value, (algorithm, param.name, key)
                if param.low is not None:
                    assert float(control.attrs["min"]) == param.low
                    assert ("data-low-open" in control.attrs) == param.low_open
                if param.high is not None:
                    assert float(control.attrs["max"]) == param.high
    delta = learners.get_spec("mpaa-i").params[0]
    assert bounds_attrs(delta) == {"step": "any", "data-range": "a number > 0", "min": "0",
                                   "data-low-open": "0"}
    # the stream settings and the planner: the same definitions
    page = parse(admin_client.get(f"/projects/{project.pk}/console").content)
    for setting in PROJECT_SETTINGS:
        p = setting.param
        if p.kind in (int, float):
            control = page.find("input", name=p.name)
            assert {k: control.attrs.get(k) for k in bounds_attrs(p)} == bounds_attrs(p)
    planner_page = parse(admin_client.get(f"/projects/{project.pk}/planner").content)
    row_delta = planner_page.find("input", name="delta-0")
    for algorithm in learners.names_for_task(project.task):  # one widget serves every row's algorithm
        delta_param = next(p for p in learners.get_spec(algorithm).params if p.name == "delta")
        assert {k: row_delta.attrs.get(k) for k in bounds_attrs(delta_param)} == bounds_attrs(delta_param)
    runs = planner_page.find("input", name="runs")
    assert (runs.attrs["min"], runs.attrs["max"], runs.attrs["step"]) == ("1", "20", "1") == (
        str(PLANNER_RUNS.low), str(PLANNER_RUNS.high), "1")
    # and the server refuses exactly the excluded bound the browser is told to refuse
    response = admin_client.post(f"/projects/{project.pk}/console",
                                 {"action": "settings", "stream_state": "running", "budget_ratio": "0"})
    assert response.status_code == 400 and "budget_ratio must be a number > 0 and <= 1" in \
        _field(response, "budget_ratio").text
    one = {"action": "settings", "stream_state": "running", "budget_ratio": "1"}  # the included bound
    assert admin_client.post(f"/projects/{project.pk}/console", one).status_code == 302


def test_switching_the_algorithm_replaces_every_error_of_the_former_one(admin_client, project):
    bad = parse(admin_client.post(f"/projects/{project.pk}/console", {
        "action": "learner", "algorithm": "mpaa-i", "param-delta": "-3"}).content)
    form = bad.by_id("learner-form")
    swapped = form.find(id="learner-fields")
    algorithm = swapped.find("select", name="algorithm")
    assert algorithm.attrs["hx-target"] == "#learner-fields" and algorithm.attrs["hx-swap"] == "outerHTML"
    assert form.find_all(class_="error") and form.find_all(class_="error") == swapped.find_all(class_="error")
    fragment = parse(admin_client.get(f"/projects/{project.pk}/console/params", {"algorithm": "kmc"},
                                      **HX).content)
    assert fragment.top_elements()[0].attrs["id"] == "learner-fields"  # what the swap puts in its place
    assert not fragment.find_all(class_="error") and fragment.find_all(name="param-max_basis")
    assert _selected(fragment, "algorithm") == "kmc"


def test_an_unknown_algorithm_is_named_at_its_field(admin_client, project):
    response = admin_client.post(f"/projects/{project.pk}/console",
                                 {"action": "learner", "algorithm": "magic"})
    assert response.status_code == 400
    text = _field(response, "algorithm").find(class_="error").text
    assert text.startswith("algorithm must be one of") and "(got magic)" in text


def test_every_console_save_is_confirmed(admin_client, project):
    url = f"/projects/{project.pk}/console"
    learner = {"action": "learner", "algorithm": "mpaa-i", "param-delta": "0.5"}
    saved = admin_client.post(url, learner, follow=True)
    assert _messages(saved) == ["Learner settings saved: params.delta changed. The next decision uses them."]
    again = admin_client.post(url, learner, follow=True)
    assert _messages(again) == ["Learner settings saved (nothing changed)."]
    assert _messages(admin_client.get(url)) == []  # shown once
    stream = admin_client.post(url, {"action": "settings", "stream_state": "paused", "budget_ratio": "0.2"},
                               follow=True)
    assert _messages(stream) == ["Stream settings saved: stream_state, budget_ratio changed."]
    page = parse(stream.content)
    assert page.find("input", name="stream_state", value="paused").attrs.get("checked") is not None
    assert page.find("input", name="budget_ratio").attrs["value"] == "0.2"
    get_user_model().objects.create_user("newbie", password="pw")
    added = admin_client.post(url, {"action": "assign", "username": "newbie", "role": "annotator"},
                              follow=True)
    assert _messages(added) == ["newbie is now annotator of the project."]
    removed = admin_client.post(url, {"action": "unassign", "username": "newbie"}, follow=True)
    assert _messages(removed) == ["newbie removed from the project."]
    ghost = admin_client.post(url, {"action": "assign", "username": "ghost", "role": "annotator"})
    assert ghost.status_code == 400 and "no user named 'ghost'" in _field(ghost, "username").text
    assert parse(ghost.content).by_id("username").attrs["value"] == "ghost"


def test_stream_settings_errors_stay_at_their_field_and_keep_the_typed_values(admin_client, project):
    response = admin_client.post(f"/projects/{project.pk}/console", {
        "action": "settings", "stream_state": "paused", "show_prediction": "on", "budget_ratio": "0.1",
        "budget_per_day": "50", "price_per_label": "0.25"})
    assert response.status_code == 400
    assert "not both" in _field(response, "budget_per_day").find(class_="error").text
    page = parse(response.content)
    assert page.find("input", name="stream_state", value="paused").attrs.get("checked") is not None
    assert page.find("input", name="show_prediction").attrs.get("checked") is not None
    names = ("budget_ratio", "budget_per_day", "price_per_label")
    typed = [page.find("input", name=n).attrs["value"] for n in names]
    assert typed == ["0.1", "50", "0.25"]
    project.refresh_from_db()
    assert project.stream_state == "running" and project.budget_ratio is None


def test_the_budget_field_says_the_early_advance_and_when_it_is_paid_back(admin_client, project):
    # budget mode spends the first horizon's share early (docs/budget.md): the admin reads it
    # where the ratio is set, with the controller's own numbers
    text = _field(admin_client.get(f"/projects/{project.pk}/console"), "budget_ratio").text
    flat = " ".join(text.split())
    assert f"first {ADVANCE_HORIZON:,.0f} items (a third of a shorter stream) may be spent early" in flat
    assert f"paid back by item {ADVANCE_HORIZON * (1 + REPAY_SPAN):,.0f} or the stream's last item" in flat


def test_new_project_errors_at_their_field(client):
    client.force_login(get_user_model().objects.create_user("staff", password="pw", is_staff=True))
    response = client.post("/projects/new", {"name": "fraud", "task": "cost-sensitive", "item_kind": "text",
                                             "classes": "ok, fraud, unsure"})
    assert response.status_code == 400
    text = _field(response, "classes").find(class_="error").text
    assert text == "a cost-sensitive project has exactly two classes (got 3)"  # no algorithm, no stray quote
    page = parse(response.content)
    assert page.find("input", name="name").attrs["value"] == "fraud"
    assert page.find("input", name="classes").attrs["value"] == "ok, fraud, unsure"
    assert _selected(page, "task") == "cost-sensitive"
    bad_options = client.post("/projects/new", {"name": "img", "task": "binary", "item_kind": "image",
                                                "classes": "a,b", "featurizer_name": "pixels",
                                                "featurizer": '{"width": -1}'})
    assert "width must be" in _field(bad_options, "featurizer").text
    made = client.post("/projects/new", {"name": "fraud", "task": "cost-sensitive", "item_kind": "text",
                                         "classes": "ok, fraud"}, follow=True)
    assert _messages(made)[0].startswith("Project 'fraud' created with cspaa")
    assert Project.objects.filter(name="fraud").count() == 1


def test_upload_errors_at_the_field_and_a_confirmation(client):
    project = text_project(["hello there"])
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    url = f"/projects/{project.pk}/upload"
    bad = client.post(url, {"file": SimpleUploadedFile("items.pdf", b"%PDF")})
    assert bad.status_code == 400
    assert "unsupported file type '.pdf'" in _field(bad, "file").find(class_="error").text
    # the formats of the project's kind, not their letters
    formats = "use one of .csv, .tsv, .jsonl, .ndjson, .parquet, .json (each also gzipped"
    assert formats in _field(bad, "file").text
    assert _field(bad, "file").find(class_="help").text.startswith("Accepted here: .csv")  # help kept
    assert parse(bad.content).by_id("upload-file").attrs["aria-invalid"] == "true"
    empty = client.post(url, {"file": SimpleUploadedFile("items.csv", b"")})
    assert "items.csv: the file is empty" in _field(empty, "file").text
    done = client.post(url, {"file": SimpleUploadedFile("items.csv", b"text\nsee you soon\n")}, follow=True)
    assert _messages(done) == ["items.csv uploaded: a worker imports it (progress below)."]


def test_the_planner_keeps_the_settings_tried_with_mean_and_std(admin_client):
    project = digits_project(60)
    admin_client.force_login(member(project, "chief", Membership.Role.ADMIN))
    url = f"/projects/{project.pk}/planner"
    started = admin_client.post(url, {"algorithm-0": "mpaa-i", "delta-0": "0.1", "algorithm-1": "mpaa-i",
                                      "delta-1": "1", "runs": "3"}, follow=True)
    assert _messages(started)[0].startswith("Planner run started: 2 setting(s) x 3 permutation(s)")
    first = planner.run(PlannerRun.objects.get().pk)
    admin_client.post(url, {"algorithm-0": "mpaa", "delta-0": "2", "runs": "2"})
    second = planner.run(PlannerRun.objects.exclude(pk=first.pk).get().pk)
    page = parse(admin_client.get(url).content)
    # the form starts from the last run's settings
    assert _selected(page, "algorithm-0") == "mpaa"
    assert page.find("input", name="delta-0").attrs["value"] == "2"
    assert page.find("input", name="runs").attrs["value"] == "2"
    rows = [[td.text for td in tr.find_all("td")] for tr in page.by_id("planner-tried").find_all("tr")[1:]]
    assert [r[1:4] for r in rows] == [["mpaa", "2.0", "2"], ["mpaa-i", "0.1", "3"], ["mpaa-i", "1.0", "3"]]
    for row, result in zip(rows, second.results + first.results, strict=True):
        assert row[4] == f"{result['mean']['accuracy']:.4f} ± {result['std']['accuracy']:.4f}"
        assert row[6] == f"{result['mean']['query_ratio']:.3f} ± {result['std']['query_ratio']:.3f}"
    # which setting runs in the project now: mpaa-i with delta 1
    assert "mpaa-i" in page.by_id("planner-current").text and "1.0" in page.by_id("planner-current").text
    current = [tr for tr in page.by_id("planner-tried").find_all("tr") if "current" in tr.classes]
    # its badges: "running now" (and "recommended" when the planner ranks it first)
    assert len(current) == 1 and "running now" in [b.text for b in current[0].find_all(class_="badge")]
    assert current[0].find_all("td")[1].text == "mpaa-i" and current[0].find_all("td")[2].text == "1.0"
    panel = parse(admin_client.get(f"{url}/{first.pk}").content)
    assert len(panel.find_all("line", class_="error-bar")) == 2 * len(first.results)  # x and y whiskers
    assert "running now" in [b.text for b in panel.find("tr", class_="current").find_all(class_="badge")]
    used = admin_client.post(f"{url}/{second.pk}/use/0", follow=True)
    assert _messages(used) == ["The project now runs mpaa with delta=2 (from the planner)."]
    after = parse(admin_client.get(url).content)
    current = [tr for tr in after.by_id("planner-tried").find_all("tr") if "current" in tr.classes]
    assert [tr.find_all("td")[1].text for tr in current] == ["mpaa"]


def test_a_running_planner_says_which_setting_it_replays(admin_client, project):
    job = PlannerRun.objects.create(project=project, status="running", runs=3, done=4, total=9,
                                    candidates=[{"algorithm": "mpaa-i", "delta": d} for d in (0.1, 0.5, 2.0)])
    panel = parse(admin_client.get(f"/projects/{project.pk}/planner/{job.pk}").content)
    now = panel.by_id(f"planner-replaying-{job.pk}").text
    assert now == "Replaying now: setting 2 of 3, mpaa-i delta=0.5"  # 4 of 3 + 3 + 3 replays done
    PlannerRun.objects.filter(pk=job.pk).update(status="done", done=9)
    panel = parse(admin_client.get(f"/projects/{project.pk}/planner/{job.pk}").content)
    assert not panel.find_all(class_="replaying")


def test_planner_errors_at_their_row(admin_client, project):
    response = admin_client.post(f"/projects/{project.pk}/planner",
                                 {"algorithm-0": "mpaa-i", "delta-0": "1", "algorithm-1": "mpaa-i",
                                  "delta-1": "0", "runs": "30"})
    assert response.status_code == 400
    page = parse(response.content)
    assert "delta must be a number > 0" in page.by_id("delta-1_error").text
    assert not page.find_all(id="delta-0_error")
    assert "runs must be an integer >= 1 and <= 20" in page.by_id("field-runs").text
    assert page.find("input", name="delta-1").attrs["value"] == "0"
    assert page.find("input", name="runs").attrs["value"] == "30"


@override_settings(DEBUG=True)
def test_a_missing_project_is_the_apps_404_page_even_in_debug(admin_client):
    for path in ("/projects/999999/", "/projects/999999/console", "/no/such/page"):
        response = admin_client.get(path)
        page = parse(response.content)
        assert response.status_code == 404 and page.by_id("error-404") and page.find(class_="error-nav")
        assert b"Using the URLconf" not in response.content and b"technical" not in response.content
    api = admin_client.get("/api/projects/999999/metrics")
    assert api.status_code in (401, 403, 404) and api["Content-Type"].startswith("application/json")
