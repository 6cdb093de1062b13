"""``python manage.py export_dataset <project> <path> [--format csv|jsonl|parquet] [--provenance ...]
[--class ...] [--min-confidence X] [--max-confidence X] [--min-probability P] [--max-probability P]
[--since T] [--until T]``: write every item of the project with its final label, provenance and
calibrated probabilities (docs/dataset.md), streamed."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.labelling.management.arguments import project_arg
from annotator.labelling.reporting.dataset_export import FILTER_KEYS, FORMATS, dataset_stream, parse_filters


class Command(BaseCommand):
    help = "Export every item of a project with its final label and where it came from."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="project id or name")
        parser.add_argument("path", help="output file")
        parser.add_argument("--format", choices=FORMATS, default=None,
                            help="csv, jsonl or parquet (default: from the path's suffix, else jsonl)")
        for key in FILTER_KEYS:
            parser.add_argument(f"--{key.replace('_', '-')}", dest=f"filter_{key}", default="",
                                help=f"filter: {key} (as the API's query key)")

    def handle(self, *args: Any, **options: Any) -> None:
        project = project_arg(options["project"])
        path: str = options["path"]
        fmt = options["format"] or next((f for f in FORMATS if path.endswith("." + f)), "jsonl")
        query = {k: options[f"filter_{k}"] for k in FILTER_KEYS if options[f"filter_{k}"]}
        try:
            chunks = dataset_stream(project, fmt, parse_filters(project, query))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        size = 0
        with open(path, "wb") as out:
            for chunk in chunks:
                data = chunk.encode() if isinstance(chunk, str) else chunk
                out.write(data)
                size += len(data)
        self.stdout.write(f"wrote {path} ({fmt}, {size} bytes)")
