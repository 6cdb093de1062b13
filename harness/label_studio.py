"""A real Label Studio server for the tests and the benchmark (docs/label_studio.md): its own
virtualenv, a server on the loopback address with a temporary data folder, and a
``label-studio-sdk`` driver process (:mod:`harness.label_studio_driver`) in that virtualenv.

* :func:`ensure_venv`: ``.cache/label-studio-venv`` (git-ignored) with the pinned packages of
  ``requirements-label-studio.txt``, created when missing (about 2 minutes from PyPI on the
  loaded 2-core machine; then reused);
* :class:`Server`: ``label-studio start`` on a free port with a temporary data folder, an admin
  and a legacy API token; its first start migrates a fresh database, which is then kept as a
  template in the cache folder so that later starts skip the migrations;
* :class:`Driver`: the SDK in a long-lived subprocess, one JSON command a line.

Label Studio refuses ML backends and webhooks on local addresses by default; the server is
started with ``ML_BLOCK_LOCAL_IP=false`` and ``SSRF_PROTECTION_ENABLED=false`` so that it can
call this app on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "label-studio-venv"
REQUIREMENTS = ROOT / "requirements-label-studio.txt"
TOKEN = "0123456789abcdef0123456789abcdef01234567"
USER, PASSWORD = "admin@example.com", "label-studio-test-pw"
#: seconds a first start (with migrations) may take on a loaded machine
START_SECONDS = 420


def ensure_venv(cache: Path = CACHE) -> Path:
    """The Python of the Label Studio virtualenv, created (and its packages installed) if missing
    or out of date with :data:`REQUIREMENTS`."""
    python = cache / "bin" / "python"
    stamp = cache / ".installed"
    wanted = REQUIREMENTS.read_text()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(cache)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-r", str(REQUIREMENTS)], check=True)
    stamp.write_text(wanted)
    return python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``label-studio start`` on 127.0.0.1 with a temporary data folder (module docstring)."""

    def __init__(self, python: Path, log_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = Path(tempfile.mkdtemp(prefix="label-studio-"))
        template = python.parents[1] / "template-data"
        if (template / "label_studio.sqlite3").exists():
            shutil.copytree(template, self.data, dirs_exist_ok=True)
        env = {**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": str(self.data), "ML_BLOCK_LOCAL_IP": "false",
               "SSRF_PROTECTION_ENABLED": "false", "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
               "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true", "DJANGO_SETTINGS_MODULE": "",
               "DATABASE_URL": "", "HOME": str(self.data)}
        env.pop("DJANGO_SETTINGS_MODULE")
        env.pop("DATABASE_URL")
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [str(python.parent / "label-studio"), "start", "--no-browser", "--internal-host", "127.0.0.1",
             "-p", str(self.port), "--data-dir", str(self.data), "--username", USER, "--password", PASSWORD,
             "--user-token", TOKEN, "--enable-legacy-api-token"],
            cwd=self.data, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.log_path = log_path
        self._wait_up()
        if not (template / "label_studio.sqlite3").exists():
            shutil.copytree(self.data, template, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.log", "export", "media"))

    def _wait_up(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("Label Studio exited:\n" + self.log_path.read_text()[-3000:])
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError("Label Studio did not start:\n" + self.log_path.read_text()[-3000:])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.data, ignore_errors=True)


class Driver:
    """``label-studio-sdk`` calls against ``server`` through :mod:`harness.label_studio_driver`."""

    def __init__(self, python: Path, server: Server) -> None:
        self.proc = subprocess.Popen(
            [str(python), str(ROOT / "harness" / "label_studio_driver.py"), "--url", server.url,
             "--token", TOKEN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._answer()

    def _answer(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the label-studio-sdk driver exited")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer["ok"]

    def call(self, op: str, **args: Any) -> Any:
        """Run one command (:class:`harness.label_studio_driver.Ops`) and return its result."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=20)
