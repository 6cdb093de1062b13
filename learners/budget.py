"""Budget mode: hold a learner's query ratio at a target R whatever its published rule does.

Used by the replay (``--budget R``) and by the app (the same class, state saved as JSON).
How budget mode works and how it departs from each paper: ``docs/budget.md``. In short, for
each item the learner's own query probability ``q`` (its published rule at the current knob)
goes through the stages below before the one Bernoulli draw of :meth:`learners.base.Learner.decide`:

0. **Plan** (all learners). The labels the stream may have used after ``n`` items:
   ``plan(n) = R n + advance(n)``. The advance is ``R * horizon`` labels (the budget's share of
   the first ``horizon`` items) available from the first item, held until item ``horizon`` and
   repaid linearly over the next ``REPAY_SPAN * horizon`` items, after which ``plan(n) = R n``.
   Labels early in a stream improve every later prediction, so spending ahead at the start and
   paying back later buys online accuracy at the same final ratio (docs/budget.md, "Measured").
   When the stream's length N is known (an upload; the items expected from an API stream's
   arrival rate: :meth:`BudgetController.fit_length`) the plan fits it: the horizon is at most
   ``N / (1 + REPAY_SPAN)``, so the advance is repaid by item N, and the hard cap's burst at most
   ``BURST_SHARE * R * N`` labels, and when the law falls behind the plan by more than as many
   labels the rest of the stream is sampled at the rate still due (the catch-up), so a short
   stream ends within 10% of R from its first item.
1. **Knob** (all learners). The learner's query knob ``k`` (:meth:`Learner.budget_knob`:
   ``delta`` for the active rules, ``s0`` for OASIS's threshold rule, ``p`` for random
   querying and for learners that never query actively) follows an integral control law on
   its logarithm::

       L_{t+1} = clip(L_t + (g_t / R) * (R_t - q'_t) + pace_gain * E_t / R, L_min, L_max)
       k = clip(exp(L), low, high)

   where ``q'_t`` is the item's probability after stage 2 (an expectation, not the coin
   flip, so the law is not driven by sampling noise) and ``R_t = plan(t + 1) - plan(t)`` is the
   planned pace of stage 0 (R, lower while the advance is repaid). The error is divided by R
   so that the knob moves at the same relative pace at every target (a query at R = 2% pulls
   as hard, relative to the budget, as one at 20%). ``g_t`` is ``gain`` boosted while few
   queries were expected (``g_t = gain * max(1, boost / sqrt(1 + R t))``) so that a knob that
   starts far from its working value (OASIS's ``s0 = 0.01``) gets there within the first few
   hundred items. The pace term's ``E_t = plan(t) - n_queried`` is the deficit of labels
   against the plan (stage 0): the first term alone lags a knob whose working value drifts as
   the learner improves (its margins grow, so the same delta queries less), and that lag
   under-spent the budget by 5-11% on the raw streams (docs/budget.md). ``pace_gain =
   gain^2 / 4`` makes the two terms a critically damped loop.
2. **Thinning** (rules whose ``q`` does not fall with the knob, e.g. SOAL's ``rho <= 0`` and
   D-ADA's ``q <= 0`` force ``q = 1``, KMC's cold start). The same state ``L`` continues
   below ``log low``: there ``k = low`` and every probability is multiplied by
   ``exp(L - log low)``, down to R (a stream where every item is forced is then sampled at
   rate R). Thinning is proportional, so the rule's ordering of the items is kept.
   For ``p`` the knob *is* the probability (``q' = p``): a learner in ``query="random"`` or
   ``"all"`` mode, or one that never queries actively (``osis``, ``os``), is sampled at R.
3. **Hard cap.** An item is never queried when ``n_queried + 1 > plan(n_seen + 1) + burst``:
   past the repayment the running ratio can exceed R only by ``burst / n_seen`` (the law
   alone overshoots while the knob is still travelling, e.g. during a learner's forced start). The law skips
   the items the cap held (anti-windup: a short forced start, such as OASIS's first items or
   a margin of 0 before the first label, would otherwise drive the knob far down), and one
   step moves ``L`` by at most :data:`MAX_STEP`.

Without a budget none of this runs and every learner follows its paper.
"""

from __future__ import annotations

import math
from typing import Any

#: default clamps of each knob (``s0`` above 1 queries every item: the score is in [0, 1])
KNOB_LIMITS = {"delta": (2.0 ** -12, 2.0 ** 12), "p": (1e-6, 1.0), "s0": (1e-4, 1.5)}
#: default gain of each knob: a threshold (``s0``) changes the query rate in steps, so its knob
#: must travel further and faster than a smooth rule's ``delta``
KNOB_GAINS = {"delta": 0.005, "p": 0.005, "s0": 0.03}
#: knobs that are the query probability itself (no thinning stage below them)
PROBABILITY_KNOBS = frozenset({"p"})
#: default advance horizon (items): R * ADVANCE_HORIZON labels may be spent ahead of the pace
ADVANCE_HORIZON = 1000.0
#: the advance is repaid linearly over REPAY_SPAN * horizon items after the horizon
REPAY_SPAN = 2.0
#: with a known length N the hard cap's burst is at most this share of the budget R * N (the
#: default 3 labels are 30% of a 5% budget on 200 items)
BURST_SHARE = 0.05
#: largest move of ``log k`` on one item (a forced query early in a stream, boosted, would
#: otherwise throw the knob far below its working range)
MAX_STEP = 0.5


def knob_name(query: str) -> str:
    """The knob a budget adapts for a learner in query mode ``query``: ``delta`` or ``p``.

    Learners may refine it (OASIS's threshold rule: ``s0``); use :meth:`Learner.budget_knob`.
    """
    return "delta" if query == "active" else "p"


class BudgetController:
    """Budget mode of one stream (see the module docstring for the three stages).

    target: the wanted query ratio R in (0, 1].
    initial: the knob's starting value (> 0; clipped to the limits).
    knob: ``"delta"``, ``"s0"`` or ``"p"`` (names the parameter and picks the default limits).
    gain: step of ``log k`` per unit of relative error ``(R - q)/R`` (> 0; default from
        :data:`KNOB_GAINS`).
    low, high: limits of the knob (defaults from :data:`KNOB_LIMITS`).
    burst: queries the hard cap allows above ``R * n_seen`` (>= 0).
    boost: early gain multiplier (>= 1, see :meth:`step_gain`).
    horizon: the advance's horizon in items (>= 0; 0: no advance, the plan is ``R n``).
    pace_gain: gain of the pace term on the label deficit (>= 0; default ``gain^2 / 4``).
    length: the stream's expected length in items, or None when unknown (see :meth:`fit_length`).
    """

    def __init__(self, target: float, initial: float = 1.0, *, knob: str = "delta",
                 gain: float | None = None, low: float | None = None, high: float | None = None,
                 burst: float = 3.0, boost: float = 4.0, horizon: float = ADVANCE_HORIZON,
                 pace_gain: float | None = None, length: float | None = None) -> None:
        if not 0.0 < float(target) <= 1.0:
            raise ValueError(f"budget target must be a query ratio in (0, 1], got {target!r}")
        if knob not in KNOB_LIMITS:
            raise ValueError(f"knob must be one of {sorted(KNOB_LIMITS)}, got {knob!r}")
        lo_default, hi_default = KNOB_LIMITS[knob]
        self.low = float(lo_default if low is None else low)
        self.high = float(hi_default if high is None else high)
        if not 0.0 < self.low <= self.high:
            raise ValueError(f"knob limits must satisfy 0 < low <= high, got {self.low}, {self.high}")
        if not float(initial) > 0.0:
            raise ValueError(f"initial knob value must be > 0, got {initial!r}")
        gain = KNOB_GAINS[knob] if gain is None else gain
        if not float(gain) > 0.0:
            raise ValueError(f"gain must be > 0, got {gain!r}")
        if not float(boost) >= 1.0:
            raise ValueError(f"boost must be >= 1, got {boost!r}")
        if not float(burst) >= 0.0:
            raise ValueError(f"burst must be >= 0, got {burst!r}")
        pace_gain = float(gain) ** 2 / 4.0 if pace_gain is None else pace_gain
        if not float(horizon) >= 0.0:
            raise ValueError(f"horizon must be >= 0, got {horizon!r}")
        if not float(pace_gain) >= 0.0:
            raise ValueError(f"pace_gain must be >= 0, got {pace_gain!r}")
        self.target = float(target)
        self.knob = knob
        self.gain = float(gain)
        self.burst = float(burst)
        self.boost = float(boost)
        self.horizon = float(horizon)
        self.pace_gain = float(pace_gain)
        self.offset = 0.0  # keeps the plan continuous when the target changes (retarget)
        self.length: float | None = None
        if length is not None:
            self.fit_length(length)
        self._set_limits()
        self.log_value = self._clip(math.log(float(initial)))
        self.n_seen = 0
        self.n_queried = 0

    @classmethod
    def for_learner(cls, target: float, learner: Any, **options: Any) -> BudgetController:
        """A controller for ``learner``'s budget knob, starting from the knob's current value
        (``options``: the constructor's keyword arguments, e.g. ``length``)."""
        knob = learner.budget_knob()
        initial = target if knob in PROBABILITY_KNOBS else float(learner.get_params()[knob])
        return cls(target, initial, knob=knob, **options)

    # ------------------------------------------------------------------ state law
    def _set_limits(self) -> None:
        """The logarithms of the knob's limits, computed once per target (every decision uses
        them): ``log low``, ``log high`` and the state's floor."""
        self._log_low = math.log(self.low)
        self._log_high = math.log(self.high)
        self._floor = self._log_low
        if self.knob not in PROBABILITY_KNOBS:
            self._floor += math.log(self.target)  # the thinning stage reaches down to a factor R
        self._pending: tuple | None = None  # adjust()'s figures for record() (see there)

    def _clip(self, log_value: float) -> float:
        return min(max(log_value, self._floor), self._log_high)

    @property
    def value(self) -> float:
        """The knob value used for the next decision (within ``[low, high]``)."""
        return min(max(math.exp(self.log_value), self.low), self.high)

    @property
    def thinning(self) -> float:
        """Factor in (R, 1] applied to the learner's probability (1 unless the knob is at ``low``)."""
        return min(1.0, math.exp(self.log_value - self._log_low))

    @property
    def ratio(self) -> float:
        """Running query ratio so far (0 before the first item)."""
        return self.n_queried / self.n_seen if self.n_seen else 0.0

    def advance(self, n: float) -> float:
        """Labels the plan allows ahead of ``R n`` after ``n`` items (stage 0)."""
        # DEVIATION (budget mode): no paper spends ahead of its pace (docs/budget.md).
        horizon = self.fitted_horizon
        ahead = self.target * horizon
        if n <= horizon or ahead == 0.0:
            return ahead
        return max(0.0, ahead * (1.0 - (n - horizon) / (REPAY_SPAN * horizon)))

    @property
    def fitted_horizon(self) -> float:
        """The advance's horizon in items: ``horizon``, at most ``length / (1 + REPAY_SPAN)``
        when the length is known (the advance is then repaid by the stream's last item)."""
        if self.length is None:
            return self.horizon
        # DEVIATION (budget mode): the plan fits a known length (docs/budget.md).
        return min(self.horizon, self.length / (1.0 + REPAY_SPAN))

    @property
    def fitted_burst(self) -> float:
        """The hard cap's burst in labels: ``burst``, at most ``BURST_SHARE * R * length`` when the
        length is known."""
        if self.length is None:
            return self.burst
        return min(self.burst, BURST_SHARE * self.target * self.length)

    def fit_length(self, length: float) -> None:
        """Fit the plan to a stream expected to have ``length`` items (> 0) in all.

        The length only grows (a second upload adds items; a stream never loses the items it
        has decided): a shorter ``length`` than the one known is ignored. With a length of
        ``(1 + REPAY_SPAN) * horizon`` items or more (3,000 by default) nothing changes.
        """
        if not float(length) > 0.0:
            raise ValueError(f"stream length must be > 0 items, got {length!r}")
        self.length = max(float(length), self.length or 0.0)

    def plan(self, n: float) -> float:
        """Labels the stream may have used after ``n`` items: ``R n + advance(n)`` (stage 0)."""
        return self.target * n + self.advance(n) + self.offset

    def retarget(self, target: float) -> None:
        """Change R mid-stream (a per-day budget follows the arrival rate) without a jump in the
        plan: the labels already allowed stay allowed, the new R applies from here on (no
        catch-up of a past deficit, no freeze to repay a past surplus)."""
        if not 0.0 < float(target) <= 1.0:
            raise ValueError(f"budget target must be a query ratio in (0, 1], got {target!r}")
        before = self.plan(self.n_seen)
        self.target = float(target)
        self._set_limits()
        self.offset += before - self.plan(self.n_seen)

    def apply(self, learner: Any) -> None:
        """Set the learner's knob (:meth:`Learner.set_budget_knob`) before a decision."""
        learner.set_budget_knob(self.knob, self.value)

    def planned(self, q: float) -> float:
        """Stages 2 and 3's input: the probability budget mode plans for the learner's ``q``."""
        if self.knob in PROBABILITY_KNOBS:
            # DEVIATION (budget mode): random (and osis / os) items drawn at the knob p
            # (docs/budget.md).
            return max(self.value, self.catch_up())
        # DEVIATION (budget mode): forced queries (q = 1) thinned below the knob's floor
        # (docs/budget.md).
        return max(min(1.0, max(0.0, float(q))) * self.thinning, self.catch_up())

    def catch_up(self) -> float:
        """The least probability of the next item on a stream of known length N: the labels still
        due by its end, less a slack of ``BURST_SHARE * R * N``, over the items left, when that is
        more than R (the law alone fell behind the plan by more than the slack), else 0. Without
        a known length (or past it) always 0. The slack keeps a long stream that lags by a few
        labels on its own rule (a floor of R would sample its confident items at random)."""
        if self.length is None or self.n_seen >= self.length:
            return 0.0
        due = self.plan(self.length) - BURST_SHARE * self.target * self.length - self.n_queried
        rate = due / (self.length - self.n_seen)
        # DEVIATION (budget mode): no paper raises a probability to keep a promise (docs/budget.md).
        return min(1.0, rate) if rate > self.target else 0.0

    def capped(self) -> bool:
        """True when the hard cap forbids a query on the next item."""
        return self._capped(self.plan(self.n_seen + 1))

    def _capped(self, next_plan: float) -> bool:
        """:meth:`capped` given ``next_plan = plan(n_seen + 1)``."""
        # DEVIATION (budget mode): no paper caps its queries (docs/budget.md).
        return self.n_queried + 1 > next_plan + self.fitted_burst

    def adjust(self, q: float) -> float:
        """The probability to draw with for the learner's ``q``: thinned, then capped (0 if capped)."""
        next_plan = self.plan(self.n_seen + 1)
        planned, capped = self.planned(q), self._capped(next_plan)
        # record() of the same item reuses these figures (the state has not moved in between)
        self._pending = (q, self.n_seen, self.n_queried, self.log_value, planned, next_plan, capped)
        return 0.0 if capped else planned

    def step_gain(self) -> float:
        """The gain of the next step: ``gain * max(1, boost / sqrt(1 + R n_seen))``, larger while
        few queries were expected so the knob reaches its working range early in a stream."""
        return self.gain * max(1.0, self.boost / math.sqrt(1.0 + self.target * self.n_seen))

    def record(self, q: float, queried: bool) -> None:
        """Record one decision: the learner's ``q`` and whether the item was queried."""
        pending, self._pending = self._pending, None
        if pending is not None and pending[:4] == (q, self.n_seen, self.n_queried, self.log_value):
            planned, next_plan, capped = pending[4:]  # the same numbers adjust(q) just computed
        else:
            next_plan = self.plan(self.n_seen + 1)
            planned, capped = self.planned(q), self._capped(next_plan)
        pace = next_plan - self.plan(self.n_seen)  # R, less while repaying
        self.n_seen += 1
        self.n_queried += int(bool(queried))
        if capped:
            return  # anti-windup: the cap held this item, the knob need not move for it
        deficit = next_plan - self.n_queried  # plan(n_seen), n_seen counting this item
        step = (self.step_gain() * (pace - planned) + self.pace_gain * deficit) / self.target
        self.log_value = self._clip(self.log_value + max(-MAX_STEP, min(MAX_STEP, step)))

    # ---------------------------------------------------------------------- state
    def get_state(self) -> dict[str, Any]:
        """JSON-able state; :meth:`from_state` continues exactly (a state saved before the plan
        existed continues without advance and pace term, as it was running)."""
        return {"target": self.target, "knob": self.knob, "gain": self.gain, "low": self.low,
                "high": self.high, "burst": self.burst, "boost": self.boost, "horizon": self.horizon,
                "pace_gain": self.pace_gain, "offset": self.offset, "length": self.length,
                "log_value": self.log_value,
                "n_seen": self.n_seen, "n_queried": self.n_queried}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> BudgetController:
        ctl = cls(state["target"], 1.0, knob=state["knob"], gain=state["gain"], low=state["low"],
                  high=state["high"], burst=state.get("burst", 3.0), boost=state.get("boost", 4.0),
                  horizon=state.get("horizon", 0.0), pace_gain=state.get("pace_gain", 0.0))
        ctl.offset = float(state.get("offset", 0.0))
        ctl.length = None if state.get("length") is None else float(state["length"])
        ctl.log_value = float(state["log_value"])
        ctl.n_seen = int(state["n_seen"])
        ctl.n_queried = int(state["n_queried"])
        return ctl
