from django.urls import path

from . import api, console_views, dashboard_views, planner_views, queue_views, views

urlpatterns = [
    path("", views.project_list, name="project-list"),
    path("projects/new", console_views.new_project, name="new-project"),
    path("projects/<int:pk>/", queue_views.queue, name="queue"),
    path("projects/<int:pk>/next", queue_views.next_item, name="queue-next"),
    path("projects/<int:pk>/undo", queue_views.undo, name="undo"),
    path("projects/<int:pk>/items/<int:item_pk>/label", queue_views.label, name="label"),
    path("projects/<int:pk>/items/<int:item_pk>/skip", queue_views.skip, name="skip"),
    path("projects/<int:pk>/console", console_views.console, name="console"),
    path("projects/<int:pk>/console/params", console_views.console_params, name="console-params"),
    path("projects/<int:pk>/planner", planner_views.planner, name="planner"),
    path("projects/<int:pk>/planner/<int:run_pk>", planner_views.planner_run, name="planner-run"),
    path("projects/<int:pk>/planner/<int:run_pk>/use/<int:index>", planner_views.planner_use,
         name="planner-use"),
    path("projects/<int:pk>/dashboard", dashboard_views.dashboard, name="dashboard"),
    path("projects/<int:pk>/dashboard/panel", dashboard_views.dashboard_panel, name="dashboard-panel"),
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
    path("api/openapi.json", api.openapi, name="api-openapi"),
]
