"""The deskew + HOG image featurizer: deskewing, ink polarity, shape, bad inputs, and a linear
learner separating real MNIST digits better than on raw pixels."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from learners.features import DEFAULT, FeatureError, default_config, make_featurizer
from learners.features.image_hog import deskew
from tests.support import raw_data


def hog(**options):
    return make_featurizer({"kind": "image", "name": "deskew-hog", **options})


def slanted_bar(alpha: float) -> np.ndarray:
    """A 28x28 bright bar whose column drifts by ``alpha`` pixels per row (a slanted '1')."""
    image = np.zeros((28, 28))
    for r in range(4, 24):
        c = 14 + alpha * (r - 14)
        col = round(c)
        image[r, col - 1:col + 2] = 1.0
    return image


def ink_columns(image: np.ndarray) -> np.ndarray:
    """Centre of mass of each row that holds ink."""
    rows = [r for r in range(image.shape[0]) if image[r].sum() > 0.5]
    return np.array([(image[r] * np.arange(image.shape[1])).sum() / image[r].sum() for r in rows])


def test_deskew_straightens_a_slanted_stroke_and_centres_it():
    upright = deskew(slanted_bar(0.4))
    cols = ink_columns(upright)
    assert np.ptp(ink_columns(slanted_bar(0.4))) > 7  # it was slanted ...
    assert np.ptp(cols) < 1.5 and abs(cols.mean() - 13.5) < 1.0  # ... and now stands in the middle
    blank = np.zeros((28, 28))
    assert deskew(blank) is blank


def test_ink_polarity_is_found_from_the_border():
    digit = (slanted_bar(0.3) * 255).astype(np.uint8)
    light_ink = hog().transform_one(raw_data.png_bytes(digit)).toarray()
    dark_ink = hog().transform_one(raw_data.png_bytes(255 - digit)).toarray()
    np.testing.assert_allclose(dark_ink, light_ink, atol=1e-12)
    np.testing.assert_allclose(hog(ink="dark").transform_one(raw_data.png_bytes(255 - digit)).toarray(),
                               light_ink, atol=1e-12)
    assert not np.allclose(hog(ink="light").transform_one(raw_data.png_bytes(255 - digit)).toarray(),
                           light_ink)


def test_width_unit_norm_blank_rows_and_config():
    f = hog()
    assert f.n_features == 6 * 6 * 4 * 9 and DEFAULT["image"] == "deskew-hog"
    row = f.transform_one(raw_data.png_bytes((slanted_bar(0.0) * 255).astype(np.uint8), scale=3))
    assert row.shape == (1, 1296) and np.linalg.norm(row.toarray()) == pytest.approx(1.0)
    assert f.transform_one(raw_data.png_bytes(np.zeros((28, 28), np.uint8))).nnz == 0
    assert hog(size=16, cell=4, orientations=8).n_features == 3 * 3 * 4 * 8
    assert make_featurizer(f.config()).config() == f.config()


def test_a_new_project_gets_rows_of_norm_1_25_and_stored_configs_keep_unit_rows():
    """A new project's config says norm 1.25 (module docstring); a stored config without the
    option means 1, so its rows stay what they were, bit for bit."""
    config = default_config("image", "deskew-hog")
    assert config["norm"] == 1.25
    digits = [raw_data.png_bytes((slanted_bar(a) * 255).astype(np.uint8)) for a in (0.0, 0.3, -0.2)]
    new, stored = make_featurizer(config).transform(digits), hog().transform(digits)
    np.testing.assert_allclose(np.linalg.norm(new.toarray(), axis=1), 1.25)
    np.testing.assert_allclose(new.toarray(), 1.25 * stored.toarray(), rtol=1e-12)
    assert np.array_equal(hog(norm=1.0).transform(digits).toarray(), stored.toarray())
    assert make_featurizer(config).transform_one(raw_data.png_bytes(np.zeros((28, 28), np.uint8))).nnz == 0


@pytest.mark.parametrize("options,needle", [
    ({"size": 8, "cell": 8}, "holds 1 cell(s) of 8 pixels"),
    ({"ink": "grey"}, "ink must be one of 'auto', 'light', 'dark'"),
    ({"size": 4}, "size must be an integer >= 8"),
    ({"norm": 0}, "norm must be"),
])
def test_bad_options_name_the_problem(options, needle):
    with pytest.raises(ValueError) as info:
        hog(**options)
    assert needle in str(info.value)


@pytest.mark.parametrize("raw,needle", [
    (b"", "image is empty"),
    (b"%PDF-1.4 hello", "the format is not recognised"),
    ("digit.png", "must be bytes (the file's content), got str"),
])
def test_bad_items_are_feature_errors(raw, needle):
    with pytest.raises(FeatureError) as info:
        hog().transform([raw_data.png_bytes(np.zeros((28, 28), np.uint8)), raw])
    assert str(info.value).startswith("item 1: ") and needle in str(info.value)


@pytest.mark.datasets
def test_a_linear_learner_separates_mnist_digits_far_better_than_on_pixels():
    images, labels = raw_data.mnist(1500)
    pngs = [raw_data.png_bytes(im) for im in images]
    accuracy = {}
    for name in ("pixels", "deskew-hog"):
        X = make_featurizer({"kind": "image", "name": name}).transform(pngs)
        lrn = learners.make("mpaa-i", n_features=X.shape[1], classes=list(range(10)))
        for i in range(1000):
            lrn.learn(X[i], int(labels[i]))
        accuracy[name] = float(np.mean(lrn.predict(X[1000:]) == labels[1000:]))
    assert accuracy["deskew-hog"] > 0.88 and accuracy["deskew-hog"] > accuracy["pixels"] + 0.05, accuracy
