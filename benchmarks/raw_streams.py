"""The four raw streams (SMS, URLs, MNIST, AG News; plus the 4-class URL task) written as the
app's upload files.

Each stream is written once into a cache folder, in the format a user would upload (so the
benchmark reads it through the app's own parser, :mod:`learners.uploads`, as
``python -m learners.replay --kind`` does):

=========  =====  ======================================  =======  ==================
stream     kind   source (shared datasets folder)         items    classes
=========  =====  ======================================  =======  ==================
sms        text   ``raw_text/SMSSpamCollection.gz``        5,574    ham / spam
ag_news    text   ``raw_text/ag_news_test.csv.gz``         7,600    4 topics
mnist      image  ``raw_images/mnist_t10k`` (as PNGs)      10,000   digits 0-9
urls       url    first 10,000 of ``raw_urls/...csv.gz``   10,000   benign / malicious
urls4      url    the same 10,000 URLs                     10,000   4 types
=========  =====  ======================================  =======  ==================

AG News items are ``"<title>. <description>"``; MNIST images are the IDX pixels saved as 28x28
grayscale PNGs (white ink on black, as published) in one folder per class.
"""

from __future__ import annotations

import csv
import gzip
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

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


def _mnist_zip(path: Path) -> None:
    images, labels = raw_datasets.mnist(DATA)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for i, (image, label) in enumerate(zip(images, labels, strict=True)):
            entry = zipfile.ZipInfo(f"{label}/{i:05d}.png", date_time=(2000, 1, 1, 0, 0, 0))
            zf.writestr(entry, raw_datasets.png_bytes(image))


def prepare(cache: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Write the upload files of ``names`` (default: every stream) into ``cache`` unless they
    exist; returns ``{name: path}``."""
    cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in names or list(STREAMS):
        stream = STREAMS[name]
        path = cache / stream.filename
        if not path.exists():
            tmp = path.with_suffix(path.suffix + ".part")
            if name == "mnist":
                _mnist_zip(tmp)
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
