"""Class descriptions (docs/algorithms/cold_start.md): set on the new-project page and in the
console, refused with a clear message when bad, and the learner of a new text project starts
from them."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from annotator.labelling.engine.learner_state import stored_learner
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, LearnerState, Membership, Project, ProjectChange
from tests.support.app import SPAM, digits_project, member, text_project
from tests.support.html import error_text

pytestmark = pytest.mark.django_db
DESCRIBED = {"ham": "a personal message to a friend or family: plans, meeting, coming home",
             "spam": "an advert: win a free prize, claim a cash reward, urgent offer"}


def first_predictions(project: Project) -> list[str]:
    update_project(project.pk)
    return list(Item.objects.filter(project=project).order_by("seq").values_list("prediction", flat=True))


def test_a_class_description_changes_the_first_decisions_of_a_new_text_project():
    plain = text_project(SPAM, params={"delta": 0.5}, look_ahead=100)
    described = text_project(SPAM, params={"delta": 0.5}, look_ahead=100, class_descriptions=DESCRIBED)
    # zero weights: every margin is 0, and sign(0) says the second class for every item
    assert first_predictions(plain) == ["spam"] * len(SPAM)
    # from the descriptions: the prize, the draw and the cash reward are spam, the rest ham
    assert first_predictions(described) == ["spam", "ham", "spam", "ham", "spam", "ham"]
    assert described.class_descriptions == DESCRIBED


def test_a_class_without_description_is_described_by_its_name():
    project = text_project(["hello"], class_descriptions={"spam": "an advert"})
    learner = project.new_learner(project.featurizer().n_features)
    assert project.class_descriptions == {"spam": "an advert"} and learner.w.any()


@pytest.mark.parametrize("descriptions,needle", [
    ("spam:", "the description of 'spam' is empty"),
    ("spam:   ", "the description of 'spam' is empty"),
    ("eggs: breakfast", "'eggs' is not one of the classes"),
    ("spam an advert", "line 1: write 'class: description'"),
    ("spam: an advert\nspam: a scam", "line 2: class 'spam' is described twice"),
    ("spam: " + "x" * 1001, "longer than 1000 characters"),
])
def test_bad_descriptions_are_refused_on_the_new_project_page(client, descriptions, needle):
    client.force_login(get_user_model().objects.create_user("staff", password="pw", is_staff=True))
    response = client.post("/projects/new", {"name": "described", "task": "binary", "item_kind": "text",
                                             "classes": "ham, spam", "class_descriptions": descriptions})
    assert response.status_code == 400 and needle in error_text(response.content)
    assert not Project.objects.filter(name="described").exists()


def test_the_new_project_page_stores_descriptions_for_text_only(client):
    client.force_login(get_user_model().objects.create_user("staff", password="pw", is_staff=True))
    response = client.post("/projects/new", {"name": "described", "task": "binary", "item_kind": "text",
                                             "classes": "ham, spam",
                                             "class_descriptions": "spam: an advert\n\nham:  a friend "})
    assert response.status_code == 302
    stored = Project.objects.get(name="described").class_descriptions
    assert stored == {"spam": "an advert", "ham": "a friend"}
    image = client.post("/projects/new", {"name": "digits", "task": "binary", "item_kind": "image",
                                          "classes": "0, 1", "class_descriptions": "0: zero"})
    assert image.status_code == 400 and "for text projects only" in error_text(image.content)
    assert not Project.objects.filter(name="digits").exists()


def test_the_console_changes_descriptions_and_the_learner_restarts_from_them(client):
    project = text_project(SPAM, look_ahead=100)
    update_project(project.pk)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    page = client.get(f"/projects/{project.pk}/console")
    assert page.status_code == 200 and 'id="descriptions-form"' in page.content.decode()
    for bad, needle in (("eggs: breakfast", "'eggs' is not one of the classes"),
                        ("ham:", "the description of 'ham' is empty")):
        response = client.post(f"/projects/{project.pk}/console", {"action": "descriptions",
                                                                   "class_descriptions": bad})
        assert response.status_code == 400 and needle in error_text(response.content)
    project.refresh_from_db()
    assert project.class_descriptions == {} and not LearnerState.objects.get(project=project).needs_rebuild
    text = "\n".join(f"{k}: {v}" for k, v in DESCRIBED.items())
    response = client.post(f"/projects/{project.pk}/console", {"action": "descriptions",
                                                               "class_descriptions": text}, follow=True)
    assert response.status_code == 200 and "Class descriptions saved" in response.content.decode()
    project.refresh_from_db()
    assert project.class_descriptions == DESCRIBED
    assert ProjectChange.objects.filter(project=project, field="class_descriptions").count() == 1
    assert LearnerState.objects.get(project=project).needs_rebuild
    update_project(project.pk)
    state = LearnerState.objects.get(project=project)
    stored = stored_learner(state)
    assert not state.needs_rebuild and stored.w.any()  # rebuilt: it starts from the descriptions
    np.testing.assert_array_equal(stored.w, project.new_learner(stored.n_features).w)


def test_image_projects_have_no_descriptions_form(client):
    project = digits_project(0)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    page = client.get(f"/projects/{project.pk}/console")
    assert 'id="descriptions-form"' not in page.content.decode()
    response = client.post(f"/projects/{project.pk}/console", {"action": "descriptions",
                                                               "class_descriptions": "0: zero"})
    assert response.status_code == 400 and "for text projects only" in error_text(response.content)
