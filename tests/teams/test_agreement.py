"""Inter-annotator agreement: Cohen's kappa and Krippendorff's alpha against
hand-computed and published tables, the undefined cases, and the opinions read from the database."""

from __future__ import annotations

import pytest

from annotator.labelling.annotation.actions import undo_last_label
from annotator.labelling.models import Item
from annotator.labelling.teams.agreement import (
    Agreement,
    cohen_kappa,
    krippendorff_alpha,
    pairwise_kappa,
    project_agreement,
)
from harness.chosen_labels import label_chosen
from tests.support.app import member, text_project


def table(rows: dict[str, list]) -> list[tuple[int, str, object]]:
    """Opinions from ``{annotator: [label of unit 0, unit 1, ...]}``, None = no opinion."""
    return [(unit, annotator, label) for annotator, labels in rows.items()
            for unit, label in enumerate(labels) if label is not None]


def test_cohen_kappa_of_the_textbook_two_by_two_table():
    """50 items: both yes 20, A yes B no 5, A no B yes 10, both no 15. p_o = 35/50 = 0.7,
    p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4."""
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    kappa = cohen_kappa(a, b)
    assert kappa.n_items == 50 and kappa.value == pytest.approx(0.4)


def test_kappa_and_alpha_of_a_hand_computed_four_item_table():
    """Units (a,a), (a,b), (b,b), (b,b). Kappa: p_o = 3/4, marginals A (2a, 2b), B (1a, 3b),
    p_e = (2*1 + 2*3) / 16 = 1/2, kappa = 1/2. Alpha: coincidences o_aa = 2, o_ab = o_ba = 1,
    o_bb = 4, n = 8, n_a = 3, n_b = 5: alpha = 1 - (n - 1) (o_ab + o_ba) / (2 n_a n_b)
    = 1 - 7 * 2 / 30 = 8/15."""
    opinions = table({"ann": ["a", "a", "b", "b"], "bob": ["a", "b", "b", "b"]})
    assert pairwise_kappa(opinions) == {("ann", "bob"): Agreement(pytest.approx(0.5), 4)}
    alpha = krippendorff_alpha(opinions)
    assert alpha.n_items == 4 and alpha.value == pytest.approx(8 / 15)


def test_alpha_of_krippendorffs_published_example_with_missing_opinions():
    """Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", nominal data with
    missing values: 4 observers, 12 units, alpha = 0.743. Unit 12 has one opinion: not counted."""
    opinions = table({
        "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    })
    alpha = krippendorff_alpha(opinions)
    assert alpha.n_items == 11 and alpha.value == pytest.approx(0.743, abs=5e-4)
    kappas = pairwise_kappa(opinions)
    assert sorted(kappas) == [("A", "B"), ("A", "C"), ("A", "D"), ("B", "C"), ("B", "D"), ("C", "D")]
    assert kappas["A", "B"].n_items == 9 and kappas["B", "D"].n_items == 10
    # A and D differ on unit 6 only: p_o = 8/9; marginals A (1: 3, 2: 3, 3: 2, 4: 1),
    # D (1: 2, 2: 3, 3: 2, 4: 2): p_e = (6 + 9 + 4 + 2) / 81, kappa = (72 - 21) / (81 - 21) = 0.85
    assert kappas["A", "D"] == Agreement(pytest.approx(0.85), 9)


def test_edge_cases_no_overlap_perfect_agreement_and_one_class_only():
    no_overlap = table({"ann": ["a", "b", None, None], "bob": [None, None, "a", "b"]})
    assert krippendorff_alpha(no_overlap) == Agreement(None, 0)
    assert pairwise_kappa(no_overlap) == {}
    assert cohen_kappa([], []) == Agreement(None, 0)

    perfect = table({"ann": ["a", "b", "c", "a"], "bob": ["a", "b", "c", "a"], "cid": ["a", "b", None, "a"]})
    assert krippendorff_alpha(perfect) == Agreement(1.0, 4)
    assert pairwise_kappa(perfect) == {("ann", "bob"): Agreement(1.0, 4), ("ann", "cid"): Agreement(1.0, 3),
                                       ("bob", "cid"): Agreement(1.0, 3)}

    one_class = table({"ann": ["a", "a", "a"], "bob": ["a", "a", "a"]})  # chance agreement 1: 0 / 0
    assert krippendorff_alpha(one_class) == Agreement(None, 3)
    assert pairwise_kappa(one_class) == {("ann", "bob"): Agreement(None, 3)}


def test_two_opinions_of_one_annotator_on_one_item_are_refused():
    with pytest.raises(ValueError, match="two opinions"):
        krippendorff_alpha([(1, "ann", "a"), (1, "ann", "b"), (1, "bob", "a")])


@pytest.mark.django_db
def test_project_agreement_reads_every_opinion_not_undone():
    """Primary and second opinions count, an undone label does not, nor an item one person labelled."""
    project = text_project(["t0", "t1", "t2", "t3", "t4"])
    items = list(Item.objects.filter(project=project).order_by("seq"))
    Item.objects.filter(project=project).update(status=Item.Status.QUEUED, queried=True)
    ann, bob = member(project, "ann"), member(project, "bob")
    ann_labels, bob_labels = ["ham", "ham", "spam", "spam"], ["ham", "spam", "spam", "spam"]
    for item, a, b in zip(items[:4], ann_labels, bob_labels, strict=True):
        label_chosen(project, item.pk, ann, a)
        label_chosen(project, item.pk, bob, b)
    label_chosen(project, items[4].pk, ann, "ham")
    label_chosen(project, items[4].pk, bob, "spam")
    undo_last_label(project, ann)  # item 4: bob's opinion only, not counted
    assert project_agreement(project) == {
        "alpha": {"value": pytest.approx(8 / 15), "n_items": 4},
        "pairs": [{"annotators": ["ann", "bob"], "kappa": pytest.approx(0.5), "n_items": 4}]}
