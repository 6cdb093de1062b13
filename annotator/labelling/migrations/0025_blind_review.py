"""Blind review: a project setting that hides the annotators' names from its reviewers
(docs/teams.md, "Review")."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("labelling", "0023_per_class_estimates_stop_rule"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="blind_review",
            field=models.BooleanField(default=False, help_text="reviewers do not see who gave each label"),
        ),
    ]
