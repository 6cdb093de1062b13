"""A real webhook receiver for tests and benchmarks: an ``http.server`` on 127.0.0.1 (a free
port) in a thread, recording every request and answering the statuses it is told to, at once,
after a delay, or trickling its answer's headers a byte at a time (a slow receiver)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: header bytes a trickling answer sends before it ends its headers
DRIP_BYTES = 40


class Receiver:
    """``url`` to register; ``received``: ``(arrival monotonic time, headers, body text)`` per
    request; ``answers``: statuses to give first, in order (then 200); ``delays``: seconds to
    wait before answering, per request in order (then none); ``drip``: when above 0, every
    answer sends its status line at once and then one header byte every ``drip`` seconds
    (:data:`DRIP_BYTES` of them), each byte well within a socket read timeout."""

    def __init__(self) -> None:
        self.received: list[tuple[float, dict[str, str], str]] = []
        self.answers: list[int] = []
        self.delays: list[float] = []
        self.drip = 0.0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                with receiver.lock:
                    receiver.received.append((time.monotonic(), dict(self.headers.items()), body))
                    status = receiver.answers.pop(0) if receiver.answers else 200
                    delay = receiver.delays.pop(0) if receiver.delays else 0.0
                    drip = receiver.drip
                time.sleep(delay)
                try:
                    if drip > 0:
                        self._trickle(status, drip)
                        return
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:  # the sender gave up on us
                    self.close_connection = True

            def _trickle(self, status: int, drip: float) -> None:
                self.wfile.write(f"HTTP/1.1 {status} OK\r\n".encode())
                self.wfile.flush()
                for byte in b"X-Slow: " + b"a" * (DRIP_BYTES - 8):
                    time.sleep(drip)
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                self.wfile.write(b"\r\nContent-Length: 0\r\n\r\n")
                self.close_connection = True

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
