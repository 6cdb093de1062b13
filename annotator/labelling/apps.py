from django.apps import AppConfig


class LabellingConfig(AppConfig):
    name = "annotator.labelling"
    verbose_name = "Labelling"
