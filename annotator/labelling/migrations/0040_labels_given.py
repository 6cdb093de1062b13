"""The labels-given counter (models.LabelsGiven), filled with the labels already stored."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Count


def count_given(apps, schema_editor):
    """One row per project with labels: its opinions drawn here (undone and changed included)."""
    Label = apps.get_model("labelling", "Label")
    LabelsGiven = apps.get_model("labelling", "LabelsGiven")
    rows = (Label.objects.filter(kind="opinion", drawn=True).values("project_id")
            .annotate(n=Count("id")).values_list("project_id", "n"))
    LabelsGiven.objects.bulk_create([LabelsGiven(project_id=p, given=n) for p, n in rows], batch_size=1000)


class Migration(migrations.Migration):

    dependencies = [
        ('labelling', '0039_untaught_pipeline_error_undrawn_queried'),
    ]

    operations = [
        migrations.CreateModel(
            name='LabelsGiven',
            fields=[
                ('project', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='labels_given', serialize=False, to='labelling.project')),
                ('given', models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(count_given, migrations.RunPython.noop),
    ]
