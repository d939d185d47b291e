"""Inputs the studies refuse, with a pmz message that says what to pass instead.

* ``calibrate_bayes_factors`` with observed data that reach the likelihood through a transformation of a data
  container (``observed=pt.exp(pm.Data("y_data", log_y))``): a simulated y set into the container would be the
  container's log y, and every evidence would be computed on other data than simulated. Refused, naming the
  variable and the container; a container itself (and PyMC's integer cast of one) is still accepted.
* ``prior_sensitivity`` with an improper alternative (``pm.Flat``, ``pm.HalfFlat``: no evidence under it) or one
  PyMC cannot draw from (a ``pm.CustomDist`` without ``random``): refused, naming the alternative, instead of
  PyMC's raw ``NotImplementedError``.
* Ctrl-C inside a compiled function during a calibration (a ``SystemError`` caused by the ``KeyboardInterrupt``)
  keeps the finished simulations as a plain ``KeyboardInterrupt`` does.

Model for the reweighting checks: ``pmz.systems.normal_mean`` with its exact log Z and exact posterior draws.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pmz
from pmz.model.pymc import ModelSpecificationError
from pmz.studies import bayes_factor_calibration as calibration
from pmz.studies import calibrate_bayes_factors, prior_sensitivity

Y = np.linspace(0.5, 2.0, 12)


def _model(observed_of, slope=False):
    with pm.Model() as model:
        data = pm.Data("y_data", np.log(Y))
        mu = pm.Normal("a", 0.0, 1.0) + (pm.Normal("b", 0.0, 1.0) * np.linspace(-1, 1, Y.size) if slope else 0.0)
        pm.Normal("y", mu, 1.0, observed=observed_of(data))
    return model


@pytest.mark.parametrize("transform, op", [(pt.exp, "Exp"), (lambda d: 2.0 * d, "Mul"),
                                           (lambda d: d[::-1], "Subtensor")], ids=["exp", "scaled", "reversed"])
def test_calibration_refuses_a_transformed_container(transform, op):
    models = {"m0": _model(transform), "m1": _model(transform, slope=True)}
    with pytest.raises(ModelSpecificationError, match=rf"observed data of 'y' in model 'm0' are a transformation "
                                                      rf"\({op}\w*\) of the data container 'y_data'") as info:
        calibrate_bayes_factors(models, n_sims=4, random_seed=1, progressbar=False)
    assert "observed=pm.Data('y_data', y)" in str(info.value)
    for model in models.values():  # nothing was set into the containers
        np.testing.assert_array_equal(model["y_data"].get_value(), np.log(Y))


def test_calibration_accepts_a_container_and_its_integer_cast():
    with pm.Model() as counts:
        data = pm.Data("c_data", np.array([1, 4, 2]))
        pm.Poisson("c", pt.exp(pm.Normal("a")), observed=data)
    assert calibration._data_containers("counts", counts)["c"] is counts["c_data"]
    plain = _model(lambda d: d)
    assert calibration._data_containers("plain", plain)["y"] is plain["y_data"]


def test_calibration_keeps_finished_simulations_on_a_wrapped_interrupt(monkeypatch):
    """Ctrl-C inside a Numba-compiled function arrives as SystemError from KeyboardInterrupt: after one finished
    simulation the calibration returns it, flagged partial; before any, a KeyboardInterrupt (no SystemError)."""
    models = {"m0": _model(lambda d: d), "m1": _model(lambda d: d, slope=True)}
    real, calls = calibration.evidence, {"n": 0}

    def interrupted(model, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:  # the first model of the second simulation
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as inner:
                raise SystemError("CPUDispatcher(<function numba_funcified_fgraph>) returned a result with an "
                                  "exception set") from inner
        return real(model, **kwargs)

    monkeypatch.setattr(calibration, "evidence", interrupted)
    with pytest.warns(UserWarning, match="interrupted after 1 of 4"):
        result = calibrate_bayes_factors(models, n_sims=4, random_seed=1, progressbar=False)
    assert result.n_sims == 1 and int(result.run_attrs["partial"]) == 1
    calls["n"] = 2
    monkeypatch.setattr(calibration, "evidence", lambda model, **kw: interrupted(model, **kw))
    with pytest.raises(KeyboardInterrupt, match="pmz.calibrate_bayes_factors: interrupted"):
        calibrate_bayes_factors(models, n_sims=4, random_seed=1, progressbar=False)


# ---------------------------------------------------------------- prior_sensitivity


@pytest.fixture(scope="module")
def normal_system():
    system = pmz.systems.normal_mean(n_obs=20, prior_sigma=2.0, seed=0)
    y = np.asarray(system.model.rvs_to_values[system.model["y"]].data)
    precision = 1 / 2.0**2 + y.size
    draws = {"mu": np.random.default_rng(3).normal(y.sum() / precision, precision**-0.5, 2000)}
    return system, draws


@pytest.mark.parametrize("dist, kind", [(lambda: pm.Flat.dist(), "Flat"), (lambda: pm.HalfFlat.dist(), "HalfFlat")],
                         ids=["Flat", "HalfFlat"])
def test_prior_sensitivity_refuses_improper_alternatives(normal_system, dist, kind):
    system, draws = normal_system
    priors = {"wide": {"mu": pm.Normal.dist(0.0, 5.0)}, "flat": {"mu": dist()}}
    with pytest.raises(ValueError, match=rf"priors\['flat'\]\['mu'\] is {kind}, an improper prior.*not defined.*"
                                         r"proper distribution"):
        prior_sensitivity((system.log_z, 0.0), system.model, priors, posterior=draws)


@pytest.mark.filterwarnings("ignore:Numba will use object mode")
def test_prior_sensitivity_refuses_an_alternative_it_cannot_draw_from(normal_system):
    system, draws = normal_system
    no_random = pm.CustomDist.dist(logp=lambda value: pm.logp(pm.Normal.dist(0.0, 5.0), value))
    with pytest.raises(ValueError, match=r"priors\['custom'\]\['mu'\] cannot be drawn from .*pass random="):
        prior_sensitivity((system.log_z, 0.0), system.model, {"custom": {"mu": no_random}}, posterior=draws)


def test_prior_sensitivity_still_answers_a_proper_alternative(normal_system):
    """The control: a proper alternative (N(0, 5^2)) on exact draws is right within 4 se of its exact log Z."""
    from scipy import stats

    system, draws = normal_system
    y = np.asarray(system.model.rvs_to_values[system.model["y"]].data)
    table = prior_sensitivity((system.log_z, 0.0), system.model, {"wide": {"mu": pm.Normal.dist(0.0, 5.0)}},
                              posterior=draws)
    row = table.loc["wide"]
    truth = float(stats.multivariate_normal(np.zeros(y.size), np.eye(y.size) + 25.0).logpdf(y))
    assert row["reliable"] and row["log_z_se"] < 0.05
    assert abs(row["log_z"] - truth) < 4 * row["log_z_se"] + 0.005
