"""Small models on which evidence estimates are known to fail, each with its exact log Z (the hazard matrix).

Each :class:`Hazard` is one column of the hazard matrix (``tests/test_hazards.py``, ``benchmarks/hazards.py``,
docs/errors.md "Which method is flagged where"): a model, the exact log evidence (by closed form, by summing a
discrete unknown or by quadrature over one dimension), and, for the columns about posterior draws, the draws a
user would pass as ``posterior=``. A method meets a hazard well when it answers within its error bar or says it
cannot (``reliable=False``, or a pmz error that names the problem); a reliable number many standard errors from
the truth is the failure the matrix exists to catch.

The columns (``hazards()``, in this order):

* ``baseline``: the conjugate normal mean (20 observations), where every method must answer;
* ``peaked``: one observation with noise sd 1e-4 (the posterior is 10^4 times narrower than the prior);
* ``flat``: one observation with noise sd 1000 (the likelihood is nearly constant);
* ``zero_region``: ``y ~ Uniform(0, theta)``: the likelihood is zero (log -inf) wherever ``theta < max y``;
* ``plus_inf``: a potential that is +inf where ``mu > 3``: log Z is +inf, no finite answer is right;
* ``nan``: a potential that is NaN where ``mu > 1.5``, inside the posterior: log Z is undefined;
* ``bimodal_symmetric``: ``mu`` and ``-mu`` explain the data equally (two mirror modes at +-4.5);
* ``bimodal_asymmetric``: the same with weights 0.6 / 0.4 and sds 1 / 0.7 (modes of mass 0.76 and 0.24, unequal widths);
* ``funnel``: Neal's funnel in 5 dimensions (a log scale and four means) with four weak observations;
* ``discrete_small``: ``k ~ Binomial(5, 0.3)`` beside a continuous mean;
* ``discrete_large``: ``k ~ Poisson(1000)`` observed far in its tail (``y ~ N(k, 1)`` at 1100);
* ``heavy_tails``: a Cauchy prior and one Cauchy observation (posterior tails ``|mu|^-4``);
* ``far_tail_data``: one observation at 1e6 under a ``N(0, 2)`` prior (the posterior 5e5 prior sd from it);
* ``high_dimension``: a 100-D Gaussian posterior with condition number 100;
* ``draws_miss_mode``: the symmetric bimodal model with exact draws from one of its two modes as ``posterior=``;
* ``draws_other_model``: the baseline with exact posterior draws shifted by three posterior sd as ``posterior=``;
* ``draws_divergent``: the funnel with ``pm.sample``'s own draws (and their divergences) as ``posterior=``;
* ``tiny_budget``: a 10-coefficient linear regression run with a tiny budget (the method's own tiny options);
* the default's shortcuts (:mod:`pmz.systems.shortcut_hazards`; the default's row only, and ``constant_draws`` for the
  methods that take ``posterior=``): ``far_support_mode``, ``slow_tail_count``, ``abs_latents``,
  ``switching_potential``, ``planted_mode``, ``narrow_mode``, ``many_modes``, ``constant_draws``;
* the Laplace route's failure modes (:mod:`pmz.systems.latent_hazards`; the default's row only): ``laplace_student_t``
  (a Student-t likelihood, not log-concave in the random intercepts), ``laplace_funnel`` (one count a group, the
  posterior of sigma piled against 0), ``laplace_heavy_latents`` (Student-t(2) random intercepts under a Poisson
  likelihood).

Examples
--------
>>> from pmz.systems.hazards import hazards
>>> hazard = hazards()["peaked"]
>>> round(hazard.log_z, 4)
-0.9989
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy import stats
from scipy.special import logsumexp

from .conjugate import correlated_gaussian, linear_regression, normal_mean
from .latent_hazards import latent_columns
from .shortcut_hazards import shortcut_columns

__all__ = ["Hazard", "hazards", "hazard_names"]


@dataclass(frozen=True)
class Hazard:
    """One column of the hazard matrix.

    Attributes
    ----------
    name, description : str
        Short name and what makes the model hard.
    build : callable
        ``build() -> pm.Model`` (the conjugate columns give one model object per process, so it compiles once).
    log_z : float
        Exact log evidence; ``inf`` where it is infinite, ``nan`` where it is undefined (no finite answer is right).
    draws : callable or None
        ``draws(seed)``: posterior draws for ``posterior=`` (an ``xarray.Dataset`` with dims chain, draw, or
        ``pm.sample``'s result); None where the column is not about given draws.
    tiny : bool
        The column runs every method with its tiny budget.
    methods : tuple of str or None
        The only rows (methods) the column applies to (the default's shortcuts: ``("auto",)``); None: every row.
    """

    name: str
    description: str
    build: Callable[[], pm.Model]
    log_z: float
    draws: Callable[[int], object] | None = None
    tiny: bool = False
    methods: tuple | None = None


def _log_integral(log_f: Callable[[np.ndarray], np.ndarray], lo: float, hi: float, n: int = 400_001) -> float:
    """log of the integral of exp(log_f) over [lo, hi] by the trapezoid rule in log space (a dense grid)."""
    grid = np.linspace(lo, hi, n)
    values = log_f(grid)
    weights = np.full(n, np.log(grid[1] - grid[0]))
    weights[[0, -1]] -= np.log(2.0)
    return float(logsumexp(values + weights))


def _grid_draws(log_f, lo, hi, seed, n_chains=2, n_draws=1000, name="mu") -> xr.Dataset:
    """Exact draws (to the grid's resolution) from the density exp(log_f) on [lo, hi], by the inverse cdf."""
    grid = np.linspace(lo, hi, 200_001)
    log_p = log_f(grid)
    cdf = np.cumsum(np.exp(log_p - log_p.max()))
    cdf /= cdf[-1]
    u = np.random.default_rng(seed).uniform(size=(n_chains, n_draws))
    return xr.Dataset({name: (("chain", "draw"), np.interp(u, cdf, grid))})


# --- the models -------------------------------------------------------------------------------------------------

Y_PEAKED, SD_PEAKED = 0.4, 1e-4
Y_FLAT, SD_FLAT = 0.4, 1e3


def _one_normal(y: float, sd: float) -> pm.Model:
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, np.float64(sd), observed=np.array([y]))
    return model


Y_SUPPORT = np.array([0.5, 1.2, 2.0])


def _zero_region() -> pm.Model:
    with pm.Model() as model:
        theta = pm.Gamma("theta", 2.0, 1.0)
        pm.Uniform("y", 0.0, theta, observed=Y_SUPPORT)
    return model


def _zero_region_log_z() -> float:
    """int_{max y}^inf Gamma(2, 1).pdf(t) t^-n dt."""
    return _log_integral(lambda t: stats.gamma(2).logpdf(t) - Y_SUPPORT.size * np.log(t), Y_SUPPORT.max(), 80.0)


Y_REGION = 0.5


def _with_potential(value: float, above: float) -> Callable[[], pm.Model]:
    def build() -> pm.Model:
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 1.0)
            pm.Normal("y", mu, 1.0, observed=np.array([Y_REGION]))
            pm.Potential("region", pt.switch(mu > above, np.float64(value), np.float64(0.0)))
        return model

    return build


Y_BIMODAL = 4.5 + np.array([-0.6, -0.3, -0.1, 0.1, 0.3, 0.6])
PRIOR_SD_BIMODAL = 10.0
ASYMMETRIC_WEIGHTS, ASYMMETRIC_SDS = (0.6, 0.4), (1.0, 0.7)


def _bimodal(weights, sds) -> Callable[[], pm.Model]:
    def build() -> pm.Model:
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, PRIOR_SD_BIMODAL)
            pm.NormalMixture(
                "y", w=np.asarray(weights, dtype=float), mu=pt.stack([mu, -mu]), sigma=np.asarray(sds, dtype=float),
                observed=Y_BIMODAL,
            )
        return model

    return build


def _bimodal_log_joint(weights, sds):
    def log_joint(mu):
        mu = np.asarray(mu)[:, None]
        parts = [np.log(w) + stats.norm.logpdf(Y_BIMODAL, sign * mu, s) for w, s, sign in zip(weights, sds, (1, -1))]
        return stats.norm.logpdf(mu[:, 0], 0.0, PRIOR_SD_BIMODAL) + np.logaddexp(*parts).sum(axis=1)

    return log_joint


def _one_mode_draws(seed: int) -> xr.Dataset:
    """Exact draws of the symmetric bimodal posterior restricted to its mode at mu > 0."""
    return _grid_draws(_bimodal_log_joint((0.5, 0.5), (1.0, 1.0)), 0.0, 12.0, seed)


Y_FUNNEL = np.array([0.3, -0.2, 0.1, -0.4])
FUNNEL_SCALE = 3.0


def _funnel() -> pm.Model:
    with pm.Model() as model:
        v = pm.Normal("v", 0.0, FUNNEL_SCALE)
        x = pm.Normal("x", 0.0, pt.exp(v / 2), shape=Y_FUNNEL.size)
        pm.Normal("y", x, 1.0, observed=Y_FUNNEL)
    return model


def _funnel_log_z() -> float:
    """y_i | v ~ N(0, e^v + 1) independently: a one-dimensional integral over v."""

    def log_f(v):
        sd = np.sqrt(np.exp(v)[:, None] + 1.0)
        return stats.norm.logpdf(v, 0.0, FUNNEL_SCALE) + stats.norm.logpdf(Y_FUNNEL, 0.0, sd).sum(axis=1)

    return _log_integral(log_f, -40.0, 40.0)


Y_DISCRETE = np.array([2.2, 1.8, 2.5])
N_TRIALS, P_SUCCESS, SD_DISCRETE = 5, 0.3, 0.5


def _discrete_small() -> pm.Model:
    with pm.Model() as model:
        k = pm.Binomial("k", N_TRIALS, P_SUCCESS)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", k + mu, SD_DISCRETE, observed=Y_DISCRETE)
    return model


def _discrete_small_log_z() -> float:
    """sum_k Binomial(k) N(y; k 1, sd^2 I + 1 1')."""
    n = Y_DISCRETE.size
    cov = SD_DISCRETE**2 * np.eye(n) + np.ones((n, n))
    ks = np.arange(N_TRIALS + 1)
    terms = [stats.binom.logpmf(k, N_TRIALS, P_SUCCESS)
             + stats.multivariate_normal.logpdf(Y_DISCRETE, np.full(n, k), cov) for k in ks]
    return float(logsumexp(terms))


POISSON_RATE, Y_POISSON = 1000.0, 1100.0


def _discrete_large() -> pm.Model:
    with pm.Model() as model:
        k = pm.Poisson("k", POISSON_RATE)
        pm.Normal("y", k, 1.0, observed=np.array([Y_POISSON]))
    return model


def _discrete_large_log_z() -> float:
    ks = np.arange(0, 4000)
    return float(logsumexp(stats.poisson.logpmf(ks, POISSON_RATE) + stats.norm.logpdf(Y_POISSON, ks, 1.0)))


Y_CAUCHY, SCALE_CAUCHY = 0.5, 0.5


def _heavy_tails() -> pm.Model:
    with pm.Model() as model:
        mu = pm.Cauchy("mu", 0.0, 1.0)
        pm.Cauchy("y", mu, SCALE_CAUCHY, observed=np.array([Y_CAUCHY]))
    return model


def _heavy_tails_log_z() -> float:
    """The sum of Cauchy(0, 1) and Cauchy(0, s) variables is Cauchy(0, 1 + s)."""
    return float(stats.cauchy.logpdf(Y_CAUCHY, 0.0, 1.0 + SCALE_CAUCHY))


@lru_cache(maxsize=None)
def _known(name: str):
    """The conjugate systems the matrix reuses (their data are simulated once per process)."""
    if name == "baseline":
        return normal_mean()
    if name == "high_dimension":
        return correlated_gaussian(dim=100, condition=1e2)
    if name == "tiny_budget":
        return linear_regression(n_coef=10)
    raise KeyError(name)


def _conjugate(name: str) -> Callable[[], pm.Model]:
    return lambda: _known(name).model


@lru_cache(maxsize=4)
def _funnel_nuts_draws(seed: int):
    """``pm.sample``'s draws of the funnel (NUTS, 2 chains of 1000 after 1000 tuning steps), with the divergences its
    sampler records in ``sample_stats``: draws a user would pass, biased where the sampler could not follow the neck."""
    with _funnel():
        return pm.sample(chains=2, cores=1, random_seed=seed, progressbar=False, compute_convergence_checks=False,
                         nuts_sampler="pymc")


Y_TAIL, SD_TAIL_PRIOR = 1e6, 2.0


def _far_tail() -> pm.Model:
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, SD_TAIL_PRIOR)
        pm.Normal("y", mu, 1.0, observed=np.array([Y_TAIL]))
    return model


SHIFT_SD = 3.0


def _shifted_draws(seed: int) -> xr.Dataset:
    """Exact posterior draws of the baseline (normal_mean: mu ~ N(0, 2^2), y_i ~ N(mu, 1)) moved by three
    posterior sd: draws a user might pass from a model fitted to other data."""
    model = _known("baseline").model
    y = np.asarray(model.rvs_to_values[model["y"]].eval())
    precision = 1 / 2.0**2 + y.size
    mean, sd = y.sum() / precision, precision**-0.5
    rng = np.random.default_rng(seed)
    return xr.Dataset({"mu": (("chain", "draw"), rng.normal(mean + SHIFT_SD * sd, sd, size=(2, 1000)))})


def _hazards() -> dict[str, Hazard]:
    sym, asym = ((0.5, 0.5), (1.0, 1.0)), (ASYMMETRIC_WEIGHTS, ASYMMETRIC_SDS)
    log_z_sym = _log_integral(_bimodal_log_joint(*sym), -60.0, 60.0)
    log_z_funnel = _funnel_log_z()
    rows = [
        Hazard("baseline", "conjugate normal mean, 20 observations", _conjugate("baseline"), _known("baseline").log_z),
        Hazard("peaked", "one observation with noise sd 1e-4", lambda: _one_normal(Y_PEAKED, SD_PEAKED),
               float(stats.norm.logpdf(Y_PEAKED, 0.0, np.sqrt(1.0 + SD_PEAKED**2)))),
        Hazard("flat", "one observation with noise sd 1000", lambda: _one_normal(Y_FLAT, SD_FLAT),
               float(stats.norm.logpdf(Y_FLAT, 0.0, np.sqrt(1.0 + SD_FLAT**2)))),
        Hazard("zero_region", "likelihood zero where theta < max(y)", _zero_region, _zero_region_log_z()),
        Hazard("plus_inf", "log density +inf where mu > 3 (log Z infinite)", _with_potential(np.inf, 3.0), np.inf),
        Hazard("nan", "log density NaN where mu > 1.5 (log Z undefined)", _with_potential(np.nan, 1.5), np.nan),
        Hazard("bimodal_symmetric", "two mirror modes at +-4.5", _bimodal(*sym), log_z_sym),
        Hazard("bimodal_asymmetric", "two modes of unequal mass and width", _bimodal(*asym),
               _log_integral(_bimodal_log_joint(*asym), -60.0, 60.0)),
        Hazard("funnel", "Neal's funnel, 5 dimensions, weak data", _funnel, log_z_funnel),
        Hazard("discrete_small", "k ~ Binomial(5, 0.3) beside a continuous mean", _discrete_small,
               _discrete_small_log_z()),
        Hazard("discrete_large", "k ~ Poisson(1000) observed at 1100", _discrete_large, _discrete_large_log_z()),
        Hazard("heavy_tails", "Cauchy prior, one Cauchy observation", _heavy_tails, _heavy_tails_log_z()),
        Hazard("far_tail_data", "one observation at 1e6 under a N(0, 2) prior", _far_tail,
               float(stats.norm.logpdf(Y_TAIL, 0.0, np.sqrt(1.0 + SD_TAIL_PRIOR**2)))),
        Hazard("high_dimension", "100-D Gaussian posterior, condition number 100", _conjugate("high_dimension"),
               _known("high_dimension").log_z),
        Hazard("draws_miss_mode", "posterior= draws from one of two mirror modes", _bimodal(*sym), log_z_sym,
               draws=_one_mode_draws),
        Hazard("draws_other_model", "posterior= draws shifted by 3 posterior sd", _conjugate("baseline"),
               _known("baseline").log_z, draws=_shifted_draws),
        Hazard("draws_divergent", "posterior= draws of pm.sample on the funnel, with divergences", _funnel,
               log_z_funnel, draws=_funnel_nuts_draws),
        Hazard("tiny_budget", "10-coefficient regression, tiny budgets", _conjugate("tiny_budget"),
               _known("tiny_budget").log_z, tiny=True),
        *shortcut_columns(Hazard, _conjugate("baseline"), _known("baseline").log_z),
        *latent_columns(Hazard),
    ]
    return {hazard.name: hazard for hazard in rows}


@lru_cache(maxsize=None)
def hazards() -> dict[str, Hazard]:
    """``{name: Hazard}``, the columns in the matrix's order (built on first use: the quadratures take a second)."""
    return _hazards()


def hazard_names() -> list[str]:
    """The columns, in the matrix's order."""
    return list(hazards())
