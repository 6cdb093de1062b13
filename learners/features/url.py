"""URL featurizer: hashed lexical tokens plus character counts.

Raw item: a URL string (or UTF-8 bytes). It is only parsed as text: nothing is resolved or
fetched. Any non-empty string is accepted (a malformed URL still yields tokens); an empty or
all-whitespace string is refused, since there is nothing to show an annotator.

Parsing: surrounding whitespace is stripped; a string without ``scheme://`` is read as
``//<string>`` so that ``example.com/a`` has host ``example.com`` (most URLs in the wild and in
the malicious-URL data omit the scheme); then the generic split of RFC 3986 appendix B
gives scheme, authority, path, query and fragment. The authority loses its ``user@`` part and
its ``:port``.

Columns ``0 .. len(COUNT_NAMES) - 1`` hold ``log1p`` of these counts over the whole string:
length, digits, dots, hyphens, '@' signs, path depth and number of query parameters, plus
the IP-literal flag as 0/1 (dotted or bare decimal/hex IPv4 such as ``http://3232235777/``,
or ``[IPv6]``). The remaining ``n_features - len(COUNT_NAMES)`` columns hold the counts of these
tokens (prefixed by their field, lowercased when ``lowercase``), hashed with scikit-learn's
``FeatureHasher`` (MurmurHash3, stable across processes) without alternating signs:

* ``scheme:<scheme>`` (``scheme:`` when absent), ``port:<port>``;
* ``host:<label>`` for each dot-separated host label, ``tld:<last label>``,
  ``domain:<last two labels>`` (no public-suffix list, so ``co.uk`` counts as a domain), or
  ``host:<ip>`` and ``ip:1`` for an IP literal;
* ``path:<segment>`` for each non-empty ``/`` segment, ``pathword:<word>`` for each
  alphanumeric run of the path, ``ext:<extension>`` of the last segment;
* ``qkey:<name>`` and ``qword:<word>`` for each ``&``/``;``-separated query parameter.

The whole row is then scaled to unit L2 norm (like text), so the learners' delta means the
same thing across kinds.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..params import Param
from .base import BaseFeaturizer, FeatureError, decode_utf8

COUNT_NAMES = ("length", "digits", "dots", "hyphens", "at_signs", "ip_host", "path_depth",
               "query_params")

_HAS_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
# RFC 3986 appendix B: matches every string, so parsing never fails.
_RFC3986 = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.S)
_WORD = re.compile(r"[^\W_]+")
_NUMERIC_IPV4 = re.compile(r"^(?:0x[0-9a-f]+|\d+)(?:\.(?:0x[0-9a-f]+|\d+)){0,3}$")


@dataclass(frozen=True)
class UrlParts:
    """Lexical parts of a URL (strings, possibly empty; ``host`` without user info and port)."""

    scheme: str
    host: str
    port: str
    path: str
    query: str


def split_url(url: str) -> UrlParts:
    """Split ``url`` into its parts (module docstring); never raises.

    The one URL splitter of the project: the featurizer and the annotator queue's display use
    it. A string without ``scheme://`` is read as ``//<string>``, so ``example.com/a`` has
    host ``example.com`` (tested on the scheme-less URLs of the URL data).
    """
    if not _HAS_SCHEME.match(url):
        url = "//" + url
    match = _RFC3986.match(url)
    assert match is not None  # every group of the RFC 3986 appendix B pattern is optional
    scheme, authority, path, query, _fragment = match.groups(default="")
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):  # [IPv6]:port
        host, _, rest = hostport[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        head, sep, tail = hostport.rpartition(":")
        host, port = (head, tail) if sep and tail.isdigit() else (hostport, "")
    return UrlParts(scheme, host.rstrip("."), port, path, query)


def is_ip_literal(host: str) -> bool:
    """True for IPv4/IPv6 literals, including bare decimal or hex forms browsers accept."""
    if not host:
        return False
    if _NUMERIC_IPV4.match(host.lower()):
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def url_tokens(parts: UrlParts, ip: bool) -> list[str]:
    """Field-prefixed lexical tokens of a split URL (module docstring)."""
    tokens = [f"scheme:{parts.scheme}"]
    if parts.port:
        tokens.append(f"port:{parts.port}")
    if ip:
        tokens += [f"host:{parts.host}", "ip:1"]
    elif parts.host:
        labels = parts.host.split(".")
        tokens += [f"host:{label}" for label in labels]
        if len(labels) > 1:
            tokens += [f"tld:{labels[-1]}", f"domain:{'.'.join(labels[-2:])}"]
    segments = [s for s in parts.path.split("/") if s]
    tokens += [f"path:{s}" for s in segments]
    tokens += [f"pathword:{w}" for w in _WORD.findall(parts.path)]
    if segments and "." in segments[-1].strip("."):
        tokens.append(f"ext:{segments[-1].rpartition('.')[2]}")
    for param in re.split(r"[&;]", parts.query):
        if param:
            key, _, value = param.partition("=")
            tokens.append(f"qkey:{key}")
            tokens += [f"qword:{w}" for w in _WORD.findall(value)]
    return tokens


class UrlFeaturizer(BaseFeaturizer):
    """Lexical URL features: counts then hashed tokens, unit L2 norm (module docstring)."""

    kind = "url"
    name = "url-lexical"
    version = 1
    options = (
        Param("n_features", 2**18, int, "number of columns: the counts, then the hashed tokens",
              low=2**5, high=2**24, log=True),
        Param("lowercase", True, bool, "lowercase the tokens (host names are case-insensitive)"),
    )

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        config = self.config()
        self.n_features = config["n_features"]
        self.lowercase: bool = config["lowercase"]
        # scikit-learn is imported by the featurizer, not with the module: the web pages import
        # split_url, and every worker paid ~2 s and ~270 MiB for it (docs/performance.md)
        from sklearn.feature_extraction import FeatureHasher

        self._hasher = FeatureHasher(n_features=self.n_features - len(COUNT_NAMES),
                                     input_type="string", alternate_sign=False, dtype=np.float64)

    def _parse(self, raw: Any) -> tuple[list[str], list[float]]:
        url = decode_utf8(raw, "URL").strip()
        if not url:
            raise FeatureError("URL is empty")
        parts = split_url(url.lower() if self.lowercase else url)
        ip = is_ip_literal(parts.host)
        n_params = sum(1 for p in re.split(r"[&;]", parts.query) if p)
        counts = [len(url), sum(c.isdigit() for c in url), url.count("."), url.count("-"),
                  url.count("@"), int(ip), sum(1 for s in parts.path.split("/") if s), n_params]
        # log1p keeps long URLs from dominating; the IP flag stays 0/1.
        values = [float(c) if name == "ip_host" else math.log1p(c)
                  for name, c in zip(COUNT_NAMES, counts, strict=True)]
        return url_tokens(parts, ip), values

    def _rows(self, parsed: Sequence[tuple[list[str], list[float]]]) -> sp.csr_matrix:
        counts = sp.csr_matrix(np.array([c for _, c in parsed], dtype=np.float64))
        from sklearn.preprocessing import normalize

        tokens = self._hasher.transform([t for t, _ in parsed])
        return normalize(sp.hstack([counts, tokens], format="csr"), norm="l2", copy=False)


FEATURIZER = UrlFeaturizer
