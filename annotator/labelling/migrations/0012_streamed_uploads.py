# An upload is stored in parts (UploadPart) instead of one ImportJob.data value.

import django.db.models.deletion
from django.db import migrations, models


def data_to_parts(apps, schema_editor):
    """A job still waiting keeps its file: its data becomes its one part (the reader only needs
    every part but the last to be full, so one part of any size is valid)."""
    ImportJob = apps.get_model("labelling", "ImportJob")
    UploadPart = apps.get_model("labelling", "UploadPart")
    for job in ImportJob.objects.exclude(data=None).iterator():
        UploadPart.objects.create(job=job, index=0, data=bytes(job.data))
        ImportJob.objects.filter(pk=job.pk).update(size=len(job.data))


class Migration(migrations.Migration):

    dependencies = [
        ('labelling', '0011_stream_class_counts'),
    ]

    operations = [
        migrations.AddField(
            model_name='importjob',
            name='size',
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.CreateModel(
            name='UploadPart',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('index', models.PositiveIntegerField()),
                ('data', models.BinaryField()),
                ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='parts', to='labelling.importjob')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('job', 'index'), name='upload_part_order')],
            },
        ),
        migrations.RunPython(data_to_parts, migrations.RunPython.noop),
        migrations.RemoveField(
            model_name='importjob',
            name='data',
        ),
    ]
