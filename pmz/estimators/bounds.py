"""Stochastic lower and upper bounds on log Z from forward and reverse work (Habeck 2017 section 3; Burda et al. 2015).

By Jensen's inequality applied to ``E[w_f] = Z`` and ``E[w_r] = 1/Z``,

    E[log w_f] <= log Z <= -E[log w_r],

so ``mean(log w_f)`` is a stochastic lower bound and ``-mean(log w_r)`` a stochastic upper bound ("stochastic":
each holds for the expectation, a finite-sample mean can cross the truth by its own standard error). The gap
``upper - lower = mean(W_f) + mean(W_r)`` is the hysteresis (the total dissipated work of a forward and a reverse
path); it shrinks to zero as the annealing approaches the quasi-static limit.

This module also holds :func:`check_work_pair`, the input validation shared by every estimator that combines a
forward and a reverse :class:`~pmz.records.WorkRecord` (cumulant, BAR, histogram).
"""

from __future__ import annotations

import numpy as np

from ..estimate_diagnostics import WorkDiagnostics
from ..records import EvidenceEstimate, WorkRecord

__all__ = ["bounds_from_log_weights", "check_log_weights", "check_work_pair", "stochastic_bounds"]


def check_log_weights(log_w, name: str = "log_weights", *, allow_minus_inf: bool = True) -> np.ndarray:
    """Return ``log_w`` as a 1-d float array after checking it (no NaN or +inf; -inf only if allowed).

    A log weight of -inf (weight 0, infinite work) is legitimate for the Jarzynski-type and BAR estimators but
    makes moments of the work (cumulants, bounds) undefined; those pass ``allow_minus_inf=False``.
    """
    log_w = np.asarray(log_w, dtype=float)
    if log_w.ndim != 1 or log_w.size == 0:
        raise ValueError(f"pmz: {name} must be a non-empty 1-d array (one entry per path)")
    if np.any(np.isnan(log_w)) or np.any(log_w == np.inf):
        raise ValueError(f"pmz: {name} contains NaN or +inf; every path must have a well-defined log weight")
    if not allow_minus_inf and not np.all(np.isfinite(log_w)):
        n_bad = int(np.sum(~np.isfinite(log_w)))
        raise ValueError(
            f"pmz: {name} has {n_bad} paths with weight 0 (log w = -inf, infinite work); the moments of the work "
            "are then undefined. Use the Jarzynski or BAR estimators, or fix the annealing."
        )
    if not np.any(np.isfinite(log_w)):
        raise ValueError(f"pmz: every path in {name} has weight 0 (log w = -inf); the annealing failed")
    return log_w


def check_work_pair(forward: WorkRecord, reverse: WorkRecord) -> tuple[np.ndarray, np.ndarray, float]:
    """Check that two records are a forward and a reverse run of the same path; return their log weights.

    Parameters
    ----------
    forward, reverse : WorkRecord
        ``forward.direction`` must be ``"forward"`` and ``reverse.direction`` ``"reverse"``; both must have the
        same schedule and the same ``log_z0``.

    Returns
    -------
    log_w_f, log_w_r : ndarray
        The forward and reverse log weights.
    log_z0 : float
        The common log normaliser of f0, to be added to the estimate.

    Raises
    ------
    ValueError
        With a message saying which condition failed.
    """
    for record, name in ((forward, "forward"), (reverse, "reverse")):
        if not isinstance(record, WorkRecord):
            raise TypeError(f"pmz: the {name} argument must be a WorkRecord, got {type(record).__name__}")
    if forward.direction != "forward" or reverse.direction != "reverse":
        raise ValueError(
            "pmz: expected a forward and a reverse WorkRecord (in that order), got directions "
            f"{forward.direction!r} and {reverse.direction!r}"
        )
    sf, sr = forward.schedule, reverse.schedule
    if sf.shape != sr.shape or not np.allclose(sf, sr, rtol=0.0, atol=1e-12):
        raise ValueError(
            "pmz: the forward and reverse records must share one schedule (the reverse run must retrace the "
            f"forward path); got {sf.size} and {sr.size} temperatures"
            + ("" if sf.shape != sr.shape else " with different values")
        )
    if not np.isclose(forward.log_z0, reverse.log_z0, rtol=0.0, atol=1e-10):
        raise ValueError(
            "pmz: the forward and reverse records must share log_z0 (the same start density f0); got "
            f"{forward.log_z0!r} and {reverse.log_z0!r}"
        )
    return forward.log_weights, reverse.log_weights, float(forward.log_z0)


def bounds_from_log_weights(log_w_f, log_w_r) -> dict:
    """Stochastic bounds on ``log Z - log Z0`` from arrays of forward and reverse log weights.

    Returns
    -------
    dict
        ``lower = mean(log w_f)``, ``upper = -mean(log w_r)``, their standard errors ``lower_se``,
        ``upper_se`` (sd / sqrt(n)), ``gap = upper - lower`` and ``gap_se``.

    Examples
    --------
    >>> b = bounds_from_log_weights([-3.0, -2.0, -1.0], [1.0, 2.0, 3.0])
    >>> b["lower"], b["upper"], b["gap"]
    (-2.0, -2.0, 0.0)
    """
    log_w_f = check_log_weights(log_w_f, "forward log weights", allow_minus_inf=False)
    log_w_r = check_log_weights(log_w_r, "reverse log weights", allow_minus_inf=False)
    lower = float(np.mean(log_w_f))
    upper = float(-np.mean(log_w_r))
    lower_se = float(np.std(log_w_f, ddof=1) / np.sqrt(log_w_f.size)) if log_w_f.size > 1 else np.inf
    upper_se = float(np.std(log_w_r, ddof=1) / np.sqrt(log_w_r.size)) if log_w_r.size > 1 else np.inf
    return {
        "lower": lower,
        "upper": upper,
        "lower_se": lower_se,
        "upper_se": upper_se,
        "gap": upper - lower,
        "gap_se": float(np.hypot(lower_se, upper_se)),
    }


def stochastic_bounds(forward: WorkRecord, reverse: WorkRecord) -> EvidenceEstimate:
    """Stochastic lower and upper bounds on log Z and their midpoint (Habeck 2017 eq 9; Burda et al. 2015).

        lower = log Z0 + mean(log w_f) <= log Z <= log Z0 - mean(log w_r) = upper

    Parameters
    ----------
    forward, reverse : WorkRecord
        A forward and a reverse run over the same schedule (see :func:`check_work_pair`).

    Returns
    -------
    EvidenceEstimate
        ``log_z`` = the midpoint ``(lower + upper) / 2``. ``log_z_se`` is not a sampling standard error but a
        half-width: ``sqrt((gap / 2)^2 + (lower_se^2 + upper_se^2) / 4)``, i.e. the largest error of the midpoint
        when both bounds hold (half the gap) combined in quadrature with the midpoint's own sampling error. It is
        therefore conservative; use BAR for a real error bar. :class:`~pmz.estimate_diagnostics.WorkDiagnostics`
        with ``estimate_is_bounds=True``, ``lower``, ``upper``, ``lower_se``, ``upper_se``, ``gap`` (the
        hysteresis ``mean(W_f) + mean(W_r)``), ``gap_se``, ``n_forward``, ``n_reverse``. A warning is issued when
        the gap is negative by more than three of its standard errors (impossible in expectation: reverse starts
        not from p1, or the two runs are not of the same path).

    Examples
    --------
    >>> from pmz.records import WorkRecord
    >>> f = WorkRecord(log_weights=[-3.0, -2.0], schedule=[0.0, 1.0])
    >>> r = WorkRecord(log_weights=[1.0, 2.0], schedule=[0.0, 1.0], direction="reverse")
    >>> est = stochastic_bounds(f, r)
    >>> est.diagnostics.lower, est.diagnostics.upper, est.log_z
    (-2.5, -1.5, -2.0)
    """
    log_w_f, log_w_r, log_z0 = check_work_pair(forward, reverse)
    b = bounds_from_log_weights(log_w_f, log_w_r)
    lower, upper = b["lower"] + log_z0, b["upper"] + log_z0
    half_width = float(np.sqrt((b["gap"] / 2) ** 2 + (b["lower_se"] ** 2 + b["upper_se"] ** 2) / 4))
    diagnostics = WorkDiagnostics(
        estimate_is_bounds=True,
        lower=lower,
        upper=upper,
        lower_se=b["lower_se"],
        upper_se=b["upper_se"],
        gap=b["gap"],
        gap_se=b["gap_se"],
        n_forward=log_w_f.size,
        n_reverse=log_w_r.size,
    )
    warnings = []
    if b["gap"] < -3 * b["gap_se"]:
        warnings.append(
            f"pmz: the upper bound ({upper:.4g}) lies below the lower bound ({lower:.4g}) by more than three "
            "standard errors; the reverse paths probably did not start from the target (exact posterior draws) "
            "or the two records are not of the same path."
        )
    return EvidenceEstimate(
        log_z=(lower + upper) / 2,
        log_z_se=half_width,
        method="bounds",
        diagnostics=diagnostics,
        warnings=warnings,
    )
