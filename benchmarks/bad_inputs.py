"""Malformed inputs against a real gunicorn (DEBUG off): count the answers by status class.

Sends every input of :func:`inputs` (API bodies and headers, form fields, paths, uploads) to
the app served by gunicorn on a throw-away database, then runs the import jobs the uploads
created (as a worker would) and counts:

* ``5xx``: answers with a server error (must be 0);
* ``internal``: import jobs that failed with an "internal error" (a crash, must be 0);
* ``partial``: failed import jobs that stored items anyway (must be 0);
* ``not JSON``: answers under ``/api/`` that are not JSON (must be 0).

Writes ``benchmarks/BAD_INPUTS.md``. Usage::

    .venv/bin/python -m benchmarks.bad_inputs [--postgres postgres://postgres@127.0.0.1:5432/postgres]

PostgreSQL is the stricter target (NUL characters, string lengths and integer ranges are
enforced by the database there, not by SQLite).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import http.client
import http.cookies
import io
import json
import re
import sys
import time
import urllib.parse
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.appsetup import ROOT, setup

#: the server's LOGIN_FAILURE_LIMIT here (wrong logins and wrong API tokens per address)
THROTTLE_LIMIT = 40
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
PASSWORD = "probe-password-1"
#: how gunicorn's own error pages begin (requests it refuses before the app sees them)
GUNICORN_PAGE = b"<html>\n  <head>\n    <title>"


@dataclass
class Probe:
    """One malformed input: who sends it (``as_``: token / admin / annotator / anonymous)."""

    name: str
    method: str
    path: str
    body: bytes | dict[str, Any] | None = None  # bytes: raw body; dict: form fields
    headers: dict[str, Any] = field(default_factory=dict)
    as_: str = "token"
    files: dict[str, tuple[str, bytes]] | None = None


class Session:
    """Cookies + CSRF over one keep-alive connection (reopened when the server closed it)."""

    def __init__(self, base: str) -> None:
        parts = urllib.parse.urlsplit(base)
        self.host, self.port = parts.hostname, parts.port
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, Any] | None = None) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        hdrs = {**(headers or {})}
        if self.cookies:
            hdrs["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if method == "POST" and "csrftoken" in self.cookies:
            hdrs.setdefault("X-CSRFToken", self.cookies["csrftoken"])
        try:
            conn.putrequest(method, path, skip_accept_encoding=True)
            for k, v in hdrs.items():
                conn.putheader(k, v)  # bytes values pass through unencoded (non-ASCII tokens)
            if body is not None and str(hdrs.get("Transfer-Encoding", "")).lower() == "chunked":
                body = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"  # one chunk
            elif body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        for header in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in http.cookies.SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        return response.status, dict(response.headers.items()), data

    def login(self, username: str) -> None:
        _, _, page = self.request("GET", "/accounts/login/")
        token = CSRF.search(page.decode()).group(1)
        form = urllib.parse.urlencode({"username": username, "password": PASSWORD,
                                       "csrfmiddlewaretoken": token}).encode()
        status, _, _ = self.request("POST", "/accounts/login/", form,
                                    {"Content-Type": "application/x-www-form-urlencoded"})
        if status != 302:
            raise RuntimeError(f"login of {username} failed ({status})")


def multipart(fields: dict[str, Any], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body and its content type (file names sent as UTF-8 bytes)."""
    boundary = "----probe-boundary-7MA4YWxkTrZu0gW"
    out = io.BytesIO()
    for k, v in fields.items():
        out.write(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n".encode())
        out.write(str(v).encode("utf-8", "surrogatepass") + b"\r\n")
    for k, (filename, data) in files.items():
        out.write(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"; filename=\"".encode()
                  + filename.encode("utf-8", "surrogatepass") + b"\"\r\n"
                  + b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return out.getvalue(), f"multipart/form-data; boundary={boundary}"


def png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (8, 8), 200).save(buf, format="PNG")
    return buf.getvalue()


def zipped(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


def deep(n: int) -> str:
    return "[" * n + "]" * n


def inputs(p: dict[str, Any]) -> list[Probe]:
    """Every malformed input; ``p``: project ids by kind and their tokens."""
    text, url, image, vec = p["text"], p["url"], p["image"], p["vectors"]
    out: list[Probe] = []

    def api(name: str, pk: int, body: Any, raw: bool = False, **kw: Any) -> None:
        data = body if raw else json.dumps(body).encode()
        out.append(Probe(name, "POST", f"/api/projects/{pk}/items", data,
                         {"Content-Type": "application/json",
                          "Authorization": f"Token {p['tokens'][pk]}"}, **kw))

    # ---- API bodies (token)
    for label, value in [("NUL", "a\x00b"), ("lone surrogate", "a\ud800b"), ("only NUL", "\x00"),
                         ("BOM", "\ufeff"), ("1 MB", "x" * 1_000_000), ("RTL override", "\u202egnp.exe")]:
        api(f"API text with {label}", text, {"items": [{"text": value}]})
        api(f"API url with {label}", url, {"items": [{"url": value}]})
        api(f"API image filename with {label}", image,
            {"items": [{"image_base64": base64.b64encode(png()).decode(), "filename": value}]})
        api(f"API gold with {label}", text, {"items": [{"text": "ok", "gold": value}]})
    api("API image filename of 300 chars", image,
        {"items": [{"image_base64": base64.b64encode(png()).decode(), "filename": "a" * 296 + ".png"}]})
    api("API image filename not a string", image,
        {"items": [{"image_base64": base64.b64encode(png()).decode(), "filename": {"a": 1}}]})
    api("API image_base64 not a string", image, {"items": [{"image_base64": 12}]})
    api("API image_base64 empty", image, {"items": [{"image_base64": ""}]})
    api("API image_base64 of text", image, {"items": [{"image_base64": base64.b64encode(b"hi").decode()}]})
    for n in (1000, 100_000):
        api(f"API JSON nested {n} deep (body)", text, deep(n).encode(), raw=True)
        api(f"API JSON nested {n} deep (in an item)", text,
            ('{"items": [{"text": "a", "gold": ' + deep(n) + "}]}").encode(), raw=True)
        api(f"API JSON nested {n} deep (object)", text, ('{"a":' * n + "1" + "}" * n).encode(), raw=True)
    for raw in [b"", b"null", b"1e999", b"NaN", b'{"items": NaN}', b"\xff\xfe\x00", b'"\\ud800"',
                b'{"items": [{"text": "\\ud800"}]}', b'{"items": [{"text": "\\u0000"}]}',
                b'{"items": [{"url": "http://x/\\udfff"}]}',
                b'{"items": [' + b'{"text":"a"},' * 5000 + b"1]}",
                b'{"items": {"0": {"text": "a"}}}', b'{"items": [null]}',
                b'{"items": [{"TEXT": "a", "text": "b"}]}',
                b"\xef\xbb\xbf{}", b'{"items": [{"text": "a"}]}' + b" " * 10 + b"garbage"]:
        api(f"API raw body {raw[:40]!r}", text, raw, raw=True)
    for gold in [1e308, float("inf"), [1], {"a": 1}, True, 10**30, -0.0]:
        api(f"API gold {gold!r}", text, {"items": [{"text": "a", "gold": gold}]})
    for pairs in [[[99999999999999999999, 1]], [[-1, 1]], [["a", 1]], [[0, "inf"]], [[0, 1e400]],
                  [[0]], [[0, 1, 2]], "nope", [[0.5, 1]], [[True, 1]], [[2**63, 1]], [[0, None]],
                  [[0, 1]] * 100_000, [[i, 1] for i in range(0, 20_000, 2)], [[1, 1], [1, 2]], []]:
        api(f"API vector {json.dumps(pairs)[:40]}", vec, {"items": [{"vector": pairs}]})
    api("API vector gold 1e30", vec, {"items": [{"vector": [[0, 1]], "gold": 1e30}]})
    # ---- API auth and URLs
    tok = {"Content-Type": "application/json"}
    body = json.dumps({"items": [{"text": "a"}]}).encode()
    for label, header in [("non-ASCII token", b"Token \xc3\xa9\xc3\xa9"), ("latin-1 token", b"Token \xe9"),
                          ("NUL in token", "Token a\x00b"), ("empty token", "Token "),
                          ("huge token", "Token " + "a" * 60_000), ("Bearer", "Bearer x"),
                          ("wrong token", "Token wrong")]:
        for where, pk in (("existing", text), ("missing", 999_999)):
            out.append(Probe(f"API {label} ({where} project)", "POST", f"/api/projects/{pk}/items", body,
                             {**tok, "Authorization": header}))
            out.append(Probe(f"API GET metrics {label} ({where} project)", "GET",
                             f"/api/projects/{pk}/metrics", None, {"Authorization": header}))
    auth = {"Authorization": f"Token {p['tokens'][text]}"}
    for ids in ["99999999999999999999", "-1", "1,,2", "a", ",".join(["1"] * 2000), "%00", "1%002",
                "%ED%A0%80", "1e3", "%201%20", "0x10", "%EF%BC%91"]:
        out.append(Probe(f"API GET ids={ids[:30]}", "GET", f"/api/projects/{text}/items?ids={ids}",
                         None, auth))
    for path in ["/api/projects/99999999999999999999/items", "/api/projects/999999/items",
                 "/api/projects/-1/items", "/api/nothing", "/api/projects/1/items/%00",
                 f"/api/projects/{text}/metrics?x=%00"]:
        out.append(Probe(f"API GET {path[:50]}", "GET", path, None, auth))
    for method in ("PUT", "DELETE", "PATCH"):
        out.append(Probe(f"API {method}", method, f"/api/projects/{text}/items", body, {**tok, **auth}))
    out.append(Probe("API POST as a session (annotator)", "POST", f"/api/projects/{text}/items", body, tok,
                     as_="annotator"))
    out.append(Probe("API POST wrong content type", "POST", f"/api/projects/{text}/items", body,
                     {"Content-Type": "text/plain", **auth}))
    # ---- forms (admin session)
    def form(name: str, path: str, fields: dict[str, Any], as_: str = "admin") -> None:
        out.append(Probe(name, "POST", path, fields, as_=as_))

    for label, value in [("300 chars", "n" * 300), ("NUL", "a\x00b"), ("only spaces", "   "),
                         ("10k chars", "n" * 10_000)]:
        form(f"new project name {label}", "/projects/new",
             {"name": value, "task": "binary", "item_kind": "text", "classes": "a,b"})
        form(f"new project classes {label}", "/projects/new",
             {"name": f"p {label}", "task": "binary", "item_kind": "text", "classes": f"{value},b"})
    for options in [deep(100_000), deep(1000), '{"n_features": 1e30}', '{"n_features": 99999999999999999999}',
                    '{"n_features": -1}', '{"n_features": "x"}', '{"width": 100000, "height": 100000}',
                    '{"n_features": NaN}', '{"unknown": 1}', "[1]", "\x00"]:
        kind = "image" if "width" in options else "vectors"
        form(f"new project featurizer {options[:30]}", "/projects/new",
             {"name": f"f {len(out)}", "task": "binary", "item_kind": kind, "classes": "0,1",
              "featurizer": options})
    form("new project classes 1e30,1e31", "/projects/new",
         {"name": "big classes", "task": "binary", "item_kind": "text", "classes": "99999999999999999999,1"})
    form("new project task NUL", "/projects/new", {"name": "x", "task": "\x00", "item_kind": "text",
                                                   "classes": "a,b"})
    console = f"/projects/{text}/console"
    for fieldname, values in [("budget_per_day", ["1e30", "99999999999999999999", "2147483648", "-1", "nan",
                                                  "\x00", "1.5"]),
                              ("price_per_label", ["inf", "-inf", "nan", "1e400", "1e308", "-1", "\x00"]),
                              ("budget_ratio", ["nan", "inf", "0", "2", "1e-400"])]:
        for v in values:
            form(f"console {fieldname}={v!r}", console, {"action": "settings", "stream_state": "running",
                                                         fieldname: v})
    for v in ["inf", "1e400", "nan", "99999999999999999999", "\x00"]:
        form(f"console param-delta={v!r}", console,
             {"action": "learner", "algorithm": "paa-i", "param-delta": v})
    for v in ["\x00", "u" * 300, "nobody"]:
        form(f"console assign username {v[:20]!r}", console, {"action": "assign", "username": v})
    form("console stream_state NUL", console, {"action": "settings", "stream_state": "\x00"})
    form("console action NUL", console, {"action": "\x00"})
    out.append(Probe("console-params algorithm NUL", "GET", f"/projects/{text}/console/params?algorithm=%00",
                     as_="admin"))
    for v in ["\x00", "x" * 100_000, "99999999999999999999"]:
        form(f"label value {v[:20]!r}", f"/projects/{text}/items/{p['item']}/label", {"value": v},
             as_="annotator")
    form("label on item 99999999999999999999", f"/projects/{text}/items/99999999999999999999/label",
         {"value": "ham"}, as_="annotator")
    planner = f"/projects/{text}/planner"
    for fields in [{"runs": "99999999999999999999"}, {"runs": "\x00"},
                   {"runs": "3", "algorithm-0": "paa-i", "delta-0": "inf"},
                   {"runs": "3", "algorithm-0": "paa-i", "delta-0": "1e400"},
                   {"runs": "3", "algorithm-0": "\x00", "delta-0": "1"}]:
        form(f"planner {fields}", planner, fields)
    for path in [f"/projects/{text}/planner/99999999999999999999", "/projects/99999999999999999999/",
                 f"/projects/{text}/imports/99999999999999999999/", "/projects/%00/",
                 f"/projects/{text}/items/99999999999999999999/image", f"/projects/{text}/next?x=%00"]:
        out.append(Probe(f"GET {path[:50]}", "GET", path, as_="admin"))
    form("login username NUL", "/accounts/login/", {"username": "a\x00", "password": "x"}, as_="anonymous")
    form("login username 10k", "/accounts/login/", {"username": "a" * 10_000, "password": "x"},
         as_="anonymous")
    # ---- uploads (admin session); the import jobs run afterwards
    upload = "/projects/{pk}/upload"
    files = [
        (vec, "index 99999999999999999999", "v.svm", b"1 99999999999999999999:1\n"),
        (vec, "index 2**63", "v.svm", b"1 9223372036854775808:1\n"),
        (vec, "value 1e400", "v.svm", b"1 1:1e400\n"),
        (vec, "value nan", "v.svm", b"1 1:nan\n"),
        (vec, "label 1e30", "v.svm", b"1e30 1:1\n"),
        (vec, "label nan", "v.svm", b"nan 1:1\n"),
        (vec, "NUL", "v.svm", b"1 1:1\x00\n"),
        (vec, "qid", "v.svm", b"1 qid:99999999999999999999 1:1\n"),
        (text, "JSONL nested 100000", "a.jsonl",
         ('{"text": "a", "label": ' + deep(100_000) + "}\n").encode()),
        (text, "JSONL nested object 100000", "a.jsonl",
         ('{"a":' * 100_000 + "1" + "}" * 100_000 + "\n").encode()),
        (text, "JSONL NUL", "a.jsonl", b'{"text": "a\\u0000b"}\n'),
        (text, "JSONL lone surrogate", "a.jsonl", b'{"text": "a\\ud800b"}\n'),
        (text, "CSV NUL", "a.csv", b"text\na\x00b\n"),
        (text, "CSV 1 MB cell", "a.csv", b"text\n" + b"x" * 1_000_000 + b"\n"),
        (url, "URL CSV NUL", "u.csv", b"url\nhttp://a/\x00\n"),
        (url, "URL JSONL surrogate", "u.jsonl", b'{"url": "http://a/\\udc80"}\n'),
        (image, "ZIP name 300 chars", "i.zip", zipped({"1/" + "a" * 300 + ".png": png()})),
        (image, "ZIP name NUL", "i.zip", zipped({"1/a\x00b.png": png()})),
        (image, "ZIP manifest NUL", "i.zip",
         zipped({"labels.csv": b"filename,label\na.png,1\x00\n", "a.png": png()})),
        (text, "file name 300 chars", "a" * 300 + ".csv", b"text\nhello\n"),
        (text, "file name NUL", "a\x00b.csv", b"text\nhello\n"),
        (text, "file name surrogate bytes", "a\udcffb.csv", b"text\nhello\n"),
        # duplicates and compression (refused by the import, naming the line or the entry)
        (text, "CSV header text,text,label", "a.csv", b"text,text,label\na,b,ham\n"),
        (image, "ZIP labels.csv names a file twice", "i.zip",
         zipped({"labels.csv": b"filename,label\na.png,0\na.png,1\n", "a.png": png()})),
        (text, "CSV.gz 1M rows from a few KB", "a.csv.gz",
         gzip.compress(b"text\n" + b"hello\n" * 1_000_000)),
    ]
    for pk, label, filename, data in files:
        out.append(Probe(f"upload {label}", "POST", upload.format(pk=pk), {}, as_="admin",
                         files={"file": (filename, data)}))
    # ---- bodies refused from their headers: uploads by who may not upload, chunked API bodies
    for who in ("anonymous", "annotator"):
        out.append(Probe(f"upload as {who}", "POST", upload.format(pk=text), {}, as_=who,
                         files={"file": ("a.csv", b"text\nhello\n")}))
    out.append(Probe("anonymous 1 MB form", "POST", "/accounts/login/", {"username": "a" * 1_000_000},
                     as_="anonymous"))
    out.append(Probe("API chunked body", "POST", f"/api/projects/{text}/items", b'{"items": []}',
                     {"Content-Type": "application/json", "Transfer-Encoding": "chunked",
                      "Authorization": f"Token {p['tokens'][text]}"}))
    # ---- wrong API tokens in a row: throttled (429) once THROTTLE_LIMIT in all were sent
    for k in range(THROTTLE_LIMIT):
        out.append(Probe(f"wrong token {k + 1}", "GET", f"/api/projects/{text}/items?ids=1",
                         headers={"Authorization": "Token wrong"}))
    return out


def build_world() -> dict[str, Any]:
    """Users, four projects (one per item kind) and a queued item; ids and tokens."""
    from django.contrib.auth import get_user_model

    from annotator.labelling.ingest import Record, import_records
    from annotator.labelling.models import Membership
    from annotator.labelling.projects.creation import create_project

    User = get_user_model()
    admin = User.objects.create_user("probe-admin", password=PASSWORD, is_staff=True)
    annotator = User.objects.create_user("probe-annotator", password=PASSWORD)
    configs = {
        "text": dict(item_kind="text", classes=["ham", "spam"], task="binary", algorithm="paa-i"),
        "url": dict(item_kind="url", classes=["ham", "spam"], task="binary", algorithm="paa-i"),
        "image": dict(item_kind="image", classes=[0, 1], task="binary", algorithm="paa-i",
                      featurizer_config={"kind": "image", "width": 8, "height": 8}),
        "vectors": dict(item_kind="vectors", classes=[0, 1], task="binary", algorithm="paa-i",
                        featurizer_config={"kind": "vectors", "n_features": 10_000}),
    }
    world: dict[str, Any] = {"tokens": {}}
    for kind, config in configs.items():
        project = create_project(name=f"probe {kind}", params={"delta": 100.0}, **config)
        world[kind] = project.pk
        world["tokens"][project.pk] = project.api_token
        for user, role in ((admin, "admin"), (annotator, "annotator")):
            Membership.objects.create(user=user, project=project, role=role)
    items = import_records(project_by(world["text"]), [Record("seed", "hello world")])
    world["item"] = items[0].pk
    return world


def project_by(pk: int) -> Any:
    from annotator.labelling.models import Project

    return Project.objects.get(pk=pk)


def send(probe: Probe, sessions: dict[str, Session]) -> tuple[int, dict[str, str], bytes]:
    session = sessions[probe.as_]
    headers = dict(probe.headers)
    body = probe.body
    if probe.files is not None:
        body, headers["Content-Type"] = multipart(probe.body or {}, probe.files)
    elif isinstance(body, dict):
        body = urllib.parse.urlencode(body).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    return session.request(probe.method, probe.path, body, headers)


def run_imports() -> tuple[int, int, int, list[str]]:
    """Run every waiting import job as a worker would: (jobs, internal errors, partial, notes)."""
    from annotator.labelling.ingest import run_job
    from annotator.labelling.models import ImportJob, Item

    jobs = internal = partial = 0
    notes = []
    for job in ImportJob.objects.filter(status=ImportJob.Status.WAITING).order_by("id"):
        jobs += 1
        before = Item.objects.filter(project=job.project).count()
        try:
            done = run_job(job.pk)
        except Exception as exc:  # a crash of the import: what the issue calls an "internal error" job
            internal += 1
            notes.append(f"{job.filename[:40]!r}: crashed ({type(exc).__name__}: {str(exc)[:80]})")
            continue
        stored = Item.objects.filter(project=job.project).count() - before
        if done.status == ImportJob.Status.FAILED:
            if done.error.startswith("internal error"):
                internal += 1
            if stored:
                partial += 1
            notes.append(f"{job.filename[:40]!r}: failed, {stored} stored: {done.error[:100]}")
        else:
            notes.append(f"{job.filename[:40]!r}: done, {stored} stored")
    return jobs, internal, partial, notes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres", help="a PostgreSQL server URL (a fresh database is made there)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "BAD_INPUTS.md"))
    args = parser.parse_args()
    setup(args.postgres)
    from harness.servers import Gunicorn

    world = build_world()
    probes = inputs(world)
    rows = []
    # a failure limit above the wrong tokens the probes send before the burst that tests it
    with Gunicorn({"DEBUG": "0", "LOGIN_FAILURE_LIMIT": str(THROTTLE_LIMIT)}, workers=1, threads=2) as server:
        sessions = {"token": Session(server.base), "anonymous": Session(server.base),
                    "admin": Session(server.base), "annotator": Session(server.base)}
        sessions["admin"].login("probe-admin")
        sessions["annotator"].login("probe-annotator")
        sessions["anonymous"].request("GET", "/accounts/login/")  # a CSRF cookie
        for probe in probes:
            start = time.monotonic()
            status, headers, data = send(probe, sessions)
            api = probe.path.startswith("/api/") and not data.startswith(GUNICORN_PAGE)
            is_json = headers.get("Content-Type", "").startswith("application/json")
            text = "".join(c if c.isprintable() else " " for c in data[:120].decode("utf-8", "replace"))
            if data.startswith(GUNICORN_PAGE):
                text = "(refused by gunicorn before the app) " + text
            rows.append((probe.name, status, time.monotonic() - start, api and not is_json, text))
    jobs, internal, partial, notes = run_imports()
    by_class = Counter(f"{s // 100}xx" for _, s, _, _, _ in rows)
    errors = [r for r in rows if r[1] >= 500]
    not_json = [r for r in rows if r[3]]
    option = f" --postgres {args.postgres}" if args.postgres else ""
    database = "PostgreSQL" if args.postgres else "SQLite"
    lines = [
        "# Malformed inputs", "",
        f"Command: `.venv/bin/python -m benchmarks.bad_inputs{option}` (database: {database}; "
        "gunicorn, DEBUG off).", "",
        f"- inputs tried: **{len(rows)}** ({', '.join(f'{k}: {v}' for k, v in sorted(by_class.items()))})",
        f"- 5xx answers: **{len(errors)}**",
        f"- API answers that are not JSON: **{len(not_json)}**",
        f"- import jobs run: {jobs}; internal errors: **{internal}**; partial imports: **{partial}**", "",
        "| input | status | seconds | answer (start) |", "|---|---|---|---|",
    ]
    for name, status, seconds, bad_json, text in rows:
        flag = " (not JSON)" if bad_json else ""
        cell = text.replace("|", "\\|")[:90]
        name = "".join(c if c.isprintable() else " " for c in name).replace("|", "/")
        lines.append(f"| {name} | {status}{flag} | {seconds:.2f} | {cell} |")
    lines += ["", "## Import jobs", ""] + [f"- {n}" for n in notes]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:9]))
    for name, status, _, _, text in errors:
        print(f"  {status} {name}: {text[:100]}")
    for name, status, _, _, text in not_json:
        print(f"  not JSON {status} {name}: {text[:60]}")
    for n in notes:
        if "crashed" in n or "internal" in n:
            print("  ", n)
    return 0 if not errors and not not_json and not internal and not partial else 1


if __name__ == "__main__":
    sys.exit(main())
