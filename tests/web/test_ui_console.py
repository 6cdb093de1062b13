"""Admin console, new-project page and dashboard through the Django test client."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import (
    Label,
    LearnerState,
    Membership,
    PlannerRun,
    Project,
    ProjectChange,
    WorkerHeartbeat,
)
from annotator.labelling.worker.tasks import heartbeat
from learners import features
from tests.support.app import digits_project, leased_item_id, member
from tests.support.html import error_text, parse

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def project():
    p = digits_project(30, params={"delta": 100.0})
    update_project(p.pk)
    return p


def _admin(client, project):
    user = member(project, "boss", Membership.Role.ADMIN)
    client.force_login(user)
    return user


def test_console_form_is_generated_from_the_registry(client, project):
    _admin(client, project)
    page = client.get(f"/projects/{project.pk}/console").content.decode()
    options = {o.attrs["value"] for o in parse(page).find("select", id="algorithm").find_all("option")}
    assert {"mpaa-i", "kmc", "oasis", "md-ada"} <= options  # multiclass learners only
    assert "paa-i" not in options  # binary-only
    names = {e.attrs.get("name") for e in parse(page).find_all(has="name")}
    assert {"param-delta", "param-C"} <= names and "aggressiveness" in page
    assert project.api_token in page and "curl -X POST" in page
    fields = client.get(f"/projects/{project.pk}/console/params", {"algorithm": "kmc"}, **HX).content.decode()
    controls = parse(fields)
    constraint = controls.find("select", name="param-constraint")
    assert "simplex" in {o.attrs.get("value") for o in constraint.find_all("option")}
    controls.find(name="param-max_basis")
    assert client.get(f"/projects/{project.pk}/console/params", {"algorithm": "nope"}).status_code == 400


def test_changing_delta_is_recorded_and_used_by_the_next_decision(client, project):
    user = _admin(client, project)
    response = client.post(f"/projects/{project.pk}/console",
                           {"action": "learner", "algorithm": "mpaa-i", "param-delta": "0.25", "param-C": "1",
                            "param-query": "active", "param-p": "0.1"})
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.params["delta"] == 0.25
    change = ProjectChange.objects.get(project=project, field="params.delta")
    assert (change.old, change.new, change.user) == (100.0, 0.25, user)
    update_project(project.pk)
    import learners
    assert learners.from_bytes(bytes(LearnerState.objects.get(project=project).blob)).delta == 0.25
    assert "params.delta" in client.get(f"/projects/{project.pk}/console").content.decode()


@pytest.mark.parametrize("value,needle", [("0", "delta must be a number > 0"), ("-1", "delta must be"),
                                          ("nan", "delta must be"), ("abc", "delta must be")])
def test_bad_delta_is_refused_and_nothing_changes(client, project, value, needle):
    _admin(client, project)
    response = client.post(f"/projects/{project.pk}/console",
                           {"action": "learner", "algorithm": "mpaa-i", "param-delta": value})
    assert response.status_code == 400 and needle in error_text(response.content)
    project.refresh_from_db()
    assert project.params == {"delta": 100.0} and not ProjectChange.objects.exists()


def test_switching_algorithm_pause_and_assign(client, project):
    _admin(client, project)
    assert client.post(f"/projects/{project.pk}/console",
                       {"action": "learner", "algorithm": "md-ada", "param-delta": "1",
                        "param-a_t": "one"}).status_code == 302
    project.refresh_from_db()
    assert project.algorithm == "md-ada" and project.params["a_t"] == "one"
    assert client.post(f"/projects/{project.pk}/console", {"action": "settings", "stream_state": "paused",
                                                          "show_prediction": "on"}).status_code == 302
    project.refresh_from_db()
    assert project.stream_state == "paused" and project.show_prediction
    get_user_model().objects.create_user("newbie", password="pw")
    assert client.post(f"/projects/{project.pk}/console", {"action": "assign", "username": "newbie",
                                                          "role": "annotator"}).status_code == 302
    assert Membership.objects.filter(project=project, user__username="newbie").exists()
    bad = client.post(f"/projects/{project.pk}/console", {"action": "assign", "username": "ghost"})
    assert bad.status_code == 400 and "no user named" in bad.content.decode()
    fields = set(ProjectChange.objects.filter(project=project).values_list("field", flat=True))
    assert {"algorithm", "stream_state", "show_prediction", "member"} <= fields


def test_annotators_cannot_reach_the_console_or_create_projects(client, project):
    client.force_login(member(project, "ann"))
    assert client.get(f"/projects/{project.pk}/console").status_code == 403
    assert client.post(f"/projects/{project.pk}/console", {"action": "settings"}).status_code == 403
    assert client.get("/projects/new").status_code == 403
    assert client.get(f"/projects/{project.pk}/dashboard").status_code == 403
    project.dashboard_for_annotators = True
    project.save()
    assert client.get(f"/projects/{project.pk}/dashboard").status_code == 200


def test_staff_create_a_text_project(client):
    staff = get_user_model().objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    response = client.post("/projects/new", {"name": "spam", "task": "binary", "item_kind": "text",
                                             "classes": "ham, spam"})
    assert response.status_code == 302
    project = Project.objects.get(name="spam")
    assert project.classes == ["ham", "spam"] and project.algorithm == "auto"  # the default learner
    assert Membership.objects.get(project=project).role == "admin"
    again = client.post("/projects/new", {"name": "spam", "task": "binary", "item_kind": "text",
                                          "classes": "ham, spam"})
    assert again.status_code == 400 and "exists already" in again.content.decode()
    one = client.post("/projects/new", {"name": "x", "task": "binary", "item_kind": "text", "classes": "a"})
    assert one.status_code == 400 and "at least two" in error_text(one.content)
    digits = client.post("/projects/new", {"name": "mnist", "task": "multiclass", "item_kind": "image",
                                           "classes": "0,1,2,3,4,5,6,7,8,9", "featurizer_name": "pixels",
                                           "featurizer": '{"width": 28, "height": 28, "invert": true}'})
    assert digits.status_code == 302
    assert Project.objects.get(name="mnist").algorithm == "auto"
    config = Project.objects.get(name="mnist").featurizer_config
    assert (config["width"], config["height"], config["invert"]) == (28, 28, True)
    for bad, needle in (("{", "must be a JSON object"), ('{"width": -1}', "width must be"),
                        ('{"bogus": 1}', "unknown option")):
        response = client.post("/projects/new", {"name": "bad", "task": "binary", "item_kind": "image",
                                                 "classes": "a,b", "featurizer_name": "pixels",
                                                 "featurizer": bad})
        assert response.status_code == 400 and needle in error_text(response.content), bad
    assert not Project.objects.filter(name="bad").exists()


def test_new_project_offers_each_featurizer_with_its_measured_speed(client, tmp_path, monkeypatch):
    speeds = tmp_path / "speeds.json"
    speeds.write_text('{"minilm-ngrams": 234.5, "hashed-ngrams": 5251.0}')
    monkeypatch.setattr(features, "SPEEDS_FILE", speeds)
    client.force_login(get_user_model().objects.create_user("staff", password="pw", is_staff=True))
    page = parse(client.get("/projects/new").content)
    options = page.by_id("featurizer_name").find_all("option")
    shown = {o.attrs["value"]: o.text.split() for o in options if o.attrs["value"]}
    assert set(shown) == {n for kind in features.KINDS for n in features.featurizer_names(kind)}
    assert shown["minilm-ngrams"] == ["minilm-ngrams", "·", "234", "items/s", "·", "default"]
    assert shown["hashed-ngrams"] == ["hashed-ngrams", "·", "5,251", "items/s"]
    assert shown["deskew-hog"][2:4] == ["speed", "not"]  # absent from the file: said so
    # a new project's options shown as the JSON the field takes (minilm's intercept column:
    # docs/algorithms/common.md)
    assert '{"max_tokens": 128, "intercept": 0.5}' in page.text

    made = client.post("/projects/new", {"name": "news", "task": "multiclass", "item_kind": "text",
                                         "classes": "a,b,c,d", "featurizer_name": "hashed-ngrams"})
    assert made.status_code == 302
    project = Project.objects.get(name="news")
    assert project.featurizer_config["name"] == "hashed-ngrams"
    console = parse(client.get(f"/projects/{project.pk}/console").content)
    assert console.by_id("featurizer").text == "hashed-ngrams (5,251 items/s)"
    client.post("/projects/new", {"name": "spam", "task": "binary", "item_kind": "text",
                                  "classes": "ham,spam"})
    spam = Project.objects.get(name="spam").featurizer_config
    assert spam["name"] == features.DEFAULT["text"] == "minilm-ngrams"
    assert spam["intercept"] == 0.5  # blank options: a new project's values, not the stored-config defaults
    for form, needle in (({"featurizer_name": "deskew-hog"}, "'deskew-hog' is not one for text items"),
                         ({"featurizer": '{"name": "pixels"}'}, "choose the featurizer in its list")):
        bad = client.post("/projects/new", {"name": "bad", "task": "binary", "item_kind": "text",
                                            "classes": "a,b", **form})
        assert bad.status_code == 400 and needle in error_text(bad.content)
    assert not Project.objects.filter(name="bad").exists()


def test_dashboard_numbers_charts_and_red_banner(client, project):
    _admin(client, project)
    annotator = member(project, "ann")
    from django.test import Client

    ann = Client()
    ann.force_login(annotator)
    item = leased_item_id(ann.get(f"/projects/{project.pk}/"))
    for _ in range(4):
        item = leased_item_id(ann.post(f"/projects/{project.pk}/items/{item}/label", {"value": "1"}, **HX))
    page = parse(client.get(f"/projects/{project.pk}/dashboard").content)
    # five charts: the cost per accuracy (tests/reporting/test_ui_dashboard_costs.py) and four curves
    assert page.find_all(**{"hx-trigger": "every 2s"}) and len(page.find_all("svg")) == 5
    assert page.by_id("m-labels").text == "4" and not page.find_all(id="stale-banner")
    Label.objects.filter(project=project).update(created=timezone.now() - timedelta(seconds=45))
    panel = parse(client.get(f"/projects/{project.pk}/dashboard/panel", **HX).content)
    assert panel.by_id("stale-banner").text.startswith("4 labels waiting to be applied")
    # no heartbeat and nothing running: the banner says no worker takes the label queue
    assert panel.find_all(id="workers-absent") and not panel.find_all(id="workers-busy")
    run = PlannerRun.objects.create(project=project, candidates=[], status="running")
    panel = parse(client.get(f"/projects/{project.pk}/dashboard/panel", **HX).content)
    assert panel.find_all(id="workers-busy") and not panel.find_all(id="workers-absent")  # a beating run
    PlannerRun.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - timedelta(hours=1))
    panel = parse(client.get(f"/projects/{project.pk}/dashboard/panel", **HX).content)
    assert panel.find_all(id="workers-absent")  # a run that stopped beating keeps no worker busy
    update_project(project.pk)  # a worker applies them: the banner goes
    panel = parse(client.get(f"/projects/{project.pk}/dashboard/panel", **HX).content)
    assert not panel.find_all(id="stale-banner") and panel.by_id("m-version").text == "4"
    assert panel.by_id("m-worker-1").text == "absent"
    heartbeat.apply()  # a worker's periodic heartbeat, taken from the label queue
    assert WorkerHeartbeat.objects.get().queue == settings.CELERY_TASK_DEFAULT_QUEUE
    panel = parse(client.get(f"/projects/{project.pk}/dashboard/panel", **HX).content)
    rows = [[td.text for td in tr.find_all("td")] for tr in panel.find_all("tr")]
    assert panel.by_id("m-worker-1").text == "up" and ["ann", "4"] in [r[:2] for r in rows]
    assert panel.by_id("m-worker-2").text == "absent"  # nobody took the heavy queue's heartbeat


def test_budget_from_the_console_drives_the_query_ratio(client):
    from annotator.labelling.ingest import import_records
    from annotator.labelling.models import Item
    from annotator.labelling.projects.demo import digit_records
    from annotator.labelling.reporting.simulation import simulate

    project = digits_project(0, params={"delta": 10.0}, look_ahead=4)
    _admin(client, project)
    response = client.post(f"/projects/{project.pk}/console",
                           {"action": "settings", "stream_state": "running", "budget_ratio": "0.1"})
    assert response.status_code == 302
    import_records(project, digit_records(1200, seed=2))
    simulate(project)  # an oracle answers every query from the gold labels
    state = LearnerState.objects.get(project=project)
    decided = Item.objects.filter(project=project, queried__isnull=False)
    late = decided.filter(seq__gte=600)
    ratio, late_ratio = (q.filter(queried=True).count() / q.count() for q in (decided, late))
    # the plan fits the 1,200 items: spent ahead early (delta 10 alone would query most items),
    # repaid in the second half, so the budget holds from the first item to the last
    assert decided.count() == 1200 and 0.02 < late_ratio < 0.1, late_ratio
    assert abs(ratio - 0.1) <= 0.01, ratio
    assert state.budget_state["target"] == 0.1 and state.budget_state["n_seen"] == 1200
    assert state.budget_state["length"] == 1200
    promise = parse(client.get(f"/projects/{project.pk}/console").content.decode()).find(
        "p", id="budget-promise").text
    assert "10.0% of the items" in promise and "1,200 items" in promise and "about 120 labels" in promise
    assert "paid back by item 1,200" in promise
    bad = client.post(f"/projects/{project.pk}/console",
                      {"action": "settings", "budget_ratio": "0.1", "budget_per_day": "50"})
    assert bad.status_code == 400 and "not both" in bad.content.decode()
    assert client.post(f"/projects/{project.pk}/console",
                       {"action": "settings", "budget_ratio": "2"}).status_code == 400
