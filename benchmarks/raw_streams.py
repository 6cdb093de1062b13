"""The raw benchmark streams (SMS, URLs, MNIST, AG News; plus the 4-class URL task) and two
digit sets the refit was never tuned on (USPS, scikit-learn's 8x8 digits), written as the app's
upload files.

Each stream is written once into a cache folder, in the format a user would upload (so the
benchmark reads it through the app's own parser, :mod:`learners.uploads`, as
``python -m learners.replay --kind`` does); ``python benchmarks/raw_streams.py FOLDER [NAME ...]``
writes them there (default: :data:`STREAMS`) and prints their paths, e.g. to upload one by hand:

=========  =====  ======================================  =======  ==================
stream     kind   source (shared datasets folder)         items    classes
=========  =====  ======================================  =======  ==================
sms        text   ``raw_text/SMSSpamCollection.gz``        5,574    ham / spam
ag_news    text   ``raw_text/ag_news_test.csv.gz``         7,600    4 topics
mnist      image  ``raw_images/mnist_t10k`` (as PNGs)      10,000   digits 0-9
urls       url    first 10,000 of ``raw_urls/...csv.gz``   10,000   benign / malicious
urls4      url    the same 10,000 URLs                     10,000   4 types
usps       image  ``matlab/USPS.mat`` (as PNGs)            9,298    digits 0-9
digits     image  ``sklearn.datasets.load_digits`` (PNGs)  1,797    digits 0-9
=========  =====  ======================================  =======  ==================

:data:`STREAMS` are the benchmarks' default streams (those of benchmarks/LABEL_EFFICIENCY.md);
:data:`UNSEEN_STREAMS` (usps, digits) are written only when asked for by name, to measure on data
the exported model's refit was not tuned on (usps did inform the image featurizer's choice,
benchmarks/FEATURIZERS.md). :func:`stream_named` looks a name up in both.

AG News items are ``"<title>. <description>"``. The images are grayscale PNGs, white ink on black,
in one folder per class: MNIST's IDX pixels as published (28x28); USPS's train then test digits
(16x16, values 0-1 scaled to 0-255); scikit-learn's bundled digits (8x8, values 0-16 scaled to
0-255, shipped inside scikit-learn: no download).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.io
from sklearn.datasets import load_digits

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from learners.evaluation import raw_datasets

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
N_URLS = 10_000


@dataclass(frozen=True)
class Stream:
    """A benchmark stream: its name, item kind, upload file name and binary flag."""

    name: str
    kind: str
    filename: str
    binary: bool


STREAMS = {
    "sms": Stream("sms", "text", "sms.csv.gz", True),
    "ag_news": Stream("ag_news", "text", "ag_news.csv.gz", False),
    "mnist": Stream("mnist", "image", "mnist.zip", False),
    "urls": Stream("urls", "url", "urls.csv.gz", True),
    "urls4": Stream("urls4", "url", "urls4.csv.gz", False),
}
#: streams the refit was not tuned on (module docstring), written only when named
UNSEEN_STREAMS = {
    "usps": Stream("usps", "image", "usps.zip", False),
    "digits": Stream("digits", "image", "digits.zip", False),
}


def stream_named(name: str) -> Stream:
    """The stream called ``name`` in :data:`STREAMS` or :data:`UNSEEN_STREAMS`; ValueError
    listing the names otherwise."""
    found = STREAMS.get(name) or UNSEEN_STREAMS.get(name)
    if found is None:
        raise ValueError(f"unknown stream {name!r}: one of {', '.join([*STREAMS, *UNSEEN_STREAMS])}")
    return found


def _write_csv(path: Path, header: tuple[str, str], rows: list[tuple[str, str]]) -> None:
    buf = io.StringIO(newline="")
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    path.write_bytes(gzip.compress(buf.getvalue().encode("utf-8"), mtime=0))


def _sms() -> list[tuple[str, str]]:
    return list(zip(*raw_datasets.sms(DATA), strict=True))


def _ag_news() -> list[tuple[str, str]]:
    names = raw_datasets.ag_news_classes(DATA)
    texts, classes = raw_datasets.ag_news(DATA)
    return [(text, names[cls - 1]) for text, cls in zip(texts, classes, strict=True)]


def _urls() -> list[tuple[str, str]]:
    return list(zip(*raw_datasets.urls(DATA, N_URLS), strict=True))


def _usps() -> tuple[np.ndarray, np.ndarray]:
    """The 9,298 USPS digits (train then test) as uint8 16x16 images and their digits."""
    mat = scipy.io.loadmat(DATA / "matlab/USPS.mat")
    columns = np.hstack([mat["Train_DAT"], mat["Test_DAT"]]).T  # one row per image, transposed
    images = np.round(columns.reshape(-1, 16, 16).transpose(0, 2, 1) * 255).astype(np.uint8)
    labels = np.concatenate([mat["trainlabels"][0], mat["testlabels"][0]]) % 10  # 10 means 0
    return images, labels


def _digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 bundled 8x8 digits (values 0-16) as uint8 images and their digits."""
    bunch = load_digits()
    return np.round(bunch.images * 255 / 16).astype(np.uint8), bunch.target


#: the image streams' pixels (n, height, width) as uint8, white ink on black, and class values
IMAGES: dict[str, Callable[[], tuple[np.ndarray, np.ndarray]]] = {
    "mnist": lambda: raw_datasets.mnist(DATA), "usps": _usps, "digits": _digits}


def _image_zip(path: Path, images: np.ndarray, labels: np.ndarray) -> None:
    """The images as PNGs named ``<label>/<index>.png`` in a zip (fixed dates: the same bytes
    on every run)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for i, (image, label) in enumerate(zip(images, labels, strict=True)):
            entry = zipfile.ZipInfo(f"{label}/{i:05d}.png", date_time=(2000, 1, 1, 0, 0, 0))
            zf.writestr(entry, raw_datasets.png_bytes(image))


def prepare(cache: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Write the upload files of ``names`` (default: every stream of :data:`STREAMS`; the names
    of :data:`UNSEEN_STREAMS` too) into ``cache`` unless they exist; returns ``{name: path}``."""
    cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in names or list(STREAMS):
        path = cache / stream_named(name).filename
        if not path.exists():
            tmp = path.with_suffix(path.suffix + ".part")
            if name in IMAGES:
                _image_zip(tmp, *IMAGES[name]())
            elif name in ("urls", "urls4"):
                rows = _urls()
                if name == "urls":
                    rows = [(u, "benign" if t == "benign" else "malicious") for u, t in rows]
                _write_csv(tmp, ("url", "label"), rows)
            else:
                _write_csv(tmp, ("text", "label"), _sms() if name == "sms" else _ag_news())
            tmp.rename(path)
        out[name] = path
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write benchmark streams as upload files.")
    parser.add_argument("folder", type=Path)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"of {', '.join([*STREAMS, *UNSEEN_STREAMS])} (default: the first five)")
    args = parser.parse_args(argv)
    try:
        paths = prepare(args.folder, args.names or None)
    except ValueError as exc:
        parser.error(str(exc))
    for path in paths.values():
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
