"""Shared fixtures of the pmz test suite."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    """A fresh, fixed-seed Generator for every test (tests never touch the global numpy RNG)."""
    return np.random.default_rng(20261122)
