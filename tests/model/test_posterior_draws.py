"""pmz.model.posterior_draws: flat posterior draws -> the posterior Dataset, checked against known constrained values,
against ``pm.compute_deterministics`` and against the posterior group of a tiny ``pm.sample`` run of the same model.

One rich model (scalar, vector and matrix variables, log / simplex / ordered transforms, discrete variables,
coords and dims, deterministics of every kind) is compiled once per module and shared.
"""

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from pmz.inference_data import posterior_group
from pmz.model import CompiledModel
from pmz.model.posterior_draws import posterior_dataset, posterior_from_flat

N_CHAINS, N_DRAWS = 3, 4
FREE = ["mu", "s", "th", "W", "w", "o", "k", "b"]
DETERMINISTICS = ["th2", "tot", "WtW", "c", "kb", "resid"]
Y = np.array([0.1, 0.2, 0.3])


@pytest.fixture(scope="module")
def model():
    with pm.Model(coords={"g": ["a", "b", "c"], "unused": [1, 2]}) as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        s = pm.HalfNormal("s", 1.0)
        th = pm.Normal("th", mu, s, dims="g")
        W = pm.Normal("W", 0.0, 1.0, shape=(2, 2))
        pm.Dirichlet("w", np.ones(3))
        pm.Normal("o", 0.0, 3.0, shape=3, transform=pm.distributions.transforms.ordered, initval=[-1.0, 0.0, 1.0])
        k = pm.Poisson("k", 3.0)
        b = pm.Bernoulli("b", 0.3, dims="g")
        y = pm.Normal("y", th, 1.0, observed=Y, dims="g")
        pm.Deterministic("th2", 2.0 * th + k, dims="g")
        pm.Deterministic("tot", th.sum() + W.sum())
        pm.Deterministic("WtW", W.T @ W)
        pm.Deterministic("c", pt.as_tensor(3.0))  # does not depend on the draws
        pm.Deterministic("kb", k + b.sum())  # integer
        pm.Deterministic("resid", y - th, dims="g")  # through an observed variable
    return m


@pytest.fixture(scope="module")
def cm(model):
    return CompiledModel(model)


@pytest.fixture(scope="module")
def values():
    """Known constrained draws, ``(N_CHAINS * N_DRAWS, *shape)`` per variable."""
    rng = np.random.default_rng(20261123)
    n = N_CHAINS * N_DRAWS
    return {
        "mu": rng.normal(size=n),
        "s": rng.gamma(2.0, size=n),
        "th": rng.normal(size=(n, 3)),
        "W": rng.normal(size=(n, 2, 2)),
        "w": rng.dirichlet(np.ones(3), size=n),
        "o": np.sort(rng.normal(size=(n, 3)), axis=1),
        "k": rng.poisson(3.0, size=n),
        "b": rng.integers(0, 2, size=(n, 3)),
    }


@pytest.fixture(scope="module")
def flat(cm, values):
    return cm.from_constrained(values)


@pytest.fixture(scope="module")
def ds(cm, flat):
    return posterior_dataset(cm, flat.reshape(N_CHAINS, N_DRAWS, cm.dim))


def _per_draw(values):
    """``(n, ...)`` -> ``(N_CHAINS, N_DRAWS, ...)`` (row i is chain i // N_DRAWS, draw i % N_DRAWS)."""
    return values.reshape(N_CHAINS, N_DRAWS, *values.shape[1:])


def test_free_variables_are_the_constrained_values(ds, values):
    assert set(ds.data_vars) == set(FREE + DETERMINISTICS)
    for name in FREE:
        np.testing.assert_allclose(ds[name].values, _per_draw(values[name]), rtol=1e-10, atol=1e-12, err_msg=name)
    for name in ("k", "b"):
        assert np.issubdtype(ds[name].dtype, np.integer), name
        np.testing.assert_array_equal(ds[name].values, _per_draw(values[name]))
    assert ds["mu"].dtype == np.float64


def test_deterministics(ds, values):
    th, W, k, b = values["th"], values["W"], values["k"], values["b"]
    expected = {
        "th2": 2.0 * th + k[:, None],
        "tot": th.sum(1) + W.sum((1, 2)),
        "WtW": np.einsum("nji,njk->nik", W, W),
        "c": np.full(len(k), 3.0),
        "kb": k + b.sum(1),
        "resid": Y - th,
    }
    for name, value in expected.items():
        np.testing.assert_allclose(ds[name].values, _per_draw(value), rtol=1e-10, atol=1e-12, err_msg=name)
    assert np.issubdtype(ds["kb"].dtype, np.integer)


def test_dims_and_coords(ds):
    assert ds["mu"].dims == ("chain", "draw")
    assert ds["th"].dims == ds["b"].dims == ds["th2"].dims == ds["resid"].dims == ("chain", "draw", "g")
    assert ds["W"].dims == ("chain", "draw", "W_dim_0", "W_dim_1")
    assert ds["WtW"].dims == ("chain", "draw", "WtW_dim_0", "WtW_dim_1")
    assert ds["w"].dims == ("chain", "draw", "w_dim_0")
    assert list(ds["g"].values) == ["a", "b", "c"]
    np.testing.assert_array_equal(ds["chain"].values, np.arange(N_CHAINS))
    np.testing.assert_array_equal(ds["draw"].values, np.arange(N_DRAWS))
    np.testing.assert_array_equal(ds["W_dim_1"].values, np.arange(2))


def test_matches_pm_sample_posterior(model, ds):
    """Same variables, dims, dtypes and coords as the posterior group ``pm.sample`` writes for the model."""
    with model:
        trace = pm.sample(  # only the layout of its output matters: PyTensor's Python linker, half the compile time
            draws=10,
            tune=10,
            chains=1,
            random_seed=3,
            progressbar=False,
            compute_convergence_checks=False,
            compile_kwargs={"mode": "FAST_COMPILE"},
        )
    post = posterior_group(trace)
    assert set(post.data_vars) == set(ds.data_vars)
    for name in post.data_vars:
        assert ds[name].dims == post[name].dims, name
        assert ds[name].dtype == post[name].dtype, name
    sample_dims = {"chain", "draw"}
    assert set(ds.coords) == set(post.coords)
    for dim in set(post.coords) - sample_dims:
        np.testing.assert_array_equal(ds[dim].values, post[dim].values)
    # a deterministic through an observed variable uses its data, in pm.sample as in pmz
    np.testing.assert_allclose(post["resid"].values, Y - post["th"].values, rtol=1e-12)


def test_matches_pm_compute_deterministics(model, ds):
    """PyMC's own (one call per draw) deterministics agree with the vectorised ones.

    Not ``resid``: ``pm.compute_deterministics`` draws the observed ``y`` at random instead of using its data
    (``pm.sample``'s posterior, and pmz, use the data; checked in the test above).
    """
    theirs = pm.compute_deterministics(ds[FREE], model=model, progressbar=False)
    for name in set(DETERMINISTICS) - {"resid"}:
        np.testing.assert_allclose(ds[name].values, theirs[name].values, rtol=1e-10, atol=1e-12, err_msg=name)
        assert ds[name].dims == theirs[name].dims


def test_arviz_summary_runs(ds):
    with warnings.catch_warnings():  # r-hat of the constant deterministic: 0 / 0
        warnings.simplefilter("ignore", RuntimeWarning)
        summary = az.summary(ds)
    sizes = {name: int(np.prod(ds[name].shape[2:], dtype=int)) for name in ds.data_vars}
    assert len(summary) == sum(sizes.values())
    assert "th[a]" in summary.index and "W[1, 0]" in summary.index


def test_cached_and_blocked(model, values, flat):
    """A second call compiles nothing; batches larger than block_size are evaluated block by block."""
    small = CompiledModel(model, block_size=5)
    first = posterior_dataset(small, flat.reshape(N_CHAINS, N_DRAWS, -1))
    seconds = small.compile_time
    again = posterior_dataset(small, flat.reshape(N_CHAINS, N_DRAWS, -1))
    assert small.compile_time == seconds
    for name in first.data_vars:
        np.testing.assert_array_equal(first[name].values, again[name].values)
    np.testing.assert_allclose(first["th"].values, _per_draw(values["th"]))
    np.testing.assert_allclose(first["WtW"].values, np.einsum("cdji,cdjk->cdik", first["W"], first["W"]))


def test_discrete_sites_are_rounded(cm, ds, flat):
    X = flat.copy()
    X[:, cm.layout.discrete_mask] += 1e-9
    out = posterior_dataset(cm, X, chain_dim=False)
    assert out.sizes["chain"] == 1 and out.sizes["draw"] == N_CHAINS * N_DRAWS
    np.testing.assert_array_equal(out["k"].values.reshape(-1), ds["k"].values.reshape(-1))
    np.testing.assert_array_equal(out["kb"].values.reshape(-1), ds["kb"].values.reshape(-1))


def test_posterior_from_flat_groups_and_trims(cm, flat):
    """Rows labelled by chain in any order; each chain trimmed to the shortest, keeping its last draws."""
    n = len(flat)  # 12 rows: chain 7 gets 5, chain 2 gets 4, chain 9 gets 3
    chain = np.array([7, 2, 9, 7, 2, 9, 7, 2, 9, 7, 2, 7])
    out = posterior_from_flat(cm, flat, chain)
    assert out.sizes["chain"] == 3 and out.sizes["draw"] == 3
    np.testing.assert_array_equal(out["chain"].values, [2, 7, 9])
    rows = np.arange(n)
    expected = np.stack([rows[chain == c][-3:] for c in (2, 7, 9)])
    ref = posterior_dataset(cm, flat[expected])
    for name in out.data_vars:
        np.testing.assert_array_equal(out[name].values, ref[name].values)


def test_no_deterministics_and_dependent_transform(rng):
    """A model without deterministics; a bound that depends on another variable (u ~ Uniform(0, a))."""
    with pm.Model() as m:
        a = pm.HalfNormal("a", 2.0)
        pm.Uniform("u", 0.0, a)
        pm.Normal("v", 0.0, 1.0, shape=2)
    cm = CompiledModel(m)
    a = rng.gamma(2.0, size=6)
    values = {"a": a, "u": a * rng.uniform(size=6), "v": rng.normal(size=(6, 2))}
    out = posterior_dataset(cm, cm.from_constrained(values).reshape(2, 3, cm.dim))
    assert set(out.data_vars) == {"a", "u", "v"}
    assert out["v"].dims == ("chain", "draw", "v_dim_0")
    for name, value in values.items():
        np.testing.assert_allclose(out[name].values, value.reshape(2, 3, *value.shape[1:]), rtol=1e-10)


def test_bad_shapes(cm, flat):
    with pytest.raises(ValueError, match="n_chains, n_draws, dim"):
        posterior_dataset(cm, flat)
    with pytest.raises(ValueError, match="n_draws, dim"):
        posterior_dataset(cm, flat[:, :-1], chain_dim=False)
    with pytest.raises(ValueError, match="one label per row"):
        posterior_from_flat(cm, flat, np.zeros(len(flat) - 1, dtype=int))
