"""Readers of the raw items of the public data sets the benchmarks and tests use (see
docs/architecture.md, "Data sets"): the SMS Spam Collection, the AG News test split, the
labelled-URL file and the MNIST test digits.

Each reader takes the data-sets folder ``root`` and returns the first ``n`` items in file order
(``n`` None: every item). Nothing here downloads anything: a missing file raises
``FileNotFoundError``.
"""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

#: the files read, relative to ``root``
SMS = "raw_text/SMSSpamCollection.gz"
AG_NEWS = "raw_text/ag_news_test.csv.gz"
AG_NEWS_CLASSES = "raw_text/ag_news_classes.txt"
URLS = "raw_urls/malicious_phish_first41980.csv.gz"
MNIST_IMAGES = "raw_images/mnist_t10k/t10k-images-idx3-ubyte.gz"
MNIST_LABELS = "raw_images/mnist_t10k/t10k-labels-idx1-ubyte.gz"


def sms(root: Path, n: int | None = None) -> tuple[list[str], list[str]]:
    """SMS texts and their labels ("ham" / "spam")."""
    texts, labels = [], []
    with gzip.open(root / SMS, "rt", encoding="utf-8") as fh:
        for line in fh:
            label, _, text = line.rstrip("\n").partition("\t")
            texts.append(text)
            labels.append(label)
            if len(texts) == n:
                break
    return texts, labels


def ag_news(root: Path, n: int | None = None) -> tuple[list[str], list[int]]:
    """AG News test items as "title. description" and their class number (1..4, see
    :func:`ag_news_classes`)."""
    texts, labels = [], []
    with gzip.open(root / AG_NEWS, "rt", encoding="utf-8", newline="") as fh:
        for cls, title, description in csv.reader(fh):
            texts.append(f"{title}. {description}")
            labels.append(int(cls))
            if len(texts) == n:
                break
    return texts, labels


def ag_news_classes(root: Path) -> list[str]:
    """The AG News class names; class number ``c`` is ``ag_news_classes(root)[c - 1]``."""
    return (root / AG_NEWS_CLASSES).read_text().split("\n")


def urls(root: Path, n: int | None = None) -> tuple[list[str], list[str]]:
    """URLs of the labelled-URL file and their type (benign, defacement, phishing, malware)."""
    out, types = [], []
    with gzip.open(root / URLS, "rt", encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            out.append(row["url"])
            types.append(row["type"])
            if len(out) == n:
                break
    return out, types


def mnist(root: Path, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """MNIST test digits: uint8 images, shape (n, 28, 28), white ink on black as published, and
    int labels, shape (n,)."""
    with gzip.open(root / MNIST_IMAGES) as fh:
        raw = fh.read() if n is None else fh.read(16 + n * 784)
        images = np.frombuffer(raw[16:], np.uint8).reshape(-1, 28, 28)
    with gzip.open(root / MNIST_LABELS) as fh:
        raw = fh.read() if n is None else fh.read(8 + n)
        labels = np.frombuffer(raw[8:], np.uint8).astype(int)
    return images, labels


def png_bytes(pixels: np.ndarray, scale: int = 1, fmt: str = "PNG", **save_args: Any) -> bytes:
    """A 2-D uint8 grayscale array as an image file (default PNG), each pixel ``scale`` x
    ``scale``; ``save_args`` go to Pillow's ``save``."""
    im = Image.fromarray(np.asarray(pixels, dtype=np.uint8))  # 2-D uint8 -> mode "L"
    if scale != 1:
        im = im.resize((im.width * scale, im.height * scale), Image.Resampling.NEAREST)
    buf = io.BytesIO()
    im.save(buf, fmt, **save_args)
    return buf.getvalue()
