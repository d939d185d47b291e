"""The batched factors of the Laplace route's precisions (pmz.model.batched_precision): the band against the dense
factor of the same matrices."""

import numpy as np
import pytest

from pmz.model.batched_precision import BandFactor, DenseFactor


def _banded(rng, batch, m, half_width):
    """Positive definite matrices with nonzeros within ``half_width`` of the diagonal, and their band storage."""
    offset = np.abs(np.subtract.outer(np.arange(m), np.arange(m)))
    A = rng.normal(size=(batch, m, m)) * ((offset > 0) & (offset <= half_width))
    P = A + np.swapaxes(A, 1, 2)
    P[:, np.arange(m), np.arange(m)] = np.abs(P).sum(axis=2) + 1.0  # diagonally dominant: positive definite
    band = np.zeros((batch, m, half_width + 1))
    for k in range(half_width + 1):
        band[:, k:, k] = P[:, np.arange(k, m), np.arange(m - k)]
    return P, band


@pytest.mark.parametrize("half_width", [1, 2, 6])
def test_the_band_factor_agrees_with_the_dense_one(half_width):
    rng = np.random.default_rng(half_width)
    P, band = _banded(rng, 3, 20, half_width)
    banded, dense = BandFactor(band), DenseFactor(P)
    g = rng.normal(size=(3, 20))
    for name in ("whiten", "from_white", "solve", "times"):
        np.testing.assert_allclose(getattr(banded, name)(g), getattr(dense, name)(g), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(banded.log_det, dense.log_det, rtol=1e-12)
    np.testing.assert_allclose(banded.diagonal(), np.diagonal(P, axis1=1, axis2=2), rtol=1e-12)
    assert banded.ok.all()


def test_a_row_that_is_not_positive_definite_is_marked_and_kept_finite():
    rng = np.random.default_rng(0)
    P, band = _banded(rng, 3, 12, 2)
    band[1, 5, 0] = -10.0
    banded = BandFactor(band)
    assert banded.ok.tolist() == [True, False, True]
    assert np.isfinite(banded.solve(rng.normal(size=(3, 12)))).all() and np.isfinite(banded.log_det).all()
