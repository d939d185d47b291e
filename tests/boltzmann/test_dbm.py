"""Deep Boltzmann machine (two hidden layers): exact log Z and log Z(v) against brute force, log Z by pmz (BAR, AIS)
against enumeration, the mean-field lower bound, and invariance of block Gibbs by layer."""

import numpy as np
import pytest
from scipy import stats

import pmz
from pmz.families.energy import EnergyFamily
from pmz.boltzmann.dbm_gibbs import DBMLayerGibbs, DBMState
from pmz.systems import dbm_tiny, random_dbm
from pmz.boltzmann.dbm import DBM, energy_model
from pmz.weights import logsumexp


def all_states(n_bits):
    idx = np.arange(2**n_bits)
    return ((idx[:, None] >> np.arange(n_bits)) & 1).astype(float)


def joint_table(dbm):
    """Every state (v, h1, h2) of a small DBM, as layers, and its unnormalised log probability."""
    nv, n1, n2 = dbm.sizes
    S = all_states(nv + n1 + n2)
    V, H1, H2 = S[:, :nv], S[:, nv : nv + n1], S[:, nv + n1 :]
    log_f = np.zeros(S.shape[0])  # -E term by term, unit by unit
    for i in range(nv):
        log_f += dbm.a[i] * V[:, i]
    for j in range(n1):
        log_f += dbm.b1[j] * H1[:, j]
        for i in range(nv):
            log_f += dbm.W1[i, j] * V[:, i] * H1[:, j]
        for k in range(n2):
            log_f += dbm.W2[j, k] * H1[:, j] * H2[:, k]
    log_f += H2 @ dbm.b2
    return V, H1, H2, log_f


# ------------------------------------------------------------------------------------------ exact values
@pytest.mark.parametrize("sizes", [(4, 3, 2), (2, 5, 1), (3, 2, 4)])
def test_exact_log_z_and_energy_match_brute_force(sizes):
    """(4, 3, 2) enumerates h1 (3 < 4 + 2); (2, 5, 1) enumerates (v, h2) (3 < 5); (3, 2, 4) has n1 < n2."""
    dbm = random_dbm(*sizes, seed=7, scale=1.3)
    V, H1, H2, log_f = joint_table(dbm)
    np.testing.assert_allclose(dbm.log_joint(V, H1, H2), log_f, rtol=0, atol=1e-12)
    np.testing.assert_allclose(dbm.energy(V, H1, H2), -log_f, rtol=0, atol=1e-12)
    rbm = dbm.as_rbm()  # the bipartite view: visible (v, h2), hidden h1
    np.testing.assert_allclose(rbm.log_joint(np.concatenate([V, H2], 1), H1), log_f, rtol=0, atol=1e-12)
    assert abs(dbm.exact_log_z() - logsumexp(log_f)) < 1e-10


@pytest.mark.parametrize("sizes", [(4, 3, 2), (4, 2, 3), (3, 3, 3)])
def test_log_z_given_v_matches_brute_force(sizes):
    """Both branches (enumerate h1 when n1 <= n2, else h2), with and without blocks; sum_v p(v) = 1."""
    dbm = random_dbm(*sizes, seed=3, scale=1.5)
    V, _, _, log_f = joint_table(dbm)
    Vs = all_states(sizes[0])
    brute = np.array([logsumexp(log_f[np.all(V == v, axis=1)]) for v in Vs])
    np.testing.assert_allclose(dbm.log_z_given_v(Vs), brute, rtol=0, atol=1e-12)
    np.testing.assert_allclose(dbm.log_z_given_v(Vs, max_elements=5), brute, rtol=0, atol=1e-12)  # blocks of states
    assert abs(logsumexp(dbm.log_likelihood(Vs, dbm.exact_log_z()))) < 1e-12


def test_energy_models_sum_to_log_z():
    dbm = random_dbm(3, 3, 2, seed=5)
    for space, dim in (("even", 5), ("joint", 8)):
        model = energy_model(dbm, [0.2, 0.5, 0.7], space=space)
        assert model.dim == dim and model.dbm is dbm
        X = all_states(dim)
        assert abs(logsumexp(model.log_f1(X)) - dbm.exact_log_z()) < 1e-12
        assert abs(logsumexp(model.base.log_density(X))) < 1e-12  # normalised base
        assert model.sample_target(np.random.default_rng(0), 3).shape == (3, dim)


def test_sample_exact_matches_enumeration(rng):
    """p > 1e-3 fails with probability 1e-3 when the draws are exact (every expected count >= 5)."""
    dbm = random_dbm(3, 2, 2, seed=8, scale=0.5)
    _, _, _, log_f = joint_table(dbm)
    draws = dbm.sample_exact(rng, 40_000)
    assert chi2_pvalue(draws.x, np.exp(log_f - logsumexp(log_f))) > 1e-3


def test_errors():
    with pytest.raises(ValueError, match="W2"):
        DBM(np.zeros((3, 2)), np.zeros((3, 2)), np.zeros(3), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="b1"):
        DBM(np.zeros((3, 2)), np.zeros((2, 2)), np.zeros(3), np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="2\\^30 states"):
        random_dbm(40, 30, 10).exact_log_z()
    with pytest.raises(ValueError, match="2\\^25 hidden"):
        random_dbm(2, 30, 25).log_z_given_v(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="shape"):
        random_dbm(2, 3, 1).log_z_given_v(np.zeros((1, 3)))
    dbm = random_dbm(3, 2, 2)
    with pytest.raises(ValueError, match="space"):
        energy_model(dbm, space="odd")
    with pytest.raises(ValueError, match="3 entries"):
        energy_model(dbm, np.full(5, 0.5))
    with pytest.raises(ValueError, match="not available"):
        energy_model(dbm, space="joint", kernel="gibbs")
    with pytest.raises(ValueError, match="not available"):
        energy_model(dbm, kernel="layer_gibbs")
    with pytest.raises(ValueError, match="base_means"):
        DBMLayerGibbs(dbm.W1, dbm.W2, dbm.a, dbm.b1, dbm.b2, [0.0, 0.5, 0.5])


# ------------------------------------------------------------------------------------------ log Z by pmz
TINY_OPTIONS = dict(n_paths=200, n_temps=100, progressbar=False)


@pytest.mark.parametrize("space", ["even", "joint"])
@pytest.mark.parametrize("method", ["bar", "ais"])
def test_evidence_matches_enumeration(method, space):
    """10-6-4 DBM: "even" space (v, h2) with h1 summed out and the RBM heat bath, or the joint space with block
    Gibbs by layer; BAR's reverse paths start at exact draws. The 4-se bound (+ 0.01) fails with probability about
    6e-5 if the se is right; se 0.024-0.065 over seeds 1-8 against the cap 0.1."""
    truth = dbm_tiny(space=space)
    res = pmz.evidence(truth.model, method=method, random_seed=1, **TINY_OPTIONS)
    assert res.run_attrs["kernel"] == ("rbm_gibbs" if space == "even" else "dbm_layer_gibbs")
    assert res.log_z_se < 0.1
    assert abs(res.log_z - truth.log_z) < 4 * res.log_z_se + 0.01


@pytest.mark.parametrize(("space", "method"), [("even", "ais"), ("joint", "bar")])
def test_evidence_on_a_digits_sized_dbm(space, method):
    """A 64-20-16 DBM (weights sd 0.3): exact log Z enumerates the 2^20 states of h1 (under a second); measured
    even/AIS 80.9972 +- 0.0260, joint/BAR 80.9977 +- 0.0283 against 80.9794 (K = 300, 200 paths, ~1 s each); se
    0.025-0.030 over seeds 1-8 against the cap 0.05. The 4-se bound (+ 0.01) fails with probability about 6e-5 if the
    se is right."""
    dbm = random_dbm(64, 20, 16, seed=0, scale=0.3)
    truth = dbm.exact_log_z()
    res = pmz.evidence(energy_model(dbm, space=space), method=method, random_seed=1, n_paths=200, n_temps=300,
                       progressbar=False)
    assert res.log_z_se < 0.05
    assert abs(res.log_z - truth) < 4 * res.log_z_se + 0.01


# ------------------------------------------------------------------------------------------ mean field
def test_mean_field_lower_bound():
    """For every v of a 10-6-4 DBM: bound <= exact log p(v); tight (measured: gap 0.136 nats averaged over p(v),
    0.231 over all 1024 v, at most 0.486); more fixed-point steps never lower it (the first-pass bound is 0.63
    nats lower on average); the returned means are a fixed point."""
    dbm = random_dbm(10, 6, 4, seed=0)
    log_z = dbm.exact_log_z()
    V = all_states(10)
    exact = dbm.log_likelihood(V, log_z)
    bound = dbm.lower_bound(V, log_z)
    gap = exact - bound
    assert np.all(gap >= -1e-10)
    assert np.exp(exact) @ gap < 0.2 and np.mean(gap) < 0.3 and np.max(gap) < 0.6
    coarse = dbm.lower_bound(V, log_z, n_steps=0)
    assert np.all(bound >= coarse - 1e-10) and np.mean(bound - coarse) > 0.3
    mu1, mu2 = dbm.mean_field(V, n_steps=200, tol=1e-12)
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    np.testing.assert_allclose(mu1, sig(dbm.b1 + V @ dbm.W1 + mu2 @ dbm.W2.T), atol=1e-9)
    np.testing.assert_allclose(mu2, sig(dbm.b2 + mu1 @ dbm.W2), atol=1e-9)
    np.testing.assert_allclose(dbm.lower_bound(V, log_z, mean_field=(mu1, mu2)), bound, atol=1e-6)


# ------------------------------------------------------------------------------------------ block Gibbs by layer
def chi2_pvalue(X, probs):
    counts = np.bincount((X @ (2 ** np.arange(X.shape[1]))).astype(int), minlength=probs.size)
    expected = probs * X.shape[0]
    assert expected.min() >= 5, "chi-square needs expected counts >= 5"
    return stats.chisquare(counts, expected).pvalue


def test_layer_gibbs_moments_match_enumeration(rng):
    """2000 independent chains of a 5-4-3 DBM from uniform starts, 100 burn-in sweeps, then the time averages of
    200 sweeps: each chain's average is one draw, so the MCSE is the sd over chains / sqrt(2000). Means of v, h1,
    h2 and of v_i h1_j, h1_j h2_k against enumeration, |z| < 4 for each of the 52 moments: fails with probability at
    most 52 x 6.3e-5 = 3.3e-3 for an exact kernel (Bonferroni; the moments are correlated, so less)."""
    dbm = random_dbm(5, 4, 3, seed=2, scale=1.0)
    V, H1, H2, log_f = joint_table(dbm)
    p = np.exp(log_f - logsumexp(log_f))

    def moments(v, h1, h2):
        vh1 = (v[:, :, None] * h1[:, None, :]).reshape(len(v), -1)
        h1h2 = (h1[:, :, None] * h2[:, None, :]).reshape(len(v), -1)
        return np.concatenate([v, h1, h2, vh1, h1h2], axis=1)

    exact = p @ moments(V, H1, H2)
    gibbs = dbm.layer_gibbs()
    n, burn, keep = 2000, 100, 200
    state = DBMState(*(rng.integers(0, 2, (n, k)).astype(float) for k in dbm.sizes))
    for _ in range(burn):
        state = gibbs.sweep(rng, state)
    total = np.zeros((n, exact.size))
    for _ in range(keep):
        state = gibbs.sweep(rng, state)
        total += moments(state.v, state.h1, state.h2)
    per_chain = total / keep
    mean, mcse = per_chain.mean(axis=0), per_chain.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.max(mcse) < 0.002  # measured 0.001
    assert np.max(np.abs(mean - exact) / mcse) < 4  # measured 2.05
    # power: the moments of exp(-0.9 E) are many MCSEs away
    p_hot = np.exp(0.9 * log_f - logsumexp(0.9 * log_f))
    assert np.max(np.abs(mean - p_hot @ moments(V, H1, H2)) / mcse) > 10


def test_layer_gibbs_kernel_is_exact_on_the_tempered_path(rng):
    """Exact draws of f_beta (base Bern(p0) on v, uniform hidden units), one kernel step: the states are again exact
    draws (chi-square over all 2^7 states), at two temperatures in one batch; the test has power (wrong beta). Two
    p > 1e-3 checks: they fail with probability about 2e-3 for an exact kernel; 98% of the states move in one step
    (> 30% asked)."""
    dbm = random_dbm(3, 2, 2, seed=4, scale=0.8)
    model = energy_model(dbm, [0.3, 0.5, 0.7], space="joint")
    X = all_states(7)
    family = EnergyFamily(model)

    def probs(beta):
        log_p = (1 - beta) * model.base.log_density(X) + beta * model.log_f1(X)
        return np.exp(log_p - logsumexp(log_p))

    n = 60_000
    beta = np.where(np.arange(n) % 3 == 0, 0.4, 0.8)
    X0 = np.empty((n, 7))
    for value in (0.4, 0.8):
        rows = beta == value
        X0[rows] = X[rng.choice(X.shape[0], size=rows.sum(), p=probs(value))]
    state = model.kernel.init_state(family, X0)
    new, info = model.kernel.step(rng, state, family, beta, model.kernel.default_params(7))
    for value in (0.4, 0.8):
        assert chi2_pvalue(new.x[beta == value], probs(value)) > 1e-3
    assert chi2_pvalue(new.x[beta == 0.4], probs(0.8)) < 1e-6
    assert np.mean(np.any(new.x != X0, axis=1)) > 0.3
    np.testing.assert_allclose(new.parts.U, model.log_f1(new.x) - model.base.log_density(new.x))
    assert info.acceptance.shape == (n,)
