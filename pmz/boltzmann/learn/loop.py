"""The learning loop shared by RBMs and DBMs: minibatch stochastic approximation with a negative-phase sampler.

Per update ``t`` (``n_epochs`` passes over the shuffled data, ``N // batch_size`` updates each):

1. positive phase: ``(X+, H+) = positive_phase(params, v_batch)`` (RBM: ``(v, sigmoid(b + v W))``; DBM: mean field);
2. negative phase: ``X- = sampler.sample(...)``, ``H- = sigmoid(b + X- W)``;
3. ``grad = moments(X+, H+) - moments(X-, H-)`` (:mod:`pmz.boltzmann.learn.gradients`), then the momentum step with
   weight decay at ``lr_t`` (:mod:`pmz.boltzmann.learn.updates`) and the sampler's own update (FPCD's fast weights);
4. every ``callback_every`` updates, ``callback(update, model)`` (its values are kept in the run).

Randomness: three streams, one each for the initial weights and chain starts, the data order and the chains
(spawned from ``random_seed``): runs of different methods with one seed start from the same weights and see the
minibatches in the same order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ...progress import progress_bar
from .gradients import Bipartite, gradient, hidden_means, moments
from .negative import negative_phase
from .learning_options import LearningOptions
from .updates import learning_rate, momentum_at, momentum_step

__all__ = ["LearningRun", "Streams", "binary_data", "fit", "initial_params"]


@dataclass(frozen=True)
class Streams:
    """The random streams of a run: ``init`` (weights, chain starts), ``order`` (data order), ``chains``,
    ``monitor`` (per-epoch monitors, never the training)."""

    init: np.random.Generator
    order: np.random.Generator
    chains: np.random.Generator
    monitor: np.random.Generator

    @staticmethod
    def from_seed(seed) -> "Streams":
        return Streams(*np.random.default_rng(seed).spawn(4))


@dataclass
class LearningRun:
    """What a learning run returns.

    Attributes
    ----------
    model : RBM or DBM
        The learned model.
    params : Bipartite
        Its parameters in the bipartite view (for a DBM, ``x = (v, h2)``, ``h = h1``).
    n_updates : int
    callback_values : list of (int, object)
        ``(update, callback(update, model))``.
    monitor : list
        One value per epoch (RBMs: the mean squared one-step reconstruction error per image; a crude monitor,
        not the likelihood).
    sampler : dict
        The negative phase's diagnostics (CAST: share of swap steps that swapped, visits per level, Wang-Landau's
        ``log_g`` and gain; FPCD: rms of the fast weights).
    seconds : float
        Wall time of the training (callbacks excluded).
    options : LearningOptions
    """

    model: object
    params: Bipartite
    n_updates: int
    callback_values: list = field(default_factory=list)
    monitor: list = field(default_factory=list)
    sampler: dict = field(default_factory=dict)
    seconds: float = 0.0
    options: LearningOptions | None = None


def initial_params(rng, n_x: int, n_hidden: int, visible_logits, init_scale: float) -> Bipartite:
    """``W ~ N(0, init_scale^2)`` (drawn from ``rng``), ``a`` = the given logits padded with zeros to ``n_x``,
    ``b = 0``."""
    W = init_scale * rng.standard_normal((n_x, n_hidden))
    logits = np.asarray(visible_logits, dtype=np.float64)
    a = np.concatenate([logits, np.zeros(n_x - logits.size)]) if logits.size < n_x else logits
    return Bipartite(W, a, np.zeros(n_hidden))


def binary_data(data) -> np.ndarray:
    """``data`` as a float array of shape (n_data, n_visible) with 0/1 entries and at least one row, or a clear
    ValueError."""
    data = np.asarray(data, dtype=np.float64)
    if data.ndim != 2 or not np.all((data == 0) | (data == 1)):
        raise ValueError("pmz: data must be a 2-D array of 0/1 values (n_data, n_visible)")
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"pmz: data has shape {data.shape}; learning needs at least one row and one visible unit")
    return data


def fit(data, params: Bipartite, X0, *, positive_phase, to_model, options: LearningOptions, streams: Streams,
        callback=None, monitor=None, desc: str = "learn") -> LearningRun:
    """Run the loop of the module docstring from ``params`` with chains started at ``X0``.

    ``positive_phase(params, V) -> (X+, H+)``; ``to_model(params)`` builds the model handed to ``callback`` and
    returned; ``monitor(epoch, params, rng) -> value`` runs after every epoch with the monitor stream.
    """
    data = np.asarray(data, dtype=np.float64)
    n_data = data.shape[0]
    batch = options.batch_size
    if batch > n_data:
        raise ValueError(f"pmz: batch_size ({batch}) exceeds the number of data vectors ({n_data})")
    n_batches = n_data // batch
    n_updates = options.n_epochs * n_batches
    every = options.callback_every or n_batches
    sampler = negative_phase(options)
    state = sampler.init(streams.chains, params, X0)
    velocity = params.zeros_like()
    run = LearningRun(to_model(params), params, n_updates, options=options)
    seconds, t0 = 0.0, time.perf_counter()
    update = 0
    with progress_bar(total=n_updates, desc=f"{desc} {options.method}", disable=not options.progressbar) as bar:
        for epoch in range(options.n_epochs):
            order = streams.order.permutation(n_data)
            m = momentum_at(epoch, options.momentum, options.momentum_warmup)
            for j in range(n_batches):
                lr = learning_rate(update, n_updates, schedule=options.learning_rate_schedule,
                                   lr0=options.learning_rate, final=options.final_learning_rate,
                                   tau=options.learning_rate_tau)
                update += 1
                X_pos, H_pos = positive_phase(params, data[order[j * batch : (j + 1) * batch]])
                state, X_neg = sampler.sample(streams.chains, state, params, X_pos)
                grad = gradient(moments(X_pos, H_pos), moments(X_neg, hidden_means(params, X_neg)))
                params, velocity = momentum_step(params, velocity, grad, lr=lr, momentum=m,
                                                 weight_decay=options.weight_decay)
                state = sampler.after_update(state, grad, lr)
                if not np.all(np.isfinite(params.W)):
                    raise FloatingPointError(f"pmz: the weights diverged at update {update}; lower learning_rate")
                bar.update(1)
                if callback is not None and update % every == 0:
                    seconds += time.perf_counter() - t0
                    run.callback_values.append((update, callback(update, to_model(params))))
                    t0 = time.perf_counter()
            if monitor is not None:
                run.monitor.append(monitor(epoch, params, streams.monitor))
    run.seconds = seconds + time.perf_counter() - t0
    run.model, run.params, run.sampler = to_model(params), params, sampler.diagnostics(state)
    return run
