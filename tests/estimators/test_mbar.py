"""MBAR (pmz.estimators.mbar): against pymbar, against exact log Z, and its invariances.

pymbar works with reduced potentials and free energies: ``u_kn = -log_f`` and ``Delta_f[0, k] = -(log Z_k - log Z_0)``.

Against pymbar the comparison is numerical (same draws). Against the exact answer each bound is 4 asymptotic se
(+0.01) on exact, independent draws: about 6e-5 per state.
"""

import numpy as np
import pytest

from pmz.estimators.mbar import MBARSolution, mbar, mbar_log_z, tempered_log_f
from pmz.records import EvidenceEstimate

MU = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
SD = np.array([1.0, 1.3, 1.6, 1.9, 2.2])


def harmonic_draws(seed, n_k):
    """Random offsets c_k and exact draws of the K = 5 Gaussian states, pooled in state order."""
    rng = np.random.default_rng(seed)
    c = rng.normal(0.0, 3.0, MU.size)
    return c, np.concatenate([rng.normal(m, s, n) for m, s, n in zip(MU, SD, n_k)])


def harmonic(seed, n_k=(400, 300, 500, 200, 350)):
    """K = 5 Gaussian states ``log f_k = -(x - mu_k)^2 / (2 sd_k^2) + c_k`` with exact draws; log Z relative to 0."""
    n_k = np.asarray(n_k)
    c, x = harmonic_draws(seed, n_k)
    log_f = -0.5 * ((x[None, :] - MU[:, None]) / SD[:, None]) ** 2 + c[:, None]
    truth = c + np.log(SD)
    return log_f, n_k, truth - truth[0]


def gaussian_path(seed, betas, n_per, offset=0.0, s0=2.0, s_lik=0.5, m=1.0):
    """Power posteriors of prior N(0, s0^2) and ``U(x) = -(x - m)^2 / (2 s_lik^2) + offset``; exact draws and log Z."""
    rng = np.random.default_rng(seed)
    prec = 1.0 / s0**2 + betas / s_lik**2
    x = np.concatenate([rng.normal(b * m / s_lik**2 / p, p**-0.5, n_per) for b, p in zip(betas, prec)])
    U = -((x - m) ** 2) / (2 * s_lik**2) + offset
    var = s_lik**2 + betas * s0**2
    log_z = -betas * m**2 / (2 * var) + 0.5 * np.log(s_lik**2 / var) + offset * betas
    return U, np.full(betas.size, n_per), log_z


def pymbar_log_z(log_f, n_k):
    pymbar = pytest.importorskip("pymbar")
    out = pymbar.MBAR(-log_f, n_k).compute_free_energy_differences()
    return -out["Delta_f"][0], out["dDelta_f"][0]


def assert_matches_pymbar(log_f, n_k):
    ref, ref_se = pymbar_log_z(log_f, n_k)
    sol = mbar_log_z(log_f, n_k)
    assert sol.converged
    np.testing.assert_allclose(sol.log_z, ref, rtol=0, atol=1e-6)
    np.testing.assert_allclose(sol.log_z_se[1:], ref_se[1:], rtol=1e-4)
    assert sol.log_z_se[0] == 0.0


# ---------------------------------------------------------------- against pymbar


@pytest.mark.parametrize("seed", [0, 1])
def test_harmonic_oscillators_match_pymbar(seed):
    log_f, n_k, _ = harmonic(seed)
    assert_matches_pymbar(log_f, n_k)


def test_tempered_gaussian_path_matches_pymbar():
    betas = np.linspace(0.0, 1.0, 8) ** 3
    U, n_k, _ = gaussian_path(3, betas, 150)
    assert_matches_pymbar(tempered_log_f(U, betas), n_k)


def test_unsampled_states_match_pymbar():
    log_f, n_k, _ = harmonic(4, n_k=(0, 600, 0, 500, 500))  # the reference state 0 is unsampled as well
    assert_matches_pymbar(log_f, n_k)


# ---------------------------------------------------------------- against the exact answer


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_harmonic_oscillators_exact(seed):
    """Five 4-se bounds per seed (four states besides the reference, and the wrapper's): about 3e-4 per seed."""
    log_f, n_k, truth = harmonic(seed)
    sol = mbar_log_z(log_f, n_k)
    assert isinstance(sol, MBARSolution) and sol.converged
    assert np.all(sol.log_z_se < 0.05)
    assert np.all(np.abs(sol.log_z - truth) < 4 * sol.log_z_se + 0.01)
    est = mbar(log_f, n_k)
    assert abs(est.log_z - truth[-1]) < 4 * est.log_z_se + 0.01


def test_tempered_path_exact_with_huge_log_f():
    """``U ~ -1e4``: log Z_k spans 1e4 and pymbar's solvers give up, but the log-space Newton solver does not.
    Nine 4-se bounds (+0.01): about 6e-4 together."""
    betas = np.linspace(0.0, 1.0, 10) ** 3
    U, n_k, truth = gaussian_path(5, betas, 300, offset=-1e4)
    with np.errstate(over="raise", invalid="raise"):
        sol = mbar_log_z(tempered_log_f(U, betas), n_k)
    assert sol.converged and np.all(np.isfinite(sol.log_z_se)) and np.all(sol.log_z_se < 0.1)
    assert np.all(np.abs(sol.log_z - truth) < 4 * sol.log_z_se + 0.01)
    # the same draws without the offset: log Z_k shifts by exactly -1e4 b_k, the error bars do not change
    plain = mbar_log_z(tempered_log_f(U + 1e4, betas), n_k)
    np.testing.assert_allclose(sol.log_z, plain.log_z - 1e4 * betas, rtol=0, atol=1e-7)
    np.testing.assert_allclose(sol.log_z_se, plain.log_z_se, rtol=1e-6, atol=1e-12)


def test_unsampled_states_get_finite_estimates():
    """Four 4-se bounds (+0.01): about 2.5e-4 together."""
    log_f, n_k, truth = harmonic(6, n_k=(0, 700, 0, 700, 0))
    sol = mbar_log_z(log_f, n_k)
    assert sol.converged
    assert np.all(np.isfinite(sol.log_z)) and np.all(np.isfinite(sol.log_z_se))
    assert np.all(sol.log_z_se[1:] > 0)
    assert np.all(np.abs(sol.log_z - truth) < 4 * sol.log_z_se + 0.01)
    np.testing.assert_allclose(sol.weights.sum(axis=0), 1.0, rtol=1e-8)


# ---------------------------------------------------------------- invariances and solvers


def test_row_and_column_constants():
    log_f, n_k, _ = harmonic(7)
    base = mbar_log_z(log_f, n_k)
    rng = np.random.default_rng(8)
    rows = rng.normal(0.0, 1e4, (n_k.size, 1))
    cols = rng.normal(0.0, 1e4, (1, log_f.shape[1]))
    shifted = mbar_log_z(log_f + rows + cols, n_k)
    assert shifted.converged
    np.testing.assert_allclose(shifted.log_z, base.log_z + rows[:, 0] - rows[0, 0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(shifted.log_z_se, base.log_z_se, rtol=1e-6)
    np.testing.assert_allclose(shifted.weights, base.weights, rtol=1e-6, atol=1e-12)


def test_newton_and_lbfgs_agree():
    for log_f, n_k in [harmonic(9)[:2], harmonic(9, n_k=(500, 0, 500, 0, 500))[:2]]:
        newton = mbar_log_z(log_f, n_k, method="newton")
        lbfgs = mbar_log_z(log_f, n_k, method="lbfgs")
        assert newton.converged and lbfgs.converged
        np.testing.assert_allclose(lbfgs.log_z, newton.log_z, rtol=0, atol=1e-6)
        np.testing.assert_allclose(lbfgs.log_z_se, newton.log_z_se, rtol=1e-5, atol=1e-12)


def test_weights_give_state_expectations():
    """Each weight column sums to 1 and reweights the pooled draws to its state (here: the state means). The bound,
    5 sd_k / sqrt(min n), is at least 5 se of each reweighted mean: below 1e-6 each."""
    log_f, n_k, _ = harmonic(13)
    x = harmonic_draws(13, n_k)[1]
    sol = mbar_log_z(log_f, n_k)
    np.testing.assert_allclose(sol.weights.sum(axis=0), 1.0, rtol=1e-8)
    mean = sol.weights.T @ x
    assert np.all(np.abs(mean - MU) < 5 * SD / np.sqrt(n_k.min()))


# ---------------------------------------------------------------- the EvidenceEstimate wrapper and helpers


def test_mbar_estimate_target_and_reference():
    log_f, n_k, truth = harmonic(14)
    sol = mbar_log_z(log_f, n_k)
    est = mbar(log_f, n_k, target=3, reference=1)
    assert isinstance(est, EvidenceEstimate) and est.method == "mbar" and est.warnings == []
    assert est.log_z == pytest.approx(sol.log_z[3] - sol.log_z[1], abs=1e-12)
    C = sol.log_z_cov
    assert est.log_z_se == pytest.approx(np.sqrt(C[3, 3] + C[1, 1] - 2 * C[3, 1]), rel=1e-10)
    d = est.diagnostics
    assert d.converged and d.n_iter == sol.n_iter
    np.testing.assert_allclose(d.log_z_k, sol.log_z - sol.log_z[1], atol=1e-12)
    assert d.log_z_k_se[1] == 0.0 and d.log_z_k_se[3] == pytest.approx(est.log_z_se)
    default = mbar(log_f, n_k)
    assert default.log_z == pytest.approx(sol.log_z[-1]) and default.log_z_se == pytest.approx(sol.log_z_se[-1])


def test_mbar_warns_when_not_converged():
    log_f, n_k, _ = harmonic(15)
    est = mbar(log_f, n_k, max_iter=2)
    assert not est.diagnostics.converged
    assert len(est.warnings) == 1 and "did not converge" in est.warnings[0]


def test_tempered_log_f():
    U = np.array([-1.0, -np.inf, 2.0])
    betas = np.array([0.0, 0.5, 1.0])
    out = tempered_log_f(U, betas)
    assert out.shape == (3, 3)
    np.testing.assert_array_equal(out[0], 0.0)  # b = 0 with U = -inf is log f0, not NaN
    np.testing.assert_array_equal(out[1:], betas[1:, None] * U[None, :])


def test_bad_input():
    log_f, n_k, _ = harmonic(16)
    with pytest.raises(ValueError, match="sum to the number of draws"):
        mbar_log_z(log_f, n_k + 1)
    with pytest.raises(ValueError, match="NaN"):
        mbar_log_z(np.where(log_f > 0, np.nan, log_f), n_k)
    log_f, n_k, _ = harmonic(16, n_k=(400, 300, 0, 200, 350))
    with pytest.raises(ValueError, match="-inf"):  # an unsampled state with f = 0 at every draw: log Z unknowable
        mbar_log_z(np.where(np.arange(5)[:, None] == 2, -np.inf, log_f), n_k)
    with pytest.raises(ValueError, match="method"):
        mbar_log_z(log_f, n_k, method="bfgs")
