"""``python manage.py simulate <project>``: an oracle answers every query with the gold label."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.labelling.management.arguments import project_arg
from annotator.labelling.reporting.metrics import project_metrics
from annotator.labelling.reporting.simulation import simulate


class Command(BaseCommand):
    help = "Replay a project's items inside the app, an oracle answering queries from the gold labels."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="project id or name")
        parser.add_argument("--max-labels", type=int, default=None, help="stop after this many labels")

    def handle(self, *args: Any, **options: Any) -> None:
        project = project_arg(options["project"])
        try:
            given = simulate(project, options["max_labels"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{given} labels given by the oracle")
        self.stdout.write(json.dumps(project_metrics(project), indent=2))
