"""The hazard matrix's columns for the default's shortcuts: models on which a shortcut taken without a proof, or an
approximation without an independent check, was confidently wrong (each with its exact log Z).

* ``far_support_mode``: ``k ~ DiscreteUniform(0, 5000)`` under a likelihood with two bumps 2000 values apart (a
  window grown from the initial point saw one: log 2 short, se 0);
* ``slow_tail_count``: ``k ~ Geometric(0.01)`` under a likelihood with bumps at 50 and 1500 (0.6 nats short, se 0);
* ``abs_latents``: 40 latents ``x ~ N(0, 1)`` with ``y ~ N(|x|, 0.1)`` and data drawn from the model (each
  coordinate bimodal, 2^40 modes; quadratic at every probe in one orthant: "exact", 0.9 nats short);
* ``switching_potential``: 40 Gaussian latents and a Potential adding 8 where ``x[0] > 3`` (3% of the mass behind
  the step: 0.032 short, se 0);
* ``planted_mode``: an 8-D posterior with a second mode of 5% of the mass 30 sd away (:func:`pmz.systems.planted_mode`;
  the chains all sat in the first: 0.054 short, z = -6.6);
* ``narrow_mode``: the same with a second mode of 30% of the mass 1000 times narrower than the first (its basin no
  climb reaches: log 0.7 short, z = -233, before the mixture's branches were searched);
* ``many_modes``: a product of six double wells and six Gaussian coordinates (:func:`pmz.systems.double_wells`, 64
  modes of unequal mass: a mixture over the few found was 0.05 short, z = -5);
* ``constant_draws``: the baseline with ``posterior=`` draws that never moved (a stuck chain: 11.7 nats low, z = -169).

Exact log Z: sums with scipy over the whole support (the first two), one-dimensional quadrature per coordinate
(``abs_latents``), closed forms (the rest).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy import integrate, stats
from scipy.special import logsumexp

from .planted import double_wells, planted_mode

__all__ = ["shortcut_columns", "two_bumps", "two_bumps_np"]

N_LATENT = 40
F64 = np.float64


def two_bumps(k, a, b, width):
    """``log(exp(-(k - a)^2 / 2 w^2) + exp(-(k - b)^2 / 2 w^2))`` as a PyTensor graph (a likelihood with two bumps)."""
    return pm.math.logaddexp(-0.5 * ((k - a) / width) ** 2, -0.5 * ((k - b) / width) ** 2)


def two_bumps_np(k, a, b, width):
    """:func:`two_bumps` in NumPy (the exact sums)."""
    return np.logaddexp(-0.5 * ((k - a) / width) ** 2, -0.5 * ((k - b) / width) ** 2)


def _far_support_mode():
    with pm.Model() as model:
        k = pm.DiscreteUniform("k", 0, 5000)
        pm.Potential("likelihood", two_bumps(k, F64(1000.0), F64(3000.0), F64(30.0)))
    return model


def _far_support_mode_log_z() -> float:
    k = np.arange(5001.0)
    log_prior = np.float32(-np.log(5001.0))  # PyMC's DiscreteUniform log pmf is float32
    return float(logsumexp(log_prior + two_bumps_np(k, 1000.0, 3000.0, 30.0)))


def _slow_tail_count():
    with pm.Model() as model:
        k = pm.Geometric("k", F64(0.01))
        pm.Potential("likelihood", two_bumps(k, F64(50.0), F64(1500.0), F64(5.0)))
    return model


def _slow_tail_count_log_z() -> float:
    k = np.arange(1.0, 100_001.0)  # beyond, the prior's mass is 0.99^1e5 < e^-1000 and the likelihood at most log 2
    return float(logsumexp(stats.geom.logpmf(k, 0.01) + two_bumps_np(k, 50.0, 1500.0, 5.0)))


def _abs_data() -> np.ndarray:
    rng = np.random.default_rng(46)
    return np.abs(rng.normal(size=N_LATENT)) + rng.normal(0.0, 0.1, N_LATENT)


def _abs_latents():
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, shape=N_LATENT)
        pm.Normal("y", pt.abs(x), 0.1, observed=_abs_data())
    return model


def _abs_latents_log_z() -> float:
    """Each coordinate: ``int N(t; 0, 1) N(y; |t|, 0.1) dt = 2 int_0^inf ...``, a Gaussian product on a half line."""
    y = _abs_data()
    var = 1.0 + 0.01
    half = stats.norm.logpdf(y, 0.0, np.sqrt(var)) + stats.norm.logcdf(y / var / np.sqrt(0.01 / var))
    closed = float(np.sum(np.log(2.0) + half))
    check = sum(np.log(2.0 * integrate.quad(lambda t, v=v: stats.norm.pdf(t) * stats.norm.pdf(v, t, 0.1), 0, np.inf,
                                            epsrel=1e-11)[0]) for v in y[:3])
    assert abs(check - float(np.sum(np.log(2.0) + half[:3]))) < 1e-8
    return closed


def _switching_data() -> np.ndarray:
    rng = np.random.default_rng(46)
    y = rng.normal(0.0, np.sqrt(1.25), N_LATENT)
    y[0] = 1.38
    return y


def _switching_potential():
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, shape=N_LATENT)
        pm.Normal("y", x, 0.5, observed=_switching_data())
        pm.Potential("step", pt.switch(x[0] > 3, 8.0, 0.0))
    return model


def _switching_potential_log_z() -> float:
    """``Z = Z_gauss (1 + (e^8 - 1) P(x0 > 3 | y))``, ``x0 | y ~ N(y0 / 1.25, 0.2)``."""
    y = _switching_data()
    p_step = stats.norm.sf(3.0, y[0] / 1.25, np.sqrt(0.25 / 1.25))
    return float(stats.norm.logpdf(y, 0.0, np.sqrt(1.25)).sum() + np.log1p(np.expm1(8.0) * p_step))


def _constant_draws(seed: int) -> xr.Dataset:
    """Two chains of 500 draws that never moved from one value of the baseline's mean."""
    value = 0.2 + 0.01 * seed
    return xr.Dataset({"mu": (("chain", "draw"), np.full((2, 500), value))})


def shortcut_columns(hazard_type, baseline_build, baseline_log_z) -> list:
    """The columns above as ``hazard_type`` (:class:`pmz.systems.hazards.Hazard`) instances, in order."""
    planted, wells = planted_mode(8, 0.05, 1.0, 30.0), double_wells(6, 6)
    narrow = planted_mode(8, 0.3, 1000.0, 30.0)
    auto = ("auto",)
    return [
        hazard_type("far_support_mode", "DiscreteUniform(0, 5000) with a second mode 2000 values away",
                    _far_support_mode, _far_support_mode_log_z(), methods=auto),
        hazard_type("slow_tail_count", "Geometric(0.01) count with a far mode", _slow_tail_count,
                    _slow_tail_count_log_z(), methods=auto),
        hazard_type("abs_latents", "40 latents with y ~ N(|x|, 0.1): 2^40 modes, quadratic in each orthant",
                    _abs_latents, _abs_latents_log_z(), methods=auto),
        hazard_type("switching_potential", "a Potential adding 8 where x[0] > 3 beside 40 Gaussian latents",
                    _switching_potential, _switching_potential_log_z(), methods=auto),
        hazard_type("planted_mode", "8-D, a second mode of 5% of the mass 30 sd away", lambda: planted.model,
                    planted.log_z, methods=auto),
        hazard_type("narrow_mode", "8-D, a second mode of 30% of the mass, 1000 times narrower, 30 sd away",
                    lambda: narrow.model, narrow.log_z, methods=auto),
        hazard_type("many_modes", "a product of six double wells (64 modes of unequal mass) in 12-D",
                    lambda: wells.model, wells.log_z, methods=auto),
        hazard_type("constant_draws", "posterior= draws that never moved (a stuck chain)", baseline_build,
                    baseline_log_z, draws=_constant_draws),
    ]
