"""Where a webhook may be delivered (server-side request forgery rules, docs/webhooks.md).

A URL must be ``http`` or ``https`` with a host and no user name or password. Each address its
host resolves to must be global (not private, loopback, link-local such as the cloud metadata
address 169.254.169.254, shared, multicast, reserved or unspecified) unless it lies in one of
the networks of ``WEBHOOK_ALLOWED_NETWORKS``. The check runs when a URL is registered and again
at every delivery on the addresses resolved then, and the delivery connects to the address that
passed (:func:`resolve_allowed`), so a name that later resolves elsewhere (DNS rebinding) is
refused rather than followed.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import NamedTuple
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
SCHEMES = {"http": 80, "https": 443}
MAX_URL_LENGTH = 2000


class ForbiddenAddressError(ValueError):
    """The URL or an address its host resolves to may not receive webhooks (message says why)."""


class Target(NamedTuple):
    """A checked URL's parts: scheme, host name, port and the path with its query."""

    scheme: str
    host: str
    port: int
    path: str


def allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The networks of ``WEBHOOK_ALLOWED_NETWORKS``, parsed (a bad entry is a configuration error)."""
    return [ipaddress.ip_network(n, strict=False) for n in settings.WEBHOOK_ALLOWED_NETWORKS]


def why_forbidden(ip: IPAddress) -> str | None:
    """Why ``ip`` may not receive webhooks, or None when it may."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip in net for net in allowed_networks()):
        return None
    for kind, bad in (("unspecified", ip.is_unspecified), ("loopback", ip.is_loopback),
                      ("link-local (cloud metadata)", ip.is_link_local), ("multicast", ip.is_multicast),
                      ("private", ip.is_private), ("reserved", ip.is_reserved)):
        if bad:
            return f"{ip} is a {kind} address"
    if not ip.is_global:
        return f"{ip} is not a public address"
    return None


def parse(url: str) -> Target:
    """The parts of ``url`` if its form is acceptable (http(s), a host, no credentials), else
    :class:`ForbiddenAddressError`. Does not resolve the host."""
    if not isinstance(url, str) or not url.strip():
        raise ForbiddenAddressError("the webhook URL is empty")
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise ForbiddenAddressError(f"the webhook URL is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ForbiddenAddressError(f"the webhook URL is malformed: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ForbiddenAddressError(f"webhook URLs must start with http:// or https:// (not {scheme or 'no'}"
                                    " scheme)")
    if not parts.hostname:
        raise ForbiddenAddressError("the webhook URL has no host")
    if parts.username is not None or parts.password is not None:
        raise ForbiddenAddressError("the webhook URL may not hold a user name or password")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(scheme, parts.hostname, port or SCHEMES[scheme], path)


def resolve_allowed(host: str, port: int) -> IPAddress:
    """The address to connect to for ``host``: every address it resolves to must pass
    :func:`why_forbidden` (else :class:`ForbiddenAddressError`); the first one is returned."""
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        found = [literal]
    else:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise ForbiddenAddressError(f"cannot resolve the webhook host {host!r}: {exc}") from None
        found = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not found:
        raise ForbiddenAddressError(f"the webhook host {host!r} resolves to no address")
    for ip in found:
        reason = why_forbidden(ip)
        if reason:
            raise ForbiddenAddressError(f"webhooks may not go to {host}: {reason} (allow it with "
                                        "WEBHOOK_ALLOWED_NETWORKS)")
    return found[0]


def check(url: str) -> Target:
    """:func:`parse` and :func:`resolve_allowed`: the URL may receive webhooks now."""
    target = parse(url)
    resolve_allowed(target.host, target.port)
    return target
