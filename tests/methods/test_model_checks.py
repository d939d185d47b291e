"""Checks of the model and of what is passed in, each asserting the class of the outcome: a clear error (key
phrase), a warning or flag (key phrase), or a correct value within 4 se (plus a small tolerance; a 4-se bound fails
with probability about 6e-5 when the se is right).

1. ordered transforms: prior draws are sorted (exchangeable entries) or rejected (others), and the prior-draw
   methods answer for the renormalised prior (log K! above the density as written);
2. a prior whose log density does not integrate to one (a CustomDist, LKJCholeskyCov on PyMC 5): measured and
   warned about by the methods that start from prior draws;
3. a Categorical with more than 64 classes used as an index: bounded Metropolis moves, exact log Z by enumeration;
4. posterior draws of another model (same names and shapes) given as posterior= (bridge, two-way methods): flagged;
5. Ctrl-C inside pm.sample (bridge) or inside pmz's own loops (every other method): KeyboardInterrupt, not a normal
   return from a fraction of the work;
6. a likelihood that is zero at (nearly) all prior draws: the start error says so and what to do;
7. chunk_size (a memory bound) does not change a seeded result;
8. ``pm.set_data`` to data of another size: compiled again, right.
"""


import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats
from scipy.special import logsumexp

import pmz
from pmz.inference_data import RESULT_BASE, build
from pmz.kernels.gibbs import SiteGibbs
from pmz.model.prior_mass import prior_normalisation
from pmz.model.pymc import CompiledModel, ModelSpecificationError
from pmz.model.reference import PriorReference
from pmz.runners.starts import SamplingInterrupted, check_draws

pytestmark = pytest.mark.filterwarnings("ignore:pmz.*unreliable:UserWarning")  # small runs, judged elsewhere

ORDERED = pm.distributions.transforms.ordered
PYMC_MAJOR = int(pm.__version__.split(".")[0])


# --------------------------------------------------------------------------
# 1. ordered transforms
# --------------------------------------------------------------------------

Y_SUM = np.array([0.8, 1.9, 1.1])
S_MU = 1.5


@pytest.fixture(scope="module")
def ordered_sum():
    """mu (2 iid N(0, 1.5^2) entries, ordered), y_i ~ N(mu_0 + mu_1, 1): symmetric in the entries, so the
    renormalised ordered prior gives the unordered evidence, y ~ N(0, 2 s^2 11' + I) (closed form)."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, S_MU, shape=2, transform=ORDERED, initval=np.array([-0.5, 0.5]))
        pm.Normal("y", mu[0] + mu[1], 1.0, observed=Y_SUM)
    return m


def _log_z_ordered_sum():
    n = Y_SUM.size
    cov = 2 * S_MU**2 * np.ones((n, n)) + np.eye(n)
    return stats.multivariate_normal(np.zeros(n), cov).logpdf(Y_SUM)


def test_ordered_prior_draws_are_sorted_and_finite(ordered_sum):
    cm = CompiledModel(ordered_sum)
    prior = PriorReference(cm)
    X = prior.sample(np.random.default_rng(1), 200)
    assert np.isfinite(X).all()
    mu = cm.to_constrained(X)["mu"]
    assert np.all(np.diff(mu, axis=1) > 0)
    assert prior.sorted_names == ["mu"]


def test_ordered_bar_answers_for_the_renormalised_prior_and_warns(ordered_sum):
    """Before: "the log density is nan at the initial particles ... check the priors' supports, the observed data
    (NaN?)". Now the run starts from sorted draws, matches the closed form and says what the density gives.

    4-se bound on log Z: fails with probability about 6e-5 (se 0.032-0.038 over 3 seeds, cap 0.1). The measured log
    mass of the ordered prior, -log 2, is flagged (beyond 5 of its se and 0.05 nats) and within 0.1 of -log 2 (its
    se is about 0.014: a 7-se bound)."""
    with pytest.warns(UserWarning, match=r"does not integrate to one.*'mu'.*Ordered.*expected -0\.693"):
        res = pmz.evidence(
            ordered_sum, method="bar", random_seed=2, progressbar=False, n_paths=128, n_temps=60, n_bootstrap=20
        )
    truth = _log_z_ordered_sum()
    assert abs(res.log_z - truth) < 4 * res.log_z_se + 0.02
    assert res.log_z_se < 0.1
    assert res.evidence_stats.attrs["prior_unnormalised"] == "mu"
    assert abs(float(res.evidence_stats["prior_log_mass"]) + np.log(2)) < 0.1


def test_ordered_non_exchangeable_prior_is_drawn_by_rejection():
    """Entries with different means: sorting would change the prior; draws that are not ordered are rejected.

    The mean of 300 restricted draws of mu_0 is -2.11 (sd 2.58 / sqrt(300) = 0.15): above -1.3 with probability
    below 1e-7; the measured mass within 4 se + 0.02 of P(mu_0 < mu_1) fails with probability about 6e-5."""
    with pm.Model() as m:
        pm.Normal("mu", mu=[-1.0, 1.0], sigma=3.0, shape=2, transform=ORDERED, initval=np.array([-1.0, 1.0]))
    cm = CompiledModel(m)
    prior = PriorReference(cm)
    assert prior.sorted_names == []
    mu = cm.to_constrained(prior.sample(np.random.default_rng(3), 300))["mu"]
    # rejection keeps the prior restricted to mu_0 < mu_1: mean of mu_0 below that of the unrestricted -1
    assert np.all(np.diff(mu, axis=1) > 0) and mu[:, 0].mean() < -1.3
    (mass,) = prior_normalisation(cm, prior, np.random.default_rng(4))
    exact = np.log(stats.norm.cdf(2.0 / np.sqrt(18.0)))  # P(mu_0 < mu_1)
    assert mass.off and abs(mass.log_mass - exact) < 4 * mass.se + 0.02


def test_ordered_prior_with_almost_no_ordered_draws_names_the_transform():
    with pm.Model() as m:
        pm.Normal("mu", mu=[3.0, 0.0, -3.0], sigma=0.5, shape=3, transform=ORDERED, initval=np.array([-1.0, 0, 1]))
        pm.Normal("y", 0.0, 1.0, observed=[0.1])
    with pytest.raises(ModelSpecificationError, match=r"ordered transform of \['mu'\].*reference='laplace'"):
        pmz.evidence(m, method="ais", progressbar=False, n_paths=8, n_temps=3)


# --------------------------------------------------------------------------
# 2. a prior whose log density does not integrate to one
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def unnormalised():
    """theta with a CustomDist log density -theta^2/2 (a N(0, 1) without its -log sqrt(2 pi)): mass sqrt(2 pi)."""
    with pm.Model() as m:
        theta = pm.CustomDist("theta", logp=lambda v: -0.5 * v**2, dist=lambda size: pm.Normal.dist(0, 1, size=size))
        pm.Normal("y", theta, 1.0, observed=[0.4, 1.0])
    return m


def test_unnormalised_prior_is_measured_and_warned_about(unnormalised):
    """The log mass and log Z each within 4 se (+ 0.02) of the truth: each fails with probability about 6e-5; the
    warning needs a log mass beyond 5 se and 0.05 nats (0.92 nats here, se about 3e-4)."""
    with pytest.warns(UserWarning, match=r"does not integrate to one.*'theta'.*method='ais' starts from exact prior"):
        res = pmz.evidence(unnormalised, method="ais", random_seed=1, progressbar=False, n_paths=64, n_temps=30)
    mass, se = float(res.evidence_stats["prior_log_mass"]), float(res.evidence_stats["prior_log_mass_se"])
    assert abs(mass - 0.5 * np.log(2 * np.pi)) < 4 * se + 0.02
    # the prior-draw answer is the evidence under the normalised prior N(0, 1): y ~ N(0, 11' + I)
    truth = stats.multivariate_normal(np.zeros(2), np.ones((2, 2)) + np.eye(2)).logpdf([0.4, 1.0])
    assert abs(res.log_z - truth) < 4 * res.log_z_se + 0.02


def test_lkj_prior_mass_is_measured():
    """LKJCholeskyCov (n 3, eta 2): its density integrates to about exp(1.231) on PyMC 5 and to 1 on PyMC 6.

    Within 4 se + 0.05 (fails with probability about 6e-5); ``off`` needs beyond 5 se and 0.05 nats (a false flag on
    PyMC 6 has probability below 6e-7, and 1.23 nats is far beyond either on PyMC 5)."""
    with pm.Model() as m:
        pm.LKJCholeskyCov("chol", n=3, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=3), compute_corr=True)
    cm = CompiledModel(m)
    (mass,) = prior_normalisation(cm, PriorReference(cm), np.random.default_rng(5), n_draws=4000)
    expected = 1.230967 if PYMC_MAJOR == 5 else 0.0
    assert abs(mass.log_mass - expected) < 4 * mass.se + 0.05
    assert mass.off == (PYMC_MAJOR == 5)


@pytest.mark.slow  # measures the prior mass of several models, each compiled
def test_normalised_symbolic_priors_pass_the_check():
    """Distributions that are SymbolicRandomVariables or have other transforms but are normalised: no flag (a flag
    needs a log mass beyond 5 se and 0.05 nats: probability below 6e-7 per variable)."""
    with pm.Model() as m:
        pm.HalfCauchy("h", 1.0)
        pm.Truncated("t", pm.Normal.dist(0.0, 1.0), lower=0.5, upper=3.0)
        pm.ZeroSumNormal("z", sigma=2.0, shape=4)
        pm.NormalMixture("nm", w=[0.3, 0.7], mu=[-1.0, 2.0], sigma=[1.0, 0.5])
    cm = CompiledModel(m)
    masses = prior_normalisation(cm, PriorReference(cm), np.random.default_rng(6))
    assert {"z", "nm"} <= {x.name for x in masses}  # others depend on the PyMC version's RV classes
    assert not any(x.off for x in masses), masses


# --------------------------------------------------------------------------
# 3. a Categorical with 100 classes used as an index
# --------------------------------------------------------------------------


def test_categorical_with_100_classes_as_index():
    """Before: IndexError in BatchedTake (C backend) / Numba indexing, from +-1 proposals outside 0..99.

    Within 4 se + 0.05 of the exact log Z by enumeration: fails with probability about 6e-5 (se 0.049-0.062 over 6
    seeds, cap 0.2)."""
    k_classes = 100
    mu = np.linspace(-5.0, 5.0, k_classes)
    y = np.array([0.3, 0.5])
    with pm.Model() as m:
        k = pm.Categorical("k", p=np.ones(k_classes) / k_classes)
        pm.Normal("y", pm.math.constant(mu)[k], 1.0, observed=y)
    res = pmz.evidence(m, method="bar", random_seed=1, progressbar=False, n_paths=64, n_temps=50, n_bootstrap=50)
    truth = logsumexp([stats.norm.logpdf(y, v, 1.0).sum() for v in mu]) - np.log(k_classes)
    assert abs(res.log_z - truth) < 4 * res.log_z_se + 0.05
    assert res.log_z_se < 0.2


def test_bounded_metropolis_never_proposes_outside_the_support():
    """Every proposal stays in 0..99; 60 particles moved 20 times under a flat target spread over far more than 10
    classes (about 45 expected: fewer than 11 has negligible probability)."""
    class Family:  # records every state it is asked to evaluate
        seen = []

        def parts(self, X, grad=False):
            Family.seen.append(X.copy())
            return pmz.families.LogDensityParts(np.zeros(len(X)), np.zeros(len(X)))

    kernel = SiteGibbs([0], [None], bounds=[(0.0, 99.0)])
    x = np.array([[0.0], [99.0], [50.0]] * 20)
    state = pmz.kernels.base.ParticleState(x, Family().parts(x))
    rng = np.random.default_rng(7)
    for _ in range(20):
        state, _ = kernel.step(rng, state, Family(), 1.0)
    seen = np.concatenate(Family.seen)
    assert seen.min() >= 0 and seen.max() <= 99
    assert np.unique(state.x).size > 10  # the uniform moves jump across the classes


# --------------------------------------------------------------------------
# 4. posterior draws of another model
# --------------------------------------------------------------------------

Y_MEAN = np.array([0.3, -0.4, 1.1, 0.6, 0.2, -0.1, 0.9, 0.4, 0.0, 0.5])


@pytest.fixture(scope="module")
def normal_mean():
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Normal("y", mu, 1.0, observed=Y_MEAN)
    return m


def _exact_log_z():
    """log p(y) of the normal_mean fixture: y ~ N(0, I + 4 11') marginally."""
    n = Y_MEAN.size
    return float(stats.multivariate_normal(np.zeros(n), np.eye(n) + 4.0 * np.ones((n, n))).logpdf(Y_MEAN))


def _exact_draws(shift_sd=0.0, n=2000, seed=8):
    """Exact posterior draws of ``normal_mean``'s mu, shifted by ``shift_sd`` posterior sds (another model)."""
    prec = 1 / 4 + Y_MEAN.size
    mean, sd = Y_MEAN.sum() / prec, prec**-0.5
    return {"mu": mean + sd * (shift_sd + np.random.default_rng(seed).standard_normal(n))}


def test_posterior_draws_of_this_model_pass(normal_mean):
    """Exact posterior draws pass the check: the statistic is within 5 se (+ 0.02) of its expectation 0 (fails with
    probability below 6e-7) and not flagged. (Not ``res.reliable``: with a reference this close to the posterior the
    bounds-inverted rule, at 3 se of a gap whose z has mean 0.9, marks about 1e-4 of the seeds unreliable.)"""
    res = pmz.evidence(normal_mean, method="bridge", posterior=_exact_draws(), random_seed=1, progressbar=False)
    assert "do not look like draws" not in res.reliability_reason
    assert not any("do not look like draws" in w for w in res.warnings)
    assert abs(float(res.evidence_stats["draws_check"])) < 5 * float(res.evidence_stats["draws_check_se"]) + 0.02


@pytest.mark.parametrize("method, option", [("bridge", "posterior"), ("bar", "posterior")])
def test_posterior_draws_of_another_model_are_flagged(normal_mean, method, option):
    """Before: a confident wrong answer (41 se off) without a warning. Draws 1.5 posterior sd off give a statistic
    far beyond the 5-se flag (13 to 17 se over 20 seeds): flagged for any seed."""
    draws = _exact_draws(shift_sd=1.5)
    extra = dict(n_paths=64, n_temps=20, n_bootstrap=20) if method == "bar" else {}
    with pytest.warns(UserWarning, match="do not look like draws of this model's posterior"):
        res = pmz.evidence(normal_mean, method=method, random_seed=1, progressbar=False, **{option: draws}, **extra)
    assert not res.reliable
    assert "another model" in res.reliability_reason


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_check_draws_statistic(normal_mean):
    """Exact draws are not flagged (the flag needs 5 se and 0.02: probability below 3e-7); draws 1.5 posterior sd
    off are, for any seed (their statistic was 13 to 17 se over 20 seeds)."""
    cm = CompiledModel(normal_mean)
    for shift, flagged in ((0.0, False), (1.5, True)):
        X = _exact_draws(shift)["mu"][:, None]
        out = check_draws(cm, X, np.zeros(len(X), dtype=int))
        assert bool(out.mismatch) is flagged


# --------------------------------------------------------------------------
# 5. Ctrl-C inside pm.sample
# --------------------------------------------------------------------------


def test_interrupted_pm_sample_raises_keyboard_interrupt(normal_mean, monkeypatch):
    """PyMC catches Ctrl-C and returns the draws made so far; pmz must not return normally from them."""

    def interrupted_sample(draws=1000, chains=2, **kwargs):
        quarter = max(draws // 4, 1)
        mu = np.random.default_rng(0).normal(0.4, 0.3, size=(chains, quarter))
        return build(RESULT_BASE, {"posterior": xr.Dataset({"mu": (("chain", "draw"), mu)})})

    monkeypatch.setattr(pm, "sample", interrupted_sample)
    with pytest.raises(KeyboardInterrupt, match=r"returned 250 of the 1000 draws per chain.*interrupted") as info:
        pmz.evidence(normal_mean, method="bridge", n_draws=2000, random_seed=1, progressbar=False)
    assert isinstance(info.value, SamplingInterrupted) and info.value.idata is not None


# --------------------------------------------------------------------------
# 6. a likelihood that is zero on (nearly) all of the prior
# --------------------------------------------------------------------------


def _tail_model(y_max):
    with pm.Model() as m:
        theta = pm.Gamma("theta", 2.0, 1.0)
        pm.Uniform("y", 0.0, theta, observed=np.array([1.0, 3.0, y_max]))
    return m


def test_zero_likelihood_on_the_prior_says_so():
    """Before: "check the priors' supports, the observed data (NaN?)"; the model is valid, its data far in the
    prior's tail (P(theta > 40) ~ 1e-16: zero at every draw, for any seed)."""
    with pytest.raises(
        ModelSpecificationError,
        match=r"-inf at all 1024 prior draws tried: the likelihood is zero there.*method='auto' starts at the post",
    ) as info:
        pmz.evidence(_tail_model(40.0), method="bar", random_seed=1, progressbar=False)
    assert "NaN?" not in str(info.value)


def test_likelihood_zero_on_most_of_the_prior_counts_the_draws(monkeypatch):
    """The data in the prior's tail, the likelihood non-zero at a few of the draws tried: the error counts them.

    With real draws (y_max = 7, P(theta > 7) = 0.0073) the outcome depends on the draws: one of the 16 first draws
    lands beyond 7 with probability 0.11 (the check then passes), and 10 or more of the next 1008 with probability
    0.2 (enough start draws: the run goes on). So the start draws are exact prior draws moved below 5 (likelihood
    zero), except 3 of the 1008 further ones set to theta = 10: the message, with its counts, for every seed."""
    from pmz.families.power import PowerPosterior

    real_sample_start, calls = PowerPosterior.sample_start, []

    def few_in_the_tail(self, rng, n):
        X = real_sample_start(self, rng, n)  # one coordinate: log theta
        X[:, 0] = np.minimum(X[:, 0], np.log(5.0))
        calls.append(n)
        if len(calls) == 2:  # the further draws of the start check
            X[:3, 0] = np.log(10.0)
        return X

    monkeypatch.setattr(PowerPosterior, "sample_start", few_in_the_tail)
    phrase = (
        r"-inf at 1021 of 1024 prior draws tried \(about 1\.5 of this run's 512 start draws would see a non-zero "
        r"likelihood\): the likelihood is zero there"
    )
    with pytest.raises(ModelSpecificationError, match=phrase) as info:
        pmz.evidence(_tail_model(7.0), method="bar", random_seed=1, progressbar=False)
    assert "NaN?" not in str(info.value)
    assert calls == [16, 1008]


# --------------------------------------------------------------------------
# 7. chunk_size is a memory bound, not a change of random streams
# --------------------------------------------------------------------------


def test_chunk_size_does_not_change_a_seeded_result(normal_mean):
    common = dict(method="bar", random_seed=11, progressbar=False, n_paths=300, n_temps=10, n_bootstrap=0)
    full = pmz.evidence(normal_mean, **common)
    chunked = pmz.evidence(normal_mean, chunk_size=100, **common)  # chunks of 128, 128, 44
    assert chunked.log_z == pytest.approx(full.log_z, rel=0, abs=1e-9)


def test_auto_flags_posterior_draws_of_another_model(normal_mean):
    """``method="auto"`` with ``posterior=``: where a route reads the user's draws (``latent=False`` here: the
    routes that need no draws answer first otherwise, and do not read them), they are tested as bridge's are
    (pmz's own chains are not).

    Exact draws are not flagged (probability below 3e-7); draws 1.5 posterior sd off are, for any seed. (Not
    ``good.reliable``: the bounds-inverted rule, at 3 se, marks a few in 1e4 of the seeds unreliable.)"""
    import warnings

    import xarray as xr

    def as_chains(draws):
        return xr.Dataset({"mu": (("chain", "draw"), draws["mu"].reshape(4, -1))})

    good = pmz.evidence(normal_mean, posterior=as_chains(_exact_draws()), random_seed=1, progressbar=False,
                        latent=False)
    assert "do not look like" not in good.reliability_reason
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad = pmz.evidence(normal_mean, posterior=as_chains(_exact_draws(shift_sd=1.5)), random_seed=1,
                           progressbar=False, latent=False)
    assert not bad.reliable
    assert "posterior=" in bad.reliability_reason
    unread = pmz.evidence(normal_mean, posterior=as_chains(_exact_draws(shift_sd=1.5)), random_seed=1,
                          progressbar=False)
    assert "the draws given as posterior= are not needed" in unread["evidence_stats"].attrs["route_reason"]


SHORT_RUNS = {
    "auto": {"latent": False},  # the chains' loops (the importance route takes fewer than 25 calls here)
    "ais": {"n_paths": 64, "n_temps": 60},
    "bar": {"n_paths": 64, "n_temps": 60},
    "raise": {"n_paths": 64, "n_temps": 60},
    "cumulant": {"n_paths": 64, "n_temps": 60},
    "bounds": {"n_paths": 64, "n_temps": 60},
    "histogram": {"n_paths": 64, "n_temps": 60},
    "rts": {"n_sweeps": 400},
    "ts": {"n_sweeps": 400},
    "ti": {"n_sweeps": 400},
    "ti_rb": {"n_sweeps": 400},
    "mbar": {"n_sweeps": 400},
    "wang_landau": {"n_sweeps": 400},
    "smc": {},
    "arm": {},
}


@pytest.mark.parametrize("method", sorted(SHORT_RUNS))
def test_ctrl_c_inside_pmz_loops_raises(normal_mean, monkeypatch, method):
    """A real SIGINT arriving while pmz's own loops evaluate the model (after the start, mid-run) raises
    KeyboardInterrupt promptly: no method catches it and returns a normal result from part of the work, and the
    process's BLAS thread setting is restored on the way out."""
    import os
    import signal

    from threadpoolctl import threadpool_info

    calls = {"n": 0}
    at_call = 25  # past compilation, the start checks and any pilot: inside the run

    def interrupting(fn):
        def wrapper(self, *args, **kwargs):
            calls["n"] += 1
            if calls["n"] == at_call:
                os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends; Python raises at the next bytecode
            return fn(self, *args, **kwargs)

        return wrapper

    for name in ("log_densities", "log_densities_once", "log_densities_and_grads", "log_densities_weighted",
                 "log_likelihood_terms"):
        monkeypatch.setattr(CompiledModel, name, interrupting(getattr(CompiledModel, name)))
    # A process started in the background by a non-interactive shell (as .ci/run starts pytest) inherits SIGINT
    # ignored; Ctrl-C in a terminal reaches Python's own handler, so that is the one this test puts in place.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    blas_before = [(lib["internal_api"], lib["num_threads"]) for lib in threadpool_info()]
    try:
        with pytest.raises(KeyboardInterrupt):
            pmz.evidence(normal_mean, method=method, random_seed=3, progressbar=False, **SHORT_RUNS[method])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert calls["n"] >= at_call
    assert [(lib["internal_api"], lib["num_threads"]) for lib in threadpool_info()] == blas_before


def test_ctrl_c_after_finished_smc_runs_keeps_them(normal_mean, monkeypatch):
    """Ctrl-C during the third of SMC's four runs, in a call without n_chunks (one chunk, nothing a chunk runner
    could keep): the two finished runs give the result, flagged partial and unreliable with what happened, and the
    estimate is still within 4 se of the exact log Z. With n_chunks the finished chunks are kept instead (the run
    stops at the interrupt; tested in tests/execution)."""
    from pmz.runners import resample_move

    one_run, calls = resample_move._one_run, {"n": 0}

    def interrupted_third(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return one_run(*args, **kwargs)

    monkeypatch.setattr(resample_move, "_one_run", interrupted_third)
    with pytest.warns(UserWarning, match="PARTIAL RESULT"):
        res = pmz.evidence(normal_mean, method="smc", random_seed=3, progressbar=False)
    assert not res.reliable and "interrupted (Ctrl-C) after 2 of 4 SMC runs" in res.reliability_reason
    assert res.diagnostics["run_log_z"].shape == (2,)
    truth = _exact_log_z()
    assert abs(res.log_z - truth) < 4 * res.log_z_se + 0.02 and res.log_z_se < 0.2
    monkeypatch.setattr(resample_move, "_one_run", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        pmz.evidence(normal_mean, method="smc", random_seed=3, progressbar=False)


def test_ctrl_c_in_the_tempering_long_run_keeps_the_finished_sweeps(normal_mean, monkeypatch):
    """Ctrl-C after 300 of the long run's 1000 sweeps, without n_chunks: the finished sweeps give the result (a
    shorter run), flagged partial; the estimate is within 4 se of the exact log Z."""
    from pmz.methods import tempering
    from pmz.runners import tempering_sweep

    long_run, sweep, calls = tempering.run_tempering, tempering_sweep.tempering_sweep, {"n": None}

    def counted_long_run(*args, **kwargs):
        calls["n"] = 0  # count the sweeps of the long run only (not the initial iterations')
        return long_run(*args, **kwargs)

    def interrupted_sweep(*args, **kwargs):
        if calls["n"] is not None:
            calls["n"] += 1
            if calls["n"] == 301:
                raise KeyboardInterrupt
        return sweep(*args, **kwargs)

    monkeypatch.setattr(tempering, "run_tempering", counted_long_run)
    monkeypatch.setattr(tempering_sweep, "tempering_sweep", interrupted_sweep)
    with pytest.warns(UserWarning, match="PARTIAL RESULT"):
        res = pmz.evidence(normal_mean, method="rts", random_seed=3, progressbar=False)
    assert not res.reliable and "interrupted (Ctrl-C) after 300 of 1000 sweeps" in res.reliability_reason
    truth = _exact_log_z()
    assert abs(res.log_z - truth) < 4 * res.log_z_se + 0.02 and res.log_z_se < 0.2


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
@pytest.mark.skipif(PYMC_MAJOR >= 6, reason="PyTensor 3 compiles to Numba by default; the warning is PyTensor 2's")
def test_no_blas_link_warning_from_pmz_compile():
    """PyTensor 2 (PyMC 5, pip install) warns in five lines that it found no BLAS to link, once per process, when it
    first compiles a matrix product; pmz's own compile silences it (its C code falls back to NumPy's BLAS;
    docs/errors.md). A fresh process, since an earlier compile in this one may have used the warning up."""
    import subprocess
    import sys

    script = """
import numpy as np, pymc as pm
from pmz.model.pymc import CompiledModel
x = np.random.default_rng(0).normal(size=(12, 3))
with pm.Model() as m:
    b = pm.Normal("b", 0.0, 2.0, shape=3)
    pm.Normal("y", pm.math.dot(x, b), 1.0, observed=x @ np.array([1.0, -1.0, 0.5]))
CompiledModel(m).log_densities_and_grads(np.zeros((4, 3)))
print("compiled")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert "compiled" in out.stdout, out.stderr
    assert "could not link to a BLAS" not in out.stderr


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
@pytest.mark.parametrize("method, options", [("auto", {}), ("bar", {"n_paths": 128}), ("smc", {"sequence": "data"})])
def test_set_data_to_another_size_compiles_again(method, options):
    """``pm.set_data`` with 6 observations where the first call had 3, and a free variable whose shape follows
    them (theta_i ~ N(0, 1), y_i ~ N(theta_i, 1): log Z = sum log N(y_i | 0, 2)): the first call's compiled
    functions and term sizes were kept ("could not broadcast input array from shape (6,) into shape (3,)"; data
    annealing: "Vectorized input 2 has an incompatible shape"). The second call compiles again and is right."""
    from scipy import stats

    with pm.Model() as model:
        y = pm.Data("y", np.array([0.5, -0.2, 0.1]))
        theta = pm.Normal("theta", 0, 1, shape=y.shape)
        pm.Normal("obs", theta, 1, observed=y, shape=y.shape)
    for data in (np.array([0.5, -0.2, 0.1]), np.array([0.5, -0.2, 0.1, 1.0, 0.0, -1.0])):
        with model:
            pm.set_data({"y": data})
        res = pmz.evidence(model, method=method, random_seed=1, progressbar=False, **options)
        truth = stats.norm(0, np.sqrt(2)).logpdf(data).sum()
        assert res.run_attrs["dim"] == data.size
        assert abs(res.log_z - truth) < 4 * res.log_z_se + 0.02 and res.log_z_se < 0.1, (res.log_z, truth)


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_threads_on_one_model_get_the_bits_of_calls_in_turn():
    """Four threads calling pmz.evidence on one fresh model object (each compiling on first use): SMC's bits
    differed from the same calls one after the other, and BAR failed inside PyTensor ("'NoneType' object has no
    attribute 'shape'"). Calls on one model now run one at a time."""
    import concurrent.futures

    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        s = pm.HalfNormal("s", 1)
        pm.Normal("y", mu, s, observed=[0.3, -0.1, 0.8, 1.2])
    for method, options in (("smc", {"n_particles": 300}), ("bar", {"n_paths": 64})):
        def run(seed):
            return pmz.evidence(model, method=method, random_seed=seed, progressbar=False, **options).log_z

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            together = list(pool.map(run, range(4)))
        assert together == [run(seed) for seed in range(4)], method
