"""Request bodies refused from their headers (docs/operations.md, "Request bodies"), checked with
a real socket against the live server: the client sends the headers of a 1 GiB body and 1 KiB
of it; the answer must come back at once (a server that read the body first would wait for the
rest and the socket would time out)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest
from django.test import Client

from annotator.labelling.models import Membership
from annotator.labelling.web.limits import ANONYMOUS_BODY_BYTES
from tests.support.app import member, text_project

GIB = 1024 ** 3


def send_head(url: str, path: str, length: int, cookies: dict[str, str] | None = None,
              content_type: str = "multipart/form-data; boundary=xyz",
              extra: str = "") -> tuple[int, bytes]:
    """Send a POST's headers declaring ``length`` bytes and 1 KiB of the body; the status and
    the first bytes of the answer, read within 10 s."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        cookie = "; ".join(f"{k}={v}" for k, v in (cookies or {}).items())
        token = (cookies or {}).get("csrftoken", "")
        head = (f"POST {path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
                f"Content-Type: {content_type}\r\nContent-Length: {length}\r\n"
                + (f"Cookie: {cookie}\r\nX-CSRFToken: {token}\r\n" if cookie else "")
                + extra + "\r\n")
        sock.sendall(head.encode() + b"--xyz\r\n" + b"a" * 1024)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer) < answer.index(b"\r\n\r\n") + 4 + _length(answer):
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1]), answer


def _length(answer: bytes) -> int:
    """The Content-Length of an answer's headers (0 when absent)."""
    for line in answer.split(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def session_of(user) -> dict[str, str]:
    client = Client()
    client.force_login(user)
    return {"sessionid": client.cookies["sessionid"].value, "csrftoken": "a" * 32}


@pytest.fixture
def project(transactional_db):
    return text_project(["hello"])


def test_an_anonymous_upload_is_refused_before_its_body(live_server, project):
    """The reported case: a self-made CSRF cookie/form pair and 1 GiB declared: the login
    redirect, at once."""
    status, answer = send_head(live_server.url, f"/projects/{project.pk}/upload", GIB,
                               cookies={"csrftoken": "a" * 32})
    assert status == 302 and b"/accounts/login/" in answer


def test_an_upload_by_a_member_who_may_not_upload_is_refused_before_its_body(live_server, project):
    annotator = member(project, "ann", Membership.Role.ANNOTATOR)
    status, _ = send_head(live_server.url, f"/projects/{project.pk}/upload", GIB, session_of(annotator))
    assert status == 403
    outsider = member(text_project([]), "out", Membership.Role.ADMIN)  # admin elsewhere
    status, _ = send_head(live_server.url, f"/projects/{project.pk}/upload", GIB, session_of(outsider))
    assert status == 404


def test_an_admins_upload_above_the_limit_is_refused_before_its_body(live_server, project, settings):
    admin = member(project, "boss", Membership.Role.ADMIN)
    status, answer = send_head(live_server.url, f"/projects/{project.pk}/upload",
                               settings.MAX_UPLOAD_BYTES + 2 * 1024 * 1024, session_of(admin))
    assert status == 413 and b"uploads are limited" in answer


@pytest.mark.parametrize("path", ["/accounts/login/", "/projects/1/undo", "/nowhere"])
def test_an_anonymous_body_is_bounded_everywhere(live_server, project, path):
    status, answer = send_head(live_server.url, path, ANONYMOUS_BODY_BYTES + 1,
                               cookies={"csrftoken": "a" * 32},
                               content_type="application/x-www-form-urlencoded")
    assert status == 413 and b"without a session" in answer


def test_a_member_cannot_send_a_large_body_elsewhere(live_server, project, settings):
    """Only the upload route takes more than MAX_BODY_BYTES (a large multipart body to any other
    form was spooled to a temporary file by the CSRF check)."""
    annotator = member(project, "ann", Membership.Role.ANNOTATOR)
    status, _ = send_head(live_server.url, f"/projects/{project.pk}/undo", GIB, session_of(annotator))
    assert status == 413


def test_a_chunked_body_is_refused_with_411(client, project):
    response = client.post(f"/api/projects/{project.pk}/items", b'{"items": []}',
                           content_type="application/json", HTTP_TRANSFER_ENCODING="chunked",
                           HTTP_AUTHORIZATION=f"Token {project.api_token}")
    assert response.status_code == 411 and "Content-Length" in response.json()["error"]
