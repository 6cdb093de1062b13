"""Per-class running totals (``gold_cells``, ``iw_cells``, ``iw_auto``, docs/estimates.md) and the
stop rule's project settings.

The stored aggregates are dropped: :func:`annotator.labelling.engine.running_totals.load` (and
the metrics' ``aggregates``) rebuild a project's from its decision log the first time it is read,
so the per-class sums and the checkpoints' snapshots cover the whole log.
"""

import django.core.validators
from django.db import migrations, models


def drop_aggregates(apps, schema_editor):
    apps.get_model("labelling", "StreamStats").objects.all().delete()


class Migration(migrations.Migration):

    dependencies = [
        ("labelling", "0022_class_descriptions"),
    ]

    operations = [
        migrations.AddField(
            model_name="streamstats", name="gold_cells",
            field=models.JSONField(default=dict, help_text="decided items with a gold class per (gold, prediction): {json [str(gold), str(prediction)]: count}"),
        ),
        migrations.AddField(
            model_name="streamstats", name="iw_cells",
            field=models.JSONField(default=dict, help_text="labelled queried items of the covered prefix per (label, prediction): {json [str(label), str(prediction)]: [m, sum 1/q, sum (1-q)/q^2]} (docs/estimates.md)"),
        ),
        migrations.AddField(
            model_name="streamstats", name="iw_auto",
            field=models.JSONField(default=dict, help_text="items of the covered prefix decided without a query per predicted class ({str(class): count})"),
        ),
        migrations.AddField(
            model_name="project", name="quality_target",
            field=models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0.5), django.core.validators.MaxValueValidator(0.9999)], help_text='the share of the model\'s own labels that must be correct, e.g. 0.97 (None = no target; docs/estimates.md, "Stop rule")'),
        ),
        migrations.AddField(
            model_name="project", name="quality_confidence",
            field=models.FloatField(default=0.95, validators=[django.core.validators.MinValueValidator(0.5), django.core.validators.MaxValueValidator(0.999)], help_text="confidence with which the target must hold (the interval's level)"),
        ),
        migrations.AddField(
            model_name="project", name="stop_at_target",
            field=models.BooleanField(default=False, help_text="stop asking people while the target holds (and resume when it no longer does)"),
        ),
        migrations.AddField(
            model_name="project", name="asking_stopped",
            field=models.BooleanField(default=False, help_text="set by the workers: the stop rule holds and the stream asks nobody"),
        ),
        migrations.AddField(
            model_name="project", name="stopped_from_seq",
            field=models.BigIntegerField(blank=True, null=True, help_text="set by the workers: the first item of the stop rule's last pause (None while the rule is off or never held)"),
        ),
        migrations.AddField(
            model_name="project", name="suspect_threshold",
            field=models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0.5), django.core.validators.MaxValueValidator(1.0)], help_text="labels whose probability of being wrong is at least this go to the reviewers on their own (None = only by hand; docs/estimates.md)"),
        ),
        migrations.AlterField(
            model_name="review", name="reason",
            field=models.CharField(choices=[("disagreement", "Disagreement"), ("audit", "Audit"), ("suspect", "Suspect")], max_length=12),
        ),
        migrations.RunPython(drop_aggregates, migrations.RunPython.noop),
    ]
