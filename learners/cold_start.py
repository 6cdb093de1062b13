"""Cold start from class descriptions: the weights a text learner starts from instead of zeros
(docs/algorithms/cold_start.md).

A text project may describe its classes in a few words ("spam": "an advert or a scam asking to
call or text a number", or just the class name). :func:`class_prior` turns the descriptions into
initial weights in the learner's own feature space: the featurizer's row of each class's text
(for ``minilm`` and the MiniLM block of ``minilm-ngrams`` / ``minilm-chars``, the sentence
embedding; the n-gram blocks get the description's own words), the intercept column left at 0,
the rows centred over the classes (a direction shared by every class changes no decision), times
:data:`PRIOR_SCALE`. A first item's class scores are then ``PRIOR_SCALE`` times the similarity
of its row to each description's row (a zero-shot nearest-description classifier), and the
learner's updates take over from there. Binary learners get the margin weights
``prior[1] - prior[0]`` (``classes[1]`` is the positive class).

A class without a description is described by its own name (``str(class)``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from .uploads.input_rules import checked_text

#: multiplies the description rows (docs/algorithms/cold_start.md, "Scale")
PRIOR_SCALE = 1.0
#: longest description accepted (characters)
MAX_DESCRIPTION = 1000
#: what a refused description is, in JSON's words (a form only ever gives text)
JSON_NAMES: dict[type, str] = {bool: "true or false", int: "a number", float: "a number", list: "a list",
                               dict: "an object", type(None): "null"}


def check_descriptions(descriptions: Any, classes: Sequence[Hashable]) -> dict[str, str]:
    """The descriptions keyed by the string form of their class, validated.

    descriptions: a mapping class -> text (keys matched to ``classes`` by value or string form,
    as a form or JSON gives them). Raises ValueError naming the problem: not a mapping, a class
    that does not exist, a description that is not text (a number, a list...), a text that is
    empty (after stripping), longer than :data:`MAX_DESCRIPTION` or that no database can store
    (:func:`learners.uploads.input_rules.checked_text`: a NUL character, a lone surrogate).
    """
    if not isinstance(descriptions, Mapping):
        raise ValueError("class descriptions must be an object mapping each class to a text")
    names = {str(c): c for c in classes}
    out: dict[str, str] = {}
    for key, text in descriptions.items():
        if str(key) not in names:
            raise ValueError(f"class descriptions: {key!r} is not one of the classes "
                             f"{list(classes)!r}")
        if not isinstance(text, str):
            got = JSON_NAMES.get(type(text), type(text).__name__)
            raise ValueError(f"class descriptions: the description of {key!r} must be text, got {got}")
        if not text.strip():
            raise ValueError(f"class descriptions: the description of {key!r} is empty")
        checked_text(text, f"class descriptions: the description of {key!r}")
        if len(text) > MAX_DESCRIPTION:
            raise ValueError(f"class descriptions: the description of {key!r} is longer than "
                             f"{MAX_DESCRIPTION} characters")
        out[str(key)] = text.strip()
    return out


def class_prior(featurizer: Any, classes: Sequence[Hashable], descriptions: Mapping[str, str],
                binary: bool, scale: float = PRIOR_SCALE) -> np.ndarray:
    """Initial weights from class descriptions (module docstring).

    featurizer: the project's text featurizer (``transform`` of strings); descriptions: class
    (string form) -> text, as :func:`check_descriptions` returns. Returns float (n_features,)
    margin weights when ``binary``, else (len(classes), n_features) class weights.
    """
    texts = [descriptions.get(str(c), str(c)) for c in classes]
    rows = np.asarray(featurizer.transform(texts).toarray(), dtype=np.float64)
    intercept = getattr(featurizer, "intercept_columns", lambda: 0)()
    if intercept:
        rows[:, -intercept:] = 0.0
    rows = scale * (rows - rows.mean(axis=0))
    return rows[1] - rows[0] if binary else rows
