"""Security: an authorization matrix over every URL, CSRF on every state-changing
request, production settings that pass ``check --deploy``, and no pickle anywhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import (
    ImportJob,
    Item,
    Label,
    Membership,
    PlannerRun,
    Project,
    Review,
    WebhookEndpoint,
)
from tests.support.app import ROOT, digits_project, member

ROLES = ("anonymous", "outsider", "annotator", "admin")
LOGIN = "login"  # expected: a redirect to the login page
# name -> (method, expected status per role: anonymous, annotator of another project,
# annotator of this project, project admin). LOGIN = 302 to /accounts/login/. A non-member gets
# 404, as for a project that does not exist (test_outsiders_cannot_tell_projects_exist).
MATRIX: dict[str, tuple[str, tuple]] = {
    "project-list": ("get", (LOGIN, 200, 200, 200)),
    "new-project": ("get", (LOGIN, 403, 403, 403)),  # staff only
    "queue": ("get", (LOGIN, 404, 200, 200)),
    "queue-next": ("get", (LOGIN, 404, 200, 200)),
    "queue-desk": ("post", (LOGIN, 404, 200, 200)),  # no labels posted: the held items
    "help": ("get", (LOGIN, 200, 200, 200)),  # the docs: any logged-in user
    "undo": ("post", (LOGIN, 404, 409, 409)),  # nothing to undo
    "label": ("post", (LOGIN, 404, 400, 400)),  # no value posted
    "skip": ("post", (LOGIN, 404, 409, 409)),  # not leased to them
    "change-label": ("post", (LOGIN, 404, 404, 404)),  # a label of someone else's
    "item-image": ("get", (LOGIN, 404, 200, 200)),
    "upload": ("get", (LOGIN, 404, 403, 200)),
    "import-job": ("get", (LOGIN, 404, 403, 200)),
    "review": ("get", (LOGIN, 404, 403, 200)),  # reviewers and admins (tests/teams/test_review.py)
    "review-next": ("get", (LOGIN, 404, 403, 200)),
    "review-decide": ("post", (LOGIN, 404, 403, 400)),  # no value posted
    "review-undo": ("post", (LOGIN, 404, 403, 409)),  # no decision to undo
    "console": ("get", (LOGIN, 404, 403, 200)),
    "console-params": ("get", (LOGIN, 404, 403, 200)),
    "console-refit": ("get", (LOGIN, 404, 403, 200)),  # the refit panel (tests/reporting/test_refit_runs.py)
    "planner": ("get", (LOGIN, 404, 403, 200)),
    "planner-run": ("get", (LOGIN, 404, 403, 200)),
    "planner-use": ("post", (LOGIN, 404, 403, 302)),
    "planner-cancel": ("post", (LOGIN, 404, 403, 302)),
    "dashboard": ("get", (LOGIN, 404, 403, 200)),
    "dashboard-panel": ("get", (LOGIN, 404, 403, 200)),
    "export-model": ("get", (LOGIN, 404, 403, 200)),
    "export-card": ("get", (LOGIN, 404, 403, 200)),
    "export-labels-csv": ("get", (LOGIN, 404, 403, 200)),
    "export-labels-jsonl": ("get", (LOGIN, 404, 403, 200)),
    "export-labels-parquet": ("get", (LOGIN, 404, 403, 200)),
    "export-labels-prodigy": ("get", (LOGIN, 404, 403, 200)),
    "export-opinions-csv": ("get", (LOGIN, 404, 403, 200)),
    "export-opinions-jsonl": ("get", (LOGIN, 404, 403, 200)),
    "export-dataset": ("get", (LOGIN, 404, 403, 200)),
    "items": ("get", (LOGIN, 404, 403, 200)),  # annotators too when the project allows (test_item_browser)
    "item-relabel": ("post", (LOGIN, 404, 403, 400)),  # admins only; no value posted
    "suspects": ("get", (LOGIN, 404, 403, 200)),
    "suspects-send": ("post", (LOGIN, 404, 403, 400)),  # admins only; no item posted
    "webhooks": ("get", (LOGIN, 404, 403, 200)),  # admins only (tests/webhooks/)
    "webhook-rotate": ("post", (LOGIN, 404, 403, 200)),  # the page with the new secret, shown once
    "webhook-delete": ("post", (LOGIN, 404, 403, 302)),
    "api-items": ("get", (403, 404, 400, 400)),  # token, or a member's session (read-only); no ids: 400
    "api-metrics": ("get", (403, 404, 403, 200)),  # the project keeps its dashboard for admins
    "api-opinions": ("get", (403, 404, 403, 200)),  # token, or an admin's session
    "api-agreement": ("get", (403, 404, 403, 200)),
    "api-quality": ("get", (403, 404, 403, 200)),  # token, or an admin's session
    "api-reviews": ("get", (403, 404, 403, 200)),  # token, or a reviewer's or an admin's session
    "api-dataset": ("get", (403, 404, 403, 200)),  # token, or an admin's session
    "api-class-descriptions": ("get", (403, 404, 403, 200)),  # token, or an admin's session (tests/api/)
    "api-webhooks": ("get", (403, 404, 403, 200)),  # token, or an admin's session (POST: token only)
    "api-webhook": ("delete", (403, 403, 403, 403)),  # token only: a session is refused before any lookup
    "api-webhook-secret": ("post", (403, 403, 403, 403)),  # token only
    "api-labels": ("get", (403, 404, 403, 200)),  # token, or an admin's session
    "api-openapi": ("get", (200, 200, 200, 200)),  # the API's description: public, holds no data
    "api-ls-tasks": ("get", (403, 404, 403, 200)),  # token, or an admin's session
    "api-ls-setup": ("get", (403, 404, 403, 200)),  # token, or an admin's session
    # Label Studio's ML backend: the project's backend token in the path, nothing else (a session
    # does not help): the walk's token is wrong for everybody
    "ls-ml-health": ("get", (403, 403, 403, 403)),
    "ls-ml-setup": ("post", (403, 403, 403, 403)),
    "ls-ml-predict": ("post", (403, 403, 403, 403)),
    "ls-ml-webhook": ("post", (403, 403, 403, 403)),
    # django.contrib.auth
    "login": ("get", (200, 200, 200, 200)),
    "logout": ("post", (302, 302, 302, 302)),
    "password_change": ("get", (LOGIN, 200, 200, 200)),
    "password_change_done": ("get", (LOGIN, 200, 200, 200)),
    # single sign-on (annotator/sso.py): off unless OIDC_RP_CLIENT_ID is set (tests/sso/)
    "sso-start": ("get", (404, 404, 404, 404)),
    "sso-callback": ("get", (404, 404, 404, 404)),
    # no password_reset*: those routes exist only with EMAIL_HOST (test_no_password_reset_without_mail)
}
# The Django admin (every pattern under admin/) is for staff only: non-staff are sent to its login.
ADMIN_EXPECTED = ("admin-login", "admin-login", "admin-login", "admin-login")


def _patterns(resolver: URLResolver, prefix: str = "", namespace: str = "") -> list[tuple[str, str, str]]:
    """(namespace, name, route) of every URL pattern, recursively."""
    out = []
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            ns = p.namespace or namespace
            out += _patterns(p, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            out.append((namespace, p.name or "", prefix + str(p.pattern)))
    return out


def test_every_url_has_an_entry_in_the_matrix():
    names = {(ns, name) for ns, name, _ in _patterns(get_resolver())}
    app = {name for ns, name in names if ns != "admin"}
    assert "" not in app, "every non-admin URL must have a name"
    assert app == set(MATRIX), f"missing: {sorted(app - set(MATRIX))}; stale: {sorted(set(MATRIX) - app)}"
    assert any(ns == "admin" for ns, _ in names)


@pytest.fixture
def world(db):
    project = digits_project(20, params={"delta": 100.0})
    update_project(project.pk)
    other = digits_project(5)
    users = {"outsider": member(other, "outsider"), "annotator": member(project, "ann"),
             "admin": member(project, "padmin", Membership.Role.ADMIN)}
    item = Item.objects.filter(project=project).order_by("-seq").first()  # never leased by the walk
    job = ImportJob.objects.create(project=project, filename="x.csv", status="done")
    run = PlannerRun.objects.create(project=project, candidates=[{"algorithm": "mpaa-i", "delta": 1.0}],
                                    status="done", results=[])
    theirs = Label.objects.create(item=item, project=project, annotator=member(project, "carol"),
                                  value=project.classes[0], primary=False)  # an opinion: item unchanged
    review = Review.objects.create(project=project, item=item, reason=Review.Reason.DISAGREEMENT)
    hook = WebhookEndpoint.objects.create(project=project, url="https://example.org/hook",
                                          events=["label.created"], secret="whsec_" + "A" * 32)
    kwargs = {"pk": project.pk, "item_pk": item.pk, "label_pk": theirs.pk, "job_pk": job.pk, "run_pk": run.pk,
              "index": 0, "review_pk": review.pk, "hook_pk": hook.pk,
              "uidb64": "MQ", "token": "set-password", "fmt": "csv",
              "name": "budget"}
    return project, users, kwargs


def _url(route: str, kwargs: dict) -> str:
    def sub(m: re.Match) -> str:
        return str(kwargs[m.group(1)])
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", sub, route)


def _client(role: str, users: dict) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(users[role])
    return client


@pytest.mark.parametrize("role_index,role", list(enumerate(ROLES)))
def test_authorization_matrix(world, role_index, role):
    _, users, kwargs = world
    failures = []
    for ns, name, route in _patterns(get_resolver()):
        if ns == "admin" and "<" in route:
            continue  # admin object pages: the same staff check (admin_view) as the pages below
        url = _url(route, kwargs)
        if ns == "admin":
            response = _client(role, users).get(url)
            ok = response.status_code == 302 and "/admin/login/" in response.url
            if not ok and not (name in ("login", "logout") and response.status_code in (200, 302, 405)):
                failures.append(f"admin:{name} {url}: {response.status_code}")
            continue
        method, expected = MATRIX[name]
        want = expected[role_index]
        response = getattr(_client(role, users), method)(url)
        if want == LOGIN:
            ok = response.status_code == 302 and response.url.startswith("/accounts/login/")
        else:
            ok = response.status_code == want
        if not ok:
            failures.append(f"{name} {method.upper()} {url}: {response.status_code}, want {want}")
    assert not failures, "\n".join(failures)


def _masked(page: str, url: str) -> str:
    """``page`` without what differs between any two requests: CSRF tokens (masked afresh each
    time) and the requested address."""
    return re.sub(r'(csrfmiddlewaretoken" value=|"X-CSRFToken": )"\w+"', r"\1-", page).replace(url, "URL")


def test_outsiders_cannot_tell_projects_exist(world):
    """A non-member gets the same status and message for another team's project as for an id
    that was never used, on every project page and API route (no probing for project ids)."""
    project, users, kwargs = world
    missing = dict(kwargs, pk=project.pk + 1000)
    outsider = _client("outsider", users)
    differ = []
    for ns, name, route in _patterns(get_resolver()):
        if ns == "admin" or not re.search(r"<(int:)?pk>", route):
            continue
        method = MATRIX[name][0]
        urls = [_url(route, k) for k in (kwargs, missing)]
        seen = [getattr(outsider, method)(url) for url in urls]
        pages = {(r.status_code, _masked(r.content.decode(), url)) for r, url in zip(seen, urls, strict=True)}
        if len(pages) != 1:
            differ.append(f"{name}: {[r.status_code for r in seen]}")
    assert not differ, differ


def test_staff_reach_the_django_admin(db):
    staff = get_user_model().objects.create_user("root", password="pw", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    assert client.get("/admin/").status_code == 200
    assert client.get("/admin/labelling/project/").status_code == 200


STATE_CHANGING = ["label", "skip", "undo", "console", "planner", "planner-use", "planner-cancel", "upload",
                  "new-project", "logout"]


@pytest.mark.parametrize("name", STATE_CHANGING)
@pytest.mark.parametrize("htmx", [False, True])
def test_csrf_is_enforced_on_every_state_changing_request(world, name, htmx):
    project, _, kwargs = world
    route = next(r for ns, n, r in _patterns(get_resolver()) if n == name and ns != "admin")
    staff = get_user_model().objects.create_user("staffer", password="pw", is_staff=True)
    Membership.objects.create(user=staff, project=project, role=Membership.Role.ADMIN)
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = client.post(_url(route, kwargs), {"value": "1", "action": "settings"}, **headers)
    assert response.status_code == 403 and b"CSRF" in response.content, name
    # with the token the same request passes the CSRF check
    client.get("/")  # sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    response = client.post(_url(route, kwargs), {"value": "1", "action": "settings"},
                           HTTP_X_CSRFTOKEN=token, **headers)
    assert not (response.status_code == 403 and b"CSRF" in response.content), name


def test_api_takes_no_cookie_auth_for_writes(world):
    project, users, _ = world
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["admin"])  # a session cookie alone must not post items
    response = client.post(f"/api/projects/{project.pk}/items", '{"items": [{"text": "x"}]}',
                           content_type="application/json")
    assert response.status_code == 403 and response.json()["error"].startswith("posting items needs")


# --------------------------------------------------------------------- API
def _token_get(path: str, token: str) -> Any:
    return Client().get(path, HTTP_AUTHORIZATION=f"Token {token}")


@pytest.mark.parametrize("token", ["wrong", "\xc3\xa9\xc3\xa9", "\xe9", "", "a" * 5000])
def test_a_wrong_token_cannot_tell_an_existing_project_from_a_missing_one(world, token):
    """Same status and body whether the project exists (the token may also be non-ASCII: a
    header's UTF-8 bytes reach Django as latin-1 characters)."""
    project = world[0]
    for what in ("items", "metrics"):
        there = _token_get(f"/api/projects/{project.pk}/{what}", token)
        missing = _token_get(f"/api/projects/{project.pk + 1000}/{what}", token)
        assert there.status_code == missing.status_code == 403
        assert there.json() == missing.json() == {"error": "wrong token, or no such project"}
    posted = Client().post(f"/api/projects/{project.pk}/items", '{"items": [{"text": "x"}]}',
                           content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}")
    assert posted.status_code == 403 and posted.json()["error"] == "wrong token, or no such project"


def test_every_api_error_is_json(world):
    project, users, _ = world
    admin = _client("admin", users)
    cases = [(admin.get(f"/api/projects/{project.pk + 1000}/items"), 404),  # missing project (member)
             (admin.get("/api/no-such-endpoint"), 404),
             (admin.put(f"/api/projects/{project.pk}/items"), 405),
             (_client("outsider", users).get(f"/api/projects/{project.pk}/metrics"), 404),
             (_client("annotator", users).get(f"/api/projects/{project.pk}/metrics"), 403),
             (Client().get(f"/api/projects/{project.pk}/metrics"), 403)]
    for response, status in cases:
        assert response.status_code == status and response["Content-Type"] == "application/json"
        assert response.json()["error"], response.content
    assert "GET" in admin.put(f"/api/projects/{project.pk}/items").json()["error"]


def test_the_api_applies_the_visibility_settings_to_annotators(world):
    project, users, _ = world
    decided = Item.objects.filter(project=project, queried__isnull=False).first()
    assert decided is not None and decided.prediction is not None
    url = f"/api/projects/{project.pk}/items?ids={decided.pk}"
    annotator, admin = _client("annotator", users), _client("admin", users)
    hidden = annotator.get(url).json()["items"][0]
    # no decision field for an annotator's session, whatever the item (docs/teams.md, "Honeypots")
    assert all(hidden[k] is None for k in ("prediction", "score", "query_prob", "status", "queried",
                                           "model_version"))
    assert (hidden["id"], hidden["seq"]) == (decided.pk, decided.seq)
    assert admin.get(url).json()["items"][0]["prediction"] == decided.prediction
    assert _token_get(url, project.api_token).json()["items"][0]["prediction"] == decided.prediction
    metrics = annotator.get(f"/api/projects/{project.pk}/metrics")
    assert metrics.status_code == 403 and "for its admins" in metrics.json()["error"]
    project.show_prediction = project.dashboard_for_annotators = True
    project.save()
    assert annotator.get(url).json()["items"][0] == hidden  # the guess is shown on the panel only
    assert annotator.get(f"/api/projects/{project.pk}/metrics").status_code == 200


def test_a_500_is_json_under_api_and_its_traceback_is_logged(world, tmp_path, monkeypatch):
    """The app's LOGGING (annotator.settings.logging_config with LOG_FILE) writes every 500's
    traceback; the client gets JSON without it."""
    import logging
    import logging.config

    from annotator import settings as app_settings
    from annotator.labelling.api import views

    project = world[0]
    log_file = tmp_path / "app.log"
    loggers = [logging.getLogger(n) for n in ("annotator", "django.request")]
    saved = [(lg.handlers[:], lg.level, lg.propagate) for lg in loggers]
    logging.config.dictConfig(app_settings.logging_config("INFO", str(log_file)))

    def broken(project):
        raise RuntimeError("forced failure for the log test")

    monkeypatch.setattr(views, "project_metrics", broken)
    try:
        response = Client(raise_request_exception=False).get(
            f"/api/projects/{project.pk}/metrics", HTTP_AUTHORIZATION=f"Token {project.api_token}")
    finally:
        for lg, (handlers, level, propagate) in zip(loggers, saved, strict=True):
            for h in lg.handlers:
                h.close()
            lg.handlers, lg.level, lg.propagate = handlers, level, propagate
    assert response.status_code == 500
    assert response.json() == {"error": "500 internal server error"}
    logged = log_file.read_text()
    assert "Traceback (most recent call last)" in logged
    assert "RuntimeError: forced failure for the log test" in logged
    assert f"/api/projects/{project.pk}/metrics" in logged


# ------------------------------------------------- login throttling and CSP
def test_logins_are_throttled_per_username_and_address(db, settings):
    """After AXES_FAILURE_LIMIT wrong passwords even the right one is refused (429) for that
    user from that address; another user from the same address still logs in."""
    User = get_user_model()
    User.objects.create_user("victim", password="right-password-1")
    User.objects.create_user("bystander", password="right-password-2")
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        wrong = client.post("/accounts/login/", {"username": "victim", "password": "guess"})
        assert wrong.status_code == 200 and b"Wrong user name or password" in wrong.content
    locked = client.post("/accounts/login/", {"username": "victim", "password": "guess"})
    assert locked.status_code == 429 and b"Too many failed logins" in locked.content
    right = client.post("/accounts/login/", {"username": "victim", "password": "right-password-1"})
    assert right.status_code == 429 and "_auth_user_id" not in client.session
    other = Client().post("/accounts/login/", {"username": "bystander", "password": "right-password-2"})
    assert other.status_code == 302
    from django.core.management import call_command

    call_command("axes_reset_username", "victim", verbosity=0)  # what an admin does to unlock
    again = client.post("/accounts/login/", {"username": "victim", "password": "right-password-1"})
    assert again.status_code == 302 and "_auth_user_id" in client.session


def test_an_overlong_user_name_is_refused_without_a_500(db):
    """django-axes records failed logins; a name longer than its column is cut, not a DB error."""
    from axes.models import AccessAttempt

    response = Client().post("/accounts/login/", {"username": "a" * 10_000, "password": "x"})
    assert response.status_code == 200 and b"Wrong user name or password" in response.content
    assert [len(a.username) for a in AccessAttempt.objects.all()] == [255]


def test_a_success_resets_the_failure_count(db, settings):
    get_user_model().objects.create_user("typo", password="right-password-1")
    client = Client()
    for _ in range(3):
        for _ in range(settings.AXES_FAILURE_LIMIT - 1):
            assert client.post("/accounts/login/", {"username": "typo", "password": "x"}).status_code == 200
        right = client.post("/accounts/login/", {"username": "typo", "password": "right-password-1"})
        assert right.status_code == 302
        client.post("/accounts/logout/")


def test_every_page_has_a_csp_without_inline_script(world):
    _, users, _ = world
    for client, path in [(Client(), "/accounts/login/"), (_client("admin", users), "/"),
                         (_client("admin", users), f"/projects/{world[0].pk}/dashboard")]:
        policy = client.get(path)["Content-Security-Policy"]
        directives = dict(d.strip().partition(" ")[::2] for d in policy.split(";") if d.strip())
        assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
        assert directives["default-src"] == "'self'" and directives["frame-ancestors"] == "'none'"
        assert "unsafe" not in policy


def test_templates_hold_no_inline_script_or_handler():
    """The CSP refuses inline code, so the templates must have none: scripts come from static/."""
    offenders = []
    for path in sorted((Path(ROOT) / "templates").rglob("*.html")):
        text = path.read_text()
        for m in re.finditer(r"<script\b[^>]*>", text):
            if "src=" not in m.group(0):
                offenders.append(f"{path.name}: inline {m.group(0)}")
        offenders += [f"{path.name}: handler {h}" for h in re.findall(r"\son[a-z]+\s*=", text)]
        offenders += [f"{path.name}: {h}" for h in re.findall(r"javascript:|hx-on|style=", text)]
    assert not offenders, offenders


PRODUCTION_ENV = {"DEBUG": "0", "SECRET_KEY": "x" * 64 + "-production-like-secret-key-for-the-check",
                  "ALLOWED_HOSTS": "annotator.example.org", "HTTPS": "1",
                  "DJANGO_SETTINGS_MODULE": "annotator.settings"}


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(PRODUCTION_ENV, VAR_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    code = ("from django.conf import settings as s; print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
            "s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS > 0, s.SECURE_PROXY_SSL_HEADER)")
    argv = [sys.executable, "-c", f"import django; django.setup(); {code}"]
    shown = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert shown == ["True", "True", "True", "True", "None"]  # no proxy header unless trusted
    env["TRUST_X_FORWARDED_PROTO"] = "1"
    shown = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    assert "HTTP_X_FORWARDED_PROTO" in shown


FORBIDDEN = re.compile(r"\bimport pickle\b|\bfrom pickle\b|\bimport (?:c)?Pickle\b|\bjoblib\b|\bshelve\b|"
                       r"\bdill\b|torch\.load|allow_pickle\s*=\s*True")


def test_no_pickle_anywhere_in_the_code():
    offenders = []
    for path in sorted(Path(ROOT).glob("**/*.py")):
        rel = path.relative_to(ROOT)
        # hidden folders (.venv, .cache's other virtualenvs) and node_modules hold others' code
        if rel.parts[0].startswith(".") or rel.parts[0] in ("node_modules", "test-output") \
                or path.name == "test_security.py":
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if FORBIDDEN.search(code):
                offenders.append(f"{rel}:{lineno}: {line.strip()}")
        text = path.read_text()
        for m in re.finditer(r"np\.load\(", text):
            call = text[m.end():m.end() + 160].split("\n\n", 1)[0]
            if "allow_pickle=False" not in call:
                offenders.append(f"{rel}: np.load without allow_pickle=False: {call[:60]!r}")
    assert not offenders, "\n".join(offenders)


def test_a_model_file_with_a_pickled_array_is_refused(tmp_path):
    import io

    import numpy as np

    import learners

    buf = io.BytesIO()
    np.savez(buf, __meta__=np.frombuffer(b"{}", dtype=np.uint8), evil=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="not a learner state file"):
        learners.from_bytes(buf.getvalue())
    path = tmp_path / "model.npz"
    path.write_bytes(buf.getvalue())
    with pytest.raises(ValueError):
        learners.load_model(path)


def test_no_password_reset_without_mail(client):
    """The app sends no mail unless EMAIL_HOST is set: no reset route then (annotator/urls.py)."""
    assert client.get("/accounts/password_reset/").status_code == 404
    assert client.get("/accounts/login/").status_code == 200


def test_wrong_api_tokens_are_throttled_like_logins(world, settings):
    """After AXES_FAILURE_LIMIT wrong tokens from one address: 429 for its further wrong tokens;
    a right token, of this project or another, is still served from that address (behind a
    proxy every caller shares it: wrong tokens must lock nobody out, docs/operations.md)."""
    project = world[0]
    other = Project.objects.exclude(pk=project.pk).first()
    url = f"/api/projects/{project.pk}/metrics"
    answers = [_token_get(url, "wrong").status_code for _ in range(settings.AXES_FAILURE_LIMIT)]
    assert answers == [403] * settings.AXES_FAILURE_LIMIT
    refused = _token_get(url, "wrong")
    assert refused.status_code == 429 and "too many wrong tokens" in refused.json()["error"]
    assert _token_get(url, project.api_token).status_code == 200
    assert _token_get(f"/api/projects/{other.pk}/metrics", other.api_token).status_code == 200
    assert _token_get(url, other.api_token).status_code == 429  # a right token, of the wrong project
