"""``python manage.py export_model <project> <path.npz>``: write the model file and its card."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.labelling.management.arguments import project_arg
from annotator.labelling.reporting.export import export_model


class Command(BaseCommand):
    help = "Export a project's current model (.npz, no pickle) and its JSON card (same name, .json)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="project id or name")
        parser.add_argument("path", help="output file, ending in .npz")

    def handle(self, *args: Any, **options: Any) -> None:
        project = project_arg(options["project"])
        try:
            card = export_model(project, options["path"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"wrote {options['path']} (model version {card['model_version']}, "
                          f"{card['labels_used']} labels; predicts with the {card['model']['used']} "
                          f"model: {card['model']['why']})")
