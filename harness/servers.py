"""A real gunicorn serving the app on a free loopback port, for the reliability tests and the
load benchmark."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port nobody listens on right now (127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gunicorn:
    """``gunicorn annotator.wsgi`` with ``env`` over this process's environment, ``workers``
    processes x ``threads`` threads; ready (the login page answers) when the constructor returns.
    Use as a context manager or call :meth:`stop`."""

    def __init__(self, env: dict[str, str], workers: int = 4, threads: int = 4,
                 python: str = sys.executable) -> None:
        """``python``: the interpreter whose gunicorn runs (another venv's, e.g. a production one)."""
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [python, "-m", "gunicorn", "annotator.wsgi", "-b", f"127.0.0.1:{self.port}",
             "-w", str(workers), "--threads", str(threads), "--log-level", "warning"],
            cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.base + "/accounts/login/", timeout=1)
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Gunicorn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
