"""Reverse AIS (RAISE) estimator of log Z (Burda, Grosse & Salakhutdinov 2015; Habeck 2017 eq 7).

A reverse path starts at an exact draw of the target p1 and anneals back to f0; its weight has ``E[w_r] = 1/Z``:

    log Z_hat = log Z0 - (logsumexp(log w_r) - log M)

Unbiased for 1/Z, hence biased *high* for log Z (Jensen): with the forward AIS estimate, which is biased low, it
brackets log Z in expectation. The delta-method standard error is the one of forward AIS with the reverse weights,
``se^2 = (M / ESS_r - 1) / (M - 1)``; a bootstrap over paths is also reported. Both are too small when the reverse
weights are heavy-tailed; pmz warns when ESS / M < 0.1.

**U = -inf on part of f0** (a likelihood that is zero on part of the prior). Reverse paths live where ``U`` is
finite (every ``f_b`` with ``b > 0`` is zero elsewhere), so their weights see only that part ``A`` of f0:
``E[w_r] = Z0 P_0(A) / Z``. Given the forward paths of the same run (exact f0 draws; a path's log weight is -inf
exactly when its start has ``U = -inf``), pmz adds ``log P_0(A)`` estimated by the fraction ``p`` of forward paths
with a finite log weight, with the binomial variance ``(1 - p) / (n_f p)`` added to the se (diagnostics
``log_support_mass``, ``log_support_mass_se``). Without forward paths RAISE cannot see that mass.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..records import EvidenceEstimate, WorkRecord
from ..weights import log_mean_weight, log_mean_weight_se
from .bounds import check_log_weights
from .jarzynski import bootstrap_log_mean_weight, one_way_diagnostics

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
    forward_record: WorkRecord | None = None,
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
    forward_record : WorkRecord, optional
        Forward paths of the same run: their fraction with a finite log weight estimates the mass of f0 where ``U``
        is finite, which reverse paths cannot see (module docstring). Without them that mass is taken to be 1.

    Returns
    -------
    EvidenceEstimate
        ``method = "raise"``, ``log_z``, ``log_z_se`` (delta method) and
        :class:`~pmz.estimate_diagnostics.WorkDiagnostics` with ``one_way_side="reverse"``, ``ess``, ``ess_fraction``,
        ``se_delta``, ``n_paths``, ``upper_bound`` (``log Z0 - mean(log w_r)``, a stochastic upper bound),
        ``var_log_w`` and, with a bootstrap, ``bootstrap_log_z`` and ``se_bootstrap``; when some forward paths have
        weight zero also ``log_support_mass`` (added to log Z), its se ``log_support_mass_se`` (added in quadrature
        to the se) and ``se_raise`` (the delta-method se of the reverse weights alone).

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
    upper = log_z0 - float(np.mean(log_w_r[np.isfinite(log_w_r)]))
    diagnostics = replace(one_way_diagnostics(log_w_r, "reverse"), upper_bound=upper)
    ess = diagnostics.ess
    log_mass, mass_se = _support_mass(forward_record)
    if log_mass < 0:
        log_z0 += log_mass
        diagnostics = replace(
            diagnostics,
            log_support_mass=log_mass,
            log_support_mass_se=mass_se,
            upper_bound=diagnostics.upper_bound + log_mass,
            se_raise=se_delta,
        )
    if n_bootstrap and np.isfinite(log_mass):
        rng = np.random.default_rng(0) if rng is None else rng
        boot = log_z0 - bootstrap_log_mean_weight(log_w_r, rng, n_bootstrap)
        se_boot = float(np.sqrt(np.var(boot, ddof=1) + mass_se**2))
        diagnostics = replace(diagnostics, bootstrap_log_z=boot, se_bootstrap=se_boot)
    warnings = []
    if not np.isfinite(log_mass):
        warnings.append(
            "pmz: raise: every forward path has weight zero (the log likelihood is -inf at each prior draw): the "
            "prior mass where the likelihood is positive, which reverse paths cannot see, is unknown; use "
            'method="bar", "smc" or "auto" with more paths'
        )
    if ess / M < min_ess_fraction:
        warnings.append(
            f"pmz: the reverse AIS weights are degenerate (ESS = {ess:.1f} of {M} paths, {100 * ess / M:.1f}%); "
            "the RAISE log Z is likely biased high and its standard error too small. Use more temperatures or "
            "more kernel steps per temperature, and combine with forward paths (BAR)."
        )
    return EvidenceEstimate(
        log_z=log_z0 + log_z_rel if np.isfinite(log_mass) else float("nan"),
        log_z_se=float(np.sqrt(se_delta**2 + mass_se**2)) if np.isfinite(log_mass) else float("nan"),
        method="raise",
        diagnostics=diagnostics,
        warnings=warnings,
    )


def _support_mass(forward_record) -> tuple[float, float]:
    """``log p`` and its delta-method se, ``p`` the fraction of forward paths with a finite log weight (the mass of
    f0 where ``U`` is finite); ``(0, 0)`` without forward paths or when every path has a finite weight."""
    if forward_record is None:
        return 0.0, 0.0
    n = forward_record.log_weights.size
    n_finite = int(np.sum(np.isfinite(forward_record.log_weights)))
    if n_finite == n:
        return 0.0, 0.0
    if n_finite == 0:
        return float("-inf"), float("nan")
    p = n_finite / n
    return float(np.log(p)), float(np.sqrt((1 - p) / (n * p)))
