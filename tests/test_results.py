"""EvidenceResult (DataTree on ArviZ 1, InferenceData on ArviZ 0.2x), netcdf round trip, compare and bayes_factor."""

import arviz as az
import numpy as np
import pytest
import xarray as xr

import pmz
from pmz.inference_data import ARVIZ_1, RESULT_BASE, build
from pmz.records import EvidenceEstimate
from pmz.results import make_result


@pytest.fixture(scope="module")
def result():
    system = pmz.systems.normal_mean()
    return pmz.evidence(system.model, method="ais", random_seed=7, progressbar=False, n_paths=64, n_temps=20)


def test_result_is_inference_data(result):
    assert isinstance(result, RESULT_BASE)
    assert isinstance(result, xr.DataTree) == ARVIZ_1
    assert isinstance(result.log_z, float) and isinstance(result.log_z_se, float)
    assert result.method == "ais"
    summary = az.summary(result, group="evidence", round_to="none")
    assert summary.loc["log_z", "mean"] == pytest.approx(result.log_z, abs=1e-9)
    assert summary.loc["log_z", "sd"] == pytest.approx(result.log_z_se, rel=0.01)
    # the draws describe the estimate, they are not samples of the run: no ess or r_hat to mistake for the run's
    for column in ("ess_bulk", "ess_tail", "r_hat", "mcse_mean"):
        assert np.isnan(summary.loc["log_z", column]), column
    assert "posterior" not in result.group_names()  # AIS draws no posterior sample of the model's variables
    text = repr(result)
    assert "log Z" in text and f"{result.log_z:.4f}" in text


def test_netcdf_round_trip(result, tmp_path):
    path = tmp_path / "res.nc"
    result.to_netcdf(str(path))
    back = pmz.load(str(path))
    assert isinstance(back, pmz.EvidenceResult)
    assert back.log_z == result.log_z and back.log_z_se == result.log_z_se and back.method == result.method
    assert set(back.group_names()) == set(result.group_names())
    np.testing.assert_array_equal(back.work["work_forward"].values, result.work["work_forward"].values)
    assert back.run_attrs["pmz_version"] == pmz.__version__


def test_load_rejects_foreign_files(tmp_path):
    path = tmp_path / "other.nc"
    posterior = xr.Dataset({"x": (("chain", "draw"), np.zeros((1, 5)))})
    build(RESULT_BASE, {"posterior": posterior}).to_netcdf(str(path))
    with pytest.raises(ValueError, match="EvidenceResult"):
        pmz.load(str(path))


def test_arviz_posterior_plot(result):
    """ArviZ's own posterior plot draws the log Z draws (plot_dist on ArviZ 1, plot_posterior on ArviZ 0.2x)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if ARVIZ_1:
        az.plot_dist(result, group="evidence")
    else:
        az.plot_posterior(result, group="evidence")
    assert plt.gcf().axes
    plt.close("all")


def test_normal_draws_reproduce_estimate():
    est = EvidenceEstimate(log_z=-3.0, log_z_se=0.25, method="test")
    res = make_result(est)
    draws = res.evidence["log_z"].values
    assert draws.shape == (4000, 1)
    assert draws.mean() == pytest.approx(-3.0, abs=1e-12)
    assert draws.std() == pytest.approx(0.25, rel=0.01)


def _fake(log_z, se, method="ais"):
    return make_result(EvidenceEstimate(log_z=log_z, log_z_se=se, method=method))


def test_bayes_factor_propagates_se():
    bf = pmz.bayes_factor(_fake(-10.0, 0.3), _fake(-12.0, 0.4))
    assert bf.log_bf == pytest.approx(2.0)
    assert bf.log_bf_se == pytest.approx(0.5)
    assert bf.bf == pytest.approx(np.exp(2.0))
    assert pmz.bayes_factor((-1.0, 0.0), (-1.0, 0.0)).log_bf == 0.0


def test_compare_table():
    table = pmz.compare({"a": _fake(-12.0, 0.4), "b": _fake(-10.0, 0.3), "c": _fake(-15.0, 0.1)})
    assert list(table.index) == ["b", "a", "c"]
    assert list(table["rank"]) == [0, 1, 2]
    assert table.loc["b", "log_bf"] == 0.0 and table.loc["b", "log_bf_se"] == 0.0
    assert table.loc["a", "log_bf"] == pytest.approx(-2.0)
    assert table.loc["a", "log_bf_se"] == pytest.approx(0.5)
    p = np.exp([-12.0, -10.0, -15.0])
    p /= p.sum()
    assert table.loc["a", "probability"] == pytest.approx(p[0])
    assert table["probability"].sum() == pytest.approx(1.0)
    assert set(table.columns) >= {"log_z", "log_z_se", "log_bf", "log_bf_se", "probability", "method"}


def test_compare_with_prior_and_errors():
    res = {"a": _fake(-1.0, 0.1), "b": _fake(-1.0, 0.1)}
    table = pmz.compare(res, prior={"a": 0.75, "b": 0.25})
    assert table.loc["a", "probability"] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="sum to 1"):
        pmz.compare(res, prior={"a": 0.5, "b": 0.6})
    with pytest.raises(ValueError, match="no probability"):
        pmz.compare(res, prior={"a": 1.0})
    with pytest.raises(TypeError, match="EvidenceResult"):
        pmz.compare({"a": "not a result"})
    with pytest.raises(ValueError, match="at least one"):
        pmz.compare({})
    with pytest.raises(ValueError, match="cannot be negative.*'b'"):  # a negative se is no error bar
        pmz.compare({"a": (-1.0, 0.1), "b": (-2.0, -0.1)})
    with pytest.raises(ValueError, match="cannot be negative"):
        pmz.bayes_factor(_fake(-1.0, -0.2), (-2.0, 0.1))
