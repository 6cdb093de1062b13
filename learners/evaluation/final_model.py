"""The model a replay ends with, online or refitted (docs/algorithms/refit.md), scored on items
the stream never showed.

``python -m learners.replay --refit`` runs :func:`final_model_metrics` after each run: the
batch fit of :func:`learners.refit.refit` on the run's queried items (importance weights 1/q;
self-trained on the items it did not query when the check finds that better) and its check
against the online learner. With ``--holdout F`` the last fraction F of each
run's permutation is kept out of the stream (:func:`split_held_out`) and the online learner,
the refit and the model an export would keep are scored on it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..base import Learner
from ..refit import RefitResult, refit
from .engine import Setting, Task, Trace, fresh_learner, permuted, replay_setting, trace_metrics


def split_held_out(Xp: sp.csr_matrix, yp: np.ndarray,
                   fraction: float) -> tuple[sp.csr_matrix, np.ndarray, sp.csr_matrix, np.ndarray]:
    """``(stream rows, stream codes, held-out rows, held-out codes)``: the last ``round(fraction
    * n)`` items of a permuted stream are held out (0 <= fraction < 1)."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"the held-out fraction must be in [0, 1), got {fraction}")
    cut = Xp.shape[0] - round(fraction * Xp.shape[0])
    return Xp[:cut], yp[:cut], Xp[cut:], yp[cut:]


def refit_stream(setting: Setting, learner: Learner, trace: Trace, Xs: sp.csr_matrix, ys: np.ndarray,
                 task: Task, seed: int = 0) -> RefitResult:
    """:func:`learners.refit.refit` on the items a replay of ``setting`` queried (rows of ``Xs``
    in stream order, their codes ``ys``, their logged query probabilities); the items it did not
    query are the refit's unlabelled items (self-training)."""
    labelled = np.flatnonzero(trace.queried)
    return refit(lambda: fresh_learner(setting, Xs.shape[1], task), Xs[labelled], ys[labelled],
                 trace.query_prob[labelled], seed=seed, unlabelled=Xs[np.flatnonzero(~trace.queried)])


def final_model_metrics(setting: Setting, learner: Learner, trace: Trace, Xs: sp.csr_matrix,
                        ys: np.ndarray, task: Task, seed: int = 0,
                        held: tuple[sp.csr_matrix, np.ndarray] | None = None) -> dict[str, float]:
    """Metrics of the refit after a replay: ``refit_chosen`` (1 when the refit beat the online
    learner in the check, else 0), ``refit_self_trained`` (1 when the refit is the self-trained
    fit, else 0), ``refit_neighbours`` (1 when it predicts with neighbours, else 0),
    ``refit_cv_online`` / ``refit_cv_refit`` (the check's
    importance-weighted accuracies; absent when there were too few labels to try); with ``held``
    (rows, codes) also ``holdout_online``, ``holdout_refit`` (absent untried) and
    ``holdout_exported`` (accuracy on the held-out items of the online learner, of the refit,
    and of the one kept)."""
    result = refit_stream(setting, learner, trace, Xs, ys, task, seed)
    out = {"refit_chosen": float(result.chosen == "refit"),
           "refit_self_trained": float(bool(result.check.get("pseudo_labels"))),
           "refit_neighbours": float(bool((result.check.get("neighbours_at_prediction") or {}).get("used")))}
    if result.online_cv is not None and result.refit_cv is not None:
        out.update(refit_cv_online=result.online_cv, refit_cv_refit=result.refit_cv)
    if held is not None:
        Xh, yh = held
        online = float(np.mean(learner.decide_block(Xh).codes == yh))
        out.update(holdout_online=online, holdout_exported=online)
        if result.model is not None:
            batch = float(np.mean(result.model.predict_codes(Xh) == yh))
            out.update(holdout_refit=batch, holdout_exported=batch if result.chosen == "refit" else online)
    return out


def run_with_refit(setting: Setting, X: sp.csr_matrix, task: Task, seed: int, run: int, fast: bool = True,
                   holdout: float = 0.0) -> dict[str, float]:
    """One run of ``python -m learners.replay --refit [--holdout F]``: the stream of run ``run``
    (its last ``holdout`` fraction held out), its metrics, then :func:`final_model_metrics`."""
    Xp, yp = permuted(X, task, seed, run)
    Xs, ys, Xh, yh = split_held_out(Xp, yp, holdout)
    learner, trace = replay_setting(setting, Xs, ys, task, seed, run, fast)
    out = trace_metrics(ys, trace, task)
    out.update(final_model_metrics(setting, learner, trace, Xs, ys, task, seed=run,
                                   held=(Xh, yh) if holdout > 0 else None))
    return out
