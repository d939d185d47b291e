"""Bayes factors and model comparison tables with propagated uncertainty.

For independent estimates, ``log BF_ab = log Z_a - log Z_b`` with ``se = sqrt(se_a^2 + se_b^2)``.
Posterior model probabilities with prior ``pi_m``: ``p(m | y) = pi_m Z_m / sum_j pi_j Z_j``.

Unreliable inputs are flagged, never silently ranked: the table's ``reliable`` and ``warnings`` columns carry each
result's verdict (:mod:`pmz.reliability`) and its number of warnings, and a ``UserWarning`` names the
unreliable
models. A model whose log Z or se is not finite (NaN or inf: its error is unknown) makes every posterior model
probability NaN, since each depends on all the evidences, and its log Bayes factors' se are NaN; the table is
still returned, ranked by log Z (non-finite values last), with a warning naming the model.

One convention for every model (``convention=``). A prior whose density, as PyMC writes it, does not integrate to
one has two evidences: that of the density as written, and that of the normalised prior. An ordered transform on K
exchangeable entries (``pm.Normal("mu", 0, 10, shape=K, transform=ordered)``, the usual mixture) keeps the
unordered density on the ordered region, whose mass is ``1 / K!``: its evidence as written is ``log K!`` below that
of the normalised prior, which is the evidence of the exchangeable mixture without the ordering (the model users
mean when they ask "how many components?"). The default (``method="auto"``) reports the first and records the
second (``log_z_normalised_prior``); methods that start from prior draws (SMC, annealing from the prior) report the
second and record the measured log mass ``prior_log_mass``. :func:`compare` and :func:`bayes_factor` put every
result in one convention from those records: ``"normalised"`` (the default) or ``"as_written"``, and say which.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .weights import logsumexp

__all__ = ["BayesFactor", "bayes_factor", "compare", "EvidenceTable", "CONVENTIONS"]

_FOOTER = ("log_bf: log Bayes factor against the best model; log_z: log marginal likelihood; both in nats, "
           "with their standard errors (_se)")

CONVENTIONS = ("normalised", "as_written")
"""The conventions of :func:`compare` and :func:`bayes_factor`: every log Z is the evidence of the model with its
prior normalised (``"normalised"``, the default), or of the prior density as PyMC writes it (``"as_written"``)."""

_CONVENTION_TEXT = {
    "normalised": "every log_z is the evidence with each prior normalised to integrate to one (ordered transforms "
                  "on K exchangeable entries: the mixture without the ordering, log K! above the density as written)",
    "as_written": "every log_z is the evidence of the prior density as PyMC writes it (ordered transforms on K "
                  "exchangeable entries keep 1/K! of the mass: log K! below the model without the ordering)",
}


class EvidenceTable(pd.DataFrame):
    """:func:`compare`'s table: a ``pandas.DataFrame`` that prints every column (pandas would hide the middle ones
    in a narrow terminal, ``log_bf`` among them), each se to two significant digits (never a rounded 0.000) and
    lines that say what the numbers are and in which convention (``attrs["convention_note"]``). Everything else is
    pandas'."""

    @property
    def _constructor(self):
        return EvidenceTable

    def footer(self) -> str:
        """What the numbers are: units, and the convention the table's evidences are in (when it states one)."""
        note = self.attrs.get("convention_note")
        return _FOOTER + ("\n" + note if note else "")

    def to_text(self) -> str:
        """The printed form: every column, values to 3 decimals, se to 2 significant digits, the units and the
        convention."""
        formatters = {}
        for column in self.columns:
            if column.endswith("_se"):
                formatters[column] = "{:.2g}".format
            elif column in ("log_z", "log_bf", "prior_correction"):
                formatters[column] = "{:.3f}".format
            elif column == "probability":
                formatters[column] = "{:.3g}".format
        with pd.option_context("display.max_columns", None, "display.width", None):
            return self.to_string(formatters=formatters) + "\n" + self.footer()

    def _is_comparison(self) -> bool:
        return {"log_z", "log_bf"} <= set(self.columns)

    def __repr__(self) -> str:
        return self.to_text() if self._is_comparison() else super().__repr__()

    def _repr_html_(self):
        table = super()._repr_html_()
        if table is None or not self._is_comparison():
            return table
        lines = "<br>".join(html.escape(line) for line in self.footer().splitlines())
        return f"{table}<p>{lines}</p>"


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


def _checked_convention(convention: str, what: str) -> str:
    """``convention`` if it is one of :data:`CONVENTIONS` (the spelling ``"normalized"`` is taken too)."""
    if convention == "normalized":
        return "normalised"
    if convention not in CONVENTIONS:
        raise ValueError(f"pmz.{what}: convention must be 'normalised' (every prior normalised, the default) or "
                         f"'as_written' (every prior density as PyMC writes it), got {convention!r}")
    return convention


def _diagnostics_of(result) -> dict:
    """A result's diagnostics as a flat mapping: an EvidenceResult's ``diagnostics`` dict, an estimate's
    diagnostics object through its ``to_dict``; empty for a (log_z, se) pair or anything else."""
    diagnostics = getattr(result, "diagnostics", None) if hasattr(result, "log_z") else None
    if hasattr(diagnostics, "to_dict"):
        diagnostics = diagnostics.to_dict()
    return dict(diagnostics) if isinstance(diagnostics, Mapping) else {}


def _in_convention(result, convention: str) -> tuple[float, float, float, str]:
    """``(log_z, se, correction, variables)`` of a result in ``convention``; ``correction`` is what was added to
    the result's own log Z, ``variables`` the priors it is for.

    A result records the log mass ``m = log integral p~`` of priors that do not integrate to one
    (``prior_log_mass``, ``-log K!`` for K exchangeable ordered entries). With ``log_z_normalised_prior`` beside
    it (the default), its log Z is the density's and ``log Z_normalised = log Z - m``; without (methods that start
    from prior draws), its log Z is the normalised prior's and ``log Z_as_written = log Z + m``, se
    ``sqrt(se^2 + se_m^2)``. A result with no record (a prior that integrates to one, or a (log_z, se) pair) is
    taken as it is.
    """
    log_z, se = _log_z_and_se(result)
    diagnostics = _diagnostics_of(result)
    mass = diagnostics.get("prior_log_mass")
    if mass is None:
        return log_z, se, 0.0, ""
    mass = float(mass)
    variables = str(diagnostics.get("prior_unnormalised", "") or "")
    if "log_z_normalised_prior" in diagnostics:  # log Z of the density as written
        if convention == "as_written":
            return log_z, se, 0.0, variables
        normalised = float(diagnostics["log_z_normalised_prior"])
        return normalised, se, normalised - log_z, variables
    if convention == "normalised":  # log Z of the normalised prior (prior draws)
        return log_z, se, 0.0, variables
    mass_se = float(diagnostics.get("prior_log_mass_se") or 0.0)
    return log_z + mass, float(np.hypot(se, mass_se)), mass, variables


def _unrecorded_density(result) -> bool:
    """Whether a result integrated the prior density as written without recording its mass: ``method="bridge"``
    and reference paths (``reference="laplace"``, family ``geometric``) do not check the prior's normalisation."""
    run = getattr(result, "run_attrs", None) if hasattr(result, "log_z") else None
    if not isinstance(run, Mapping) or "prior_log_mass" in _diagnostics_of(result):
        return False
    return run.get("method") == "bridge" or run.get("family") == "geometric"


def _convention_note(convention: str, corrections: dict, variables: dict, unrecorded: list) -> str:
    """The table's line naming its convention, every model's correction, and the results it could not check."""
    done = [f"{name!r} {c:+.3f} ({variables[name]})" if variables[name] else f"{name!r} {c:+.3f}"
            for name, c in corrections.items() if c != 0.0]
    what = ("prior_correction: added to a result's own log Z to put it there: " + "; ".join(done)) if done else (
        "no result needed a correction (prior_correction 0)")
    note = (f"convention {convention!r}: {_CONVENTION_TEXT[convention]}; {what}. Results that record no prior "
            "mass (a (log_z, se) pair, or a prior that integrates to one) are taken as they are.")
    if unrecorded and convention == "normalised":
        note += (f" Not checked: {', '.join(map(repr, unrecorded))} integrated the prior density as written "
                 "(method='bridge' or a reference path) and record no prior mass; with an ordered prior on K "
                 "exchangeable entries its log_z is log K! low: rerun it with method='auto'.")
    return note



@dataclass(frozen=True)
class BayesFactor:
    """``log BF = log Z_a - log Z_b`` and its standard error, both evidences in one convention.

    Attributes
    ----------
    log_bf : float
    log_bf_se : float
    convention : str
        ``"normalised"`` or ``"as_written"`` (:data:`CONVENTIONS`): the evidences the Bayes factor compares.
    corrections : tuple of float
        ``(c_a, c_b)``: what was added to each result's own log Z to put it in that convention (0 when nothing).
    """

    log_bf: float
    log_bf_se: float
    convention: str = "normalised"
    corrections: tuple = (0.0, 0.0)

    @property
    def bf(self) -> float:
        """The Bayes factor itself, ``exp(log_bf)``."""
        return float(np.exp(self.log_bf))

    def to_dataset(self):
        """The Bayes factor as arviz-stats' ``bayes_factor`` reports one: an ``xarray.Dataset`` with a ``bf_type``
        dim whose coordinates are ``BF10`` (model a over model b, a being "1", the alternative) and ``BF01`` (its
        inverse), holding ``bf``, ``log_bf`` and ``log_bf_se`` (the same se for both); attrs ``convention`` and
        ``correction_a``, ``correction_b``."""
        import xarray as xr

        log_bf = np.array([self.log_bf, -self.log_bf])
        return xr.Dataset(
            {"bf": ("bf_type", np.exp(log_bf)), "log_bf": ("bf_type", log_bf),
             "log_bf_se": ("bf_type", np.array([self.log_bf_se, self.log_bf_se]))},
            coords={"bf_type": ["BF10", "BF01"]},
            attrs={"convention": self.convention, "correction_a": float(self.corrections[0]),
                   "correction_b": float(self.corrections[1])},
        )

    def __repr__(self):
        corrected = ", ".join(f"{side} {c:+.4f}" for side, c in zip("ab", self.corrections) if c != 0.0)
        return (f"BayesFactor(log_bf={self.log_bf:.4f} +/- {self.log_bf_se:.4f}, bf={self.bf:.4g}, "
                f"convention={self.convention!r}" + (f", corrections {corrected}" if corrected else "") + ")")


def bayes_factor(a, b, *, convention: str = "normalised") -> BayesFactor:
    """Bayes factor of model ``a`` over model ``b`` from two independent evidence results, both in one convention.

    Parameters
    ----------
    a, b : EvidenceResult, or anything with ``.log_z`` and ``.log_z_se``, or a (log_z, se) pair
    convention : {"normalised", "as_written"}
        ``"normalised"`` (default): each evidence with its prior normalised to integrate to one; where a prior as
        PyMC writes it does not (an ordered transform on K exchangeable entries keeps ``1/K!`` of the mass), the
        result's recorded correction is applied, so that K against K' ordered components compares the mixtures
        without the ordering. ``"as_written"``: each evidence of the prior density as PyMC writes it. See the
        module docstring; a (log_z, se) pair is taken as it is.

    Examples
    --------
    >>> bayes_factor((-10.0, 0.3), (-12.0, 0.4))
    BayesFactor(log_bf=2.0000 +/- 0.5000, bf=7.389, convention='normalised')

    A result with ``reliable=False`` or a non-finite log Z or se gives a ``UserWarning`` naming it (as ``a`` or
    ``b``); a NaN se makes ``log_bf_se`` NaN.
    """
    convention = _checked_convention(convention, "bayes_factor")
    za, sa, ca, _ = _in_convention(a, convention)
    zb, sb, cb, _ = _in_convention(b, convention)
    _warn_unreliable({"a": _verdict(a), "b": _verdict(b)}, "bayes_factor")
    return BayesFactor(za - zb, float(np.hypot(sa, sb)), convention, (ca, cb))


def _log_prior(prior, names: list) -> np.ndarray:
    """Log prior model probabilities in the order of ``names`` (0 each, i.e. uniform up to a constant, for None)."""
    if prior is not None and not isinstance(prior, Mapping):
        prior = list(prior)
        if len(prior) != len(names):
            raise ValueError(f"pmz.compare: prior has {len(prior)} probabilities for {len(names)} models")
        prior = dict(zip(names, prior))
    if prior is None:
        return np.zeros(len(names))
    missing = set(names) - set(prior)
    if missing:
        raise ValueError(f"pmz.compare: prior has no probability for {sorted(missing)}")
    p = np.array([float(prior[n]) for n in names])
    if np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        raise ValueError("pmz.compare: prior probabilities must be non-negative and sum to 1")
    with np.errstate(divide="ignore"):
        return np.log(p)


def _probabilities(names: list, log_z, se, log_prior) -> np.ndarray:
    """``p(m | y) = pi_m Z_m / sum_j pi_j Z_j``; all NaN, with a warning, when a log Z or se is not finite."""
    finite = np.isfinite(log_z) & np.isfinite(se)
    if finite.all():
        log_post = log_z + log_prior
        return np.exp(log_post - logsumexp(log_post))
    warnings.warn(
        "pmz.compare: the log Z or se of "
        + ", ".join(f"{n!r} ({log_z[i]:.6g} +- {se[i]:.3g})" for i, n in enumerate(names) if not finite[i])
        + " is not finite, so no posterior model probability can be given (all NaN); rerun with more work "
        "or leave the model out",
        UserWarning,
        stacklevel=3,
    )
    return np.full(len(names), np.nan)


def compare(results: dict | list, *, prior: dict | list | None = None,
            convention: str = "normalised") -> pd.DataFrame:
    """Rank models by evidence, like ``az.compare`` ranks them by predictive accuracy.

    Parameters
    ----------
    results : dict of name -> EvidenceResult (or (log_z, se)), or a list / tuple of them
        A list's models are named ``model_0``, ``model_1``, ... in its order.
    prior : dict of name -> prior model probability, optional (default uniform); a list in the order of a list
        of results
    convention : {"normalised", "as_written"}
        The one convention every model's evidence is put in (see the module docstring). ``"normalised"``
        (default): each prior normalised to integrate to one; a model whose prior, as PyMC writes it, does not
        (an ordered transform on K exchangeable entries: ``1/K!`` of the mass) gets the correction its result
        records, ``+log K!`` for the default's log Z, so that "K against K' ordered components" compares the
        mixtures without the ordering, the models users mean. ``"as_written"``: the evidence of each prior density
        as PyMC writes it (a prior-draw method's log Z gets the measured log mass, and its se). A (log_z, se) pair
        is taken as it is.

    Returns
    -------
    EvidenceTable (a pandas.DataFrame that prints every column, its units and the convention) indexed by model
    name, best first, with columns ``rank``, ``log_bf`` (log Bayes factor against the best model, <= 0),
    ``log_bf_se`` (its se; 0 for the best), ``probability`` (posterior model probability), ``log_z``,
    ``log_z_se`` (in the convention), ``prior_correction`` (what was added to the result's own log Z to put it
    there, 0 for most models), ``method``, ``reliable`` (the result's verdict; a (log_z, se) pair is reliable
    when both are finite) and ``warnings`` (how many warnings the run gave; ``res.warnings`` lists them).
    ``table.attrs``: ``convention``, ``prior_corrections`` ({name: correction}) and ``convention_note`` (the
    printed line saying both, and naming any result that integrated the prior density as written without
    recording its mass: ``method="bridge"`` or a reference path, whose ordered prior pmz cannot see from the
    result).

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
    convention = _checked_convention(convention, "compare")
    names = list(results)
    for name in names:
        _log_z_and_se(results[name], name)  # a type or a negative se, named
    converted = [_in_convention(results[name], convention) for name in names]
    log_z = np.array([c[0] for c in converted])
    se = np.array([c[1] for c in converted])
    log_prior = _log_prior(prior, names)
    verdicts = {name: _verdict(results[name]) for name in names}
    _warn_unreliable(verdicts, "compare")
    ranked = np.where(np.isnan(log_z), -np.inf, log_z)
    best = int(np.argmax(ranked))
    table = EvidenceTable(
        {
            "log_bf": log_z - log_z[best],
            "log_bf_se": np.where(np.arange(len(names)) == best, 0.0, np.hypot(se, se[best])),
            "probability": _probabilities(names, log_z, se, log_prior),
            "log_z": log_z,
            "log_z_se": se,
            "prior_correction": [c[2] for c in converted],
            "method": [getattr(results[n], "method", "") for n in names],
            "reliable": [verdicts[n][0] for n in names],
            "warnings": [verdicts[n][2] for n in names],
        },
        index=pd.Index(names, name="model"),
    )
    table = table.iloc[np.argsort(-ranked, kind="stable")]
    table.insert(0, "rank", np.arange(len(names)))
    corrections = {name: float(c[2]) for name, c in zip(names, converted)}
    variables = {name: c[3] for name, c in zip(names, converted)}
    unrecorded = [name for name in names if _unrecorded_density(results[name])]
    table.attrs = {
        "convention": convention,
        "prior_corrections": corrections,
        "convention_note": _convention_note(convention, corrections, variables, unrecorded),
    }
    return table
