"""Learning RBMs and two-hidden-layer DBMs by stochastic approximation with persistent chains (docs/learning.md), and
tracking their log-likelihood while they learn (docs/rts_tracking.md).

* :func:`fit_rbm`, :func:`fit_dbm`: CD-k (RBMs), PCD / SAP (Tieleman 2008; Salakhutdinov 2010), Fast PCD (Tieleman
  & Hinton 2009) and CAST (Salakhutdinov 2010, on :mod:`pmz.runners.cast`), with the options of
  :class:`LearningOptions`; they return a :class:`LearningRun`.
* The pieces, each written once: :mod:`~pmz.boltzmann.learn.gradients` (the data-minus-model moments of a bipartite
  machine), :mod:`~pmz.boltzmann.learn.updates` (learning-rate schedules, momentum and weight decay, fast weights),
  :mod:`~pmz.boltzmann.learn.negative` (the negative-phase samplers), :mod:`~pmz.boltzmann.learn.loop` (the minibatch
  loop).
* :class:`LogZTracker` (:mod:`~pmz.boltzmann.learn.tracking`): log Z, and the train / validation log-likelihood, at
  training checkpoints by RTS warm-started from the previous checkpoint (Carlson et al. 2016, section 4.4).

:func:`pmz.boltzmann.train_rbm` (the trainer of the shipped digits RBMs) runs on this loop.
"""

from .dbm_fit import bipartite_from_dbm, dbm_from_bipartite, fit_dbm
from .gradients import Bipartite, gradient, hidden_means, moments
from .loop import LearningRun
from .negative import CASTChains, ContrastiveDivergence, FastWeightsGibbs, PersistentGibbs, block_gibbs
from .learning_options import LEARNING_METHODS, LEARNING_RATE_SCHEDULES, LearningOptions
from .rbm_fit import fit_rbm
from .tracking import Checkpoint, LogZTracker, TrackedSystem, dbm_system, ladder_trips, rbm_system
from .updates import fast_weight_step, learning_rate, momentum_step

__all__ = [
    "fit_rbm",
    "fit_dbm",
    "LearningOptions",
    "LearningRun",
    "LEARNING_METHODS",
    "LEARNING_RATE_SCHEDULES",
    "Bipartite",
    "moments",
    "gradient",
    "hidden_means",
    "learning_rate",
    "momentum_step",
    "fast_weight_step",
    "block_gibbs",
    "ContrastiveDivergence",
    "PersistentGibbs",
    "FastWeightsGibbs",
    "CASTChains",
    "dbm_from_bipartite",
    "bipartite_from_dbm",
    "LogZTracker",
    "Checkpoint",
    "TrackedSystem",
    "rbm_system",
    "dbm_system",
    "ladder_trips",
]
