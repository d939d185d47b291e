"""Two-way methods through pmz.evidence: BAR, RAISE, cumulant, bounds, histogram and bridge sampling against the
exact log evidence of the conjugate systems (fixed seeds, z-score bounds, and error bars that mean something)."""

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pmz
from pmz.systems import ALL_SYSTEMS

SEED = 20261122
TWO_WAY = ("bar", "raise", "cumulant", "bounds", "histogram")


@pytest.fixture(scope="module")
def systems():
    return {name: build() for name, build in ALL_SYSTEMS.items()}


@pytest.fixture(scope="module")
def posterior_draws(systems):
    """One NUTS run per system, shared by the tests that pass draws in."""
    draws = {}
    for name in ("linear_regression", "nig_regression"):
        with systems[name].model:
            draws[name] = pm.sample(500, tune=500, chains=2, cores=1, random_seed=5, progressbar=False)
    return draws


@pytest.mark.parametrize("name", sorted(ALL_SYSTEMS))
@pytest.mark.parametrize("method", ["bar", "bridge"])
def test_bar_and_bridge_match_exact_log_z(systems, name, method):
    system = systems[name]
    res = pmz.evidence(system.model, method=method, random_seed=SEED, progressbar=False)
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + 0.05, (res.log_z, system.log_z, res.log_z_se)
    assert 0 < res.log_z_se < 0.1
    d = res.evidence
    # every two-way result carries the stochastic bounds; they bracket the truth at this seed
    assert float(d["lower"]) <= system.log_z <= float(d["upper"])
    assert float(d["gap"]) >= 0
    assert {"work_forward", "work_reverse"} <= set(res.work.data_vars)


def test_bar_without_options_beyond_the_method(systems):
    system = systems["normal_mean"]
    res = pmz.evidence(system.model, method="bar", random_seed=1, progressbar=False, n_paths=64, n_temps=50)
    assert res.method == "bar" and pmz.registry.DEFAULT_METHOD == "auto"


@pytest.mark.parametrize("method", TWO_WAY)
def test_every_two_way_estimator_on_linear_regression(systems, posterior_draws, method):
    system = systems["linear_regression"]
    res = pmz.evidence(
        system.model,
        method=method,
        posterior=posterior_draws["linear_regression"],
        random_seed=SEED,
        progressbar=False,
        n_paths=256,
        n_temps=200,
    )
    tol = 0.05 if method != "bounds" else 0.0  # the bounds' "se" is the half gap: conservative by design
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + tol, (method, res.log_z, system.log_z, res.log_z_se)
    assert 0 < res.log_z_se < (0.15 if method != "bounds" else 1.0)
    assert res.work.attrs["reverse_start"] == "posterior"
    assert res.work["work_reverse"].size == 256


def test_histogram_posterior_is_an_arviz_posterior(systems, posterior_draws):
    system = systems["linear_regression"]
    res = pmz.evidence(
        system.model,
        method="histogram",
        posterior=posterior_draws["linear_regression"],
        random_seed=SEED,
        progressbar=False,
        n_paths=256,
        n_temps=200,
        n_gibbs_draws=1000,
    )
    draws = res.posterior["log_z"].values.ravel()
    assert draws.size == 1000 and np.unique(draws).size > 900  # real Gibbs draws, not a normal approximation
    summary = az.summary(res, var_names=["log_z"], kind="stats", round_to="none")
    assert abs(summary.loc["log_z", "mean"] - res.log_z) < 1e-9
    assert abs(summary.loc["log_z", "sd"] - res.log_z_se) < 1e-9
    bar = res.estimates.loc["bar", "log_z"]
    assert abs(res.log_z - bar) < 0.5 * res.log_z_se  # posterior mean ~ BAR's maximum likelihood value


def test_bridge_from_user_draws_and_student_t(systems, posterior_draws):
    system = systems["nig_regression"]
    for reference in ("gaussian", "student_t"):
        res = pmz.evidence(
            system.model,
            method="bridge",
            posterior=posterior_draws["nig_regression"],
            bridge_reference=reference,
            random_seed=SEED,
            progressbar=False,
        )
        assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + 0.05, (reference, res.log_z, system.log_z)
        assert 0 < res.log_z_se < 0.1
        # the draws' effective size (< their count: MCMC) enters the variance
        n_eff = float(res.evidence["n_eff_reverse"])
        assert 50 < n_eff <= res.work["work_reverse"].size


def test_default_reverse_starts_are_independent_hmc_draws(systems):
    """reverse_start="auto" (PyMC model): pmz's many-chain HMC posterior draws, independent of the forward run;
    resampled forward end states only when asked for, and without relaxation (reverse_burn=0) pmz warns about
    inherited bias."""
    import warnings as _warnings

    system = systems["normal_mean"]
    opts = dict(method="bar", random_seed=SEED, progressbar=False, n_paths=256, n_temps=100)
    with _warnings.catch_warnings():
        _warnings.simplefilter("error", UserWarning)
        res = pmz.evidence(system.model, **opts)
    assert res.work.attrs["reverse_start"] == "hmc"
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + 0.05
    resampled = pmz.evidence(system.model, reverse_start="resample", **opts)
    assert resampled.work.attrs["reverse_start"] == "resample"
    assert float(resampled.evidence["forward_ess_fraction"]) > 0.5
    with pytest.warns(UserWarning, match="inherit the forward run's bias"):
        pmz.evidence(system.model, reverse_start="resample", reverse_burn=0, **opts)


def test_nuts_reverse_starts(systems):
    system = systems["beta_binomial"]
    res = pmz.evidence(
        system.model,
        method="bar",
        reverse_start="nuts",
        nuts_tune=300,
        random_seed=SEED,
        progressbar=False,
        n_paths=256,
        n_temps=100,
    )
    assert res.work.attrs["reverse_start"] == "nuts"
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + 0.05 and res.log_z_se < 0.1


def test_poor_overlap_warns(systems):
    """Two temperatures and one kernel step: the work distributions barely overlap and BAR says so."""
    system = systems["linear_regression"]
    with pytest.warns(UserWarning, match="barely overlap"):
        pmz.evidence(system.model, method="bar", random_seed=SEED, progressbar=False, n_paths=64, n_temps=1)


def test_two_way_seed_reproducible(systems):
    model = systems["poisson_gamma"].model
    opts = dict(method="bar", progressbar=False, n_paths=64, n_temps=30)
    a = pmz.evidence(model, random_seed=3, **opts)
    b = pmz.evidence(model, random_seed=3, **opts)
    assert np.array_equal(a.work["work_reverse"].values, b.work["work_reverse"].values)
    assert a.log_z == b.log_z


def test_plot_work_returns_axes(systems):
    import matplotlib

    matplotlib.use("Agg")
    system = systems["normal_mean"]
    res = pmz.evidence(system.model, method="bar", random_seed=1, progressbar=False, n_paths=64, n_temps=50)
    ax = pmz.plot_work(res)
    assert len(ax.patches) > 0 and ax.get_xlabel().startswith("work")
    ax = pmz.plot_log_z({"bar": res})
    assert ax.get_xlabel() == "$\\log Z$"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["linear_regression", "beta_binomial"])
def test_bar_coverage(systems, name):
    """Over 30 seeds BAR's 95% interval (asymptotic se) covers the exact log Z at least 24 times."""
    system = systems[name]
    covered = 0
    for seed in range(30):
        res = pmz.evidence(
            system.model, method="bar", random_seed=seed, progressbar=False, n_paths=256, n_temps=150, nuts_tune=500
        )
        covered += abs(res.log_z - system.log_z) < 1.96 * res.log_z_se
    assert covered >= 24, covered


def test_two_way_result_netcdf_round_trip(systems, posterior_draws, tmp_path):
    system = systems["linear_regression"]
    res = pmz.evidence(
        system.model,
        method="histogram",
        posterior=posterior_draws["linear_regression"],
        random_seed=SEED,
        progressbar=False,
        n_paths=64,
        n_temps=30,
        n_gibbs_draws=200,
    )
    label = f"<{type(posterior_draws['linear_regression']).__name__}>"  # InferenceData (PyMC 5) / DataTree (PyMC 6)
    assert res.run_attrs["options"].count(label) == 1  # draws are labelled, not dumped into attrs
    path = tmp_path / "two_way.nc"
    res.to_netcdf(str(path))
    back = pmz.load(str(path))
    assert back.log_z == res.log_z and back.method == "histogram"
    np.testing.assert_array_equal(back.work["work_reverse"].values, res.work["work_reverse"].values)
    assert back.work.attrs["reverse_start"] == "posterior"
