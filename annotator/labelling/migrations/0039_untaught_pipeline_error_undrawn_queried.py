"""Three records beside the learner state and the running totals (docs/operations.md):

* ``LearnerState.untaught``: labels the pipeline applied without teaching them (their item's
  vector was dropped by the retention sweep) instead of failing on them on every run;
* ``LearnerState.pipeline_error`` / ``pipeline_failed_at``: the last failure of the project's
  pipeline in a worker, which the dashboard shows its admins;
* ``StreamStats.undrawn_queried``: the applied primary labels not drawn by the query rule on
  queried items (an admin's relabel of a queued item), which the waiting count subtracts
  (engine/queue_counts.py); filled here from the labels of existing projects.
"""

from django.db import migrations, models


def count_undrawn_queried(apps, schema_editor):
    StreamStats = apps.get_model("labelling", "StreamStats")
    Label = apps.get_model("labelling", "Label")
    for stats in StreamStats.objects.all().only("pk", "project_id").iterator():
        n = Label.objects.filter(project_id=stats.project_id, primary=True, drawn=False,
                                 applied_version__isnull=False, item__queried=True).count()
        if n:
            StreamStats.objects.filter(pk=stats.pk).update(undrawn_queried=n)


class Migration(migrations.Migration):

    dependencies = [
        ('labelling', '0038_streamstats_left_out_label_given'),
    ]

    operations = [
        migrations.AddField(
            model_name='learnerstate',
            name='pipeline_error',
            field=models.CharField(blank=True, default='', help_text="why the project's last pipeline run failed (blank: it did not); cleared by the next run that succeeds", max_length=500),
        ),
        migrations.AddField(
            model_name='learnerstate',
            name='pipeline_failed_at',
            field=models.DateTimeField(blank=True, help_text="when the project's pipeline last failed", null=True),
        ),
        migrations.AddField(
            model_name='learnerstate',
            name='untaught',
            field=models.BigIntegerField(default=0, help_text="primary labels the pipeline applied without teaching them: their item's vector was gone (dropped by the retention sweep; docs/operations.md, Retention)"),
        ),
        migrations.AddField(
            model_name='streamstats',
            name='undrawn_queried',
            field=models.BigIntegerField(default=0, help_text="applied primary labels not drawn by the query rule on queried items (an admin's relabel of a queued or labelled item): items that wait no more, which ``labels`` leaves out"),
        ),
        migrations.RunPython(count_undrawn_queried, migrations.RunPython.noop),
    ]
