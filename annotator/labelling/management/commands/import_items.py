"""``python manage.py import_items <project> <file>``: import a file (CSV, JSONL, ZIP, LIBSVM)
all-or-nothing, then ask a worker to start deciding the new items."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import enqueue
from ...ingest import IngestError, import_records, parse_upload
from ..arguments import project_arg


class Command(BaseCommand):
    help = "Import items from a file into a project (a malformed row rejects the whole file)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="project id or name")
        parser.add_argument("file", help="a .csv, .jsonl, .zip (images) or LIBSVM (.svm/.libsvm/.txt) file")

    def handle(self, *args: Any, **options: Any) -> None:
        project = project_arg(options["project"])
        path = Path(options["file"])
        try:
            items = import_records(project, parse_upload(project, path.name, path.read_bytes()))
        except (IngestError, OSError) as exc:
            raise CommandError(f"{path}: {exc}") from None
        enqueue.items_changed(project.pk)
        self.stdout.write(f"imported {len(items)} items into {project.name!r} "
                          f"(seq {items[0].seq}..{items[-1].seq})")
