"""A simulated annotator speaking HTTP to a running server: own cookies, the login form with its
CSRF token, then the queue's htmx round trip (POST a label, get the next item's panel).

Like a browser, it keeps its connection open between requests (HTTP/1.1 keep-alive) when the
server allows it and opens a new one when the server closed it or it sat idle for
:data:`IDLE_RECONNECT_S` (so it never sends on a connection the server is timing out).

Used by the reliability test (tests/engine/test_faults.py) and the load benchmark (benchmarks/load.py).
"""

from __future__ import annotations

import http.client
import http.cookies
import re
import threading
import time
import urllib.parse
from typing import Any

ITEM = re.compile(r'data-item="(\d+)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
#: Reconnect before sending when the connection was idle this long (gunicorn's keep-alive is 2 s).
IDLE_RECONNECT_S = 1.5
#: Redirects followed per request (the login form answers with one).
MAX_REDIRECTS = 5
TAG = re.compile(r"<[^>]+>")


def _reason(page: str) -> str:
    """The first words of an error page's text (tags and blank runs dropped), for the report."""
    return " ".join(TAG.sub(" ", page).split())[:160]


class HttpAnnotator(threading.Thread):
    """Labels a project's queue until ``stop`` is set (or, with ``abandon``, takes one lease and
    leaves). ``gold``: item id -> the class to answer; ``think_s``: pause before each label.

    After the run: ``labelled`` (item ids), ``round_trips`` (seconds of each label POST that
    returned the next panel), ``sent`` ((label time, item id) pairs, aligned with
    ``round_trips``), ``caught_up`` (times it found the queue empty and polled),
    ``request_times`` (when each HTTP request was sent), ``errors`` (messages).
    """

    def __init__(
        self,
        base: str,
        project_id: int,
        username: str,
        password: str,
        gold: dict[int, Any],
        stop: threading.Event,
        abandon: bool = False,
        think_s: float = 0.0,
    ) -> None:
        super().__init__(daemon=True)
        self.base, self.project_id, self.username, self.password = base, project_id, username, password
        self.gold, self.stop, self.abandon, self.think_s = gold, stop, abandon, think_s
        parts = urllib.parse.urlsplit(base)
        self.host, self.port = parts.hostname, parts.port
        self.conn: http.client.HTTPConnection | None = None
        self.last_used = 0.0
        self.cookies: dict[str, str] = {}
        self.labelled: list[int] = []
        self.round_trips: list[float] = []
        self.sent: list[tuple[float, int]] = []
        self.errors: list[str] = []
        self.caught_up: list[float] = []
        self.abandoned: int | None = None
        self.request_times: list[float] = []

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is not None and time.monotonic() - self.last_used > IDLE_RECONNECT_S:
            self.conn.close()
            self.conn = None
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        return self.conn

    def _keep_cookies(self, response: http.client.HTTPResponse) -> None:
        for header in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in http.cookies.SimpleCookie(header).items():
                if morsel["max-age"] == "0" or not morsel.value:
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.value

    def _exchange(self, method: str, path: str, body: bytes | None,
                  headers: dict[str, str]) -> tuple[http.client.HTTPResponse, str]:
        """Send one request and read its answer. Like a browser, a request that meets a kept-alive
        connection the server has just closed (reset, or closed before any answer) is sent once
        more on a new connection; any other failure is raised."""
        reused = self.conn is not None
        try:
            return self._send(method, path, body, headers)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            if not reused:
                raise
            return self._send(method, path, body, headers)

    def _send(self, method: str, path: str, body: bytes | None,
              headers: dict[str, str]) -> tuple[http.client.HTTPResponse, str]:
        conn = self._connection()
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            text = response.read().decode()
        except (http.client.HTTPException, OSError):
            conn.close()
            self.conn = None
            raise
        finally:
            self.last_used = time.monotonic()
        if response.will_close:
            conn.close()
            self.conn = None
        return response, text

    def _open(self, path: str, data: dict | None = None, headers: dict | None = None) -> tuple[int, str]:
        """One request (``data``: a form to POST) with redirects followed; (status, body text)."""
        method, body = ("POST", urllib.parse.urlencode(data).encode()) if data is not None else ("GET", None)
        for _ in range(MAX_REDIRECTS):
            sent = {**(headers or {}), "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
            if body is not None:
                sent["Content-Type"] = "application/x-www-form-urlencoded"
            self.request_times.append(time.time())
            response, text = self._exchange(method, path, body, sent)
            self._keep_cookies(response)
            location = response.getheader("Location")
            if response.status not in (301, 302, 303) or not location:
                return response.status, text
            path, method, body, headers = urllib.parse.urlsplit(location).path or "/", "GET", None, None
        raise RuntimeError(f"more than {MAX_REDIRECTS} redirects from {path}")

    def log_in(self) -> bool:
        _, page = self._open("/accounts/login/")
        form = {
            "username": self.username,
            "password": self.password,
            "csrfmiddlewaretoken": CSRF.search(page).group(1),
        }
        status, page = self._open("/accounts/login/", form)
        if status != 200 or "Log out" not in page:
            self.errors.append(f"{self.username}: login failed ({status})")
            return False
        return True

    def run(self) -> None:
        try:
            if not self.log_in():
                return
            status, page = self._open(f"/projects/{self.project_id}/")
            while not self.stop.is_set():
                if status != 200:
                    self.errors.append(f"{self.username}: HTTP {status}: {_reason(page)}")
                    return
                found = ITEM.search(page)
                if found is None:  # all caught up: poll like the page does
                    self.caught_up.append(time.time())
                    time.sleep(0.5)
                    status, page = self._open(f"/projects/{self.project_id}/")
                    continue
                item = int(found.group(1))
                if self.abandon:
                    self.abandoned = item
                    return
                csrf = CSRF.search(page).group(1)
                if self.think_s:
                    time.sleep(self.think_s)  # a person looking at the item
                t0 = time.perf_counter()
                self.sent.append((time.time(), item))
                status, page = self._open(
                    f"/projects/{self.project_id}/items/{item}/label",
                    {"value": str(self.gold[item]), "csrfmiddlewaretoken": csrf},
                    {"HX-Request": "true", "X-CSRFToken": csrf},
                )
                self.round_trips.append(time.perf_counter() - t0)
                self.labelled.append(item)  # the answer is the next item's panel (with its token)
        except Exception as exc:  # recorded: the caller fails on it
            self.errors.append(f"{self.username}: {exc!r}")
