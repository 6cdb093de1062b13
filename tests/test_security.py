"""Security (issue 7): an authorization matrix over every URL, CSRF on every state-changing
request, production settings that pass ``check --deploy``, and no pickle anywhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from annotator.labelling.models import ImportJob, Item, Membership, PlannerRun
from annotator.labelling.pipeline import update_project

from .support.app import ROOT, digits_project, member

ROLES = ("anonymous", "outsider", "annotator", "admin")
LOGIN = "login"  # expected: a redirect to the login page
# name -> (method, expected status per role: anonymous, annotator of another project,
# annotator of this project, project admin). LOGIN = 302 to /accounts/login/.
MATRIX: dict[str, tuple[str, tuple]] = {
    "project-list": ("get", (LOGIN, 200, 200, 200)),
    "new-project": ("get", (LOGIN, 403, 403, 403)),  # staff only
    "queue": ("get", (LOGIN, 403, 200, 200)),
    "queue-next": ("get", (LOGIN, 403, 200, 200)),
    "undo": ("post", (LOGIN, 403, 409, 409)),  # nothing to undo
    "label": ("post", (LOGIN, 403, 400, 400)),  # no value posted
    "skip": ("post", (LOGIN, 403, 409, 409)),  # not leased to them
    "item-image": ("get", (LOGIN, 403, 200, 200)),
    "upload": ("get", (LOGIN, 403, 403, 200)),
    "import-job": ("get", (LOGIN, 403, 403, 200)),
    "console": ("get", (LOGIN, 403, 403, 200)),
    "console-params": ("get", (LOGIN, 403, 403, 200)),
    "planner": ("get", (LOGIN, 403, 403, 200)),
    "planner-run": ("get", (LOGIN, 403, 403, 200)),
    "planner-use": ("post", (LOGIN, 403, 403, 302)),
    "planner-cancel": ("post", (LOGIN, 403, 403, 302)),
    "dashboard": ("get", (LOGIN, 403, 403, 200)),
    "dashboard-panel": ("get", (LOGIN, 403, 403, 200)),
    "export-model": ("get", (LOGIN, 403, 403, 200)),
    "export-card": ("get", (LOGIN, 403, 403, 200)),
    "export-labels-csv": ("get", (LOGIN, 403, 403, 200)),
    "export-labels-jsonl": ("get", (LOGIN, 403, 403, 200)),
    "api-items": ("get", (403, 403, 200, 200)),  # token, or a member's session (read-only)
    "api-metrics": ("get", (403, 403, 200, 200)),
    # django.contrib.auth
    "login": ("get", (200, 200, 200, 200)),
    "logout": ("post", (302, 302, 302, 302)),
    "password_change": ("get", (LOGIN, 200, 200, 200)),
    "password_change_done": ("get", (LOGIN, 200, 200, 200)),
    "password_reset": ("get", (200, 200, 200, 200)),
    "password_reset_done": ("get", (200, 200, 200, 200)),
    "password_reset_confirm": ("get", (200, 200, 200, 200)),  # invalid link page
    "password_reset_complete": ("get", (200, 200, 200, 200)),
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
    kwargs = {"pk": project.pk, "item_pk": item.pk, "job_pk": job.pk, "run_pk": run.pk, "index": 0,
              "uidb64": "MQ", "token": "set-password"}
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
        if rel.parts[0] in (".venv", "test-output") or path.name == "test_security.py":
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
