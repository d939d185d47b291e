"""Binary RBM system: free energy, exact log Z, kernel invariance (exact chi-square tests), AIS, training.

Fixed seeds. A chi-square test of exact draws passes at p > 1e-3: it fails with probability 1e-3 when the kernel
is exact (the counts are exactly multinomial); each is paired with the same draws against a neighbouring
temperature, p < 1e-6, to show the test has power (those p-values were below 1e-60 over 30 seeds). AIS bounds are
4 se + 0.1 (6e-5 if the se is right) with a cap on the se.
"""

import numpy as np
import pytest
from scipy import stats

from pmz.estimators.jarzynski import jarzynski
from pmz.families.schedules import make_schedule
from pmz.boltzmann.rbm_gibbs import RBMBlockGibbs, RBMBlockMH, RBMGibbs
from pmz.families.energy import EnergyFamily
from pmz.runners.ais import run_ais
from pmz.boltzmann.rbm import (
    RBM,
    average_log_likelihood,
    digits_rbm,
    digits_split,
    energy_model,
    load_digits_binary,
    random_rbm,
    rbm_digits,
)
from pmz.boltzmann.rbm_training import train_rbm


def all_states(n_bits):
    idx = np.arange(2**n_bits)
    return ((idx[:, None] >> np.arange(n_bits)) & 1).astype(float)


def state_index(X):
    return (X @ (2 ** np.arange(X.shape[1]))).astype(int)


def exact_probs(model, beta):
    """Normalised f_beta over every state of an energy model (by enumeration)."""
    X = all_states(model.dim)
    log_p = (1 - beta) * model.base.log_density(X) + beta * model.log_f1(X)
    p = np.exp(log_p - log_p.max())
    return p / p.sum()


def chi2_pvalue(X, probs):
    counts = np.bincount(state_index(X), minlength=probs.size)
    expected = probs * X.shape[0]
    assert expected.min() >= 5, "chi-square needs expected counts >= 5"
    return stats.chisquare(counts, expected).pvalue


def one_step_from_exact(model, kernel, beta, rng, n):
    """n exact draws of f_beta, one kernel step each: if the kernel leaves f_beta invariant the results are
    again n independent draws of f_beta, so their state counts are exactly multinomial(n, f_beta)."""
    beta_arr = np.broadcast_to(beta, (n,))
    X0 = np.empty((n, model.dim))
    for value in np.unique(beta_arr):
        rows = beta_arr == value
        X0[rows] = all_states(model.dim)[rng.choice(2**model.dim, size=rows.sum(), p=exact_probs(model, value))]
    family = EnergyFamily(model)
    state = kernel.init_state(family, X0)
    new, info = kernel.step(rng, state, family, beta, kernel.default_params(model.dim))
    return X0, new, info


# ------------------------------------------------------------------------------------------ model and log Z
def test_free_energy_is_hidden_sum():
    rbm = random_rbm(3, 4, seed=2, scale=1.5)
    V, H = all_states(3), all_states(4)
    brute = np.array([np.log(np.sum(np.exp(rbm.log_joint(np.repeat(v[None], 16, 0), H)))) for v in V])
    np.testing.assert_allclose(rbm.log_f1(V), brute, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rbm.free_energy(V), -brute, rtol=0, atol=1e-12)


def test_log_z_visible_equals_hidden_enumeration():
    rbm = random_rbm(6, 8, seed=3, scale=1.0)
    lz_v, lz_h = rbm.log_z_enumerate_visible(), rbm.log_z_enumerate_hidden(block_size=7)
    assert abs(lz_v - lz_h) < 1e-10
    assert rbm.log_z_exact() == lz_v  # enumerates the smaller (visible) layer
    # and brute force over the joint states
    V, H = all_states(6), all_states(8)
    Vj, Hj = np.repeat(V, len(H), axis=0), np.tile(H, (len(V), 1))
    lj = rbm.log_joint(Vj, Hj)
    assert abs(np.log(np.sum(np.exp(lj - lj.max()))) + lj.max() - lz_v) < 1e-10


def test_log_z_exact_2_to_20_states_matches_small_block_enumeration():
    """2^20 hidden states in blocks; the block size does not change the answer (speed is measured in benchmarks,
    not asserted here)."""
    rbm, _ = digits_rbm(20)
    lz = rbm.log_z_exact()
    assert abs(lz - rbm.log_z_enumerate_hidden(block_size=1 << 12)) < 1e-9


def test_digits_data_and_systems():
    images, labels = load_digits_binary()
    assert images.shape == (1797, 64) and set(np.unique(images)) == {0.0, 1.0}
    assert np.bincount(labels).tolist()[:3] == [178, 182, 177]
    train, test = digits_split()
    assert train.shape == (1437, 64) and test.shape == (360, 64)
    truth = rbm_digits(20)
    assert truth.name == "rbm_digits_h20" and truth.model.dim == 64 and np.isfinite(truth.log_z)
    rbm, extra = digits_rbm(20)
    # the trained model beats the base-rate model on held-out images
    p0 = extra["base_means"]
    base_ll = np.mean(test @ np.log(p0) + (1 - test) @ np.log1p(-p0))
    assert average_log_likelihood(rbm, test, truth.log_z) > base_ll + 3
    joint = rbm_digits(20, space="joint")
    assert joint.model.dim == 84 and joint.log_z == truth.log_z


H20_VARIANTS = {"cd10": ("cd", 10), "cd1": ("cd", 1), "cd25": ("cd", 25), "pcd": ("pcd", 1)}


def test_digits_h20_training_variants_load():
    """The four 20-hidden RBMs (Kiwaki 2015, Table 1): shapes, stored settings, names; the default is CD-10."""
    import json

    weights = {}
    for training, (method, k) in H20_VARIANTS.items():
        rbm, extra = digits_rbm(20, training)
        assert (rbm.n_visible, rbm.n_hidden) == (64, 20) and extra["base_means"].shape == (64,)
        settings = json.loads(str(extra["settings"]))
        assert (settings["method"], settings["k"]) == (method, k)
        assert float(extra["train_seconds"]) > 0
        weights[training] = rbm.W
    np.testing.assert_array_equal(digits_rbm(20)[0].W, weights["cd10"])
    assert len({w.tobytes() for w in weights.values()}) == 4  # four different RBMs
    assert digits_rbm(500, "pcd")[0].n_hidden == 500 and digits_rbm(500, "PCD")[0].n_hidden == 500
    with pytest.raises(ValueError, match="'cd10'.*500 hidden units"):
        digits_rbm(500, "cd10")
    with pytest.raises(ValueError, match="training must be one of"):
        rbm_digits(20, training="cd3")


def test_digits_h20_pcd_log_z_matches_independent_enumeration():
    """rbm_digits(20, "pcd").log_z (log_z_exact: bit expansions of the state index, a matrix product for the low
    bits, pmz's softplus) against an enumeration written differently: the visible pre-activations ``a + W h`` and
    ``b'h`` of all 2^15 settings of hidden units 19..5 built by recursive doubling (no bit expansions, no matrix
    product), shifted for each of the 2^5 settings of units 0..4, log1p(exp(.)) and scipy's logsumexp. Also checks
    the per-variant log Z cache."""
    from itertools import product

    from scipy.special import logsumexp as sp_logsumexp

    truth = rbm_digits(20, training="pcd")
    assert truth.name == "rbm_digits_h20_pcd" and truth.model.dim == 64
    rbm, _ = digits_rbm(20, "pcd")
    assert np.abs(rbm.a).max() + np.abs(rbm.W).sum(axis=1).max() < 700  # log1p(exp(x)) cannot overflow
    pre, lin = rbm.a[None, :], np.zeros(1)
    for j in range(19, 4, -1):  # doubling: every state so far, without and with hidden unit j
        pre = np.concatenate([pre, pre + rbm.W[:, j]])
        lin = np.concatenate([lin, lin + rbm.b[j]])
    parts = []
    for h_low in product((0.0, 1.0), repeat=5):
        h_low = np.array(h_low)
        terms = lin + h_low @ rbm.b[:5] + np.log1p(np.exp(pre + rbm.W[:, :5] @ h_low)).sum(axis=1)
        parts.append(sp_logsumexp(terms))
    assert pre.shape == (1 << 15, 64) and len(parts) == 32
    assert abs(truth.log_z - sp_logsumexp(parts)) < 1e-9
    assert abs(truth.log_z - rbm_digits(20).log_z) > 1.0  # not the CD-10 RBM's cached value


def test_joint_and_visible_models_have_the_same_log_z():
    rbm = random_rbm(4, 3, seed=5)
    for space in ("visible", "joint"):
        model = energy_model(rbm, [0.2, 0.4, 0.6, 0.8], space=space)
        X = all_states(model.dim)
        log_z = np.log(np.sum(np.exp(model.log_f1(X))))
        assert abs(log_z - rbm.log_z_exact()) < 1e-12
        assert abs(np.log(np.sum(np.exp(model.base.log_density(X))))) < 1e-12  # normalised base


def test_energy_model_errors():
    rbm = random_rbm(4, 3)
    with pytest.raises(ValueError, match="space"):
        energy_model(rbm, np.full(4, 0.5), space="both")
    with pytest.raises(ValueError, match="not available"):
        energy_model(rbm, np.full(4, 0.5), space="joint", kernel="gibbs")
    with pytest.raises(ValueError, match="4 entries"):
        energy_model(rbm, np.full(5, 0.5))
    with pytest.raises(ValueError, match="hidden units"):
        rbm_digits(7)
    with pytest.raises(ValueError):
        RBM(np.zeros((3, 2)), np.zeros(2), np.zeros(2))


# ------------------------------------------------------------------------------------------ kernel invariance
RBM_SMALL = random_rbm(4, 3, seed=11, scale=1.2)
BASE_MEANS = np.array([0.3, 0.6, 0.5, 0.2])


@pytest.mark.parametrize("kernel", ["gibbs", "block_mh"])
def test_visible_kernels_leave_f_beta_invariant(kernel, rng):
    """One step from exact draws gives exact draws: chi-square p > 1e-3 (fails with probability 1e-3 when the kernel
    is exact). Over 30 seeds at least 84% of the states moved and the block-MH acceptance was 0.945-0.946 (bounds
    0.3 and 0.3-1.0)."""
    model = energy_model(RBM_SMALL, BASE_MEANS, kernel=kernel)
    beta, n = 0.55, 40_000
    X0, new, info = one_step_from_exact(model, model.kernel, beta, rng, n)
    assert chi2_pvalue(new.x, exact_probs(model, beta)) > 1e-3
    assert np.mean(np.any(new.x != X0, axis=1)) > 0.3  # it does move
    # the cached parts are those of the new states
    np.testing.assert_allclose(new.parts.U, model.log_f1(new.x) - model.base.log_density(new.x))
    # the same draws against a neighbouring temperature: the test has power
    assert chi2_pvalue(new.x, exact_probs(model, beta + 0.25)) < 1e-6
    if kernel == "block_mh":
        assert 0.3 < np.mean(info.acceptance) < 1.0


@pytest.mark.parametrize("kernel", ["gibbs", "block_mh"])
def test_visible_kernels_with_per_particle_beta(kernel, rng):
    """Per-particle beta: each temperature's draws stay exact (two chi-square tests at p > 1e-3: 1e-3 each when the
    kernel is exact)."""
    model = energy_model(RBM_SMALL, BASE_MEANS, kernel=kernel)
    n = 40_000
    beta = np.where(np.arange(n) % 2 == 0, 0.2, 0.9)
    _, new, _ = one_step_from_exact(model, model.kernel, beta, rng, n)
    for value in (0.2, 0.9):
        rows = beta == value
        assert chi2_pvalue(new.x[rows], exact_probs(model, value)) > 1e-3
    assert chi2_pvalue(new.x[beta == 0.2], exact_probs(model, 0.9)) < 1e-6


def test_gibbs_converges_from_a_fixed_start(rng):
    """Ergodicity: from all-zeros, 30 sweeps (fixed order) reach f_beta: chi-square p > 1e-3 (fails with
    probability about 1e-3 once the chain has converged)."""
    model = energy_model(
        RBM_SMALL,
        BASE_MEANS,
        kernel=RBMGibbs(RBM_SMALL.W, RBM_SMALL.a, RBM_SMALL.b, BASE_MEANS, order="fixed", n_sweeps=30),
    )
    family = EnergyFamily(model)
    state = model.kernel.init_state(family, np.zeros((20_000, 4)))
    new, _ = model.kernel.step(rng, state, family, 0.7, None)
    assert chi2_pvalue(new.x, exact_probs(model, 0.7)) > 1e-3


def test_joint_block_gibbs_is_exact_on_joint_states(rng):
    """Block Gibbs on joint states: two chi-square tests at p > 1e-3 (1e-3 each when the kernel is exact)."""
    rbm = random_rbm(3, 2, seed=4, scale=1.2)
    model = energy_model(rbm, [0.3, 0.5, 0.7], space="joint")
    assert isinstance(model.kernel, RBMBlockGibbs)
    n = 60_000
    beta = np.where(np.arange(n) % 3 == 0, 0.4, 0.8)
    _, new, _ = one_step_from_exact(model, model.kernel, beta, rng, n)
    for value in (0.4, 0.8):
        assert chi2_pvalue(new.x[beta == value], exact_probs(model, value)) > 1e-3
    assert chi2_pvalue(new.x[beta == 0.4], exact_probs(model, 0.8)) < 1e-6


def test_uncorrected_block_gibbs_targets_the_wrong_visible_path(rng):
    """h|v, v|h on v alone is exact for the jointly tempered marginal, not for f0^(1-beta) f1^beta:
    the chi-square test detects the difference (this is why RBMBlockMH has an acceptance step): p < 1e-6 (the
    largest p over 30 seeds was 2e-61)."""
    model = energy_model(RBM_SMALL, BASE_MEANS)
    joint = RBMBlockGibbs(RBM_SMALL.W, RBM_SMALL.a, RBM_SMALL.b, BASE_MEANS)
    beta, n = 0.5, 40_000
    X0 = all_states(4)[rng.choice(16, size=n, p=exact_probs(model, beta))]
    v, _ = joint.sweep(rng, X0.copy(), beta)
    assert chi2_pvalue(v, exact_probs(model, beta)) < 1e-6


def test_kernels_check_shapes():
    k = RBMGibbs(RBM_SMALL.W, RBM_SMALL.a, RBM_SMALL.b, BASE_MEANS)
    model = energy_model(RBM_SMALL, BASE_MEANS)
    state = k.init_state(EnergyFamily(model), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="beta"):
        k.step(np.random.default_rng(0), state, EnergyFamily(model), np.ones(2) * 0.5, None)
    with pytest.raises(ValueError, match="base_means"):
        RBMBlockMH(RBM_SMALL.W, RBM_SMALL.a, RBM_SMALL.b, [0.0, 0.5, 0.5, 0.5])


# ------------------------------------------------------------------------------------------ AIS on digits
@pytest.mark.parametrize("space", ["visible", "joint"])
def test_ais_on_digits_h20_matches_exact(space):
    """AIS within 4 se + 0.1 of the exact log Z (6e-5 if the se is right), se < 0.3 (0.02-0.03 on the seeds tried).
    The mean log weight is a stochastic lower bound: its expectation is about log Z - 0.05 to - 0.1 and its sd 0.02,
    so log Z + 0.1 is more than 7 sd above it."""
    truth = rbm_digits(20, space=space)
    family, kernel = EnergyFamily(truth.model), truth.model.kernel
    schedule = make_schedule("linear", AIS_TEMPS[space])
    params = [kernel.default_params(family.dim)] * schedule.size
    record = run_ais(
        family, kernel, schedule, params, n_paths=AIS_PATHS, rng=np.random.default_rng(1), progressbar=False
    )
    est = jarzynski(record, n_bootstrap=0)
    assert est.log_z_se < 0.3
    assert abs(est.log_z - truth.log_z) < 4 * est.log_z_se + 0.1
    assert est.diagnostics.mean_log_w < truth.log_z + 0.1  # stochastic lower bound


AIS_TEMPS = {"visible": 300, "joint": 1000}
AIS_PATHS = 200


def test_evidence_uses_the_rbm_kernel():
    """pmz.evidence picks the RBM's own kernel; log Z within 4 se + 0.1 (6e-5 if the se is right), se < 0.15
    (0.05-0.06 on the seeds tried)."""
    import pmz

    truth = rbm_digits(20)
    res = pmz.evidence(
        truth.model, method="ais", n_temps=100, n_paths=100, schedule="linear", random_seed=3, progressbar=False
    )
    assert res.run_attrs["kernel"] == "rbm_gibbs"
    assert res.log_z_se < 0.15
    assert abs(res.log_z - truth.log_z) < 4 * res.log_z_se + 0.1


@pytest.mark.slow
def test_ais_on_digits_h500_matches_reference():
    """AIS against the stored reference log Z (itself with an se): within 4 combined se + 0.1 (6e-5 if the ses are
    right), se < 0.1."""
    from pmz.boltzmann.rbm import RBM_DIGITS_H500_LOG_Z, RBM_DIGITS_H500_LOG_Z_SE

    truth = rbm_digits(500)
    assert truth.log_z == RBM_DIGITS_H500_LOG_Z
    family, kernel = EnergyFamily(truth.model), truth.model.kernel
    schedule = make_schedule("linear", 300)
    params = [kernel.default_params(family.dim)] * schedule.size
    record = run_ais(family, kernel, schedule, params, n_paths=100, rng=np.random.default_rng(5), progressbar=False)
    est = jarzynski(record, n_bootstrap=0)
    assert est.log_z_se < 0.1
    assert abs(est.log_z - truth.log_z) < 4 * np.hypot(est.log_z_se, RBM_DIGITS_H500_LOG_Z_SE) + 0.1


# ------------------------------------------------------------------------------------------ training
def test_cd1_increases_exact_log_likelihood():
    """CD-1 on noisy copies of three 8-pixel prototypes: the exact average log-likelihood rises (monitored per
    epoch through the callback) and ends well above the initial RBM's and the independent-pixel model's (by at least
    2.2 nats over 40 runs with other data and training seeds, against bounds 1.0 and 0.5)."""
    rng = np.random.default_rng(3)
    prototypes = np.array([[1, 1, 1, 0, 0, 0, 1, 0], [0, 0, 0, 1, 1, 1, 0, 1], [1, 0, 1, 0, 1, 0, 1, 0]], float)
    data = prototypes[rng.integers(0, 3, 300)]
    data = np.abs(data - (rng.uniform(size=data.shape) < 0.05))  # 5% pixel noise

    def avg_ll(rbm):
        return average_log_likelihood(rbm, data, rbm.log_z_exact())

    initial, _ = train_rbm(data, 4, method="cd", n_epochs=0)
    rbm, history = train_rbm(
        data, 4, method="cd", k=1, n_epochs=30, batch_size=10, learning_rate=0.1, callback=lambda epoch, r: avg_ll(r)
    )
    assert history.callback[-1] == avg_ll(rbm)
    assert avg_ll(rbm) > avg_ll(initial) + 1.0
    assert history.callback[-1] > history.callback[0]
    p = data.mean(axis=0)
    independent = np.mean(data @ np.log(p) + (1 - data) @ np.log1p(-p))
    assert avg_ll(rbm) > independent + 0.5


def test_sample_exact_matches_enumeration(rng):
    """sample_exact against enumeration: two chi-square tests at p > 1e-3 (1e-3 each when the sampler is exact)."""
    for rbm in (
        random_rbm(3, 2, seed=8, scale=0.7),
        random_rbm(2, 3, seed=9, scale=0.7),
    ):  # hidden-first and visible-first
        V, H = rbm.sample_exact(rng, 40_000)
        X = np.concatenate([V, H], axis=1)
        S = all_states(5)
        log_p = rbm.log_joint(S[:, : rbm.n_visible], S[:, rbm.n_visible :])
        assert chi2_pvalue(X, np.exp(log_p - np.log(np.sum(np.exp(log_p))))) > 1e-3
    model = energy_model(random_rbm(3, 2, seed=8), [0.5, 0.5, 0.5], space="joint")
    assert model.sample_target(rng, 7).shape == (7, 5)


def test_pcd_training_is_reproducible():
    data = np.tile([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]], (10, 1))
    r1, h1 = train_rbm(data, 2, method="pcd", n_epochs=3, batch_size=5, seed=7)
    r2, h2 = train_rbm(data, 2, method="pcd", n_epochs=3, batch_size=5, seed=7)
    np.testing.assert_array_equal(r1.W, r2.W)
    assert h1.reconstruction_error == h2.reconstruction_error
    with pytest.raises(ValueError, match="method"):
        train_rbm(data, 2, method="sgd")
