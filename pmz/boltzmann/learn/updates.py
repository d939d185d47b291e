"""Parameter updates of stochastic-approximation learning: learning-rate schedule, momentum with weight decay, and
the fast weights of Fast PCD.

* Learning rate at update ``t`` of ``T`` (:func:`learning_rate`): ``"linear"``, ``lr_t = lr0 + (t / T) (lr_T -
  lr0)`` (to zero by default: the digits RBMs shipped with pmz); ``"inverse"``, ``lr_t = lr0 / (1 + t / tau)``
  (decays to zero with ``sum lr_t = inf`` and ``sum lr_t^2 < inf``, the Robbins-Monro conditions under which
  stochastic approximation with persistent chains converges: Younes 1989, Tieleman 2008, Salakhutdinov 2010);
  ``"constant"``.
* Momentum and L2 weight decay on the weights (:func:`momentum_step`)::

      velocity <- m velocity + lr_t (grad - lambda W),     theta <- theta + velocity

  (no decay on the biases), with ``m = min(0.5, momentum)`` during the first ``momentum_warmup`` epochs.
* Fast weights (:func:`fast_weight_step`; Tieleman & Hinton, "Using fast weights to improve persistent contrastive
  divergence", ICML 2009)::

      theta_fast <- fast_decay theta_fast + lr_fast grad

  The negative-phase chains sample the model with ``theta + theta_fast``; the regular parameters never see
  ``theta_fast``. The fast weights push the chains out of the modes they have just sampled (their gradient step
  lowers the model probability where the chains are), and decay back within ``1 / (1 - fast_decay)`` updates.
"""

from __future__ import annotations

from .gradients import Bipartite

__all__ = ["learning_rate", "momentum_at", "momentum_step", "fast_weight_step"]


def learning_rate(t: int, n_updates: int, *, schedule: str, lr0: float, final: float = 0.0, tau=None) -> float:
    """The learning rate of update ``t = 0, 1, ..., n_updates - 1``.

    >>> [learning_rate(t, 4, schedule="linear", lr0=1.0) for t in range(4)]
    [1.0, 0.75, 0.5, 0.25]
    >>> learning_rate(10, 100, schedule="inverse", lr0=1.0, tau=10)
    0.5
    """
    if schedule == "linear":
        return lr0 + (t / n_updates) * (final - lr0)
    if schedule == "inverse":
        tau = max(n_updates / 10.0, 1.0) if tau is None else tau
        return lr0 / (1.0 + t / tau)
    if schedule == "constant":
        return lr0
    raise ValueError(f"pmz: unknown learning-rate schedule {schedule!r}")


def momentum_at(epoch: int, momentum: float, warmup: int) -> float:
    """``min(0.5, momentum)`` during the first ``warmup`` epochs, then ``momentum``."""
    return min(0.5, momentum) if epoch < warmup else momentum


def momentum_step(params: Bipartite, velocity: Bipartite, grad: Bipartite, *, lr: float, momentum: float,
                  weight_decay: float) -> tuple[Bipartite, Bipartite]:
    """One gradient-ascent step with momentum and weight decay on ``W``; returns ``(params, velocity)``."""
    velocity = Bipartite(
        momentum * velocity.W + lr * (grad.W - weight_decay * params.W),
        momentum * velocity.a + lr * grad.a,
        momentum * velocity.b + lr * grad.b,
    )
    return Bipartite(params.W + velocity.W, params.a + velocity.a, params.b + velocity.b), velocity


def fast_weight_step(fast: Bipartite, grad: Bipartite, *, lr: float, decay: float) -> Bipartite:
    """``decay * fast + lr * grad`` (Fast PCD's fast weights, weights and biases alike)."""
    return Bipartite(decay * fast.W + lr * grad.W, decay * fast.a + lr * grad.a, decay * fast.b + lr * grad.b)
