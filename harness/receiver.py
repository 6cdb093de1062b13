"""A real webhook receiver for tests and benchmarks: an ``http.server`` on 127.0.0.1 (a free
port) in a thread, recording every request and answering the statuses it is told to."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    """``url`` to register; ``received``: ``(arrival monotonic time, headers, body text)`` per
    request; ``answers``: statuses to give first, in order (then 200)."""

    def __init__(self) -> None:
        self.received: list[tuple[float, dict[str, str], str]] = []
        self.answers: list[int] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                with receiver.lock:
                    receiver.received.append((time.monotonic(), dict(self.headers.items()), body))
                    status = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def wait_for(self, condition: Callable[[list], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                if condition(list(self.received)):
                    return
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; received {len(self.received)}")
            time.sleep(0.02)


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    receiver.thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()
