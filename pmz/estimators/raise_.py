"""Reverse AIS (RAISE) estimator of log Z (Burda, Grosse & Salakhutdinov 2015; Habeck 2017 eq 7).

A reverse path starts at an exact draw of the target p1 and anneals back to f0; its weight has ``E[w_r] = 1/Z``:

    log Z_hat = log Z0 - (logsumexp(log w_r) - log M)

Unbiased for 1/Z, hence biased *high* for log Z (Jensen): with the forward AIS estimate, which is biased low, it
brackets log Z in expectation. The delta-method standard error is the one of forward AIS with the reverse weights,
``se^2 = (M / ESS_r - 1) / (M - 1)``; a bootstrap over paths is also reported. Both are too small when the reverse
weights are heavy-tailed; pmz warns when ESS / M < 0.1.
"""

from __future__ import annotations

import numpy as np

from ..records import EvidenceEstimate, WorkRecord
from ..weights import ess as kish_ess
from ..weights import log_mean_weight, log_mean_weight_se
from .bounds import check_log_weights
from .jarzynski import bootstrap_log_mean_weight

__all__ = ["raise_estimate", "raise_log_z"]


def raise_log_z(log_w_r) -> tuple[float, float]:
    """RAISE on an array of reverse log weights: ``(log Z - log Z0, delta-method se)``.

    Examples
    --------
    >>> import numpy as np
    >>> log_z, se = raise_log_z(np.log([0.5, 0.5]))  # mean(w_r) = 1/2, so Z = 2
    >>> round(log_z, 6), round(se, 6)
    (0.693147, 0.0)
    """
    log_w_r = check_log_weights(log_w_r, "reverse log weights")
    return -log_mean_weight(log_w_r), log_mean_weight_se(log_w_r)


def raise_estimate(
    reverse_record: WorkRecord,
    *,
    rng: np.random.Generator | None = None,
    n_bootstrap: int = 1000,
    min_ess_fraction: float = 0.1,
) -> EvidenceEstimate:
    """log Z from reverse AIS (RAISE) work with delta-method and bootstrap standard errors.

    Parameters
    ----------
    reverse_record : WorkRecord
        A reverse record (paths started at draws of the target).
    rng : numpy.random.Generator, optional
        For the bootstrap (default: a fixed seed, so the estimate is a pure function of the record).
    n_bootstrap : int
        Bootstrap replicates (0 to skip).
    min_ess_fraction : float
        Warn when ESS / M of the reverse weights falls below this.

    Returns
    -------
    EvidenceEstimate
        ``method = "raise"``, ``log_z``, ``log_z_se`` (delta method) and diagnostics ``ess``, ``ess_fraction``,
        ``se_delta``, ``n_paths``, ``upper_bound`` (``log Z0 - mean(log w_r)``, a stochastic upper bound),
        ``var_log_w`` and, with a bootstrap, ``bootstrap_log_z`` and ``se_bootstrap``.

    Examples
    --------
    >>> import numpy as np
    >>> from pmz.records import WorkRecord
    >>> rec = WorkRecord(log_weights=np.log([0.25, 0.75]), schedule=[0.0, 1.0], direction="reverse")
    >>> round(raise_estimate(rec, n_bootstrap=0).log_z, 6)  # -log(mean(0.25, 0.75)) = log 2
    0.693147
    """
    if not isinstance(reverse_record, WorkRecord) or reverse_record.direction != "reverse":
        raise ValueError("pmz: raise_estimate needs a reverse WorkRecord (direction='reverse')")
    log_w_r = reverse_record.log_weights
    log_z_rel, se_delta = raise_log_z(log_w_r)
    log_z0 = float(reverse_record.log_z0)
    M = log_w_r.size
    ess = kish_ess(log_w_r)
    finite = log_w_r[np.isfinite(log_w_r)]
    diagnostics = {
        "ess": ess,
        "ess_fraction": ess / M,
        "se_delta": se_delta,
        "n_paths": M,
        "upper_bound": log_z0 - float(np.mean(finite)),
        "var_log_w": float(np.var(finite)),
    }
    if n_bootstrap:
        rng = np.random.default_rng(0) if rng is None else rng
        boot = log_z0 - bootstrap_log_mean_weight(log_w_r, rng, n_bootstrap)
        diagnostics["bootstrap_log_z"] = boot
        diagnostics["se_bootstrap"] = float(np.std(boot, ddof=1))
    warnings = []
    if ess / M < min_ess_fraction:
        warnings.append(
            f"pmz: the reverse AIS weights are degenerate (ESS = {ess:.1f} of {M} paths, {100 * ess / M:.1f}%); "
            "the RAISE log Z is likely biased high and its standard error too small. Use more temperatures or "
            "more kernel steps per temperature, and combine with forward paths (BAR)."
        )
    return EvidenceEstimate(
        log_z=log_z0 + log_z_rel,
        log_z_se=se_delta,
        method="raise",
        diagnostics=diagnostics,
        warnings=warnings,
    )
