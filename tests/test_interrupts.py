"""Ctrl-C in the default (method="auto"): pmz's interrupt message or its partial result, never the SystemError that a
KeyboardInterrupt becomes when it arrives inside a Numba-compiled PyTensor function (PyTensor 3).

The interrupt is simulated deterministically: a patched step raises, at its n-th call, either ``KeyboardInterrupt``
or ``SystemError(...) from KeyboardInterrupt()`` (the form CPython gives a function that returns with an exception
set). Models: ``x ~ N(0, 2^2)``, ``y_i ~ N(x, 1)`` (log Z exact: y ~ N(0, I + 4 11')), with an unbounded count
beside it (only the tempered route, SMC from the prior, can answer; the plan is cut to that route so that nothing
else is asked), and an 8-D version (> 6 coordinates, latent route off: the default's chains run first).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pmz
from pmz.interrupts import as_interrupt, interrupts_as_keyboard, is_interrupt

Y = np.array([0.3, -0.2, 0.8, 1.1])


def _wrapped_interrupt() -> SystemError:
    """What Ctrl-C inside a Numba-compiled function raises: a SystemError caused by the KeyboardInterrupt."""
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as inner:
            raise SystemError("CPUDispatcher(<function numba_funcified_fgraph at 0x7f>) returned a result with an "
                              "exception set") from inner
    except SystemError as err:
        return err


def _raiser(kind):
    if kind == "keyboard":
        return KeyboardInterrupt()
    return _wrapped_interrupt()


def _exact_log_z(y=Y, prior_sd=2.0):
    n = y.size
    return float(stats.multivariate_normal(np.zeros(n), np.eye(n) + prior_sd**2 * np.ones((n, n))).logpdf(y))


@pytest.fixture
def with_count():
    with pm.Model() as m:
        x = pm.Normal("x", 0.0, 2.0)
        pm.Poisson("k", 3.0)  # unbounded: cannot be summed out, so SMC from the prior answers
        pm.Normal("y", x, 1.0, observed=Y)
    return m


@pytest.fixture
def tempered_only(monkeypatch):
    from pmz.auto import plan as plan_module
    from pmz.auto.tempered_route import TemperedRoute

    monkeypatch.setattr(plan_module, "PLAN", (TemperedRoute(),))


def _interrupt_smc_run_at(monkeypatch, at, kind):
    from pmz.runners import resample_move

    one_run, calls = resample_move._one_run, {"n": 0}

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == at:
            raise _raiser(kind)
        return one_run(*args, **kwargs)

    monkeypatch.setattr(resample_move, "_one_run", interrupted)
    return calls


def test_is_interrupt_recognises_the_wrapped_form():
    wrapped = _wrapped_interrupt()
    assert is_interrupt(KeyboardInterrupt()) and is_interrupt(wrapped)
    context_only = SystemError("returned a result with an exception set")
    context_only.__context__ = KeyboardInterrupt()
    assert is_interrupt(context_only)
    assert not is_interrupt(SystemError("returned a result with an exception set"))
    assert not is_interrupt(ValueError("x"))
    loop = SystemError("a")
    loop.__context__ = SystemError("b")
    loop.__context__.__context__ = loop  # a cycle in the chain ends, False
    assert not is_interrupt(loop)
    converted = as_interrupt(wrapped, "pmz: stopped")
    assert isinstance(converted, KeyboardInterrupt) and str(converted) == "pmz: stopped"
    with pytest.raises(KeyboardInterrupt, match="pmz: stopped") as info:
        with interrupts_as_keyboard("pmz: stopped"):
            raise wrapped
    assert info.value.__cause__ is wrapped
    with pytest.raises(SystemError):  # any other SystemError passes unchanged
        with interrupts_as_keyboard():
            raise SystemError("not an interrupt")


@pytest.mark.parametrize("kind", ["keyboard", "wrapped"])
def test_ctrl_c_in_the_first_smc_run_of_the_default(with_count, tempered_only, monkeypatch, kind):
    """Nothing finished: KeyboardInterrupt with pmz's message (what to pass to keep finished work), either way."""
    calls = _interrupt_smc_run_at(monkeypatch, 1, kind)
    with pytest.raises(KeyboardInterrupt, match="pmz: interrupted before any SMC run finished.*n_chunks"):
        pmz.evidence(with_count, random_seed=3, progressbar=False)
    assert calls["n"] == 1


@pytest.mark.parametrize("kind", ["keyboard", "wrapped"])
def test_ctrl_c_after_finished_smc_runs_of_the_default_keeps_them(with_count, tempered_only, monkeypatch, kind):
    """Two of four runs finished: they give the result, flagged partial (not "max_time was spent"), and it is
    within 4 se of the exact log Z."""
    _interrupt_smc_run_at(monkeypatch, 3, kind)
    with pytest.warns(UserWarning, match="PARTIAL RESULT"):
        res = pmz.evidence(with_count, random_seed=3, progressbar=False)
    assert res.reliable is False
    assert "PARTIAL RESULT: interrupted (Ctrl-C) after 2 of 4 SMC runs" in res.reliability_reason
    assert "max_time" not in res.reliability_reason
    assert abs(res.log_z - _exact_log_z()) <= 4 * res.log_z_se + 0.02 and res.log_z_se < 0.2


@pytest.mark.parametrize("kind", ["keyboard", "wrapped"])
def test_ctrl_c_in_the_default_chains(monkeypatch, kind):
    """Ctrl-C while the default's chains warm up (an 8-D model: no route answers before them): the documented
    KeyboardInterrupt, never a SystemError."""
    from pmz.model.pymc import CompiledModel

    with pm.Model() as m:
        x = pm.Normal("x", 0.0, 2.0, shape=8)
        pm.Normal("y", x, 1.0, observed=np.linspace(-1, 1, 8))
    grads, calls = CompiledModel.log_densities_and_grads, {"n": 0}

    def interrupted(self, X):
        calls["n"] += 1
        if calls["n"] == 5:
            raise _raiser(kind)
        return grads(self, X)

    monkeypatch.setattr(CompiledModel, "log_densities_and_grads", interrupted)
    with pytest.raises(KeyboardInterrupt, match="pmz: interrupted with 0 of 1 groups of chains finished"):
        pmz.evidence(m, random_seed=3, progressbar=False, latent=False)
    assert calls["n"] == 5


@pytest.mark.parametrize("kind", ["keyboard", "wrapped"])
def test_ctrl_c_in_any_compiled_call_of_the_default_is_an_interrupt(monkeypatch, kind):
    """Ctrl-C inside any batched call of the compiled model (here the importance route of a 1-D model, which runs
    no chain and no SMC): a KeyboardInterrupt with pmz's message, never the SystemError."""
    from pmz.model.pymc import CompiledModel

    blocked, calls = CompiledModel._blocked, {"n": 0}

    def interrupted(self, fn, X, n_out, *extra):
        calls["n"] += 1

        def raising(*args):
            raise _raiser(kind)

        return blocked(self, raising if calls["n"] >= 5 else fn, X, n_out, *extra)

    monkeypatch.setattr(CompiledModel, "_blocked", interrupted)
    with pm.Model() as m:
        x = pm.Normal("x", 0.0, 2.0)
        pm.Normal("y", x, 1.0, observed=Y)
    with pytest.raises(KeyboardInterrupt):
        pmz.evidence(m, random_seed=1, progressbar=False)
    assert calls["n"] >= 5
