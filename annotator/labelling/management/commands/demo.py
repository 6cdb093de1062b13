"""``python manage.py demo``: create the demo users and the "OCR digits" project (idempotent)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.projects.demo import USERS, create_demo


class Command(BaseCommand):
    help = "Create the OCR digits demo project and the demo logins (does nothing if they exist)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--items", type=int, default=None, help="number of digits (default: all 1797)")

    def handle(self, *args: Any, **options: Any) -> None:
        project, created = create_demo(options["items"])
        if created:
            update_project(project.pk)  # decide the first items so the queue is ready at once
            self.stdout.write(f"created project {project.name!r} with {project.items.count()} items")
        else:
            self.stdout.write(f"project {project.name!r} exists; nothing to do")
        for username, (password, staff, _) in USERS.items():
            role = "admin" if staff else "annotator"
            self.stdout.write(f"demo {role} login: {username} / {password}")
