"""The mixture reference: normalised, exact draws, the gradient of its log density."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from pmz.model.mixture_reference import MixtureReference
from pmz.model.reference import GaussianReference, StudentTReference


def _mixture():
    return MixtureReference(
        [GaussianReference([-3.0], [[0.5]]), StudentTReference([2.0], [[1.0]], df=4.0)], [0.3, 0.7]
    )


def test_log_density_integrates_to_one_and_matches_scipy():
    q = _mixture()
    f = lambda x: np.exp(q.log_density(np.array([[x]])))[0]  # noqa: E731
    total = sum(integrate.quad(f, a, b, limit=200)[0] for a, b in ((-np.inf, -3), (-3, 2), (2, np.inf)))
    assert total == pytest.approx(1.0, abs=1e-8)
    x = np.linspace(-5, 5, 7)[:, None]
    expected = 0.3 * stats.norm.pdf(x[:, 0], -3, np.sqrt(0.5)) + 0.7 * stats.t.pdf(x[:, 0], 4, loc=2.0)
    np.testing.assert_allclose(np.exp(q.log_density(x)), expected, rtol=1e-10)


def test_draws_follow_the_weights():
    q = _mixture()
    X = q.sample(np.random.default_rng(0), 20000)
    share = np.mean(X[:, 0] < -0.5)  # the components barely overlap at -0.5
    assert abs(share - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 20000) + 0.01


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    q = MixtureReference([GaussianReference(rng.normal(size=3), np.eye(3) * s) for s in (0.5, 2.0)], [1.0, 3.0])
    X = rng.normal(size=(5, 3))
    h = 1e-6
    numeric = np.stack(
        [(q.log_density(X + h * e) - q.log_density(X - h * e)) / (2 * h) for e in np.eye(3)], axis=1
    )
    np.testing.assert_allclose(q.grad_log_density(X), numeric, rtol=1e-6, atol=1e-8)


def test_bad_weights_are_refused():
    g = GaussianReference([0.0], [[1.0]])
    with pytest.raises(ValueError, match="positive"):
        MixtureReference([g, g], [1.0, 0.0])
    with pytest.raises(ValueError, match="one positive weight per component"):
        MixtureReference([g], [0.5, 0.5])


class _TwoBumps:
    """``p~(x) = Z (0.3 N(x; -3, 0.5) + 0.7 N(x; 2, 1))`` in 1-D with ``log Z = 1.5``: a target for importance
    sampling from a mixture reference."""

    dim = 1
    log_z = 1.5

    def log_densities(self, X):
        x = X[:, 0]
        p = 0.3 * stats.norm.pdf(x, -3.0, np.sqrt(0.5)) + 0.7 * stats.norm.pdf(x, 2.0, 1.0)
        with np.errstate(divide="ignore"):
            return np.log(p) + self.log_z, np.zeros_like(x)


def test_importance_sampling_from_a_mixture_reference():
    """A reference close to the target (the modes route's case): the pooled estimate and its two independent
    halves are within 4 se (+0.005) of log Z, with small se; the posterior draws follow the target (share of the
    left bump within 4 binomial se + 0.02). A reference that misses the right bump's width by 10x is refused with
    a reason (ESS or k-hat), so the route falls back to SMC."""
    from pmz.auto.importance_sampling import importance_from_reference

    target = _TwoBumps()
    q = _mixture()
    estimates, record, posterior, why_not = importance_from_reference(target, q, np.random.default_rng(2), 0.7)
    assert why_not == "" and [name for name, _ in estimates] == ["is_modes", "is_a", "is_b"]
    for _, est in estimates:
        assert abs(est.log_z - target.log_z) < 4 * est.log_z_se + 0.005 and est.log_z_se < 0.01
        assert est.reliable
    assert record.log_weights.size == 1 << 16
    share = np.mean(posterior[..., 0] < -0.5)
    assert posterior.shape == (4, 1000, 1) and abs(share - 0.3) < 4 * np.sqrt(0.21 / 4000) + 0.02

    narrow = MixtureReference([GaussianReference([-3.0], [[0.5]]), GaussianReference([2.0], [[0.01]])], [0.3, 0.7])
    estimates, _, posterior, why_not = importance_from_reference(target, narrow, np.random.default_rng(2), 0.7)
    assert not estimates and posterior is None
    assert "ESS" in why_not or "k-hat" in why_not
