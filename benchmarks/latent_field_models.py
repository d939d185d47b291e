"""Latent-field models without independent groups, for ``latent_fields.py --fields``: a stochastic-volatility model,
a log-Gaussian Cox process on a grid, a latent GP classification and a Poisson latent GP. Each is written the way a
PyMC user would write it, with data simulated from the model's own kind (fixed seed); their log Z has no closed form.

Each builder returns ``(model, description)``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

__all__ = ["FIELDS", "stochastic_volatility", "cox_process", "gp_classification", "poisson_gp"]


def stochastic_volatility(n_steps=1000, seed=0):
    """Daily returns ``y_t ~ Normal(0, exp(h_t / 2))`` whose log volatility ``h`` is a Gaussian random walk with an
    unknown step size (``n_steps`` latents, 1 hyperparameter)."""
    rng = np.random.default_rng(seed)
    h = np.cumsum(rng.normal(0.0, 0.1, n_steps)) - 1.0
    y = rng.normal(0.0, np.exp(h / 2.0))
    with pm.Model() as model:
        step = pm.Exponential("step", 10.0)
        log_vol = pm.GaussianRandomWalk("log_vol", sigma=step, init_dist=pm.Normal.dist(0.0, 2.0), shape=n_steps)
        pm.Normal("y", 0.0, sigma=pm.math.exp(log_vol / 2.0), observed=y)
    return model, f"stochastic volatility, {n_steps} steps"


def _cox_data(side, seed, alpha=0.95):
    """The grid's adjacency ``W``, the CAR precision ``D - alpha W`` (for ``tau = 1``) and counts drawn from the
    model with level 0.5 and ``tau = 0.5``."""
    from pmz.systems.grid import grid_adjacency

    rng = np.random.default_rng(seed)
    n = side * side
    W = grid_adjacency(side)
    Q = np.diag(W.sum(1)) - alpha * W
    f = np.linalg.cholesky(np.linalg.inv(Q / 0.5)) @ rng.standard_normal(n)
    return W, Q, rng.poisson(np.exp(0.5 + f))


def cox_process(side=30, seed=0):
    """Counts on a ``side x side`` grid, ``y_ij ~ Poisson(exp(level + f_ij))``, with ``f`` a conditional
    autoregression on the grid's neighbours (``pm.CAR``: a sparse precision; ``side^2`` latents; the level and the
    precision ``tau``). PyMC's CAR density leaves out its Gaussian constant, so pmz reports both log Z's."""
    W, _, y = _cox_data(side, seed)
    with pm.Model() as model:
        level = pm.Normal("level", 0.0, 2.0)
        tau = pm.Gamma("tau", 2.0, 2.0)
        field = pm.CAR("field", mu=np.zeros(side * side), W=W, alpha=0.95, tau=tau)
        pm.Poisson("y", pm.math.exp(level + field), observed=y)
    return model, f"log-Gaussian Cox process, {side}x{side} grid"


def _gp_data(n_points, likelihood, seed):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0.0, 10.0, n_points))
    f_true = 0.8 * np.sin(X)
    if likelihood == "poisson":
        return X, rng.poisson(np.exp(f_true + 1.0))
    return X, rng.binomial(1, 1.0 / (1.0 + np.exp(-2.0 * f_true)))


def _gp(n_points, likelihood, seed):
    X, y = _gp_data(n_points, likelihood, seed)
    with pm.Model() as model:
        lengthscale = pm.InverseGamma("lengthscale", 5.0, 5.0)
        amplitude = pm.HalfNormal("amplitude", 1.0)
        gp = pm.gp.Latent(cov_func=amplitude**2 * pm.gp.cov.ExpQuad(1, ls=lengthscale))
        f = gp.prior("f", X=X[:, None], jitter=1e-6)
        if likelihood == "poisson":
            pm.Poisson("y", pm.math.exp(f + 1.0), observed=y)
        else:
            pm.Bernoulli("y", logit_p=f, observed=y)
    return model


def gp_classification(n_points=500, seed=0):
    """Binary labels through a latent GP (squared-exponential kernel, unknown lengthscale and amplitude)."""
    return _gp(n_points, "bernoulli", seed), f"latent GP classification, {n_points} points"


def poisson_gp(n_points=100, seed=0):
    """Counts through a latent GP, ``y_i ~ Poisson(exp(f_i + 1))``."""
    return _gp(n_points, "poisson", seed), f"Poisson latent GP, {n_points} points"


FIELDS = {"volatility": stochastic_volatility, "cox": cox_process, "gp_classification": gp_classification,
          "poisson_gp": poisson_gp}


def _particle_filter_log_likelihood(y, step, n_particles, rng):
    """``log p^(y | step)`` of :func:`stochastic_volatility` by a bootstrap particle filter (Gordon, Salmond & Smith
    1993) with systematic resampling at every step: an unbiased estimate of ``p(y | step)``."""
    h = rng.normal(0.0, 2.0, n_particles)
    total = 0.0
    offsets = np.arange(n_particles)
    for t, y_t in enumerate(y):
        if t:
            h = h + step * rng.standard_normal(n_particles)
        log_w = -0.5 * h - 0.5 * y_t * y_t * np.exp(-h) - 0.5 * np.log(2.0 * np.pi)
        top = log_w.max()
        w = np.exp(log_w - top)
        total += top + np.log(w.mean())
        cumulative = np.cumsum(w)
        h = h[np.minimum(np.searchsorted(cumulative / cumulative[-1], (rng.random() + offsets) / n_particles),
                         n_particles - 1)]
    return total


def volatility_reference(n_steps=1000, seed=0, n_particles=100_000, n_grid=25, repeats=2, rng_seed=1):
    """log Z of :func:`stochastic_volatility`, independent of pmz: the step size's prior (Exponential(10)) times
    the particle filter's ``p^(y | step)`` on a grid of ``n_grid`` points in ``log step`` (0.02 to 0.5), by the
    trapezoid rule; ``repeats`` independent runs give the se (their sd over sqrt(repeats)). Returns
    ``(log Z, se)``."""
    from scipy.special import logsumexp

    rng_data = np.random.default_rng(seed)
    h = np.cumsum(rng_data.normal(0.0, 0.1, n_steps)) - 1.0
    y = rng_data.normal(0.0, np.exp(h / 2.0))
    rng = np.random.default_rng(rng_seed)
    log_steps = np.linspace(np.log(0.02), np.log(0.5), n_grid)
    runs = []
    for _ in range(repeats):
        log_lik = np.array([_particle_filter_log_likelihood(y, np.exp(u), n_particles, rng) for u in log_steps])
        integrand = log_lik + np.log(10.0) - 10.0 * np.exp(log_steps) + log_steps  # d step = step d log step
        weights = np.full(n_grid, log_steps[1] - log_steps[0])
        weights[[0, -1]] *= 0.5
        runs.append(float(logsumexp(integrand, b=weights)))
    return float(np.mean(runs)), float(np.std(runs, ddof=1) / np.sqrt(repeats)) if repeats > 1 else float("nan")


def _gp_log_likelihood_terms(likelihood, y):
    """``(log p(y | f), its gradient, the negated Hessian's diagonal)`` as functions of ``f``."""
    from scipy.special import expit, gammaln

    if likelihood == "poisson":
        const = -np.sum(gammaln(y + 1.0))
        return (lambda f: np.sum(y * (f + 1.0) - np.exp(f + 1.0), axis=-1) + const,
                lambda f: y - np.exp(f + 1.0), lambda f: np.exp(f + 1.0))
    return (lambda f: np.sum(y * f - np.logaddexp(0.0, f), axis=-1), lambda f: y - expit(f),
            lambda f: expit(f) * (1.0 - expit(f)))


def gp_reference(likelihood="poisson", n_points=100, seed=0, n_grid=36, n_draws=4000, rng_seed=1):
    """log Z of :func:`poisson_gp` or :func:`gp_classification`, independent of pmz: on a grid of
    ``n_grid x n_grid`` values of (log lengthscale, log amplitude), ``p(y | theta)`` by importance sampling of the
    whitened latents from the Laplace Gaussian at their mode (found by Newton's method; ``n_draws`` draws), times the
    priors, summed by the trapezoid rule. Returns ``(log Z, se)``, the se from the importance draws' variances
    (the grid's own error is checked by the caller at two grid sizes)."""
    from scipy import stats
    from scipy.special import logsumexp

    X, y = _gp_data(n_points, likelihood, seed)
    log_lik, grad, curvature = _gp_log_likelihood_terms(likelihood, y.astype(float))
    rng = np.random.default_rng(rng_seed)
    log_ls = np.linspace(-1.5, 2.5, n_grid)
    log_amp = np.linspace(-3.0, 1.5, n_grid)
    sq = np.subtract.outer(X, X) ** 2
    log_p = np.empty((n_grid, n_grid))
    var_p = np.empty((n_grid, n_grid))
    for a, u in enumerate(log_ls):
        for b, v in enumerate(log_amp):
            K = np.exp(2 * v) * np.exp(-0.5 * sq / np.exp(2 * u)) + 1e-6 * np.eye(n_points)
            L = np.linalg.cholesky(K)
            z = np.zeros(n_points)
            for _ in range(100):  # Newton in the whitened latents: -z'z/2 + log p(y | L z) is concave
                f = L @ z
                g = -z + L.T @ grad(f)
                H = np.eye(n_points) + (L.T * curvature(f)) @ L
                step = np.linalg.solve(H, g)
                z = z + step
                if g @ step < 1e-10:
                    break
            f = L @ z
            H = np.eye(n_points) + (L.T * curvature(f)) @ L
            C = np.linalg.cholesky(H)
            e = rng.standard_normal((n_draws, n_points))
            draws = z + np.linalg.solve(C.T, e.T).T
            log_q = -0.5 * np.sum(e * e, axis=1) + np.sum(np.log(np.diag(C)))
            log_target = -0.5 * np.sum(draws * draws, axis=1) + log_lik(draws @ L.T)
            log_w = log_target - log_q
            log_p[a, b] = logsumexp(log_w) - np.log(n_draws)
            w = np.exp(log_w - log_w.max())
            var_p[a, b] = np.var(w) / (n_draws * np.mean(w) ** 2)  # relative variance of p^
    ls, amp = np.exp(log_ls), np.exp(log_amp)
    log_prior = (stats.invgamma(5.0, scale=5.0).logpdf(ls)[:, None] + log_ls[:, None]
                 + stats.halfnorm(scale=1.0).logpdf(amp)[None, :] + log_amp[None, :])
    cell = (log_ls[1] - log_ls[0]) * (log_amp[1] - log_amp[0])
    weights = np.outer(_trapezoid(n_grid), _trapezoid(n_grid)) * cell
    terms = log_p + log_prior + np.log(weights)
    log_z = float(logsumexp(terms))
    share = np.exp(terms - log_z)
    return log_z, float(np.sqrt(np.sum(share**2 * var_p)))


def _trapezoid(n):
    w = np.ones(n)
    w[[0, -1]] = 0.5
    return w


def cox_reference(side=30, seed=0, n_grid=16, n_particles=128, n_temperatures=400, n_leapfrog=5, rng_seed=1,
                  span=5.0):
    """log Z of :func:`cox_process` with the CAR prior normalised, independent of pmz. The level joins the field
    (a joint Gaussian prior), so the only hyperparameter is ``tau``: on a grid of ``n_grid`` values of ``log tau``
    spanning ``span`` Laplace sd each way of the Laplace approximation's peak, ``p(y | tau)`` by annealed importance
    sampling (Neal 2001) from the Laplace Gaussian at the conditional mode (dense Newton) to the conditional of
    (level, field), geometric path of ``n_temperatures`` steps with HMC moves (a diagonal mass matrix, sparse
    products), ``n_particles`` paths; times the prior of tau, by the trapezoid rule. Returns ``(log Z, se)`` (se from
    the paths' weights)."""
    from scipy import sparse, stats
    from scipy.special import gammaln, logsumexp

    W, Q, y = _cox_data(side, seed)
    n = side * side
    Qs = sparse.csr_matrix(Q)
    const = -np.sum(gammaln(y + 1.0))
    _, logdet_q = np.linalg.slogdet(Q)
    rng = np.random.default_rng(rng_seed)
    level_var = 4.0

    def log_joint(X, tau):  # X (B, 1 + n): level, field; the normalised priors and the Poisson likelihood
        level, f = X[:, 0], X[:, 1:]
        eta = level[:, None] + f
        prior = (-0.5 * level**2 / level_var - 0.5 * np.log(2 * np.pi * level_var)
                 + 0.5 * (n * np.log(tau) + logdet_q) - 0.5 * n * np.log(2 * np.pi)
                 - 0.5 * tau * np.einsum("bi,bi->b", f, (Qs @ f.T).T))
        rate = np.exp(eta)
        value = prior + eta @ y - rate.sum(axis=1) + const
        grad = np.empty_like(X)
        grad[:, 0] = -level / level_var + (y - rate).sum(axis=1)
        grad[:, 1:] = -tau * (Qs @ f.T).T + y - rate
        return value, grad

    def mode(tau):
        x = np.zeros(n + 1)
        for _ in range(100):
            _, g = log_joint(x[None], tau)
            rate = np.exp(x[0] + x[1:])
            H = np.zeros((n + 1, n + 1))
            H[1:, 1:] = tau * Q + np.diag(rate)
            H[0, 0] = 1.0 / level_var + rate.sum()
            H[0, 1:] = H[1:, 0] = rate
            step = np.linalg.solve(H, g[0])
            x = x + step
            if g[0] @ step < 1e-10:
                break
        rate = np.exp(x[0] + x[1:])
        H[1:, 1:] = tau * Q + np.diag(rate)
        H[0, 0] = 1.0 / level_var + rate.sum()
        H[0, 1:] = H[1:, 0] = rate
        return x, H

    def laplace(log_tau):
        x, H = mode(np.exp(log_tau))
        value = log_joint(x[None], np.exp(log_tau))[0][0]
        return value + 0.5 * (n + 1) * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(H)[1]

    def annealed(log_tau):
        tau = np.exp(log_tau)
        x_hat, H = mode(tau)
        C = np.linalg.cholesky(H)
        half_log_det = np.sum(np.log(np.diag(C)))
        e = rng.standard_normal((n_particles, n + 1))
        X = x_hat + np.linalg.solve(C.T, e.T).T

        def log_q(X):
            Hd = (X - x_hat) @ H
            return (-0.5 * np.sum(Hd * (X - x_hat), axis=1) + half_log_det - 0.5 * (n + 1) * np.log(2 * np.pi),
                    -Hd)

        mass = np.diag(H)
        eps = 0.5 / np.sqrt(np.max(mass / mass))  # in units where the diagonal mass whitens each coordinate
        betas = np.linspace(0.0, 1.0, n_temperatures + 1)
        log_w = np.zeros(n_particles)

        def energy(X, beta):
            a, ga = log_q(X)
            b, gb = log_joint(X, tau)
            return (1 - beta) * a + beta * b, (1 - beta) * ga + beta * gb, b - a

        u, g, r = energy(X, 0.0)
        for k in range(1, n_temperatures + 1):
            log_w += (betas[k] - betas[k - 1]) * r
            u, g, r = energy(X, betas[k])
            p = rng.standard_normal(X.shape) * np.sqrt(mass)
            X1, p1, g1 = X.copy(), p + 0.5 * eps * g, g
            for step in range(n_leapfrog):
                X1 = X1 + eps * p1 / mass
                u1, g1, r1 = energy(X1, betas[k])
                p1 = p1 + (eps if step < n_leapfrog - 1 else 0.5 * eps) * g1
            log_accept = (u1 - 0.5 * np.sum(p1**2 / mass, axis=1)) - (u - 0.5 * np.sum(p**2 / mass, axis=1))
            accept = np.log(rng.random(n_particles)) < log_accept
            X[accept], u[accept], g[accept], r[accept] = X1[accept], u1[accept], g1[accept], r1[accept]
        w = np.exp(log_w - log_w.max())
        return float(logsumexp(log_w) - np.log(n_particles)), float(np.var(w) / (n_particles * np.mean(w) ** 2))

    def log_prior(log_tau):
        return stats.gamma(2.0, scale=0.5).logpdf(np.exp(log_tau)) + log_tau

    from scipy.optimize import minimize_scalar

    peak = minimize_scalar(lambda u: -(laplace(u) + log_prior(u)), bounds=(-5.0, 5.0), method="bounded",
                           options={"xatol": 1e-5}).x
    h = 1e-2
    curvature = -(laplace(peak + h) + log_prior(peak + h) - 2 * (laplace(peak) + log_prior(peak))
                  + laplace(peak - h) + log_prior(peak - h)) / h**2
    grid = np.linspace(peak - span / np.sqrt(curvature), peak + span / np.sqrt(curvature), n_grid)
    values = [annealed(u) for u in grid]
    log_p = np.array([v[0] for v in values]) + np.array([log_prior(u) for u in grid])
    var_p = np.array([v[1] for v in values])
    terms = log_p + np.log(_trapezoid(n_grid) * (grid[1] - grid[0]))
    log_z = float(logsumexp(terms))
    share = np.exp(terms - log_z)
    return log_z, float(np.sqrt(np.sum(share**2 * var_p)))