"""The hazard matrix's columns for the Laplace route's failure modes (:mod:`pmz.auto.laplace_route`): random-intercept
models it must refuse or hand over, each with its exact log Z. The default's row only (``methods=("auto",)``).

* ``laplace_student_t``: 40 groups, ``mu ~ N(0, 1)``, ``sigma ~ HalfNormal(1)``, ``x = mu + sigma z`` with
  ``z ~ N(0, 1)`` (non-centred), 3 or 4 observations a group ``y ~ StudentT(3, x_g, 0.5)``: a likelihood not
  log-concave in the latents (the concavity proof fails on the Student-t: the route must refuse);
* ``laplace_funnel``: 60 groups, ``mu ~ N(1, 1)``, ``sigma ~ HalfNormal(1)``, ``x ~ N(mu, sigma)`` (centred), one
  count a group ``y ~ Poisson(e^x_g)``, data from ``sigma = 0.1``: the posterior of ``sigma`` piles against 0 (a
  funnel in ``(sigma, x)``; over the route's hyperparameter ``log sigma`` a marginal with an exponential left tail);
* ``laplace_heavy_latents``: 40 groups, ``mu ~ N(1, 1)``, ``sigma ~ HalfNormal(1)``, ``x ~ StudentT(2, mu, sigma)``,
  four counts a group ``y ~ Poisson(e^x_g)``: heavy-tailed random effects (the proof fails on the Student-t prior).

Exact log Z, for each: given ``(mu, sigma)`` the groups are independent, so

    log p(y) = log int int N(mu; m0, 1) 2 N(sigma; 0, 1) sigma prod_g I_g(mu, sigma) dmu d(log sigma),
    I_g(mu, sigma) = int k((x - mu) / sigma) / sigma L_g(x) dx,

with ``k`` the standard normal or ``t_2`` density and ``L_g(x)`` the likelihood of group ``g``'s observations at
intercept ``x``. The outer integral is a trapezoid rule in ``(mu, log sigma)`` over the box where its integrand is
within :data:`DROP` nats of its peak (found on a coarse grid, whose edges must lie :data:`EDGE_DROP` nats below it:
else an error; towards ``sigma -> 0`` the integrand falls at least like ``sigma``, so the mass cut there is below
``e^-12``, and far below for the columns' data). The inner integrals are, for the Student-t columns, a trapezoid
rule on one fixed uniform grid in ``x`` shared by every group and every ``(mu, sigma)`` (``L_g`` is computed once
on it; the rule is a matrix product; ``sigma`` is kept to at least two of its steps), with the prior's mass left of
the grid added in closed form for the counts; for the funnel, whose inner integrands are log-concave and as narrow
as ``sigma`` near 0, the adaptive Gauss-Hermite rule of :mod:`pmz.systems.hierarchical_glm`. Checked
(``refine=True``) by halving the ``x`` spacing and both outer spacings (and doubling the Gauss-Hermite nodes): the
changes are 4e-12, 9e-12 and 6e-9 for the three columns (0.3-0.5 s each to compute), and
tests/systems/test_latent_hazards.py checks each against a brute-force grid in ``(mu, log sigma, z_1, z_2)`` on two
groups.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pymc as pm
from scipy import stats
from scipy.special import gammaln, logsumexp

from .hierarchical_glm import N_HERMITE, _log_outer

__all__ = ["latent_columns", "student_t_data", "funnel_data", "heavy_latent_data", "student_t_log_evidence",
           "funnel_log_evidence", "heavy_latent_log_evidence", "NU_LIKELIHOOD", "SCALE_LIKELIHOOD", "NU_PRIOR"]

NU_LIKELIHOOD, SCALE_LIKELIHOOD = 3.0, 0.5  # laplace_student_t: y ~ StudentT(3, x_g, 0.5)
NU_PRIOR = 2.0  # laplace_heavy_latents: x ~ StudentT(2, mu, sigma)
MU_PRIOR_T, MU_PRIOR_COUNTS = 0.0, 1.0  # mu ~ N(MU_PRIOR, 1)
MU_RANGE, LOG_SIGMA_RANGE = (-12.0, 12.0), (-6.0, 3.0)  # where the outer box is searched for ...
DROP = 40.0  # ... the outer box: where the integrand is within DROP nats of its peak ...
EDGE_DROP = 12.0  # ... and at least this far below it on the search grid's edges
STEPS_PER_SIGMA = 2.0  # on the shared inner grid, sigma spans at least this many steps (_log_sigma_range)
OUTER_POINTS = 81  # trapezoid points along each outer axis
X_STEP = 0.02  # the inner grid's spacing, at most (narrower for a group of large counts)
X_MARGIN = 20.0  # the inner grid reaches this far beyond the data (t likelihood) ...
X_FLOOR = -20.0  # ... or down to this log rate (counts; the prior's mass further left is added in closed form)
FUNNEL_FLOOR = -25.0  # the funnel's box: log sigma down to -25 (see funnel_log_evidence) ...
FUNNEL_POINTS = 161  # ... 27 units of log sigma wide: twice the points
LOG_2PI = float(np.log(2.0 * np.pi))


# --- data -------------------------------------------------------------------------------------------------------

def student_t_data(n_groups: int = 40, seed: int = 11, mu_true: float = 0.5, sigma_true: float = 1.0):
    """``(y, group)``: 3 or 4 observations a group (``3 + g % 2``), ``y ~ StudentT(3, x_g, 0.5)``,
    ``x_g ~ N(mu_true, sigma_true)``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(mu_true, sigma_true, n_groups)
    group = np.repeat(np.arange(n_groups), 3 + np.arange(n_groups) % 2)
    return x[group] + SCALE_LIKELIHOOD * rng.standard_t(NU_LIKELIHOOD, group.size), group


def funnel_data(n_groups: int = 60, seed: int = 12, mu_true: float = 1.0, sigma_true: float = 0.1):
    """Counts ``(G, 1)``: ``y_g ~ Poisson(e^x_g)``, ``x_g ~ N(mu_true, sigma_true)``."""
    rng = np.random.default_rng(seed)
    return rng.poisson(np.exp(rng.normal(mu_true, sigma_true, n_groups)))[:, None]


def heavy_latent_data(n_groups: int = 40, n_per_group: int = 4, seed: int = 18, mu_true: float = 1.0,
                      sigma_true: float = 0.5):
    """Counts ``(G, n)``: ``y_gi ~ Poisson(e^x_g)``, ``x_g = mu_true + sigma_true t_2``."""
    rng = np.random.default_rng(seed)
    x = mu_true + sigma_true * rng.standard_t(NU_PRIOR, n_groups)
    return rng.poisson(np.exp(x)[:, None], size=(n_groups, n_per_group))


# --- models -----------------------------------------------------------------------------------------------------

def student_t_model(y, group) -> pm.Model:
    """The non-centred random intercept with a Student-t likelihood (module docstring)."""
    n_groups = int(group.max()) + 1
    with pm.Model() as model:
        mu = pm.Normal("mu", MU_PRIOR_T, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        z = pm.Normal("z", 0.0, 1.0, shape=n_groups)
        x = mu + sigma * z
        pm.StudentT("y", nu=NU_LIKELIHOOD, mu=x[group], sigma=SCALE_LIKELIHOOD, observed=y)
    return model


def count_model(counts, heavy: bool) -> pm.Model:
    """The centred random-intercept Poisson model, with ``x ~ N(mu, sigma)`` or (``heavy``) ``StudentT(2, mu,
    sigma)``."""
    n_groups, n_per_group = counts.shape
    group = np.repeat(np.arange(n_groups), n_per_group)
    with pm.Model() as model:
        mu = pm.Normal("mu", MU_PRIOR_COUNTS, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        if heavy:
            x = pm.StudentT("x", nu=NU_PRIOR, mu=mu, sigma=sigma, shape=n_groups)
        else:
            x = pm.Normal("x", mu, sigma, shape=n_groups)
        pm.Poisson("y", mu=pm.math.exp(x[group]), observed=counts.ravel())
    return model


# --- the outer integral -----------------------------------------------------------------------------------------

def _log_hyper_prior(mu, log_sigma, mu_prior):
    """``log N(mu; mu_prior, 1) + log 2 N(sigma; 0, 1) + log sigma`` (the Jacobian of ``log sigma``)."""
    sigma = np.exp(log_sigma)
    return -0.5 * (mu - mu_prior) ** 2 - LOG_2PI + np.log(2.0) - 0.5 * sigma**2 + log_sigma


def _log_trapezoid_2d(outer, mu, log_sigma) -> float:
    """``log`` of the trapezoid rule for ``int int exp(outer) dmu d(log sigma)`` on the grid ``mu x log_sigma``."""
    values = _on_grid(outer, mu, log_sigma)
    log_w = (np.log(np.diff(mu[:2])) + np.log(np.diff(log_sigma[:2])))[0]
    values[[0, -1], :] -= np.log(2.0)
    values[:, [0, -1]] -= np.log(2.0)
    return float(logsumexp(values) + log_w)


def _on_grid(outer, mu, log_sigma):
    M, S = np.meshgrid(mu, log_sigma, indexing="ij")
    return outer(M.ravel(), S.ravel()).reshape(M.shape)


def _outer_box(outer, mu_range, log_sigma_range, n_coarse=(57, 45)):
    """The box in ``(mu, log sigma)`` where ``outer`` is within :data:`DROP` nats of its peak on a coarse grid (widened
    by a coarse step, within the grid); an error unless ``outer`` is at least :data:`EDGE_DROP` nats below its peak
    on the grid's edges (the mass cut off there is then below ``e^-EDGE_DROP`` where the integrand falls at least
    like ``sigma`` beyond, as it does towards ``sigma -> 0``)."""
    mu, log_sigma = np.linspace(*mu_range, n_coarse[0]), np.linspace(*log_sigma_range, n_coarse[1])
    values = _on_grid(outer, mu, log_sigma)
    values -= values.max()
    edges = np.concatenate([values[0], values[-1], values[:, 0], values[:, -1]])
    if edges.max() > -EDGE_DROP:
        raise ValueError("pmz: the outer integrand is not negligible at the edge of its search grid")
    inside = values > -DROP
    rows, cols = np.flatnonzero(inside.any(axis=1)), np.flatnonzero(inside.any(axis=0))
    rows = max(rows[0] - 1, 0), min(rows[-1] + 1, len(mu) - 1)
    cols = max(cols[0] - 1, 0), min(cols[-1] + 1, len(log_sigma) - 1)
    return (mu[rows[0]], mu[rows[1]]), (log_sigma[cols[0]], log_sigma[cols[1]])


def _log_evidence(outer, mu_range, log_sigma_range, points=OUTER_POINTS) -> float:
    """The trapezoid rule with ``points`` a side on the box of :func:`_outer_box`."""
    box_mu, box_ls = _outer_box(outer, mu_range, log_sigma_range)
    return _log_trapezoid_2d(outer, np.linspace(*box_mu, points), np.linspace(*box_ls, points))


# --- inner integrals on a fixed grid ----------------------------------------------------------------------------

def _log_kernel(t, heavy: bool):
    """``log k(t)``: the standard normal density, or (``heavy``) the ``t_2`` density, exactly ``(2 + t^2)^{-3/2}``."""
    if heavy:
        return -1.5 * np.log(2.0 + t**2)
    return -0.5 * t**2 - 0.5 * LOG_2PI


def _t2_cdf(t):
    """The ``t_2`` distribution function, ``1/2 + t / (2 sqrt(2 + t^2))``."""
    return 0.5 + t / (2.0 * np.sqrt(2.0 + t**2))


def _inner_on_grid(log_lik, x, heavy: bool, log_left_tail=None) -> Callable:
    """``(mu, sigma) -> sum_g log I_g(mu, sigma)``, each ``I_g`` the trapezoid rule on the uniform grid ``x`` of
    ``k((x - mu) / sigma) / sigma L_g(x)`` (``log_lik (n_x, G)``: ``log L_g`` on the grid), plus, where
    ``log_left_tail`` is given (``log L_g`` left of the grid, a constant), ``L_g P(x < x_0 | mu, sigma)``."""
    top = log_lik.max(axis=0)
    weights = np.full(len(x), x[1] - x[0])
    weights[[0, -1]] /= 2.0
    scaled = np.exp(log_lik - top) * weights[:, None]
    chunk = max(1, (1 << 23) // len(x))

    def log_inner(mu, sigma):
        out = np.empty(mu.shape)
        for i in range(0, mu.size, chunk):
            m, s = mu[i:i + chunk, None], sigma[i:i + chunk, None]
            sums = np.exp(_log_kernel((x - m) / s, heavy) - np.log(s)) @ scaled
            if log_left_tail is not None:
                sums = sums + np.exp(log_left_tail - top) * _t2_cdf((x[0] - m) / s)
            with np.errstate(divide="ignore"):
                out[i:i + chunk] = np.log(sums).sum(axis=1)
        return out + top.sum()

    return log_inner


def _log_sigma_range(step):
    """Where the outer box is searched on a shared inner grid of spacing ``step``: ``log sigma`` from
    ``log(STEPS_PER_SIGMA step)`` (or :data:`LOG_SIGMA_RANGE`'s floor). Narrower kernels fall between the grid's
    nodes: the rule, off by a factor up to ``step / sigma`` per group, would be a factor ``(step / sigma)^G`` off for
    ``G`` groups. At two steps a sd the rule's relative error is about ``2 exp(-8 pi^2)`` for the normal kernel and
    ``exp(-4 pi sqrt 2)`` for ``t_2``'s (the size of their Fourier transforms at ``2 pi / step``)."""
    return max(LOG_SIGMA_RANGE[0], float(np.log(STEPS_PER_SIGMA * step))), LOG_SIGMA_RANGE[1]


def _uniform_grid(lo, hi, step):
    return np.linspace(lo, hi, int(np.ceil((hi - lo) / step)) + 1)


def student_t_log_evidence(y, group, *, x_step=X_STEP, points=OUTER_POINTS, refine=False):
    """The exact log evidence of :func:`student_t_model` (module docstring); with ``refine``, ``(log_z, change when
    the x spacing and both outer spacings are halved)``.

    ``L_g(x) = prod_{i in g} t_3(y_i; x, 0.5)``: on ``[min y - 20, max y + 20]`` (beyond, each factor is below 1e-5
    of its peak), and the normal kernel leaves no mass off the grid over the outer box."""
    y, group = np.asarray(y, dtype=float), np.asarray(group)
    x = _uniform_grid(y.min() - X_MARGIN, y.max() + X_MARGIN, x_step)
    each = stats.t.logpdf(y[None, :], NU_LIKELIHOOD, loc=x[:, None], scale=SCALE_LIKELIHOOD)
    log_lik = each @ (group[:, None] == np.arange(group.max() + 1)).astype(float)
    inner = _inner_on_grid(log_lik, x, heavy=False)

    def outer(mu, log_sigma):
        return _log_hyper_prior(mu, log_sigma, MU_PRIOR_T) + inner(mu, np.exp(log_sigma))

    log_z = _log_evidence(outer, MU_RANGE, _log_sigma_range(x[1] - x[0]), points)
    if not refine:
        return log_z
    return log_z, abs(student_t_log_evidence(y, group, x_step=x_step / 2, points=2 * points - 1) - log_z)


def heavy_latent_log_evidence(counts, *, x_step=X_STEP, points=OUTER_POINTS, refine=False):
    """The exact log evidence of :func:`count_model` with ``heavy`` (module docstring); with ``refine``, ``(log_z,
    change when the x spacing and both outer spacings are halved)``.

    ``log L_g(x) = s_g x - n e^x - sum log y!`` on ``[-20, log max y + 4]`` with a spacing at most ``x_step`` and
    ``0.1 / sqrt(max s_g)`` (a tenth of the narrowest likelihood's width); left of it ``L_g`` is taken as its value
    at ``-20`` times the ``t_2`` prior's mass there (exact to ``4 e^-20`` for a group of zeros, and for the others
    below ``e^{-20 s} of the group's integral``); right of it ``L_g`` falls like ``exp(-n e^x)``."""
    counts = np.asarray(counts)
    n, sums = counts.shape[1], counts.sum(axis=1).astype(float)
    step = min(x_step, 0.25 / np.sqrt(max(sums.max(), 1.0)))
    x = _uniform_grid(X_FLOOR, np.log(max(counts.max(), 1.0)) + 4.0, step)
    log_lik = sums * x[:, None] - n * np.exp(x)[:, None]
    inner = _inner_on_grid(log_lik, x, heavy=True, log_left_tail=log_lik[0])
    constant = -float(np.sum(gammaln(counts + 1.0)))

    def outer(mu, log_sigma):
        return _log_hyper_prior(mu, log_sigma, MU_PRIOR_COUNTS) + inner(mu, np.exp(log_sigma))

    log_z = _log_evidence(outer, MU_RANGE, _log_sigma_range(x[1] - x[0]), points) + constant
    if not refine:
        return log_z
    finer = heavy_latent_log_evidence(counts, x_step=step / 2, points=2 * points - 1)
    return log_z, abs(finer - log_z)


def funnel_log_evidence(counts, *, n_nodes=N_HERMITE, points=FUNNEL_POINTS, refine=False):
    """The exact log evidence of :func:`count_model` without ``heavy`` (module docstring); with ``refine``,
    ``(log_z, change when both outer spacings are halved and the Gauss-Hermite nodes doubled)``.

    The inner integrals are log-concave (a normal prior, a Poisson likelihood): :mod:`pmz.systems.hierarchical_glm`'s
    adaptive Gauss-Hermite rule about each one's mode. As ``sigma -> 0`` the outer integrand falls only like
    ``sigma`` (the funnel's tail: every ``x_g`` at ``mu``): the box is searched down to :data:`FUNNEL_FLOOR`
    (``log sigma = -25``, about 24 nats below the peak for the column's data: the mass left of it is below
    ``e^-20`` of the whole; further left the rule's nodes ``x_hat + sigma t`` would be lost in rounding against
    ``mu``)."""
    counts = np.asarray(counts)
    sums, multiplicity = np.unique(counts.sum(axis=1), return_counts=True)
    n = counts.shape[1]

    def outer(mu, log_sigma):
        return _log_outer("poisson", sums.astype(float), multiplicity.astype(float), n, MU_PRIOR_COUNTS, mu,
                          log_sigma, n_nodes)

    box = _log_evidence(outer, MU_RANGE, (FUNNEL_FLOOR, LOG_SIGMA_RANGE[1]), points)
    log_z = box - float(np.sum(gammaln(counts + 1.0)))
    if not refine:
        return log_z
    return log_z, abs(funnel_log_evidence(counts, n_nodes=2 * n_nodes, points=2 * points - 1) - log_z)


# --- the columns ------------------------------------------------------------------------------------------------

def latent_columns(hazard_type) -> list:
    """The columns above as ``hazard_type`` (:class:`pmz.systems.hazards.Hazard`) instances, in order."""
    (y, group), funnel, heavy = student_t_data(), funnel_data(), heavy_latent_data()
    auto = ("auto",)
    return [
        hazard_type("laplace_student_t", "40 random intercepts under a Student-t(3) likelihood (not log-concave)",
                    lambda: student_t_model(y, group), student_t_log_evidence(y, group), methods=auto),
        hazard_type("laplace_funnel", "60 Poisson random intercepts, one count each, sigma piled against 0",
                    lambda: count_model(funnel, heavy=False), funnel_log_evidence(funnel), methods=auto),
        hazard_type("laplace_heavy_latents", "40 Student-t(2) random intercepts under a Poisson likelihood",
                    lambda: count_model(heavy, heavy=True), heavy_latent_log_evidence(heavy), methods=auto),
    ]
