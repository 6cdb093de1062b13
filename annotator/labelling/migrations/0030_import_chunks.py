"""Imports that fan out over the heavy queue's workers: an import's records staged in chunks
(docs/operations.md, "Imports")."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("labelling", "0028_webhooks_sso"),
    ]

    operations = [
        migrations.CreateModel(
            name="ImportChunk",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("index", models.PositiveIntegerField()),
                ("start", models.PositiveIntegerField(help_text="position of its first record in the file (0-based)")),
                ("count", models.PositiveIntegerField()),
                ("records", models.JSONField()),
                ("vectors", models.BinaryField(null=True)),
                ("job", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="chunks",
                                          to="labelling.importjob")),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("job", "index"), name="one_chunk_per_index")],
            },
        ),
    ]
