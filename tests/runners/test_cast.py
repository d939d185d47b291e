"""CAST (coupled adaptive simulated tempering): the runner (pmz.runners.cast) and the PyMC step method (pmz.CAST).

Known truths: the 2-node MRF of CAST Figure 2 (exact moments and log Z along the ladder), a 4 x 4 Ising torus
(moments by enumeration, log Z by Kaufman's formula) and the bimodal PyMC posterior (moments by quadrature).
Fixed seeds; each bound is 4 MCSE (ArviZ, chains = pairs: fails with probability about 6e-5 when the MCSE is
right) or a Student-t bound over independent runs, with a check that the error bar is small enough to mean
something. Counts (swaps, mode switches) are bounded where they hold with room for every seed.
"""


import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr
from scipy import stats

import pmz
from pmz.families.energy import EnergyFamily
from pmz.families.power import PowerPosterior
from pmz.kernels.hmc import HamiltonianMC
from pmz.model.pymc import CompiledModel
from pmz.runners.cast import cast_init, cast_step, run_cast, uniform_ladder
from pmz.runners.pilot import tune_along_schedule
from pmz.runners.tempering_settings import CASTSettings
from pmz.systems.bimodal import bimodal_data, bimodal_log_joint, mode_label
from pmz.boltzmann.ising import ising, ising_energy, ising_log_z_exact
from pmz.systems.two_node import partition_of, two_node_log_z, two_node_mrf

pytestmark = pytest.mark.usefixtures("quiet_pymc")  # pm.sample's INFO lines off (tests/conftest.py)

SEED = 20261122
SAMPLE = dict(progressbar=False, compute_convergence_checks=False)


def mean_and_mcse(h):
    """Mean of ``h (chain, draw)`` and its MCSE (ArviZ: autocorrelation within chains, chains pooled)."""
    h = np.asarray(h, dtype=float)
    data = xr.Dataset({"h": (("chain", "draw"), h)})
    return float(h.mean()), float(az.mcse(data, method="mean")["h"])


def by_pair(draws):
    """``(n_steps, n_pairs, ...)`` runner draws as ``(chain, draw, ...)``."""
    return np.swapaxes(draws, 0, 1)


# ---------------------------------------------------------------------------------------------- the runner
def test_uniform_ladder():
    assert np.allclose(uniform_ladder(0.9, 19), np.linspace(0.9, 1.0, 20))  # the paper's 20 levels
    assert uniform_ladder(0.0, 4)[-1] == 1.0 and uniform_ladder(0.0, 4)[0] == 0.0
    for bad in (dict(beta_min=1.0), dict(beta_min=-0.1), dict(n_temps=0), dict(n_temps=2.5)):
        with pytest.raises(ValueError):
            uniform_ladder(**{"beta_min": 0.5, "n_temps": 3, **bad})


@pytest.fixture(scope="module")
def mrf():
    return two_node_mrf(5.0).model


@pytest.fixture(scope="module")
def mrf_run(mrf):
    """50 pairs x 4000 steps, the paper's swap every 50 steps, 10 levels uniform in [0, 1]."""
    return run_cast(
        EnergyFamily(mrf), mrf.kernel, uniform_ladder(0.0, 9), settings=CASTSettings(n_pairs=50, n_steps=4000),
        rng=np.random.default_rng(SEED),
    )


def test_slow_chains_match_the_exact_moments_of_the_two_node_mrf(mrf_run):
    """E[s1] = E[s2] = 0 (the two modes have mass 1/2 each) within 4 MCSE (6e-5 each); E[s1 s2] = tanh 5 = 0.99991:
    the mixed-state count is below its Poisson mean + 4 sd + 1 (tail probability 1.3e-4). Swaps: 78 or more of the
    80 swap steps per pair on every seed tried, against a bound of 40."""
    s = by_pair(mrf_run.slow_draws)[:, 400:]  # 10% burn-in
    for site in (0, 1):
        mean, mcse = mean_and_mcse(s[..., site])
        assert abs(mean) < 4 * mcse, (site, mean, mcse)
        assert mcse < 0.05  # a chain stuck in its start mode would be off by ~1 = 20 MCSE
    # the mixed states have probability 2 e^-5 / (4 cosh 5) = 4.5e-5: about 8 of 180000 draws (Poisson bound)
    mixed = int(np.sum(s[..., 0] != s[..., 1]))
    expected = s[..., 0].size * (1 - np.tanh(5.0)) / 2
    assert mixed < expected + 4 * np.sqrt(expected) + 1, (mixed, expected)
    assert mrf_run.swaps.min() > 40 and mrf_run.n_swap_steps == 80  # almost every swap step hands a state over


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_wang_landau_weights_converge_on_the_two_node_mrf(mrf):
    """16 independent runs of 500 steps: their mean log g_k is within t_15 se (the two-sided 6.3e-5 quantile of
    Student's t with 15 degrees of freedom, 5.48: the 4-sd bound for a 16-run se) of the exact log Z_k - log Z_0 at
    every level, and se < 0.02 (its expected size is 0.01: exceeded with probability < 1e-6; the range of log Z_k is
    5.7). Every run reaches the flat histogram and the 1/t rule (at step 143 at the latest over 176 runs) and
    visits every level within 0.015 of 1/K (per-run sd of a level's share 0.0024: 6 sd)."""
    betas = uniform_ladder(0.0, 9)
    exact = two_node_log_z(5.0, betas)
    exact = exact - exact[0]
    n_runs = 16
    runs = [
        run_cast(EnergyFamily(mrf), mrf.kernel, betas, settings=CASTSettings(n_steps=500, keep_draws=False), rng=rng)
        for rng in np.random.default_rng(SEED).spawn(n_runs)
    ]
    log_g = np.array([r.log_g for r in runs])
    mean, se = log_g.mean(axis=0), log_g.std(axis=0, ddof=1) / np.sqrt(n_runs)
    bound = stats.t.ppf(1 - 6.3e-5 / 2, n_runs - 1)
    assert np.all(np.abs(mean - exact)[1:] < bound * se[1:] + 1e-3), (mean - exact, se)
    assert se.max() < 0.02
    for r in runs:  # flat histogram reached, then the 1/t rule; every level visited about 1/K of the time
        assert r.one_over_t_from > 0 and r.halvings.size >= 3
        assert np.all(np.abs(r.visits / r.visits.sum() - 0.1) < 0.015)


def test_cast_mixes_between_the_modes_where_gibbs_does_not(mrf):
    """Every chain starts in the mode (+1, +1). Plain Gibbs at beta = 1 leaves it with probability
    2 / (1 + e^10) = 9.1e-5 per sweep: about 9 switches in 50 x 2000 sweeps (Poisson mean + 4 sd + 1: tail
    probability 8e-5), and its time in the start mode averages 0.92 with sd 0.03 (below 0.75 with probability
    3e-6). CAST's slow chains switch at almost every other swap (11 to 15 switches for the slowest pair, 20 on
    average, over 6 seeds, against bounds 5 and 15) and spend half their time in each partition (4 MCSE: 6e-5)."""
    family, kernel = EnergyFamily(mrf), mrf.kernel
    n_pairs, n_steps = 50, 2000
    start = np.ones((n_pairs, 2))
    rng = np.random.default_rng(SEED)
    state = kernel.init_state(family, start)
    gibbs = np.empty((n_steps, n_pairs), dtype=int)
    for t in range(n_steps):
        state, _ = kernel.step(rng, state, family, 1.0)
        gibbs[t] = partition_of(state.x)
    run = run_cast(family, kernel, uniform_ladder(0.0, 9), settings=CASTSettings(n_pairs=n_pairs, n_steps=n_steps),
                   rng=rng, start_x=start, start_fast_x=start)
    cast = by_pair(partition_of(run.slow_draws))
    gibbs = gibbs.T
    switches_gibbs = int(np.sum(np.diff(gibbs, axis=1) != 0))
    expected = n_pairs * n_steps * 2 / (1 + np.exp(10.0))
    assert switches_gibbs < expected + 4 * np.sqrt(expected) + 1, switches_gibbs
    assert gibbs.mean() > 0.75  # Gibbs: most chains still in the start mode (a switched chain stays)
    switches_cast = np.sum(np.diff(cast, axis=1) != 0, axis=1)
    assert switches_cast.min() >= 5 and switches_cast.mean() > 15  # 40 swap steps per pair
    mean, mcse = mean_and_mcse(cast[:, 200:])
    assert abs(mean - 0.5) < 4 * mcse and mcse < 0.05, (mean, mcse)


@pytest.mark.parametrize("swap", ["last", "exchange"])
def test_ising_slow_chains_and_weights(swap):
    """A 4 x 4 Ising torus at J = 0.6 (ordered, two magnetised modes) with its checkerboard heat bath: the slow
    chains' E[m] (0) and E[m^2] (enumeration) within 4 MCSE, and the weights within 0.1 of Kaufman's log Z_k.
    The paper's rule "last" is allowed its measured bias of E[m^2] (-6e-4 +- 0.5e-4 with a swap every 10 steps,
    docs/cast.md; here MCSE ~5e-4), "exchange" none. Each 4-MCSE bound fails with probability about 6e-5. The
    MCSE of E[m] is 0.04-0.05 with "exchange" (it swaps only where the fast chain is at beta = 1 at that step;
    0.038-0.051 over 13 seeds) and 0.02 with "last": cap 0.08 (a chain stuck in one magnetised mode would be off by
    about 0.9). The weights' largest error was 0.04 over the seeds tried (bound 0.1), the swaps 10% ("exchange") or
    45% ("last") of the swap steps (bound 5%)."""
    L, J = 4, 0.6
    model = ising(L, J).model
    states = 2.0 * ((np.arange(2**16)[:, None] >> np.arange(16)) & 1) - 1.0
    log_p = -ising_energy(states, L, J)
    p = np.exp(log_p - log_p.max())
    p /= p.sum()
    exact_m2 = float(p @ states.mean(axis=1) ** 2)
    betas = uniform_ladder(0.0, 9)
    settings = CASTSettings(n_pairs=50, n_steps=3000, swap_interval=10, swap=swap)
    run = run_cast(EnergyFamily(model), model.kernel, betas, settings=settings, rng=np.random.default_rng(SEED))
    m = by_pair(run.slow_draws).mean(axis=2)[:, 300:]
    mean, mcse = mean_and_mcse(m)
    assert abs(mean) < 4 * mcse and mcse < 0.08, (mean, mcse)
    mean, mcse = mean_and_mcse(m**2)
    bias = 6e-4 if swap == "last" else 0.0
    assert abs(mean - exact_m2 + bias) < 4 * mcse and mcse < 0.002, (mean, exact_m2, mcse)
    exact = np.array([ising_log_z_exact(L, b * J) for b in betas])
    assert np.max(np.abs(run.log_g - (exact - exact[0]))) < 0.1
    assert run.swaps.sum() > 0.05 * run.n_swap_steps * 50


@pytest.mark.slow  # pm.sample with the CAST step: PyMC compiles its own functions
def test_cast_step_on_a_power_posterior_with_hmc():
    """The runner with a PyMC model's PowerPosterior and HMC (pilot-tuned per level): 20 pairs, all started in one
    mode of the bimodal posterior, visit both, and the within-mode gap |mu1 - mu2| matches quadrature (4 MCSE: 6e-5).
    All 20 pairs reached the other mode and the acceptance was 0.80-0.81 on every seed tried (bounds 15 and
    0.6-0.95)."""
    truth = pmz.systems.bimodal_posterior()
    family = PowerPosterior(CompiledModel(truth.model))
    kernel = HamiltonianMC(n_leapfrog=10)
    betas = pmz.families.schedules.make_schedule("power", 10)
    rng = np.random.default_rng(SEED)
    pilot = tune_along_schedule(family, kernel, betas, rng, n_pilot=256)
    log_g = pilot.log_z_path - pilot.log_z_path[0]
    start = np.tile([-2.68, 2.56], (20, 1))
    run = run_cast(family, kernel, betas, pilot.params, CASTSettings(n_pairs=20, n_steps=600, swap_interval=10),
                   rng=rng, log_g=log_g, start_x=start, start_fast_x=start)
    mu = by_pair(run.slow_draws)[:, 100:]
    share = (mode_label(mu) == 1).mean(axis=1)
    assert (share > 0).sum() >= 15  # most pairs reached the other mode within 600 steps
    gap, mcse = mean_and_mcse(np.abs(mu[..., 0] - mu[..., 1]))
    exact_gap, _, _ = _bimodal_exact()
    assert abs(gap - exact_gap) < 4 * mcse and mcse < 0.05, (gap, exact_gap, mcse)
    assert 0.6 < run.slow_acceptance < 0.95


def test_cast_step_contract(mrf):
    """One step: the slow chains stay at beta = 1, the fast levels and weights move, the swap comes on schedule."""
    family, kernel = EnergyFamily(mrf), mrf.kernel
    betas = uniform_ladder(0.0, 4)
    K = betas.size
    rng = np.random.default_rng(SEED)
    state = cast_init(rng, family, kernel, betas, 8, start_levels=np.full(8, K - 1))
    settings = CASTSettings(swap_interval=3)
    kwargs = dict(family=family, kernel=kernel, betas=betas, params=[kernel.default_params(2)] * K)
    swapped_at = []
    for t in range(9):
        state, info = cast_step(rng, state, settings=settings, **kwargs)
        assert info.slow_acceptance.shape == (8,) and info.fast.log_q.shape == (8, K)
        assert state.slow.x.shape == (8, 2) and state.t == t + 1
        if info.swapped.any():
            swapped_at.append(state.t)
            assert np.array_equal(state.slow.x[info.swapped], state.last_top.x[info.swapped])
            assert not state.has_top.any()  # a state is handed over once
    assert set(swapped_at) <= {3, 6, 9} and swapped_at
    assert state.wl.t == 9 and not np.allclose(state.wl.log_g, 0.0)
    frozen, _ = cast_step(rng, state, settings=settings.replace(adapt=False), **kwargs)
    assert np.array_equal(frozen.wl.log_g, state.wl.log_g)


def test_run_cast_checks_its_options(mrf):
    family, kernel = EnergyFamily(mrf), mrf.kernel
    ok = dict(rng=np.random.default_rng(0), settings=CASTSettings(n_pairs=2, n_steps=2))
    for bad in (dict(swap="none"), dict(swap_interval=0), dict(wl_update="all"), dict(wl_flatness=1.0),
                dict(wl_gamma0=0.0), dict(n_pairs=0), dict(keep_draws=None)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            CASTSettings(**bad)
    with pytest.raises(ValueError):
        run_cast(family, kernel, np.array([0.0, 0.5, 0.9]), **ok)  # must end at 1
    with pytest.raises(ValueError):
        run_cast(family, kernel, uniform_ladder(0.0, 3), [kernel.default_params(2)] * 2, **ok)
    with pytest.raises(ValueError, match="log_prior must hold 4 values"):
        run_cast(family, kernel, uniform_ladder(0.0, 3), settings=CASTSettings(log_prior=[0.0, 0.0]), rng=ok["rng"])


# ---------------------------------------------------------------------------------------------- pm.sample
_EXACT = {}


def _bimodal_exact():
    """E|mu1 - mu2|, E[mu1] and P(mu1 < mu2) of bimodal_posterior() by quadrature (grid 0.01, [-4.5, 4.5]^2)."""
    if not _EXACT:
        grid = np.arange(-4.5, 4.5, 0.01)
        a, b = (g.ravel() for g in np.meshgrid(grid, grid, indexing="ij"))
        log_joint = bimodal_log_joint(np.column_stack([a, b]), bimodal_data())
        p = np.exp(log_joint - log_joint.max())
        p /= p.sum()
        _EXACT["moments"] = (float(p @ np.abs(a - b)), float(p @ a), float(p @ (a < b)))
    return _EXACT["moments"]


@pytest.fixture(scope="module")
def cast_idata():
    truth = pmz.systems.bimodal_posterior()
    with truth.model:
        step = pmz.CAST()
        idata = pm.sample(draws=1000, tune=500, chains=4, cores=1, step=step, random_seed=SEED, **SAMPLE)
    return idata, step


@pytest.mark.slow  # long chains, for the moments' bound
def test_pm_sample_cast_visits_both_modes_with_the_exact_moments(cast_idata):
    """pm.sample(step=pmz.CAST()) on the bimodal posterior (modes 33 posterior sds apart; NUTS never switches):
    every chain visits both modes (5 to 16 mode switches per chain, 9.4 on average, over 28 chains of 7 seeds: a
    chain without one has probability about e^-9 = 1e-4), and E[mu1], P(mu1 < mu2) and E|mu1 - mu2| are within 4
    MCSE of quadrature (each fails with probability about 6e-5 when the MCSE is right). The MCSE caps sit at about
    twice the largest MCSE seen over 7 seeds (0.53, 0.10 and 0.007)."""
    idata, _ = cast_idata
    mu = np.asarray(idata.posterior["mu"])
    labels = mode_label(mu)
    assert np.all(labels.min(axis=1) == 0) and np.all(labels.max(axis=1) == 1)
    exact_gap, exact_mu1, exact_share = _bimodal_exact()
    for name, h, exact, bound in (
        ("mu1", mu[..., 0], exact_mu1, 1.0),  # stuck in one mode: off by 2.6
        ("share", (labels == 0).astype(float), exact_share, 0.15),
        ("gap", np.abs(mu[..., 0] - mu[..., 1]), exact_gap, 0.03),  # within-mode shape (posterior sd 0.22)
    ):
        mean, mcse = mean_and_mcse(h)
        assert abs(mean - exact) < 4 * mcse, (name, mean, exact, mcse)
        assert mcse < bound, (name, mcse)


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_pm_sample_cast_stats(cast_idata):
    """The step's stats: shapes, the ladder, every level visited, swaps, acceptance, the 1/t rule after tuning. Over
    7 seeds: 27 to 62 swaps per chain of 100 swap steps (mean 48, sd 8: bound 10), acceptance 0.79-0.82 (bounds
    0.6-0.95). Each chain's log g_{K-1} estimates log p(y) with an sd of about 0.38 (28 chains, largest error 1.04):
    the mean of the 4 chains is bounded at 1.0, about 5 of its sds (fails with probability below 1e-5)."""
    idata, step = cast_idata
    stats = idata.sample_stats
    K = step.n_levels
    assert K == 11 and step.betas[0] == 0.0 and step.betas[-1] == 1.0
    assert stats["log_g"].shape == (4, 1000, K) and stats["level"].shape == (4, 1000)
    levels = np.asarray(stats["level"])
    assert levels.min() == 0 and levels.max() == K - 1
    assert np.allclose(np.asarray(stats["beta"]), step.betas[levels])
    swapped = np.asarray(stats["swapped"])
    assert swapped.dtype == bool and np.all(swapped.sum(axis=1) > 10)  # 100 swap steps per chain
    assert 0.6 < float(stats["accept"].mean()) < 0.95 and 0.6 < float(stats["fast_accept"].mean()) < 0.95
    assert np.all(np.asarray(stats["wl_gamma"])[:, -1] < 0.05)  # the 1/t rule after tuning
    log_g = np.asarray(stats["log_g"])[:, -1]  # b_0 = 0: log g_{K-1} estimates log Z_1 - log Z_0 = log p(y)
    assert abs(np.mean(log_g[:, -1]) - pmz.systems.bimodal_posterior().log_z) < 1.0, log_g[:, -1]


def test_pm_sample_cast_on_a_discrete_posterior():
    """Two Bernoulli(1/2) variables tied by a potential 10 [x1 = x2]: modes (0, 0) and (1, 1) of mass
    e^10 / (2 e^10 + 2) each, which site-by-site Gibbs leaves with probability 1 / (1 + e^10) per update. CAST
    (Gibbs kernel) visits both in every chain; P(x1 = 1) = 1/2 within 4 MCSE (6e-5). Mixed states: expected 0.1 of
    the 2000 draws, bound 20."""
    with pm.Model():
        x = pm.Bernoulli("x", 0.5, shape=2)
        pm.Potential("tie", 10.0 * pt.eq(x[0], x[1]))
        step = pmz.CAST(schedule="uniform", n_temps=9, swap_interval=10)
        idata = pm.sample(draws=1000, tune=200, chains=2, cores=1, step=step, random_seed=SEED, **SAMPLE)
    assert step.kernel.name == "gibbs" and step.pilot is None
    draws = np.asarray(idata.posterior["x"])
    assert draws.dtype.kind == "i" and set(np.unique(draws)) == {0, 1}
    x1 = draws[..., 0].astype(float)
    assert np.all(x1.min(axis=1) == 0) and np.all(x1.max(axis=1) == 1)
    mean, mcse = mean_and_mcse(x1)
    assert abs(mean - 0.5) < 4 * mcse and mcse < 0.1, (mean, mcse)
    assert np.mean(draws[..., 0] != draws[..., 1]) < 0.01  # mixed states: probability 2 / (2 e^10 + 2)


def test_cast_step_method_options():
    truth = pmz.systems.bimodal_posterior()
    with truth.model:
        assert np.allclose(pmz.CAST(schedule="uniform", beta_min=0.9, n_temps=19).betas, np.linspace(0.9, 1, 20))
        assert np.allclose(pmz.CAST(schedule=[0.5, 1.0]).betas, [0.5, 1.0])
        for bad in (dict(swap="both"), dict(swap_interval=0), dict(level_move="jump"), dict(wl_flatness=0.0),
                    dict(schedule=[0.0, 0.5]), dict(log_g=[0.0, 1.0]), dict(schedule="uniform", beta_min=1.0)):
            with pytest.raises(ValueError):
                pmz.CAST(**bad)
    assert "CAST" in pmz.__all__ and pmz.CAST is pmz.step_methods.CAST


@pytest.mark.slow  # the whole example at a reduced size
def test_example_quick():
    """examples/cast_two_node.py --quick (4 runs x 50 chains): Gibbs stays in its start mode, FPCD's fast weights
    switch but over-visit the mixed states, CAST and Wang-Landau on [0, 1] spend about half of the time in each.
    Seeds 1-3: Gibbs share 0.94-0.97 (sd about 0.012) and 6-12% of chains in both modes, FPCD mixed states 0.025,
    CAST and Wang-Landau shares within 0.02 of 1/2 with mixed states below 5e-5: every bound holds with room."""
    import sys
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples"
    sys.path.insert(0, str(examples))
    try:
        from cast_two_node import main
    finally:
        sys.path.pop(0)
    results = main(["--quick"])
    gibbs, fpcd = results[("Gibbs (beta = 1)", 1000)], results[("FPCD-style fast weights", 1000)]
    assert gibbs["share"] > 0.85 and gibbs["both"] < 0.3
    assert fpcd["both"] == 1.0 and fpcd["mixed"] > 1e-3  # exact: 4.5e-5
    for name in ("CAST [0, 1], swap every 10", "Wang-Landau tempering [0, 1], beta = 1 states"):
        row = results[(name, 1000)]
        assert abs(row["share"] - 0.5) < 0.05 and row["both"] > 0.95, (name, row)
        assert row["mixed"] < 1e-3


@pytest.mark.slow  # starts fresh processes (each imports PyMC)
def test_pm_sample_cast_is_reproducible_across_processes():
    """Same random_seed, same draws and stats: twice with cores=1, and with cores=2 (the step is pickled without its
    compiled functions and rebuilt in each process)."""
    truth = pmz.systems.bimodal_posterior()

    def run(cores):
        with truth.model:
            return pm.sample(draws=40, tune=40, chains=2, cores=cores, step=pmz.CAST(n_pilot=64, swap_interval=5),
                             random_seed=SEED, **SAMPLE)

    a, b, c = run(1), run(1), run(2)
    for other in (b, c):
        assert np.array_equal(a.posterior["mu"].values, other.posterior["mu"].values)
        for name in ("level", "swapped", "log_g", "accept"):
            assert np.array_equal(a.sample_stats[name].values, other.sample_stats[name].values), name
    assert not np.array_equal(a.posterior["mu"].values[0], a.posterior["mu"].values[1])
