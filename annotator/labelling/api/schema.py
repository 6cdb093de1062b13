"""The JSON API's one declaration: the JSON Schemas its views validate bodies with, and the
OpenAPI 3.1 document generated from them and from the URL patterns.

* :func:`operation` attaches an operation (summary, parameters, request body, answers) to a
  view; :func:`openapi_document` walks the URL patterns and describes every view that has one
  (the path and its parameters come from the route, e.g. ``<int:pk>`` -> ``{pk}``, integer).
* :func:`validate_items_body` checks a ``POST .../items`` body against :func:`items_body`
  for the project's item kind, the same schema the document shows; its error names the item
  and the field (``item 3: 'text' must be a non-empty string``). A batch whose every item
  passes a compiled check of its kind (:data:`FAST_CHECKS`, each sufficient for the schema,
  never looser; ``tests/api/test_api_schema.py`` fuzzes that) is accepted without the generic
  validator, a third of the API's ingest CPU; any other body goes through
  ``jsonschema``, which gives the error. What a schema cannot say
  (the class values, what the featurizer accepts, text a database cannot store) is checked
  by the view afterwards.

Schemas are JSON Schema 2020-12 (what OpenAPI 3.1 uses), validated with ``jsonschema``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from annotator.labelling.models import WebhookEvent
from annotator.labelling.reporting.dataset_export import PROVENANCES
from learners.cold_start import MAX_DESCRIPTION
from learners.uploads.records import MAX_FILENAME_LENGTH

#: the key of an API item's content per item kind (text and URLs: as in CSV/JSONL uploads)
CONTENT_KEY = {"vectors": "vector", "image": "image_base64"}
ERROR = {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}},
         "description": "what was refused and why, naming the item and field"}
GOLD = {"type": ["string", "integer", "null"],
        "description": "the known class (one of the project's classes), or null"}
NONEMPTY = {"type": "string", "minLength": 1}
ITEM_SCHEMAS: dict[str, dict[str, Any]] = {
    "text": {"type": "object", "required": ["text"], "properties": {"text": NONEMPTY, "gold": GOLD}},
    "url": {"type": "object", "properties": {"url": NONEMPTY, "text": NONEMPTY, "gold": GOLD},
            "anyOf": [{"required": ["url"]}, {"required": ["text"]}]},
    "vectors": {"type": "object", "required": ["vector"], "properties": {
        "vector": {"type": "array", "description": "sparse vector: [index (0-based), value] pairs",
                   "items": {"type": "array", "minItems": 2, "maxItems": 2,
                             "prefixItems": [{"type": "integer", "minimum": 0}, {"type": "number"}]}},
        "gold": GOLD}},
    "image": {"type": "object", "required": ["image_base64"], "properties": {
        "image_base64": {"type": "string", "contentEncoding": "base64"},
        "filename": {"type": "string", "maxLength": MAX_FILENAME_LENGTH},
        "gold": GOLD}},
}
ITEM_STATE = {"type": "object", "required": ["id", "seq", "status"], "properties": {
    "id": {"type": "integer"}, "seq": {"type": "integer"}, "status": {"type": "string"},
    "prediction": {"description": "a class value, null until decided or when hidden"},
    "score": {"type": ["number", "null"]}, "query_prob": {"type": ["number", "null"]},
    "queried": {"type": ["boolean", "null"]}, "model_version": {"type": ["integer", "null"]}}}
CLASS_VALUE = {"type": ["string", "integer", "null"], "description": "a class value; null: none"}
WHEN = {"type": ["string", "null"], "description": "ISO 8601 time; null: none"}
DATASET_ROW = {
    "type": "object", "description": "one JSON Lines row (the CSV and Parquet columns are the same)",
    "required": ["id", "seq", "item", "label", "provenance"], "properties": {
    "id": {"type": "integer"}, "seq": {"type": "integer"},
    "item": {"description": "the text or URL, the image file name, or the vector's [index, value] pairs"},
    "label": CLASS_VALUE, "provenance": {"type": "string", "enum": list(PROVENANCES)},
    "labelled_at": WHEN, "annotator": {"type": ["string", "null"]},
    "method": {"type": ["string", "null"], "description": "human: majority, dawid-skene, adjudication or "
               "relabel (an admin); null: one annotator"},
    "drawn": {"type": ["boolean", "null"], "description": "human: false for an admin's relabel (not drawn by "
              "the query rule, left out of the importance-weighted estimates)"},
    "opinions": {"type": ["array", "null"], "description": "[annotator, class] of each standing opinion"},
    "reviewer": {"type": ["string", "null"]}, "prediction": CLASS_VALUE,
    "score": {"type": ["number", "null"]},
    "probability": {"type": ["number", "null"], "minimum": 0, "maximum": 1,
                    "description": "calibrated probability that the prediction is right (a Platt fit of "
                    "|score| on the query-drawn labels weighted by 1/q); null: not decided, or too few "
                    "labels to fit (docs/dataset.md)"},
    "probabilities": {"type": ["object", "null"], "additionalProperties": {"type": "number"},
                      "description": "{class as text: p}: the prediction gets probability, the other "
                      "classes share the rest equally (the calibrated confidence spread, not the learner's "
                      "own view of each class); JSON text in CSV and Parquet; null as probability, or when "
                      "the prediction is no longer a class"},
    "query_prob": {"type": ["number", "null"]},
    "queried": {"type": ["boolean", "null"]}, "model_version": {"type": ["integer", "null"]},
    "decided_at": WHEN, "gold": CLASS_VALUE, "status": {"type": "string"}}}
REVIEW = {"type": "object", "required": ["review_id", "item_id", "seq", "reason", "sample_prob",
                                          "model_label", "value", "decided_by", "decided_at"], "properties": {
    "review_id": {"type": "integer"}, "item_id": {"type": "integer"}, "seq": {"type": "integer"},
    "reason": {"type": "string", "enum": ["disagreement", "audit"]},
    "sample_prob": {"type": ["number", "null"], "description": "audits: the probability it was sampled with"},
    "model_label": {"description": "audits: the class the model gave the item alone; null otherwise"},
    "value": {"description": "the reviewer's final class; null while open"},
    "decided_by": {"type": ["string", "null"]},
    "decided_at": {"type": ["string", "null"], "format": "date-time"}}}
NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}
OPINION = {"type": "object", "required": ["label_id", "item_id", "seq", "annotator", "role", "kind", "label",
                                           "created", "primary", "undone_at", "overlap_k", "consensus",
                                           "consensus_status", "consensus_method", "consensus_by",
                                           "consensus_at"], "properties": {
    "label_id": {"type": "integer"}, "item_id": {"type": "integer"}, "seq": {"type": "integer"},
    "annotator": {"type": ["string", "null"], "description": "null: the user was deleted"},
    "role": {"type": ["string", "null"], "description": "membership role; null: none (staff, deleted)"},
    "label": {"description": "a class value"}, "created": {"type": "string", "format": "date-time"},
    "primary": {"type": "boolean", "description": "the label the learner uses"},
    "undone_at": {**NULLABLE_TIME, "description": "null: not undone"},
    "kind": {"enum": ["opinion", "adjudication"], "description": "adjudication: a reviewer's class "
             "that no annotator gave"},
    "overlap_k": {"type": "integer", "description": "distinct annotators the item needs (1: not overlapped)"},
    "consensus": {"description": "the item's consensus class; null: none yet, or disputed (majority vote)"},
    "consensus_status": {"enum": ["agreed", "majority", "disputed", "adjudicated", None]},
    "consensus_method": {"enum": ["majority", "dawid-skene", "adjudication", None]},
    "consensus_by": {"type": ["string", "null"], "description": "the reviewer who decided (adjudicated)"},
    "consensus_at": {**NULLABLE_TIME, "description": "when the consensus was last set"}}}
WEBHOOK_EVENTS = [e.value for e in WebhookEvent]
DELIVERY = {"type": "object", "required": ["id", "msg_id", "event", "status", "attempts"], "properties": {
    "id": {"type": "integer"}, "msg_id": {"type": "string", "description": "the webhook-id header"},
    "event": {"enum": WEBHOOK_EVENTS}, "status": {"enum": ["pending", "delivered", "failed"]},
    "attempts": {"type": "integer"}, "created": {"type": "string", "format": "date-time"},
    "next_attempt": NULLABLE_TIME, "last_status": {"type": ["integer", "null"]},
    "last_error": {"type": "string"}, "delivered_at": NULLABLE_TIME}}
WEBHOOK: dict[str, Any] = {
    "type": "object", "required": ["id", "url", "events", "deliveries"], "properties": {
    "id": {"type": "integer"}, "url": {"type": "string"},
    "events": {"type": "array", "items": {"enum": WEBHOOK_EVENTS}},
    "created": {"type": "string", "format": "date-time"},
    "deliveries": {"type": "array", "items": DELIVERY, "description": "the newest deliveries, newest first"}}}
WEBHOOK_BODY = {"type": "object", "required": ["url", "events"], "properties": {
    "url": {"type": "string", "description": "http(s) URL whose host is a public address (or allowed by "
            "WEBHOOK_ALLOWED_NETWORKS)"},
    "events": {"type": "array", "minItems": 1, "items": {"enum": WEBHOOK_EVENTS}}}}
#: a row of the labels export in JSON Lines (:data:`..reporting.export.LABEL_FIELDS`); the Prodigy
#: format's lines are Prodigy tasks (docs/formats.md)
DESCRIPTIONS = {"type": "object", "additionalProperties": {"type": "string", "minLength": 1,
                                                          "maxLength": MAX_DESCRIPTION},
                "description": "class (its string form) -> description; a class left out is described by "
                               "its name once any class has one; {} = none (docs/algorithms/cold_start.md)"}
CLASS_DESCRIPTIONS_BODY = {"type": "object", "required": ["descriptions"], "additionalProperties": False,
                           "properties": {"descriptions": DESCRIPTIONS}}
CLASS_DESCRIPTIONS = {"type": "object", "required": ["classes", "descriptions"], "properties": {
    "classes": {"type": "array", "items": {"type": ["string", "integer"]}},
    "descriptions": DESCRIPTIONS,
    "changed": {"type": "boolean", "description": "PUT only: whether they changed (the learner is then "
                                                  "rebuilt from them and the labels so far)"}}}
LABEL_ROW = {"type": "object", "required": ["item_id", "seq", "content", "label", "annotator", "kind",
                                            "seconds", "primary", "applied_version", "created", "undone_at"],
             "properties": {
    "item_id": {"type": "integer"}, "seq": {"type": "integer"},
    "content": {"type": "string",
                "description": "the text or URL, the image's file name, or a vector as JSON"},
    "label": {"description": "a class value"},
    "annotator": {"type": ["string", "null"], "description": "null: the user was deleted"},
    "seconds": {"type": ["number", "null"]}, "primary": {"type": "boolean"},
    "applied_version": {"type": ["integer", "null"], "description": "the model version that learnt it"},
    "created": {"type": "string", "format": "date-time"},
    "kind": {"enum": ["opinion", "adjudication", "honeypot"],
             "description": "an annotator's opinion, a reviewer's (or admin's) class no annotator "
                            "gave, or the answer to a honeypot"},
    "undone_at": {"type": ["string", "null"], "format": "date-time",
                  "description": "when the label was undone; null: it stands"}}}
#: answers every API operation may give besides its own
COMMON_ERRORS = {"400": "malformed request", "403": "no or wrong token (the same for a missing project), "
                 "or a member without the role asked for", "404": "no such project, or a session "
                 "that is not one of its members (the same answer), or no such item",
                 "405": "method not allowed", "411": "a body without Content-Length (chunked): refused "
                 "unread", "413": "request body too large", "429": "too many wrong tokens from this "
                 "address: wait Retry-After seconds and try again"}


def items_body(kind: str | None) -> dict[str, Any]:
    """Schema of a ``POST .../items`` body for projects of item ``kind`` (None: any kind)."""
    item = ITEM_SCHEMAS[kind] if kind else {"anyOf": list(ITEM_SCHEMAS.values())}
    return {"type": "object", "required": ["items"], "properties": {
        "items": {"type": "array", "minItems": 1, "maxItems": settings.API_MAX_BATCH, "items": item}}}


def _where(path: list[Any]) -> tuple[str, str]:
    """(``item N`` or ``the body``, the field below it as ``'name'[0][1]`` or "")."""
    if len(path) >= 2 and path[0] == "items" and isinstance(path[1], int):
        where, rest = f"item {path[1]}", path[2:]
    else:
        where, rest = "the body", path
    field = "".join(f"[{p}]" if isinstance(p, int) else f"{p!r}" if i == 0 else f"[{p!r}]"
                    for i, p in enumerate(rest))
    return where, field


def _phrase(error: ValidationError) -> str:
    """A short reason for ``error`` (never the offending value itself: it may be huge)."""
    kind, value, instance = error.validator, error.validator_value, error.instance
    if kind == "type":
        names = value if isinstance(value, list) else [value]
        return "expected " + " or ".join(("an " if n[0] in "aeiou" else "a ") + n for n in names)
    if kind == "required":
        missing = next((p for p in value if p not in instance), value[0])
        return f"no {missing!r} field"
    if kind == "anyOf" and all(set(s) == {"required"} for s in value):
        return "no " + " or ".join(repr(s["required"][0]) for s in value) + " field"
    if kind == "minLength" and value == 1:
        return "must be a non-empty string"
    if kind == "maxLength":
        return f"is {len(instance)} characters long, at most {value} allowed"
    if kind in ("minItems", "maxItems"):
        return f"needs {'at least' if kind == 'minItems' else 'at most'} {value} entries, got {len(instance)}"
    if kind == "minimum":
        return f"must be at least {value}"
    return error.message[:200]


# ------------------------------------------------------------- compiled checks of one item
# Each returns True only for an item that :data:`ITEM_SCHEMAS` accepts (exact types: JSON's
# true/false are Python bools, which JSON Schema's "integer" and "number" refuse; a float such
# as 1.0, which "integer" accepts, is left to the schema). False means "ask the schema", not
# "refused": the schema decides and words the error.
def _nonempty(entry: Mapping[str, Any], key: str) -> bool:
    value = entry[key]
    return type(value) is str and len(value) >= 1


def _gold_ok(entry: Mapping[str, Any]) -> bool:
    return "gold" not in entry or entry["gold"] is None or type(entry["gold"]) in (str, int)


def _text_ok(entry: Any) -> bool:
    return type(entry) is dict and "text" in entry and _nonempty(entry, "text") and _gold_ok(entry)


def _url_ok(entry: Any) -> bool:
    return (type(entry) is dict and ("url" in entry or "text" in entry)
            and ("url" not in entry or _nonempty(entry, "url"))
            and ("text" not in entry or _nonempty(entry, "text")) and _gold_ok(entry))


def _pair_ok(pair: Any) -> bool:
    return (type(pair) is list and len(pair) == 2 and type(pair[0]) is int and pair[0] >= 0
            and type(pair[1]) in (int, float))


def _vectors_ok(entry: Any) -> bool:
    return (type(entry) is dict and "vector" in entry and type(entry["vector"]) is list
            and all(_pair_ok(pair) for pair in entry["vector"]) and _gold_ok(entry))


def _image_ok(entry: Any) -> bool:
    # contentEncoding is an annotation in 2020-12 (not asserted): the view decodes the base64
    return (type(entry) is dict and "image_base64" in entry and type(entry["image_base64"]) is str
            and ("filename" not in entry or (type(entry["filename"]) is str
                                             and len(entry["filename"]) <= MAX_FILENAME_LENGTH))
            and _gold_ok(entry))


#: per item kind, a check sufficient for that kind's item schema (see above)
FAST_CHECKS: dict[str, Callable[[Any], bool]] = {
    "text": _text_ok, "url": _url_ok, "vectors": _vectors_ok, "image": _image_ok}


@lru_cache(maxsize=16)
def _validator(kind: str, max_batch: int) -> Draft202012Validator:
    """The schema's validator, built once per kind and batch limit (the limit is a setting)."""
    return Draft202012Validator(items_body(kind))


def validate_items_body(body: Any, kind: str) -> None:
    """ValueError naming the item and field when ``body`` does not match :func:`items_body`
    (the compiled checks first; the schema for anything they do not pass, module docstring)."""
    items = body.get("items") if type(body) is dict else None
    check = FAST_CHECKS[kind]
    if (type(items) is list and 1 <= len(items) <= settings.API_MAX_BATCH
            and all(check(entry) for entry in items)):
        return
    error = best_match(_validator(kind, settings.API_MAX_BATCH).iter_errors(body))
    if error is None:
        return
    path = list(error.absolute_path)
    if len(path) <= 1:  # the envelope itself
        items = body.get("items") if isinstance(body, dict) else None
        if error.validator == "maxItems" and isinstance(items, list):
            raise ValueError(f"at most {error.validator_value} items per request, got {len(items)}")
        raise ValueError(f"the body must be {{\"items\": [...]}} with at least one item "
                         f"and at most {settings.API_MAX_BATCH}")
    where, field = _where(path)
    raise ValueError(f"{where}: {field + ' ' if field else ''}{_phrase(error)}")


# ------------------------------------------------------------------------- the document
def operation(**methods: dict[str, Any]) -> Callable[[Any], Any]:
    """Attach OpenAPI operations (by lower-case method) to a view: each ``{"summary",
    "parameters", "body" (a schema, or a function of the item kind (None: any) giving it),
    "answers" ({status: (description, schema or None)}, or ``(description, None, {media type:
    schema})`` for an answer that is not JSON)}``."""
    def attach(view: Any) -> Any:
        view.openapi = methods
        return view
    return attach


def _patterns(resolver: URLResolver, prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            out += _patterns(p, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            out.append((prefix + str(p.pattern), p.callback))
    return out


ROUTE_PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")
CONVERTER_SCHEMA = {"int": {"type": "integer", "minimum": 0}, "str": {"type": "string"},
                    "slug": {"type": "string"}, None: {"type": "string"}}


def _json(schema: dict[str, Any] | None) -> dict[str, Any]:
    return {"application/json": {"schema": schema}} if schema is not None else {}


def _operation(spec: dict[str, Any], path_params: list[dict[str, Any]]) -> dict[str, Any]:
    answers = {**{k: (v, ERROR) for k, v in COMMON_ERRORS.items()},
               **{str(k): v for k, v in spec["answers"].items()}}
    out: dict[str, Any] = {
        "summary": spec["summary"], "parameters": path_params + spec.get("parameters", []),
        "responses": {str(code): {"description": answer[0], "content": (
                          {media: {"schema": s} for media, s in answer[2].items()} if len(answer) > 2
                          else _json(answer[1]))}
                      for code, answer in sorted(answers.items())},
        "security": [{"token": []}, {"session": []}],
    }
    if "body" in spec:
        body = spec["body"]
        out["requestBody"] = {"required": True, "content": _json(body(None) if callable(body) else body)}
    return out


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 description of every view that declares :func:`operation`."""
    paths: dict[str, Any] = {}
    for route, view in _patterns(get_resolver()):
        methods = getattr(view, "openapi", None)
        if not methods:
            continue
        params = [{"name": name, "in": "path", "required": True, "schema": CONVERTER_SCHEMA.get(conv)}
                  for conv, name in ROUTE_PARAM.findall(route)]
        path = "/" + ROUTE_PARAM.sub(lambda m: "{" + m.group(2) + "}", route)
        paths[path] = {method: _operation(spec, params) for method, spec in methods.items()}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Active annotator API", "version": "1",
                 "description": "Stream items into a project and read the learner's decisions. Generated "
                                "from the views' declarations (annotator/labelling/api/schema.py)."},
        "paths": paths,
        "components": {"securitySchemes": {
            "token": {"type": "apiKey", "in": "header", "name": "Authorization",
                      "description": "'Token <the project's API token>' (console page)"},
            "session": {"type": "apiKey", "in": "cookie", "name": "sessionid",
                        "description": "a logged-in member's session: reads only; every write needs "
                                       "the token"}}},
    }
