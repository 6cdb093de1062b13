"""A learner earns its place: the console, the new-project form and the planner show each learner's
figures beside the majority-class baseline and mark one that does not beat it; the admin may still
choose it (with a warning); the planner never recommends it (Django test client)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotator.labelling.models import Membership, PlannerRun
from annotator.labelling.reporting import planner
from annotator.labelling.reporting.learner_evidence import below_baseline, learner_rows, no_benchmark_note
from learners.evaluation.learner_evidence import comparable, load
from tests.support.app import member, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db


def _row(page: bytes | str, table_id: str, learner: str):
    table = parse(page).find(id=table_id)
    return next(r for r in table.find_all("tr") if r.attrs.get("data-learner") == learner)


def _result(algorithm: str, delta: float, accuracy: float, macro_f1: float) -> dict:
    mean = {"accuracy": accuracy, "query_ratio": 0.1, "macro_f1": macro_f1, "baseline_accuracy": 0.866,
            "baseline_macro_f1": 0.464, "balanced_accuracy": 0.6, "baseline_balanced_accuracy": 0.5}
    return {"algorithm": algorithm, "delta": delta, "items": 200, "mean": mean,
            "std": {k: 0.01 for k in mean}}


def test_the_benchmark_file_marks_the_oasis_family_on_sms():
    """The known case (benchmarks/LABEL_EFFICIENCY.md): OASIS, OSIS and OS below 0.866 on SMS."""
    sms = next(s for s in comparable("binary", "text", load()) if s["name"] == "sms")
    assert sms["majority"] == pytest.approx(4827 / 5574, abs=1e-4)
    below = {n for n, r in sms["learners"].items() if r["accuracy"] <= sms["majority"]}
    assert below == {"oasis", "osis", "os"}
    assert set(below_baseline("binary", "text")) == {"oasis", "osis", "os"}


def test_console_marks_a_learner_below_the_baseline_and_still_lets_the_admin_choose_it(client):
    project = text_project()
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    page = client.get(f"/projects/{project.pk}/console").content
    oasis = _row(page, "console-learner-evidence", "oasis")
    assert "below-baseline" in oasis.attrs["class"] and "does not beat the majority baseline" in oasis.text
    assert "0.866" in oasis.text and "sms" in oasis.text
    paa = _row(page, "console-learner-evidence", "paa-i")
    assert "below-baseline" not in paa.attrs.get("class", []) and "running now" in paa.text
    select = parse(page).find("select", id="algorithm")
    options = {o.attrs["value"]: o.text for o in select.find_all("option")}
    assert "does not beat the majority baseline" in options["oasis"]
    assert "does not beat" not in options["paa-i"] and "does not beat" not in options["d-ada"]
    saved = client.post(f"/projects/{project.pk}/console", {"action": "learner", "algorithm": "oasis",
                                                            "param-delta": "0.01"}, follow=True)
    assert saved.status_code == 200
    project.refresh_from_db()
    assert project.algorithm == "oasis"  # allowed ...
    text = saved.content.decode()
    assert "oasis does not beat the majority-class baseline" in text  # ... with the warning
    fine = client.post(f"/projects/{project.pk}/console", {"action": "learner", "algorithm": "d-ada",
                                                           "param-delta": "0.5"}, follow=True)
    assert "does not beat the majority-class baseline" not in fine.content.decode()


def test_new_project_form_lists_each_tasks_learners_against_the_baseline(client):
    staff = get_user_model().objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    page = client.get("/projects/new").content
    assert "below-baseline" in _row(page, "learner-evidence-binary", "os").attrs["class"]
    assert "below-baseline" not in _row(page, "learner-evidence-binary", "d-amd").attrs.get("class", [])
    assert "not measured yet" in _row(page, "learner-evidence-binary", "auto").text
    multi = _row(page, "learner-evidence-multiclass", "md-amd")
    assert "mnist" in multi.text and "ag_news" in multi.text


def test_the_projects_own_planner_figures_replace_the_benchmarks_and_never_recommend_a_loser(client):
    project = text_project()
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    # oasis ranks first by macro-F1 (above its baseline) but its accuracy is below the majority's
    # share; d-ada beats both baselines; os beats neither
    results = [_result("oasis", 0.01, 0.80, 0.70), _result("d-ada", 0.5, 0.95, 0.60),
               _result("os", 1.0, 0.5, 0.4)]
    job = PlannerRun.objects.create(project=project, status="done", runs=2, done=6, total=6,
                                    candidates=[{"algorithm": r["algorithm"], "delta": r["delta"]}
                                                for r in results], results=results)
    ranked = planner.ranked(results, "macro_f1")
    assert [r["algorithm"] for r in ranked] == ["oasis", "d-ada", "os"]
    assert [r["algorithm"] for r in ranked if r["recommended"]] == ["d-ada"]
    panel = parse(client.get(f"/projects/{project.pk}/planner/{job.pk}?metric=macro_f1").content)
    badges = [r for r in panel.find(class_="planner-ranked").find_all("tr")[1:] if "recommended" in r.text]
    assert [int(r.attrs["data-index"]) for r in badges] == [1]
    losers = [_result("oasis", 0.01, 0.80, 0.40), _result("os", 1.0, 0.5, 0.4)]
    assert not any(r["recommended"] for r in planner.ranked(losers, "accuracy"))  # nothing beats it
    rows = {r["name"]: r for r in learner_rows(project.task, project.item_kind, project)}
    assert rows["d-ada"]["figures"][0]["where"].startswith("this project's planner")
    assert rows["oasis"]["below"] and not rows["d-ada"]["below"] and rows["os"]["below"]
    assert rows["paa"]["figures"][0]["where"].startswith("benchmark stream")  # not replayed here
    page = client.get(f"/projects/{project.pk}/planner").content
    oasis = _row(page, "planner-learner-evidence", "oasis")
    assert "this project's planner" in oasis.text and "below-baseline" in oasis.attrs["class"]


def _vectors_project():
    from annotator.labelling.projects.creation import create_project
    return create_project(name="vectors evidence", task="binary", item_kind="vectors", classes=["-1", "+1"],
                          featurizer_config={"kind": "vectors", "n_features": 8})


def test_only_streams_of_the_projects_own_kind_count_as_evidence():
    """A vectors project is not judged by the SMS and URL streams: no learner is marked from
    another kind's figures, and the note says that no stream of its kind was measured."""
    assert {s["kind"] for s in comparable("binary", "text", load())} == {"text"}
    assert comparable("binary", "vectors", load()) == []
    assert comparable("binary", "image", load()) == []  # MNIST is a multiclass stream
    assert {s["kind"] for s in comparable("binary", None, load())} == {"text", "url"}  # the new-project form
    assert below_baseline("binary", "vectors") == {}
    rows = learner_rows("binary", "vectors")
    assert rows and all(row["figures"] == [] and not row["below"] for row in rows)
    note = no_benchmark_note("binary", "vectors")
    assert note is not None and "No benchmark stream of vectors items" in note and "text, url" in note
    assert no_benchmark_note("binary", "text") is None and no_benchmark_note("binary", None) is None


def test_console_and_planner_of_a_vectors_project_show_no_other_kinds_figures(client):
    project = _vectors_project()
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    for page_url, table_id in ((f"/projects/{project.pk}/console", "console-learner-evidence"),
                               (f"/projects/{project.pk}/planner", "planner-learner-evidence")):
        response = client.get(page_url)
        assert response.status_code == 200
        page = parse(response.content)
        table = page.find(id=table_id)
        assert "benchmark stream" not in table.text and "sms" not in table.text and "urls" not in table.text
        assert "does not beat the majority baseline" not in table.text
        assert "not measured yet" in _row(response.content, table_id, "oasis").text
        assert "No benchmark stream of vectors items" in page.find(id=f"{table_id}-note").text
    select = parse(client.get(f"/projects/{project.pk}/console").content).find("select", id="algorithm")
    assert not any("does not beat" in o.text for o in select.find_all("option"))
    # a text project keeps its SMS figures and gets no note
    text = text_project()
    client.force_login(member(text, "boss", Membership.Role.ADMIN))
    page = parse(client.get(f"/projects/{text.pk}/console").content)
    assert page.find_all(id="console-learner-evidence-note") == []
