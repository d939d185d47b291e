"""Training binary RBMs by contrastive divergence (CD-k) and persistent contrastive divergence (PCD).

The log-likelihood gradient of an RBM ``p(v) = exp(-F(v)) / Z`` (see :mod:`pmz.systems.rbm`) is a difference
of a data term and a model term,

    d/dW mean log p(v) = E_data[v s(b + vW)'] - E_model[v s(b + vW)'],    s = sigmoid,

and likewise ``E_data[v] - E_model[v]`` for ``a`` and ``E_data[s(b + vW)] - E_model[s(b + vW)]`` for ``b``
(the hidden units enter through their conditional means). The model term is estimated from "negative"
visible states after ``k`` alternating block-Gibbs steps ``h ~ Bern(s(b + vW))``, ``v ~ Bern(s(a + W h))``:

* **CD-k** (Hinton 2002): the chains start at the minibatch itself;
* **PCD** (Tieleman 2008): ``n_chains`` persistent chains continue from where the previous update left them
  (a stochastic-approximation estimate of the model term; use a learning rate that decays to zero).

Updates are minibatch gradient ascent with momentum and L2 weight decay on ``W``: ``velocity = m velocity +
lr (grad - decay W)``, ``theta += velocity``. Everything is vectorised over the minibatch; one
``numpy.random.Generator(seed)`` drives the data order, the chains and the initial weights, so a training run
is reproducible bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .rbm import RBM

__all__ = ["TrainingSettings", "gibbs_chain", "train_rbm"]


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


@dataclass(frozen=True)
class TrainingSettings:
    """Settings of a CD-k or PCD run (all stored next to the weights by ``benchmarks/train_rbm.py``).

    Attributes
    ----------
    method : {"cd", "pcd"}
    k : int
        Block-Gibbs steps per update for the negative phase.
    n_epochs : int
        Passes over the (shuffled) training set.
    batch_size : int
    learning_rate : float
        Initial learning rate; it decays linearly to ``final_learning_rate`` over the run.
    final_learning_rate : float
    momentum : float
        Momentum after the first ``momentum_warmup`` epochs (0.5 before).
    momentum_warmup : int
    weight_decay : float
        L2 penalty on ``W`` (not on the biases).
    n_chains : int
        Persistent chains (PCD only; default: ``batch_size``).
    init_scale : float
        Initial weights ``N(0, init_scale^2)``; ``a`` starts at the logits of the data marginals, ``b`` at 0.
    seed : int
    """

    method: str = "pcd"
    k: int = 1
    n_epochs: int = 100
    batch_size: int = 20
    learning_rate: float = 0.05
    final_learning_rate: float = 0.0
    momentum: float = 0.9
    momentum_warmup: int = 5
    weight_decay: float = 1e-4
    n_chains: int | None = None
    init_scale: float = 0.01
    seed: int = 0

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class TrainingHistory:
    """Per epoch: the mean number of pixels a one-step reconstruction ``v -> h -> v`` gets wrong (a crude monitor,
    not the likelihood), and the callback's values."""

    reconstruction_error: list = field(default_factory=list)
    callback: list = field(default_factory=list)


def gibbs_chain(rng, rbm: RBM, v, k: int):
    """``k`` block-Gibbs steps ``h ~ Bern(s(b + vW))``, ``v ~ Bern(s(a + W h))`` for a batch ``v (n, nv)``."""
    for _ in range(k):
        h = (rng.uniform(size=(v.shape[0], rbm.n_hidden)) < _sigmoid(rbm.b + v @ rbm.W)).astype(np.float64)
        v = (rng.uniform(size=v.shape) < _sigmoid(rbm.a + h @ rbm.W.T)).astype(np.float64)
    return v


def train_rbm(data, n_hidden: int, settings: TrainingSettings | None = None, *, callback=None, **options):
    """Train a binary RBM on 0/1 data by CD-k or PCD.

    Parameters
    ----------
    data : array (N, nv) of 0/1
    n_hidden : int
    settings : TrainingSettings, optional
        Defaults: PCD-1, 100 epochs, batch 20, learning rate 0.05 decaying to 0, momentum 0.9, decay 1e-4.
    callback : callable, optional
        ``callback(epoch, rbm) -> value``, called after every epoch; values are kept in the history.
    **options
        Overrides of individual ``settings`` fields, e.g. ``method="cd", n_epochs=10``.

    Returns
    -------
    rbm : RBM
    history : TrainingHistory

    Examples
    --------
    >>> data = np.tile([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]], (20, 1))
    >>> rbm, history = train_rbm(data, 2, method="cd", n_epochs=30, batch_size=10, learning_rate=0.1)
    >>> history.reconstruction_error[-1] < history.reconstruction_error[0]
    True
    """
    settings = TrainingSettings(**{**(settings or TrainingSettings()).as_dict(), **options})
    if settings.method not in ("cd", "pcd"):
        raise ValueError(f"method must be 'cd' or 'pcd', got {settings.method!r}")
    data = np.asarray(data, dtype=np.float64)
    n_data, nv = data.shape
    rng = np.random.default_rng(settings.seed)
    p = np.clip(data.mean(axis=0), 1e-3, 1 - 1e-3)
    W = settings.init_scale * rng.standard_normal((nv, n_hidden))
    a = np.log(p) - np.log1p(-p)
    b = np.zeros(n_hidden)
    vel_W, vel_a, vel_b = np.zeros_like(W), np.zeros_like(a), np.zeros_like(b)
    n_chains = settings.n_chains or settings.batch_size
    chains = data[rng.integers(0, n_data, n_chains)].copy()
    n_batches = max(1, n_data // settings.batch_size)
    n_updates = settings.n_epochs * n_batches
    history = TrainingHistory()
    monitor_rng = np.random.default_rng([settings.seed, 1])  # the monitor does not perturb the training stream
    update = 0
    for epoch in range(settings.n_epochs):
        order = rng.permutation(n_data)
        momentum = 0.5 if epoch < settings.momentum_warmup else settings.momentum
        for j in range(n_batches):
            frac = update / n_updates
            lr = settings.learning_rate + frac * (settings.final_learning_rate - settings.learning_rate)
            update += 1
            v_data = data[order[j * settings.batch_size : (j + 1) * settings.batch_size]]
            current = RBM(W, a, b)
            ph_data = _sigmoid(b + v_data @ W)
            start = v_data if settings.method == "cd" else chains
            v_model = gibbs_chain(rng, current, start, settings.k)
            if settings.method == "pcd":
                chains = v_model
            ph_model = _sigmoid(b + v_model @ W)
            grad_W = v_data.T @ ph_data / v_data.shape[0] - v_model.T @ ph_model / v_model.shape[0]
            grad_a = v_data.mean(axis=0) - v_model.mean(axis=0)
            grad_b = ph_data.mean(axis=0) - ph_model.mean(axis=0)
            vel_W = momentum * vel_W + lr * (grad_W - settings.weight_decay * W)
            vel_a = momentum * vel_a + lr * grad_a
            vel_b = momentum * vel_b + lr * grad_b
            W, a, b = W + vel_W, a + vel_a, b + vel_b
        # one-step reconstruction error of the training data, as a monitor only
        sq_err = float(np.sum((data - gibbs_chain(monitor_rng, RBM(W, a, b), data, 1)) ** 2))
        history.reconstruction_error.append(sq_err / n_data)
        if callback is not None:
            history.callback.append(callback(epoch, RBM(W, a, b)))
    return RBM(W, a, b), history
