"""pmz's PyMC step methods (SimulatedTempering, WangLandau) and the trace estimators tempered_evidence /
tempered_weights.

Statistical tests on the conjugate normal-mean model (exact log evidence and exact posterior), fixed seeds. Each
bound is 4 standard errors (plus a small tolerance) of a quantity the run reports, with a cap on that se; the
se of log Z is a jackknife over 20 batches, so its z-score is about t(19), beyond 4 with probability 8e-4.
"""


import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from pymc.step_methods.compound import Competence

import pmz
from pmz.step_methods import SimulatedTempering, WangLandau, tempered_evidence, tempered_weights
from pmz.inference_data import RESULT_BASE, build, get_group

pytestmark = pytest.mark.usefixtures("quiet_pymc")  # pm.sample's INFO lines off (tests/conftest.py)

SEED = 20261122
N_TEMPS = 15
K = N_TEMPS + 1
SAMPLE = dict(progressbar=False, compute_convergence_checks=False)


@pytest.fixture(scope="module")
def system():
    return pmz.systems.normal_mean()


@pytest.fixture(scope="module")
def exact_posterior(system):
    """Conjugate posterior of mu for normal_mean's defaults: mu ~ N(0, 2^2), y_i ~ N(mu, 1)."""
    y = np.asarray(system.model.rvs_to_values[system.model["y"]].eval())
    prior_mu, prior_sd, sigma = 0.0, 2.0, 1.0
    precision = 1 / prior_sd**2 + y.size / sigma**2
    mean = (prior_mu / prior_sd**2 + y.sum() / sigma**2) / precision
    return mean, precision**-0.5


@pytest.fixture(scope="module")
def st_idata(system):
    with system.model:
        step = SimulatedTempering(n_temps=N_TEMPS)
        return pm.sample(draws=1000, tune=1000, chains=2, cores=1, step=step, random_seed=SEED, **SAMPLE)


def test_rts_matches_exact_log_z(st_idata, system):
    """Within 4 jackknife se (+0.05) of the exact log Z: fails with probability below 8e-4 (t(19) beyond 4). The
    guesses are tuned, so the level marginal is far inside the 0.5 / K warning threshold (max gap 0.001-0.007
    against 0.031 on seeds 1-7): no warning."""
    est = tempered_evidence(st_idata)
    assert abs(est.log_z - system.log_z) < 4 * est.log_z_se + 0.05, (est.log_z, system.log_z, est.log_z_se)
    assert 0 < est.log_z_se < 0.2
    assert est.diagnostics["n_chains"] == 2 and est.diagnostics["n_groups"] == 20
    assert est.diagnostics["max_gap"] < 0.5 / K  # tuned guesses: every level visited about 1/K of the time
    assert not est.warnings


def test_tempered_evidence_returns_an_evidence_result(st_idata):
    """The result type of pmz.evidence, with the run's settings; a level marginal far from the prior over levels
    (the trace's q(k | x) mixed half and half with a point mass at level 0) gives a warning that is issued and kept,
    and makes the result unreliable (pmz.reliability's level_marginal)."""
    est = tempered_evidence(st_idata)
    assert isinstance(est, pmz.EvidenceResult) and est.method == "rts" and est.reliable
    attrs = est.run_attrs
    assert (attrs["n_levels"], attrs["n_chains"], attrs["n_draws"]) == (K, 2, 1000)
    assert attrs["estimator"] == "rts_from_draws" and "n_batches_per_chain" in attrs["options"]
    assert est.diagnostics["log_z_k"].shape == (K,)
    stats = get_group(st_idata, "sample_stats")
    point = xr.zeros_like(stats["rb_probs"])
    point[..., 0] = 1.0
    skewed = build(RESULT_BASE, {"sample_stats": stats.assign(rb_probs=0.5 * stats["rb_probs"] + 0.5 * point)})
    with pytest.warns(UserWarning, match="level marginal is far from the prior"):
        far = tempered_evidence(skewed)
    assert any("level marginal" in w for w in far.warnings)
    assert not far.reliable and "did not spread over the ladder" in far.reliability_reason


def test_tempered_weights_give_the_exact_posterior_mean(st_idata, exact_posterior):
    """MCSE of the self-normalised mean m = sum w_i h_i by the delta method, m - E[h] ~= mean_i g_i with
    g_i = N w_i (h_i - m): MCSE = sd(g) / sqrt(ESS(g)), ESS from arviz (autocorrelation within chains).

    The 4-MCSE bound fails with probability about 6e-5; the spread and the Kish ESS (about 1000) lie far inside
    their ranges (sd ratio within 0.05 of 1, ESS 940-1050 on seeds 1-7)."""
    w = tempered_weights(st_idata)
    assert w.dims == ("chain", "draw") and w.shape == (2, 1000)
    assert np.all(w >= 0) and np.isclose(float(w.sum()), 1.0)
    mu = st_idata.posterior["mu"]
    mean = float((w * mu).sum())
    g = w.size * w * (mu - mean)
    mcse = float(az.mcse(xr.Dataset({"g": g}), method="mean")["g"])
    exact_mean, exact_sd = exact_posterior
    assert abs(mean - exact_mean) < 4 * mcse, (mean, exact_mean, mcse)
    assert mcse < 0.1 * exact_sd  # the weighted draws are worth hundreds of posterior draws
    # a loose sanity check of the spread (no error bar computed for it)
    sd = float(np.sqrt((w * (mu - mean) ** 2).sum()))
    assert abs(sd / exact_sd - 1) < 0.15
    assert 200 < w.attrs["ess_kish"] < 2000


def test_non_finite_densities_make_the_trace_unreliable(st_idata):
    """The steps record how often the model's log density was NaN or +inf (cumulative counts): +inf at any time, or
    NaN during the kept draws, makes tempered_evidence unreliable with the count; NaN met only before the kept draws
    (a pilot in the prior's tail) is no verdict."""
    stats = get_group(st_idata, "sample_stats")
    assert int(stats["nan_evals"].max()) == 0 and int(stats["posinf_evals"].max()) == 0
    assert tempered_evidence(st_idata).reliable
    rising = xr.DataArray(np.cumsum(np.ones(stats["nan_evals"].shape, dtype=np.int64), axis=1) // 100,
                          dims=stats["nan_evals"].dims)
    cases = {"NaN at": stats.assign(nan_evals=rising), "+inf at": stats.assign(posinf_evals=rising * 0 + 3)}
    for words, bad in cases.items():
        with pytest.warns(UserWarning, match="log density was"):
            res = tempered_evidence(build(RESULT_BASE, {"sample_stats": bad}))
        assert not res.reliable and words in res.reliability_reason
    before = stats.assign(nan_evals=rising * 0 + 7)  # constant during the kept draws
    assert tempered_evidence(build(RESULT_BASE, {"sample_stats": before})).reliable


def test_stats_exist_with_the_right_shapes(st_idata):
    """Shapes and bookkeeping; the two stochastic checks are far from their bounds on every seed: the top level is
    visited about 1/K of 2000 draws, and the step size is tuned to a mean acceptance of about 0.8 (0.81-0.83 on
    seeds 1-7, bounds 0.6 and 0.95)."""
    ss = st_idata.sample_stats
    for name in ("rb_probs", "log_zhat", "log_prior"):
        assert ss[name].shape == (2, 1000, K), name
    for name in ("beta", "level", "log_weight", "accept", "step_size"):
        assert ss[name].shape == (2, 1000), name
    rb = ss["rb_probs"].values
    assert np.allclose(rb.sum(axis=-1), 1.0)
    level = ss["level"].values
    assert level.dtype.kind == "i" and level.min() >= 0 and level.max() == K - 1
    betas = pmz.families.schedules.make_schedule("power", N_TEMPS)
    assert np.array_equal(ss["beta"].values, betas[level])
    assert np.allclose(ss["log_prior"].values, -np.log(K))
    lz = ss["log_zhat"].values
    assert np.all(lz[..., 0] == 0)
    assert np.all(lz == lz[:, :1])  # frozen after tuning
    assert not np.array_equal(lz[0, 0], lz[1, 0])  # each chain ran its own pilot and adaptation
    expected = np.log(rb[..., -1]) + np.log(K) + lz[..., -1]
    assert np.allclose(ss["log_weight"].values, expected)
    accept = ss["accept"].values
    assert np.all((accept >= 0) & (accept <= 1)) and 0.6 < accept.mean() < 0.95
    # after tuning each level keeps one step size
    step = ss["step_size"].values[0]
    moved_at = np.concatenate([[level[0, 0]], level[0, :-1]])  # (the first one's level was set in tuning)
    for k in range(K):
        assert np.unique(step[1:][moved_at[1:] == k]).size <= 1


def _short_run(system, seed, cores=1, **kwargs):
    with system.model:
        return pm.sample(
            draws=60,
            tune=60,
            chains=2,
            cores=cores,
            step=SimulatedTempering(n_temps=8),
            random_seed=seed,
            **SAMPLE,
            **kwargs,
        )


def _same_run(a, b):
    stats = ("rb_probs", "log_zhat", "level", "accept", "log_weight")
    return np.array_equal(a.posterior["mu"].values, b.posterior["mu"].values) and all(
        np.array_equal(a.sample_stats[n].values, b.sample_stats[n].values) for n in stats
    )


def test_reproducible_with_the_same_seed(system):
    first, again, other = _short_run(system, 7), _short_run(system, 7), _short_run(system, 8)
    assert _same_run(first, again)
    assert not _same_run(first, other)


@pytest.mark.slow  # starts fresh processes (each imports PyMC)
def test_two_processes_give_the_same_draws(system):
    """cores=2: each process starts its chain from the same per-chain generator as cores=1 does."""
    assert _same_run(_short_run(system, 11), _short_run(system, 11, cores=2))


@pytest.mark.slow
def test_spawned_processes_unpickle_the_step(system):
    """With the "spawn" start method the step is pickled; the compiled model is rebuilt in each process
    (about 15 s: two fresh interpreters import PyMC)."""
    assert _same_run(_short_run(system, 12), _short_run(system, 12, cores=2, mp_ctx="spawn"))


def test_wang_landau(system):
    """Within 4 jackknife se (+0.1) of the exact log Z: fails with probability below 8e-4 (t(19) beyond 4)."""
    with system.model:
        step = WangLandau(n_temps=N_TEMPS)
        idata = pm.sample(draws=1000, tune=1000, chains=2, cores=1, step=step, random_seed=SEED, **SAMPLE)
    est = tempered_evidence(idata)
    assert abs(est.log_z - system.log_z) < 4 * est.log_z_se + 0.1, (est.log_z, system.log_z, est.log_z_se)
    assert 0 < est.log_z_se < 0.2
    lz = idata.sample_stats["log_zhat"].values
    assert np.all(lz[..., 0] == 0) and np.all(np.isfinite(lz))
    assert not np.all(lz == lz[:, :1])  # the weights keep adapting while sampling
    assert step.one_over_t_from > 0  # the 1/t rule is on (at the latest when tuning ended)
    w = tempered_weights(idata, estimate=est)
    assert np.isclose(float(w.sum()), 1.0) and w.attrs["ess_kish"] > 200


def test_discrete_model_is_refused():
    with pm.Model():
        pm.Normal("mu")
        pm.Bernoulli("z", 0.5)
        with pytest.raises(ValueError, match="discrete"):
            SimulatedTempering()
        with pytest.raises(ValueError, match="discrete"):
            WangLandau()


def test_all_free_variables_are_required():
    with pm.Model():
        mu = pm.Normal("mu")
        sigma = pm.HalfNormal("sigma")
        pm.Normal("y", mu, sigma, observed=[0.1, -0.3])
        with pytest.raises(ValueError, match="ALL free variables"):
            SimulatedTempering(vars=[mu])
        with pytest.raises(ValueError, match="blocked=False"):
            SimulatedTempering(blocked=False)
        SimulatedTempering(vars=[mu, sigma])  # all of them: fine


def test_bad_options_and_competence(system):
    with system.model:
        with pytest.raises(ValueError, match="level_move"):
            SimulatedTempering(level_move="swap")
        with pytest.raises(ValueError, match="log_zhat"):
            SimulatedTempering(n_temps=4, log_zhat=np.zeros(4))
        with pytest.raises(ValueError, match="flatness"):
            WangLandau(wl_flatness=1.5)
    var = system.model.value_vars[0]
    assert SimulatedTempering.competence(var, True) == Competence.INCOMPATIBLE
    assert WangLandau.competence(var, True) == Competence.INCOMPATIBLE


def test_rts_needs_a_tempering_trace(system, st_idata):
    with system.model:
        idata = pm.sample(draws=20, tune=20, chains=1, step=pm.Metropolis(), random_seed=1, **SAMPLE)
    with pytest.raises(ValueError, match="SimulatedTempering"):
        tempered_evidence(idata)
    with pytest.raises(ValueError, match="n_batches_per_chain"):
        tempered_evidence(st_idata, n_batches_per_chain=0)
