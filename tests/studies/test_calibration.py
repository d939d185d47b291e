"""Simulation-based calibration of Bayes factors (pmz.studies.bayes_factor_calibration) on a pair of Gaussian models
with exact evidence.

M0: y_i ~ N(a, 1), a ~ N(0, 1); M1: y_i ~ N(a + b x_i, 1), a ~ N(0, 1), b ~ N(0, 2^2). Marginally
y ~ N(0, I + X S X') with X = [1] or [1, x] and S = diag(1) or diag(1, 4): every simulation's log Bayes factor is
exact, so each estimate is checked against it and not only the average.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pmz.inference_data import get_group, is_inference_data
from pmz.model.pymc import ModelSpecificationError
from pmz.plots.calibration import calibration_curve, plot_bayes_factor_calibration
from pmz.studies import bayes_factor_calibration as calibration
from pmz.studies.bayes_factor_calibration import BayesFactorCalibration, calibrate_bayes_factors

N_OBS = 20
X = np.linspace(-1.0, 1.0, N_OBS)
Y0 = np.linspace(0.0, 1.0, N_OBS)  # the models' own data, which the calibration must set back
SLOPE_SD = 2.0


def gaussian_model(slope: bool) -> pm.Model:
    with pm.Model() as model:
        y = pm.Data("y_data", Y0)
        mu = pm.Normal("a", 0.0, 1.0)
        if slope:
            mu = mu + pm.Normal("b", 0.0, SLOPE_SD) * X
        pm.Normal("y", mu, 1.0, observed=y)
    return model


def exact_log_z(y, slope: bool) -> float:
    design = np.column_stack([np.ones(N_OBS), X] if slope else [np.ones(N_OBS)])
    scales = np.diag([1.0, SLOPE_SD**2] if slope else [1.0])
    return float(stats.multivariate_normal(np.zeros(N_OBS), np.eye(N_OBS) + design @ scales @ design.T).logpdf(y))


@pytest.fixture(scope="module")
def models():
    return {"intercept": gaussian_model(False), "slope": gaussian_model(True)}


@pytest.fixture(scope="module")
def calibrated(models):
    return calibrate_bayes_factors(models, n_sims=16, random_seed=2024, progressbar=False)


def test_groups_dims_and_attrs(calibrated):
    assert isinstance(calibrated, BayesFactorCalibration) and is_inference_data(calibrated)
    sims = get_group(calibrated, "simulations")
    assert dict(sims.sizes) == {"simulation": 16, "model": 2}
    for name in ("true_model", "log_z", "log_z_se", "log_bf", "log_bf_se", "probability", "reliable", "reason"):
        assert name in sims
    assert set(np.asarray(sims["true_model"]).astype(str)) <= {"intercept", "slope"}
    np.testing.assert_allclose(sims["probability"].sum("model"), 1.0)
    np.testing.assert_array_equal(sims["log_bf"].sel(model="intercept"), 0.0)
    assert get_group(calibrated, "simulated_data")["y"].shape == (16, N_OBS)
    attrs = calibrated.run_attrs
    assert attrs["n_sims"] == 16 and attrs["method"] == "auto" and attrs["wall_time"] > 0
    assert attrs["n_unreliable"] == 0 and attrs["n_used"] == 16 and attrs["partial"] == 0
    assert list(calibrated.summary.index) == ["intercept", "slope"]
    assert "BayesFactorCalibration" in repr(calibrated)


def test_each_log_bayes_factor_matches_the_exact_one(calibrated):
    """Every simulation's log BF within 4 se + 0.01 nat of the closed form (16 independent 4-se checks: all pass with
    probability 0.999 if the se are right); the se are small enough to mean something (< 0.1 nat)."""
    sims = get_group(calibrated, "simulations")
    data = get_group(calibrated, "simulated_data")["y"].values
    exact = np.array([exact_log_z(y, True) - exact_log_z(y, False) for y in data])
    log_bf = sims["log_bf"].sel(model="slope").values
    se = sims["log_bf_se"].sel(model="slope").values
    assert np.all(se < 0.1), se
    assert np.all(np.abs(log_bf - exact) < 4 * se + 0.01), np.c_[log_bf, exact, se]
    # and each log Z on its own
    exact_z0 = np.array([exact_log_z(y, False) for y in data])
    z0 = sims["log_z"].sel(model="intercept").values
    assert np.all(np.abs(z0 - exact_z0) < 4 * sims["log_z_se"].sel(model="intercept").values + 0.01)


def test_data_averaged_probability_is_the_prior(calibrated):
    """|pbar - pi| / se < 3 (the documented test): the Bayes factors are exact to 0.01 nat, so z is N(0, 1)."""
    summary = calibrated.summary
    assert np.all(summary["mean_probability_se"] > 0)
    assert np.all(np.abs(summary["z"]) < 3), summary
    assert calibrated.calibrated
    assert summary["n_true"].sum() == 16
    np.testing.assert_allclose(summary["prior_probability"], 0.5)


def test_models_get_their_data_back(models, calibrated):
    for model in models.values():
        np.testing.assert_array_equal(model["y_data"].get_value(), Y0)


def test_same_seed_same_result_other_seed_other_result(models):
    a = calibrate_bayes_factors(models, n_sims=3, random_seed=7, progressbar=False)
    b = calibrate_bayes_factors(models, n_sims=3, random_seed=7, progressbar=False)
    c = calibrate_bayes_factors(models, n_sims=3, random_seed=8, progressbar=False)
    for name in ("log_z", "log_z_se", "probability"):
        np.testing.assert_array_equal(a["simulations"][name].values, b["simulations"][name].values)
    np.testing.assert_array_equal(a["simulated_data"]["y"].values, b["simulated_data"]["y"].values)
    assert not np.array_equal(a["simulated_data"]["y"].values, c["simulated_data"]["y"].values)


def test_prior_probabilities_set_the_true_models(models):
    """With pi = (0.9, 0.1) most simulations come from the first model; the prior is stored."""
    cal = calibrate_bayes_factors(models, prior_probs={"slope": 0.1, "intercept": 0.9}, n_sims=6, random_seed=5,
                                  progressbar=False)
    np.testing.assert_allclose(cal.summary["prior_probability"], [0.9, 0.1])
    post = cal["simulations"]["probability"].values
    log_z = cal["simulations"]["log_z"].values
    odds = np.exp(log_z[:, 1] - log_z[:, 0]) * 0.1 / 0.9
    np.testing.assert_allclose(post[:, 1], odds / (1 + odds))


def test_constant_observed_data_is_a_clear_error(models):
    with pm.Model() as constant:
        mu = pm.Normal("a", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=Y0)
    with pytest.raises(ModelSpecificationError, match=r"constant.*pm\.Data"):
        calibrate_bayes_factors({"intercept": models["intercept"], "constant": constant}, n_sims=2)


def test_model_without_free_variable_and_bad_arguments(models):
    with pm.Model() as fixed:
        pm.Normal("y", 0.0, 1.0, observed=pm.Data("y_data", Y0))
    with pytest.raises(ModelSpecificationError, match="no free variable"):
        calibrate_bayes_factors({"fixed": fixed, "slope": models["slope"]}, n_sims=2)
    with pytest.raises(TypeError, match="unknown option"):
        calibrate_bayes_factors(models, n_sims=2, not_an_option=3)
    with pytest.raises(ValueError, match="sum to 1"):
        calibrate_bayes_factors(models, n_sims=2, prior_probs=[0.5, 0.6])
    with pytest.raises(TypeError, match="two or more"):
        calibrate_bayes_factors({"one": models["slope"]}, n_sims=2)
    with pytest.raises(ValueError, match="n_sims"):
        calibrate_bayes_factors(models, n_sims=1)


def test_failed_and_unreliable_runs_are_flagged_not_dropped(models, monkeypatch):
    real = calibration.evidence
    calls = []

    def flaky(model, **kwargs):
        calls.append(kwargs["random_seed"])
        if len(calls) == 2:
            raise ValueError("simulated failure")
        return real(model, **kwargs)

    monkeypatch.setattr(calibration, "evidence", flaky)
    with pytest.warns(UserWarning, match="1 of 6 evidence results were unreliable or failed"):
        cal = calibrate_bayes_factors(models, n_sims=3, random_seed=1, progressbar=False)
    sims = cal["simulations"]
    assert not bool(sims["reliable"].values[0, 1]) and str(sims["reason"].values[0, 1]).startswith("failed")
    assert np.isnan(sims["probability"].values[0]).all()
    assert cal.run_attrs["n_failed"] == 1 and cal.run_attrs["n_used"] == 2 and cal.n_unreliable == 1
    assert calls[0][1:] == [0, 0] and calls[3][1:] == [1, 1]  # seeds [seed_base, simulation, model]


def test_data_restored_on_error_and_partial_result_on_ctrl_c(models, monkeypatch):
    real = calibration.evidence
    calls = []

    def interrupted(model, **kwargs):
        calls.append(1)
        if len(calls) == 3:  # during the second simulation
            raise KeyboardInterrupt
        return real(model, **kwargs)

    monkeypatch.setattr(calibration, "evidence", interrupted)
    with pytest.warns(UserWarning, match="interrupted after 1 of 4"):
        cal = calibrate_bayes_factors(models, n_sims=4, random_seed=1, progressbar=False)
    assert cal.n_sims == 1 and cal.run_attrs["partial"] == 1
    for model in models.values():
        np.testing.assert_array_equal(model["y_data"].get_value(), Y0)

    def broken(model, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(calibration, "evidence", broken)
    with pytest.raises(KeyboardInterrupt):
        calibrate_bayes_factors(models, n_sims=2, random_seed=1, progressbar=False)
    for model in models.values():
        np.testing.assert_array_equal(model["y_data"].get_value(), Y0)


def test_calibration_curve_and_plot(calibrated):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = calibration_curve(calibrated, "slope", n_bins=5)
    assert curve["n"].sum() == 16
    assert np.all((curve["frequency"] >= 0) & (curve["frequency"] <= 1)) and np.all(curve["frequency_se"] >= 0)
    axes = plot_bayes_factor_calibration(calibrated, n_bins=5)
    assert len(axes) == 2 and axes[0].get_title() and axes[1].get_ylabel() == "model probability"
    plt.close("all")
