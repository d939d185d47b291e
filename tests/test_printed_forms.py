"""What a user reads: the printed result, advice that runs when followed, the reason's first clause."""

import numpy as np
import pymc as pm
import pytest

import pmz
from pmz.model.pymc import ModelSpecificationError


def _flat_model():
    y = np.array([0.3, -0.2, 0.9, 0.4, 0.1])
    with pm.Model() as model:
        mu = pm.Flat("mu")
        pm.Normal("y", mu, 1.0, observed=y)
    return model, y


def test_flat_prior_bridge_advice_runs():
    """method='bridge' on a pm.Flat prior used to advise method='bar', which refused the same prior. The advice
    now names what runs (bar from a Laplace reference), and following it gives log Z relative to the flat prior's
    unit scale: int prod N(y_i | mu, 1) dmu, exact."""
    model, y = _flat_model()
    with pytest.raises(ModelSpecificationError, match=r"improper prior on \['mu'\].*method='bar' with "
                                                      r"reference='laplace'"):
        pmz.evidence(model, method="bridge", random_seed=1, progressbar=False)
    res = pmz.evidence(model, method="bar", reference="laplace", random_seed=1, progressbar=False)
    n = y.size
    exact = -0.5 * (n - 1) * np.log(2 * np.pi) - 0.5 * np.log(n) - 0.5 * np.sum((y - y.mean()) ** 2)
    assert res.log_z_se < 0.05
    assert abs(res.log_z - exact) < 4 * res.log_z_se + 0.02


def test_printed_result_says_what_and_why():
    """str(res): the method and route, the value with "nats" and what it is, why the route ran, the time."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        pm.Normal("y", mu, 1.0, observed=[0.3, -0.1, 0.8])
    res = pmz.evidence(model, random_seed=1, progressbar=False)
    text = str(res)
    assert text.startswith("EvidenceResult  method='auto' route=")
    assert "log marginal likelihood in nats" in text
    assert "why this route:" in text
    assert "wall time" in text
    assert "UNRELIABLE" not in text
    # ArviZ: the estimate in the evidence group (mean = log Z, sd = se), with no ess or r_hat of synthetic draws
    # to pass for the run's diagnostics; the posterior group is the model's own draws, as from pm.sample
    import arviz as az

    summary = az.summary(res, group="evidence", round_to="none")
    assert list(summary.index) == ["log_z"]
    assert summary.loc["log_z", "mean"] == pytest.approx(res.log_z, abs=1e-9)
    assert summary.loc["log_z", "sd"] == pytest.approx(res.log_z_se, rel=0.01)
    assert summary.loc["log_z", ["ess_bulk", "ess_tail", "r_hat"]].isna().all()
    assert list(az.summary(res).index) == ["mu"]


def test_compare_table_prints_every_column_with_units():
    """pandas hid the middle columns of pmz.compare's table in a narrow terminal (log_bf among them) and
    .round(3) printed every se as 0.000: the table prints every column, each se to two significant digits, and
    says what the numbers are."""
    import pandas as pd

    table = pmz.compare({"a": (-10.0, 0.0003), "b": (-12.5, 0.0004)})
    assert list(table.columns[:4]) == ["rank", "log_bf", "log_bf_se", "probability"]
    with pd.option_context("display.width", 40, "display.max_columns", 3):
        text = repr(table)
    for column in table.columns:
        assert column in text
    assert "0.0003" in text and "0.0005" in text  # the se of log Z and of log BF (sqrt(3^2 + 4^2) = 5, x 1e-4)
    assert "-2.500" in text and "log marginal likelihood" in text and "nats" in text
    assert isinstance(table[["log_bf"]], pd.DataFrame)  # still a DataFrame for everything else


def test_bayes_factor_in_arviz_stats_naming():
    """arviz-stats reports a Bayes factor along bf_type = BF10, BF01; pmz's BayesFactor can too."""
    bf = pmz.bayes_factor((-10.0, 0.3), (-12.0, 0.4))
    ds = bf.to_dataset()
    assert list(ds["bf_type"].values) == ["BF10", "BF01"]
    assert ds["bf"].sel(bf_type="BF10") == pytest.approx(np.exp(2.0))
    assert ds["bf"].sel(bf_type="BF01") == pytest.approx(np.exp(-2.0))
    assert ds["log_bf_se"].values == pytest.approx([0.5, 0.5])


def test_progress_in_a_log_has_no_repeats(capsys):
    """Progress written to a log (stderr not a terminal): every update was printed twice, the label gained a second
    colon, and the auto bar read "10/100". Now one line per change, percent, no doubled colon."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        pm.Normal("y", mu, 1.0, observed=[0.3, -0.1, 0.8])
    pmz.evidence(model, random_seed=1, progressbar=True)
    lines = [line.strip() for line in capsys.readouterr().err.replace("\r", "\n").splitlines() if line.strip()]
    bars = [line for line in lines if line.startswith("pmz auto")]
    assert bars, lines
    assert all(a != b for a, b in zip(bars, bars[1:])), bars
    assert not any("/100" in line or ": :" in line for line in bars), bars
    assert all("%|" in line for line in bars)


def test_draws_of_other_data_give_one_warning_and_a_short_reason():
    """Draws of the same model on other data (exact posterior draws of a normal mean): 11 warnings and a
    900-character reason before. Now one warning, and a reason that opens with its cause, names the variable and
    stays short."""
    import warnings

    import xarray as xr

    y, other = np.array([0.3, -0.1, 0.8, 0.5]), np.array([1.9, 2.4, 1.6, 2.2])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        pm.Normal("y", mu, 1.0, observed=y)
    precision = 1 / 4 + other.size
    draws = other.sum() / precision + precision**-0.5 * np.random.default_rng(3).standard_normal((4, 500))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pmz.evidence(model, method="bridge", posterior=xr.Dataset({"mu": (("chain", "draw"), draws)}),
                           random_seed=1, progressbar=False)
    pmz_warnings = [w for w in caught if "pmz" in str(w.message)]
    assert len(pmz_warnings) == 1
    assert not res.reliable
    assert res.reliability_reason.startswith("the posterior draws do not look like draws of this model's posterior: mu")
    assert len(res.reliability_reason) < 700
