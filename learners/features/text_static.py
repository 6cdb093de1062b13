"""``wordllama-ngrams``: a static token embedding beside hashed word n-grams, about 30x faster than
``minilm-ngrams`` (docs/performance.md, benchmarks/FAST_TEXT.md).

Raw item: ``str`` or UTF-8 ``bytes``, as for the other text featurizers. Each text becomes the
rows of :mod:`.text_hybrid` (same blocks, weights, row norm and intercept column) with the
MiniLM sentence embedding replaced by a static one:

* the text's Llama-2 tokens (SentencePiece BPE, no ``<s>``; at most ``max_tokens``), each looked
  up in WordLlama's ``l2_supercat`` token table (32,000 x 256, float16, trained by the
  WordLlama authors from the token embeddings of large language models), averaged and scaled
  to unit L2 norm; a text without tokens has an all-zero block.

There is no network: each row is a sum of table rows (no attention), so a 100,000-text upload
embeds in seconds. A text's vector is the same alone or in a batch (each row is summed on its
own, in token order).

Where the weights come from: the PyPI package ``wordllama`` ships the table
(``weights/l2_supercat_256.safetensors``) and the tokenizer (``tokenizers/
l2_supercat_tokenizer_config.json``) inside the package (MIT); the files are read from
site-packages, the package itself is not imported and nothing is fetched at run time (the
Makefile installs it with ``--no-deps``, requirements-models.txt).

Accuracy against ``minilm-ngrams`` (benchmarks/FAST_TEXT.md): online accuracy at 10% labels
0.2 point lower on SMS spam and about 2 points lower on AG News, so it is not a new project's
default; a project chooses it for large text streams where featurizing speed matters.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ..params import Param
from .base import NEW_PROJECT_INTERCEPT, FeatureError
from .embedding import require_package
from .text_hybrid import HybridTextFeaturizer, hybrid_options

#: the package carrying the table, and the version whose numbers this code reproduces
MODEL_PACKAGE = "wordllama"
MODEL_PACKAGE_VERSION = "0.4.0.post1"
TABLE = "weights/l2_supercat_256.safetensors"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
DIM = 256

MAX_TOKENS = Param("max_tokens", 512, int, "Llama-2 tokens kept per text (the rest is not embedded; "
                   "the word n-grams see the whole text)", low=8, high=4096)


def model_dir() -> Path:
    """Folder of the ``wordllama`` package's files; FeatureError if it is missing or another version."""
    require_package(MODEL_PACKAGE, MODEL_PACKAGE_VERSION, "the static text embedding")
    spec = importlib.util.find_spec(MODEL_PACKAGE)  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise FeatureError(f"the package {MODEL_PACKAGE} is installed but its files cannot be found")
    return Path(next(iter(spec.submodule_search_locations)))


class StaticEmbedding:
    """The token table and its tokenizer; one instance per process (:func:`static_embedding`)."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        # float16 in the package; float32 here (exact), summed per row by scipy in float32
        self.table = load_file(str(folder / TABLE))["embedding.weight"].astype(np.float32)
        self.tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
        self.tokenizer.no_padding()

    def embed(self, texts: Sequence[str], max_tokens: int) -> np.ndarray:
        """Unit-norm mean token vectors ``(len(texts), 256)`` float64; zero rows for texts without tokens."""
        self.tokenizer.enable_truncation(max_tokens)
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]
        counts = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
        indptr = np.concatenate([[0], np.cumsum(counts)])
        columns = np.fromiter((t for i in ids for t in i), dtype=np.int64, count=int(indptr[-1]))
        bag = sp.csr_matrix((np.ones(len(columns), dtype=np.float32), columns, indptr),
                            shape=(len(ids), self.table.shape[0]))
        sums = np.asarray(bag @ self.table, dtype=np.float64)  # row by row, in token order
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        return np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)


@functools.lru_cache(maxsize=1)
def static_embedding() -> StaticEmbedding:
    """The process-wide table (32 MB of float32)."""
    return StaticEmbedding(model_dir())


class StaticNgramsFeaturizer(HybridTextFeaturizer):
    """``wordllama-ngrams``: static token embedding + hashed word n-grams (module docstring)."""

    name = "wordllama-ngrams"
    version = 1
    dim = DIM
    # a new featurizer: its defaults are a new minilm-ngrams project's weights and norm
    options = hybrid_options(char_weight=0.0, word_weight=1.5, max_tokens=MAX_TOKENS, norm=1.5)
    new_project: ClassVar[dict[str, Any]] = {"intercept": NEW_PROJECT_INTERCEPT}

    def check_model(self) -> None:
        model_dir()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return static_embedding().embed(texts, self.max_tokens)


FEATURIZER = StaticNgramsFeaturizer
