"""Readers of the raw items of the data sets (docs/architecture.md, "Data sets") used by the
featurizer and export tests.

Each reader goes through :func:`tests.support.resources.shared_dataset` (skip on a laptop without the
data, fail in CI) and returns the first ``n`` items in file order.
"""

from __future__ import annotations

import csv
import gzip
import io

import numpy as np
from PIL import Image

from .resources import shared_dataset


def sms(n: int) -> tuple[list[str], list[str]]:
    """First ``n`` SMS Spam Collection messages and their labels ("ham" / "spam")."""
    texts, labels = [], []
    with gzip.open(shared_dataset("raw_text/SMSSpamCollection.gz"), "rt", encoding="utf-8") as fh:
        for line in fh:
            label, _, text = line.rstrip("\n").partition("\t")
            texts.append(text)
            labels.append(label)
            if len(texts) == n:
                break
    return texts, labels


def ag_news(n: int) -> tuple[list[str], list[int]]:
    """First ``n`` AG News test items as "title. description" and their int class (1..4)."""
    texts, labels = [], []
    with gzip.open(shared_dataset("raw_text/ag_news_test.csv.gz"), "rt", encoding="utf-8") as fh:
        for cls, title, description in csv.reader(fh):
            texts.append(f"{title}. {description}")
            labels.append(int(cls))
            if len(texts) == n:
                break
    return texts, labels


def urls(n: int) -> tuple[list[str], list[str]]:
    """First ``n`` URLs of the malicious-URL file and their type (benign, phishing, ...)."""
    out, types = [], []
    with gzip.open(shared_dataset("raw_urls/malicious_phish_first41980.csv.gz"), "rt",
                   encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            out.append(row["url"])
            types.append(row["type"])
            if len(out) == n:
                break
    return out, types


def mnist(n: int) -> tuple[np.ndarray, np.ndarray]:
    """First ``n`` MNIST test digits: uint8 images (n, 28, 28) and int labels (n,)."""
    folder = "raw_images/mnist_t10k/"
    with gzip.open(shared_dataset(folder + "t10k-images-idx3-ubyte.gz")) as fh:
        images = np.frombuffer(fh.read(16 + n * 784)[16:], np.uint8).reshape(-1, 28, 28)
    with gzip.open(shared_dataset(folder + "t10k-labels-idx1-ubyte.gz")) as fh:
        labels = np.frombuffer(fh.read(8 + n)[8:], np.uint8).astype(int)
    return images, labels


def png_bytes(pixels: np.ndarray, scale: int = 1, fmt: str = "PNG", **save_args) -> bytes:
    """A uint8 grayscale array rendered as an image file, each pixel ``scale`` x ``scale``."""
    im = Image.fromarray(np.asarray(pixels, dtype=np.uint8))  # 2-D uint8 -> mode "L"
    if scale != 1:
        im = im.resize((im.width * scale, im.height * scale), Image.Resampling.NEAREST)
    buf = io.BytesIO()
    im.save(buf, fmt, **save_args)
    return buf.getvalue()
