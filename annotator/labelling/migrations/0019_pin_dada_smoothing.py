"""Existing D-ADA / D-AMD projects keep the smoothing they ran with.

The binary learners' default ``smoothing`` moved from 1 to 0.5 (learners.dada.BINARY_SMOOTHING,
docs/algorithms/dada.md). A project's ``params`` are completed with the registry's defaults
(``Project.learner_params``), so a project that never named ``smoothing`` would see its
configuration change and its learner rebuilt with the new value at the next label. This pins
the old value, 1, in those projects' params: only new projects (and admins who choose it) get
the new default.
"""

from django.db import migrations

OLD_SMOOTHING = 1.0


def pin_smoothing(apps, schema_editor):
    Project = apps.get_model("labelling", "Project")
    for project in Project.objects.filter(algorithm__in=("d-ada", "d-amd")).iterator():
        params = project.params if isinstance(project.params, dict) else {}
        if "smoothing" not in params:
            project.params = {**params, "smoothing": OLD_SMOOTHING}
            project.save(update_fields=["params"])


class Migration(migrations.Migration):

    dependencies = [
        ('labelling', '0018_label_undone_index'),
    ]

    operations = [
        migrations.RunPython(pin_smoothing, migrations.RunPython.noop),
    ]
