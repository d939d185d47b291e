"""Posterior draws from wherever a PyMC user has them: nutpie's own result, pm.sample with nutpie, pm.sample's
``unconstrained_posterior`` group (read as stored, no transform round trip) and bambi models and fits.

The exact cases use ``nig_regression`` (a normal-inverse-gamma regression: sigma2 is log-transformed, log Z exact):
bridge sampling from each kind of draws is within 4 se (+ 0.02) of the truth with se below 0.05. nutpie and bambi
are optional: their tests are skipped where they are not installed (CI installs them on the PyMC 6 stack)."""

import numpy as np
import pymc as pm
import pytest

import pmz
from pmz.inference_data import ARVIZ_1, get_group
from pmz.model.pymc import CompiledModel
from pmz.runners.starts import _value_space_draws, posterior_to_flat
from pmz.systems import nig_regression


@pytest.fixture(scope="module")
def nig():
    return nig_regression(n_obs=40, n_coef=2, seed=3)


def _within(res, truth):
    assert res.reliable, res.reliability_reason
    assert res.log_z_se < 0.05
    assert abs(res.log_z - truth) < 4 * res.log_z_se + 0.02, (res.log_z, res.log_z_se, truth)


def _sample(model, **kwargs):
    with model:
        return pm.sample(500, tune=500, chains=4, cores=1, random_seed=4, progressbar=False,
                         compute_convergence_checks=False, **kwargs)


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_unconstrained_draws_are_read_as_stored(nig):
    """pm.sample with include_transformed: the flat particles are the stored sigma2_log__ values themselves (not
    log(sigma2) recomputed), and bridge sampling from them is right."""
    idata = _sample(nig.model, nuts_sampler="pymc", idata_kwargs={"include_transformed": True})
    cm = CompiledModel(nig.model)
    X, chain = _value_space_draws(cm, idata, "posterior")
    stored = np.asarray(get_group(idata, "posterior")["sigma2_log__"]).reshape(-1)
    assert np.array_equal(X[:, cm.layout.block_of("sigma2").start], stored)
    post = get_group(idata, "posterior")
    constrained = {k: np.asarray(post[k]).reshape(2000, *post[k].shape[2:]) for k in ("beta", "sigma2")}
    assert np.allclose(X, posterior_to_flat(cm, constrained)[0], atol=1e-8)  # the round trip: the same points
    _within(pmz.evidence(nig.model, method="bridge", posterior=idata, random_seed=1, progressbar=False), nig.log_z)


def test_draws_without_value_names_take_the_constrained_path(nig):
    cm = CompiledModel(nig.model)
    draws = {"beta": np.zeros((30, 2)), "sigma2": np.ones(30)}
    assert _value_space_draws(cm, draws, "posterior") is None


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
@pytest.mark.skipif(not ARVIZ_1, reason="nutpie returns ArviZ 1 DataTrees; PyMC 6 stack")
def test_nutpie_draws(nig):
    """nutpie's own result (nutpie.sample on a compiled PyMC model) and pm.sample(nuts_sampler='nutpie') with the
    unconstrained_posterior group: both accepted, both right."""
    nutpie = pytest.importorskip("nutpie")
    compiled = nutpie.compile_pymc_model(nig.model)
    trace = nutpie.sample(compiled, draws=500, tune=500, chains=4, seed=2, progress_bar=False)
    _within(pmz.evidence(nig.model, method="bridge", posterior=trace, random_seed=1, progressbar=False), nig.log_z)
    idata = _sample(nig.model, nuts_sampler="nutpie", idata_kwargs={"include_transformed": True})
    assert get_group(idata, "unconstrained_posterior") is not None
    _within(pmz.evidence(nig.model, method="bridge", posterior=idata, random_seed=1, progressbar=False), nig.log_z)


# ---------------------------------------------------------------------------------------------------- bambi


@pytest.fixture(scope="module")
def bambi_case():
    """The issue's case: ``y ~ x + z`` with predictors whose means are far from 0, so that bambi's reported
    intercept (for the predictors as given) differs from its PyMC model's (for centred predictors)."""
    bmb = pytest.importorskip("bambi")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 300
    data = pd.DataFrame({"x": rng.normal(2, 1, n), "z": rng.normal(-1, 2, n)})
    data["y"] = 0.5 + 0.3 * data.x + 0.1 * data.z + rng.normal(0, 1, n)
    model = bmb.Model("y ~ x + z", data)  # not built: pmz builds it
    fit = model.fit(draws=500, tune=500, chains=4, random_seed=1, progressbar=False)
    with model.backend.model:
        own = pm.sample(500, tune=500, chains=4, cores=1, random_seed=2, progressbar=False, nuts_sampler="pymc",
                        compute_convergence_checks=False)
    return model, fit, own


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_bambi_model_and_its_fit(bambi_case):
    """pmz.evidence takes the bambi model (built or not); its fit's draws are mapped onto the PyMC model's own
    variables and agree with bridge sampling from pm.sample on that model (before: 16 se off, reliable)."""
    model, fit, own = bambi_case
    reference = pmz.evidence(model.backend.model, method="bridge", posterior=own, random_seed=1, progressbar=False)
    assert reference.reliable and reference.log_z_se < 0.05
    mapped = pmz.evidence(model, method="bridge", posterior=fit, random_seed=1, progressbar=False)
    assert mapped.reliable, mapped.reliability_reason
    assert mapped.log_z_se < 0.05
    assert abs(mapped.log_z - reference.log_z) < 4 * np.hypot(mapped.log_z_se, reference.log_z_se) + 0.02


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_bambi_fit_on_the_pymc_model_is_flagged(bambi_case):
    """The same draws given with the PyMC model (pmz cannot know they are reported for uncentred predictors):
    flagged unreliable, the reason names the Intercept and points to passing the bambi model."""
    model, fit, _ = bambi_case
    with pytest.warns(UserWarning):
        res = pmz.evidence(model.backend.model, method="bridge", posterior=fit, random_seed=1, progressbar=False)
    assert not res.reliable
    assert "Intercept sits about" in res.reliability_reason
    assert "bambi" in res.reliability_reason


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_bambi_results_compare(bambi_case):
    """pmz.compare of two bambi models' results (the default method), the second without z."""
    bmb = pytest.importorskip("bambi")
    model, _, _ = bambi_case
    smaller = bmb.Model("y ~ x", model.data)
    table = pmz.compare({"y ~ x + z": pmz.evidence(model, random_seed=3, progressbar=False),
                         "y ~ x": pmz.evidence(smaller, random_seed=3, progressbar=False)})
    assert set(table.index) == {"y ~ x + z", "y ~ x"}
    assert np.all(np.isfinite(table["log_bf"])) and table["reliable"].all()
