"""pmz.compare and pmz.bayes_factor put every model in one stated convention (issue 46, item 8).

"How many components?" with ordered means: an ordered transform on K exchangeable entries keeps the unordered
density on the ordered region, whose mass is 1/K!, so the evidence of the density as PyMC writes it is log K! below
that of the normalised prior (the mixture without the ordering). The default reports the first and records the
second; prior-draw methods (SMC) report the second. The table must compare like with like, and say which.

Exact evidences: y_1..y_n from an equal-weight mixture of K normals with known sd s and means mu_k ~ N(0, tau^2)
iid. The likelihood ``prod_i K^-1 sum_k N(y_i | mu_k, s^2)`` expands into K^n assignments; each term's integral over
mu is a product over components of Gaussian marginal likelihoods ``N(y_group | 0, s^2 I + tau^2 11')``. The
integrand is symmetric in the K means, so the ordered region holds exactly 1/K! of it.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import integrate
from scipy.special import gammaln, logsumexp
from scipy.stats import multivariate_normal

import pmz
from pmz.estimate_diagnostics import AutoDiagnostics, Diagnostics
from pmz.records import EvidenceEstimate
from pmz.results import make_result

Y = np.array([-2.1, -1.7, 0.2, 1.9, 2.4])
TAU, S = 3.0, 0.7
SEED = 1


def exact_log_z(y, k: int, tau: float, s: float) -> float:
    """log Z of the exchangeable (unordered) mixture: the log-sum over the K^n assignments of the data to the
    components, each term ``-n log K + sum_k log N(y_group_k | 0, s^2 I + tau^2 11')``."""
    terms = []
    for assignment in itertools.product(range(k), repeat=len(y)):
        assignment = np.asarray(assignment)
        term = -len(y) * np.log(k)
        for j in range(k):
            group = y[assignment == j]
            if group.size:
                cov = s**2 * np.eye(group.size) + tau**2
                term += multivariate_normal(np.zeros(group.size), cov).logpdf(group)
        terms.append(term)
    return float(logsumexp(terms))


def ordered_mixture(k: int) -> pm.Model:
    """The usual PyMC mixture: ordered means with iid Normal priors, equal weights, known sd."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, TAU, shape=k, transform=pm.distributions.transforms.ordered,
                       initval=np.linspace(-1, 1, k))
        pm.NormalMixture("y", w=np.full(k, 1 / k), mu=mu, sigma=S, observed=Y)
    return model


def _evidence(model, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the result's own prior-normalisation warning
        return pmz.evidence(model, random_seed=SEED, progressbar=False, **kwargs)


@pytest.fixture(scope="module")
def exact():
    return {k: exact_log_z(Y, k, TAU, S) for k in (2, 3)}


@pytest.fixture(scope="module")
def default_results():
    return {k: _evidence(ordered_mixture(k)) for k in (2, 3)}


def _assert_close(estimate: float, se: float, truth: float):
    assert se < 0.2, f"se {se:.3g} too large to mean anything"
    assert abs(estimate - truth) <= 4 * se + 1e-3, f"{estimate:.4f} +- {se:.3g} vs exact {truth:.4f}"


def test_pymc_ordered_density_keeps_one_over_k_factorial(exact):
    """The direction of the correction, on PyMC itself: the K=2 model's density as written (value space,
    Jacobian included), integrated by quadrature, is the exchangeable evidence minus log 2!."""
    model = ordered_mixture(2)
    logp = model.compile_logp()
    (name,) = model.initial_point()
    shift = -exact[2]

    def density(log_gap, mu_1):
        return np.exp(logp({name: np.array([mu_1, log_gap])}) + shift)

    value, _ = integrate.dblquad(density, -14, 10, -30, 4, epsabs=0, epsrel=1e-7)
    assert np.log(value) - shift == pytest.approx(exact[2] - gammaln(3), abs=1e-5)


def test_compare_uses_normalised_evidences_by_default(default_results, exact):
    """K=3 against K=2 with the default's results: the table compares the normalised evidences (the exact
    exchangeable log BF), gives each model its +log K! correction and says so in its print, HTML and attrs."""
    r2, r3 = default_results[2], default_results[3]
    table = pmz.compare({"K=2": r2, "K=3": r3})
    log_bf = table.loc["K=3", "log_z"] - table.loc["K=2", "log_z"]
    se = float(np.hypot(table.loc["K=3", "log_z_se"], table.loc["K=2", "log_z_se"]))
    _assert_close(log_bf, se, exact[3] - exact[2])
    assert table.attrs["convention"] == "normalised"
    for k, name in ((2, "K=2"), (3, "K=3")):
        mass_se = float(default_results[k].diagnostics.get("prior_log_mass_se") or 0.0)
        correction = table.attrs["prior_corrections"][name]
        assert correction == pytest.approx(gammaln(k + 1), abs=4 * mass_se + 1e-9)
        assert table.loc[name, "prior_correction"] == correction
    text = repr(table)
    assert "convention 'normalised'" in text and "prior_correction" in text and "'K=3' +" in text
    assert "convention &#x27;normalised&#x27;" in table._repr_html_()
    bf = pmz.bayes_factor(r3, r2)
    assert bf.log_bf == pytest.approx(log_bf) and bf.log_bf_se == pytest.approx(se)
    assert bf.convention == "normalised" and "convention='normalised'" in repr(bf)
    assert bf.to_dataset().attrs["convention"] == "normalised"


def test_compare_as_written_opts_out(default_results, exact):
    """convention='as_written': the densities as PyMC writes them, log(3!/2!) below the normalised log BF."""
    r2, r3 = default_results[2], default_results[3]
    table = pmz.compare({"K=2": r2, "K=3": r3}, convention="as_written")
    log_bf = table.loc["K=3", "log_z"] - table.loc["K=2", "log_z"]
    se = float(np.hypot(r2.log_z_se, r3.log_z_se))
    _assert_close(log_bf, se, exact[3] - exact[2] - np.log(3.0))
    assert table.attrs["convention"] == "as_written" and "convention 'as_written'" in repr(table)
    assert set(table.attrs["prior_corrections"].values()) == {0.0}  # the default's log Z is the density's
    assert pmz.bayes_factor(r3, r2, convention="as_written").log_bf == pytest.approx(log_bf)


def test_prior_draw_method_and_default_in_one_table(default_results, exact):
    """SMC from prior draws reports the normalised evidence, the default the density's: one table puts both in
    the same convention (SMC uncorrected, the default +log 2!), in either convention."""
    smc = _evidence(ordered_mixture(3), method="smc")
    assert smc.diagnostics.get("prior_log_mass") is not None  # the measured 1/3! is recorded
    r2 = default_results[2]
    table = pmz.compare({"K=2": r2, "K=3": smc})
    assert table.attrs["prior_corrections"]["K=3"] == 0.0
    log_bf = table.loc["K=3", "log_z"] - table.loc["K=2", "log_z"]
    _assert_close(log_bf, float(np.hypot(r2.log_z_se, smc.log_z_se)), exact[3] - exact[2])
    written = pmz.compare({"K=2": r2, "K=3": smc}, convention="as_written")
    log_bf = written.loc["K=3", "log_z"] - written.loc["K=2", "log_z"]
    se = float(np.hypot(written.loc["K=3", "log_z_se"], written.loc["K=2", "log_z_se"]))
    _assert_close(log_bf, se, exact[3] - exact[2] - np.log(3.0))


def _recorded(log_z, se, method, diagnostics):
    return make_result(EvidenceEstimate(log_z=log_z, log_z_se=se, method=method, diagnostics=diagnostics))


def test_conversion_rules_and_bad_convention():
    """The rules on recorded results: the default's log Z (density) + log K! = its normalised value; a prior-draw
    result's log Z (normalised) + measured mass, se combined = its density's; pairs taken as they are."""
    mass = -gammaln(4)
    default = _recorded(-13.0, 0.03, "auto", AutoDiagnostics(
        prior_log_mass=mass, prior_log_mass_se=0.0, prior_unnormalised="mu", log_z_normalised_prior=-13.0 - mass))
    draws = _recorded(-12.0, 0.03, "smc", Diagnostics(prior_log_mass=-0.7, prior_log_mass_se=0.04,
                                                      prior_unnormalised="mu"))
    table = pmz.compare({"default": default, "draws": draws, "pair": (-12.5, 0.1)})
    assert table.loc["default", "log_z"] == pytest.approx(-13.0 + gammaln(4))
    assert table.loc["draws", "log_z"] == -12.0 and table.loc["pair", "log_z"] == -12.5
    written = pmz.compare([default, draws], convention="as_written")
    assert written.loc["model_0", "log_z"] == -13.0
    assert written.loc["model_1", "log_z"] == pytest.approx(-12.7)
    assert written.loc["model_1", "log_z_se"] == pytest.approx(0.05)
    assert pmz.compare([default, draws], convention="normalized").attrs["convention"] == "normalised"
    bridge = pmz.compare({"draws": draws, "bridge": _recorded(-12.7, 0.01, "bridge", Diagnostics())})
    assert "Not checked: 'bridge'" in bridge.attrs["convention_note"] and "Not checked" in repr(bridge)
    with pytest.raises(ValueError, match="convention must be 'normalised'.*'as_written'"):
        pmz.compare([default, draws], convention="exchangeable")
    with pytest.raises(ValueError, match="pmz.bayes_factor: convention"):
        pmz.bayes_factor(default, draws, convention="raw")
