"""What runners record, and what estimators return.

Runners move particles and *record*; they never compute log Z. Estimators are pure functions of a record
that return an :class:`EvidenceEstimate`. The records are plain frozen dataclasses of NumPy arrays, documented
field by field, so that one record can feed several estimators and can be stored in a result.

Sign convention (everywhere in pmz): we report ``log Z = log Z1 - log Z0 + log_z0``; the log importance
weight of a forward annealing path is ``log w_f = sum_k (b_k - b_{k-1}) U(x_{k-1})`` and its *work* is
``W_f = -log w_f``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["WorkRecord", "BidirectionalRecord", "EvidenceEstimate"]


@dataclass(frozen=True)
class WorkRecord:
    """Per-path record of an annealed importance sampling run (Neal 2001; Habeck 2017 section 2).

    Attributes
    ----------
    log_weights : ndarray, shape (n_paths,)
        ``log w = sum_{k=1}^{K} (b_k - b_{k-1}) U(x_{k-1})`` for each path; for a reverse run
        (``direction == "reverse"``) ``log w_r = -sum_k (b_k - b_{k-1}) U(x_k)``. Work is ``-log_weights``.
    schedule : ndarray, shape (K + 1,)
        The inverse temperatures ``0 = b_0 < ... < b_K = 1``.
    direction : {"forward", "reverse"}
        Forward paths start at exact draws of p_0; reverse paths start at draws of p_1.
    log_z0 : float
        log normalising constant of the start density f0 (0 for a normalised prior or reference).
    n_steps_per_temp : int
        Kernel steps made at each intermediate temperature.
    kernel : str
        Name of the Markov kernel.
    acceptance : ndarray, shape (K + 1,)
        Mean acceptance rate of the kernel at each temperature over all paths and steps (NaN where no move
        was made, i.e. at the start temperature).
    step_size : ndarray, shape (K + 1,)
        The frozen step size used at each temperature.
    ess_path : ndarray, shape (K + 1,)
        Effective sample size ``(sum w)^2 / sum w^2`` of the running weights after each temperature
        ("on-the-fly ESS" along the path); ``ess_path[-1]`` is the ESS of the final weights. Indexed by the
        number of increments made, so for a reverse run ``ess_path[i]`` is after ``b_K .. b_{K-i}``.
    final_x : ndarray or None, shape (n_paths, dim)
        Final particle positions in the flat unconstrained space (weighted draws of p_1), if kept.
    n_logp_evals : int
        Particle log-density evaluations (value only) spent by this run.
    n_grad_evals : int
        Particle log-density evaluations with gradients spent by this run.
    tuning : dict
        How the kernel parameters were chosen (pilot size, adaptation steps, target acceptance, and the
        pilot's own evaluation counts ``pilot_logp_evals`` / ``pilot_grad_evals``).
    """

    log_weights: np.ndarray
    schedule: np.ndarray
    direction: str = "forward"
    log_z0: float = 0.0
    n_steps_per_temp: int = 1
    kernel: str = ""
    acceptance: np.ndarray | None = None
    step_size: np.ndarray | None = None
    ess_path: np.ndarray | None = None
    final_x: np.ndarray | None = None
    n_logp_evals: int = 0
    n_grad_evals: int = 0
    tuning: dict = field(default_factory=dict)

    def __post_init__(self):
        lw = np.asarray(self.log_weights, dtype=float)
        if lw.ndim != 1 or lw.size == 0:
            raise ValueError("WorkRecord.log_weights must be a non-empty 1-d array (one entry per path)")
        if self.direction not in ("forward", "reverse"):
            raise ValueError(f"direction must be 'forward' or 'reverse', got {self.direction!r}")
        object.__setattr__(self, "log_weights", lw)
        object.__setattr__(self, "schedule", np.asarray(self.schedule, dtype=float))

    @property
    def n_paths(self) -> int:
        return self.log_weights.size

    @property
    def n_temps(self) -> int:
        """Number of annealing steps K (the schedule has K + 1 points)."""
        return self.schedule.size - 1

    @property
    def work(self) -> np.ndarray:
        """Work ``W = -log w`` of each path."""
        return -self.log_weights


@dataclass(frozen=True)
class BidirectionalRecord:
    """A forward and a reverse run over the same schedule and kernels (Habeck 2017): the input of BAR,
    the histogram estimator, the cumulants and the bounds.

    Attributes
    ----------
    forward : WorkRecord
        Paths from exact draws of p0.
    reverse : WorkRecord
        Paths from draws of p1, kernels in the reverse order.
    reverse_start : str
        Where the reverse paths started: ``"posterior"`` (draws the user passed), ``"nuts"`` (a ``pm.sample``
        run), ``"resample"`` (forward end states resampled by their weights: the reverse run then inherits the
        forward run's bias), or ``"exact"`` (exact draws of p1, e.g. a toy or a system sampler).
    n_eff_reverse : float or None
        Effective size of the reverse sample when its starts are correlated (MCMC draws); None means
        ``reverse.n_paths`` independent starts. Used for the variance of bridge sampling (K = 1).
    """

    forward: WorkRecord
    reverse: WorkRecord
    reverse_start: str = "exact"
    n_eff_reverse: float | None = None

    def __post_init__(self):
        if self.forward.direction != "forward" or self.reverse.direction != "reverse":
            raise ValueError("BidirectionalRecord needs a forward and a reverse WorkRecord, in that order")
        if self.forward.schedule.shape != self.reverse.schedule.shape or not np.allclose(
            self.forward.schedule, self.reverse.schedule
        ):
            raise ValueError("the forward and reverse runs must share one schedule")

    @property
    def final_x(self):
        return self.forward.final_x

    @property
    def log_weights(self):
        return self.forward.log_weights


@dataclass(frozen=True)
class EvidenceEstimate:
    """A log Z estimate with its standard error; what every estimator returns.

    Attributes
    ----------
    log_z : float
        The estimate of log Z (log evidence for a Bayesian model with a normalised prior).
    log_z_se : float
        Its standard error (the method's own: delta method, asymptotic, or posterior sd).
    method : str
        Name of the estimator.
    log_z_draws : ndarray or None
        Draws describing the estimate's uncertainty (a Bayesian posterior where the method has one);
        ``None`` means "normal with sd log_z_se", which the result turns into draws itself.
    diagnostics : dict
        Method-specific scalars and arrays (ESS, bootstrap se, bounds, ...).
    warnings : list of str
        Human-readable warnings (e.g. low ESS) that the result also emits.
    """

    log_z: float
    log_z_se: float
    method: str
    log_z_draws: np.ndarray | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
