"""Prior sensitivity of log Z and of Bayes factors from one run, by reweighting its posterior draws.

Replacing the prior ``p(theta)`` by ``p'(theta)`` (same likelihood) changes the evidence by a posterior expectation:

    Z' = int L(theta) p'(theta) dtheta = Z E_post[ p'(theta) / p(theta) ]
    log Z' = log Z + log E_post[ w ],      w = p'(theta) / p(theta)

estimated from the run's posterior draws ``theta_1 .. theta_n`` by ``log Z + log((1/n) sum_i w_i)``. Only the
replaced variables enter ``w`` (:mod:`pmz.model.prior_ratio`). Its standard error combines the run's own se with
the Monte Carlo se of the log mean weight (delta method):

    se(log Z') = se(log Z) + MCSE(w) / mean(w)

where ``MCSE(w)`` is ArviZ's Monte Carlo se of the mean over the draws' chains (autocorrelated MCMC draws count
for their effective number). The two are added, not combined in quadrature: the draws usually come from the run
that gave log Z (auto's own draws, the draws a bridge estimate used), so the two errors may be correlated, and the
sum is the largest se the sum of two errors can have whatever their correlation (at most 1.41 times the
independent value).

When can the draws answer? The Pareto k-hat of the weights' right tail (:func:`pmz.sample_diagnostics.pareto_khat`;
Vehtari, Simpson, Gelman, Yao & Gabry 2024) says whether ``w`` has the finite variance the se assumes. The rule
(a row's ``reliable`` and ``reason``):

* ``k-hat <= min(0.7, 1 - 1 / log10(n))``: reliable (the second bound is PSIS's sample-size rule; it is below
  0.7 for fewer than 2155 draws);
* above it: ``reliable=False``, ``log_z_se = inf`` and a reason that says why: the alternative prior puts mass
  where the posterior draws are few (far narrower, or shifted to where the posterior is thin), the estimate is
  typically too low by an unknown amount, and no finite error bar can be given. Fit the model with that prior;
* k-hat below the limit but fewer than :data:`MIN_ESS` (100) effective reweighted draws (``ess`` column):
  ``reliable=False`` with the computed se (large then, itself uncertain) and a reason;
* the alternative prior zero at every draw: ``log_z = -inf``, unreliable;
* draws that never moved (fewer than 20, a stuck chain, a continuous variable with fewer than 20 distinct values:
  :func:`pmz.runners.draws_check.unmoved_draws_reason`): ``reliable=False``, ``log_z_se = inf`` and that reason
  (a constant weight would otherwise read as exact);
* an unreliable run: every row inherits its verdict (``the run itself is unreliable: ...``).

A replacement must keep the support: a prior that puts mass where the model's prior has none (a Normal for a
positive scale) gives a ratio that no posterior draw can estimate, and is refused. So is an improper alternative
(``pm.Flat``, ``pm.HalfFlat``: the evidence under it is not defined) and one PyMC cannot draw from (the support
check reads its draws).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..compare import _log_z_and_se, _verdict
from ..inference_data import get_group, is_inference_data, mcse_mean
from ..sample_diagnostics import pareto_khat
from ..weights import ess as kish_ess
from ..weights import log_mean_weight

__all__ = [
    "AS_FITTED", "COLUMNS", "KHAT_LIMIT", "MIN_ESS", "bayes_factor_sensitivity", "khat_limit", "prior_sensitivity",
]

AS_FITTED = "as fitted"  # the label of the row of the run's own prior
KHAT_LIMIT = 0.7  # Pareto k-hat above which importance reweighting cannot be trusted (PSIS)
N_SUPPORT_DRAWS = 500  # draws of each alternative prior for the support check
MIN_ESS = 100  # fewer effective reweighted draws than this: the se is itself too uncertain to trust
COLUMNS = ("log_z", "log_z_se", "log_ratio", "log_ratio_se", "pareto_k", "ess", "reliable", "reason")


def khat_limit(n: int) -> float:
    """The k-hat above which a row is unreliable: ``min(0.7, 1 - 1 / log10(n))`` for ``n`` draws (PSIS)."""
    return float(min(KHAT_LIMIT, 1.0 - 1.0 / np.log10(max(n, 11))))


def prior_sensitivity(result, model, priors: Mapping, *, posterior=None, random_seed=0) -> pd.DataFrame:
    """log Z under alternative priors, from one run's posterior draws (see the module docstring for the formula).

    Parameters
    ----------
    result : EvidenceResult or (log_z, se)
        The run, e.g. ``pmz.evidence(model)``. A ``method="auto"`` result keeps its posterior draws; for other
        methods pass the draws as ``posterior=``.
    model : pymc.Model
        The model the run was made for.
    priors : dict of label -> dict of variable name -> distribution
        Each alternative replaces the prior of one or more free variables by a distribution made with
        ``pm.XXX.dist(...)``, of the variable's shape or scalar (then each element gets it independently), e.g.
        ``{"wide": {"beta": pm.Normal.dist(0, 10)}, "narrow": {"beta": pm.Normal.dist(0, 0.5)}}``.
    posterior : draws, optional
        Posterior draws of the model (``pm.sample``'s result, its posterior group, or a dict ``name -> (n, ...)``,
        taken as one chain); default: the result's own posterior group.
    random_seed : int or numpy.random.Generator
        For the support check's draws of each alternative prior.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``prior`` (:data:`AS_FITTED` first, then the alternatives in the order given), columns
        ``log_z``, ``log_z_se``, ``log_ratio`` (``log E_post[w]``, 0 as fitted), ``log_ratio_se`` (its Monte Carlo
        se alone: differences between rows of one table have this se), ``pareto_k``, ``ess`` (Kish's
        ``(sum w)^2 / sum w^2`` times the draws' autocorrelation factor ``ESS_MCMC(w) / n``; NaN as fitted),
        ``reliable``, ``reason``. ``table.attrs`` holds ``n_draws``, ``khat_limit`` and ``method``.

    Raises
    ------
    ValueError
        An unknown or observed variable name, a distribution of another shape, a discrete prior for a continuous
        variable (or the other way round), an improper alternative (``pm.Flat``, ``pm.HalfFlat``) or one PyMC cannot
        draw from, an alternative prior with mass outside the model's support, a result without posterior draws and
        no ``posterior=``.

    Examples
    --------
    >>> import pymc as pm, pmz
    >>> from pmz.studies import prior_sensitivity
    >>> system = pmz.systems.normal_mean(n_obs=20, prior_sigma=2.0)
    >>> res = pmz.evidence(system.model, random_seed=1, progressbar=False)
    >>> table = prior_sensitivity(res, system.model, {"sd 5": {"mu": pm.Normal.dist(0.0, 5.0)}})
    >>> table[["log_z", "log_z_se", "pareto_k", "reliable"]].round(3)  # doctest: +SKIP
               log_z  log_z_se  pareto_k  reliable
    prior
    as fitted -27.772     0.008       NaN      True
    sd 5      -28.688     0.008     -0.041     True
    """
    from ..model import CompiledModel
    from ..model.prior_ratio import evaluate, prior_terms_function
    from ..runners.draws_check import unmoved_draws_reason
    from ..runners.starts import posterior_to_flat

    log_z0, se0 = _log_z_and_se(result)
    reliable0, reason0, _ = _verdict(result)
    priors = _check_priors(priors, model)
    compiled = CompiledModel(model)
    X, chain = posterior_to_flat(compiled, _draws_of(result, posterior, model), option="posterior",
                                 check_moved=False)
    unmoved = unmoved_draws_reason(compiled, X, chain, "posterior").removeprefix("pmz: ")
    n = X.shape[0]
    constrained = {name: _as_dtype(v, model[name].dtype) for name, v in compiled.to_constrained(X).items()}
    rng = np.random.default_rng(random_seed)
    limit = khat_limit(n)
    rows = {AS_FITTED: dict(zip(COLUMNS, (log_z0, se0, 0.0, 0.0, np.nan, np.nan, reliable0, reason0)))}
    for label, replaced in priors.items():
        names = list(replaced)
        shapes = {name: constrained[name].shape[1:] for name in names}
        _check_shapes(label, replaced, shapes, constrained)
        fn = prior_terms_function(compiled, replaced)
        _check_support(label, fn, X, replaced, shapes, rng)
        terms = evaluate(fn, X, [constrained[name] for name in names])
        with np.errstate(invalid="ignore"):
            log_w = (terms[:, 1] - terms[:, 0]).sum(axis=1)
        if np.isnan(log_w).any():
            raise ValueError(f"pmz.prior_sensitivity: the log prior ratio of {label!r} is NaN at "
                             f"{int(np.isnan(log_w).sum())} of the {n} draws; check the alternative's parameters")
        rows[label] = _row(log_w, chain, log_z0, se0, limit, reliable0, reason0)
        if unmoved:  # draws that never moved say nothing of E_post[w]: the row is flagged, its se infinite
            rows[label].update(log_z_se=np.inf, log_ratio_se=np.inf, reliable=False,
                               reason="; ".join(r for r in (unmoved, rows[label]["reason"]) if r))
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "prior"
    table["reliable"] = table["reliable"].astype(bool)
    table.attrs.update(n_draws=n, khat_limit=limit, method=str(getattr(result, "method", "")))
    return table


def _row(log_w, chain, log_z0, se0, limit, reliable0, reason0) -> dict:
    """One alternative's row: the log mean weight, its Monte Carlo se, k-hat, ESS and the verdict."""
    n = log_w.size
    if not np.isfinite(log_w).any():  # -inf everywhere: the alternative is zero at every draw
        reason = (f"the alternative prior is zero at all {n} posterior draws: the draws say nothing about "
                  "log Z under it; fit the model with this prior")
        return dict(zip(COLUMNS, (-np.inf, np.inf, -np.inf, np.inf, np.inf, 0.0, False, reason)))
    log_ratio = log_mean_weight(log_w)
    w = np.exp(log_w - np.max(log_w))
    mean = float(np.mean(w))
    if np.ptp(w) == 0:  # the same ratio at every draw: exact
        mcse, ess_mcmc = 0.0, float(n)
    else:
        mcse = mcse_mean(_by_chain(w, chain))
        ess_mcmc = float(np.var(w, ddof=1) / mcse**2) if mcse > 0 else float(n)
    ratio_se = mcse / mean
    khat = pareto_khat(log_w)
    ess = kish_ess(log_w) * min(ess_mcmc, n) / n
    reliable, reason = reliable0, reason0 and f"the run itself is unreliable: {reason0}"
    log_z_se = float(se0 + ratio_se)  # whatever the correlation of the two errors (module docstring)
    if not np.isfinite(khat) or khat > limit:
        what = "NaN (fewer than 25 draws: too few to fit the tail)" if np.isnan(khat) else f"{khat:.2f} > {limit:.2f}"
        reason = (f"Pareto k-hat {what}: the alternative prior puts its mass where the {n} posterior draws are "
                  "few, so reweighting them cannot estimate log Z under it (se set to inf; the value is likely "
                  "too low); fit the model with this prior" + (f"; {reason}" if reason else ""))
        reliable, log_z_se = False, np.inf
    elif ess < MIN_ESS:
        reason = (f"only {ess:.0f} effective draws (fewer than {MIN_ESS}) carry the alternative prior's weight: the "
                  "se is itself uncertain and the value may be low; fit the model with this prior or give more draws"
                  + (f"; {reason}" if reason else ""))
        reliable = False
    return dict(zip(COLUMNS, (log_z0 + log_ratio, log_z_se, log_ratio, ratio_se, khat, ess, bool(reliable), reason)))


def _as_dtype(values, dtype) -> np.ndarray:
    """Constrained values in the variable's dtype (discrete ones rounded first)."""
    values = np.asarray(values)
    return np.rint(values).astype(dtype) if np.dtype(dtype).kind in "iub" else values.astype(dtype)


def _by_chain(values, chain) -> np.ndarray:
    """``(chain, draw)``: the values of each chain in order, trimmed to the shortest (one row if chains are short)."""
    ids = np.unique(chain)
    length = min(int(np.sum(chain == c)) for c in ids)
    if length < 4:
        return values[None, :]
    return np.stack([values[chain == c][:length] for c in ids])


def _draws_of(result, posterior, model):
    """The posterior draws to reweight: ``posterior=`` when given, else the result's posterior group."""
    if posterior is not None:
        return posterior
    names = [rv.name for rv in model.free_RVs]
    if is_inference_data(result):
        group = get_group(result, "posterior")  # a pmz result without model draws has no posterior group
        if group is not None and all(name in group for name in names):
            return group
    method = getattr(result, "method", None)
    what = f"this result (method={method!r})" if method else f"a {type(result).__name__}"
    raise ValueError(
        f"pmz.prior_sensitivity: {what} keeps no posterior draws of the model's variables {names}; pass the draws "
        "the run used as posterior= (e.g. pm.sample's result), or use a method='auto' result, which keeps them"
    )


def _check_priors(priors, model) -> dict:
    """``{label: {name: dist}}`` with every name a free variable and every dist a PyMC distribution."""
    from pytensor.tensor.variable import TensorVariable

    if not isinstance(priors, Mapping) or not priors:
        raise TypeError("pmz.prior_sensitivity: priors must be a non-empty dict {label: {variable name: "
                        "pm.XXX.dist(...)}}")
    free = {rv.name for rv in model.free_RVs}
    other = {v.name for v in list(model.observed_RVs) + list(model.deterministics) + list(model.potentials)}
    checked = {}
    for label, replaced in priors.items():
        if label == AS_FITTED:
            raise ValueError(f"pmz.prior_sensitivity: the label {AS_FITTED!r} is the run's own prior; rename it")
        if not isinstance(replaced, Mapping) or not replaced:
            raise TypeError(f"pmz.prior_sensitivity: priors[{label!r}] must be a non-empty dict {{variable name: "
                            f"pm.XXX.dist(...)}}, got {type(replaced).__name__}")
        for name, dist in replaced.items():
            if name not in free:
                kind = "is observed, a Deterministic or a Potential" if name in other else "is not in the model"
                raise ValueError(f"pmz.prior_sensitivity: {name!r} in priors[{label!r}] {kind}; the priors of the "
                                 f"free variables {sorted(free)} can be replaced")
            if not isinstance(dist, TensorVariable) or dist.owner is None or dist in model.free_RVs:
                raise TypeError(f"pmz.prior_sensitivity: priors[{label!r}][{name!r}] must be a distribution made "
                                f"with pm.XXX.dist(...) outside the model, got {dist!r}")
            _check_proper(label, name, dist)
            rv = model[name]
            if (dist.dtype.startswith(("int", "uint", "bool"))) != (rv.dtype.startswith(("int", "uint", "bool"))):
                kinds = {True: "discrete", False: "continuous"}
                raise ValueError(f"pmz.prior_sensitivity: priors[{label!r}][{name!r}] is "
                                 f"{kinds[dist.dtype.startswith(('int', 'uint', 'bool'))]} but {name!r} is "
                                 f"{kinds[rv.dtype.startswith(('int', 'uint', 'bool'))]}: their ratio is not a "
                                 "density ratio")
        checked[str(label)] = dict(replaced)
    return checked


def _check_proper(label, name, dist) -> None:
    """An improper alternative (``pm.Flat``, ``pm.HalfFlat``) has no normalising constant: ``Z'`` under it is not
    defined (``E_post[p'/p]`` would depend on an arbitrary scale of ``p'``), so it is refused."""
    from pymc.distributions.continuous import FlatRV, HalfFlatRV

    if isinstance(dist.owner.op, FlatRV | HalfFlatRV):
        raise ValueError(
            f"pmz.prior_sensitivity: priors[{label!r}][{name!r}] is {type(dist.owner.op).__name__[:-2]}, an improper "
            "prior: its density does not integrate to one, so the evidence under it is not defined (any constant "
            "times it is the same prior). Give a proper distribution, e.g. a wide pm.Normal.dist(0, 100) (or "
            "pm.HalfNormal.dist(100) for a positive variable)"
        )


def _prior_draws(label, name, dist, n, seed) -> np.ndarray:
    """``n`` draws of an alternative prior, or a clear error where it cannot be drawn from (a CustomDist without
    ``random``): the support check needs its draws."""
    import pymc as pm

    try:
        return np.asarray(pm.draw(dist, draws=n, random_seed=seed))
    except NotImplementedError as err:
        raise ValueError(
            f"pmz.prior_sensitivity: priors[{label!r}][{name!r}] cannot be drawn from ({type(dist.owner.op).__name__}"
            f": {str(err).splitlines()[0]}), and pmz checks that an alternative keeps to the variable's support "
            "with its draws. Give a distribution PyMC can draw from (for a pm.CustomDist, pass random= as well as "
            "logp=)"
        ) from err


def _check_shapes(label, replaced, shapes, constrained):
    for name, dist in replaced.items():
        shape = tuple(int(s) for s in dist.shape.eval())
        if shape not in ((), shapes[name]):
            raise ValueError(f"pmz.prior_sensitivity: priors[{label!r}][{name!r}] has shape {shape} but {name!r} has "
                             f"shape {shapes[name]}; give a distribution of that shape, or a scalar one (then each "
                             "element gets it independently)")


def _check_support(label, fn, X, replaced, shapes, rng):
    """Draws of each alternative must lie where the model's prior of the variable is positive (at the parents of
    posterior draws): otherwise E_post[p'/p] misses the alternative's mass there and no draw can tell."""
    from ..model.prior_ratio import evaluate
    from ..runners.starts import evenly_spaced

    m = N_SUPPORT_DRAWS
    rows = X[evenly_spaced(X.shape[0], m)]
    values = []
    for name, dist in replaced.items():
        size = int(np.prod(shapes[name])) if dist.ndim == 0 else 1
        seed = int(rng.integers(2**31 - 1))
        draws = _prior_draws(label, name, dist, m * size, seed)
        values.append(draws.reshape(m, *shapes[name]))
    terms = evaluate(fn, rows, values)
    for j, name in enumerate(replaced):
        outside = np.isfinite(terms[:, 1, j]) & ~np.isfinite(terms[:, 0, j])
        if outside.any():
            example = np.array2string(np.asarray(values[j][int(np.argmax(outside))]), threshold=6, precision=4)
            raise ValueError(
                f"pmz.prior_sensitivity: priors[{label!r}][{name!r}] puts mass outside the support of {name!r}'s "
                f"prior in the model ({int(outside.sum())} of {m} of its draws, e.g. {name} = {example}): no "
                "posterior draw lies there, so log Z under it cannot be estimated by reweighting. Use a "
                "distribution on the same support (e.g. HalfNormal, Exponential or LogNormal for a positive "
                "variable) or fit the model with this prior"
            )


def _as_rows(x) -> pd.DataFrame:
    """A sensitivity table, or a result / (log_z, se) pair as the same value under every label."""
    if isinstance(x, pd.DataFrame):
        missing = {"log_z", "log_z_se", "reliable", "reason"} - set(x.columns)
        if missing:
            raise TypeError(f"pmz.bayes_factor_sensitivity: a table from prior_sensitivity has the columns "
                            f"log_z, log_z_se, reliable, reason; this one lacks {sorted(missing)}")
        return x
    log_z, se = _log_z_and_se(x)
    reliable, reason, _ = _verdict(x)
    index = pd.Index([AS_FITTED], name="prior")
    return pd.DataFrame({"log_z": log_z, "log_z_se": se, "reliable": reliable, "reason": reason}, index=index)


def _rows_for(x, labels) -> pd.DataFrame:
    """``x``'s rows under ``labels``: a table with alternatives row by row, anything else its one value repeated."""
    rows = _as_rows(x)
    if len(rows) > 1:
        return rows.reindex(labels)
    return rows.iloc[[0] * len(labels)].set_axis(labels)


def _khat_column(rows) -> np.ndarray:
    return rows["pareto_k"].to_numpy(dtype=float) if "pareto_k" in rows.columns else np.full(len(rows), np.nan)


def bayes_factor_sensitivity(a, b) -> pd.DataFrame:
    """log Bayes factor of model ``a`` over model ``b`` under each alternative prior.

    ``log BF' = log Z_a' - log Z_b'``, ``se = sqrt(se_a'^2 + se_b'^2)`` (two independent runs).

    Parameters
    ----------
    a, b : table from :func:`prior_sensitivity`, or an EvidenceResult / (log_z, se) pair
        A result, a pair or a table with only the :data:`AS_FITTED` row stands for a model whose prior the
        alternatives leave unchanged (e.g. a model without the coefficient whose prior is varied): its log Z
        enters every row. Two tables with alternatives must have the same labels.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``prior``, columns ``log_bf``, ``log_bf_se``, ``pareto_k`` (the larger of the two rows'; NaN
        where neither was reweighted), ``reliable`` (both rows reliable) and ``reason``
        (``"a: ...; b: ..."``). An unreliable row has ``log_bf_se = inf``.

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"log_z": [-10.0, -11.0], "log_z_se": [0.3, 0.3], "reliable": True, "reason": ""},
    ...                  index=pd.Index(["as fitted", "wide"], name="prior"))
    >>> bf = bayes_factor_sensitivity(a, (-12.0, 0.4))
    >>> bf["log_bf"].to_dict(), bf["log_bf_se"].to_dict()
    ({'as fitted': 2.0, 'wide': 1.0}, {'as fitted': 0.5, 'wide': 0.5})
    """
    tables = [x for x in (a, b) if isinstance(x, pd.DataFrame) and len(x) > 1]
    if len(tables) == 2 and set(a.index) != set(b.index):
        only_a, only_b = sorted(set(a.index) - set(b.index)), sorted(set(b.index) - set(a.index))
        raise ValueError(f"pmz.bayes_factor_sensitivity: the two tables have different alternatives (only in a: "
                         f"{only_a}; only in b: {only_b}); give both the same labels, or pass b's result alone if "
                         "the alternatives leave its prior unchanged")
    labels = tables[0].index if tables else pd.Index([AS_FITTED], name="prior")
    ta, tb = _rows_for(a, labels), _rows_for(b, labels)
    reliable = ta["reliable"].astype(bool).values & tb["reliable"].astype(bool).values
    reason = [
        "; ".join(f"{which}: {r}" for which, r, ok in (("a", ra, oka), ("b", rb, okb)) if r or not ok)
        for ra, rb, oka, okb in zip(ta["reason"], tb["reason"], ta["reliable"], tb["reliable"])
    ]
    return pd.DataFrame(
        {
            "log_bf": ta["log_z"].values - tb["log_z"].values,
            "log_bf_se": np.hypot(ta["log_z_se"].values, tb["log_z_se"].values),
            "pareto_k": np.fmax(_khat_column(ta), _khat_column(tb)),
            "reliable": reliable,
            "reason": reason,
        },
        index=labels,
    )
