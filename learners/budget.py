"""Online budget control: adapt a learner's query knob so that its query ratio tracks a target.

Used by the replay (``--budget R``) and by the app (the same class, state saved as JSON).

Control law (integral control on the log of the knob, with anti-windup clamping)::

    after item t with query indicator Z_t in {0, 1}:
        log k_{t+1} = clip(log k_t + gain * (R - Z_t), log low, log high)

``k`` is the knob: ``delta`` for the active rules (every learner's q grows with delta) and
``p`` for ``query="random"`` (q = p). Every unqueried item nudges the knob up by a factor
``exp(gain * R)``, every query pulls it down by ``exp(-gain * (1 - R))``; the knob is stationary
only where the expected query rate equals R. While no clamp is active,
``log k_t = log k_0 + gain * (R t - Q_t)`` with ``Q_t`` the queries so far: the knob is a
function of the query deficit ``R t - Q_t``, which the loop keeps bounded, so the running
ratio ``Q_t / t`` converges to R at rate O(1/t). Clamping the state (not just the output)
stops a deficit the learner cannot follow (e.g. forced queries) from winding up.

The learner's own rule is untouched: the controller only calls ``set_params`` between items.
"""

from __future__ import annotations

import math
from typing import Any

#: default clamps of each knob (delta spans the papers' 2^-10..2^10 sweeps with margin)
KNOB_LIMITS = {"delta": (2.0 ** -30, 2.0 ** 30), "p": (1e-6, 1.0)}


def knob_name(query: str) -> str:
    """The parameter a budget adapts for a learner in query mode ``query``: ``p`` or ``delta``."""
    return "p" if query == "random" else "delta"


class BudgetController:
    """Integral controller of a query knob (see the module docstring for the law).

    target: the wanted query ratio R in (0, 1].
    initial: the knob's starting value k_0 (> 0).
    knob: ``"delta"`` or ``"p"`` (only names the parameter and picks the default clamps).
    gain: step of ``log k`` per unit of error (> 0); 0.05 moves delta by a factor ~e after
        20 surplus queries.
    low, high: clamps of the knob (defaults from :data:`KNOB_LIMITS`).
    """

    def __init__(self, target: float, initial: float = 1.0, *, knob: str = "delta", gain: float = 0.05,
                 low: float | None = None, high: float | None = None) -> None:
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
        if not float(gain) > 0.0:
            raise ValueError(f"gain must be > 0, got {gain!r}")
        self.target = float(target)
        self.knob = knob
        self.gain = float(gain)
        self.log_value = self._clip(math.log(float(initial)))
        self.n_seen = 0
        self.n_queried = 0

    def _clip(self, log_value: float) -> float:
        return min(max(log_value, math.log(self.low)), math.log(self.high))

    @property
    def value(self) -> float:
        """The knob value to use for the next decision."""
        return math.exp(self.log_value)

    @property
    def ratio(self) -> float:
        """Running query ratio so far (0 before the first item)."""
        return self.n_queried / self.n_seen if self.n_seen else 0.0

    def update(self, queried: bool) -> float:
        """Record one decision (queried or not) and return the knob for the next one."""
        self.n_seen += 1
        self.n_queried += int(bool(queried))
        self.log_value = self._clip(self.log_value + self.gain * (self.target - float(bool(queried))))
        return self.value

    def apply(self, learner: Any) -> None:
        """Set the learner's knob (``learner.set_params(delta=...)`` or ``p=...``) to :attr:`value`."""
        learner.set_params(**{self.knob: self.value})

    def get_state(self) -> dict[str, Any]:
        """JSON-able state; :meth:`from_state` continues exactly."""
        return {"target": self.target, "knob": self.knob, "gain": self.gain, "low": self.low,
                "high": self.high, "log_value": self.log_value, "n_seen": self.n_seen,
                "n_queried": self.n_queried}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> BudgetController:
        ctl = cls(state["target"], 1.0, knob=state["knob"], gain=state["gain"], low=state["low"],
                  high=state["high"])
        ctl.log_value = float(state["log_value"])
        ctl.n_seen = int(state["n_seen"])
        ctl.n_queried = int(state["n_queried"])
        return ctl
