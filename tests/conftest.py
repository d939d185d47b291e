"""Shared fixtures of the pmz test suite."""

import logging

import numpy as np
import pytest


@pytest.fixture
def rng():
    """A fresh, fixed-seed Generator for every test (tests never touch the global numpy RNG)."""
    return np.random.default_rng(20261122)


@pytest.fixture
def quiet_pymc():
    """pm.sample's INFO lines (step assignment, sampling summary) off for the duration of a test."""
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)
