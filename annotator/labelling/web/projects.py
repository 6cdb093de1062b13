"""Project list, item images, uploads and exports. Every view needs a logged-in user; project
views check membership (403 otherwise). The queue is :mod:`.queue`, the console
:mod:`.console`, the dashboard :mod:`.dashboard`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from annotator.labelling.ingest import RepeatedUploadError, import_notes, new_job, refused_item_note
from annotator.labelling.ingest.upload_file import PART_BYTES
from annotator.labelling.models import ImportJob, Item, Project
from annotator.labelling.projects.access import (
    is_project_admin,
    may_review,
    project_for,
    sees_items,
    visible_projects,
)
from annotator.labelling.reporting import export, label_formats
from annotator.labelling.reporting.dashboard import waiting_for
from annotator.labelling.worker.send import import_upload
from learners.uploads import CHECKED_RECORDS, GZIP, formats_for, suffixes_for
from learners.uploads.columns import CONTENT_COLUMNS, GOLD_KEYS
from learners.uploads.image_zip import IMAGE_SUFFIXES, MANIFEST
from learners.uploads.svmlight import FIRST_INDEX
from learners.uploads.tabular import content_keys

from .forms import UploadForm
from .request import AppRequest, image_type


@login_required
@require_GET
def project_list(request: AppRequest) -> HttpResponse:
    """My projects with the number of items waiting as my queue shows it (:func:`.dashboard.waiting_for`;
    and console links for the ones I manage,
    review links for the ones I review, item-browser links where I may browse: :func:`.access.sees_items`)."""
    rows = [(p, waiting_for(p, request.user), is_project_admin(request.user, p), may_review(request.user, p),
             sees_items(request.user, p))
            for p in visible_projects(request.user)]
    return render(request, "labelling/project_list.html", {"rows": rows})


@login_required
@require_GET
def item_image(request: AppRequest, pk: int, item_pk: int) -> HttpResponse:
    """The raw image of an item (members only)."""
    project = project_for(request.user, pk)
    item = get_object_or_404(Item.objects.only("data", "filename", "project"), pk=item_pk, project=project)
    if item.data is None:
        return HttpResponse("this item has no image", status=404, content_type="text/plain")
    response = HttpResponse(bytes(item.data), content_type=image_type(item.filename))
    response["Cache-Control"] = "private, max-age=3600"
    return response


@login_required
def upload(request: AppRequest, pk: int) -> HttpResponse:
    """Project admins upload a file; a worker imports it (the page shows the job's progress).
    409, nothing stored, when the same file was imported recently and "import again" is not ticked
    (:func:`..ingest.new_job`): the form names the earlier import and shows the box."""
    project = project_for(request.user, pk, admin=True)
    form = (UploadForm(request.POST, request.FILES, project=project) if request.method == "POST"
            else UploadForm(project=project))
    help_ = upload_help(project)
    suffixes = help_["suffixes"] + [s + help_["gzip"] for s in help_["suffixes"]]
    # set before validation: a bound field copies its help text when the errors are computed
    form.fields["file"].widget.attrs.update({"id": "upload-file", "accept": ",".join(suffixes)})
    form.fields["file"].help_text = (f"Accepted here: {formats_for(project.item_kind)}. Its first "
                                     f"{CHECKED_RECORDS} records are checked on upload; then the whole "
                                     f"file is checked first; one bad row rejects it and names the line, "
                                     f"and nothing is stored. {refused_item_note(project.item_kind)}")
    repeat_of = None
    if request.method == "POST" and form.is_valid():
        f = form.cleaned_data["file"]
        try:
            with transaction.atomic():  # read by parts: never held whole
                job = new_job(project, Path(f.name).name, f.chunks(PART_BYTES), request.user,
                              again=form.cleaned_data["again"])
                import_upload(job.pk)
        except RepeatedUploadError as exc:
            form.add_error("file", f"{Path(f.name).name}: {exc}; to import it again anyway, tick "
                                   "'import again' and upload it once more.")
            repeat_of = exc.earlier
        else:
            messages.success(request, f"{job.filename} uploaded: a worker imports it (progress below).")
            return redirect("import-job", pk=project.pk, job_pk=job.pk)
    if repeat_of is None:  # the "import again" box: only once a repeated upload was refused
        form.fields.pop("again")
    context = {"project": project, "form": form, "formats": formats_for(project.item_kind), "help": help_,
               "jobs": project.imports.all()[:10], "repeat_of": repeat_of}
    status = 409 if repeat_of is not None else 400 if form.errors else 200
    return render(request, "labelling/upload.html", context, status=status)


def upload_help(project: Project) -> dict[str, Any]:
    """What the upload page tells about the files this project takes, from the parsers' own
    definitions (column names, archive layout, index base), with examples in its classes."""
    first, second = project.classes[:2]  # a project has two classes at least
    kind = project.item_kind
    out: dict[str, Any] = {"kind": kind, "suffixes": suffixes_for(kind),
                           "parquet_column": CONTENT_COLUMNS[kind][0], "gzip": GZIP, "gold_keys": GOLD_KEYS,
                           "first": first, "second": second}
    if kind in ("text", "url"):
        key = content_keys(kind)[0]
        sample = ("https://example.com/login", "paypa1-login.example/verify") if kind == "url" \
            else ("see you at the station", "win a free prize now")
        out.update(keys=content_keys(kind), csv=f"{key},{GOLD_KEYS[0]}\n{sample[0]},{first}\n{sample[1]},\n",
                   jsonl=(json.dumps({key: sample[0], GOLD_KEYS[0]: first}) + "\n"
                          + json.dumps({key: sample[1]}) + "\n"),
                   label_studio=json.dumps([
                       {"id": 1, "data": {key: sample[0]}, "annotations": [
                           {"completed_by": {"email": "alice@example.com"}, "result": [
                               {"from_name": "label", "to_name": key, "type": "choices",
                                "value": {"choices": [str(first)]}}]}]},
                       {"id": 2, "data": {key: sample[1]}}], indent=1))
    elif kind == "image":
        out.update(manifest=MANIFEST, images=", ".join(IMAGE_SUFFIXES),
                   folders=(f"items.zip\n├── {first}/img001.png\n├── {first}/img002.png\n"
                            f"└── {second}/img003.png\n"),
                   listed=(f"items.zip\n├── {MANIFEST}\n├── img001.png\n└── img002.png\n\n"
                           f"{MANIFEST}:\nfilename,label\nimg001.png,{first}\nimg002.png,\n"))
    else:
        numeric = all(isinstance(c, int | float) for c in (first, second))
        a, b = (first, second) if numeric else ("-1", "+1")  # two classes: -1 / +1, in class order
        n_features = project.featurizer().n_features
        out.update(first_index=FIRST_INDEX, numeric=numeric, n_features=n_features,
                   last_index=n_features - 1 + FIRST_INDEX,
                   libsvm=f"{a} {FIRST_INDEX}:0.5 7:1.25\n{b} 3:2.0 12:-1\n")
    return out


@login_required
@require_GET
def import_job(request: AppRequest, pk: int, job_pk: int) -> HttpResponse:
    project = project_for(request.user, pk, admin=True)
    job = get_object_or_404(ImportJob, pk=job_pk, project=project)
    return render(request, "labelling/import_job.html",
                  {"project": project, "job": job, "notes": import_notes(job, project.item_kind)})


@login_required
@require_GET
def export_model(request: AppRequest, pk: int, what: str) -> HttpResponse:
    """``what`` = ``npz`` (the model file) or ``json`` (its card). Project admins only."""
    project = project_for(request.user, pk, admin=True)
    data, card = export.model_download(project)
    if what == "npz":
        response = HttpResponse(data, content_type="application/octet-stream")
    else:
        response = HttpResponse(json.dumps(card, indent=2), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="project-{project.pk}.{what}"'
    return response


@login_required
@require_GET
def export_table(request: AppRequest, pk: int, table: str, fmt: str) -> HttpResponse | StreamingHttpResponse:
    """The project's ``labels`` or ``opinions`` (:data:`.export.TABLES`) as ``csv`` or ``jsonl``;
    the labels also as ``parquet`` or ``prodigy`` (JSONL tasks, :mod:`.label_formats`); the
    labels are the standing ones, with ``?undone=include`` the undone ones too.
    Project admins only; 400 for a bad ``undone`` value and for Prodigy tasks of a vectors
    project or with the undone labels."""
    project = project_for(request.user, pk, admin=True)
    try:
        body = label_formats.table_stream(project, table, fmt, request.GET.dict())
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain")
    response = StreamingHttpResponse(body, content_type=label_formats.CONTENT_TYPES[fmt])
    suffix = label_formats.SUFFIXES[fmt]
    response["Content-Disposition"] = f'attachment; filename="{table}-{project.pk}.{suffix}"'
    return response
