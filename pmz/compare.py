"""Bayes factors and model comparison tables with propagated uncertainty.

For independent estimates, ``log BF_ab = log Z_a - log Z_b`` with ``se = sqrt(se_a^2 + se_b^2)``.
Posterior model probabilities with prior ``pi_m``: ``p(m | y) = pi_m Z_m / sum_j pi_j Z_j``.

Unreliable inputs are flagged, never silently ranked: the table's ``reliable`` and ``warnings`` columns carry each
result's verdict (:mod:`pmz.reliability`) and its number of warnings, and a ``UserWarning`` names the
unreliable
models. A model whose log Z or se is not finite (NaN or inf: its error is unknown) makes every posterior model
probability NaN, since each depends on all the evidences, and its log Bayes factors' se are NaN; the table is
still returned, ranked by log Z (non-finite values last), with a warning naming the model.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .weights import logsumexp

__all__ = ["BayesFactor", "bayes_factor", "compare", "EvidenceTable"]

_FOOTER = ("log_bf: log Bayes factor against the best model; log_z: log marginal likelihood; both in nats, "
           "with their standard errors (_se)")


class EvidenceTable(pd.DataFrame):
    """:func:`compare`'s table: a ``pandas.DataFrame`` that prints every column (pandas would hide the middle ones
    in a narrow terminal, ``log_bf`` among them), each se to two significant digits (never a rounded 0.000) and a
    line that says what the numbers are. Everything else is pandas'."""

    @property
    def _constructor(self):
        return EvidenceTable

    def to_text(self) -> str:
        """The printed form: every column, values to 3 decimals, se to 2 significant digits, and the units."""
        formatters = {}
        for column in self.columns:
            if column.endswith("_se"):
                formatters[column] = "{:.2g}".format
            elif column in ("log_z", "log_bf"):
                formatters[column] = "{:.3f}".format
            elif column == "probability":
                formatters[column] = "{:.3g}".format
        with pd.option_context("display.max_columns", None, "display.width", None):
            return self.to_string(formatters=formatters) + "\n" + _FOOTER

    def __repr__(self) -> str:
        return self.to_text() if {"log_z", "log_bf"} <= set(self.columns) else super().__repr__()


def _log_z_and_se(result, name: str | None = None) -> tuple[float, float]:
    """``(log_z, se)`` of a result or a pair; a negative se is refused (no standard error can be negative)."""
    where = "" if name is None else f" for model {name!r}"
    pair = None
    if hasattr(result, "log_z") and hasattr(result, "log_z_se"):
        pair = float(result.log_z), float(result.log_z_se)
    elif isinstance(result, tuple | list) and len(result) == 2:
        try:
            pair = float(result[0]), float(result[1])
        except (TypeError, ValueError):
            pass
    if pair is not None:
        if pair[1] < 0:
            raise ValueError(f"pmz: a standard error cannot be negative, got se {pair[1]:.6g}{where}")
        return pair
    raise TypeError(
        "pmz: expected an EvidenceResult (or anything with .log_z and .log_z_se, or a (log_z, se) pair of numbers)"
        f"{where}, got {type(result).__name__}"
    )


def _verdict(result) -> tuple[bool, str, int]:
    """``(reliable, reason, number of warnings)`` of a result; a (log_z, se) pair is reliable when finite."""
    log_z, se = _log_z_and_se(result)
    finite = bool(np.isfinite(log_z) and np.isfinite(se))
    reliable = bool(getattr(result, "reliable", True)) and finite
    reason = str(getattr(result, "reliability_reason", "") or "")
    if not finite and not reason:
        reason = f"log Z {log_z:.6g} with se {se:.3g} is not finite"
    n_warnings = len(getattr(result, "warnings", None) or []) if hasattr(result, "log_z") else 0
    return reliable, reason, n_warnings


def _warn_unreliable(verdicts: dict, what: str) -> None:
    bad = {name: reason for name, (reliable, reason, _) in verdicts.items() if not reliable}
    if bad:
        listed = "; ".join(f"{name!r}: {reason or 'see its warnings'}" for name, reason in bad.items())
        warnings.warn(f"pmz.{what}: unreliable estimate(s), {listed}", UserWarning, stacklevel=3)


def _named(results) -> dict:
    """``{name: result}`` from a dict, or from a list / tuple of results named ``model_0``, ``model_1``, ..."""
    if hasattr(results, "log_z"):  # one result (a DataTree is also a Mapping of its groups)
        raise TypeError(
            "pmz.compare takes several results: a dict {name: EvidenceResult} or a list [res_a, res_b]; got one "
            f"{type(results).__name__}"
        )
    if isinstance(results, Mapping):
        return dict(results)
    if isinstance(results, list | tuple):
        return {f"model_{i}": result for i, result in enumerate(results)}
    raise TypeError(
        "pmz.compare: results must be a dict {name: EvidenceResult} or a list of results (named model_0, model_1, "
        f"...), got {type(results).__name__}"
    )


@dataclass(frozen=True)
class BayesFactor:
    """``log BF = log Z_a - log Z_b`` and its standard error.

    Attributes
    ----------
    log_bf : float
    log_bf_se : float
    """

    log_bf: float
    log_bf_se: float

    @property
    def bf(self) -> float:
        """The Bayes factor itself, ``exp(log_bf)``."""
        return float(np.exp(self.log_bf))

    def to_dataset(self):
        """The Bayes factor as arviz-stats' ``bayes_factor`` reports one: an ``xarray.Dataset`` with a ``bf_type``
        dim whose coordinates are ``BF10`` (model a over model b, a being "1", the alternative) and ``BF01`` (its
        inverse), holding ``bf``, ``log_bf`` and ``log_bf_se`` (the same se for both)."""
        import xarray as xr

        log_bf = np.array([self.log_bf, -self.log_bf])
        return xr.Dataset(
            {"bf": ("bf_type", np.exp(log_bf)), "log_bf": ("bf_type", log_bf),
             "log_bf_se": ("bf_type", np.array([self.log_bf_se, self.log_bf_se]))},
            coords={"bf_type": ["BF10", "BF01"]},
        )

    def __repr__(self):
        return f"BayesFactor(log_bf={self.log_bf:.4f} +/- {self.log_bf_se:.4f}, bf={self.bf:.4g})"


def bayes_factor(a, b) -> BayesFactor:
    """Bayes factor of model ``a`` over model ``b`` from two independent evidence results.

    Examples
    --------
    >>> bayes_factor((-10.0, 0.3), (-12.0, 0.4))
    BayesFactor(log_bf=2.0000 +/- 0.5000, bf=7.389)

    A result with ``reliable=False`` or a non-finite log Z or se gives a ``UserWarning`` naming it (as ``a`` or
    ``b``); a NaN se makes ``log_bf_se`` NaN.
    """
    za, sa = _log_z_and_se(a)
    zb, sb = _log_z_and_se(b)
    _warn_unreliable({"a": _verdict(a), "b": _verdict(b)}, "bayes_factor")
    return BayesFactor(za - zb, float(np.hypot(sa, sb)))


def compare(results: dict | list, *, prior: dict | list | None = None) -> pd.DataFrame:
    """Rank models by evidence, like ``az.compare`` ranks them by predictive accuracy.

    Parameters
    ----------
    results : dict of name -> EvidenceResult (or (log_z, se)), or a list / tuple of them
        A list's models are named ``model_0``, ``model_1``, ... in its order.
    prior : dict of name -> prior model probability, optional (default uniform); a list in the order of a list
        of results

    Returns
    -------
    EvidenceTable (a pandas.DataFrame that prints every column and its units) indexed by model name, best first,
    with columns ``rank``, ``log_bf`` (log Bayes factor against the best model, <= 0), ``log_bf_se`` (its se; 0 for
    the best), ``probability`` (posterior model probability), ``log_z``, ``log_z_se``, ``method``,
    ``reliable`` (the result's verdict; a (log_z, se) pair is reliable when both are finite) and ``warnings``
    (how many warnings the run gave; ``res.warnings`` lists them).

    Warns
    -----
    UserWarning
        Naming every model whose result is unreliable. When a log Z or se is not finite (e.g. ``method="rts"``
        with ``n_sweeps=1`` has se NaN) every ``probability`` is NaN: it depends on all the evidences, and one of
        them has an unknown error. Rerun that model with more work, or leave it out.
    """
    results = _named(results)
    if not results:
        raise ValueError("pmz.compare needs at least one result")
    names = list(results)
    log_z = np.empty(len(names))
    se = np.empty(len(names))
    for i, name in enumerate(names):
        log_z[i], se[i] = _log_z_and_se(results[name], name)
    if prior is not None and not isinstance(prior, Mapping):
        prior = list(prior)
        if len(prior) != len(names):
            raise ValueError(f"pmz.compare: prior has {len(prior)} probabilities for {len(names)} models")
        prior = dict(zip(names, prior))
    if prior is None:
        log_prior = np.zeros(len(names))
    else:
        missing = set(names) - set(prior)
        if missing:
            raise ValueError(f"pmz.compare: prior has no probability for {sorted(missing)}")
        p = np.array([float(prior[n]) for n in names])
        if np.any(p < 0) or not np.isclose(p.sum(), 1.0):
            raise ValueError("pmz.compare: prior probabilities must be non-negative and sum to 1")
        with np.errstate(divide="ignore"):
            log_prior = np.log(p)
    verdicts = {name: _verdict(results[name]) for name in names}
    _warn_unreliable(verdicts, "compare")
    finite = np.isfinite(log_z) & np.isfinite(se)
    ranked = np.where(np.isnan(log_z), -np.inf, log_z)
    best = int(np.argmax(ranked))
    log_post = log_z + log_prior
    if finite.all():
        probability = np.exp(log_post - logsumexp(log_post))
    else:
        probability = np.full(len(names), np.nan)
        warnings.warn(
            "pmz.compare: the log Z or se of "
            + ", ".join(f"{n!r} ({log_z[i]:.6g} +- {se[i]:.3g})" for i, n in enumerate(names) if not finite[i])
            + " is not finite, so no posterior model probability can be given (all NaN); rerun with more work "
            "or leave the model out",
            UserWarning,
            stacklevel=2,
        )
    table = EvidenceTable(
        {
            "log_bf": log_z - log_z[best],
            "log_bf_se": np.where(np.arange(len(names)) == best, 0.0, np.hypot(se, se[best])),
            "probability": probability,
            "log_z": log_z,
            "log_z_se": se,
            "method": [getattr(results[n], "method", "") for n in names],
            "reliable": [verdicts[n][0] for n in names],
            "warnings": [verdicts[n][2] for n in names],
        },
        index=pd.Index(names, name="model"),
    )
    table = table.iloc[np.argsort(-ranked, kind="stable")]
    table.insert(0, "rank", np.arange(len(names)))
    return table
