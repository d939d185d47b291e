"""Thermodynamic integration (TI) from a simulated-tempering trace (Gelman & Meng 1998; Friel et al. 2014;
Carlson et al. 2016 section 3.4).

``log Z = integral_0^1 E_beta[U] d beta`` (``d log Z / d beta = E_beta[U]``), discretised on the ladder with
``E_k ~= E_{b_k}[U]`` and ``V_k ~= Var_{b_k}[U]``:

* ``"riemann"`` (right Riemann sum): ``sum_k (b_k - b_{k-1}) E_k``;
* ``"trapezoid"``: ``sum_k (b_k - b_{k-1}) (E_k + E_{k-1}) / 2``;
* ``"corrected"`` (Friel et al. 2014): the trapezoid minus ``sum_k (b_k - b_{k-1})^2 (V_k - V_{k-1}) / 12``
  (``V = dE/d beta``, so this is the next Euler-Maclaurin term).

Plain TI estimates ``E_k`` and ``V_k`` from the samples whose level was k. **TI-RB** uses every sample at every
level, weighted by ``q(k | x)``: ``E_k = sum_i q(k | x_i) U(x_i) / sum_i q(k | x_i)`` (RTS section 3.4). The
se comes from the jackknife pseudo-values of batches of consecutive sweeps, with their autocorrelation
(:func:`pmz.estimators.rts.jackknife_se`).
"""

from __future__ import annotations

import numpy as np

from ..records import EvidenceEstimate, TemperingTrace
from .rts import jackknife_se

__all__ = ["ti", "ti_rb", "integrate", "TI_RULES"]

TI_RULES = ("riemann", "trapezoid", "corrected")


def integrate(betas, mean_U, var_U=None, rule: str = "trapezoid") -> float:
    """The TI sum of ``E_k = mean_U`` over the ladder ``betas`` by one of :data:`TI_RULES`."""
    betas, E = np.asarray(betas, dtype=float), np.asarray(mean_U, dtype=float)
    d = np.diff(betas)
    if rule == "riemann":
        return float(np.sum(d * E[1:]))
    trapezoid = float(np.sum(d * (E[1:] + E[:-1]) / 2))
    if rule == "trapezoid":
        return trapezoid
    if rule == "corrected":
        V = np.asarray(var_U, dtype=float)
        return trapezoid - float(np.sum(d**2 * np.diff(V)) / 12)
    raise ValueError(f"pmz: rule must be one of {TI_RULES}, got {rule!r}")


def _moments(sums, weight, first, second):
    with np.errstate(divide="ignore", invalid="ignore"):
        E = sums[first] / sums[weight]
        V = sums[second] / sums[weight] - E**2
    return E, V


def _ti(trace: TemperingTrace, rule: str, method: str, weight: str, first: str, second: str) -> EvidenceEstimate:
    if rule not in TI_RULES:
        raise ValueError(f"pmz: rule must be one of {TI_RULES}, got {rule!r}")
    batches = {name: getattr(trace, f"batch_{name}") for name in (weight, first, second)}

    def statistic(sums):
        E, V = _moments(sums, weight, first, second)
        return integrate(trace.betas, E, V, rule)

    totals = {k: v.sum(axis=0) for k, v in batches.items()}
    E, V = _moments(totals, weight, first, second)
    value = integrate(trace.betas, E, V, rule)
    warnings = []
    if not np.isfinite(value):
        warnings.append(f"pmz: {method}: some levels have no samples; TI needs E[U] at every level")
    return EvidenceEstimate(
        log_z=float(value + trace.log_z0),
        log_z_se=jackknife_se(statistic, batches),
        method=method if rule == "trapezoid" else f"{method}_{rule}",
        diagnostics={"mean_U": E, "var_U": V, "rule": rule, "n_batches": int(trace.batch_size.size)},
        warnings=warnings,
    )


def ti(trace: TemperingTrace, rule: str = "trapezoid") -> EvidenceEstimate:
    """TI with ``E_k`` from the samples visiting level k."""
    return _ti(trace, rule, "ti", "counts", "U", "U2")


def ti_rb(trace: TemperingTrace, rule: str = "trapezoid") -> EvidenceEstimate:
    """Rao-Blackwellised TI: ``E_k`` from all samples weighted by ``q(k | x)``."""
    return _ti(trace, rule, "ti_rb", "q", "qU", "qU2")
