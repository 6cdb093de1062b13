"""The items the running totals' walk leaves out of the estimator's stream, per cause (relabelled,
in dispute, skipped, query probability 0), so that the estimates say why they do not reach an item
(docs/estimates.md, "What the estimates cover"). (The labels given are counted by migration
0040's counter, not from an index.)

``left_out`` is added NULL on the existing rows (their walk did not count it, nor did their
checkpoints): such aggregates are built again from the log on first use
(``engine/running_totals.outdated``); new rows get ``{}``."""

from django.db import migrations, models

HELP = ("items of the covered prefix (seq < frontier) outside the estimator's stream per cause "
        "({cause: count}, engine/decision_log.py LEFT_OUT_CAUSES)")


class Migration(migrations.Migration):

    dependencies = [
        ('labelling', '0037_lapsed_lease'),
    ]

    operations = [
        migrations.AddField(
            model_name='streamstats',
            name='left_out',
            field=models.JSONField(null=True, help_text=HELP),
        ),
        migrations.AlterField(
            model_name='streamstats',
            name='left_out',
            field=models.JSONField(default=dict, null=True, help_text=HELP),
        ),
    ]
