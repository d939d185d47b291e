"""One hyperparameter: ``Z = int p(y, theta) d theta`` by the trapezoid rule instead of importance sampling (the
latent and Laplace routes' last step where ``log p(y, theta)`` is deterministic; :mod:`pmz.auto.hyper_importance`).

With ``theta = theta* + s u`` (the peak and its Laplace sd) the rule runs on ``u = i h``, ``h =`` :data:`STEP`,
from :data:`START_SDS` sd each way, each end widened by half its distance from the peak (at least
:data:`WIDEN_SDS` sd) while it lies less than :data:`DROP` nats below the largest value, up to :data:`MAX_NODES`
nodes (a log scale's tail falls linearly and may need a few hundred sd; beyond, importance sampling instead):

    log Z_h = log(h s) + logsumexp_i log p(y, theta_i).

For an integrand analytic in a strip ``|Im u| < a`` the rule's error falls like ``exp(-2 pi a / h)`` (Trefethen and
Weideman 2014, SIAM Review 56); for a Gaussian of sd 1 it is ``2 exp(-2 pi^2 / h^2)``, about e^-315 at
``h = 1/4``. Its check is the same rule on every other node, ``Z_2h``, a free second estimate: the answer's error
bar is ``|log Z_h - log Z_2h|`` (an overestimate: ``Z_2h``'s error is far larger than ``Z_h``'s), and not below
:data:`FLOOR` nats plus :data:`ROUNDOFF` of ``|log Z|`` plus the error of the values themselves (the Laplace
route's Gauss-Hermite rule per group, :attr:`ConditionalLaplace.quadrature_gap`), so that the round-off of the
values (precisions read from gradient differences) stays inside it. A change between the two rules beyond
:data:`MAX_CHANGE` halves ``h`` once; if it is still there, importance sampling runs instead. So it does where
``max_time`` is spent before the rule is done (more nodes wanted after the first 65): importance sampling buys
draws within the time left and flags the result when that cuts them short.

Posterior draws: nodes drawn by their weights, each moved uniformly within its cell, with one exact draw of the
latents given each.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ..estimate_diagnostics import Diagnostics
from ..records import EvidenceEstimate
from .contract import Named
from .peak_search import NotApplicable, evaluate

__all__ = ["STEP", "FLOOR", "hyper_quadrature"]

STEP = 0.25  # node spacing in the peak's Laplace sd
START_SDS = 8.0
WIDEN_SDS = 4.0
MAX_NODES = 8192  # beyond: tails too heavy for the rule (importance sampling instead)
DROP = 36.0  # nats below the largest value at both ends (the mass beyond: below e^-36 of the total per sd)
FLOOR = 1e-4  # nats: the least error bar reported, ...
ROUNDOFF = 1e-8  # ... plus this much of |log Z| (the values' round-off: precisions read from gradient differences)
MAX_CHANGE = 1e-3  # nats between the rule and its every-other-node twin, above which h is halved (once)
N_DRAWS = 500  # posterior draws per chain (4 chains)


def hyper_quadrature(cg, mode, cov, rng, out_of_time=lambda: False):
    """``(answer, check, posterior_x, n_nodes)`` for one hyperparameter (module docstring), or None where the tails
    need more than :data:`MAX_NODES` nodes, a value fails its certificate, the two rules disagree even at
    ``h / 2``, or ``out_of_time()`` says ``max_time`` is spent when more nodes are wanted."""
    try:
        return _hyper_quadrature(cg, float(mode[0]), float(np.sqrt(cov[0, 0])), rng, out_of_time)
    except NotApplicable:  # a value far out fails its certificate: importance sampling instead
        return None


def _hyper_quadrature(cg, centre, sd, rng, out_of_time):
    def values(u):
        return evaluate(cg, (centre + sd * u)[:, None], rng).log_marginal

    h = STEP
    u = np.arange(-START_SDS, START_SDS + h / 2, h)
    f = values(u)
    while True:  # widen each end still within DROP nats of the top, by half its distance from the peak or more
        top = np.max(f)
        low, high = f[0] > top - DROP, f[-1] > top - DROP
        if not (low or high):
            break
        if len(u) > MAX_NODES or out_of_time():
            return None
        if low:
            left = u[0] - h * np.arange(int(np.ceil(max(WIDEN_SDS, -0.5 * u[0]) / h)), 0, -1)
            u, f = np.concatenate([left, u]), np.concatenate([values(left), f])
        if high:
            right = u[-1] + h * np.arange(1, int(np.ceil(max(WIDEN_SDS, 0.5 * u[-1]) / h)) + 1)
            u, f = np.concatenate([u, right]), np.concatenate([f, values(right)])
    for _ in range(2):
        fine, coarse = _rule(f, h * sd), _rule(f[::2], 2 * h * sd)
        if abs(fine - coarse) <= MAX_CHANGE:
            break
        if out_of_time():
            return None
        mids = u[:-1] + h / 2
        both = np.empty(2 * len(u) - 1)
        both[0::2], both[1::2] = f, values(mids)
        u, f, h = np.arange(len(both)) * (h / 2) + u[0], both, h / 2
    else:
        return None
    floor = FLOOR + ROUNDOFF * abs(fine) + float(getattr(cg, "quadrature_gap", None) or 0.0)
    err = max(abs(fine - coarse), floor)
    answer = _estimate(fine, err)
    check = (Named("quadrature_h", answer), Named("quadrature_2h", _estimate(coarse, err)))
    return Named("quadrature", answer), check, _draws(cg, centre, sd, u, f, h, rng), len(u)


def _rule(f, width) -> float:
    return float(logsumexp(f) + np.log(width))


def _estimate(log_z, err) -> EvidenceEstimate:
    return EvidenceEstimate(log_z=log_z, log_z_se=err, method="quadrature", diagnostics=Diagnostics())


def _draws(cg, centre, sd, u, f, h, rng):
    """Four chains of posterior draws: nodes by their weights, moved uniformly within their cells, each with an
    exact draw of the latents given it."""
    p = np.exp(f - np.max(f))
    nodes = rng.choice(len(u), size=4 * N_DRAWS, p=p / p.sum())
    thetas = centre + sd * (u[nodes] + h * (rng.random(nodes.size) - 0.5))
    return evaluate(cg, thetas[:, None], rng).draw[:, 0].reshape(4, N_DRAWS, -1)
