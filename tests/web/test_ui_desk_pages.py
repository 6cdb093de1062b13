"""The desk's remaining page fixes: the dashboard in three groups (the label budget's target
beside what was achieved, the delta in use, a plain note for the importance-weighted estimate,
an upload link instead of "model version 0" when empty) and the docs rendered from Markdown
(web/help.py). Through the Django test client; the same pages in Chromium at both sizes are in
tests/web/test_ui_desk_browser.py."""

from __future__ import annotations

import re

import pytest

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Membership
from annotator.labelling.web import help as help_pages
from tests.support.app import digits_project, member, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db


def test_the_dashboard_groups_its_figures_and_shows_budget_target_achieved_and_delta(client):
    project = digits_project(40, params={"delta": 2.0}, budget_ratio=0.25)
    update_project(project.pk)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    page = parse(client.get(f"/projects/{project.pk}/dashboard").content)
    groups = [s.find("h2").text for s in page.find_all("section", class_="card-group")]
    assert groups == ["Items, labels and budget", "How often the model is right", "Cost and workers"]
    target, achieved = page.by_id("m-budget").text.split(" · ")
    assert target == "25.0%" and achieved.endswith("%")
    assert "target · achieved" in page.by_id("card-budget").text
    assert float(page.by_id("m-delta").text) > 0
    note = page.by_id("m-acc-iw-note").text
    assert note.startswith("From people's labels only") and len(note) < 120  # one plain line
    assert page.by_id("m-version").text.isdigit()


def test_without_a_budget_the_card_says_off_and_the_delta_is_the_projects(client):
    project = digits_project(40, params={"delta": 2.0})
    update_project(project.pk)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    page = parse(client.get(f"/projects/{project.pk}/dashboard").content)
    assert page.by_id("m-budget").text == "off"
    assert page.by_id("m-delta").text == "2.000" and "the project's setting" in page.by_id("card-delta").text


def test_an_empty_dashboard_links_the_upload_instead_of_model_version_0(client):
    project = text_project()
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    page = parse(client.get(f"/projects/{project.pk}/dashboard").content)
    assert page.by_id("m-version").text == "none yet"
    assert page.by_id("version-upload").attrs["href"] == f"/projects/{project.pk}/upload"
    # an annotator allowed to see the dashboard gets no upload link
    project.dashboard_for_annotators = True
    project.save()
    client.force_login(member(project, "ann"))
    page = parse(client.get(f"/projects/{project.pk}/dashboard").content)
    assert page.by_id("m-version").text == "none yet" and not page.find_all(id="version-upload")


def test_docs_are_rendered_from_markdown_with_links_between_them(client):
    project = text_project()
    client.force_login(member(project, "ann"))
    page = parse(client.get("/help/dataset").content)
    doc = page.by_id("doc")
    assert doc.find("h1").text.startswith("The labelled dataset")
    assert doc.find_all("table") and doc.find_all("code")
    # a link to a file outside docs/ shows its path as text
    assert any("benchmarks/DATASET.md" in c.text for c in doc.find_all("span", class_="doc-path"))
    doc = parse(client.get("/help/README").content).by_id("doc")
    hrefs = {a.attrs["href"] for a in doc.find_all("a")}
    assert any(h.startswith("/help/") for h in hrefs)
    assert not any(h.endswith(".md") or ".md#" in h for h in hrefs)  # no link a browser cannot open
    for href in hrefs:
        if href.startswith("/help/"):
            assert client.get(href.split("#")[0]).status_code == 200, href


def test_raw_html_in_a_document_is_shown_as_text(tmp_path, monkeypatch, client):
    (tmp_path / "algorithms").mkdir()
    (tmp_path / "note.md").write_text("# Note\n\n<script>alert(1)</script> and <b>bold</b>\n\n"
                                      "[next](algorithms/x.md#part) · [away](../README.md) · [web](https://example.org)\n")
    (tmp_path / "algorithms" / "x.md").write_text("# X\n")
    monkeypatch.setattr(help_pages, "DOCS", tmp_path)
    help_pages._render.cache_clear()
    project = text_project()
    client.force_login(member(project, "ann"))
    html = client.get("/help/note").content.decode()
    doc = html[html.index('id="doc"'):]
    assert "<script>alert" not in doc and "<b>bold" not in doc
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in doc
    assert 'href="/help/algorithms/x#part"' in doc
    assert '<span class="doc-path">away <code>../README.md</code></span>' in doc
    assert 'href="https://example.org"' in doc
    help_pages._render.cache_clear()


def test_pages_link_the_documents_they_name(client):
    project = digits_project(10)
    update_project(project.pk)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    for path in ("console", "dashboard", "suspects"):
        html = client.get(f"/projects/{project.pk}/{path}").content.decode()
        page = parse(html)
        named = {a.text for a in page.find_all("a") if a.attrs.get("href", "").startswith("/help/")}
        # every docs/*.md a page names is a link to its help page (form help texts included)
        mentions = set(re.findall(r"docs/[a-z_/]+\.md", page.text))
        assert mentions and mentions <= named, (path, mentions - named)
