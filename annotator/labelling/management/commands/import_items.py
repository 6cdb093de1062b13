"""``python manage.py import_items <project> <file>``: import a file (CSV, JSONL, ZIP, LIBSVM,
each also gzipped) by the uploads' streamed path (:func:`..ingest.new_job` then
:func:`..ingest.run_job`): the file is read in parts and imported in chunks, memory flat in its
size; workers are asked to decide the new items as chunks arrive."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.labelling.ingest import RepeatedUploadError, import_notes, new_job, refused_item_note, run_job
from annotator.labelling.ingest.upload_file import PART_BYTES
from annotator.labelling.management.arguments import project_arg
from annotator.labelling.models import ImportJob
from annotator.labelling.worker import send


def _parts(fh: BinaryIO) -> Iterator[bytes]:
    """The file's content in pieces of at most :data:`PART_BYTES` (never whole)."""
    while chunk := fh.read(PART_BYTES):
        yield chunk


class Command(BaseCommand):
    help = ("Import items from a file into a project (a malformed row rejects the whole file, nothing "
            "stored). " + refused_item_note("image"))

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="project id or name")
        parser.add_argument("file", help="a .csv, .jsonl, .zip (images) or LIBSVM (.svm/.libsvm/.txt) file, "
                                         "each also .gz")
        parser.add_argument("--again", action="store_true",
                            help="import the file although the same file was imported in the last minutes "
                                 "(refused otherwise: its items would be stored twice; docs/uploads.md)")

    def handle(self, *args: Any, **options: Any) -> None:
        project = project_arg(options["project"])
        path = Path(options["file"])
        try:
            with path.open("rb") as fh:
                job = new_job(project, path.name, _parts(fh), again=options["again"])
        except OSError as exc:
            raise CommandError(f"{path}: {exc}") from None
        except RepeatedUploadError as exc:
            raise CommandError(f"{path}: {exc}; to import it again anyway, pass --again") from None
        done = run_job(job.pk, send.items_arriving(project.pk))
        if done is None or done.status != ImportJob.Status.DONE:
            status = "not run" if done is None else done.status
            raise CommandError(f"{path}: {done.error if done is not None and done.error else status}")
        send.items_changed(project.pk)
        self.stdout.write(f"imported {done.done} items into {project.name!r} (import job {done.pk})")
        for note in import_notes(done, project.item_kind):
            self.stdout.write(note)
