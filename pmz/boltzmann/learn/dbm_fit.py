"""Learning two-hidden-layer DBMs: SAP (= PCD), Fast PCD and CAST with a mean-field positive phase (:func:`fit_dbm`).

Salakhutdinov & Hinton (2009) and Salakhutdinov (2010): the data-dependent moments come from the mean-field
posterior ``q(h1, h2 | v) = Bern(mu1) Bern(mu2)`` (:meth:`pmz.boltzmann.dbm.DBM.mean_field`, ``n_mean_field`` fixed-
point steps), the model moments from persistent chains (:mod:`pmz.boltzmann.learn.negative`). Each update therefore
climbs the variational lower bound ``E_q[-E] + H(q) - log Z <= log p(v)``. In the bipartite view of
:mod:`pmz.boltzmann.learn.gradients` (``x = (v, h2)``, ``h = h1``) the positive phase is ``X+ = (v, mu2)``, ``H+ = mu1``
and everything else is the RBM's loop (:mod:`pmz.boltzmann.learn.loop`). Chains start at random training images with
``h2 = 0``; initial weights ``N(0, init_scale^2)``, ``a`` at the data logits, ``b1 = b2 = 0`` (no greedy
pretraining).
"""

from __future__ import annotations

import numpy as np

from ..dbm import DBM
from .gradients import Bipartite
from .loop import LearningRun, Streams, binary_data, fit, initial_params
from .learning_options import LearningOptions, make_options
from .rbm_fit import data_logits

__all__ = ["fit_dbm", "dbm_from_bipartite", "bipartite_from_dbm"]


def dbm_from_bipartite(params: Bipartite, n_visible: int) -> DBM:
    """The DBM whose bipartite view (:meth:`DBM.as_rbm`) has these parameters.

    >>> from pmz.boltzmann.dbm import random_dbm
    >>> dbm = random_dbm(4, 3, 2)
    >>> back = dbm_from_bipartite(bipartite_from_dbm(dbm), 4)
    >>> all(np.array_equal(getattr(back, k), getattr(dbm, k)) for k in ("W1", "W2", "a", "b1", "b2"))
    True
    """
    nv = int(n_visible)
    return DBM(params.W[:nv], params.W[nv:].T, params.a[:nv], params.b, params.a[nv:])


def bipartite_from_dbm(dbm: DBM) -> Bipartite:
    """``(W = [W1; W2'], a = (a, b2), b = b1)``: the DBM as a bipartite machine."""
    rbm = dbm.as_rbm()
    return Bipartite(rbm.W.copy(), rbm.a.copy(), rbm.b.copy())


def fit_dbm(data, n_hidden1: int, n_hidden2: int, *, init: DBM | None = None, callback=None,
            config: LearningOptions | None = None, **options) -> LearningRun:
    """Learn a binary DBM ``v - h1 - h2`` on 0/1 data (module docstring).

    Parameters
    ----------
    data : array (N, nv) of 0/1
    n_hidden1, n_hidden2 : int
    init : DBM, optional
        Start from this DBM (default: small random weights).
    callback : callable, optional
        ``callback(update, dbm) -> value`` every ``callback_every`` updates (default once per epoch).
    config, **options
        :class:`~pmz.boltzmann.learn.LearningOptions` (``method`` "pcd" (SAP), "fpcd" or "cast"; ``n_mean_field``; ...).

    Returns
    -------
    LearningRun
        ``run.model`` is the learned :class:`~pmz.boltzmann.dbm.DBM`.

    Examples
    --------
    >>> data = np.tile([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]], (20, 1))
    >>> run = fit_dbm(data, 3, 2, n_epochs=5, batch_size=10, progressbar=False)
    >>> run.model.sizes, run.n_updates
    ((4, 3, 2), 20)
    """
    options = make_options(config, options)
    if options.method == "cd":
        raise ValueError("pmz: method='cd' is for RBMs; DBMs learn with 'pcd' (SAP), 'fpcd' or 'cast'")
    data = binary_data(data)
    nv, n1, n2 = data.shape[1], int(n_hidden1), int(n_hidden2)
    streams = Streams.from_seed(options.random_seed)
    if init is None:
        params = initial_params(streams.init, nv + n2, n1, data_logits(data), options.init_scale)
    else:
        if init.sizes != (nv, n1, n2):
            raise ValueError(f"pmz: init must be a {nv}-{n1}-{n2} DBM, got {init.sizes}")
        params = bipartite_from_dbm(init)
    rows = data[streams.init.integers(0, data.shape[0], options.chains)]
    X0 = np.concatenate([rows, np.zeros((rows.shape[0], n2))], axis=1)

    def positive_phase(params, V):
        mu1, mu2 = dbm_from_bipartite(params, nv).mean_field(V, n_steps=options.n_mean_field)
        return np.concatenate([V, mu2], axis=1), mu1

    return fit(data, params, X0, positive_phase=positive_phase, to_model=lambda p: dbm_from_bipartite(p, nv),
               options=options, streams=streams, callback=callback, desc="DBM")
