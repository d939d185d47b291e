"""Reference systems with a known log evidence / log partition function."""

from .conjugate import (
    ALL_SYSTEMS,
    KnownTruth,
    beta_binomial,
    linear_regression,
    nig_regression,
    normal_mean,
    poisson_gamma,
)

__all__ = [
    "KnownTruth",
    "ALL_SYSTEMS",
    "normal_mean",
    "linear_regression",
    "nig_regression",
    "beta_binomial",
    "poisson_gamma",
]
