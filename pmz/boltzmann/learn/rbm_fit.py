"""Learning binary RBMs: CD-k, PCD, Fast PCD and CAST (:func:`fit_rbm`).

The positive phase is exact, ``E[h | v] = sigmoid(b + v W)``; the negative phase is the sampler that
``method`` names (:mod:`pmz.boltzmann.learn.negative`); the update is :mod:`pmz.boltzmann.learn.updates`' (see
:mod:`pmz.boltzmann.learn.loop`). Initial weights ``N(0, init_scale^2)``, visible biases at the logits of the data
marginals (clipped to ``[1e-3, 1 - 1e-3]``), hidden biases 0; persistent chains start at random training vectors.

References: Hinton 2002 (CD); Tieleman, "Training restricted Boltzmann machines using approximations to the
likelihood gradient", ICML 2008 (PCD); Tieleman & Hinton, "Using fast weights to improve persistent contrastive
divergence", ICML 2009 (FPCD); Salakhutdinov, "Learning deep Boltzmann machines using adaptive MCMC", ICML 2010
(CAST).
"""

from __future__ import annotations

import numpy as np

from ..rbm import RBM
from .gradients import Bipartite, hidden_means
from .loop import LearningRun, Streams, binary_data, fit, initial_params
from .negative import block_gibbs
from .learning_options import LearningOptions, make_options

__all__ = ["fit_rbm", "fit_rbm_on_streams", "data_logits", "reconstruction_error"]


def data_logits(data, clip: float = 1e-3) -> np.ndarray:
    """``logit(p)`` of the data marginals ``p`` clipped to ``[clip, 1 - clip]``."""
    p = np.clip(np.asarray(data, dtype=np.float64).mean(axis=0), clip, 1 - clip)
    return np.log(p) - np.log1p(-p)


def reconstruction_error(data, params: Bipartite, rng) -> float:
    """Mean squared error per vector of one block-Gibbs step ``v -> h -> v`` from the data (a crude monitor)."""
    return float(np.sum((data - block_gibbs(rng, params, data, 1)) ** 2)) / data.shape[0]


def _positive_phase(params: Bipartite, V):
    return V, hidden_means(params, V)


def fit_rbm_on_streams(
    data, n_hidden: int, options: LearningOptions, streams: Streams, *, init=None, callback=None
):
    """:func:`fit_rbm` with given streams (``pmz.boltzmann.rbm_training.train_rbm`` passes one generator as all four
    of its streams, which reproduces its historical bits)."""
    data = binary_data(data)
    n_hidden = int(n_hidden)
    if init is None:
        params = initial_params(streams.init, data.shape[1], n_hidden, data_logits(data), options.init_scale)
    else:
        if init.W.shape != (data.shape[1], n_hidden):
            raise ValueError(f"pmz: init must be an RBM with W {(data.shape[1], n_hidden)}, got {init.W.shape}")
        params = Bipartite(init.W.copy(), init.a.copy(), init.b.copy())
    X0 = data[streams.init.integers(0, data.shape[0], options.chains)].copy()

    def monitor(epoch, params, rng):
        return reconstruction_error(data, params, rng)

    return fit(data, params, X0, positive_phase=_positive_phase, to_model=lambda p: RBM(p.W, p.a, p.b),
               options=options, streams=streams, callback=callback, monitor=monitor, desc="RBM")


def fit_rbm(data, n_hidden: int, *, init: RBM | None = None, callback=None, config: LearningOptions | None = None,
            **options) -> LearningRun:
    """Learn a binary RBM on 0/1 data.

    Parameters
    ----------
    data : array (N, nv) of 0/1
    n_hidden : int
    init : RBM, optional
        Start from these parameters (default: small random weights, see the module docstring).
    callback : callable, optional
        ``callback(update, rbm) -> value`` every ``callback_every`` updates (default once per epoch); the values are
        kept in ``run.callback_values``. It gets its own copy of the parameters and never touches the training's
        random streams, so it cannot change the training.
    config : LearningOptions, optional
        Ready options; keywords override its fields.
    **options
        :class:`~pmz.boltzmann.learn.LearningOptions` fields: ``method`` ("pcd", "fpcd", "cast", "cd"), ``n_epochs``,
        ``batch_size``, ``learning_rate``, ``learning_rate_schedule``, ``momentum``, ``weight_decay``, ``k``,
        ``n_chains``, ``fast_learning_rate``, ``fast_decay``, ``beta_min``, ``n_temps``, ``swap_interval``,
        ``random_seed``, ``progressbar``, ...

    Returns
    -------
    LearningRun
        ``run.model`` is the learned :class:`~pmz.boltzmann.rbm.RBM`.

    Examples
    --------
    >>> data = np.tile([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]], (20, 1))
    >>> run = fit_rbm(data, 2, method="pcd", n_epochs=30, batch_size=10, learning_rate=0.1, progressbar=False)
    >>> run.n_updates, run.monitor[-1] < run.monitor[0]
    (120, True)
    """
    options = make_options(config, options)
    streams = Streams.from_seed(options.random_seed)
    return fit_rbm_on_streams(data, n_hidden, options, streams, init=init, callback=callback)
