"""pmz quickstart: the log evidence of a Bayesian linear regression, checked against its exact value.

    python examples/quickstart.py

The model is conjugate (Gaussian prior on the coefficients, known noise), so
log p(y) = log N(y | 0, sigma^2 I + tau^2 X X') is known exactly.
"""

import numpy as np
import pymc as pm
from scipy import stats

import pmz

rng = np.random.default_rng(42)
n_obs, tau, sigma = 50, 1.0, 0.5
x = rng.uniform(-2, 2, size=n_obs)
X = np.column_stack([np.ones(n_obs), x, x**2])
y = X @ np.array([0.5, -1.0, 0.3]) + sigma * rng.normal(size=n_obs)

with pm.Model() as quadratic:
    beta = pm.Normal("beta", 0.0, tau, shape=3)
    pm.Normal("y", X @ beta, sigma, observed=y)
    res_quadratic = pmz.evidence(random_seed=1)  # default method="auto"; print(res_quadratic) names its route and why

with pm.Model() as linear:
    beta = pm.Normal("beta", 0.0, tau, shape=2)
    pm.Normal("y", X[:, :2] @ beta, sigma, observed=y)
    res_linear = pmz.evidence(random_seed=1)


def exact_log_evidence(design):
    cov = sigma**2 * np.eye(n_obs) + tau**2 * design @ design.T
    return stats.multivariate_normal(np.zeros(n_obs), cov).logpdf(y)


exact = exact_log_evidence(X)
print(res_quadratic)
print()
print(f"quadratic model: log Z = {res_quadratic.log_z:.4f} +/- {res_quadratic.log_z_se:.2g}   exact {exact:.4f}")
print(
    f"  error = {res_quadratic.log_z - exact:+.3f} = {(res_quadratic.log_z - exact) / res_quadratic.log_z_se:+.2f} se"
)
exact_linear = exact_log_evidence(X[:, :2])
print(f"linear model:    log Z = {res_linear.log_z:.4f} +/- {res_linear.log_z_se:.2g}   exact {exact_linear:.4f}")
print()
print(pmz.compare({"quadratic": res_quadratic, "linear": res_linear}))
