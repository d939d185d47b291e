"""The temperature-level moves of simulated tempering (Marinari & Parisi 1992; Carlson et al. 2016, RTS).

Simulated tempering samples the joint ``q(x, k) ∝ r_k f_{b_k}(x) / Zhat_k`` on a ladder
``0 = b_0 < ... < b_{K-1} = 1`` (``r_k``: prior over levels, uniform by default; ``Zhat_k``: the current guess of
the normaliser of level k). With ``log f_b = log f0 + b U`` the common ``log f0(x)`` cancels in the level
conditional, which is therefore cheap for all K levels at once:

    log q(k | x) = log r_k + b_k U(x) - log Zhat_k - logsumexp_j (log r_j + b_j U(x) - log Zhat_j).

Level moves, both leaving ``q(k | x)`` invariant:

* ``"gibbs"``: an exact draw ``k ~ q(. | x)`` (RTS Algorithm 1);
* ``"metropolis"``: propose ``k +- 1`` with probability 1/2 each (a proposal off the ladder is rejected), accept
  with ``min(1, q(k' | x) / q(k | x))``.

Everything acts on all chains at once; nothing here evaluates the log density (``U`` comes from the state).
"""

from __future__ import annotations

import numpy as np

from ..kernels.gibbs import sample_categorical
from ..weights import logsumexp

__all__ = ["level_log_probs", "move_levels", "LEVEL_MOVES"]

LEVEL_MOVES = ("gibbs", "metropolis")


def level_log_probs(U, betas, log_zhat, log_prior) -> np.ndarray:
    """``log q(k | x_i)`` for every chain ``i`` and level ``k``: an ``(n, K)`` array whose rows sum to one.

    A chain whose ``U`` is not finite (``f1(x) = 0``) belongs to level 0 with probability one when that level has
    ``b_0 = 0``.
    """
    U = np.asarray(U, dtype=float)[:, None]
    betas = np.asarray(betas, dtype=float)[None, :]
    with np.errstate(invalid="ignore"):
        tempered = np.where(betas == 0.0, 0.0, betas * U)
    tempered = np.where(np.isnan(tempered), -np.inf, tempered)
    log_a = np.asarray(log_prior)[None, :] + tempered - np.asarray(log_zhat)[None, :]
    return log_a - logsumexp(log_a, axis=1)[:, None]


def move_levels(rng: np.random.Generator, levels, log_q, move: str = "gibbs"):
    """New levels for all chains given ``log q(k | x)`` ``(n, K)``; returns ``(levels, accepted)``.

    ``accepted`` is all True for Gibbs draws and says which +-1 proposals were accepted otherwise.
    """
    levels = np.asarray(levels, dtype=int)
    n, K = log_q.shape
    if move == "gibbs":
        return sample_categorical(rng, log_q), np.ones(n, dtype=bool)
    if move != "metropolis":
        raise ValueError(f"pmz: level_move must be one of {LEVEL_MOVES}, got {move!r}")
    proposal = levels + np.where(rng.uniform(size=n) < 0.5, -1, 1)
    inside = (proposal >= 0) & (proposal < K)
    proposal = np.where(inside, proposal, levels)
    rows = np.arange(n)
    with np.errstate(invalid="ignore"):
        log_ratio = log_q[rows, proposal] - log_q[rows, levels]
    accepted = inside & (np.log(rng.uniform(size=n)) < np.where(np.isnan(log_ratio), -np.inf, log_ratio))
    return np.where(accepted, proposal, levels), accepted
