"""Featurizers: configs, shapes, sparsity, determinism, bad inputs, and real raw data."""

from __future__ import annotations

import io
import math
import struct
import zlib

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from sklearn.datasets import load_digits

import learners
from learners.features import (
    KINDS,
    FeatureError,
    Featurizer,
    default_config,
    featurizer_names,
    make_featurizer,
)
from learners.features.url import COUNT_NAMES, is_ip_literal, split_url, url_tokens
from tests.support import raw_data

# ----------------------------------------------------------------------------- helpers
GOOD = {
    "image": raw_data.png_bytes(np.arange(64, dtype=np.uint8).reshape(8, 8) * 4, scale=4),
    "text": "Free entry in 2 a wkly comp",
    "url": "http://www.example.com/a/b.html?x=1",
    "vectors": [[0, 1.5], [7, -2.0]],
}
BAD = {"image": b"not an image", "text": b"ok \xff", "url": "   ", "vectors": [[0, float("nan")]]}


def assert_csr(X: sp.csr_matrix, shape: tuple[int, int]) -> None:
    assert sp.issparse(X) and X.format == "csr" and X.dtype == np.float64 and X.shape == shape
    assert X.has_sorted_indices and np.all(X.data != 0)


def same(A: sp.csr_matrix, B: sp.csr_matrix) -> bool:
    """Bit-identical CSR matrices."""
    return (A.shape == B.shape and np.array_equal(A.indptr, B.indptr)
            and np.array_equal(A.indices, B.indices) and np.array_equal(A.data, B.data))


def accuracy_after_training(name: str, X: sp.csr_matrix, y: list, n_train: int, classes: list) -> float:
    """Train ``name`` on the first ``n_train`` rows (every label), return accuracy on the rest."""
    lrn = learners.make(name, n_features=X.shape[1], classes=classes)
    for i in range(n_train):
        lrn.learn(X[i], y[i])
    return float(np.mean(lrn.predict(X[n_train:]) == np.asarray(y[n_train:], dtype=object)))


# ------------------------------------------------------------------ common contract
@pytest.mark.parametrize("kind", KINDS)
def test_default_config_round_trip_and_protocol(kind):
    config = default_config(kind)
    assert config["kind"] == kind and "version" in config
    f = make_featurizer(config)
    assert isinstance(f, Featurizer) and f.kind == kind
    assert f.config() == config
    g = make_featurizer(f.config())
    X = f.transform([GOOD[kind], GOOD[kind]])
    assert_csr(X, (2, f.n_features))
    assert X.nnz > 0
    assert same(X, g.transform([GOOD[kind], GOOD[kind]]))  # identical across instances
    if kind == "text":
        # the default text featurizer is a float32 network: BLAS rounds a row differently with its
        # place in the batch (edge kernels), so "the same" is float32 rounding (learners/features/
        # embedding.py), not bits; deterministic for the same batch (above)
        for row in (X[1], f.transform_one(GOOD[kind])):
            np.testing.assert_allclose(row.toarray(), X[0].toarray(), atol=1e-6)
    else:
        assert same(X[0], X[1]) and same(f.transform_one(GOOD[kind]), X[0])  # and across calls
    assert_csr(f.transform([]), (0, f.n_features))


@pytest.mark.parametrize("kind", KINDS)
def test_batch_error_names_position_of_first_bad_item(kind):
    f = make_featurizer(default_config(kind))
    with pytest.raises(FeatureError) as info:
        f.transform([GOOD[kind], GOOD[kind], BAD[kind], BAD[kind]])
    assert info.value.position == 2 and str(info.value).startswith("item 2: ")
    with pytest.raises(FeatureError) as info:
        f.transform_one(BAD[kind])
    assert info.value.position is None and isinstance(info.value, ValueError)


@pytest.mark.parametrize("config,needle", [
    ({"kind": "audio"}, "unknown featurizer kind 'audio'"),
    ({"width": 8}, "no 'kind'"),
    ([("kind", "text")], "must be a dict"),
    ({"kind": "image", "colour": True}, "unknown option(s) ['colour']"),
    ({"kind": "image", "width": 0}, "width must be an integer >= 1"),
    ({"kind": "image", "max_pixels": 10**9}, "max_pixels must be"),
    ({"kind": "text", "n_features": 2.5}, "n_features must be an integer"),
    ({"kind": "text", "lowercase": "perhaps"}, "lowercase must be true or false"),
    ({"kind": "url", "n_features": 4}, "n_features must be an integer >= 32"),
    ({"kind": "url", "name": "url-ngrams", "ngram_min": 4, "ngram_max": 3}, "ngram_min (4) must be at most"),
    ({"kind": "url", "name": "url-ngrams", "ngram_max": 9}, "ngram_max must be an integer >= 1 and <= 8"),
    ({"kind": "url", "name": "url-ngrams", "norm": 0}, "norm must be a number > 0"),
    ({"kind": "vectors", "n_features": -1}, "n_features must be"),
    ({"kind": "text", "version": 99}, "version 99"),
])
def test_bad_config_is_a_value_error_naming_it(config, needle):
    with pytest.raises(ValueError) as info:
        make_featurizer(config)
    assert needle in str(info.value)


def test_missing_options_take_defaults_and_transform_refuses_a_bare_string():
    f = make_featurizer({"kind": "image", "width": 8})
    assert f.config() == {**default_config("image", "pixels"), "width": 8} and f.n_features == 8 * 16
    with pytest.raises(TypeError, match="transform_one"):
        make_featurizer({"kind": "text"}).transform("a text, not a list of texts")


# ------------------------------------------------------------------------------ text
def text_featurizer(**options):
    return make_featurizer({"kind": "text", **options})


def test_text_sublinear_counts_of_unigrams_and_bigrams_with_unit_norm():
    X = text_featurizer().transform_one("a b a")
    # unigrams a:2, b:1; bigrams "a b":1, "b a":1 -> 1 + log 2, 1, 1, 1, then L2-normalised.
    expected = np.array([1 + math.log(2), 1.0, 1.0, 1.0])
    np.testing.assert_allclose(np.sort(X.data), np.sort(expected / np.linalg.norm(expected)))
    assert X.nnz == 4


def test_hashed_ngrams_of_a_new_project_have_norm_2_and_the_intercept_column():
    """A new project's hashed-ngrams rows (learners/features/text.py): norm 2, then a column of
    0.5; a stored config without the options keeps unit rows and no column."""
    config = default_config("text", "hashed-ngrams")
    assert (config["norm"], config["intercept"]) == (2.0, 0.5)
    texts = ["free entry to win", "see you at home", ""]
    new, stored = make_featurizer(config), text_featurizer(name="hashed-ngrams")
    assert new.n_features == stored.n_features + 1 == 2**18 + 1
    X, old = new.transform(texts), stored.transform(texts)
    np.testing.assert_allclose(X[:, :-1].toarray(), 2.0 * old.toarray())
    np.testing.assert_allclose(X[:, -1].toarray().ravel(), 0.5)  # the empty text too
    np.testing.assert_allclose(sp.linalg.norm(old, axis=1), [1.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="norm must be"):
        text_featurizer(norm=0)


def test_text_tokens_case_utf8_and_empty():
    f = text_featurizer()
    assert f.transform_one("u r 2").nnz == 3 + 2  # one-character tokens are kept
    assert same(f.transform_one("FREE Entry"), f.transform_one("free entry"))
    assert not same(text_featurizer(lowercase=False).transform_one("FREE"),
                    text_featurizer(lowercase=False).transform_one("free"))
    assert same(f.transform_one("café crème".encode()), f.transform_one("café crème"))
    assert f.transform_one("").nnz == 0 and f.transform_one("?!").nnz == 0  # allowed: zero row
    with pytest.raises(FeatureError, match="text is not valid UTF-8 at byte 3"):
        f.transform_one(b"abc\xff")
    with pytest.raises(FeatureError, match="must be a string, got int"):
        f.transform_one(17)
    small = text_featurizer(n_features=64).transform_one("hashing into few columns works")
    assert_csr(small, (1, 64))


@pytest.mark.datasets
def test_text_on_sms_messages_is_sparse_deterministic_and_informative():
    texts, labels = raw_data.sms(2500)
    f = text_featurizer()
    X = f.transform(texts)
    assert_csr(X, (2500, 2**18))
    assert X.getnnz(axis=1).max() < 400  # sparse: a few dozen columns per message
    norms = sp.linalg.norm(X, axis=1)
    np.testing.assert_allclose(norms[X.getnnz(axis=1) > 0], 1.0)
    assert same(X[:50], make_featurizer(f.config()).transform(texts[:50]))
    # The features carry the signal: PA-I trained on 1,500 messages beats the 87% "ham" baseline.
    assert accuracy_after_training("paa-i", X, labels, 1500, ["ham", "spam"]) > 0.95


# ------------------------------------------------------------------------------- url
def test_url_split_and_tokens():
    parts = split_url("HTTP://user:pw@WWW.Example.co.uk:8080/a/b.HTML?x=1&y=two;z#frag".lower())
    assert (parts.scheme, parts.host, parts.port, parts.path, parts.query) == (
        "http", "www.example.co.uk", "8080", "/a/b.html", "x=1&y=two;z")
    tokens = url_tokens(parts, ip=False)
    for t in ["scheme:http", "port:8080", "host:www", "host:example", "tld:uk", "domain:co.uk",
              "path:a", "path:b.html", "pathword:html", "ext:html", "qkey:x", "qword:1",
              "qkey:y", "qword:two", "qkey:z"]:
        assert t in tokens
    assert not any("frag" in t for t in tokens)
    schemeless = split_url("mp3raid.com/music/krizz_kaliko.html")
    assert (schemeless.scheme, schemeless.host, schemeless.path) == ("", "mp3raid.com",
                                                                     "/music/krizz_kaliko.html")
    assert split_url("localhost:8000/x").host == "localhost"
    assert split_url("http://[2001:db8::1]:443/p").host == "2001:db8::1"


@pytest.mark.datasets
def test_url_split_finds_the_host_of_scheme_less_urls_in_the_url_data():
    urls, _ = raw_data.urls(300)
    schemeless = [u for u in urls if "://" not in u]
    assert len(schemeless) > 150  # most of the data set omits the scheme
    for url in schemeless:
        parts = split_url(url.strip())
        first = url.strip().split("/")[0].split("?")[0].rpartition("@")[2]
        assert parts.scheme == "" and parts.host == first.split(":")[0].rstrip("."), url
        assert "host:" + parts.host.split(".")[0].lower() in url_tokens(split_url(url.strip().lower()), False)


@pytest.mark.parametrize("host,ip", [("192.168.0.1", True), ("3232235777", True), ("0x7f.1", True),
                                     ("2001:db8::1", True), ("example.com", False), ("", False),
                                     ("1.2.3.example", False)])
def test_url_ip_literal_detection(host, ip):
    assert is_ip_literal(host) is ip


def test_url_counts_columns():
    f = make_featurizer({"kind": "url", "n_features": 64})
    row = f.transform_one("http://1.2.3.4/a-b/c@d?k=v").toarray()[0]
    counts = dict(zip(COUNT_NAMES, row[: len(COUNT_NAMES)], strict=True))
    # All columns share one L2 scale, so compare ratios to the length column (26 chars).
    for name, raw in [("digits", 4), ("dots", 3), ("hyphens", 1), ("at_signs", 1),
                      ("path_depth", 2), ("query_params", 1)]:
        assert counts[name] / counts["length"] == pytest.approx(math.log1p(raw) / math.log1p(26))
    assert counts["ip_host"] / counts["length"] == pytest.approx(1 / math.log1p(26))
    assert f.transform_one("http://example.com/")[0, COUNT_NAMES.index("ip_host")] == 0
    assert np.linalg.norm(row) == pytest.approx(1.0)


@pytest.mark.parametrize("name", featurizer_names("url"))
def test_url_bad_items(name):
    f = make_featurizer(default_config("url", name))
    for bad, needle in [("", "URL is empty"), (" \t\n", "URL is empty"),
                        (b"http://\xc3(", "URL is not valid UTF-8 at byte 7"), (None, "got NoneType")]:
        with pytest.raises(FeatureError, match=needle.replace("(", r"\(")):
            f.transform_one(bad)


@pytest.mark.parametrize("name", featurizer_names("url"))
@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=200).filter(lambda s: s.strip()))
def test_url_never_crashes_on_arbitrary_strings(name, s):
    row = make_featurizer({"kind": "url", "name": name, "n_features": 256}).transform_one(s)
    assert_csr(row, (1, 256))
    assert sp.linalg.norm(row) == pytest.approx(1.0)


@pytest.mark.datasets
@pytest.mark.parametrize("name,fewest,most,norm", [("url-lexical", len(COUNT_NAMES) - 1, 300, 1.0),
                                                   ("url-ngrams", 10, 2000, 1.5)])
def test_url_on_real_urls_is_sparse_deterministic_and_informative(name, fewest, most, norm):
    urls, types = raw_data.urls(4000)
    f = make_featurizer(default_config("url", name))
    X = f.transform(urls)
    assert_csr(X, (4000, 2**18))
    assert X.getnnz(axis=1).min() >= fewest and X.getnnz(axis=1).max() < most
    np.testing.assert_allclose(sp.linalg.norm(X, axis=1), norm)
    assert same(X[:50], make_featurizer(f.config()).transform(urls[:50]))
    y = ["benign" if t == "benign" else "malicious" for t in types]
    majority = max(y[3000:].count("benign"), y[3000:].count("malicious")) / 1000
    assert accuracy_after_training("paa-i", X, y, 3000, ["benign", "malicious"]) > majority + 0.1


def test_url_ngrams_are_the_framed_urls_character_ngrams_with_unit_norm():
    f = make_featurizer({"kind": "url", "name": "url-ngrams", "ngram_min": 2, "ngram_max": 3})
    assert f.n_features == 2**18 and "intercept" not in default_config("url", "url-lexical")
    row = f.transform_one("  A.b ")  # stripped, lowercased, framed: ^a.b$
    # 2-grams ^a a. .b b$, 3-grams ^a. a.b .b$: seven distinct n-grams, one count each
    assert row.nnz == 7
    np.testing.assert_allclose(row.data, 1 / math.sqrt(7))
    assert same(row, f.transform_one("a.b")) and same(row, f.transform_one(b"A.B"))
    repeated = f.transform_one("aaa")  # ^a aa aa a$ ^aa aaa aa$: "aa" twice
    np.testing.assert_allclose(np.sort(repeated.data), np.sort(np.array([1, 2, 1, 1, 1, 1]) / math.sqrt(9)))
    cased = make_featurizer({"kind": "url", "name": "url-ngrams", "lowercase": False})
    assert not same(cased.transform_one("A.b"), cased.transform_one("a.b"))
    # the frame marks the ends: "ab" at the start of a URL is not "ab" inside it
    start, inside = f.transform_one("ab.c"), f.transform_one("c.ab.c")
    assert set(start.indices) - set(inside.indices)


def test_url_ngrams_is_a_new_projects_url_featurizer_with_rows_of_norm_1_5():
    config = default_config("url")
    assert config["name"] == "url-ngrams" and config["intercept"] == 0.0 and config["norm"] == 1.5
    urls = ["example.com/a", "http://10.0.0.1/login.php"]
    new, stored = make_featurizer(config), make_featurizer({"kind": "url", "name": "url-ngrams"})
    assert new.n_features == stored.n_features == 2**18
    # a stored config without norm means 1: its features never change
    np.testing.assert_allclose(sp.linalg.norm(stored.transform(urls), axis=1), 1.0)
    np.testing.assert_allclose(new.transform(urls).toarray(), 1.5 * stored.transform(urls).toarray())
    f = make_featurizer({**config, "intercept": 0.5})
    X = f.transform(urls)
    assert f.n_features == 2**18 + 1
    np.testing.assert_allclose(X[:, -1].toarray().ravel(), 0.5)
    np.testing.assert_allclose(sp.linalg.norm(X[:, :-1], axis=1), 1.5)


# ----------------------------------------------------------------------------- image
def image_featurizer(**options):
    return make_featurizer({"kind": "image", **options})


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` 8-bit gray pixels but holds no pixel data."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


def test_image_demo_digits_scaled_up_come_back_exactly():
    digits = load_digits()
    for k in range(5):
        pixels = np.round(digits.images[k] * 255 / 16).astype(np.uint8)
        png = raw_data.png_bytes(pixels, scale=16)  # 128 x 128, as the demo renders them
        np.testing.assert_allclose(image_featurizer(width=8, height=8).transform_one(png).toarray()[0],
                                   pixels.reshape(-1) / 255)
        default = image_featurizer().transform_one(png).toarray()[0].reshape(16, 16)
        np.testing.assert_allclose(default, np.kron(pixels, np.ones((2, 2))) / 255)
        dark_ink = raw_data.png_bytes(255 - pixels, scale=16)
        assert same(image_featurizer(invert=True).transform_one(dark_ink),
                    image_featurizer().transform_one(png))


def test_image_formats_and_modes_agree():
    pixels = np.arange(64, dtype=np.uint8).reshape(8, 8) * 4
    f = image_featurizer(width=8, height=8)
    expected = f.transform_one(raw_data.png_bytes(pixels))
    for fmt in ("BMP", "GIF", "TIFF"):
        assert same(f.transform_one(raw_data.png_bytes(pixels, fmt=fmt)), expected), fmt
    jpeg = f.transform_one(raw_data.png_bytes(pixels, scale=8, fmt="JPEG", quality=95))
    assert np.abs(jpeg.toarray() - expected.toarray()).max() < 0.05  # lossy
    rgb = Image.fromarray(np.stack([pixels] * 3, axis=-1))
    buf = io.BytesIO()
    rgb.save(buf, "PNG")
    assert same(f.transform_one(buf.getvalue()), expected)


def test_image_transparency_is_white_and_exif_orientation_is_applied():
    rgba = np.zeros((4, 4, 4), dtype=np.uint8)  # fully transparent black ...
    rgba[0, 0] = (0, 0, 0, 255)  # ... except one opaque black pixel
    buf = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buf, "PNG")
    row = image_featurizer(width=4, height=4).transform_one(buf.getvalue()).toarray()[0]
    np.testing.assert_allclose(row, [0.0] + [1.0] * 15)

    pixels = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 degrees clockwise to display"
    rotated = raw_data.png_bytes(pixels, exif=exif)
    upright = raw_data.png_bytes(np.rot90(pixels, k=-1))
    f = image_featurizer(width=3, height=4)
    assert same(f.transform_one(rotated), f.transform_one(upright))


def test_image_corrupt_truncated_and_wrong_type():
    noise = np.random.default_rng(0).integers(0, 256, size=(64, 64), dtype=np.uint8)
    png = raw_data.png_bytes(noise)  # incompressible, so truncation cuts the pixel data
    f = image_featurizer()
    for bad, needle in [(png[: len(png) // 2], "image is corrupt or not an image: image file is truncated"),
                        (png[:30], "image is corrupt or not an image"),
                        (b"GIF89a not really", "image is corrupt or not an image"),
                        (b"%PDF-1.4 hello", "the format is not recognised"),
                        (b"", "image is empty"),
                        ("a path.png", "must be bytes (the file's content), got str")]:
        with pytest.raises(FeatureError) as info:
            f.transform_one(bad)
        assert needle in str(info.value)
    assert f.transform_one(png).nnz > 200  # the complete file is fine


def test_image_pixel_limit_is_checked_before_decoding():
    # Declared sizes only: these files hold no pixel data, so a decode would fail as "corrupt".
    with pytest.raises(FeatureError, match=r"image has 49000000 pixels \(7000x7000\), more than "
                                           r"the limit of 40000000"):
        image_featurizer().transform_one(png_header_only(7000, 7000))
    with pytest.raises(FeatureError, match="image is too large"):  # Pillow's own bomb guard
        image_featurizer().transform_one(png_header_only(100_000, 100_000))
    with pytest.raises(FeatureError, match="image has 784 pixels"):
        image_featurizer(max_pixels=783).transform_one(raw_data.png_bytes(np.zeros((28, 28))))
    with pytest.raises(FeatureError, match="corrupt"):  # under the limit: it is decoded and fails
        image_featurizer().transform_one(png_header_only(70, 70))


def test_image_sixteen_bit_and_float_images_keep_their_scale():
    f = image_featurizer(width=4, height=4)
    deep = np.arange(16, dtype=np.uint16).reshape(4, 4) * 4369  # 0 .. 65535
    buf = io.BytesIO()
    Image.fromarray(deep).save(buf, "PNG")
    np.testing.assert_allclose(f.transform_one(buf.getvalue()).toarray()[0], deep.reshape(-1) / 65535,
                               atol=1e-6)
    floats = np.linspace(0, 1, 16, dtype=np.float32).reshape(4, 4)
    buf = io.BytesIO()
    Image.fromarray(floats).save(buf, "TIFF")
    np.testing.assert_allclose(f.transform_one(buf.getvalue()).toarray()[0], floats.reshape(-1), atol=1e-6)


@pytest.mark.datasets
def test_image_on_mnist_digits_is_exact_deterministic_and_informative():
    images, labels = raw_data.mnist(1500)
    pngs = [raw_data.png_bytes(im) for im in images]
    full = image_featurizer(width=28, height=28).transform(pngs[:20])
    np.testing.assert_allclose(full.toarray(), images[:20].reshape(20, -1) / 255)
    assert full.nnz < 0.3 * full.shape[0] * full.shape[1]  # black background: sparse rows
    f = image_featurizer()
    X = f.transform(pngs)
    assert_csr(X, (1500, 256))
    assert X.data.min() > 0 and X.data.max() <= 1
    assert same(X[:20], make_featurizer(f.config()).transform(pngs[:20]))
    assert accuracy_after_training("mpaa-i", X, labels.tolist(), 1000, list(range(10))) > 0.7  # chance: 0.1


# --------------------------------------------------------------------------- vectors
def test_vectors_lists_and_dicts():
    f = make_featurizer({"kind": "vectors", "n_features": 5})
    X = f.transform([[[4, 2.0], [0, 1.5]], {"3": -1, 1: 0.25}, [], {}, [[2, 0.0]], [(1, np.float32(2))]])
    np.testing.assert_array_equal(X.toarray(), [[1.5, 0, 0, 0, 2], [0, 0.25, 0, -1, 0], [0] * 5,
                                                [0] * 5, [0] * 5, [0, 2, 0, 0, 0]])
    assert_csr(X, (6, 5))


@pytest.mark.parametrize("raw,needle", [
    ([[5, 1.0]], "vector index 5 is out of range 0..4"),
    ([[-1, 1.0]], "vector index -1 is out of range"),
    ({"x": 1.0}, "vector index 'x' is not an integer"),
    ([[1.0, 1.0]], "vector index 1.0 is not an integer"),
    ([[True, 1.0]], "vector index True is not an integer"),
    ([[1, float("nan")]], "value at index 1 is not finite: nan"),
    ([[1, float("inf")]], "value at index 1 is not finite: inf"),
    ([[1, "2"]], "value at index 1 is not a number: '2'"),
    ([[1, None]], "value at index 1 is not a number"),
    ([[1, 1.0], [1, 2.0]], "vector index 1 appears more than once"),
    ({"1": 1.0, 1: 2.0}, "vector index 1 appears more than once"),
    ([[1, 2, 3]], "entry 0 of the vector is not an [index, value] pair"),
    ([1.0, 2.0], "entry 0 of the vector is not an [index, value] pair"),
    ("1:0.5", "must be a list of [index, value] pairs or a dict"),
])
def test_vectors_bad_items(raw, needle):
    with pytest.raises(FeatureError) as info:
        make_featurizer({"kind": "vectors", "n_features": 5}).transform_one(raw)
    assert needle in str(info.value)

