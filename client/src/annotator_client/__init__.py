"""Python client of the active annotator's token API (``/api/openapi.json``).

>>> from annotator_client import Client
>>> with Client("https://annotate.example.com", token) as api:
...     created = list(api.stream_items(7, ({"text": t} for t in texts)))
...     api.metrics(7)["items_labelled"]
...     api.save_export(7, "labels.parquet", "labels", "parquet")
"""

from .client import BATCH, RETRIED, ApiError, Client, image_item, retry_after
from .types import (
    ClassValue,
    CreatedItem,
    ImageItem,
    Item,
    ItemState,
    LabelRow,
    Metrics,
    TextItem,
    UrlItem,
    VectorItem,
)

__all__ = ["BATCH", "RETRIED", "ApiError", "ClassValue", "Client", "CreatedItem", "ImageItem", "Item",
           "ItemState", "LabelRow", "Metrics", "TextItem", "UrlItem", "VectorItem", "image_item",
           "retry_after"]
