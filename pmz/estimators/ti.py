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

**U = -inf on part of f0** (a likelihood that is zero on part of the prior, a ``pm.Potential`` that cuts the space
with -inf). Then ``E_0[U] = -inf`` and the integrand diverges at ``beta = 0``: TI as written does not exist. But
``log Z(beta)`` is smooth on ``(0, 1]`` with ``d log Z / d beta = E_beta[U]`` there, and it jumps at 0: with
``A = {x : U(x) > -inf}``, ``Z(beta) -> Z0 P_0(A)`` as ``beta -> 0+`` (``f1^beta -> 1`` on A). So

    log Z = log Z0 + log P_0(A) + integral_0^1 E_beta[U] d beta,     E_0[U] read as E_0[U | A] (the limit at 0+).

pmz estimates ``P_0(A)`` from the level-0 samples (the fraction, or the ``q(0 | x)``-weighted fraction, whose ``U`` is
finite: level 0 samples f0) and takes every ``E_k``, ``V_k`` over the samples with finite ``U`` (at ``b_k > 0`` those
are all of them). ``log P_0(A)`` is reported as ``log_support_mass``; its error is in the jackknife se. When no
level-0 sample has a finite ``U`` there is no estimate (NaN, with a warning that says why).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..estimate_diagnostics import TemperingDiagnostics
from ..records import EvidenceEstimate, TemperingTrace
from .rts import jackknife_se

__all__ = ["TI_RULES", "discretisation_error", "integrate", "ti", "ti_rb"]

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


def discretisation_error(betas, mean_U, var_U, rule: str = "trapezoid") -> float:
    """The quadrature error of a TI rule over the ladder, estimated by the first term it neglects: for the trapezoid
    (and, conservatively, the corrected rule) ``|trapezoid - corrected| = |sum_k d_k^2 (V_k - V_{k-1})| / 12`` with
    ``d_k = b_k - b_{k-1}`` and ``V = dE/d beta`` (Euler-Maclaurin; Friel et al. 2014); for the right Riemann sum
    ``|riemann - trapezoid| = |sum_k d_k (E_k - E_{k-1})| / 2``.

    A likelihood so peaked that ``E_beta[U]`` changes by orders of magnitude between the first rungs makes this
    large (24-26 nats for ``y ~ N(mu, 1e-4)``, where TI was 6.5 nats off with a sampling se of 0.3); on the
    conjugate test models with the default ladder it is 0.005-0.01, below the sampling se.

    >>> round(discretisation_error([0.0, 0.5, 1.0], [0.0, 1.0, 4.0], [2.0, 4.0, 8.0]), 6)  # 0.25 * (2 + 4) / 12
    0.125
    """
    if rule == "riemann":
        return abs(integrate(betas, mean_U, None, "riemann") - integrate(betas, mean_U, None, "trapezoid"))
    return abs(integrate(betas, mean_U, var_U, "trapezoid") - integrate(betas, mean_U, var_U, "corrected"))


def _moments(sums, weight, first, second, inf):
    """``E_k``, ``V_k`` over the samples with finite ``U``, and ``log P_0(A)`` (the level-0 fraction with finite U)."""
    finite = sums[weight] - sums[inf]
    with np.errstate(divide="ignore", invalid="ignore"):
        E = sums[first] / finite
        V = sums[second] / finite - E**2
        log_mass = np.log(finite[0]) - np.log(sums[weight][0]) if sums[inf][0] > 0 else 0.0
    return E, V, float(log_mass)


def _ti(trace: TemperingTrace, rule: str, method: str, weight: str, first: str, second: str, inf: str):
    if rule not in TI_RULES:
        raise ValueError(f"pmz: rule must be one of {TI_RULES}, got {rule!r}")
    batches = {name: getattr(trace, f"batch_{name}") for name in (weight, first, second, inf)}
    if batches[inf] is None:  # a trace recorded before non-finite U was counted
        batches[inf] = np.zeros_like(batches[weight])

    def statistic(sums):
        E, V, log_mass = _moments(sums, weight, first, second, inf)
        return integrate(trace.betas, E, V, rule) + log_mass

    totals = {k: v.sum(axis=0) for k, v in batches.items()}
    E, V, log_mass = _moments(totals, weight, first, second, inf)
    value = integrate(trace.betas, E, V, rule) + log_mass
    se = jackknife_se(statistic, batches)
    with np.errstate(invalid="ignore"):
        error = discretisation_error(trace.betas, E, V, rule)
    diagnostics = TemperingDiagnostics(
        mean_U=E, var_U=V, rule=rule, n_batches=int(trace.batch_size.size),
        discretisation_error=float(error) if np.isfinite(error) else None,
        c_hat=trace.c_hat, prior=trace.prior, max_gap=trace.max_gap,
    )
    warnings = []
    if totals[inf][0] > 0:
        diagnostics = replace(
            diagnostics,
            log_support_mass=log_mass,
            support_note=(
                "U (the log likelihood) is -inf on part of f0 (the prior), where E_0[U] = -inf: log Z = "
                "log P_0(U > -inf) + TI of E_beta[U] over (0, 1], with P_0 from the level-0 samples"
            ),
        )
    if not np.isfinite(log_mass):
        value, se = float("nan"), float("nan")
        warnings.append(
            f"pmz: {method}: the log likelihood is -inf at every level-0 (prior) sample: TI's integrand E_beta[log L] "
            "is infinite at beta = 0 and the prior mass where the likelihood is positive cannot be estimated from "
            'these samples, so thermodynamic integration has no answer here; use method="bar", "smc" or "auto"'
        )
    elif not np.isfinite(value):
        warnings.append(f"pmz: {method}: some levels have no samples; TI needs E[U] at every level")
    return EvidenceEstimate(
        log_z=float(value + trace.log_z0),
        log_z_se=se,
        method=method if rule == "trapezoid" else f"{method}_{rule}",
        diagnostics=diagnostics,
        warnings=warnings,
    )


def ti(trace: TemperingTrace, rule: str = "trapezoid") -> EvidenceEstimate:
    """TI with ``E_k`` from the samples visiting level k."""
    return _ti(trace, rule, "ti", "counts", "U", "U2", "inf")


def ti_rb(trace: TemperingTrace, rule: str = "trapezoid") -> EvidenceEstimate:
    """Rao-Blackwellised TI: ``E_k`` from all samples weighted by ``q(k | x)``."""
    return _ti(trace, rule, "ti_rb", "q", "qU", "qU2", "q_inf")
