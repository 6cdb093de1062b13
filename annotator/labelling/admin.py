"""Django admin for every model (raw bytes fields are hidden; they are not meant for editing)."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from annotator.labelling.models import (
    Consensus,
    ImportJob,
    Item,
    Label,
    LearnerState,
    Membership,
    Project,
)
from annotator.labelling.projects.creation import save_new_project
from annotator.labelling.projects.settings_changes import record_changes, snapshot


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("name", "task", "item_kind", "algorithm", "stream_state", "created")
    list_filter = ("task", "item_kind", "stream_state")
    inlines = [MembershipInline]

    def save_model(self, request: HttpRequest, obj: Project, form: Any, change: bool) -> None:
        """A new project goes through the one creation path (complete featurizer config, initial
        learner state); a change is recorded in the project history like the console's."""
        if not change:
            save_new_project(obj)
            return
        before = snapshot(Project.objects.get(pk=obj.pk))
        super().save_model(request, obj, form, change)
        record_changes(obj, request.user, before)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "project", "role")
    list_filter = ("role", "project")


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("project", "seq", "status", "prediction", "query_prob", "queried", "model_version",
                    "gold")
    list_filter = ("project", "status", "queried")
    exclude = ("data", "vector")
    raw_id_fields = ("lease_owner",)


@admin.register(Label)
class LabelAdmin(admin.ModelAdmin):
    list_display = ("item", "annotator", "kind", "value", "primary", "applied_version", "seconds", "created")
    list_filter = ("project", "primary", "kind")
    raw_id_fields = ("item",)


@admin.register(Consensus)
class ConsensusAdmin(admin.ModelAdmin):
    """Read only: a reviewer decides through :func:`.consensus.resolve`, which corrects the learner."""

    list_display = ("item", "value", "status", "method", "decided_by", "decided_at", "due")
    list_filter = ("project", "status")
    readonly_fields = ("item", "project", "value", "status", "method", "decided_by", "decided_at", "due")


@admin.register(LearnerState)
class LearnerStateAdmin(admin.ModelAdmin):
    list_display = ("project", "version", "revision", "n_decided", "n_queried", "updated_at")
    exclude = ("blob",)
    readonly_fields = ("version", "revision", "rng_state", "n_decided", "n_queried")


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ("project", "filename", "status", "done", "total", "created", "finished")
    list_filter = ("status",)
    exclude = ("data",)
