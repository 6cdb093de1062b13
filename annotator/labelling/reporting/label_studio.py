"""A project as Label Studio JSON tasks (docs/label_studio.md), and the labelling config that
opens them there.

One task per item, in arrival order, built from the dataset export's rows
(:func:`.dataset_export.dataset_rows`, streamed a page at a time):

* ``data``: ``text`` (text items), ``url`` (URL items, also shown as text) or ``image`` (an
  inline ``data:`` URI of the stored bytes); ``meta``: this app's ``item_id``, ``seq``, and the
  final label's ``provenance`` and ``annotator`` (Label Studio's ``completed_by`` must be one of its
  own users, so the person is kept in ``meta``);
* ``annotations``: the final label of a person (provenance ``human``, ``audited``, ``honeypot``)
  as one ``choices`` result;
* ``predictions``: the model's logged decision of every decided item (the label of the items it
  decided alone, its guess for the others), with ``model_version`` (``v<version>``) and
  ``score`` = the query probability it was decided with (sort by it to see the items the learner
  was least sure of).

Class values are written as strings (Label Studio's choices are strings); an integer class ``3``
reads back as ``"3"``, which this app's upload turns back into ``3``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any
from xml.sax.saxutils import quoteattr

from annotator.labelling.models import Item, Project

from .dataset_export import PAGE, dataset_rows

#: the control and object names of :func:`labeling_config` (the tasks' ``from_name`` / ``to_name``)
FROM_NAME = "label"
#: each item kind's ``data`` key, which is also the object's name
DATA_KEY = {"text": "text", "url": "url", "image": "image"}
#: final-label provenances that are a person's (exported as annotations)
HUMAN = ("human", "audited", "honeypot")
CONTENT_TYPE = "application/json"
_MAGIC = ((b"\x89PNG", "image/png"), (b"\xff\xd8", "image/jpeg"), (b"GIF8", "image/gif"),
          (b"RIFF", "image/webp"), (b"BM", "image/bmp"))


def data_key(project: Project) -> str:
    """The ``data`` key (and object name) of the project's items; ValueError for vector items."""
    try:
        return DATA_KEY[project.item_kind]
    except KeyError:
        raise ValueError("vector items have no Label Studio form; export text, URL or image projects") \
            from None


def labeling_config(project: Project) -> str:
    """The Label Studio labelling config of the project: its items and one ``<Choices>`` of its
    classes (the names the exported tasks and the ML backend's predictions use)."""
    key = data_key(project)
    tag = "Image" if key == "image" else "Text"
    shown = f'<{tag} name="{key}" value="${key}"/>'
    choices = "\n    ".join(f"<Choice value={quoteattr(str(c))}/>" for c in project.classes)
    return (f"<View>\n  {shown}\n  <Choices name=\"{FROM_NAME}\" toName=\"{key}\" choice=\"single\" "
            f"showInLine=\"true\">\n    {choices}\n  </Choices>\n</View>")


def _result(key: str, value: Any) -> list[dict[str, Any]]:
    return [{"from_name": FROM_NAME, "to_name": key, "type": "choices", "value": {"choices": [str(value)]}}]


def _data_uri(data: bytes) -> str:
    kind = next((t for magic, t in _MAGIC if data.startswith(magic)), "application/octet-stream")
    return f"data:{kind};base64," + base64.b64encode(data).decode("ascii")


def task_of(row: dict[str, Any], key: str, content: Any) -> dict[str, Any]:
    """The Label Studio task of one dataset row (module docstring)."""
    task: dict[str, Any] = {
        "data": {key: content},
        "meta": {"item_id": row["id"], "seq": row["seq"], "provenance": row["provenance"],
                 "annotator": row["annotator"] or row["reviewer"]},
        "annotations": [], "predictions": []}
    if row["provenance"] in HUMAN and row["label"] is not None:
        task["annotations"].append({"result": _result(key, row["label"]), "was_cancelled": False,
                                    "ground_truth": row["provenance"] == "honeypot"})
    if row["prediction"] is not None:
        task["predictions"].append({"model_version": f"v{row['model_version']}",
                                    "score": row["query_prob"], "result": _result(key, row["prediction"])})
    return task


def tasks(project: Project) -> Iterator[dict[str, Any]]:
    """Every item of ``project`` as a task, in arrival order (module docstring)."""
    key = data_key(project)
    page: list[dict[str, Any]] = []

    def flush() -> Iterator[dict[str, Any]]:
        images = (dict(Item.objects.filter(pk__in=[r["id"] for r in page]).values_list("pk", "data"))
                  if key == "image" else {})
        for row in page:
            content = _data_uri(bytes(images[row["id"]] or b"")) if key == "image" else row["item"]
            yield task_of(row, key, content)

    for row in dataset_rows(project):
        page.append(row)
        if len(page) >= PAGE:
            yield from flush()
            page = []
    yield from flush()


def tasks_json(project: Project) -> Iterator[str]:
    """:func:`tasks` as one JSON array, streamed a task at a time. ValueError (before the first
    chunk) for a project whose items Label Studio cannot show."""
    data_key(project)

    def chunks() -> Iterator[str]:
        yield "["
        for n, task in enumerate(tasks(project)):
            yield ("," if n else "") + "\n" + json.dumps(task)
        yield "\n]\n"
    return chunks()
