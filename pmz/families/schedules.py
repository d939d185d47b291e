"""Annealing schedules ``0 = b_0 < b_1 < ... < b_K = 1``.

* ``linear``:     b_k = k / K
* ``geometric``:  b_k = b_min^((K - k) / (K - 1)) for k >= 1 (equal ratios; b_min = 1e-5 by default)
* ``power``:      b_k = (k / K)^p (p = 4 by default; Friel & Pettitt 2008 use p = 5 for power posteriors)
* ``sigmoidal``:  b_k = (s(d (2k/K - 1)) - s(-d)) / (s(d) - s(-d)), s the logistic function, d = 4
  (Grosse, Maddison & Salakhutdinov 2013)
* a user array, validated (starts at 0, ends at 1, strictly increasing).

Optimal schedules (``"varopt"``: constant thermodynamic speed from a pilot's metric; ``"adaptive"``: the pilot's
conditional-ESS walk) and deceleration are in :mod:`pmz.families.metric` (the metric, length and action),
:mod:`pmz.families.optimal` (the optimal schedules), :mod:`pmz.families.adaptive` (the conditional-ESS step) and
:mod:`pmz.methods.schedule` (the pilot that measures the metric).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

__all__ = ["make_schedule", "validate_schedule", "linear", "geometric", "power", "sigmoidal", "SCHEDULES"]


def linear(n_temps: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, n_temps + 1)


def geometric(n_temps: int, *, beta_min: float = 1e-5) -> np.ndarray:
    if not 0 < beta_min < 1:
        raise ValueError(f"beta_min must lie in (0, 1), got {beta_min}")
    if n_temps == 1:
        return np.array([0.0, 1.0])
    k = np.arange(1, n_temps + 1)
    return np.concatenate([[0.0], beta_min ** ((n_temps - k) / (n_temps - 1))])


def power(n_temps: int, *, exponent: float = 4.0) -> np.ndarray:
    if exponent <= 0:
        raise ValueError(f"exponent must be positive, got {exponent}")
    return np.linspace(0.0, 1.0, n_temps + 1) ** exponent


def sigmoidal(n_temps: int, *, delta: float = 4.0) -> np.ndarray:
    if delta <= 0:
        raise ValueError(f"delta must be positive, got {delta}")
    s = 1.0 / (1.0 + np.exp(-delta * (2.0 * np.arange(n_temps + 1) / n_temps - 1.0)))
    return (s - s[0]) / (s[-1] - s[0])


SCHEDULES = {"linear": linear, "geometric": geometric, "power": power, "sigmoidal": sigmoidal}


def validate_schedule(schedule) -> np.ndarray:
    """Check a user schedule: 1-d, at least two points, starts at 0, ends at 1, strictly increasing."""
    b = np.asarray(schedule, dtype=float)
    if b.ndim != 1 or b.size < 2:
        raise ValueError("pmz: a schedule must be a 1-d array of at least two inverse temperatures")
    if not np.all(np.isfinite(b)):
        raise ValueError("pmz: the schedule contains NaN or inf")
    if b[0] != 0.0 or b[-1] != 1.0:
        raise ValueError(f"pmz: the schedule must start at 0 and end at 1 (got {b[0]} ... {b[-1]})")
    if np.any(np.diff(b) <= 0):
        bad = int(np.argmax(np.diff(b) <= 0))
        raise ValueError(
            f"pmz: the schedule must be strictly increasing (b[{bad}]={b[bad]} >= b[{bad + 1}]={b[bad + 1]})"
        )
    return b


def make_schedule(schedule="power", n_temps: int | None = None, **options) -> np.ndarray:
    """A schedule from a name (with ``n_temps`` steps and the rule's options) or from a user array."""
    if isinstance(schedule, str):
        if schedule not in SCHEDULES:
            raise ValueError(f"pmz: unknown schedule {schedule!r}; choose one of {sorted(SCHEDULES)} or pass an array")
        if isinstance(n_temps, bool) or not isinstance(n_temps, Integral) or n_temps < 1:
            raise ValueError(f"pmz: n_temps must be a positive integer, got {n_temps!r}")
        return validate_schedule(SCHEDULES[schedule](int(n_temps), **options))
    if options:
        raise ValueError(f"pmz: schedule options {sorted(options)} only apply to named schedules")
    return validate_schedule(schedule)
