"""Everyday models of 7-30 coordinates with a trusted log Z, for the everyday benchmark (``everyday_models.EVERYDAY``
takes them in).

Written as a PyMC user writes them; data simulated with fixed ``numpy.random.default_rng`` seeds. Every truth
integrates PyMC's own log density over the unconstrained coordinates of its value variables (Jacobians included):

* ``logistic_glm_7`` (7-D): Bernoulli-logit, intercept + 6 correlated standardised predictors, all coefficients
  N(0, 2.5^2), 2000 points. Gauss-Hermite product quadrature (8^7 nodes) in Laplace-whitened coordinates of PyMC's
  vectorised density (``auto_models._flat_logp``); se = change from the rule with 6 nodes per axis.
* ``poisson_glmm_20`` (24-D): Poisson log-link, intercept ~ N(0, 2^2) + 2 predictors with N(0, 1) slopes +
  random intercepts of 20 groups (20 points each), non-centred (``z ~ N(0, 1)``, ``u = sigma z``),
  sigma ~ HalfNormal(1).
* ``logistic_glmm_25`` (29-D): Bernoulli-logit, intercept + 2 predictors, N(0, 2.5^2), random intercepts of 25
  groups (24 points each), centred (``u ~ N(0, sigma)``), sigma ~ HalfNormal(1).

  For both mixed models the group effects are independent given (intercept, slopes, sigma): each group's integral
  is an adaptive Gauss-Hermite rule of 32 nodes about its conditional mode (Newton's method), the same integral in
  the centred and non-centred writings (``z = u / sigma`` with its Jacobian), and the outer 4-D integral a
  Gauss-Hermite rule of 12^4 nodes in Laplace-whitened coordinates; se = change from 10 nodes per axis outside and
  24 inside. ``--verify`` checks the numpy log joint against ``model.compile_logp()``.
* ``ordered_mixture_3`` (8-D): ``pm.NormalMixture`` of 3 components on 300 points (true means -4, 0, 4, sd 1,
  equal weights), means ~ N(0, 5^2) with ``transform=ordered``, sds ~ HalfNormal(2), weights ~ Dirichlet(1, 1, 1).
  The ordering leaves one mode; Gauss-Hermite (8^8 nodes) of PyMC's vectorised density, se = change from 6 nodes.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from auto_models import LOG_2PI, _f, _flat_logp, _gauss_hermite, _m  # noqa: E402

__all__ = ["WIDE", "WIDE_LOGJOINTS", "SIZED"]

_GH_SE = "se = change from the rule with 2 fewer nodes per axis"


def _lnorm(x, mu, sd):
    return -0.5 * LOG_2PI - np.log(sd) - 0.5 * ((x - mu) / sd) ** 2


def _pymc_gh(build, nodes):
    """Gauss-Hermite of PyMC's own vectorised log density (``auto_models._flat_logp``) over its flat coordinates."""
    model = build()
    fn, _, _, sizes = _flat_logp(model)
    return _gauss_hermite(lambda P: fn(np.ascontiguousarray(P)), sum(sizes), nodes, chunk=20_000)


# ================================================================================================ logistic, 7 coefs
LOGIT7 = {"n": 2000, "intercept": -0.4, "beta": [0.8, -0.5, 0.3, 0.0, 1.2, -0.2], "sd": 2.5}


@cache
def _logistic7_data(n: int = LOGIT7["n"]):
    rng = np.random.default_rng(707)
    k = len(LOGIT7["beta"])
    corr = 0.3 ** np.abs(np.subtract.outer(np.arange(k), np.arange(k)))
    X = rng.normal(size=(n, k)) @ np.linalg.cholesky(corr).T
    X = (X - X.mean(0)) / X.std(0)
    p = special.expit(LOGIT7["intercept"] + X @ np.array(LOGIT7["beta"]))
    return X, (rng.random(n) < p).astype(int)


def build_logistic7(n: int = LOGIT7["n"]) -> pm.Model:
    """``n`` rows (the benchmark's truth is at the default)."""
    X, y = _logistic7_data(n)
    with pm.Model() as model:
        intercept = pm.Normal("intercept", mu=_f(0.0), sigma=_f(LOGIT7["sd"]))
        beta = pm.Normal("beta", mu=_f(0.0), sigma=_f(LOGIT7["sd"]), shape=X.shape[1])
        pm.Bernoulli("y", logit_p=intercept + pt.dot(_f(X), beta), observed=y)
    return model


def exact_logistic7(nodes: int = 8):
    return _pymc_gh(build_logistic7, nodes)


# ================================================================================================ mixed models
GLMM = {
    "poisson": {"groups": 20, "per": 20, "intercept": 0.7, "beta": [0.3, -0.2], "sigma": 0.5, "seed": 808,
                "intercept_sd": 2.0, "beta_sd": 1.0},
    "logistic": {"groups": 25, "per": 24, "intercept": -0.3, "beta": [0.6, -0.4], "sigma": 0.8, "seed": 909,
                 "intercept_sd": 2.5, "beta_sd": 2.5},
}


@cache
def _glmm_data(kind: str, per: int | None = None):
    c = GLMM[kind]
    rng = np.random.default_rng(c["seed"])
    per = per or c["per"]
    n = c["groups"] * per
    group = np.repeat(np.arange(c["groups"]), per)
    X = rng.normal(size=(n, 2))
    eta = c["intercept"] + X @ np.array(c["beta"]) + c["sigma"] * rng.normal(size=c["groups"])[group]
    y = rng.poisson(np.exp(eta)) if kind == "poisson" else (rng.random(n) < special.expit(eta)).astype(int)
    return X, y, group


def _build_glmm(kind: str, per: int | None) -> pm.Model:
    """The Poisson GLMM with non-centred effects, or the logistic one with centred effects; ``per`` points per group
    (the benchmark's truth is at the default)."""
    c = GLMM[kind]
    X, y, group = _glmm_data(kind, per)
    with pm.Model() as model:
        intercept = pm.Normal("intercept", mu=_f(0.0), sigma=_f(c["intercept_sd"]))
        beta = pm.Normal("beta", mu=_f(0.0), sigma=_f(c["beta_sd"]), shape=2)
        sigma = pm.HalfNormal("sigma_group", sigma=_f(1.0))
        eta = intercept + pt.dot(_f(X), beta)
        if kind == "poisson":
            z = pm.Normal("z", mu=_f(0.0), sigma=_f(1.0), shape=c["groups"])
            pm.Poisson("y", mu=pt.exp(eta + (sigma * z)[group]), observed=y)
        else:
            u = pm.Normal("u", mu=_f(0.0), sigma=sigma, shape=c["groups"])
            pm.Bernoulli("y", logit_p=eta + u[group], observed=y)
    return model


def build_poisson_glmm(per: int | None = None) -> pm.Model:
    return _build_glmm("poisson", per)


def build_logistic_glmm(per: int | None = None) -> pm.Model:
    return _build_glmm("logistic", per)


def _log_lik(kind, eta, y):
    """log p(y | eta) elementwise (PyMC's Poisson and Bernoulli-logit)."""
    if kind == "poisson":
        return y * eta - np.exp(eta) - special.gammaln(y + 1.0)
    return y * eta - np.logaddexp(0.0, eta)


def _glmm_hyper_logf(kind: str, inner: int = 32):
    """(intercept, beta_1, beta_2, log sigma) (m, 4) -> log prior + Jacobian + sum over groups of
    log int p(y_g | eta + u) N(u; 0, sigma) du, each group by an adaptive Gauss-Hermite rule of ``inner`` nodes."""
    c = GLMM[kind]
    X, y, group = _glmm_data(kind)
    G, per = c["groups"], c["per"]
    Xg, yg = X.reshape(G, per, 2), y.reshape(G, per).astype(float)
    nodes, weights = np.polynomial.hermite_e.hermegauss(inner)
    log_w = np.log(weights)

    def logf(P):
        P = np.atleast_2d(P)
        a, b, s = P[:, 0], P[:, 1:3], np.exp(P[:, 3])
        eta = a[:, None, None] + np.einsum("gpk,mk->mgp", Xg, b)  # (m, G, per)
        u = np.zeros(eta.shape[:2])
        for _ in range(60):  # Newton on each group's effect (concave: the likelihood is log-concave in eta)
            mean = np.exp(eta + u[..., None]) if kind == "poisson" else special.expit(eta + u[..., None])
            var = mean if kind == "poisson" else mean * (1.0 - mean)
            grad = (yg - mean).sum(-1) - u / s[:, None] ** 2
            hess = var.sum(-1) + 1.0 / s[:, None] ** 2
            step = grad / hess
            u = u + step
            if np.max(np.abs(step)) < 1e-12:
                break
        mean = np.exp(eta + u[..., None]) if kind == "poisson" else special.expit(eta + u[..., None])
        var = mean if kind == "poisson" else mean * (1.0 - mean)
        sd = 1.0 / np.sqrt(var.sum(-1) + 1.0 / s[:, None] ** 2)  # (m, G)
        points = u[..., None] + sd[..., None] * nodes  # (m, G, inner)
        lik = _log_lik(kind, eta[:, :, None, :] + points[..., None], yg[None, :, None, :]).sum(-1)
        prior = _lnorm(points, 0.0, s[:, None, None])
        groups = special.logsumexp(lik + prior + 0.5 * nodes**2 + log_w, axis=-1) + np.log(sd)
        hyper = (_lnorm(a, 0.0, c["intercept_sd"]) + _lnorm(b, 0.0, c["beta_sd"]).sum(1)
                 + np.log(2.0) + _lnorm(s, 0.0, 1.0) + P[:, 3])  # HalfNormal(1) and its log Jacobian
        return hyper + groups.sum(1)

    return logf


def exact_glmm(kind: str, nodes: int = 12, inner: int = 32):
    """The nested rule; the error estimate is the larger change from ``nodes - 2`` outside or ``inner - 8`` inside."""
    value, outer_err = _gauss_hermite(_glmm_hyper_logf(kind, inner), 4, nodes, chunk=2000)
    coarse, _ = _gauss_hermite(_glmm_hyper_logf(kind, inner - 8), 4, nodes, chunk=2000)
    return value, max(outer_err, abs(value - coarse))


def _glmm_logjoint_fn(kind: str):
    """PyMC's log density of the mixed model in numpy (for ``--verify``)."""
    c = GLMM[kind]
    X, y, group = _glmm_data(kind)
    effects = "z" if kind == "poisson" else "u"

    def logjoint(p):
        a, b, ls, e = p["intercept"][:, 0], p["beta"], p["sigma_group_log__"][:, 0], p[effects]
        s = np.exp(ls)
        u = s[:, None] * e if kind == "poisson" else e
        eta = a[:, None] + b @ X.T + u[:, group]
        prior_e = _lnorm(e, 0.0, 1.0 if kind == "poisson" else s[:, None]).sum(1)
        return (_lnorm(a, 0.0, c["intercept_sd"]) + _lnorm(b, 0.0, c["beta_sd"]).sum(1) + np.log(2.0)
                + _lnorm(s, 0.0, 1.0) + ls + prior_e + _log_lik(kind, eta, y).sum(1))

    return logjoint


# ================================================================================================ ordered mixture
MIX = {"n": 300, "means": [-4.0, 0.0, 4.0], "sd": 1.0, "seed": 1003}


@cache
def _mixture_data(n: int = MIX["n"]):
    rng = np.random.default_rng(MIX["seed"])
    K = len(MIX["means"])
    c = rng.choice(K, size=n)
    return rng.normal(np.array(MIX["means"])[c], MIX["sd"])


def build_ordered_mixture(n: int = MIX["n"]) -> pm.Model:
    """``n`` points (the benchmark's truth is at the default)."""
    y = _mixture_data(n)
    K = len(MIX["means"])
    with pm.Model() as model:
        mu = pm.Normal("mu", mu=_f(0.0), sigma=_f(5.0), shape=K, transform=pm.distributions.transforms.ordered,
                       initval=np.linspace(-1.0, 1.0, K))
        sd = pm.HalfNormal("sigma", sigma=_f(2.0), shape=K)
        w = pm.Dirichlet("w", a=np.ones(K))
        pm.NormalMixture("y", w=w, mu=mu, sigma=sd, observed=y)
    return model


def exact_ordered_mixture(nodes: int = 8):
    return _pymc_gh(build_ordered_mixture, nodes)


# ================================================================================================ the entries
WIDE = {m.name: m for m in [
    _m("logistic_glm_7", "Bernoulli-logit regression, 2000 points, intercept + 6 correlated standardised "
       "predictors, N(0, 2.5^2)", build_logistic7, -1064.4359340863,
       "Gauss-Hermite product quadrature (8^7 nodes) of PyMC's density in Laplace-whitened coordinates; " + _GH_SE
       + " (2.1e-7)", 2.1e-7, "glm", 7, exact_logistic7),
    _m("poisson_glmm_20", "Poisson GLMM, 20 groups x 20 points, intercept + 2 slopes, non-centred random "
       "intercepts, sigma ~ HalfNormal(1)", build_poisson_glmm, -715.2230553503,
       "group effects by adaptive Gauss-Hermite (32 nodes) each, 12^4 Gauss-Hermite outside; se = change from "
       "10 nodes outside or 24 inside (1.1e-5)", 1.1e-5, "glmm", 24, lambda: exact_glmm("poisson")),
    _m("logistic_glmm_25", "logistic GLMM, 25 groups x 24 points, intercept + 2 slopes, centred random "
       "intercepts, sigma ~ HalfNormal(1)", build_logistic_glmm, -376.5961997250,
       "group effects by adaptive Gauss-Hermite (32 nodes) each, 12^4 Gauss-Hermite outside; se = change from "
       "10 nodes outside or 24 inside (5.9e-6)", 5.9e-6, "glmm", 29, lambda: exact_glmm("logistic")),
    _m("ordered_mixture_3", "normal mixture, 3 components (ordered means, own sds, Dirichlet weights), 300 points",
       build_ordered_mixture, -751.7978402557,
       "Gauss-Hermite product quadrature (8^8 nodes) of PyMC's density in Laplace-whitened coordinates; " + _GH_SE
       + " (9.5e-4)", 9.5e-4, "mixture", 8, exact_ordered_mixture),
]}

SIZED = {"logistic_glm_7": (build_logistic7, LOGIT7["n"]),
         "poisson_glmm_20": (build_poisson_glmm, GLMM["poisson"]["per"]),
         "logistic_glmm_25": (build_logistic_glmm, GLMM["logistic"]["per"]),
         "ordered_mixture_3": (build_ordered_mixture, MIX["n"])}  # builder of another size, and the default size

WIDE_LOGJOINTS = {"poisson_glmm_20": lambda: _glmm_logjoint_fn("poisson"),
                  "logistic_glmm_25": lambda: _glmm_logjoint_fn("logistic")}


if __name__ == "__main__":
    import time

    for name in sys.argv[1:] or list(WIDE):
        t0 = time.perf_counter()
        value, err = WIDE[name].exact()
        print(f"{name}: {value:.10f} +- {err:.1e} ({time.perf_counter() - t0:.1f} s)", flush=True)
