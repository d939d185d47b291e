"""Hard posteriors with a trusted log evidence log Z = log p(y): multimodal, discrete, funnel-shaped.

A companion of ``auto_models.py`` (whose :class:`BenchmarkModel` and quadrature helpers this module uses): every
entry of :data:`MODELS` has ``build()`` (a fresh ``pm.Model``, written as a PyMC user would write it, with fixed data
simulated from a fixed numpy seed), the stored truth ``log_z`` with how it was obtained (``log_z_how``) and its
uncertainty ``log_z_se``, a ``kind``, ``dim`` = the number of unconstrained free parameters (discrete ones
included) and ``exact``, which recomputes the truth and returns (value, error estimate). None of them is one of
pmz's test systems.

The models and how their truths were obtained:

* **Gaussian mixtures with known sd (1) and known equal weights, unknown means** (``pm.NormalMixture``):
  K = 2 and 3 components on 1-D data with exchangeable means ``mu ~ N(0, 5^2)`` (label switching: K! modes of equal
  mass), the same two with ``transform=ordered`` on the means, and K = 2 on 2-D data (two mean vectors,
  ``pm.Mixture`` of two ``pm.MvNormal`` with identity covariance, exchangeable). The exchangeable density is
  symmetric under permutations of the means, so log Z = log K! + log of its integral over one ordering
  (mu_1 < mu_2 < ..., for the 2-D data: first coordinates ordered), which is a trapezoid grid over the box where
  the integrand is within 40 nats of its maximum (2-D: over the whole plane). **The ordered models**: PyMC's
  density with the ordered transform is the same iid Normal prior density restricted to mu_1 < ... < mu_K,
  *not* renormalised (its prior mass is 1/K!), so their log Z is the exchangeable one minus log K! exactly.
* **change point** with a discrete switch point (``pm.DiscreteUniform``) and two Gamma-prior Poisson rates on 100
  simulated counts whose rate changes little (2.0 -> 1.2), so the switch point's posterior is broad and ragged:
  exact sum over the switch point of Gamma-Poisson marginals.
* **bumps**: 2-D, ``x ~ N(0, 10^2)`` and a ``pm.Potential`` that is the log of a mixture of five narrow Gaussian
  bumps with unequal weights: closed form (a Gaussian convolution per bump).
* **Gaussian shells** (Feroz & Hobson 2008): ``x ~ Uniform(-6, 6)^2`` and two thin rings (radius 2, width 0.1)
  centred at (+-3.5, 0): 2-D midpoint rule over the prior box (classic value -1.75).
* **eggbox** (Feroz et al. 2009): ``x ~ Uniform(0, 10 pi)^2``, log L = (2 + cos(x1/2) cos(x2/2))^5, 18 modes (some
  cut by the box's edges): 2-D midpoint rule; the integrand is even about both ends of each axis, so the rule
  converges geometrically (235.856, the value dynesty's tests use; Feroz et al. quote 235.88).
* **Neal's funnel**, centred, 10 and 50 dimensions: ``v ~ N(0, 3^2)``, ``x_i ~ N(0, exp(v/2)^2)``, with three
  observations ``y_j ~ N(x_j, 1)``: x integrated analytically given v (y_j | v ~ N(0, e^v + 1), the other x_i
  integrate to 1), 1-D trapezoid quadrature over v.
* **labels**: 30 points with a discrete label each (``z_i ~ Bernoulli(0.5)``, ``y_i ~ N(mu[z_i], 1)``, two
  exchangeable means ``~ N(0, 3^2)``): the labels summed analytically (a two-component mixture likelihood), 2-D
  trapezoid quadrature over the means.
* **Ising**: 4 x 4 spins ``pm.Bernoulli(0.5)`` with a ``pm.Potential`` J sum_<ij> s_i s_j + h sum_i s_i (open
  boundaries, J = 0.6 beyond the critical coupling, so two modes (all up, all down) of unequal mass through the
  small field h = 0.05): enumeration of the 2^16 states.
* **Poisson(1000)**: a discrete parameter with large support, ``k ~ Poisson(1000)``, ``y ~ N(k, 1)`` observed at
  1100: the sum over k.

Quadrature errors (se): the largest change when the grid is refined 2x or the box widened by half its width on
every side at the same step (``_grid_quad``; ``auto_models._quad`` for d <= 2), or when the midpoint grid is
refined 2x.

Every truth was also checked against PyMC's own compiled log density (``--verify``): brute-force quadrature of
it (2-D models, the change point per switch point, the ordered K = 2 mixture in its transformed coordinates),
importance sampling of it from a mixture of t distributions at the modes (3-D and 4-D mixtures), enumeration (Ising,
the Poisson parameter), or PyMC's density integrated over the Gaussian latents (funnels) or summed over each label
(labels model) at fixed hyperparameters equal to the numpy integrand.

Usage::

    python benchmarks/multimodal_models.py             # table of the stored truths
    python benchmarks/multimodal_models.py --check     # recompute the truths and compare (about a minute)
    python benchmarks/multimodal_models.py --verify    # independent checks against PyMC's density (1-2 min)

References: Feroz, F. & Hobson, M. P. (2008), MNRAS 384 (Gaussian shells); Feroz, F., Hobson, M. P. & Bridges, M.
(2009), MNRAS 398 (eggbox); Neal, R. M. (2003), Slice sampling, Ann. Statist. 31 (funnel).
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import optimize, special, stats

warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from auto_models import (  # noqa: E402
    LOG_2PI,
    BenchmarkModel,
    _box,
    _f,
    _flat_logp,
    _gaussian_latent_log_integral,
    _hessian,
    _log_trapz,
    _m,
    _quad,
)

__all__ = ["MODELS", "BenchmarkModel"]


# ================================================================================================ quadrature
def _grid_quad(logf, search, n_search: int, n: int, chunk: int = 200_000) -> tuple[float, float]:
    """log integral of exp(logf) over R^d on a trapezoid grid (any d; ``logf`` maps (m, d) rows to m values).

    A coarse pass (``n_search`` points per axis over ``search``) finds the box where the integrand is within 40
    nats of its maximum (``auto_models._box``); the trapezoid rule integrates over it with ``n`` and ``2n - 1``
    points per axis, and over the box widened by half its width on every side with ``2n - 1`` points (the same
    step as ``n`` points on the box). Returns the finer value and the largest change as the error estimate.
    ``logf`` may return -inf (outside a region of integration).
    """

    def evaluate(axes):
        grids = np.meshgrid(*axes, indexing="ij")
        pts = np.stack([g.ravel() for g in grids], 1)
        del grids
        vals = np.concatenate([logf(pts[i : i + chunk]) for i in range(0, len(pts), chunk)])
        return vals.reshape(tuple(a.size for a in axes))

    def integrate(box, m):
        axes = [np.linspace(lo, hi, m) for lo, hi in box]
        return _log_trapz(evaluate(axes), *[ax[1] - ax[0] for ax in axes])

    axes = [np.linspace(lo, hi, n_search) for lo, hi in search]
    box = _box(evaluate(axes), axes)
    value = integrate(box, n)
    finer = integrate(box, 2 * n - 1)
    wide = integrate([(lo - (hi - lo) / 2, hi + (hi - lo) / 2) for lo, hi in box], 2 * n - 1)
    return finer, max(abs(finer - value), abs(wide - value))


def _midpoint_2d(logf, box, m: int, chunk_rows: int = 200) -> float:
    """log of the 2-D midpoint rule (m x m cells) for exp(logf(x1, x2)) over a rectangle (logf broadcasts)."""
    (a1, b1), (a2, b2) = box
    h1, h2 = (b1 - a1) / m, (b2 - a2) / m
    x1 = a1 + (np.arange(m) + 0.5) * h1
    x2 = a2 + (np.arange(m) + 0.5) * h2
    parts = [special.logsumexp(logf(x1[i : i + chunk_rows, None], x2[None, :])) for i in range(0, m, chunk_rows)]
    return float(special.logsumexp(parts) + np.log(h1 * h2))


def _midpoint_pair(logf, box, m: int) -> tuple[float, float]:
    """The midpoint rule with 2m cells per axis and, as its error estimate, the change from m cells."""
    coarse, fine = _midpoint_2d(logf, box, m), _midpoint_2d(logf, box, 2 * m)
    return fine, abs(fine - coarse)


def _log_norm(x, mu, sd):
    return -0.5 * LOG_2PI - np.log(sd) - 0.5 * ((x - mu) / sd) ** 2


# ================================================================================================ 1-4. 1-D mixtures
MIX = {"prior_sd": 5.0, "sd": 1.0}
MIX_CENTRES = {2: (-2.0, 2.0), 3: (-4.0, 0.0, 4.0)}
MIX_N = {2: 30, 3: 20}  # points per component


def _mixture_data(k: int) -> np.ndarray:
    rng = np.random.default_rng(100 + k)
    return np.concatenate([rng.normal(c, MIX["sd"], size=MIX_N[k]) for c in MIX_CENTRES[k]])


def _build_mixture(k: int, ordered: bool) -> pm.Model:
    y = _mixture_data(k)
    extra = {"transform": pm.distributions.transforms.ordered, "initval": np.linspace(-1.0, 1.0, k)} if ordered else {}
    with pm.Model() as model:
        mu = pm.Normal("mu", mu=_f(0.0), sigma=_f(MIX["prior_sd"]), shape=k, **extra)
        pm.NormalMixture("y", w=_f(np.full(k, 1.0 / k)), mu=mu, sigma=_f(MIX["sd"]), observed=y)
    return model


def build_mixture_k2() -> pm.Model:
    return _build_mixture(2, ordered=False)


def build_mixture_k3() -> pm.Model:
    return _build_mixture(3, ordered=False)


def build_mixture_k2_ordered() -> pm.Model:
    return _build_mixture(2, ordered=True)


def build_mixture_k3_ordered() -> pm.Model:
    return _build_mixture(3, ordered=True)


def _mixture_logpost(y: np.ndarray, means: list) -> np.ndarray:
    """log prior + log likelihood of the exchangeable 1-D mixture; ``means``: K broadcasting arrays."""
    k, sd, psd = len(means), MIX["sd"], MIX["prior_sd"]
    out = sum(_log_norm(m, 0.0, psd) for m in means)
    for yi in y:
        terms = [-0.5 * ((yi - m) / sd) ** 2 for m in means]
        acc = terms[0]
        for t in terms[1:]:
            acc = np.logaddexp(acc, t)
        out = out + acc
    return out + y.size * (-np.log(k) - 0.5 * LOG_2PI - np.log(sd))


def exact_log_z_mixture_k2():
    """Exchangeable K = 2: 2-D trapezoid quadrature over the whole plane (both modes)."""
    y = _mixture_data(2)
    return _quad(lambda a, b: _mixture_logpost(y, [a, b]), [(-20.0, 20.0), (-20.0, 20.0)], n=601)


def _mixture_k3_ordered_region(rows):
    y = _mixture_data(3)
    out = _mixture_logpost(y, [rows[:, 0], rows[:, 1], rows[:, 2]])
    return np.where((rows[:, 0] < rows[:, 1]) & (rows[:, 1] < rows[:, 2]), out, -np.inf)


def exact_log_z_mixture_k3():
    """Exchangeable K = 3: log 3! + 3-D trapezoid quadrature over mu_1 < mu_2 < mu_3."""
    value, err = _grid_quad(_mixture_k3_ordered_region, [(-10.0, 10.0)] * 3, n_search=81, n=41)
    return value + math.log(6.0), err


def exact_log_z_mixture_k2_ordered():
    value, err = exact_log_z_mixture_k2()
    return value - math.log(2.0), err


def exact_log_z_mixture_k3_ordered():
    value, err = exact_log_z_mixture_k3()
    return value - math.log(6.0), err


# ================================================================================================ 5. 2-D data mixture
MIX2D = {"n_per": 20, "centres": np.array([[-1.5, 0.0], [1.5, 1.0]]), "prior_sd": 5.0}


def _mixture2d_data() -> np.ndarray:
    rng = np.random.default_rng(205)
    return np.concatenate([rng.normal(c, 1.0, size=(MIX2D["n_per"], 2)) for c in MIX2D["centres"]])


def build_mixture_2d_k2() -> pm.Model:
    y = _mixture2d_data()
    with pm.Model() as model:
        mu = pm.Normal("mu", mu=_f(0.0), sigma=_f(MIX2D["prior_sd"]), shape=(2, 2))  # row k: mean of component k
        components = [pm.MvNormal.dist(mu=mu[k], cov=_f(np.eye(2))) for k in range(2)]
        pm.Mixture("y", w=_f(np.full(2, 0.5)), comp_dists=components, observed=y)
    return model


def _mixture2d_logpost(rows):
    """rows (m, 4) = (mu_00, mu_01, mu_10, mu_11): log prior + log likelihood."""
    y = _mixture2d_data()
    psd = MIX2D["prior_sd"]
    out = np.sum(_log_norm(rows, 0.0, psd), 1)
    for yi in y:
        a = -0.5 * ((yi[0] - rows[:, 0]) ** 2 + (yi[1] - rows[:, 1]) ** 2)
        b = -0.5 * ((yi[0] - rows[:, 2]) ** 2 + (yi[1] - rows[:, 3]) ** 2)
        out = out + np.logaddexp(a, b)
    return out + len(y) * (-np.log(2.0) - LOG_2PI)


def exact_log_z_mixture_2d_k2():
    """log 2 + 4-D trapezoid quadrature over mu_00 < mu_10 (the swap of the two mean vectors is a symmetry)."""

    def logf(rows):
        return np.where(rows[:, 0] < rows[:, 2], _mixture2d_logpost(rows), -np.inf)

    value, err = _grid_quad(logf, [(-6.0, 6.0)] * 4, n_search=25, n=25)
    return value + math.log(2.0), err


# ================================================================================================ 6. change point
CP = {"T": 100, "switch": 60, "rates": (2.0, 1.2), "a": 4.0, "b": 2.0}


def _changepoint_data() -> np.ndarray:
    rng = np.random.default_rng(606)
    return np.r_[rng.poisson(CP["rates"][0], CP["switch"]), rng.poisson(CP["rates"][1], CP["T"] - CP["switch"])]


def build_change_point() -> pm.Model:
    counts = _changepoint_data()
    t = np.arange(CP["T"])
    with pm.Model() as model:
        tau = pm.DiscreteUniform("tau", lower=0, upper=CP["T"])  # first period of the late rate
        early = pm.Gamma("early", alpha=_f(CP["a"]), beta=_f(CP["b"]))
        late = pm.Gamma("late", alpha=_f(CP["a"]), beta=_f(CP["b"]))
        pm.Poisson("counts", mu=pm.math.switch(t < tau, early, late), observed=counts)
    return model


def exact_log_z_change_point():
    counts = _changepoint_data()
    a, b = CP["a"], CP["b"]

    def gamma_poisson(c):  # log of int Gamma(l; a, b) prod_i Poisson(c_i; l) dl
        s, m = float(np.sum(c)), c.size
        return (a * np.log(b) - special.gammaln(a) + special.gammaln(a + s) - (a + s) * np.log(b + m)
                - float(np.sum(special.gammaln(c + 1))))

    terms = [gamma_poisson(counts[:tau]) + gamma_poisson(counts[tau:]) for tau in range(CP["T"] + 1)]
    return float(special.logsumexp(terms) - np.log(CP["T"] + 1)), 0.0


# ================================================================================================ 7. bumps
BUMPS = {
    "centres": np.array([[-6.0, -5.0], [5.0, 6.0], [7.0, -6.0], [-4.0, 7.0], [0.5, 0.5]]),
    "weights": np.array([0.4, 0.25, 0.2, 0.1, 0.05]),
    "sds": np.array([0.5, 0.3, 0.8, 0.4, 0.6]),
    "prior_sd": 10.0,
}


def build_bumps() -> pm.Model:
    c, w, s = BUMPS["centres"], BUMPS["weights"], BUMPS["sds"]
    with pm.Model() as model:
        x = pm.Normal("x", mu=_f(0.0), sigma=_f(BUMPS["prior_sd"]), shape=2)
        d2 = pt.sum((x[None, :] - _f(c)) ** 2, axis=1)
        log_bumps = _f(np.log(w) - np.log(2 * np.pi * s**2)) - d2 / _f(2 * s**2)
        pm.Potential("bumps", pt.logsumexp(log_bumps))
    return model


def _bumps_logpost(x1, x2):
    c, w, s = BUMPS["centres"], BUMPS["weights"], BUMPS["sds"]
    terms = [np.log(wk) - np.log(2 * np.pi * sk**2) - ((x1 - ck[0]) ** 2 + (x2 - ck[1]) ** 2) / (2 * sk**2)
             for ck, wk, sk in zip(c, w, s)]
    return _log_norm(x1, 0.0, BUMPS["prior_sd"]) + _log_norm(x2, 0.0, BUMPS["prior_sd"]) + special.logsumexp(
        np.stack(terms), axis=0)


def exact_log_z_bumps():
    """Closed form: sum_k w_k N(c_k; 0, (prior_sd^2 + s_k^2) I)."""
    c, w, s = BUMPS["centres"], BUMPS["weights"], BUMPS["sds"]
    var = BUMPS["prior_sd"] ** 2 + s**2
    terms = np.log(w) - np.log(2 * np.pi * var) - np.sum(c**2, 1) / (2 * var)
    return float(special.logsumexp(terms)), 0.0


# ================================================================================================ 8. Gaussian shells
SHELLS = {"half_width": 6.0, "centres": np.array([[-3.5, 0.0], [3.5, 0.0]]), "radius": 2.0, "width": 0.1}


def build_gaussian_shells() -> pm.Model:
    (c1, c2), r, w, hw = SHELLS["centres"], SHELLS["radius"], SHELLS["width"], SHELLS["half_width"]
    with pm.Model() as model:
        x = pm.Uniform("x", lower=_f(-hw), upper=_f(hw), shape=2)

        def log_shell(c):
            dist = pt.sqrt(pt.sum((x - _f(c)) ** 2))
            return -0.5 * ((dist - _f(r)) / _f(w)) ** 2 - _f(0.5 * np.log(2 * np.pi * w**2))

        pm.Potential("shells", pm.math.logaddexp(log_shell(c1), log_shell(c2)))
    return model


def _shells_logpost(x1, x2):
    (c1, c2), r, w, hw = SHELLS["centres"], SHELLS["radius"], SHELLS["width"], SHELLS["half_width"]

    def log_shell(c):
        dist = np.sqrt((x1 - c[0]) ** 2 + (x2 - c[1]) ** 2)
        return -0.5 * ((dist - r) / w) ** 2 - 0.5 * np.log(2 * np.pi * w**2)

    return np.logaddexp(log_shell(c1), log_shell(c2)) - 2 * np.log(2 * hw)


def exact_log_z_gaussian_shells():
    hw = SHELLS["half_width"]
    return _midpoint_pair(_shells_logpost, [(-hw, hw), (-hw, hw)], m=1200)


# ================================================================================================ 9. eggbox
EGG = {"upper": 10 * np.pi}


def build_eggbox() -> pm.Model:
    with pm.Model() as model:
        x = pm.Uniform("x", lower=_f(0.0), upper=_f(EGG["upper"]), shape=2)
        pm.Potential("eggbox", (_f(2.0) + pt.cos(x[0] / 2) * pt.cos(x[1] / 2)) ** 5)
    return model


def _eggbox_logpost(x1, x2):
    return (2.0 + np.cos(x1 / 2) * np.cos(x2 / 2)) ** 5 - 2 * np.log(EGG["upper"])


def exact_log_z_eggbox():
    return _midpoint_pair(_eggbox_logpost, [(0.0, EGG["upper"]), (0.0, EGG["upper"])], m=1500)


# ================================================================================================ 10-11. funnel
FUNNEL = {"v_sd": 3.0, "n_obs": 3, "obs_sd": 1.0}


def _funnel_data() -> np.ndarray:
    rng = np.random.default_rng(1010)
    v = rng.normal(0.0, FUNNEL["v_sd"])
    x = rng.normal(0.0, np.exp(v / 2), size=FUNNEL["n_obs"])
    return x + rng.normal(0.0, FUNNEL["obs_sd"], size=FUNNEL["n_obs"])


def _build_funnel(dim: int) -> pm.Model:
    y = _funnel_data()
    with pm.Model() as model:
        v = pm.Normal("v", mu=_f(0.0), sigma=_f(FUNNEL["v_sd"]))
        x = pm.Normal("x", mu=_f(0.0), sigma=pt.exp(v / 2), shape=dim - 1)
        pm.Normal("y", mu=x[: FUNNEL["n_obs"]], sigma=_f(FUNNEL["obs_sd"]), observed=y)
    return model


def build_funnel_10() -> pm.Model:
    return _build_funnel(10)


def build_funnel_50() -> pm.Model:
    return _build_funnel(50)


def _funnel_logf(v):
    """log N(v; 0, 3^2) + log p(y | v) with x integrated out: y_j | v ~ N(0, e^v + obs_sd^2) independently."""
    y = _funnel_data()
    sd = np.sqrt(np.exp(v) + FUNNEL["obs_sd"] ** 2)
    return _log_norm(v, 0.0, FUNNEL["v_sd"]) + sum(_log_norm(yj, 0.0, sd) for yj in y)


def exact_log_z_funnel():
    """The same for every dimension: the unobserved x_i integrate to 1."""
    return _quad(_funnel_logf, [(-80.0, 60.0)], n=2001)


# ================================================================================================ 12. labels
LABELS = {"n": 30, "centres": (-1.5, 1.5), "prior_sd": 3.0}


def _labels_data() -> np.ndarray:
    rng = np.random.default_rng(1212)
    z = rng.random(LABELS["n"]) < 0.5
    return rng.normal(np.where(z, LABELS["centres"][1], LABELS["centres"][0]), 1.0)


def build_labels() -> pm.Model:
    y = _labels_data()
    with pm.Model() as model:
        mu = pm.Normal("mu", mu=_f(0.0), sigma=_f(LABELS["prior_sd"]), shape=2)
        z = pm.Bernoulli("z", p=_f(0.5), shape=y.size)
        pm.Normal("y", mu=mu[z], sigma=_f(1.0), observed=y)
    return model


def _labels_logf(m0, m1):
    """log prior of the means + log p(y | means) with every label summed out (a two-component mixture)."""
    y = _labels_data()
    out = _log_norm(m0, 0.0, LABELS["prior_sd"]) + _log_norm(m1, 0.0, LABELS["prior_sd"])
    for yi in y:
        out = out + np.logaddexp(_log_norm(yi, m0, 1.0), _log_norm(yi, m1, 1.0)) + np.log(0.5)
    return out


def exact_log_z_labels():
    return _quad(_labels_logf, [(-15.0, 15.0), (-15.0, 15.0)], n=601)


# ================================================================================================ 13. Ising
ISING = {"L": 4, "J": 0.6, "h": 0.05}


def _ising_energy(sigma):
    """J sum over nearest-neighbour pairs (open boundaries) + h sum of spins, for spins +-1 of shape (..., L, L)."""
    pairs = np.sum(sigma[..., 1:, :] * sigma[..., :-1, :], (-2, -1)) + np.sum(sigma[..., :, 1:] * sigma[..., :, :-1],
                                                                             (-2, -1))
    return ISING["J"] * pairs + ISING["h"] * np.sum(sigma, (-2, -1))


def build_ising() -> pm.Model:
    L, J, h = ISING["L"], ISING["J"], ISING["h"]
    with pm.Model() as model:
        s = pm.Bernoulli("s", p=_f(0.5), shape=(L, L))
        sigma = 2 * s - 1
        pairs = pt.sum(sigma[1:, :] * sigma[:-1, :]) + pt.sum(sigma[:, 1:] * sigma[:, :-1])
        pm.Potential("ising", _f(J) * pairs + _f(h) * pt.sum(sigma))
    return model


def _ising_states() -> np.ndarray:
    n = ISING["L"] ** 2
    return (np.arange(2**n)[:, None] >> np.arange(n)) & 1


def exact_log_z_ising():
    n, L = ISING["L"] ** 2, ISING["L"]
    sigma = (2 * _ising_states() - 1).reshape(-1, L, L)
    return float(special.logsumexp(_ising_energy(sigma)) - n * np.log(2.0)), 0.0


# ================================================================================================ 14. Poisson(1000)
POIS1000 = {"rate": 1000.0, "y": 1100.0}


def build_poisson_1000() -> pm.Model:
    with pm.Model() as model:
        k = pm.Poisson("k", mu=_f(POIS1000["rate"]))
        pm.Normal("y", mu=k, sigma=_f(1.0), observed=_f(POIS1000["y"]))
    return model


def exact_log_z_poisson_1000():
    k = np.arange(0, 4001)
    terms = stats.poisson.logpmf(k, POIS1000["rate"]) + _log_norm(POIS1000["y"], k, 1.0)
    return float(special.logsumexp(terms)), 0.0


# ================================================================================================ the table
_QUAD_SE = "se = largest change on refining the grid 2x or widening the box"
_ORDERED_NOTE = ("PyMC's ordered transform keeps the iid N(0, 5^2) density on mu_1 < ... < mu_K without renormalising "
                 "(prior mass 1/K!), so log Z = the exchangeable model's log Z - log K! exactly")

MODELS: dict[str, BenchmarkModel] = {m.name: m for m in [
    _m("mixture_k2",
       "NormalMixture, 60 points (30 around -2, 30 around 2), sd 1 and weights 1/2 known, 2 exchangeable means "
       "~ N(0, 5^2): label switching, 2 symmetric modes",
       build_mixture_k2, -133.1146702794, "2-D trapezoid quadrature over both means (both modes); " + _QUAD_SE,
       1e-10, "label switching", 2, exact_log_z_mixture_k2),
    _m("mixture_k3",
       "NormalMixture, 60 points (20 around each of -4, 0, 4), sd 1 and weights 1/3 known, 3 exchangeable means "
       "~ N(0, 5^2): label switching, 3! = 6 symmetric modes",
       build_mixture_k3, -154.7323963702, "log 3! (symmetry under permutations of the means) + 3-D trapezoid "
       "quadrature over mu_1 < mu_2 < mu_3; " + _QUAD_SE, 1e-10, "label switching", 3, exact_log_z_mixture_k3),
    _m("mixture_k2_ordered",
       "mixture_k2 with transform=ordered on the means (initval -1, 1)",
       build_mixture_k2_ordered, -133.8078174599, "mixture_k2's quadrature - log 2; " + _ORDERED_NOTE, 1e-10,
       "ordered mixture", 2, exact_log_z_mixture_k2_ordered),
    _m("mixture_k3_ordered",
       "mixture_k3 with transform=ordered on the means (initval -1, 0, 1)",
       build_mixture_k3_ordered, -156.5241558394, "mixture_k3's quadrature over mu_1 < mu_2 < mu_3 (without the "
       "log 3!); " + _ORDERED_NOTE, 1e-10, "ordered mixture", 3, exact_log_z_mixture_k3_ordered),
    _m("mixture_2d_k2",
       "2-D data, 40 points around (-1.5, 0) and (1.5, 1), pm.Mixture of two MvNormal(mu_k, I), weights 1/2, "
       "mean vectors ~ N(0, 5^2 I) exchangeable: 2 symmetric modes in 4-D",
       build_mixture_2d_k2, -151.4796858487, "log 2 (swap symmetry) + 4-D trapezoid quadrature over mu_00 < mu_10 "
       "(25^4 and 49^4 points); " + _QUAD_SE + " (3e-7 is the coarser grid's change; 61^4 points agree with 49^4 "
       "to 1e-12)", 3e-7, "label switching", 4, exact_log_z_mixture_2d_k2),
    _m("change_point",
       "Poisson change point, 100 counts (rate 2.0 for 60 periods, then 1.2), tau ~ DiscreteUniform(0, 100), both "
       "rates ~ Gamma(4, 2): broad, ragged posterior over tau",
       build_change_point, -164.3167345403, "exact: sum over the 101 switch points of the Gamma-Poisson marginals",
       0.0, "discrete", 3, exact_log_z_change_point),
    _m("bumps",
       "2-D, x ~ N(0, 10^2 I), Potential = log of 5 narrow Gaussian bumps (sd 0.3-0.8) with weights 0.4, 0.25, "
       "0.2, 0.1, 0.05, 6-13 apart: 5 separated modes of unequal mass",
       build_bumps, -6.7568693023, "closed form: sum_k w_k N(c_k; 0, (100 + s_k^2) I)", 0.0, "multimodal", 2,
       exact_log_z_bumps),
    _m("gaussian_shells",
       "two Gaussian shells (Feroz & Hobson 2008): x ~ Uniform(-6, 6)^2, likelihood = sum of two rings of radius 2, "
       "width 0.1, centred at (-3.5, 0) and (3.5, 0)",
       build_gaussian_shells, -1.7456418845, "2-D midpoint rule over the prior box, 2400^2 cells; se = change from "
       "1200^2 (classic value -1.75)", 1e-9, "thin curved", 2, exact_log_z_gaussian_shells),
    _m("eggbox",
       "eggbox (Feroz et al. 2009): x ~ Uniform(0, 10 pi)^2, log L = (2 + cos(x1/2) cos(x2/2))^5: 18 modes, some "
       "halved or quartered by the box",
       build_eggbox, 235.8559403323, "2-D midpoint rule over the prior box, 3000^2 cells (geometric convergence: "
       "the integrand is even about both ends of each axis); se = change from 1500^2 (Feroz et al. 2009 quote "
       "235.88; dynesty's tests use 235.856)", 1e-9, "periodic", 2, exact_log_z_eggbox),
    _m("funnel_10",
       "Neal's funnel, centred, 10-D: v ~ N(0, 3^2), x_1..9 ~ N(0, exp(v/2)^2), y_j ~ N(x_j, 1) observed for j = 1..3",
       build_funnel_10, -4.6959251680, "x integrated analytically (y_j | v ~ N(0, e^v + 1)), 1-D trapezoid "
       "quadrature over v; " + _QUAD_SE, 1e-10, "funnel", 10, exact_log_z_funnel),
    _m("funnel_50",
       "Neal's funnel, centred, 50-D: as funnel_10 with x_1..49 (the same three observations)",
       build_funnel_50, -4.6959251680, "as funnel_10 (the unobserved x_i integrate to 1, so log Z does not depend "
       "on the dimension)", 1e-10, "funnel", 50, exact_log_z_funnel),
    _m("labels",
       "30 points with a discrete label each: z_i ~ Bernoulli(0.5), y_i ~ N(mu[z_i], 1), 2 exchangeable means "
       "~ N(0, 3^2) (clusters around -1.5 and 1.5)",
       build_labels, -57.4170098080, "labels summed analytically (two-component mixture likelihood), 2-D "
       "trapezoid quadrature over the means; " + _QUAD_SE, 1e-10, "discrete labels", 32, exact_log_z_labels),
    _m("ising",
       "4 x 4 Ising model: spins ~ Bernoulli(0.5), Potential J sum_<ij> s_i s_j + h sum_i s_i (s = +-1, open "
       "boundaries, J = 0.6, h = 0.05): two modes (all up, all down) of unequal mass",
       build_ising, 5.2654724423, "exact: enumeration of the 2^16 states", 0.0, "discrete", 16, exact_log_z_ising),
    _m("poisson_1000",
       "k ~ Poisson(1000), y ~ N(k, 1) observed at 1100: a discrete parameter with large support, 3.2 prior sds "
       "from its prior mean",
       build_poisson_1000, -9.2576177010, "exact: sum over k = 0..4000", 0.0, "discrete", 1,
       exact_log_z_poisson_1000),
]}


# ================================================================================================ independent checks
def _pymc_quad_2d(model, search, n=601) -> tuple[float, float]:
    """Brute-force 2-D trapezoid quadrature of PyMC's own log density (Jacobian included) over its 2 coordinates."""
    fn, _, _, sizes = _flat_logp(model)
    if sum(sizes) != 2:
        raise ValueError("expected 2 unconstrained coordinates")

    def logf(a, b):
        shape = np.broadcast(a, b).shape
        rows = np.column_stack([np.broadcast_to(a, shape).ravel(), np.broadcast_to(b, shape).ravel()])
        return np.concatenate([fn(rows[i : i + 100_000]) for i in range(0, len(rows), 100_000)]).reshape(shape)

    return _quad(logf, search, n=n)


def _pymc_midpoint_uniform(model, lower: float, upper: float, m: int) -> float:
    """2-D midpoint rule of PyMC's density (jacobian=False, i.e. in x itself) over a Uniform prior's box.

    The one free variable is ``x`` (shape 2) with the interval transform; its value variable is logit((x - lower) /
    (upper - lower)), so points of the x grid are passed through that map.
    """
    fn, *_ = _flat_logp(model, jacobian=False)
    h = (upper - lower) / m
    x = lower + (np.arange(m) + 0.5) * h
    u = special.logit((x - lower) / (upper - lower))
    parts = []
    for i in range(0, m, 100):
        a, b = np.meshgrid(u[i : i + 100], u, indexing="ij")
        parts.append(special.logsumexp(fn(np.column_stack([a.ravel(), b.ravel()]))))
    return float(special.logsumexp(parts) + 2 * np.log(h))


def _is_modes(model, starts, n_draws: int = 200_000, seed: int = 1, df: float = 5.0) -> tuple[float, float, float]:
    """Importance sampling of PyMC's density from an equal-weight mixture of multivariate t(df) at its modes.

    Each start is polished to a mode of PyMC's log density (unconstrained coordinates) by BFGS; each component is a
    t with the inverse Hessian there as its scale. Returns (log Z, se, ESS fraction).
    """
    fn, _, _, sizes = _flat_logp(model)
    d = sum(sizes)
    f = lambda x: -float(fn(np.atleast_2d(x))[0])  # noqa: E731
    comps = []
    for s in starts:
        mode = optimize.minimize(f, np.asarray(s, float), method="BFGS", options={"gtol": 1e-8}).x
        cov = np.linalg.inv(_hessian(f, mode))
        comps.append((mode, np.linalg.cholesky((cov + cov.T) / 2)))
    rng = np.random.default_rng(seed)
    k = len(comps)

    def log_t(x, mode, chol):
        dev = np.linalg.solve(chol, (x - mode).T).T
        q = np.sum(dev**2, 1)
        return (special.gammaln((df + d) / 2) - special.gammaln(df / 2) - 0.5 * d * np.log(df * np.pi)
                - np.sum(np.log(np.diag(chol))) - 0.5 * (df + d) * np.log1p(q / df))

    logw = []
    for start in range(0, n_draws, 20_000):
        m = min(20_000, n_draws - start)
        which = rng.integers(k, size=m)
        z = rng.standard_normal((m, d)) / np.sqrt(rng.chisquare(df, size=m) / df)[:, None]
        x = np.empty((m, d))
        for j, (mode, chol) in enumerate(comps):
            sel = which == j
            x[sel] = mode + z[sel] @ chol.T
        logq = special.logsumexp(np.stack([log_t(x, mode, chol) for mode, chol in comps]), axis=0) - np.log(k)
        logw.append(fn(x) - logq)
    logw = np.concatenate(logw)
    log_z = float(special.logsumexp(logw) - np.log(logw.size))
    w = np.exp(logw - logw.max())
    return log_z, float(np.std(w) / (np.sqrt(w.size) * np.mean(w))), float(np.sum(w) ** 2 / np.sum(w**2) / w.size)


def _max_point_diff(model, logpost_rows, x) -> float:
    """Largest |numpy log density - PyMC's log density| at the rows ``x`` (models without value transforms)."""
    fn, *_ = _flat_logp(model)
    return float(np.max(np.abs(fn(x) - logpost_rows(x))))


def _change_point_brute_force() -> float:
    """For every switch point, 2-D trapezoid quadrature of PyMC's own density over the two log rates; summed."""
    fn, names, _, _ = _flat_logp(build_change_point())
    g = np.linspace(-6.0, 3.0, 341)
    uu, vv = (a.ravel() for a in np.meshgrid(g, g, indexing="ij"))
    terms = []
    for tau in range(CP["T"] + 1):
        cols = {"tau": np.full(uu.size, float(tau)), "early_log__": uu, "late_log__": vv}
        terms.append(special.logsumexp(fn(np.column_stack([cols[n] for n in names]))) + 2 * np.log(g[1] - g[0]))
    return float(special.logsumexp(terms))


def _labels_integrand_check(points) -> float:
    """At fixed means: PyMC's elementwise density summed over each label (they are independent given the means)."""
    import pytensor

    model = build_labels()
    terms = model.logp(jacobian=True, sum=False)  # [mu prior (2,), z prior (30,), y likelihood (30,)]
    fn = pytensor.function(model.value_vars, terms)
    n = LABELS["n"]
    worst = 0.0
    for m0, m1 in points:
        mu = np.array([m0, m1])
        zero, one = fn(mu, np.zeros(n, dtype="int64")), fn(mu, np.ones(n, dtype="int64"))
        value = float(np.sum(zero[0]) + np.sum(np.logaddexp(zero[1] + zero[2], one[1] + one[2])))
        worst = max(worst, abs(value - float(_labels_logf(m0, m1))))
    return worst


def _enumerate_pymc(model, rows) -> float:
    fn, *_ = _flat_logp(model)
    return float(special.logsumexp(np.concatenate([fn(rows[i : i + 8192]) for i in range(0, len(rows), 8192)])))


def _ordered_k3_start(k: int = 3):
    c = np.asarray(MIX_CENTRES[k], float)
    return np.r_[c[0], np.log(np.diff(c))]


_VERIFY_TOL = {"logz": 1e-6, "diff": 1e-8}  # brute-force grids of PyMC's density; numpy vs PyMC integrands


def verify(names, log=print) -> bool:
    """Independent checks of the truths against PyMC's own log density (see the module docstring).

    Each check is ("logz", value): a log Z computed from PyMC's density, compared with the stored truth;
    ("is", (log Z, se, ESS fraction)): the same by importance sampling; or ("diff", d): the largest difference
    between PyMC's density (summed / integrated over what the truth integrates analytically) and the numpy
    integrand of the truth.
    """
    rng = np.random.default_rng(0)
    k3_perm = [np.array(p) for p in itertools.permutations(MIX_CENTRES[3])]
    c2 = MIX2D["centres"]
    v_points = (-4.0, 0.0, 2.5)

    def funnel_diff(build):
        return max(abs(_gaussian_latent_log_integral(build(), {"v": v}) - float(_funnel_logf(v))) for v in v_points)

    checks = {
        "mixture_k2": lambda: [("brute-force 2-D quadrature of PyMC's density", "logz", _pymc_quad_2d(
            build_mixture_k2(), [(-20.0, 20.0), (-20.0, 20.0)])[0])],
        "mixture_k2_ordered": lambda: [("brute-force 2-D quadrature of PyMC's density in the ordered transform's "
                                        "coordinates (mu_1, log(mu_2 - mu_1))", "logz", _pymc_quad_2d(
            build_mixture_k2_ordered(), [(-20.0, 20.0), (-40.0, 5.0)])[0])],
        "mixture_k3": lambda: [
            ("numpy density = PyMC density at 20 random points", "diff", _max_point_diff(
                build_mixture_k3(), lambda x: _mixture_logpost(_mixture_data(3), [x[:, 0], x[:, 1], x[:, 2]]),
                rng.normal(0, 3, size=(20, 3)))),
            ("importance sampling of PyMC's density, t(5) mixture at the 6 modes, 200000 draws", "is",
             _is_modes(build_mixture_k3(), k3_perm))],
        "mixture_k3_ordered": lambda: [("importance sampling of PyMC's density (ordered coordinates), t(5) at the "
                                        "mode, 200000 draws", "is",
                                        _is_modes(build_mixture_k3_ordered(), [_ordered_k3_start()]))],
        "mixture_2d_k2": lambda: [
            ("numpy density = PyMC density at 20 random points", "diff", _max_point_diff(
                build_mixture_2d_k2(), _mixture2d_logpost, rng.normal(0, 2, size=(20, 4)))),
            ("importance sampling of PyMC's density, t(5) mixture at the 2 modes, 200000 draws", "is",
             _is_modes(build_mixture_2d_k2(), [c2.ravel(), c2[::-1].ravel()]))],
        "change_point": lambda: [("brute-force 2-D quadrature of PyMC's density per switch point", "logz",
                                  _change_point_brute_force())],
        "bumps": lambda: [("brute-force 2-D quadrature of PyMC's density", "logz", _pymc_quad_2d(
            build_bumps(), [(-40.0, 40.0), (-40.0, 40.0)], n=1201)[0])],
        "gaussian_shells": lambda: [("2-D midpoint rule (2400^2) of PyMC's density in x", "logz",
                                     _pymc_midpoint_uniform(build_gaussian_shells(), -SHELLS["half_width"],
                                                            SHELLS["half_width"], 2400))],
        "eggbox": lambda: [("2-D midpoint rule (3000^2) of PyMC's density in x", "logz",
                            _pymc_midpoint_uniform(build_eggbox(), 0.0, EGG["upper"], 3000))],
        "funnel_10": lambda: [("integrand = PyMC density integrated over x at v = -4, 0, 2.5", "diff",
                               funnel_diff(build_funnel_10))],
        "funnel_50": lambda: [("integrand = PyMC density integrated over x at v = -4, 0, 2.5", "diff",
                               funnel_diff(build_funnel_50))],
        "labels": lambda: [("integrand = PyMC density summed over each label, at 3 points", "diff",
                            _labels_integrand_check([(-1.5, 1.5), (0.3, -2.0), (4.0, 4.5)]))],
        "ising": lambda: [("PyMC density summed over the 2^16 states", "logz",
                           _enumerate_pymc(build_ising(), _ising_states().astype(float)))],
        "poisson_1000": lambda: [("PyMC density summed over k = 0..4000", "logz",
                                  _enumerate_pymc(build_poisson_1000(), np.arange(0.0, 4001.0)[:, None]))],
    }
    log("| model | check | value | stored | difference | pass |\n|---|---|---:|---:|---:|---|")
    failed = []
    for n in names:
        if n not in checks:
            continue
        t0 = time.perf_counter()
        stored = MODELS[n].log_z
        for what, tag, value in checks[n]():
            if tag == "is":
                lz, se, ess = value
                ok = abs(lz - stored) <= 4 * se
                log(f"| {n} | {what}, ESS fraction {ess:.2f} | {lz:.4f} +- {se:.4f} | {stored:.4f} | "
                    f"{lz - stored:+.1e} ({abs(lz - stored) / se:.1f} se) | {ok} |")
            elif tag == "diff":
                ok = value <= _VERIFY_TOL["diff"]
                log(f"| {n} | {what} | max abs difference {value:.1e} | | | {ok} |")
            else:
                ok = abs(value - stored) <= _VERIFY_TOL["logz"]
                log(f"| {n} | {what} | {value:.8f} | {stored:.8f} | {value - stored:+.1e} | {ok} |")
            if not ok:
                failed.append(n)
        log(f"| | ({n}: {time.perf_counter() - t0:.1f} s) | | | | |")
    log(f"\nverify: {'all checks pass' if not failed else 'FAILED: ' + ', '.join(failed)} (log Z from PyMC's density "
        f"within {_VERIFY_TOL['logz']:.0e}, importance sampling within 4 se, integrands within "
        f"{_VERIFY_TOL['diff']:.0e})")
    return not failed


# ================================================================================================ main
def _table(names) -> str:
    rows = [f"| model | dim | kind | log Z (PyMC {pm.__version__}) | truth se | how |", "|---|---:|---|---:|---:|---|"]
    for n in names:
        m = MODELS[n]
        rows.append(f"| {n} | {m.dim} | {m.kind} | {m.truth():.6f} | {m.log_z_se:.1e} | {m.log_z_how} |")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="comma-separated subset (default: all)")
    parser.add_argument("--check", action="store_true", help="recompute the truths and compare with the stored ones")
    parser.add_argument("--verify", action="store_true",
                        help="independent checks of the truths against PyMC's own log density (1-2 min)")
    args = parser.parse_args(argv)
    names = args.models.split(",") if args.models else list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(MODELS)}")
    print(_table(names))
    if args.check:
        print("\n| model | stored | recomputed | difference | error estimate | time (s) |\n"
              "|---|---:|---:|---:|---:|---:|")
        worst = 0.0
        for n in names:
            m = MODELS[n]
            t0 = time.perf_counter()
            value, err = m.exact()
            diff = value - m.log_z
            worst = max(worst, abs(diff))
            print(f"| {n} | {m.log_z:.10f} | {value:.10f} | {diff:+.1e} | {err:.1e} | {time.perf_counter() - t0:.1f} |",
                  flush=True)
        print(f"\nlargest |stored - recomputed|: {worst:.1e}")
        if not worst <= 1e-8:
            sys.exit(1)
    if args.verify:
        print()
        if not verify(names):
            sys.exit(1)


if __name__ == "__main__":
    main()
