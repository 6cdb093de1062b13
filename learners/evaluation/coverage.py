"""How often the importance-weighted intervals of :mod:`.per_class` cover the truth, by simulation
(docs/estimates.md, "Coverage").

One simulated stream: ``n`` items of ``k`` classes with imbalanced priors; a model that is right
more often on the frequent class; a confidence per item, higher when the model is right; and a
query probability that falls with the confidence (an active learner's: it asks about the items
it is unsure of) with a floor ``q_min``. Each item is queried by an independent Bernoulli draw.
The truth is the exact figure over the whole stream (every item's class known), which is what the
estimate from the queried items targets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .per_class import OVERALL, PER_CLASS, Cells, confusion, estimated_figures, exact_figures


@dataclass(frozen=True)
class Scenario:
    """A simulated stream's law: class ``priors`` (k,), per-class probability that the model is
    right ``hit`` (k,), ``n`` items, query probability ``max(q_min, (1 - confidence)^power)``."""

    priors: tuple[float, ...] = (0.75, 0.17, 0.08)
    hit: tuple[float, ...] = (0.95, 0.80, 0.70)
    n: int = 2000
    q_min: float = 0.05
    power: float = 1.0


def simulate(rng: np.random.Generator, s: Scenario) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One stream: ``(truth, pred, q, queried)``, int (n,), int (n,), float (n,), bool (n,)."""
    k = len(s.priors)
    truth = rng.choice(k, size=s.n, p=np.asarray(s.priors) / np.sum(s.priors))
    right = rng.random(s.n) < np.asarray(s.hit)[truth]
    other = (truth + rng.integers(1, k, size=s.n)) % k
    pred = np.where(right, truth, other)
    conf = np.where(right, rng.beta(5.0, 2.0, size=s.n), rng.beta(2.0, 3.0, size=s.n))
    q = np.maximum(s.q_min, (1.0 - conf) ** s.power)
    return truth, pred, q, rng.random(s.n) < q


def covered(truth_fig: dict, est: dict) -> dict[str, bool]:
    """Per figure name (``precision:<class>``, ``macro_f1``, ``baseline_accuracy``, ...): whether
    the estimate's interval holds the true value. Figures without an estimate are left out."""
    out = {}
    pairs = [(f"{f}:{t['cls']}", t[f], e[f])
             for t, e in zip(truth_fig["classes"], est["classes"], strict=True) for f in PER_CLASS]
    pairs += [(f, truth_fig[f], est[f]) for f in OVERALL]
    pairs += [(f"baseline_{f}", truth_fig["baseline"][f], est["baseline"][f])
              for f in ("accuracy", "macro_f1")]
    for name, true, e in pairs:
        if e.value is not None:
            out[name] = bool(e.low - 1e-12 <= true <= e.high + 1e-12)
    return out


def coverage(streams: int, seed: int = 0, scenario: Scenario | None = None) -> dict[str, float]:
    """The share of ``streams`` simulated streams whose 95% interval covers the true figure, per
    figure name (:func:`covered`), plus ``labels``: the mean number of queried items."""
    s = scenario or Scenario()
    k = len(s.priors)
    classes = list(range(k))
    rng = np.random.default_rng(seed)
    hits: dict[str, list[bool]] = {}
    labels = 0
    for _ in range(streams):
        truth, pred, q, queried = simulate(rng, s)
        exact = exact_figures(confusion(truth, pred, k), classes)
        est = estimated_figures(Cells.of(truth[queried], pred[queried], q[queried], k), s.n, classes)
        for name, ok in covered(exact, est).items():
            hits.setdefault(name, []).append(ok)
        labels += int(queried.sum())
    out = {name: float(np.mean(v)) for name, v in hits.items()}
    out["labels"] = labels / streams
    return out
