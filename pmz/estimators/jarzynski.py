"""Forward AIS / Jarzynski estimator of log Z (Neal 2001; Jarzynski 1997; Habeck 2017 eq 5).

    log Z_hat = log Z0 + logsumexp(log w) - log M

Unbiased for Z, biased low for log Z (Jensen). Its delta-method standard error uses the sample variance of
the weights:  se^2 = Var(w) / (M mean(w)^2) = (M / ESS - 1) / (M - 1),  ESS = (sum w)^2 / sum w^2.
Both this se and the bootstrap over paths (also reported) are too small when the weights are heavy-tailed;
pmz warns when ESS / M < 0.1.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..estimate_diagnostics import WorkDiagnostics
from ..records import EvidenceEstimate, WorkRecord
from ..weights import ess as kish_ess
from ..weights import log_mean_weight, log_mean_weight_se, logsumexp

__all__ = ["jarzynski", "bootstrap_log_mean_weight", "one_way_diagnostics"]


def bootstrap_log_mean_weight(log_w, rng: np.random.Generator, n_bootstrap: int = 1000, block: int = 200):
    """Bootstrap replicates of ``log mean(w)`` over paths (resampling paths with replacement)."""
    log_w = np.asarray(log_w, dtype=float)
    M = log_w.size
    out = np.empty(n_bootstrap)
    for start in range(0, n_bootstrap, block):
        stop = min(start + block, n_bootstrap)
        idx = rng.integers(0, M, size=(stop - start, M))
        out[start:stop] = logsumexp(log_w[idx], axis=1) - np.log(M)
    return out


def one_way_diagnostics(log_w, side: str) -> WorkDiagnostics:
    """What a one-sided Jarzynski estimate from ``side``'s log weights (``"forward"``: AIS, ``"reverse"``: RAISE)
    measures: the Kish ESS ``(sum w)^2 / sum w^2``, its fraction of the M paths, the delta-method se
    ``sqrt((M / ESS - 1) / (M - 1))``, M and ``Var[log w]`` over the finite weights."""
    log_w = np.asarray(log_w, dtype=float)
    ess = kish_ess(log_w)
    return WorkDiagnostics(
        one_way_side=side,
        ess=ess,
        ess_fraction=ess / log_w.size,
        se_delta=log_mean_weight_se(log_w),
        n_paths=log_w.size,
        var_log_w=float(np.var(log_w[np.isfinite(log_w)])),
    )


def jarzynski(
    record: WorkRecord,
    *,
    rng: np.random.Generator | None = None,
    n_bootstrap: int = 1000,
    min_ess_fraction: float = 0.1,
) -> EvidenceEstimate:
    """log Z from forward AIS work with delta-method and bootstrap standard errors.

    Parameters
    ----------
    record : WorkRecord
        A forward record.
    rng : numpy.random.Generator, optional
        For the bootstrap (default: a fixed seed, so the estimate is a pure function of the record).
    n_bootstrap : int
        Bootstrap replicates (0 to skip).
    min_ess_fraction : float
        Warn when ESS / M falls below this.

    Returns
    -------
    EvidenceEstimate
        ``log_z``, ``log_z_se`` (delta method) and :class:`~pmz.estimate_diagnostics.WorkDiagnostics` with
        ``one_way_side="forward"``, ``ess``, ``ess_fraction``, ``se_delta``, ``n_paths``, ``var_log_w``,
        ``se_bootstrap``, ``bootstrap_log_z``, ``mean_log_w`` (``log Z0 + mean(log w)``, a stochastic lower bound).

    Examples
    --------
    >>> import numpy as np
    >>> from pmz.records import WorkRecord
    >>> rec = WorkRecord(log_weights=np.log([1.0, 2.0, 3.0]), schedule=[0.0, 1.0])
    >>> round(jarzynski(rec, n_bootstrap=0).log_z, 6)  # log(mean(1, 2, 3)) = log 2
    0.693147
    """
    if record.direction != "forward":
        raise ValueError("jarzynski needs a forward WorkRecord")
    log_w = record.log_weights
    M = log_w.size
    if not np.any(np.isfinite(log_w)):
        raise ValueError("pmz: every path has weight 0 (log w = -inf); the annealing failed")
    log_z = record.log_z0 + log_mean_weight(log_w)
    lower = float(np.mean(log_w[np.isfinite(log_w)])) + record.log_z0
    diagnostics = replace(one_way_diagnostics(log_w, "forward"), mean_log_w=lower)
    ess, se_delta = diagnostics.ess, diagnostics.se_delta
    if n_bootstrap:
        rng = np.random.default_rng(0) if rng is None else rng
        boot = record.log_z0 + bootstrap_log_mean_weight(log_w, rng, n_bootstrap)
        diagnostics = replace(diagnostics, bootstrap_log_z=boot, se_bootstrap=float(np.std(boot, ddof=1)))
    warnings = []
    if ess / M < min_ess_fraction:
        warnings.append(
            f"pmz: the AIS weights are degenerate (ESS = {ess:.1f} of {M} paths, {100 * ess / M:.1f}%); "
            "log Z is likely biased low and its standard error too small. Use more temperatures "
            "(n_temps), more kernel steps per temperature, or a reference closer to the posterior."
        )
    return EvidenceEstimate(
        log_z=float(log_z), log_z_se=se_delta, method="ais", diagnostics=diagnostics, warnings=warnings
    )
