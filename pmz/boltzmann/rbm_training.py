"""Training binary RBMs by contrastive divergence (CD-k) and persistent contrastive divergence (PCD): the trainer of
the digits RBMs shipped with pmz (``benchmarks/train_rbm.py``), kept with its settings record and signature.

The algorithms live in :mod:`pmz.boltzmann.learn` (one implementation of the gradient, the updates and the chains);
this module maps :class:`TrainingSettings` onto :class:`pmz.boltzmann.learn.LearningOptions` and runs
:mod:`pmz.boltzmann.learn`'s loop with ONE ``numpy.random.Generator(seed)`` as every random stream (initial weights,
chain starts, data order, chains), in the order the shipped RBMs were trained with, so they are reproduced bit for
bit. For new work use :func:`pmz.boltzmann.learn.fit_rbm` (independent streams, FPCD and CAST, a progress bar).

The gradient of the mean log-likelihood, ``E_data[v s(b + vW)'] - E_model[v s(b + vW)']`` for ``W`` (``s`` the
sigmoid) and likewise for the biases, takes its model term from ``k`` block-Gibbs steps: from the minibatch itself
(CD-k, Hinton 2002) or from ``n_chains`` persistent chains (PCD, Tieleman 2008). Updates: ``velocity = m velocity +
lr (grad - decay W)``, ``theta += velocity``, the learning rate decaying linearly to ``final_learning_rate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .learn.gradients import Bipartite
from .learn.loop import Streams
from .learn.negative import block_gibbs
from .learn.learning_options import LearningOptions
from .learn.rbm_fit import fit_rbm_on_streams
from .rbm import RBM

__all__ = ["TrainingSettings", "gibbs_chain", "train_rbm"]


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
    """``k`` block-Gibbs steps ``h ~ Bern(s(b + vW))``, ``v ~ Bern(s(a + W h))`` for a batch ``v (n, nv)``
    (:func:`pmz.boltzmann.learn.block_gibbs`)."""
    return block_gibbs(rng, Bipartite(rbm.W, rbm.a, rbm.b), v, k)


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
    config = LearningOptions(
        method=settings.method, k=settings.k, n_epochs=settings.n_epochs, batch_size=settings.batch_size,
        learning_rate=settings.learning_rate, learning_rate_schedule="linear",
        final_learning_rate=settings.final_learning_rate, momentum=settings.momentum,
        momentum_warmup=settings.momentum_warmup, weight_decay=settings.weight_decay, n_chains=settings.n_chains,
        init_scale=settings.init_scale, random_seed=settings.seed, progressbar=False,
    )
    rng = np.random.default_rng(settings.seed)
    streams = Streams(rng, rng, rng, np.random.default_rng([settings.seed, 1]))  # the monitor has its own stream
    n_batches = np.asarray(data).shape[0] // settings.batch_size

    def per_epoch(update, rbm):
        return callback(update // n_batches - 1, rbm)

    run = fit_rbm_on_streams(data, n_hidden, config, streams, callback=None if callback is None else per_epoch)
    return run.model, TrainingHistory(list(run.monitor), [value for _, value in run.callback_values])
