"""The data-annealing family: a PyMC model's likelihood with one weight per observation (Chopin 2002; ARM section 2).

With the likelihood split into terms ``l_i(x)`` (every element of every observed variable's elementwise log
density, then of every tempered ``pm.Potential``; :meth:`pmz.model.pymc.CompiledModel.log_likelihood_terms`) and
weights ``w_i``, the family has

    log f0(x) = log prior(x),        U_w(x) = sum_i w_i l_i(x),

and is used at beta = 1: with ``w`` = 1 on the first ``m`` terms of an order and 0 elsewhere it is position ``m``
of data annealing, ``f_m(x) = prior(x) exp(sum_{j <= m} l_{order[j]}(x))``, so every pmz kernel moves it unchanged
(:class:`~pmz.sequences.by_observation.DataAnnealingSequence` builds one per stage).
"""

from __future__ import annotations

import numpy as np

from ..model.parts import LogDensityParts
from .base import ModelFamily

__all__ = ["PartialLikelihood"]


class PartialLikelihood(ModelFamily):
    """``log f0`` = log prior, ``U`` = the weighted log likelihood ``sum_i w_i l_i(x)``: the data-annealing
    distribution with weights ``w`` as a family at beta = 1 (so every pmz kernel moves it unchanged)."""

    name = "partial_likelihood"
    log_z0 = 0.0

    def __init__(self, compiled, weights):
        super().__init__(compiled)
        self.weights = np.asarray(weights, dtype=np.float64)

    def parts(self, X, *, grad=False):
        return LogDensityParts(*self.compiled.log_densities_weighted(X, self.weights, grad=grad))
