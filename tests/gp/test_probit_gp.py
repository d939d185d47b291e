"""Probit GP classification: exact orthant evidence, EP / Laplace references, the z-representation SMC sequence
(exact increments and augment, Gibbs invariance) and the PyMC model."""

import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import log_ndtr

from pmz.gp.probit_sequence import ProbitGPSequence, positive_truncated_normal
from pmz.systems.conjugate import KnownTruth
from pmz.gp.classification import (
    digits_gp_problem,
    gp_classification,
    load_digits_gp,
    probit_gp_model,
    probit_log_evidence_ep,
    probit_log_evidence_exact,
    probit_log_evidence_laplace,
    squared_exponential,
)


def _random_covariance(rng, n):
    A = rng.normal(size=(n, n))
    return A @ A.T / n + 0.3 * np.eye(n)


# ----------------------------------------------------------------------------------- reference evidences


@pytest.mark.parametrize("n", [1, 2, 3])
def test_exact_orthant_evidence_matches_brute_force(rng, n):
    """Genz's randomised QMC is accurate to a relative 1e-5 (10x inside the 1e-4 asked) whatever its seed; the
    brute-force fraction's 4-sd binomial bound fails with probability about 6e-5."""
    K = _random_covariance(rng, n)
    y = rng.choice([-1, 1], size=n)
    closed = probit_log_evidence_exact(K, y, method="closed")
    genz = probit_log_evidence_exact(K, y, method="genz")
    assert abs(np.expm1(genz - closed)) < 1e-4
    if n == 1:
        assert closed == np.log(0.5)
    # brute force: the fraction of z ~ N(0, K + I) with sign(z) = y
    M = 2_000_000
    z = rng.standard_normal((M, n)) @ np.linalg.cholesky(K + np.eye(n)).T
    p_hat = np.mean(np.all(y * z > 0, axis=1))
    p = np.exp(closed)
    assert abs(p_hat - p) < 4 * np.sqrt(p * (1 - p) / M)


def test_exact_evidence_is_invariant_to_the_order_of_the_points():
    problem = digits_gp_problem(6)
    perm = np.array([3, 0, 5, 1, 4, 2])
    a = probit_log_evidence_exact(problem.K, problem.y)
    b = probit_log_evidence_exact(problem.K[np.ix_(perm, perm)], problem.y[perm])
    assert abs(a - b) < 1e-4


@pytest.mark.parametrize("amplitude", [2.0, 4.0])
def test_ep_is_close_to_exact_and_laplace_is_below(amplitude):
    # measured on the 8 first digits (length scale 4): EP - exact = -0.0044 (amplitude 2), -0.0094 (amplitude 4);
    # Laplace - exact = -0.235, -0.734. Tolerance for EP: 0.05.
    problem = digits_gp_problem(8, amplitude=amplitude)
    exact = probit_log_evidence_exact(problem.K, problem.y)
    ep = probit_log_evidence_ep(problem.K, problem.y)
    laplace = probit_log_evidence_laplace(problem.K, problem.y)
    assert abs(ep - exact) < 0.05
    assert laplace < ep and laplace < exact - 0.1


def test_ep_and_laplace_on_one_point():
    # one point with zero prior mean: p(y) = Phi(0) = 1/2 exactly, which EP reproduces (its one site is exact)
    K = np.array([[2.5]])
    assert abs(probit_log_evidence_ep(K, [1]) - np.log(0.5)) < 1e-10
    assert probit_log_evidence_laplace(K, [-1]) < np.log(0.5)


def test_data_and_kernel():
    X, y = load_digits_gp()
    assert X.shape == (357, 5) and set(np.unique(y)) == {-1, 1}
    X10, y10 = load_digits_gp(10, n_components=10)
    assert np.allclose(X10[:, :5], X[:10]) and np.array_equal(y10, y[:10])
    K = squared_exponential(X10, 2.0, 3.0, jitter=1e-6)
    d2 = np.sum((X10[1] - X10[4]) ** 2)
    assert np.isclose(K[1, 4], 4.0 * np.exp(-d2 / 18.0)) and np.isclose(K[2, 2], 4.0 + 1e-6)
    assert np.all(np.linalg.eigvalsh(K) > 0)


# ------------------------------------------------------------------------------------- the SMC sequence


def test_positive_truncated_normal_matches_scipy(rng):
    """Ten 4-se bounds (a mean and a variance for each of five means): together they fail with probability about 6e-4
    for an exact sampler."""
    for mean in (-40.0, -3.0, 0.0, 2.0, 30.0):
        u = positive_truncated_normal(rng, np.full(100_000, mean), 1.5)
        exact = stats.truncnorm(-mean / 1.5, np.inf, loc=mean, scale=1.5)
        assert np.all(u > 0)
        assert abs(u.mean() - exact.mean()) < 4 * exact.std() / np.sqrt(u.size)
        centred = (u - exact.mean()) ** 2
        assert abs(centred.mean() - exact.var()) < 4 * centred.std() / np.sqrt(u.size)


def test_precision_grows_by_block_inverse_and_restarts():
    problem = digits_gp_problem(12)
    seq = ProbitGPSequence(problem.K, problem.y, order="random", seed=3)
    for t in (0, 1, 5, 12, 4, 7):  # 4 after 12: a new run restarts the cache
        S = seq.precision(t)
        assert S.shape == (t, t)
        if t:
            assert np.allclose(S, np.linalg.inv(seq.C[:t, :t]), atol=1e-10)
    z = np.random.default_rng(0).normal(size=(3, 12))
    mean, sd = seq.conditional(z, 5)
    c = seq.C[:5, 5]
    assert np.allclose(mean, z[:, :5] @ np.linalg.solve(seq.C[:5, :5], c))
    assert np.isclose(sd**2, seq.C[5, 5] - c @ np.linalg.solve(seq.C[:5, :5], c))


def test_sequence_contract(rng):
    problem = digits_gp_problem(6)
    seq = ProbitGPSequence(problem.K, problem.y, order=[5, 4, 3, 2, 1, 0])
    assert (seq.name, seq.label, seq.dim, seq.log_z0, seq.t_start, seq.t_end) == ("probit_gp", "n_points", 6, 0.0, 0, 6)
    assert seq.describe()["order"] == [5, 4, 3, 2, 1, 0] and seq.describe()["order_rule"] == "custom"
    assert not seq.kernel.tunable and seq.kernel.default_params(6).scale.shape == (6,)
    state = seq.start(rng, 50)
    assert np.all(state.x == 0) and seq.next_position(0, state, np.zeros(50)) == 1
    log_w, same = seq.log_increment(state, 0, 1)
    assert same is state and np.allclose(log_w, np.log(0.5))  # the first point: P(y z > 0) = 1/2
    state = seq.augment(rng, state, 0, 1)
    assert np.all(seq.y[0] * state.x[:, 0] > 0) and np.all(state.x[:, 1:] == 0)
    assert np.array_equal(seq.to_data_order(state.x)[:, 5], state.x[:, 0])
    moved, info = seq.move(rng, state, 1, None)
    assert np.all(info.accepted) and np.all(seq.y[0] * moved.x[:, 0] > 0) and np.all(moved.x[:, 1:] == 0)
    fresh = seq.fresh(rng, 10, 4)
    assert np.all(seq.y[:4] * fresh.x[:, :4] > 0) and np.all(fresh.x[:, 4:] == 0)
    with pytest.raises(ValueError):
        seq.log_increment(state, 1, 3)
    with pytest.raises(ValueError):
        ProbitGPSequence(problem.K, problem.y, order=[0, 0, 1, 2, 3, 4])


def _sis(seq, rng, n_particles):
    """Sequential importance sampling with the exact augment and no moves or resampling: unbiased for Z."""
    state = seq.start(rng, n_particles)
    total = np.zeros(n_particles)
    for t in range(seq.dim):
        log_w, state = seq.log_increment(state, t, t + 1)
        total += log_w
        state = seq.augment(rng, state, t, t + 1)
    return total, state


@pytest.mark.parametrize(
    "n_points, amplitude, order", [(6, 2.0, None), (8, 2.0, "random"), (8, 4.0, None)]
)
def test_sis_with_exact_increments_is_unbiased(rng, n_points, amplitude, order):
    """The 4-se bound (+ 0.02) fails with probability about 6e-5 if the delta-method se is right; se 0.002-0.004 over
    10 seeds (and orders) against the cap 0.05."""
    problem = digits_gp_problem(n_points, amplitude=amplitude)
    exact = probit_log_evidence_exact(problem.K, problem.y)
    seq = ProbitGPSequence(problem.K, problem.y, order=order, seed=1)
    M = 20_000
    log_w, state = _sis(seq, rng, M)
    assert np.all(seq.y * state.x > 0)
    w = np.exp(log_w - log_w.max())
    estimate = np.log(w.mean()) + log_w.max()
    ess = w.sum() ** 2 / np.sum(w**2)
    se = np.sqrt((M / ess - 1) / (M - 1))
    assert se < 0.05
    assert abs(estimate - exact) < 4 * se + 0.02


def _exact_draws(rng, seq, t, n):
    """Draws of p_t (z_[t] ~ N(0, C_[t]) restricted to the label orthant) by rejection."""
    L = np.linalg.cholesky(seq.C[:t, :t])
    out = []
    while sum(len(o) for o in out) < n:
        z = rng.standard_normal((20 * n, t)) @ L.T
        out.append(z[np.all(seq.y[:t] * z > 0, axis=1)])
    return np.concatenate(out)[:n]


def _moments(z):
    """Means, second moments and cross moments of the columns, per draw (for a z-test of their means)."""
    i, j = np.triu_indices(z.shape[1])
    return np.concatenate([z, z[:, i] * z[:, j]], axis=1)


def _assert_same_moments(a, b, z_max=4.5):
    ma, mb = _moments(a), _moments(b)
    diff = ma.mean(0) - mb.mean(0)
    se = np.sqrt(ma.var(0) / len(ma) + mb.var(0) / len(mb))
    assert np.max(np.abs(diff / se)) < z_max


@pytest.mark.parametrize("t", [3, 5])
def test_gibbs_sweep_leaves_the_truncated_gaussian_invariant(rng, t):
    """Two comparisons of up to 20 moments each at |z| < 4.5: they fail with probability at most 2 x 20 x 6.8e-6 =
    3e-4 for an exact kernel (Bonferroni)."""
    problem = digits_gp_problem(5, amplitude=2.0, length_scale=3.0)
    seq = ProbitGPSequence(problem.K, problem.y, order="random", seed=2)
    n = 20_000
    start = np.zeros((n, seq.dim))
    start[:, :t] = _exact_draws(rng, seq, t, n)
    state = seq._state(start)
    for _ in range(2):
        state, _ = seq.move(rng, state, t, None)
    assert np.all(state.x[:, t:] == 0)
    reference = _exact_draws(rng, seq, t, n)
    _assert_same_moments(state.x[:, :t], reference)
    # from a bad start (independent half-normals), many sweeps reach the same distribution
    state = seq.fresh(rng, n, t)
    state = state.__class__(state.x * 3.0, state.parts)
    for _ in range(30):
        state, _ = seq.move(rng, state, t, None)
    _assert_same_moments(state.x[:, :t], reference)


def test_resample_move_smc_recovers_the_evidence(rng):
    """A small resample-move run (resampling at ESS < R/2, one Gibbs sweep per stage) has no per-run se: the estimate's
    sd over 20 seeds is 0.015 (mean error -0.003) with 2000 particles, so the tolerance 0.1 (6.7 sd) fails with
    probability below 1e-10 for a normal spread."""
    problem = digits_gp_problem(10, amplitude=4.0)
    exact = probit_log_evidence_exact(problem.K, problem.y)
    seq = ProbitGPSequence(problem.K, problem.y)
    R = 2000
    state, log_w, log_z = seq.start(rng, R), np.zeros(R), 0.0
    for t in range(seq.dim):
        inc, state = seq.log_increment(state, t, t + 1)
        prev = np.exp(log_w - log_w.max()) / np.sum(np.exp(log_w - log_w.max()))
        log_z += np.log(np.sum(prev * np.exp(inc)))
        log_w = log_w + inc
        state = seq.augment(rng, state, t, t + 1)
        w = np.exp(log_w - log_w.max())
        if w.sum() ** 2 / np.sum(w**2) < R / 2:
            state, log_w = state.take(rng.choice(R, size=R, p=w / w.sum())), np.zeros(R)
        state, _ = seq.move(rng, state, t + 1, None)
    assert abs(log_z - exact) < 0.1


# ----------------------------------------------------------------------------------------- PyMC model


@pytest.mark.parametrize("latent, likelihood", [("gp", "stable"), ("mvnormal", "stable"), ("gp", "bernoulli")])
def test_pymc_model_log_density(rng, latent, likelihood):
    from pmz.model.pymc import CompiledModel
    from pmz.model.reference import PriorReference

    problem = digits_gp_problem(6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = probit_gp_model(
            problem.X, problem.y, problem.amplitude, problem.length_scale, latent=latent, likelihood=likelihood
        )
        compiled = CompiledModel(model)
        X = PriorReference(compiled).sample(rng, 4)
        if likelihood == "stable":  # far tails: log Phi(-30 * ...) is finite and exact only in the stable form
            X = np.vstack([X, np.full(6, 30.0), np.full(6, -30.0)])
        log_prior, log_lik, _, grad_lik = compiled.log_densities_and_grads(X)
    assert np.all(np.isfinite(log_prior)) and np.all(np.isfinite(log_lik)) and np.all(np.isfinite(grad_lik))
    L = np.linalg.cholesky(problem.K)
    f = X @ L.T if latent == "gp" else X
    assert np.allclose(log_lik, np.sum(log_ndtr(problem.y * f), axis=1), rtol=1e-7, atol=1e-8)


def test_bernoulli_likelihood_is_recognised_by_the_gp_structure():
    gp_structure = pytest.importorskip("pmz.gp.structure").gp_structure

    problem = digits_gp_problem(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = probit_gp_model(problem.X, problem.y, likelihood="bernoulli")
        structure = gp_structure(model)
    assert structure.likelihood == "bernoulli_probit"
    assert np.allclose(structure.cov, problem.K, atol=1e-8)


def test_known_truth_builder():
    truth = gp_classification(4, latent="mvnormal")
    assert isinstance(truth, KnownTruth) and truth.name == "gp_classification"
    problem = digits_gp_problem(4)
    assert abs(truth.log_z - probit_log_evidence_exact(problem.K, problem.y)) < 1e-4
    assert [v.name for v in truth.model.free_RVs] == ["f"]
    with pytest.raises(ValueError):
        gp_classification(20, reference="exact")
