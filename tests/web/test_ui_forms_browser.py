"""The forms in Chromium at a laptop (1280x800) and a phone (390x844): the
browser refuses what the server refuses (an excluded bound too), a server error shows at its
field and goes with an algorithm switch, a save is confirmed, and the planner shows the settings
tried with error bars. Screenshots go to test-output/forms/ (git-ignored) to be looked at."""

from __future__ import annotations

import pytest

from annotator.labelling.models import PlannerRun
from annotator.labelling.projects.demo import create_demo
from annotator.labelling.reporting import planner
from tests.support.browser import SIZES, at_size, log_in, screenshot, wait_for_htmx_idle, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _admin_at(page, live_server, size: str) -> int:
    """Size the page's screen, log the demo admin in; the screen's width."""
    width = at_size(page, size)
    log_in(page, live_server.url, "admin", "admin-demo")
    return width


def _refused(page, form: str, field: str) -> str:
    """Submit ``#form``; the error text shown at ``field`` of the page that comes back."""
    page.click(f"#{form} button[type=submit]")
    page.wait_for_selector(f"#field-{field} .field-error")
    return page.inner_text(f"#field-{field} .field-error")


def _fits(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scrolling"


@pytest.mark.parametrize("size", list(SIZES))
def test_console_forms_in_chromium(live_server, chromium_page, size):
    project, _ = create_demo(10)
    page = chromium_page
    width = _admin_at(page, live_server, size)
    page.goto(f"{live_server.url}/projects/{project.pk}/console")
    delta = page.locator("#param-delta")
    # the browser refuses the excluded bound (> 0) with the server's own range text
    delta.fill("0")
    assert not delta.evaluate("e => e.checkValidity()")
    assert delta.evaluate("e => e.validationMessage") == "must be a number > 0"
    delta.fill("-1")
    assert not delta.evaluate("e => e.checkValidity()")  # min="0"
    delta.fill("0.5")
    assert delta.evaluate("e => e.checkValidity()")
    # the server's refusal (the browser's check turned off) is shown at the field, the value kept
    page.evaluate("document.getElementById('learner-form').noValidate = true")
    delta.fill("0")
    page.fill("#param-C", "3")
    assert "delta must be a number > 0" in _refused(page, "learner-form", "param-delta")
    assert page.input_value("#param-delta") == "0" and page.input_value("#param-C") == "3"
    _fits(page, width)
    screenshot(page, f"forms/console-error-{size}")
    # another algorithm: its fields replace the former ones, errors included
    page.select_option("#algorithm", "kmc")
    page.wait_for_selector("#param-max_basis")
    wait_for_htmx_idle(page)  # the new select's own hx-get is bound only once the swap settles
    assert page.locator("#learner-form .error").count() == 0
    page.select_option("#algorithm", project.algorithm)
    page.wait_for_selector("#param-max_basis", state="detached")  # kmc's own field: the swap is done
    wait_for_htmx_idle(page)
    page.fill("#param-delta", "0.5")
    page.click("#learner-form button[type=submit]")
    page.wait_for_selector(".message.success")
    assert "Learner settings saved: params.delta changed" in page.inner_text(".messages")
    # the stream form: a budget both ways is refused at its field
    page.fill("#budget_ratio", "0.1")
    page.fill("#budget_per_day", "50")
    assert "not both" in _refused(page, "settings-form", "budget_per_day")
    assert page.input_value("#budget_ratio") == "0.1"
    page.locator("#settings-form").scroll_into_view_if_needed()
    _fits(page, width)
    screenshot(page, f"forms/console-stream-error-{size}")
    page.fill("#budget_per_day", "")
    page.click("#settings-form button[type=submit]")
    page.wait_for_selector(".message.success")
    assert "Stream settings saved: budget_ratio changed" in page.inner_text(".messages")
    screenshot(page, f"forms/console-saved-{size}")


@pytest.mark.parametrize("size", list(SIZES))
def test_new_project_and_upload_errors_in_chromium(live_server, chromium_page, size, tmp_path):
    project, _ = create_demo(5)
    page = chromium_page
    width = _admin_at(page, live_server, size)
    page.goto(f"{live_server.url}/projects/new")
    page.fill("#name", "fraud")
    page.select_option("#task", "cost-sensitive")
    page.select_option("#item_kind", "text")
    page.fill("#classes", "ok, fraud, unsure")
    assert "exactly two classes (got 3)" in _refused(page, "new-project-form", "classes")
    assert page.input_value("#name") == "fraud" and page.input_value("#task") == "cost-sensitive"
    _fits(page, width)
    screenshot(page, f"forms/new-project-error-{size}")
    bad = tmp_path / "items.pdf"
    bad.write_bytes(b"%PDF-1.4")
    page.goto(f"{live_server.url}/projects/{project.pk}/upload")
    page.evaluate("document.getElementById('upload-file').removeAttribute('accept')")
    page.set_input_files("#upload-file", str(bad))
    assert "unsupported file type '.pdf'" in _refused(page, "upload-form", "file")
    _fits(page, width)
    screenshot(page, f"forms/upload-error-{size}")


@pytest.mark.parametrize("size", list(SIZES))
def test_planner_keeps_the_settings_tried_in_chromium(live_server, chromium_page, size):
    project, _ = create_demo(80)
    page = chromium_page
    width = _admin_at(page, live_server, size)
    page.goto(f"{live_server.url}/projects/{project.pk}/planner")
    page.fill("input[name=runs]", "3")
    page.click("#planner-form button[type=submit]")
    page.wait_for_selector(".message.success")
    planner.run(PlannerRun.objects.get(project=project).pk)  # what the worker does
    page.goto(f"{live_server.url}/projects/{project.pk}/planner")
    page.wait_for_selector(".planner-run svg")
    assert page.locator(".planner-run svg line.error-bar").count() == 8  # 4 settings x (x, y)
    assert wait_until(page, "() => document.querySelectorAll('#planner-tried tr').length") == 5
    assert page.locator("#planner-tried tr.current .badge").count() == 1
    assert page.input_value("input[name=runs]") == "3"  # the form starts from the last run
    _fits(page, width)
    screenshot(page, f"forms/planner-{size}")


@pytest.mark.parametrize("size", list(SIZES))
def test_new_project_shows_the_learners_against_the_majority_baseline_in_chromium(live_server, chromium_page,
                                                                                   size):
    """The new-project form's learner table: OASIS, OSIS and OS marked (below the majority
    baseline on the SMS and URL streams), the others not; it fits the screen."""
    create_demo(5)
    page = chromium_page
    width = _admin_at(page, live_server, size)
    page.goto(f"{live_server.url}/projects/new")
    page.click("#new-project-learners summary")
    table = "#learner-evidence-binary"
    page.wait_for_selector(f"{table} tr[data-learner=oasis]")
    marked = page.eval_on_selector_all(f"{table} tr.below-baseline",
                                       "rows => rows.map(r => r.dataset.learner)")
    assert set(marked) == {"oasis", "osis", "os"}
    assert page.is_visible(f"{table} tr[data-learner=oasis] .badge.warn")
    assert "0.866" in page.inner_text(f"{table} tr[data-learner=oasis]")
    _fits(page, width)
    screenshot(page, f"forms/new-project-learners-{size}")


def test_the_new_project_form_follows_its_item_type_in_chromium(live_server, chromium_page):
    """A vectors project's options placeholder shows its dimension option (``n_features``) and the
    featurizer list offers only that type's featurizers (the script finds the form's fields)."""
    create_demo(10)
    page = chromium_page
    _admin_at(page, live_server, "laptop")
    page.goto(f"{live_server.url}/projects/new")
    page.select_option("#item_kind", "vectors")
    assert page.get_attribute("#featurizer", "placeholder") == '{"n_features": 100}'
    shown = page.eval_on_selector_all("#featurizer_name optgroup:not([disabled])",
                                      "groups => groups.map(g => g.label)")
    assert shown == ["vectors items"]
