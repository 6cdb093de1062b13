"""The shapes the API takes and gives (``/api/openapi.json``), as typed dictionaries."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

try:  # Python 3.11+
    from typing import NotRequired
except ImportError:  # pragma: no cover - Python 3.10
    from typing import NotRequired

#: a class value of a project (its classes are strings or integers)
ClassValue = str | int


class TextItem(TypedDict):
    """An item of a text project (or, with a URL as ``text``, of a URL project)."""

    text: str
    gold: NotRequired[ClassValue | None]


class UrlItem(TypedDict):
    """An item of a URL project."""

    url: str
    gold: NotRequired[ClassValue | None]


class VectorItem(TypedDict):
    """An item of a vectors project: ``[index (0-based), value]`` pairs."""

    vector: list[list[float]]
    gold: NotRequired[ClassValue | None]


class ImageItem(TypedDict):
    """An item of an image project: the file's bytes in base64 (:func:`.image_item` makes one)."""

    image_base64: str
    filename: NotRequired[str]
    gold: NotRequired[ClassValue | None]


Item = TextItem | UrlItem | VectorItem | ImageItem


class CreatedItem(TypedDict):
    """A stored item: its id, its place in the stream and its status (``pending``)."""

    id: int
    seq: int
    status: str


class ItemState(TypedDict):
    """What the learner decided about an item (null fields: not decided yet, or hidden)."""

    id: int
    seq: int
    status: str | None
    prediction: ClassValue | None
    score: float | None
    query_prob: float | None
    queried: bool | None
    model_version: int | None


class LabelRow(TypedDict):
    """A row of the labels export (``format=jsonl``)."""

    item_id: int
    seq: int
    content: str
    label: ClassValue
    annotator: str | None
    kind: Literal["opinion", "adjudication", "honeypot"]
    seconds: float | None
    primary: bool
    applied_version: int | None
    created: str
    undone_at: str | None  # None: the label stands


#: the metrics answer: the figures the project's dashboard shows (a JSON object)
Metrics = dict[str, Any]
LabelFormat = Literal["csv", "jsonl", "parquet", "prodigy"]
DatasetFormat = Literal["csv", "jsonl", "parquet"]
