"""The check that posterior draws belong to the model (pmz.runners.draws_check): exact draws of a linear regression's
Gaussian posterior pass; the same draws with one coordinate shifted by half a posterior sd, or spread 20% wider or
narrower, fail, and the reason names the variable. Power and false-alarm rate over many runs:
benchmarks/draws_check.py (docs/benchmarks.md)."""

import re

import numpy as np
import pymc as pm
import pytest

from pmz.model.pymc import CompiledModel
from pmz.runners.draws_check import check_draws, critical_z

SIGMA, PRIOR_SD = 0.8, 2.0


def _regression(seed=0, n=200):
    """y = X b + noise (known sd), b ~ N(0, PRIOR_SD^2 I): the posterior of b is exactly Gaussian."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) + np.array([2.0, 0.0, -1.0])
    y = X @ np.array([0.5, -0.3, 0.2]) + rng.normal(0, SIGMA, n)
    with pm.Model() as model:
        pm.Normal("Intercept", 0, PRIOR_SD)
        b = pm.Normal("beta", 0, PRIOR_SD, shape=2)
        pm.Normal("y", model["Intercept"] * X[:, 0] + X[:, 1:] @ b, SIGMA, observed=y)
    precision = X.T @ X / SIGMA**2 + np.eye(3) / PRIOR_SD**2
    cov = np.linalg.inv(precision)
    mean = cov @ (X.T @ y / SIGMA**2)
    return model, mean, cov


@pytest.fixture(scope="module")
def regression():
    model, mean, cov = _regression()
    draws = np.random.default_rng(5).multivariate_normal(mean, cov, size=2000)
    return CompiledModel(model), draws, np.repeat(np.arange(4), 500)


def test_exact_draws_pass(regression):
    """Exact draws: every effect is within reach of 0; not flagged (family-wise false-alarm level 1e-3)."""
    cm, draws, chain = regression
    out = check_draws(cm, draws, chain)
    assert out.mismatch == ""
    assert abs(out.effect) < critical_z(3) * out.se
    assert 0 < out.se < 0.1  # the test can see an effect of a few tenths


@pytest.mark.parametrize("coordinate, name", [(0, "Intercept"), (2, r"beta\[1\]")])
@pytest.mark.parametrize("kind, amount", [("shift", 0.5), ("shift", -0.5), ("scale", 1.2), ("scale", 0.8)])
def test_one_coordinate_off_is_flagged_and_named(regression, coordinate, name, kind, amount):
    """A shift of half a posterior sd (about 22 se at 2000 draws) or a spread 20% off (10-13 se) in one
    coordinate: flagged for any seed, the reason names the variable and the kind of error."""
    cm, draws, chain = regression
    moved = draws.copy()
    col = moved[:, coordinate]
    if kind == "shift":
        moved[:, coordinate] = col + amount * col.std()
    else:
        moved[:, coordinate] = col.mean() + amount * (col - col.mean())
    out = check_draws(cm, moved, chain)

    assert re.search(name, out.mismatch)
    word = "sits about" if kind == "shift" else "the spread of"
    assert word in out.mismatch
    if kind == "shift":  # |effect| >= 0.5 (more where the coordinate is correlated with others)
        assert ("below" if amount < 0 else "above") in out.mismatch
        assert abs(out.effect) > 0.4
    else:  # the spread ratio read off the identity: above 1 for a wider spread, below 1 for a narrower one
        ratio = float(re.search(r"is about ([0-9.]+) times", out.mismatch).group(1))
        assert (ratio > 1) == (amount > 1) and abs(ratio - 1) > 0.1


def test_too_few_draws_or_no_continuous_coordinate_is_no_test(regression):
    cm, draws, chain = regression
    assert check_draws(cm, draws[:10], chain[:10]) is None


def test_critical_z_grows_with_dimension():
    assert 3.3 < critical_z(1) < 3.6 and 4.9 < critical_z(1000) < 5.2
