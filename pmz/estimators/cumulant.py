"""Second-order cumulant (Gaussian-work) estimators of log Z (Habeck 2017 eq 12-13; Hummer 2001).

With ``X_f = log w_f = -W_f`` and ``X_r = log w_r = -W_r``, the cumulant expansion
``log E[exp(X)] = k1 + k2 / 2 + k3 / 6 + ...`` truncated after the variance gives

    forward:   log Z ~= mean(X_f) + var(X_f) / 2
    reverse:   log Z ~= -mean(X_r) - var(X_r) / 2
    combined:  log Z ~= (mean(X_f) - mean(X_r)) / 2 + (var(X_f) - var(X_r)) / 12      (Hummer 2001)

(``var`` with ``ddof = 1``). They are exact when the work is Gaussian (then Crooks' theorem forces
``var(W_f) = var(W_r)`` and all three agree) and biased otherwise, by about ``k3 / 6`` for the one-sided forms;
the combined form cancels the third-order terms of the two directions and is the most robust of the three.

Standard errors by the delta method: for ``theta = a mean(X) + b var(X)`` from n independent paths,

    Var(theta) ~= (a^2 s^2 + 2 a b m3 + b^2 (m4 - s^4)) / n,

with the sample variance ``s^2`` and central moments ``m3``, ``m4`` (``Var(mean) = s^2 / n``,
``Cov(mean, var) = m3 / n``, ``Var(var) = (m4 - s^4) / n``); the two directions are independent and their
variances add. A bootstrap over paths (within each direction) is also reported.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..estimate_diagnostics import LogWeightMoments, WorkDiagnostics
from ..records import EvidenceEstimate, WorkRecord
from .bounds import check_log_weights, check_work_pair

__all__ = ["cumulant", "cumulant_combined_log_z", "cumulant_forward_log_z", "cumulant_reverse_log_z"]

# (coefficient of the mean, coefficient of the variance) of each direction in each estimator
_COEFS = {
    "cumulant_forward": {"forward": (1.0, 0.5)},
    "cumulant_reverse": {"reverse": (-1.0, -0.5)},
    "cumulant_combined": {"forward": (0.5, 1.0 / 12.0), "reverse": (-0.5, -1.0 / 12.0)},
}


def _moments(x: np.ndarray) -> tuple[float, float, float, float]:
    """Sample mean, variance (ddof = 1) and third and fourth central moments."""
    if x.size < 2:
        raise ValueError("pmz: the cumulant estimators need at least two paths per direction")
    d = x - x.mean()
    return float(x.mean()), float(np.var(x, ddof=1)), float(np.mean(d**3)), float(np.mean(d**4))


def _delta_variance(x: np.ndarray, a: float, b: float) -> float:
    """Delta-method variance of ``a mean(x) + b var(x)``."""
    _, s2, m3, m4 = _moments(x)
    return max(a * a * s2 + 2 * a * b * m3 + b * b * (m4 - s2 * s2), 0.0) / x.size


def _combine(parts: dict[str, np.ndarray], kind: str) -> tuple[float, float]:
    log_z, var = 0.0, 0.0
    for direction, (a, b) in _COEFS[kind].items():
        x = parts[direction]
        mean, s2, _, _ = _moments(x)
        log_z += a * mean + b * s2
        var += _delta_variance(x, a, b)
    return float(log_z), float(np.sqrt(var))


def cumulant_forward_log_z(log_w_f) -> tuple[float, float]:
    """Forward cumulant estimate ``mean(log w_f) + var(log w_f) / 2`` of ``log Z - log Z0`` and its delta se.

    Examples
    --------
    >>> log_z, se = cumulant_forward_log_z([-3.0, -1.0])  # mean -2, var 2
    >>> log_z
    -1.0
    """
    x = check_log_weights(log_w_f, "forward log weights", allow_minus_inf=False)
    return _combine({"forward": x}, "cumulant_forward")


def cumulant_reverse_log_z(log_w_r) -> tuple[float, float]:
    """Reverse cumulant estimate ``-mean(log w_r) - var(log w_r) / 2`` of ``log Z - log Z0`` and its delta se.

    Examples
    --------
    >>> log_z, se = cumulant_reverse_log_z([1.0, 3.0])  # mean 2, var 2
    >>> log_z
    -3.0
    """
    x = check_log_weights(log_w_r, "reverse log weights", allow_minus_inf=False)
    return _combine({"reverse": x}, "cumulant_reverse")


def cumulant_combined_log_z(log_w_f, log_w_r) -> tuple[float, float]:
    """Combined (Hummer 2001) cumulant estimate of ``log Z - log Z0`` and its delta se.

    ``(mean(log w_f) - mean(log w_r)) / 2 + (var(log w_f) - var(log w_r)) / 12``

    Examples
    --------
    >>> log_z, se = cumulant_combined_log_z([-3.0, -1.0], [1.0, 3.0])  # equal variances cancel
    >>> log_z
    -2.0
    """
    x_f = check_log_weights(log_w_f, "forward log weights", allow_minus_inf=False)
    x_r = check_log_weights(log_w_r, "reverse log weights", allow_minus_inf=False)
    return _combine({"forward": x_f, "reverse": x_r}, "cumulant_combined")


def _bootstrap(parts: dict[str, np.ndarray], kind: str, rng: np.random.Generator, n_bootstrap: int, block: int = 200):
    """Bootstrap replicates of a cumulant estimate, resampling paths with replacement within each direction."""
    out = np.zeros(n_bootstrap)
    for start in range(0, n_bootstrap, block):
        stop = min(start + block, n_bootstrap)
        for direction, (a, b) in _COEFS[kind].items():
            x = parts[direction]
            xb = x[rng.integers(0, x.size, size=(stop - start, x.size))]
            out[start:stop] += a * xb.mean(axis=1) + b * xb.var(axis=1, ddof=1)
    return out


def _log_weight_moments(x: np.ndarray) -> LogWeightMoments:
    mean, s2, m3, m4 = _moments(x)
    sd = np.sqrt(s2)
    return LogWeightMoments(
        mean_log_w=mean,
        var_log_w=s2,
        skewness=float(m3 / sd**3) if sd > 0 else 0.0,
        excess_kurtosis=float(m4 / s2**2 - 3.0) if sd > 0 else 0.0,
        third_cumulant_term=m3 / 6.0,
    )


def cumulant(
    forward: WorkRecord | None = None,
    reverse: WorkRecord | None = None,
    *,
    rng: np.random.Generator | None = None,
    n_bootstrap: int = 1000,
) -> EvidenceEstimate:
    """Cumulant (Gaussian-work) estimate of log Z from forward, reverse or both records.

    Which estimator is used depends on what is given: forward only -> ``"cumulant_forward"``
    (``log Z0 + mean(log w_f) + var(log w_f) / 2``), reverse only -> ``"cumulant_reverse"``
    (``log Z0 - mean(log w_r) - var(log w_r) / 2``), both -> ``"cumulant_combined"`` (Hummer 2001,
    ``log Z0 + (mean(log w_f) - mean(log w_r)) / 2 + (var(log w_f) - var(log w_r)) / 12``).

    Parameters
    ----------
    forward, reverse : WorkRecord, optional
        At least one; when both are given they must share schedule and ``log_z0``.
    rng : numpy.random.Generator, optional
        For the bootstrap (default: a fixed seed, so the estimate is a pure function of the records).
    n_bootstrap : int
        Bootstrap replicates (0 to skip).

    Returns
    -------
    EvidenceEstimate
        ``method`` names the kind; ``log_z_se`` is the delta-method se.
        :class:`~pmz.estimate_diagnostics.WorkDiagnostics` with ``is_cumulant=True``, ``se_delta``, per direction
        ``forward_moments`` / ``reverse_moments`` (:class:`~pmz.estimate_diagnostics.LogWeightMoments`: mean and
        variance of log w, skewness and excess kurtosis, both near 0 for Gaussian work, and ``third_cumulant_term``
        ``m3 / 6``, the leading neglected term of a one-sided estimate) and ``n_forward`` / ``n_reverse``; with a
        bootstrap ``bootstrap_log_z`` and ``se_bootstrap``.
        A one-sided estimate warns when its neglected third-order term exceeds twice its standard error.

    Examples
    --------
    >>> from pmz.records import WorkRecord
    >>> f = WorkRecord(log_weights=[-3.0, -1.0], schedule=[0.0, 1.0])
    >>> r = WorkRecord(log_weights=[1.0, 3.0], schedule=[0.0, 1.0], direction="reverse")
    >>> [(e.method, e.log_z) for e in (cumulant(f, n_bootstrap=0), cumulant(reverse=r, n_bootstrap=0))]
    [('cumulant_forward', -1.0), ('cumulant_reverse', -3.0)]
    >>> cumulant(f, r, n_bootstrap=0).log_z
    -2.0
    """
    if forward is None and reverse is None:
        raise ValueError("pmz: cumulant needs a forward record, a reverse record, or both")
    if forward is not None and reverse is not None:
        log_w_f, log_w_r, log_z0 = check_work_pair(forward, reverse)
        kind = "cumulant_combined"
        parts = {"forward": log_w_f, "reverse": log_w_r}
    else:
        record = forward if forward is not None else reverse
        expected = "forward" if forward is not None else "reverse"
        if not isinstance(record, WorkRecord) or record.direction != expected:
            got = record.direction if isinstance(record, WorkRecord) else type(record).__name__
            raise ValueError(f"pmz: the {expected} argument of cumulant must be a {expected} WorkRecord, got {got!r}")
        kind = f"cumulant_{expected}"
        parts = {expected: record.log_weights}
        log_z0 = float(record.log_z0)
    parts = {d: check_log_weights(x, f"{d} log weights", allow_minus_inf=False) for d, x in parts.items()}
    log_z_rel, se_delta = _combine(parts, kind)
    moments = {direction: _log_weight_moments(x) for direction, x in parts.items()}
    sizes = {direction: x.size for direction, x in parts.items()}
    diagnostics = WorkDiagnostics(
        is_cumulant=True,
        se_delta=se_delta,
        forward_moments=moments.get("forward"),
        n_forward=sizes.get("forward"),
        reverse_moments=moments.get("reverse"),
        n_reverse=sizes.get("reverse"),
    )
    if n_bootstrap:
        rng = np.random.default_rng(0) if rng is None else rng
        boot = log_z0 + _bootstrap(parts, kind, rng, n_bootstrap)
        diagnostics = replace(diagnostics, bootstrap_log_z=boot, se_bootstrap=float(np.std(boot, ddof=1)))
    warnings = []
    if kind != "cumulant_combined":
        (direction,) = parts
        term = abs(moments[direction].third_cumulant_term)
        if term > 2 * se_delta:
            warnings.append(
                f"pmz: the {direction} work is far from Gaussian (neglected third-cumulant term {term:.3g} vs. "
                f"standard error {se_delta:.3g}); the {kind} estimate is biased. Prefer BAR or the combined form."
            )
    return EvidenceEstimate(
        log_z=log_z0 + log_z_rel, log_z_se=se_delta, method=kind, diagnostics=diagnostics, warnings=warnings
    )
