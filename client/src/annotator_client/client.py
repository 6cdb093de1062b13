"""The client: one :class:`Client` per app and project token, on ``httpx``.

Every call retries an answer of 429 (too many requests) or 503 (unavailable) up to
``max_retries`` times: it waits what the answer's ``Retry-After`` says (seconds, or an HTTP date),
else an exponential back-off (``backoff`` seconds, doubled each time), never more than
``max_wait`` seconds at once; then it raises :class:`ApiError`. Any other error answer raises
:class:`ApiError` at once with the API's message (``{"error": ...}``).
"""

from __future__ import annotations

import base64
import contextlib
import email.utils
import json
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import IO, Any, cast

import httpx

from .types import (
    ClassValue,
    CreatedItem,
    DatasetFormat,
    ImageItem,
    Item,
    ItemState,
    LabelFormat,
    LabelRow,
    Metrics,
)

#: answers that mean "not now": retried after a wait
RETRIED = (429, 503)
#: items per ``POST`` of :meth:`Client.stream_items` (the app takes at most ``API_MAX_BATCH``,
#: 1000 by default)
BATCH = 500


class ApiError(Exception):
    """An error answer: ``status`` and the API's ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def image_item(data: bytes, filename: str = "", gold: ClassValue | None = None) -> ImageItem:
    """An item of an image project from the image file's bytes."""
    item: ImageItem = {"image_base64": base64.b64encode(data).decode("ascii")}
    if filename:
        item["filename"] = filename
    if gold is not None:
        item["gold"] = gold
    return item


def retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (a number, or an HTTP date); None if absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return body["error"]
    return response.reason_phrase


class Client:
    """Calls to one app (``base_url``, e.g. ``https://annotate.example.com``) with one project's
    token. Use as a context manager, or call :meth:`close`.

    ``transport`` and ``sleep`` are for tests and special setups (an ``httpx`` transport; the
    function that waits).
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = 60.0, max_retries: int = 6,
                 backoff: float = 0.5, max_wait: float = 60.0, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout, transport=transport,
                                  headers={"Authorization": f"Token {token}", "Accept": "application/json"})
        self.max_retries, self.backoff, self.max_wait = max_retries, backoff, max_wait
        self._sleep = sleep
        #: the waits (seconds) of the retries made so far, in order
        self.waits: list[float] = []

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    # ------------------------------------------------------------------ plumbing
    def _wait(self, response: httpx.Response, attempt: int) -> float:
        asked = retry_after(response.headers.get("Retry-After"))
        wait = self.backoff * 2 ** attempt if asked is None else asked
        return min(wait, self.max_wait)

    def _send(self, method: str, path: str, *, stream: bool = False, **kwargs: Any) -> httpx.Response:
        """The answer to a request (retried on :data:`RETRIED`); ApiError for an error answer.
        With ``stream``, the answer's body is not read yet (close the response)."""
        attempt = 0
        while True:
            request = self._http.build_request(method, path, **kwargs)
            response = self._http.send(request, stream=stream)
            if response.status_code in RETRIED and attempt < self.max_retries:
                wait = self._wait(response, attempt)
                response.close()
                self.waits.append(wait)
                self._sleep(wait)
                attempt += 1
                continue
            if response.is_error:
                if stream:
                    response.read()
                response.close()
                raise ApiError(response.status_code, _message(response))
            return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._send(method, path, **kwargs).json()

    # ------------------------------------------------------------------ items
    def create_items(self, project: int, items: Sequence[Item]) -> list[CreatedItem]:
        """Add one batch of items to the project's stream, all or nothing (at most the app's
        ``API_MAX_BATCH``): the new items in input order. ApiError 400 naming the bad item."""
        body = self._json("POST", f"/api/projects/{project}/items", json={"items": list(items)})
        return cast("list[CreatedItem]", body["items"])

    def stream_items(self, project: int, items: Iterable[Item],
                     batch_size: int = BATCH) -> Iterator[CreatedItem]:
        """Post ``items`` (any iterable, read lazily) in batches of ``batch_size``, each batch
        retried on 429/503 (module docstring); yields the created items in input order. A batch
        the app refuses raises ApiError: the batches before it are stored."""
        if batch_size < 1:
            raise ValueError("batch_size must be 1 or more")
        it = iter(items)
        while batch := list(islice(it, batch_size)):
            yield from self.create_items(project, batch)

    def items(self, project: int, ids: Sequence[int]) -> list[ItemState]:
        """The decisions about the items ``ids`` (at most 1000), in that order (none asked:
        ``[]``, without a request: the app refuses an empty ``ids``)."""
        if not ids:
            return []
        body = self._json("GET", f"/api/projects/{project}/items", params={"ids": ",".join(map(str, ids))})
        return cast("list[ItemState]", body["items"])

    # ------------------------------------------------------------------ figures
    def metrics(self, project: int) -> Metrics:
        """The project's metrics, as on its dashboard."""
        return cast(Metrics, self._json("GET", f"/api/projects/{project}/metrics"))

    # ------------------------------------------------------------------ exports
    def _download(self, path: str, params: dict[str, str], out: IO[bytes] | None) -> bytes:
        response = self._send("GET", path, params=params, stream=True)
        try:
            if out is None:
                return response.read()
            for chunk in response.iter_bytes():
                out.write(chunk)
            return b""
        finally:
            response.close()

    def export_labels(self, project: int, format: LabelFormat = "jsonl",
                      out: IO[bytes] | None = None, undone: bool = False) -> bytes:
        """The labels export (``csv``, ``jsonl``, ``parquet`` or ``prodigy`` tasks) of the standing
        labels (``undone``: the undone ones too, not for Prodigy tasks): its bytes, or, given a
        binary file ``out``, streamed into it (returns ``b""``)."""
        params = {"format": format, "undone": "include" if undone else "exclude"}
        return self._download(f"/api/projects/{project}/labels", params, out)

    def labels(self, project: int, undone: bool = False) -> list[LabelRow]:
        """The standing labels of the project (``undone``: every label; the ``jsonl`` labels
        export, parsed)."""
        data = self.export_labels(project, "jsonl", undone=undone)
        return [cast(LabelRow, json.loads(line)) for line in data.splitlines() if line.strip()]

    def export_dataset(self, project: int, format: DatasetFormat = "jsonl", out: IO[bytes] | None = None,
                       **filters: str) -> bytes:
        """The dataset export (every item, its final label and provenance) with the API's filters
        (``provenance``, ``class_`` for ``class``, ``min_confidence``, ``since``, ...): its
        bytes, or streamed into ``out``."""
        params = {"format": format, **{k.rstrip("_"): str(v) for k, v in filters.items()}}
        return self._download(f"/api/projects/{project}/dataset", params, out)

    def save_export(self, project: int, path: str | Path, what: str = "labels",
                    format: str = "jsonl") -> Path:
        """Stream the ``labels`` or ``dataset`` export into the file ``path``; returns it.

        The export goes to a temporary file in ``path``'s folder, which replaces ``path`` only once
        the whole export arrived (``os.replace``): a refused export (:class:`ApiError`) or a broken
        download leaves an existing ``path`` as it was, and the temporary file is removed.
        ValueError, before any request, when ``what`` is neither ``labels`` nor ``dataset``."""
        if what not in ("labels", "dataset"):
            raise ValueError("what must be 'labels' or 'dataset'")
        path = Path(path)
        # beside the target (os.replace stays on one file system); a new file: the usual permissions
        partial = path.with_name(f".{path.name}.{secrets.token_hex(6)}.part")
        try:
            with partial.open("xb") as fh:
                if what == "labels":
                    self.export_labels(project, cast(LabelFormat, format), out=fh)
                else:
                    self.export_dataset(project, cast(DatasetFormat, format), out=fh)
            os.replace(partial, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise
        return path
