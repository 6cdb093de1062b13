"""Text projects may describe their classes; the learner starts from the descriptions' prior
(learners.cold_start, docs/algorithms/cold_start.md). Existing projects get none: their
learners keep starting from zero weights."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("labelling", "0021_default_auto"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="class_descriptions",
            field=models.JSONField(
                blank=True, default=dict,
                help_text="text projects: a description per class (class -> text) the learner starts "
                "from instead of zero weights (docs/algorithms/cold_start.md); a class without one is "
                "described by its name, once any class has one"),
        ),
    ]
