from django.urls import path

from . import api, views

urlpatterns = [
    path("", views.project_list, name="project-list"),
    path("projects/<int:pk>/", views.queue, name="queue"),
    path("projects/<int:pk>/items/<int:item_pk>/label", views.label, name="label"),
    path("projects/<int:pk>/items/<int:item_pk>/image", views.item_image, name="item-image"),
    path("projects/<int:pk>/upload", views.upload, name="upload"),
    path("projects/<int:pk>/imports/<int:job_pk>/", views.import_job, name="import-job"),
    path("projects/<int:pk>/export/model.npz", views.export_model, {"what": "npz"}, name="export-model"),
    path("projects/<int:pk>/export/model.json", views.export_model, {"what": "json"}, name="export-card"),
    path("projects/<int:pk>/export/labels.csv", views.export_labels, {"fmt": "csv"},
         name="export-labels-csv"),
    path("projects/<int:pk>/export/labels.jsonl", views.export_labels, {"fmt": "jsonl"},
         name="export-labels-jsonl"),
    path("api/projects/<int:pk>/items", api.items, name="api-items"),
    path("api/projects/<int:pk>/metrics", api.metrics, name="api-metrics"),
]
