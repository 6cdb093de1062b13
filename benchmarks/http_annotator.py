"""A simulated annotator speaking HTTP to a running server: own cookies, the login form with its
CSRF token, then the queue's htmx round trip (POST a label, get the next item's panel).

Used by the reliability test (tests/test_faults.py) and the load benchmark (benchmarks/load.py).
"""

from __future__ import annotations

import http.cookiejar
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

ITEM = re.compile(r'data-item="(\d+)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class HttpAnnotator(threading.Thread):
    """Labels a project's queue until ``stop`` is set (or, with ``abandon``, takes one lease and
    leaves). ``gold``: item id -> the class to answer; ``think_s``: pause before each label.

    After the run: ``labelled`` (item ids), ``round_trips`` (seconds of each label POST that
    returned the next panel), ``sent`` ((label time, item id) pairs), ``errors`` (messages).
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
        cookies = urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        self.opener = urllib.request.build_opener(cookies)
        self.labelled: list[int] = []
        self.round_trips: list[float] = []
        self.sent: list[tuple[float, int]] = []
        self.errors: list[str] = []
        self.abandoned: int | None = None
        self.requests = 0

    def _open(self, path: str, data: dict | None = None, headers: dict | None = None) -> tuple[int, str]:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        req = urllib.request.Request(self.base + path, data=body, headers=headers or {})
        self.requests += 1
        try:
            with self.opener.open(req, timeout=60) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

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
                    self.errors.append(f"{self.username}: HTTP {status}")
                    return
                found = ITEM.search(page)
                if found is None:  # all caught up: poll like the page does
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
