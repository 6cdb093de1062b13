"""Small random sparse problems for the replay and compiled-path tests."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def synthetic(n: int, d: int, k: int, seed: int = 0) -> tuple[sp.csr_matrix, np.ndarray]:
    """``n`` rows of ``d`` features (30% non-zero, standard normal) and ``k`` classes from a random
    linear model with noise: ``(X csr (n, d), y int64 (n,) in [0, k))``, reproducible by ``seed``."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, random_state=seed, format="csr", data_rvs=rng.standard_normal)
    W = rng.normal(size=(d, k))
    y = np.argmax(X @ W + 0.3 * rng.normal(size=(n, k)), axis=1).astype(np.int64)
    return X, y
