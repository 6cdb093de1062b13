"""Several hosts on one machine: Linux network namespaces joined by veth pairs to a bridge in
the current namespace, and a TCP forwarder that publishes a loopback-only service on the bridge.

Used by ``tests/test_hosts.py``: the web server, two workers and beat each run in their own
namespace (their own network stack: they reach PostgreSQL and Redis only over their veth).
Needs root (CAP_NET_ADMIN) and the ``ip`` tool; :func:`unavailable` says why not.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import socketserver
import subprocess
import threading


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def unavailable() -> str | None:
    """Why network namespaces cannot be made here, or None when they can (tries one)."""
    if shutil.which("ip") is None:
        return "the `ip` tool (iproute2) is not installed"
    name = f"ann-probe-{os.getpid()}"
    try:
        _ip("netns", "add", name)
    except subprocess.CalledProcessError as exc:
        return f"`ip netns add` failed: {exc.stderr.strip() or exc}"
    _ip("netns", "del", name)
    return None


class Hosts:
    """A bridge ``10.<a>.<b>.1/24`` in this namespace and one namespace per name, each with its
    address ``10.<a>.<b>.<k>`` on a veth attached to the bridge. :meth:`remove` deletes them all."""

    def __init__(self, names: list[str]) -> None:
        tag = os.getpid() % 100_000
        self.prefix = f"10.{200 + tag % 50}.{tag // 50 % 250}"
        self.gateway = f"{self.prefix}.1"
        self.bridge = f"annbr{tag}"
        self.namespaces: dict[str, str] = {}
        self.addresses: dict[str, str] = {}
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for k, name in enumerate(names, start=2):
                ns, veth = f"ann-{tag}-{name}", f"annv{tag}x{k}"
                _ip("netns", "add", ns)
                self.namespaces[name] = ns
                _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
                _ip("link", "set", veth, "master", self.bridge, "up")
                address = f"{self.prefix}.{k}"
                _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
                self.addresses[name] = address
        except BaseException:
            self.remove()
            raise

    def wrap(self, name: str) -> list[str]:
        """The command prefix that runs a program in host ``name``'s namespace."""
        return ["ip", "netns", "exec", self.namespaces[name]]

    def remove(self) -> None:
        for ns in self.namespaces.values():  # deleting a namespace deletes its veth pair
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        self.namespaces.clear()


class Forwarder(socketserver.ThreadingTCPServer):
    """Listens on ``(host, port)`` and pipes every connection to ``target`` (e.g. a PostgreSQL
    that listens on loopback only), in daemon threads; :meth:`close` stops it."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, target: tuple[str, int]) -> None:
        self.target = target
        super().__init__((host, 0), _Pipe)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _Pipe(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        upstream = socket.create_connection(self.server.target)
        back = threading.Thread(target=_copy, args=(upstream, self.request), daemon=True)
        back.start()
        _copy(self.request, upstream)
        back.join()


def _copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
