"""Readers of the raw items of the data sets (docs/architecture.md, "Data sets") used by the
featurizer and export tests.

Each reader goes through :func:`tests.support.resources.shared_dataset` (skip on a laptop without the
data, fail in CI) and returns the first ``n`` items in file order.
"""

from __future__ import annotations

import numpy as np

from learners.evaluation import raw_datasets
from learners.evaluation.raw_datasets import png_bytes
from tests.support.resources import DATASETS, shared_dataset

__all__ = ["ag_news", "mnist", "png_bytes", "sms", "urls"]


def sms(n: int) -> tuple[list[str], list[str]]:
    """First ``n`` SMS Spam Collection messages and their labels ("ham" / "spam")."""
    shared_dataset(raw_datasets.SMS)
    return raw_datasets.sms(DATASETS, n)


def ag_news(n: int) -> tuple[list[str], list[int]]:
    """First ``n`` AG News test items as "title. description" and their int class (1..4)."""
    shared_dataset(raw_datasets.AG_NEWS)
    return raw_datasets.ag_news(DATASETS, n)


def urls(n: int) -> tuple[list[str], list[str]]:
    """First ``n`` URLs of the malicious-URL file and their type (benign, phishing, ...)."""
    shared_dataset(raw_datasets.URLS)
    return raw_datasets.urls(DATASETS, n)


def mnist(n: int) -> tuple[np.ndarray, np.ndarray]:
    """First ``n`` MNIST test digits: uint8 images (n, 28, 28) and int labels (n,)."""
    shared_dataset(raw_datasets.MNIST_IMAGES)
    return raw_datasets.mnist(DATASETS, n)
