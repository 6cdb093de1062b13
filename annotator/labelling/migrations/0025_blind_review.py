"""Blind review: a project setting that hides the annotators' names from its reviewers
(docs/teams.md, "Review")."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("labelling", "0019_pin_dada_smoothing"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="blind_review",
            field=models.BooleanField(default=False, help_text="reviewers do not see who gave each label"),
        ),
    ]
