"""A real gunicorn serving the app on a free loopback port, and a private redis-server to stop,
pause and restart, for the reliability tests and the load benchmark."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
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
                 python: str = sys.executable, host: str = "127.0.0.1", wrapper: Sequence[str] = ()) -> None:
        """``python``: the interpreter whose gunicorn runs (another venv's, e.g. a production one);
        ``host``: the address to bind; ``wrapper``: a command prefix (e.g. ``ip netns exec NS``)."""
        self.port = free_port()
        self.base = f"http://{host}:{self.port}"
        self.proc = subprocess.Popen(
            [*wrapper, python, "-m", "gunicorn", "annotator.wsgi", "-b", f"{host}:{self.port}",
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


class PrivateRedis:
    """A redis-server of our own on a free port (never the machine's 6379), to stop, restart,
    pause (SIGSTOP: the port still accepts connections, nothing answers) and resume."""

    def __init__(self, tmp: Path, bind: str = "127.0.0.1") -> None:
        self.port, self.tmp, self.bind, self.proc = free_port(), tmp, bind, None

    @property
    def url(self) -> str:
        return f"redis://{self.bind}:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", self.bind, "--save", "",
             "--appendonly", "no", "--dir", str(self.tmp),
             # off the loopback (a test bridge between network namespaces) clients come from
             # other addresses; protected mode would refuse them
             "--protected-mode", "yes" if self.bind == "127.0.0.1" else "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection((self.bind, self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    def pause(self) -> None:
        """SIGSTOP: a hung broker (connections are accepted by the kernel, never answered)."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
