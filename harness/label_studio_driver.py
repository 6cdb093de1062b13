"""Drives a Label Studio server through ``label-studio-sdk``; runs in Label Studio's own
virtualenv (started by :class:`harness.label_studio.Driver`), never imported by the app.

Reads one JSON command a line on stdin, ``{"op": ..., ...}``, and answers one JSON line on
stdout: ``{"ok": result}`` or ``{"error": message}``. Arguments: ``--url`` and ``--token`` of the
server (a legacy API token).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from label_studio_sdk.client import LabelStudio


def _choices(results: Any) -> list[str]:
    out = []
    for region in results or []:
        if isinstance(region, dict) and region.get("type") == "choices":
            out.extend(region["value"]["choices"])
    return out


def _as_dict(obj: Any) -> dict[str, Any]:
    return obj if isinstance(obj, dict) else obj.dict()


class Ops:
    """The commands: thin calls of the SDK returning plain JSON values."""

    def __init__(self, url: str, token: str) -> None:
        self.ls = LabelStudio(base_url=url, api_key=token)

    def create_project(self, title: str, label_config: str) -> int:
        return self.ls.projects.create(title=title, label_config=label_config).id

    def import_tasks(self, project: int, tasks: list[dict[str, Any]]) -> int:
        return self.ls.projects.import_tasks(id=project, request=tasks).task_count

    def list_tasks(self, project: int) -> list[dict[str, Any]]:
        out = []
        for task in self.ls.tasks.list(project=project, fields="all"):
            annotations = [_as_dict(a) for a in task.annotations or []]
            predictions = [_as_dict(p) for p in task.predictions or []]
            out.append({"id": task.id, "data": task.data,
                        "annotations": [_choices(a.get("result")) for a in annotations],
                        "predictions": [{"choices": _choices(p.get("result")), "score": p.get("score"),
                                         "model_version": p.get("model_version")} for p in predictions]})
        return out

    def add_ml_backend(self, project: int, url: str) -> int:
        return self.ls.ml.create(url=url, project=project, title="active annotator", is_interactive=False).id

    def predict_all(self, project: int) -> bool:
        """The Data Manager's "Retrieve predictions" action on every task (Label Studio then
        calls its ML backend's ``/predict``)."""
        self.ls.actions.create(id="retrieve_tasks_predictions", project=project,
                               selected_items={"all": True, "excluded": []})
        return True

    def annotate(self, task: int, choice: str, from_name: str, to_name: str) -> dict[str, Any]:
        """Create an annotation; the wall-clock time just before the call (``sent``) and after."""
        sent = time.time()
        made = self.ls.annotations.create(id=task, result=[
            {"from_name": from_name, "to_name": to_name, "type": "choices", "value": {"choices": [choice]}}])
        return {"id": made.id, "sent": sent, "answered": time.time()}

    def export_json(self, project: int) -> list[dict[str, Any]]:
        """The project's "Export -> JSON" file (every task), parsed: what a user downloads there."""
        body = b"".join(self.ls.projects.exports.download_sync(id=project, export_type="JSON",
                                                               download_all_tasks=True))
        return list(json.loads(body))

    def delete_annotation(self, annotation: int) -> bool:
        self.ls.annotations.delete(id=annotation)
        return True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    args = parser.parse_args()
    ops = Ops(args.url, args.token)
    print(json.dumps({"ok": "ready"}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        op = command.pop("op")
        try:
            answer = {"ok": getattr(ops, op)(**command)}
        except Exception as exc:  # every failure goes back to the caller, who raises it
            answer = {"error": f"{op}: {type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
