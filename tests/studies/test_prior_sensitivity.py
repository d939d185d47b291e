"""Prior sensitivity by reweighting posterior draws, against closed forms (pmz.prior_sensitivity).

Truths: the normal-mean model's evidence ``y ~ N(m 1, s^2 I + t^2 1 1')`` for any prior ``mu ~ N(m, t^2)``, and a
linear regression's ``y ~ N(0, s^2 I + X diag(t^2) X')`` for any independent normal priors of the coefficients.
Bounds: ``|estimate - truth| < 4 se + 0.005`` with ``se < 0.05`` (an error bar small enough to mean something).
"""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import stats

import pmz
from pmz.model.inspection import observed_values
from pmz.plots.sensitivity import plot_prior_sensitivity
from pmz.studies.prior_sensitivity import AS_FITTED, bayes_factor_sensitivity, khat_limit, prior_sensitivity
from pmz.systems import normal_mean

ROOT = Path(__file__).resolve().parents[2]


def _normal_mean_truth(y, m, t, s=1.0):
    n = y.size
    return float(stats.multivariate_normal(np.full(n, m), s**2 * np.eye(n) + t**2 * np.ones((n, n))).logpdf(y))


def _regression_truth(X, y, prior_sd, s):
    cov = s**2 * np.eye(y.size) + X @ np.diag(np.asarray(prior_sd, float) ** 2) @ X.T
    return float(stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y))


def _check(row, truth, max_se=0.05, tol=0.005):
    assert row["reliable"], row["reason"]
    assert row["log_z_se"] < max_se
    assert abs(row["log_z"] - truth) < 4 * row["log_z_se"] + tol, (row["log_z"], truth, row["log_z_se"])


@pytest.fixture(scope="module")
def normal_fit():
    system = normal_mean(n_obs=20, prior_sigma=2.0, seed=0)
    res = pmz.evidence(system.model, random_seed=1, progressbar=False)
    return system, observed_values(system.model)["y"], res


ALTERNATIVES = {"sd 1": (0.0, 1.0), "sd 5": (0.0, 5.0), "sd 20": (0.0, 20.0), "mean 1": (1.0, 2.0)}


def test_normal_mean_alternatives_match_exact_log_z(normal_fit):
    system, y, res = normal_fit
    priors = {label: {"mu": pm.Normal.dist(m, t)} for label, (m, t) in ALTERNATIVES.items()}
    table = prior_sensitivity(res, system.model, priors)
    assert list(table.index) == [AS_FITTED, *ALTERNATIVES]
    assert table.loc[AS_FITTED, "log_z"] == res.log_z and table.loc[AS_FITTED, "log_z_se"] == res.log_z_se
    for label, (m, t) in ALTERNATIVES.items():
        _check(table.loc[label], _normal_mean_truth(y, m, t))
        assert table.loc[label, "pareto_k"] < 0.5 and table.loc[label, "ess"] > 500
        assert table.loc[label, "log_z_se"] >= res.log_z_se  # the run's own se is part of it


def test_iid_exact_posterior_draws_isolate_the_monte_carlo_error(normal_fit):
    """The exact log Z (se 0) and iid draws of the exact posterior: the error is the reweighting's alone."""
    system, y, _ = normal_fit
    precision = 1 / 2.0**2 + y.size
    mean, sd = y.sum() / precision, precision**-0.5
    draws = {"mu": np.random.default_rng(3).normal(mean, sd, 4000)}
    priors = {"sd 0.5": {"mu": pm.Normal.dist(0.0, 0.5)}, "shifted": {"mu": pm.Normal.dist(mean + 1.0, 1.0)}}
    table = prior_sensitivity((system.log_z, 0.0), system.model, priors, posterior=draws)
    for label, (m, t) in {"sd 0.5": (0.0, 0.5), "shifted": (mean + 1.0, 1.0)}.items():
        _check(table.loc[label], _normal_mean_truth(y, m, t))
        assert table.loc[label, "log_z_se"] == table.loc[label, "log_ratio_se"]  # se 0 for the run itself


def test_far_or_narrow_alternative_is_flagged_unreliable(normal_fit):
    system, _, res = normal_fit
    priors = {"far": {"mu": pm.Normal.dist(3.0, 0.1)}, "needle": {"mu": pm.Normal.dist(0.3, 0.005)},
              "nowhere": {"mu": pm.Uniform.dist(40.0, 41.0)}}
    table = prior_sensitivity(res, system.model, priors)
    for label in ("far", "needle"):
        row = table.loc[label]
        assert row["pareto_k"] > khat_limit(1024) and not row["reliable"]
        assert row["log_z_se"] == np.inf and "Pareto k-hat" in row["reason"] and "fit the model" in row["reason"]
    row = table.loc["nowhere"]
    assert row["log_z"] == -np.inf and not row["reliable"] and "zero at all" in row["reason"]


def test_log_ratio_terms_in_a_hierarchy():
    """Parents come from each draw: mu ~ N(0, s) replaced by N(1, 2); children of a replaced variable unchanged."""
    from pmz.model import CompiledModel
    from pmz.model.prior_ratio import evaluate, prior_terms_function

    with pm.Model() as model:
        s = pm.HalfNormal("s", 1.0)
        mu = pm.Normal("mu", 0.0, s, shape=3)
        pm.Normal("y", mu.sum(), 1.0, observed=[0.3, 0.1])
    cm = CompiledModel(model)
    rng = np.random.default_rng(0)
    draws = {"s": np.abs(rng.normal(size=40)) + 0.1, "mu": rng.normal(size=(40, 3))}
    fn = prior_terms_function(cm, {"mu": pm.Normal.dist(1.0, 2.0), "s": pm.Exponential.dist(1.0)})
    terms = evaluate(fn, cm.from_constrained(draws), [draws["mu"], draws["s"]])
    np.testing.assert_allclose(terms[:, 0, 0], stats.norm.logpdf(draws["mu"], 0, draws["s"][:, None]).sum(1))
    np.testing.assert_allclose(terms[:, 1, 0], stats.norm.logpdf(draws["mu"], 1, 2).sum(1), rtol=1e-7)
    np.testing.assert_allclose(terms[:, 0, 1], stats.halfnorm.logpdf(draws["s"]))
    np.testing.assert_allclose(terms[:, 1, 1], stats.expon.logpdf(draws["s"]))


def _regression(X, y, prior_sd, s):
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, np.asarray(prior_sd, dtype=np.float64), shape=X.shape[1])
        pm.Normal("y", pm.math.dot(X, beta), np.float64(s), observed=y)
    return model


@pytest.fixture(scope="module")
def regression_pair():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((30, 2))
    y = X @ np.array([0.8, 0.25]) + 0.5 * rng.standard_normal(30)
    m1, m0 = _regression(X, y, [1.0, 1.0], 0.5), _regression(X[:, :1], y, [1.0], 0.5)
    r1 = pmz.evidence(m1, random_seed=2, progressbar=False)
    r0 = pmz.evidence(m0, random_seed=3, progressbar=False)
    return X, y, m1, m0, r1, r0


SCALES = (0.3, 3.0, 10.0)


def test_bayes_factor_sensitivity_against_exact(regression_pair):
    X, y, m1, _, r1, r0 = regression_pair
    priors = {f"sd {t}": {"beta": pm.Normal.dist(0.0, np.array([1.0, t]))} for t in SCALES}
    bf = bayes_factor_sensitivity(prior_sensitivity(r1, m1, priors), r0)
    truth0 = _regression_truth(X[:, :1], y, [1.0], 0.5)
    for t in SCALES:
        row = bf.loc[f"sd {t}"]
        exact = _regression_truth(X, y, [1.0, t], 0.5) - truth0
        assert row["reliable"], row["reason"]
        assert row["log_bf_se"] < 0.05 and abs(row["log_bf"] - exact) < 4 * row["log_bf_se"] + 0.005
    assert bf.loc[AS_FITTED, "log_bf"] == pytest.approx(r1.log_z - r0.log_z)
    assert bf.loc[AS_FITTED, "log_bf_se"] == pytest.approx(np.hypot(r1.log_z_se, r0.log_z_se))


def test_bayes_factor_with_alternatives_on_both_sides(regression_pair):
    """The first coefficient's prior is in both models: both tables have the same labels."""
    X, y, m1, m0, r1, r0 = regression_pair
    t1 = prior_sensitivity(r1, m1, {"wide": {"beta": pm.Normal.dist(0.0, np.array([4.0, 1.0]))}})
    t0 = prior_sensitivity(r0, m0, {"wide": {"beta": pm.Normal.dist(0.0, 4.0)}})
    row = bayes_factor_sensitivity(t1, t0).loc["wide"]
    exact = _regression_truth(X, y, [4.0, 1.0], 0.5) - _regression_truth(X[:, :1], y, [4.0], 0.5)
    assert row["reliable"] and row["log_bf_se"] < 0.05
    assert abs(row["log_bf"] - exact) < 4 * row["log_bf_se"] + 0.005
    with pytest.raises(ValueError, match="different alternatives"):
        bayes_factor_sensitivity(t1, prior_sensitivity(r0, m0, {"other": {"beta": pm.Normal.dist(0.0, 4.0)}}))


class _UnreliableRun:
    log_z, log_z_se, reliable, reliability_reason, method = -27.77, 0.5, False, "bootstrap disagrees", "fake"


def test_unreliable_run_makes_every_row_unreliable(normal_fit):
    system, _, res = normal_fit
    draws = {"mu": np.asarray(res["posterior"]["mu"]).ravel()}
    table = prior_sensitivity(_UnreliableRun(), system.model, {"sd 5": {"mu": pm.Normal.dist(0.0, 5.0)}},
                              posterior=draws)
    assert not table["reliable"].any()
    assert "the run itself is unreliable: bootstrap disagrees" in table.loc["sd 5", "reason"]


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_errors_name_what_is_wrong(normal_fit):
    system, _, res = normal_fit
    with pm.Model() as positive:
        s = pm.HalfNormal("s", 1.0)
        k = pm.Poisson("k", 3.0)
        pm.Normal("y", k, s, observed=[0.5, 1.5])
    draws = {"s": np.full(50, 0.7), "k": np.full(50, 2)}

    def run(model, priors, **kw):
        return prior_sensitivity(kw.pop("result", (0.0, 0.1)), model, priors, **{"posterior": draws, **kw})

    with pytest.raises(ValueError, match="'sigma' in priors\\['a'\\] is not in the model"):
        run(positive, {"a": {"sigma": pm.Normal.dist()}})
    with pytest.raises(ValueError, match="'y' in priors\\['a'\\] is observed"):
        run(positive, {"a": {"y": pm.Normal.dist()}})
    with pytest.raises(ValueError, match="puts mass outside the support of 's'"):
        run(positive, {"a": {"s": pm.Normal.dist(1.0, 1.0)}})
    with pytest.raises(ValueError, match="is continuous but 'k' is discrete"):
        run(positive, {"a": {"k": pm.Normal.dist(1.0, 1.0)}})
    with pytest.raises(ValueError, match="has shape \\(2,\\) but 'mu' has shape \\(\\)"):
        prior_sensitivity(res, system.model, {"a": {"mu": pm.Normal.dist(0.0, 1.0, shape=2)}})
    with pytest.raises(ValueError, match="keeps no posterior draws"):
        prior_sensitivity((0.0, 0.1), system.model, {"a": {"mu": pm.Normal.dist()}})
    with pytest.raises(ValueError, match="run's own prior"):
        prior_sensitivity(res, system.model, {AS_FITTED: {"mu": pm.Normal.dist()}})
    with pytest.raises(TypeError, match="pm.XXX.dist"):
        prior_sensitivity(res, system.model, {"a": {"mu": 3.0}})
    # a narrower support is fine: Gamma for a HalfNormal scale, Poisson for a Poisson
    table = run(positive, {"a": {"s": pm.Gamma.dist(2.0, 2.0), "k": pm.Poisson.dist(2.5)}})
    assert np.isfinite(table.loc["a", "log_z"])


def test_plot_marks_unreliable_rows(normal_fit):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    system, y, res = normal_fit
    scales = [0.005, 0.5, 2.0, 5.0, 20.0]
    table = prior_sensitivity(res, system.model, {f"sd {t}": {"mu": pm.Normal.dist(0.3, t)} for t in scales[:2]}
                              | {f"sd {t}": {"mu": pm.Normal.dist(0.0, t)} for t in scales[2:]})
    x = {AS_FITTED: 2.0} | {f"sd {t}": t for t in scales}
    ax = plot_prior_sensitivity(table, x, truth={f"sd {t}": _normal_mean_truth(y, 0.0, t) for t in scales[2:]},
                                xlabel="prior sd of mu")
    assert ax.get_xscale() == "log" and "unreliable" in " ".join(t.get_text() for t in ax.get_legend().get_texts())
    with pytest.raises(ValueError, match="x has 2 values"):
        plot_prior_sensitivity(table, [1.0, 2.0])
    plt.close("all")


@pytest.mark.slow
def test_bridge_result_needs_the_draws_it_used(normal_fit):
    system, y, _ = normal_fit
    with system.model:
        idata = pm.sample(draws=500, tune=500, chains=2, cores=1, random_seed=4, progressbar=False,
                          compute_convergence_checks=False)
    res = pmz.evidence(system.model, method="bridge", posterior=idata, random_seed=4, progressbar=False)
    priors = {"sd 5": {"mu": pm.Normal.dist(0.0, 5.0)}}
    with pytest.raises(ValueError, match="method='bridge'.*posterior="):
        prior_sensitivity(res, system.model, priors)
    _check(prior_sensitivity(res, system.model, priors, posterior=idata).loc["sd 5"], _normal_mean_truth(y, 0.0, 5.0))


@pytest.mark.slow
def test_notebook_code_runs(tmp_path, monkeypatch):
    """The notebook's code cells, in order, as one script (the docs build executes the notebook itself)."""
    path = ROOT / "docs" / "notebooks" / "prior_sensitivity.md"
    cells = re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", path.read_text(), re.DOTALL | re.MULTILINE)
    code = "\n".join("\n".join(line for line in cell.splitlines() if not line.startswith(":")) for cell in cells)
    monkeypatch.chdir(path.parent)
    import matplotlib

    matplotlib.use("Agg")
    namespace = {"__name__": "__notebook__"}
    exec(compile(code, str(path), "exec"), namespace)  # noqa: S102 - the notebook's own code, as the docs build runs it
    assert isinstance(namespace["bf"], pd.DataFrame) and not namespace["bf"]["reliable"].all()
