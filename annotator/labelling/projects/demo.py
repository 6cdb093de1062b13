"""The demo project: scikit-learn's bundled 8x8 digits as real PNG images (no download).

Each digit (pixel values 0..16) is drawn as dark ink on white paper and scaled up 8x with
nearest-neighbour to 64x64 so that people can read it; the image featurizer (16x16, box
resampling, inverted so ink is 1) recovers the original pixels exactly, 2x2 each.
"""

from __future__ import annotations

import io

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction
from PIL import Image

from annotator.labelling.ingest import Record, import_records
from annotator.labelling.models import Membership, Project

from .creation import create_project

NAME = "OCR digits"
SCALE = 8
USERS = {  # username -> (password, is_staff, project role); demo credentials only
    "admin": ("admin-demo", True, Membership.Role.ADMIN),
    "annotator": ("annotator-demo", False, Membership.Role.ANNOTATOR),
}


def digit_png(pixels: np.ndarray, scale: int = SCALE) -> bytes:
    """PNG bytes of one 8x8 digit (values 0..16): dark ink on white, scaled ``scale`` times."""
    gray = (255 - np.round(np.asarray(pixels, dtype=float) * (255 / 16))).astype(np.uint8)
    im = Image.fromarray(gray.reshape(8, 8), mode="L")
    im = im.resize((8 * scale, 8 * scale), Image.Resampling.NEAREST)
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def digit_records(n: int | None = None, seed: int = 0) -> list[Record]:
    """The digits (shuffled with ``seed``, first ``n``) as image records with gold labels."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    order = np.random.default_rng(seed).permutation(len(digits.target))[:n]
    return [Record(f"digit {i}", digit_png(digits.data[i]), int(digits.target[i]), f"digit-{i:04d}.png")
            for i in order]


def create_demo(n_items: int | None = None) -> tuple[Project, bool]:
    """Create the demo users and project (idempotent); returns ``(project, created)``."""
    User = get_user_model()
    with transaction.atomic():
        users = {}
        for username, (password, staff, _) in USERS.items():
            user, made = User.objects.get_or_create(username=username, defaults={"is_staff": staff,
                                                                                 "is_superuser": staff})
            if made:
                user.set_password(password)
                user.save()
            users[username] = user
        project = Project.objects.filter(name=NAME).first()
        if project is not None:
            return project, False
        project = create_project(
            name=NAME, task=Project.Task.MULTICLASS, item_kind=Project.Kind.IMAGE,
            classes=list(range(10)), algorithm="mpaa-i", params={"delta": 1.0, "C": 1.0},
            featurizer_config={"kind": "image", "width": 16, "height": 16, "invert": True},
            rng_seed=2024, dashboard_for_annotators=True)
        for username, (_, _, role) in USERS.items():
            Membership.objects.create(user=users[username], project=project, role=role)
        import_records(project, digit_records(n_items))
    return project, True
