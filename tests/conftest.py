"""Shared fixtures of the pmz test suite, and the versions every run prints first.

Tiers: ``python -m pytest`` runs everything but the hazard matrix's slow cells (``--hazard-seeds 1`` adds them; CI
runs it on PyMC 5); ``python -m pytest -m "not slow"`` is the quick tier; ``-m "slow and both_stacks"`` the slow tests
CI runs on PyMC 6 too (see CONTRIBUTING.md).
"""

import logging
import platform
import time
from importlib import metadata

import numpy as np
import pytest

from pmz.model.backend import CompileClock, backend_name, resolve_mode
from pmz.systems import ALL_SYSTEMS

#: the packages whose releases can change what a fixed seed produces; printed at the top of every run
STACK_PACKAGES = ("pymc", "pytensor", "arviz", "numpy", "scipy", "numba", "xarray", "pandas", "pymbar", "dask")


def stack_versions() -> dict:
    """Installed version of each package in ``STACK_PACKAGES`` ("not installed" when absent), and Python's."""
    versions = {"python": platform.python_version()}
    for name in STACK_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions

#: the stack's default backend is PyTensor's C backend (PyTensor 2); tests that compare the C backend (``mode="CVM"``)
#: with the default compile only one of them then
DEFAULT_BACKEND_IS_C = backend_name(resolve_mode(None)) == "c"


def pytest_addoption(parser):
    parser.addoption(
        "--hazard-seeds", default="",
        help="seeds of the hazard matrix's slow cells, comma-separated (tests/studies/test_hazards.py); none by "
             "default (the whole suite runs only its baseline): CI runs seed 1 on PyMC 5 and seed 2 on PyMC 6",
    )
    parser.addoption(
        "--hazard-parts", default="1/1",
        help="which of N interleaved parts of the hazard matrix's slow cells to run, as K/N or K,L/N (default 1/1, "
             "every cell): CI runs one quarter on PyMC 5 and the other three on PyMC 6, rotating daily",
    )


_SESSION_START = time.perf_counter()
_COMPILE_SECONDS_BY_FILE: dict = {}  # test file -> seconds pmz spent compiling in its tests (fixtures included)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before = CompileClock.process_seconds
    yield
    path = item.nodeid.split("::")[0]
    _COMPILE_SECONDS_BY_FILE[path] = _COMPILE_SECONDS_BY_FILE.get(path, 0.0) + CompileClock.process_seconds - before


def pytest_terminal_summary(terminalreporter):
    """How much of the run was pmz compiling its models (PyTensor's graph rewriting, C or Numba code generation),
    and the files that compiled most: where a run's time goes (CONTRIBUTING.md, "What CI runs")."""
    elapsed = time.perf_counter() - _SESSION_START
    terminalreporter.write_line(f"pmz compiled its models for {CompileClock.process_seconds:.0f} s of this "
                                f"run's {elapsed:.0f} s (pm.sample's own compiles not counted); most in:")
    most = sorted(_COMPILE_SECONDS_BY_FILE.items(), key=lambda item: -item[1])[:10]
    for path, seconds in most:
        terminalreporter.write_line(f"  {seconds:6.0f} s  {path}")


def pytest_report_header(config):
    """One line in the log of every run (CI's included) with the releases this run was made with."""
    return "pmz stack: " + ", ".join(f"{name} {version}" for name, version in stack_versions().items())


@pytest.fixture(scope="session")
def systems():
    """Every known-truth system of ``pmz.systems.ALL_SYSTEMS`` (name -> system with its exact ``log_z``), built once
    per session. pmz compiles a model once per model object and option set, so every test that reads these shares
    one compile per system; a test that changes a model (adds a variable, a potential) builds its own."""
    return {name: build() for name, build in ALL_SYSTEMS.items()}


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
