"""Everyday PyMC models with a trusted log evidence log Z = log p(y), at a default size and scaled.

The same shape as ``auto_models.py`` (whose :class:`BenchmarkModel`, quadrature rules and helpers are reused):
:data:`EVERYDAY` maps a name to a :class:`BenchmarkModel` whose ``build()`` returns a fresh ``pm.Model`` with
fixed data (simulated here with fixed ``numpy.random.default_rng`` seeds), whose ``log_z`` / ``log_z_se`` are
literals computed once by ``exact`` (which recomputes them), with ``kind`` and ``dim`` (free unconstrained
parameters). :func:`scaled` gives the models with a size parameter at another size, its truth computed on demand
and cached in ``benchmarks/results/everyday_truths.json`` (written by ``--check``).

Every truth integrates PyMC's own log density (priors as written; the integrals run over the unconstrained
coordinates of PyMC's value variables with the log-Jacobians of the transforms, i.e. ``model.logp()``):

* ``censored_regression`` (3-D): 1500 points, ``pm.Censored(Normal, upper=U)`` with U at the 80% quantile
  (19.6% censored), a, b ~ N(0, 5^2), sigma ~ HalfNormal(2). Gauss-Hermite product quadrature (24^3 nodes) in
  Laplace-whitened coordinates (``auto_models._gauss_hermite``); se = change from the rule with 2 fewer nodes per
  axis. PyMC computes the normal tail probability with sqrt(2) rounded to float32 (see ``_normal_logccdf``); the
  truth integrates that density, 6.7e-7 below the exact-normal-CDF value (stated in ``log_z_how``).
* ``truncated_regression`` (3-D): 2000 points of a normal regression truncated below at 0 (``pm.Truncated``),
  same priors; Gauss-Hermite as above (the float32 sqrt(2) shifts log Z by 3.2e-6 here).
* ``negbin_glm`` (5-D): ``pm.NegativeBinomial(mu=exp(eta), alpha)``, intercept ~ N(0, 2^2) + 3 standardised
  predictors with N(0, 1) slopes, alpha ~ Exponential(1), 2000 points (scaled: the first n rows of one simulated
  data set of 100000, predictors standardised on those rows); Gauss-Hermite with 10^5 nodes (n <= 5000) or 8^5
  (larger n; at n = 100000 about 100 s), the Gamma-function terms summed through a count table.
* ``zip_poisson`` (4-D): ``pm.ZeroInflatedPoisson(psi, mu=exp(a + b1 x1 + b2 x2))``, 1000 points, a ~ N(0, 2^2),
  b ~ N(0, 1), psi ~ Beta(2, 2); Gauss-Hermite (16^4 nodes).
* ``logistic_glm`` (5-D): Bernoulli-logit, intercept + 4 standardised predictors, all coefficients N(0, 2.5^2),
  2000 points (scaled as ``negbin_glm``); Gauss-Hermite.
* ``hierarchical_normal_40`` / ``_1000`` (42-D / 1002-D): y_ij ~ N(mu + tau z_j, 1), 5 points per group,
  mu ~ N(0, 5^2), tau ~ HalfNormal(1), z_j ~ N(0, 1). mu and z integrated analytically given tau
  (``auto_models._log_hier_normal``), 1-D trapezoid rule over log tau (``auto_models._quad``: box within 40 nats of
  the maximum; se = largest change when the grid is refined 2x or the box widened).
* ``ar1_400`` / ``ar1_2000`` (T + 2): ``pm.AR`` with rho = 0.9, stationary initial state, sigma_state and
  sigma_obs ~ HalfNormal(1), y ~ N(lat, sigma_obs). Latent states integrated by the Kalman filter, 2-D trapezoid
  rule over the two log sds (``_quad`` with 401^2 / 801^2 points, same error estimate). ``--verify`` confirms that
  ``pm.AR`` with this ``init_dist`` is x_0 ~ N(0, s / sqrt(1 - rho^2)), x_t ~ N(rho x_{t-1}, s).
* ``gp_latent_100`` (101-D): ``pm.gp.Latent`` (ExpQuad, ls = eta = 1 fixed, PyMC's non-centred
  f = chol(K + jitter I) f_rotated_, jitter = ``pymc.gp.util.JITTER_DEFAULT`` = 1e-6), sigma ~ HalfNormal(1):
  given sigma, y ~ MVN(0, K + jitter I + sigma^2 I) exactly; 1-D trapezoid rule over log sigma (``_quad``).
* ``correlated_gaussian_100`` / ``_400`` / ``_1000``: ``pmz.systems.correlated_gaussian(dim=d)``, closed form.

Error estimates below 1e-10 are stored as 1e-10 (closed forms: 0). Sizes for :func:`scaled` (``SCALED_SIZES``):
negbin_glm and logistic_glm n = 1000, 10000, 100000 observations; hierarchical_normal 10, 40, 100, 400, 1000
groups; ar1 T = 100, 400, 1000, 2000; gp_latent 50, 100, 200, 500 points; correlated_gaussian d = 10, 100, 400,
1000 (any size up to the largest works). The default sizes take 0-6 s each, ``--check`` about 5 min in all.

Verification (``--verify``): (a) for every model, a numpy log joint written here (the one the Gauss-Hermite rules
integrate) equals ``model.compile_logp()`` at random points; (b) for the hierarchical, AR(1), GP and correlated
Gaussian models, the 1-D / 2-D integrand (or the closed form) equals PyMC's own density integrated exactly over the
Gaussian latents given the hyperparameters (the density is quadratic there: value and gradient at 0 and the
Hessian from gradient differences with unit steps, exact for a quadratic); (c) for the 3-5-D models, importance
sampling of PyMC's vectorised density from a multivariate t(5) at its mode (scale = inverse Hessian, 200000
draws) agrees with the truth within its se.

    python benchmarks/everyday_models.py             # table of the stored truths
    python benchmarks/everyday_models.py --check     # recompute every truth, default and scaled sizes (cached)
    python benchmarks/everyday_models.py --verify    # the independent checks
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
import zlib
from functools import cache
from pathlib import Path

import numpy as np
from scipy import optimize, special

warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from auto_models import (  # noqa: E402
    LOG_2PI,
    BenchmarkModel,
    _f,
    _flat_logp,
    _gauss_hermite,
    _hessian,
    _log_halfnormal,
    _log_hier_normal,
    _m,
    _quad,
)
from pymc.gp.util import JITTER_DEFAULT  # noqa: E402

from everyday_wide_models import WIDE, WIDE_LOGJOINTS  # noqa: E402

from pmz.systems.state_space import ar1_kalman_log_likelihood  # noqa: E402

__all__ = ["EVERYDAY", "SCALED_SIZES", "BenchmarkModel", "scaled"]

CACHE = Path(__file__).resolve().parent / "results" / "everyday_truths.json"


def _lnorm(x, mu, sd):
    return -0.5 * LOG_2PI - np.log(sd) - 0.5 * ((x - mu) / sd) ** 2


def _log_expit(x):
    return -np.logaddexp(0.0, -x)


# PyMC's Normal logcdf / logccdf (pymc.distributions.dist_math.normal_lccdf) divide by pt.sqrt(2.0), whose constant
# 2.0 pytensor types as float32: sqrt(2) rounded to float32, a relative error of 2e-8 in z. Its censored and
# truncated densities are off from the exact normal ones by up to ~3e-8 per observation (5e-6 / 2e-5 in the log
# joint summed over the data, +7e-7 / +3e-6 in log Z). The truths integrate PyMC's density as it is computed, so
# this reproduces it (``exact=True``: the exact log Phi).
_SQRT2_PYMC = float(np.sqrt(np.float32(2.0)))


def _normal_logccdf(z, exact: bool = False):
    """log P(Z > z), Z ~ N(0, 1), as PyMC 6 computes it (or exactly)."""
    if exact:
        return special.log_ndtr(-z)
    with np.errstate(divide="ignore"):
        return np.where(z > 1.0, np.log(special.erfcx(z / _SQRT2_PYMC) / 2.0) - z * z / 2.0,
                        np.log1p(-special.erfc(-z / _SQRT2_PYMC) / 2.0))


def _rows(P, layout):
    """Split (m, dim) rows into a dict of (m, size) blocks, in the order of ``layout`` = [(name, size), ...]."""
    out, start = {}, 0
    for name, size in layout:
        out[name] = P[:, start : start + size]
        start += size
    return out


def _gh(logjoint, layout, n, x0=None, obs=1):
    """Gauss-Hermite truth of a GLM: ``logjoint`` takes the dict of value-variable blocks; chunked to ~4e6 cells."""
    dim = sum(s for _, s in layout)
    return _gauss_hermite(lambda P: logjoint(_rows(P, layout)), dim, n, x0=x0, chunk=max(1, 4_000_000 // obs))


# ================================================================================================ censored
CENS = {"n": 1500, "a": 1.0, "b": 2.0, "sigma": 1.5, "coef_sd": 5.0, "sigma_sd": 2.0, "censored": 0.2}
CENS_LAYOUT = [("a", 1), ("b", 1), ("sigma_log__", 1)]


@cache
def _censored_data():
    rng = np.random.default_rng(101)
    x = rng.normal(0.0, 1.0, CENS["n"])
    latent = CENS["a"] + CENS["b"] * x + rng.normal(0.0, CENS["sigma"], CENS["n"])
    upper = float(np.round(np.quantile(latent, 1 - CENS["censored"]), 1))  # a detection limit
    return x, np.minimum(latent, upper), upper


def build_censored_regression() -> pm.Model:
    x, y, upper = _censored_data()
    with pm.Model() as model:
        a = pm.Normal("a", mu=_f(0.0), sigma=_f(CENS["coef_sd"]))
        b = pm.Normal("b", mu=_f(0.0), sigma=_f(CENS["coef_sd"]))
        sigma = pm.HalfNormal("sigma", sigma=_f(CENS["sigma_sd"]))
        pm.Censored("y", pm.Normal.dist(mu=a + b * _f(x), sigma=sigma), lower=None, upper=_f(upper), observed=y)
    return model


def _censored_logjoint(p, exact_cdf: bool = False):
    x, y, upper = _censored_data()
    cens = y >= upper
    a, b, u = p["a"], p["b"], p["sigma_log__"]
    sigma = np.exp(u)
    mu_o = a + b * x[~cens]
    mu_c = a + b * x[cens]
    ll = (np.sum(_lnorm(y[~cens], mu_o, sigma), 1)
          + np.sum(_normal_logccdf((upper - mu_c) / sigma, exact_cdf), 1))  # log P(latent >= U)
    prior = (_lnorm(a, 0, CENS["coef_sd"]) + _lnorm(b, 0, CENS["coef_sd"])
             + _log_halfnormal(sigma, CENS["sigma_sd"]) + u)[:, 0]
    return ll + prior


def exact_censored_regression():
    return _gh(_censored_logjoint, CENS_LAYOUT, 24, obs=CENS["n"])


# ================================================================================================ truncated
TRUNC = {"n": 2000, "a": 0.5, "b": 1.0, "sigma": 1.2, "coef_sd": 5.0, "sigma_sd": 2.0}
TRUNC_LAYOUT = [("a", 1), ("b", 1), ("sigma_log__", 1)]


@cache
def _truncated_data():
    rng = np.random.default_rng(202)
    xs, ys = [], []
    while sum(v.size for v in ys) < TRUNC["n"]:  # keep only y > 0 (rejection)
        x = rng.normal(0.0, 1.0, 1000)
        y = TRUNC["a"] + TRUNC["b"] * x + rng.normal(0.0, TRUNC["sigma"], 1000)
        xs.append(x[y > 0])
        ys.append(y[y > 0])
    return np.concatenate(xs)[: TRUNC["n"]], np.concatenate(ys)[: TRUNC["n"]]


def build_truncated_regression() -> pm.Model:
    x, y = _truncated_data()
    with pm.Model() as model:
        a = pm.Normal("a", mu=_f(0.0), sigma=_f(TRUNC["coef_sd"]))
        b = pm.Normal("b", mu=_f(0.0), sigma=_f(TRUNC["coef_sd"]))
        sigma = pm.HalfNormal("sigma", sigma=_f(TRUNC["sigma_sd"]))
        pm.Truncated("y", pm.Normal.dist(mu=a + b * _f(x), sigma=sigma), lower=_f(0.0), observed=y)
    return model


def _truncated_logjoint(p, exact_cdf: bool = False):
    x, y = _truncated_data()
    a, b, u = p["a"], p["b"], p["sigma_log__"]
    sigma = np.exp(u)
    mu = a + b * x
    ll = np.sum(_lnorm(y, mu, sigma) - _normal_logccdf(-mu / sigma, exact_cdf), 1)  # normalised on (0, inf)
    prior = (_lnorm(a, 0, TRUNC["coef_sd"]) + _lnorm(b, 0, TRUNC["coef_sd"])
             + _log_halfnormal(sigma, TRUNC["sigma_sd"]) + u)[:, 0]
    return ll + prior


def exact_truncated_regression():
    return _gh(_truncated_logjoint, TRUNC_LAYOUT, 24, obs=TRUNC["n"])


# ================================================================================================ negative binomial
NB = {"n": 2000, "n_max": 100_000, "intercept": 1.0, "beta": [0.5, -0.3, 0.2], "alpha": 2.0,
      "intercept_sd": 2.0, "beta_sd": 1.0, "alpha_rate": 1.0}
NB_LAYOUT = [("intercept", 1), ("beta", 3), ("alpha_log__", 1)]
NB_SIZES = (1000, 10_000, 100_000)


@cache
def _negbin_pool():
    rng = np.random.default_rng(303)
    X = rng.normal([2.0, 0.0, 10.0], [1.0, 3.0, 0.5], size=(NB["n_max"], 3))  # raw predictors
    Z = (X - X.mean(0)) / X.std(0)
    mu = np.exp(NB["intercept"] + Z @ np.array(NB["beta"]))
    y = rng.poisson(rng.gamma(NB["alpha"], mu / NB["alpha"]))  # NB(mean mu, dispersion alpha)
    return X, y


def _first_rows(pool, n: int, n_max: int, name: str):
    """The first ``n`` rows of a simulated ``(X, y)`` pool, predictors standardised on those rows."""
    X, y = pool
    if not 1 <= n <= n_max:
        raise ValueError(f"{name}: n must be in 1..{n_max}")
    X = X[:n]
    return (X - X.mean(0)) / X.std(0), y[:n]


@cache
def _negbin_data(n: int):
    return _first_rows(_negbin_pool(), n, NB["n_max"], "negbin_glm")


def _build_negbin(n: int) -> pm.Model:
    X, y = _negbin_data(n)
    with pm.Model() as model:
        intercept = pm.Normal("intercept", mu=_f(0.0), sigma=_f(NB["intercept_sd"]))
        beta = pm.Normal("beta", mu=_f(0.0), sigma=_f(NB["beta_sd"]), shape=3)
        alpha = pm.Exponential("alpha", lam=_f(NB["alpha_rate"]))
        pm.NegativeBinomial("y", mu=pt.exp(intercept + pt.dot(_f(X), beta)), alpha=alpha, observed=y)
    return model


def _negbin_logjoint_fn(n: int):
    """log prior + Jacobian + log likelihood of the NB GLM (PyMC's NB: binomln(y + alpha - 1, y) + ...)."""
    X, y = _negbin_data(n)
    A = np.column_stack([np.ones(n), X])
    Aty = A.T @ y
    counts = np.array([np.sum(y > k) for k in range(int(y.max()))], float)  # sum_i lgamma(y_i+al)-lgamma(al)
    ks = np.arange(counts.size, dtype=float)
    const = -float(np.sum(special.gammaln(y + 1.0)))
    yf = y.astype(float)

    def logjoint(p):
        B = np.column_stack([p["intercept"], p["beta"]])
        u = p["alpha_log__"][:, 0]
        al = np.exp(u)
        eta = B @ A.T  # (m, n)
        log_al_mu = np.logaddexp(u[:, None], eta)  # log(alpha + mu)
        # sum_i [lgamma(y_i + al) - lgamma(al) - lgamma(y_i + 1) + al log al + y_i eta_i - (al + y_i) log(al + mu_i)]
        ll = (np.log(al[:, None] + ks) @ counts + const + n * al * u + B @ Aty
              - al * log_al_mu.sum(1) - log_al_mu @ yf)
        prior = (_lnorm(B[:, 0], 0, NB["intercept_sd"]) + np.sum(_lnorm(B[:, 1:], 0, NB["beta_sd"]), 1)
                 + np.log(NB["alpha_rate"]) - NB["alpha_rate"] * al + u)
        return ll + prior

    return logjoint


def _exact_negbin(n: int, nodes: int = 10):
    y = _negbin_data(n)[1]
    return _gh(_negbin_logjoint_fn(n), NB_LAYOUT, nodes, x0=np.r_[np.log(y.mean() + 0.5), 0, 0, 0, 0], obs=n)


# ================================================================================================ zero-inflated Poisson
ZIP = {"n": 1000, "a": 0.8, "b": [0.5, -0.4], "psi": 0.7, "a_sd": 2.0, "b_sd": 1.0, "psi_ab": (2.0, 2.0)}
ZIP_LAYOUT = [("a", 1), ("b", 2), ("psi_logodds__", 1)]


@cache
def _zip_data():
    rng = np.random.default_rng(404)
    X = rng.normal(0.0, 1.0, size=(ZIP["n"], 2))
    mu = np.exp(ZIP["a"] + X @ np.array(ZIP["b"]))
    y = np.where(rng.random(ZIP["n"]) < ZIP["psi"], rng.poisson(mu), 0)  # psi = P(Poisson component)
    return X, y


def build_zip_poisson() -> pm.Model:
    X, y = _zip_data()
    with pm.Model() as model:
        a = pm.Normal("a", mu=_f(0.0), sigma=_f(ZIP["a_sd"]))
        b = pm.Normal("b", mu=_f(0.0), sigma=_f(ZIP["b_sd"]), shape=2)
        psi = pm.Beta("psi", alpha=_f(ZIP["psi_ab"][0]), beta=_f(ZIP["psi_ab"][1]))
        pm.ZeroInflatedPoisson("y", psi=psi, mu=pt.exp(a + pt.dot(_f(X), b)), observed=y)
    return model


def _zip_logjoint(p):
    X, y = _zip_data()
    zero = y == 0
    A = np.column_stack([np.ones(len(y)), X])
    B = np.column_stack([p["a"], p["b"]])
    w = p["psi_logodds__"][:, 0]
    log_psi, log_1m = _log_expit(w), _log_expit(-w)
    eta = B @ A.T
    mu = np.exp(eta)
    ll = (np.sum(np.logaddexp(log_1m[:, None], log_psi[:, None] - mu[:, zero]), 1)
          + (~zero).sum() * log_psi + eta[:, ~zero] @ y[~zero] - mu[:, ~zero].sum(1)
          - float(np.sum(special.gammaln(y[~zero] + 1.0))))
    al, be = ZIP["psi_ab"]
    prior = (_lnorm(B[:, 0], 0, ZIP["a_sd"]) + np.sum(_lnorm(B[:, 1:], 0, ZIP["b_sd"]), 1)
             - special.betaln(al, be) + (al - 1) * log_psi + (be - 1) * log_1m + log_psi + log_1m)  # + Jacobian
    return ll + prior


def exact_zip_poisson():
    return _gh(_zip_logjoint, ZIP_LAYOUT, 16, x0=np.r_[0.5, 0, 0, 0.5], obs=ZIP["n"])


# ================================================================================================ logistic
LOGIT = {"n": 2000, "n_max": 100_000, "intercept": -0.5, "beta": [1.0, -0.7, 0.4, 0.0], "sd": 2.5}
LOGIT_LAYOUT = [("intercept", 1), ("beta", 4)]
LOGIT_SIZES = (1000, 10_000, 100_000)


@cache
def _logistic_pool():
    rng = np.random.default_rng(505)
    corr = 0.3 ** np.abs(np.subtract.outer(np.arange(4), np.arange(4)))
    X = rng.normal(size=(LOGIT["n_max"], 4)) @ np.linalg.cholesky(corr).T * [1.0, 2.0, 0.5, 10.0] + [0, 1, 5, 50]
    Z = (X - X.mean(0)) / X.std(0)
    y = (rng.random(LOGIT["n_max"]) < special.expit(LOGIT["intercept"] + Z @ np.array(LOGIT["beta"]))).astype(int)
    return X, y


@cache
def _logistic_data(n: int):
    return _first_rows(_logistic_pool(), n, LOGIT["n_max"], "logistic_glm")


def _build_logistic(n: int) -> pm.Model:
    X, y = _logistic_data(n)
    with pm.Model() as model:
        intercept = pm.Normal("intercept", mu=_f(0.0), sigma=_f(LOGIT["sd"]))
        beta = pm.Normal("beta", mu=_f(0.0), sigma=_f(LOGIT["sd"]), shape=4)
        pm.Bernoulli("y", logit_p=intercept + pt.dot(_f(X), beta), observed=y)
    return model


def _logistic_logjoint_fn(n: int):
    X, y = _logistic_data(n)
    A = np.column_stack([np.ones(n), X])
    Aty = A.T @ y

    def logjoint(p):
        B = np.column_stack([p["intercept"], p["beta"]])
        eta = B @ A.T
        return B @ Aty - np.logaddexp(0.0, eta).sum(1) + np.sum(_lnorm(B, 0, LOGIT["sd"]), 1)

    return logjoint


def _exact_logistic(n: int, nodes: int = 10):
    return _gh(_logistic_logjoint_fn(n), LOGIT_LAYOUT, nodes, obs=n)


# ================================================================================================ hierarchical normal
HIER = {"per_group": 5, "max_groups": 1000, "mu": 1.0, "tau": 0.7, "sigma": 1.0, "mu_sd": 5.0, "tau_sd": 1.0}
HIER_SIZES = (10, 40, 100, 400, 1000)


@cache
def _hier_pool():
    rng = np.random.default_rng(606)
    theta = HIER["mu"] + HIER["tau"] * rng.normal(size=HIER["max_groups"])
    return theta[:, None] + HIER["sigma"] * rng.normal(size=(HIER["max_groups"], HIER["per_group"]))


def _hier_data(groups: int):
    if not 1 <= groups <= HIER["max_groups"]:
        raise ValueError(f"hierarchical_normal: groups must be in 1..{HIER['max_groups']}")
    y = _hier_pool()[:groups]
    return y.ravel(), np.repeat(np.arange(groups), HIER["per_group"])


def _build_hier(groups: int) -> pm.Model:
    y, group = _hier_data(groups)
    with pm.Model() as model:
        mu = pm.Normal("mu", mu=_f(0.0), sigma=_f(HIER["mu_sd"]))
        tau = pm.HalfNormal("tau", sigma=_f(HIER["tau_sd"]))
        z = pm.Normal("z", mu=_f(0.0), sigma=_f(1.0), shape=groups)
        theta = pm.Deterministic("theta", mu + tau * z)
        pm.Normal("y", mu=theta[group], sigma=_f(HIER["sigma"]), observed=y)
    return model


def _hier_logjoint_fn(groups: int):
    y, group = _hier_data(groups)

    def logjoint(p):
        mu, u, z = p["mu"], p["tau_log__"], p["z"]
        theta = mu + np.exp(u) * z
        return (_lnorm(mu, 0, HIER["mu_sd"]) + _log_halfnormal(np.exp(u), HIER["tau_sd"]) + u)[:, 0] + np.sum(
            _lnorm(z, 0, 1), 1) + np.sum(_lnorm(y, theta[:, group], HIER["sigma"]), 1)

    return logjoint


def _hier_logf_fn(groups: int):
    """u = log tau -> log prior + Jacobian + log p(y | tau) (mu and z integrated analytically)."""
    y, group = _hier_data(groups)
    sizes = np.bincount(group).astype(float)
    means = np.bincount(group, weights=y) / sizes
    within = float(np.sum((y - means[group]) ** 2))

    def logf(u):
        return (_log_halfnormal(np.exp(u), HIER["tau_sd"]) + u
                + _log_hier_normal(sizes, means, within, HIER["mu_sd"], np.exp(2 * u), HIER["sigma"] ** 2))

    return logf


def _exact_hier(groups: int):
    return _quad(_hier_logf_fn(groups), [(-90.0, 4.0)], n=2001)


# ================================================================================================ AR(1)
AR1 = {"rho": 0.9, "state_sd": 0.5, "obs_sd": 1.0, "max_T": 2000, "prior_sd": 1.0}
AR1_INIT = float(np.sqrt(1.0 - AR1["rho"] ** 2))  # x_0 ~ N(0, sigma_state / AR1_INIT): the stationary law
AR1_SIZES = (100, 400, 1000, 2000)


@cache
def _ar1_pool():
    rng = np.random.default_rng(707)
    x = np.empty(AR1["max_T"])
    x[0] = rng.normal(0.0, AR1["state_sd"] / AR1_INIT)
    for t in range(1, x.size):
        x[t] = AR1["rho"] * x[t - 1] + rng.normal(0.0, AR1["state_sd"])
    return x + rng.normal(0.0, AR1["obs_sd"], x.size)


def _ar1_data(T: int):
    if not 2 <= T <= AR1["max_T"]:
        raise ValueError(f"ar1: T must be in 2..{AR1['max_T']}")
    return _ar1_pool()[:T]


def _build_ar1(T: int) -> pm.Model:
    y = _ar1_data(T)
    with pm.Model() as model:
        sigma_state = pm.HalfNormal("sigma_state", sigma=_f(AR1["prior_sd"]))
        sigma_obs = pm.HalfNormal("sigma_obs", sigma=_f(AR1["prior_sd"]))
        lat = pm.AR("lat", rho=_f([AR1["rho"]]), sigma=sigma_state,
                    init_dist=pm.Normal.dist(_f(0.0), sigma_state / _f(AR1_INIT)), steps=T - 1)
        pm.Normal("y", mu=lat, sigma=sigma_obs, observed=y)
    return model


def _ar1_logjoint_fn(T: int):
    y = _ar1_data(T)
    rho = AR1["rho"]

    def logjoint(p):
        u, v, x = p["sigma_state_log__"][:, 0], p["sigma_obs_log__"][:, 0], p["lat"]
        s, o = np.exp(u), np.exp(v)
        return (_log_halfnormal(s, AR1["prior_sd"]) + u + _log_halfnormal(o, AR1["prior_sd"]) + v
                + _lnorm(x[:, 0], 0, s / AR1_INIT)
                + np.sum(_lnorm(x[:, 1:], rho * x[:, :-1], s[:, None]), 1)
                + np.sum(_lnorm(y, x, o[:, None]), 1))

    return logjoint


def _ar1_logf_fn(T: int):
    y = _ar1_data(T)

    def logf(u, v):
        s, o = np.exp(u), np.exp(v)
        return (_log_halfnormal(s, AR1["prior_sd"]) + u + _log_halfnormal(o, AR1["prior_sd"]) + v
                + ar1_kalman_log_likelihood(y, s**2, o**2, AR1["rho"]))

    return logf


def _exact_ar1(T: int):
    return _quad(_ar1_logf_fn(T), [(-90.0, 3.0), (-90.0, 3.0)], n=401)


# ================================================================================================ latent GP
GPL = {"max_n": 500, "ls": 1.0, "eta": 1.0, "sigma": 0.3, "sigma_sd": 1.0}
GPL_SIZES = (50, 100, 200, 500)


@cache
def _gp_pool():
    rng = np.random.default_rng(808)
    return rng.uniform(0.0, 10.0, GPL["max_n"]), rng.normal(0.0, GPL["sigma"], GPL["max_n"])


def _gp_data(n: int):
    if not 2 <= n <= GPL["max_n"]:
        raise ValueError(f"gp_latent: n must be in 2..{GPL['max_n']}")
    x, e = _gp_pool()
    order = np.argsort(x[:n])
    x = x[:n][order]
    return x, np.sin(1.3 * x) + 0.4 * np.cos(0.5 * x) + e[:n][order]


def _build_gp(n: int) -> pm.Model:
    x, y = _gp_data(n)
    with pm.Model() as model:
        gp = pm.gp.Latent(cov_func=_f(GPL["eta"]) ** 2 * pm.gp.cov.ExpQuad(1, ls=_f(GPL["ls"])))
        f = gp.prior("f", X=_f(x)[:, None])  # f = chol(K + 1e-6 I) @ f_rotated_, f_rotated_ ~ N(0, I)
        sigma = pm.HalfNormal("sigma", sigma=_f(GPL["sigma_sd"]))
        pm.Normal("y", mu=f, sigma=sigma, observed=y)
    return model


def _gp_kernel(x):
    """ExpQuad(ls) * eta^2 plus PyMC's jitter on the diagonal (what gp.prior factorises)."""
    K = GPL["eta"] ** 2 * np.exp(-0.5 * np.subtract.outer(x, x) ** 2 / GPL["ls"] ** 2)
    return K + JITTER_DEFAULT * np.eye(x.size)


def _gp_logjoint_fn(n: int):
    x, y = _gp_data(n)
    L = np.linalg.cholesky(_gp_kernel(x))

    def logjoint(p):
        v, u = p["f_rotated_"], p["sigma_log__"][:, 0]
        s = np.exp(u)
        f = v @ L.T
        return (np.sum(_lnorm(v, 0, 1), 1) + _log_halfnormal(s, GPL["sigma_sd"]) + u
                + np.sum(_lnorm(y, f, s[:, None]), 1))

    return logjoint


def _gp_logf_fn(n: int):
    """u = log sigma -> log prior + Jacobian + log MVN(y; 0, K + jitter I + sigma^2 I) (f_rotated_ integrated)."""
    x, y = _gp_data(n)
    lam, Q = np.linalg.eigh(_gp_kernel(x))
    r2 = (Q.T @ y) ** 2

    def logf(u):
        d = lam + np.exp(2 * np.asarray(u))[..., None]
        ll = -0.5 * (n * LOG_2PI + np.sum(np.log(d), -1) + np.sum(r2 / d, -1))
        return _log_halfnormal(np.exp(u), GPL["sigma_sd"]) + u + ll

    return logf


def _exact_gp(n: int):
    return _quad(_gp_logf_fn(n), [(-30.0, 4.0)], n=2001)


# ================================================================================================ correlated Gaussian
CG_SIZES = (10, 100, 400, 1000)


def _build_cg(d: int) -> pm.Model:
    from pmz.systems import correlated_gaussian

    return correlated_gaussian(dim=d).model


def _exact_cg(d: int):
    from pmz.systems import correlated_gaussian

    return float(correlated_gaussian(dim=d).log_z), 0.0


# ================================================================================================ the table
_GH_SE = "se = change from the rule with 2 fewer nodes per axis"
_Q_SE = "se = largest change on refining the grid 2x or widening the box"


def _how(name: str, n: int, nodes: int | None = None) -> str:
    if name in ("negbin_glm", "logistic_glm"):
        return (f"Gauss-Hermite product quadrature ({nodes}^5 nodes) in Laplace-whitened coordinates; {_GH_SE}")
    if name == "hierarchical_normal":
        return ("mu, z integrated analytically, 1-D trapezoid rule (2001 + 4001 points) over log tau; " + _Q_SE)
    if name == "ar1":
        return ("latent states integrated by the Kalman filter, 2-D trapezoid rule (401^2 and 801^2 points) over "
                "(log sigma_state, log sigma_obs); " + _Q_SE)
    if name == "gp_latent":
        return ("f_rotated_ integrated analytically: given sigma, y ~ MVN(0, K + 1e-6 I + sigma^2 I); 1-D trapezoid "
                "rule over log sigma; " + _Q_SE)
    if name == "correlated_gaussian":
        return "closed form (pmz.systems.correlated_gaussian(dim).log_z)"
    raise KeyError(name)


SCALED_SIZES = {"negbin_glm": NB_SIZES, "logistic_glm": LOGIT_SIZES, "hierarchical_normal": HIER_SIZES,
                "ar1": AR1_SIZES, "gp_latent": GPL_SIZES, "correlated_gaussian": CG_SIZES}
_DEFAULT_SIZE = {"negbin_glm": {2000: "negbin_glm"}, "logistic_glm": {2000: "logistic_glm"},
                 "hierarchical_normal": {40: "hierarchical_normal_40", 1000: "hierarchical_normal_1000"},
                 "ar1": {400: "ar1_400", 2000: "ar1_2000"}, "gp_latent": {100: "gp_latent_100"},
                 "correlated_gaussian": {100: "correlated_gaussian_100", 400: "correlated_gaussian_400",
                                         1000: "correlated_gaussian_1000"}}


def _nodes(name: str, n: int) -> int:
    return 10 if n <= 5000 else 8  # Gauss-Hermite nodes per axis of the 5-D GLMs


def _scaled_parts(name: str, n: int):
    """(description, build, exact, kind, dim) of a sized model."""
    if name == "negbin_glm":
        return (f"negative-binomial GLM, {n} points, intercept + 3 standardised predictors, alpha ~ Exponential(1)",
                lambda: _build_negbin(n), lambda: _exact_negbin(n, _nodes(name, n)), "glm", 5)
    if name == "logistic_glm":
        return (f"Bernoulli-logit regression, {n} points, intercept + 4 standardised predictors, N(0, 2.5^2)",
                lambda: _build_logistic(n), lambda: _exact_logistic(n, _nodes(name, n)), "glm", 5)
    if name == "hierarchical_normal":
        return (f"hierarchical normal, {n} groups x 5 points, sigma = 1 known, non-centred, tau ~ HalfNormal(1)",
                lambda: _build_hier(n), lambda: _exact_hier(n), "hierarchical", n + 2)
    if name == "ar1":
        return (f"AR(1) state space (pm.AR, rho 0.9), {n} latent states, both sds ~ HalfNormal(1)",
                lambda: _build_ar1(n), lambda: _exact_ar1(n), "time series", n + 2)
    if name == "gp_latent":
        return (f"latent GP regression (pm.gp.Latent, ExpQuad ls = eta = 1 fixed), {n} points in [0, 10], sigma ~ "
                "HalfNormal(1)"), lambda: _build_gp(n), lambda: _exact_gp(n), "gp", n + 1
    if name == "correlated_gaussian":
        return (f"pmz.systems.correlated_gaussian(dim={n}): N(0, 10^2) prior, MvNormal likelihood, cond 1e4",
                lambda: _build_cg(n), lambda: _exact_cg(n), "gaussian", n)
    raise KeyError(f"no scaled version of {name!r}; one of {sorted(SCALED_SIZES)}")


def _load_cache() -> dict:
    try:
        return json.loads(CACHE.read_text())
    except (OSError, ValueError):
        return {}


def _store_cache(key: str, entry: dict) -> None:
    cache = _load_cache()
    cache[key] = entry
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = CACHE.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n")
    tmp.replace(CACHE)


def _compute_scaled(name: str, n: int) -> dict:
    exact = _scaled_parts(name, n)[2]
    t0 = time.perf_counter()
    value, err = exact()
    how = _how(name, n, _nodes(name, n) if name in ("negbin_glm", "logistic_glm") else None)
    if name != "correlated_gaussian":
        err = max(err, 1e-10)  # as the stored literals: below 1e-10 is reported as 1e-10
    return {"log_z": value, "log_z_se": err, "how": how, "seconds": round(time.perf_counter() - t0, 1),
            "pymc": pm.__version__}


def scaled(name: str, n: int, compute: bool = True) -> BenchmarkModel:
    """The model ``name`` (negbin_glm, logistic_glm, hierarchical_normal, ar1, gp_latent, correlated_gaussian) at
    size ``n`` (observations, groups, states or dimension), with its truth: the literal of :data:`EVERYDAY` at a
    default size, else the cached value in ``results/everyday_truths.json``, else computed now (and cached)."""
    if name not in SCALED_SIZES:
        raise KeyError(f"no scaled version of {name!r}; one of {sorted(SCALED_SIZES)}")
    n = int(n)
    if n in _DEFAULT_SIZE[name]:
        return EVERYDAY[_DEFAULT_SIZE[name][n]]
    description, build, exact, kind, dim = _scaled_parts(name, n)
    key = f"{name}:{n}"
    entry = _load_cache().get(key)
    if entry is None:
        if not compute:
            raise LookupError(f"{key} not cached; run everyday_models.py --check")
        entry = _compute_scaled(name, n)
        _store_cache(key, entry)
    return _m(f"{name}_{n}", description, build, entry["log_z"], entry["how"], entry["log_z_se"], kind, dim, exact)


def _sized(name: str, n: int, log_z: float, se: float, se_note: str, label: str | None = None) -> BenchmarkModel:
    """An EVERYDAY entry of a sized model at its default size, with its stored truth."""
    description, build, exact, kind, dim = _scaled_parts(name, n)
    how = _how(name, n, _nodes(name, n) if name in ("negbin_glm", "logistic_glm") else None) + se_note
    return _m(label or f"{name}_{n}", description, build, log_z, how, se, kind, dim, exact)


_PYMC_CDF = ("; PyMC's normal logccdf (float32 sqrt 2) is what is integrated: with the exact normal tail probability "
             "log Z would be {} ({})")

EVERYDAY: dict[str, BenchmarkModel] = {m.name: m for m in [
    _m("censored_regression",
       "linear regression, 1500 points, upper-censored (pm.Censored) at U = 80% quantile (20% censored), "
       "a, b ~ N(0, 5^2), sigma ~ HalfNormal(2)",
       build_censored_regression, -2372.5386680331,
       "Gauss-Hermite product quadrature (24^3 nodes) in Laplace-whitened coordinates; " + _GH_SE + " (4e-10)"
       + _PYMC_CDF.format(-2372.5386673676, "+6.7e-7"), 4e-10, "censored", 3, exact_censored_regression),
    _m("truncated_regression",
       "linear regression, 2000 points truncated below at 0 (pm.Truncated), a, b ~ N(0, 5^2), "
       "sigma ~ HalfNormal(2)",
       build_truncated_regression, -2318.0755199054,
       "Gauss-Hermite product quadrature (24^3 nodes) in Laplace-whitened coordinates; " + _GH_SE + " (3e-10)"
       + _PYMC_CDF.format(-2318.0755166674, "+3.2e-6"), 4e-10, "truncated", 3, exact_truncated_regression),
    _sized("negbin_glm", 2000, -4296.3686302041, 2e-10, " (1.5e-10)", label="negbin_glm"),
    _m("zip_poisson",
       "zero-inflated Poisson regression, 1000 points, log mu = a + b1 x1 + b2 x2, a ~ N(0, 2^2), b ~ N(0, 1), "
       "psi ~ Beta(2, 2)",
       build_zip_poisson, -1619.5685832228, "Gauss-Hermite product quadrature (16^4 nodes) in Laplace-whitened "
       "coordinates; " + _GH_SE + " (below 1e-10)", 1e-10, "glm", 4, exact_zip_poisson),
    _sized("logistic_glm", 2000, -1152.5767410945, 1e-9, " (9e-10)", label="logistic_glm"),
    _sized("hierarchical_normal", 40, -311.4686830923, 1e-10, " (below 1e-10)"),
    _sized("hierarchical_normal", 1000, -7717.2458885063, 1e-10, " (below 1e-10)"),
    _sized("ar1", 400, -666.1269615521, 1e-10, " (below 1e-10)"),
    _sized("ar1", 2000, -3256.3371359219, 1e-10, " (below 1e-10)"),
    _sized("gp_latent", 100, -48.5210380699, 1e-10, " (below 1e-10)"),
    _sized("correlated_gaussian", 100, -371.9015373259, 0.0, ""),
    _sized("correlated_gaussian", 400, -1523.0887034452, 0.0, ""),
    _sized("correlated_gaussian", 1000, -3779.8497515958, 0.0, ""),
]}
EVERYDAY.update(WIDE)  # 7-30 coordinates: everyday_wide_models.py


# ================================================================================================ independent checks
_LOGJOINTS = {
    "censored_regression": lambda: _censored_logjoint,
    "truncated_regression": lambda: _truncated_logjoint,
    "negbin_glm": lambda: _negbin_logjoint_fn(2000),
    "zip_poisson": lambda: _zip_logjoint,
    "logistic_glm": lambda: _logistic_logjoint_fn(2000),
    "hierarchical_normal_40": lambda: _hier_logjoint_fn(40),
    "hierarchical_normal_1000": lambda: _hier_logjoint_fn(1000),
    "ar1_400": lambda: _ar1_logjoint_fn(400),
    "ar1_2000": lambda: _ar1_logjoint_fn(2000),
    "gp_latent_100": lambda: _gp_logjoint_fn(100),
    **WIDE_LOGJOINTS,
}


def _max_logp_diff(model, logjoint, n_points: int = 10, seed: int = 0, scale: float = 0.5) -> float:
    """Largest |numpy log joint - model.compile_logp()| (Jacobians included) at random unconstrained points."""
    logp = model.compile_logp()
    ip = model.initial_point()
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(n_points):
        point = {k: np.asarray(v, float) + rng.normal(0.0, scale, np.shape(v)) for k, v in ip.items()}
        mine = float(logjoint({k: np.reshape(v, (1, -1)) for k, v in point.items()})[0])
        worst = max(worst, abs(mine - float(logp(point))))
    return worst


def _latent_log_integral(model, fixed: dict) -> float:
    """log of the integral of exp(PyMC's logp) over every value variable not in ``fixed``.

    Exact when the log density is quadratic in those variables: the value and gradient (``compile_dlogp``) at 0
    and the Hessian from gradient differences with unit steps (exact for a quadratic).
    """
    ip = model.initial_point()
    free = [v for v in model.value_vars if v.name not in fixed]
    shapes = [np.shape(ip[v.name]) for v in free]
    sizes = [int(np.prod(s)) for s in shapes]
    logp, dlogp = model.compile_logp(), model.compile_dlogp(vars=[model.values_to_rvs[v] for v in free])
    k = sum(sizes)

    def point(x):
        out, start = {n: np.asarray(v, float) for n, v in fixed.items()}, 0
        for v, shape, size in zip(free, shapes, sizes):
            out[v.name] = x[start : start + size].reshape(shape)
            start += size
        return out

    x = np.zeros(k)
    f0, g0 = float(logp(point(x))), np.asarray(dlogp(point(x)), float)
    hess = np.empty((k, k))
    for i in range(k):
        x[i] = 1.0
        hess[:, i] = np.asarray(dlogp(point(x)), float) - g0
        x[i] = 0.0
    hess = 0.5 * (hess + hess.T)
    sign, logdet = np.linalg.slogdet(-hess)
    if sign <= 0:
        raise FloatingPointError("log density not concave in the latents")
    return float(f0 - 0.5 * g0 @ np.linalg.solve(hess, g0) + 0.5 * k * LOG_2PI - 0.5 * logdet)


def _latent_check(name: str):
    """(what, max |integrand - PyMC density integrated over the Gaussian latents|) for the high-dimensional models."""
    model = EVERYDAY[name].build()
    if name.startswith("hierarchical_normal"):
        logf = _hier_logf_fn(int(name.rsplit("_", 1)[1]))
        pts = [(np.log(0.3),), (np.log(0.7),), (np.log(1.5),)]
        hyper = ["tau_log__"]
    elif name.startswith("ar1"):
        logf = _ar1_logf_fn(int(name.rsplit("_", 1)[1]))
        pts = [(np.log(0.5), np.log(1.0)), (np.log(0.2), np.log(1.2)), (np.log(1.0), np.log(0.5))]
        hyper = ["sigma_state_log__", "sigma_obs_log__"]
    elif name.startswith("gp_latent"):
        logf = _gp_logf_fn(int(name.rsplit("_", 1)[1]))
        pts = [(np.log(0.1),), (np.log(0.3),), (np.log(1.0),)]
        hyper = ["sigma_log__"]
    elif name.startswith("correlated_gaussian"):
        return "log Z = PyMC density integrated over x", abs(_latent_log_integral(model, {}) - EVERYDAY[name].log_z)
    else:
        return None
    diff = max(abs(float(logf(*[np.float64(c) for c in p])) - _latent_log_integral(model, dict(zip(hyper, p))))
               for p in pts)
    return f"integrand = PyMC density integrated over the latents at {len(pts)} points", diff


def _importance_check(model, n_draws: int = 200_000, df: float = 5.0, seed: int = 1, block: int = 5000):
    """log Z by importance sampling of PyMC's vectorised density from a t(df) at its mode (scale = inverse Hessian).

    Returns (log Z, se, ESS fraction); se by the delta method.
    """
    fn, _, _, sizes = _flat_logp(model)
    d = sum(sizes)

    def f(x):
        return -float(fn(np.atleast_2d(x))[0])

    res = optimize.minimize(f, np.zeros(d), method="BFGS", options={"gtol": 1e-8})
    res = optimize.minimize(f, res.x, method="Nelder-Mead",
                            options={"xatol": 1e-9, "fatol": 1e-11, "maxiter": 20000})
    cov = np.linalg.inv(_hessian(f, res.x))
    chol = np.linalg.cholesky(0.5 * (cov + cov.T))
    rng = np.random.default_rng(seed)
    log_norm = (special.gammaln((df + d) / 2) - special.gammaln(df / 2) - 0.5 * d * np.log(df * np.pi)
                - np.sum(np.log(np.diag(chol))))
    logw = []
    for start in range(0, n_draws, block):
        m = min(block, n_draws - start)
        z = rng.standard_normal((m, d))
        g = rng.chisquare(df, size=m) / df
        x = res.x + (z @ chol.T) / np.sqrt(g)[:, None]
        q = np.sum(z**2, 1) / g
        logw.append(fn(x) - (log_norm - 0.5 * (df + d) * np.log1p(q / df)))
    logw = np.concatenate(logw)
    log_z = float(special.logsumexp(logw) - np.log(logw.size))
    w = np.exp(logw - logw.max())
    return log_z, float(np.std(w) / (np.sqrt(w.size) * np.mean(w))), float(np.sum(w) ** 2 / np.sum(w**2) / w.size)


def verify(names, seed: int = 0, log=print) -> None:
    """(a) numpy log joint = PyMC's logp; (b) integrand = PyMC's density over the latents; (c) importance sampling."""
    import inspect

    jitter = inspect.signature(pm.gp.Latent.prior).parameters["jitter"].default
    log(f"pm.gp.Latent.prior default jitter = {jitter} (truths use {JITTER_DEFAULT})")
    log("| model | check | result | seconds |\n|---|---|---:|---:|")
    for n in names:
        m = EVERYDAY[n]
        if n in _LOGJOINTS:
            t0 = time.perf_counter()
            diff = _max_logp_diff(m.build(), _LOGJOINTS[n]())
            log(f"| {n} | numpy log joint vs model.compile_logp() at 10 random points: max abs diff | {diff:.1e} | "
                f"{time.perf_counter() - t0:.1f} |", flush=True)
        t0 = time.perf_counter()
        lat = _latent_check(n)
        if lat is not None:
            log(f"| {n} | {lat[0]}: max abs diff | {lat[1]:.1e} | {time.perf_counter() - t0:.1f} |", flush=True)
        if m.dim <= 5:
            t0 = time.perf_counter()
            lz, se, ess = _importance_check(m.build(), seed=zlib.crc32(n.encode()) + seed)
            log(f"| {n} | importance sampling (t(5) at PyMC's mode, 200000 draws) {lz:.4f} +- {se:.4f}, ESS "
                f"{ess:.2f}: z = (IS - truth) / se | {(lz - m.log_z) / se:+.2f} | {time.perf_counter() - t0:.1f} |",
                flush=True)


# ================================================================================================ main
def _table(models) -> str:
    rows = [f"| model | dim | kind | log Z (PyMC {pm.__version__}) | se | how |", "|---|---:|---|---:|---:|---|"]
    for m in models:
        rows.append(f"| {m.name} | {m.dim} | {m.kind} | {m.log_z:.6f} | {m.log_z_se:.1e} | {m.log_z_how} |")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="comma-separated subset: EVERYDAY names and/or scaled base names")
    parser.add_argument("--check", action="store_true",
                        help="recompute every truth (default sizes: compare with the literals; scaled sizes: cache)")
    parser.add_argument("--verify", action="store_true", help="independent checks against PyMC's own density")
    parser.add_argument("--seed", type=int, default=0, help="with --verify: offset of the importance-sampling seeds")
    args = parser.parse_args(argv)
    sel = args.models.split(",") if args.models else list(EVERYDAY) + list(SCALED_SIZES)
    names = [n for n in EVERYDAY if n in sel]
    bases = [b for b in SCALED_SIZES if b in sel or any(n.startswith(b) for n in names)]
    print(_table([EVERYDAY[n] for n in names]))
    cached = [scaled(b, s, compute=False) for b in bases for s in SCALED_SIZES[b]
              if s not in _DEFAULT_SIZE[b] and f"{b}:{s}" in _load_cache()]
    if cached and not args.check:
        print(f"\nscaled sizes (cached in {CACHE.name}):\n" + _table(cached))
    if args.check:
        print("\n| model | stored | recomputed | difference | error estimate | seconds |\n"
              "|---|---:|---:|---:|---:|---:|")
        worst = 0.0
        for n in names:
            m = EVERYDAY[n]
            t0 = time.perf_counter()
            value, err = m.exact()
            worst = max(worst, abs(value - m.log_z))
            print(f"| {n} | {m.log_z:.10f} | {value:.10f} | {value - m.log_z:+.1e} | {err:.1e} | "
                  f"{time.perf_counter() - t0:.1f} |", flush=True)
        print(f"\nlargest |stored - recomputed| at the default sizes: {worst:.1e}\n")
        print("| scaled model | log Z | error estimate | seconds | how |\n|---|---:|---:|---:|---|")
        for b in bases:
            for s in SCALED_SIZES[b]:
                if s in _DEFAULT_SIZE[b]:
                    continue
                entry = _compute_scaled(b, s)
                _store_cache(f"{b}:{s}", entry)
                print(f"| {b}_{s} | {entry['log_z']:.10f} | {entry['log_z_se']:.1e} | {entry['seconds']} | "
                      f"{entry['how']} |", flush=True)
    if args.verify:
        print()
        verify(names, seed=args.seed)


if __name__ == "__main__":
    main()
