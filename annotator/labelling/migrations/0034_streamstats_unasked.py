"""The items nobody could be asked about (query probability 0) per cause, beside the running
totals: what the estimates do not cover (docs/estimates.md, "What the estimates cover"). The log
keeps no cause, so the items a project decided before this count as ``unrecorded``."""

from django.db import migrations, models


def count_unasked(apps, schema_editor):
    StreamStats = apps.get_model("labelling", "StreamStats")
    Item = apps.get_model("labelling", "Item")
    for stats in StreamStats.objects.all().only("pk", "project_id").iterator():
        n = Item.objects.filter(project_id=stats.project_id, query_prob=0).count()
        if n:
            StreamStats.objects.filter(pk=stats.pk).update(unasked={"unrecorded": n})


class Migration(migrations.Migration):

    dependencies = [
        ('labelling', '0033_disagreement_reviews_follow_consensus'),
    ]

    operations = [
        migrations.AddField(
            model_name='streamstats',
            name='unasked',
            field=models.JSONField(default=dict, help_text='decided items logged with query probability 0 (nobody could be asked; outside the estimates) per cause ({cause: count}, engine/decision_log.py UNASKED_CAUSES)'),
        ),
        migrations.RunPython(count_unasked, migrations.RunPython.noop),
    ]
