"""Data annealing of a PyMC model: observations enter the likelihood one at a time or in batches (Chopin 2002;
ARM section 2).

With the likelihood split into terms ``l_i(x)`` (every element of every observed variable's elementwise log
density, then of every tempered ``pm.Potential``; :meth:`pmz.model.pymc.CompiledModel.log_likelihood_terms`)
and an ``order`` of the terms, position ``m`` is the distribution

    f_m(x) = prior(x) exp(sum_{j <= m} l_{order[j]}(x)),        f_0 = prior (exact draws),  f_N = posterior,

so ``Z_N = p(y)``. The incremental weight from ``m`` to ``m'`` is ``W(x) = exp(sum_{m < j <= m'} l_{order[j]}(x))``.
The next ``m'`` is ``m + obs_per_stage``, or (``obs_per_stage="adaptive"``) the largest ``m'`` whose conditional
ESS stays above ``cess_target``, from the terms of all remaining observations at the current particles (one
batched call). Moves are the model's batched kernel on ``f_m`` (a family view with the weights of the included
terms, :class:`~pmz.families.partial_likelihood.PartialLikelihood`; the compiled likelihood evaluates all terms and
weights them, so a move costs a full log density).
"""

from __future__ import annotations

import numpy as np

from ..families.partial_likelihood import PartialLikelihood
from ..kernels.base import ParticleState
from ..model.reference import PriorReference
from ..validate import fraction
from ..weights import log_cess_fraction, normalized_log_weights
from .base import SMCSequence, resolve_order

__all__ = ["DataAnnealingSequence"]


class DataAnnealingSequence(SMCSequence):
    """SMC that adds a PyMC model's observations to the likelihood in ``order``.

    Parameters
    ----------
    compiled : CompiledModel
    kernel : Kernel
    order : {"random", "given"} or array of int
        Order in which the likelihood terms enter: a random permutation (drawn from ``rng``), the model's order,
        or a permutation of ``range(n_terms)``.
    obs_per_stage : int or "adaptive"
        Terms added per stage, or adaptively by conditional ESS.
    cess_target : float
        Conditional-ESS fraction kept per adaptive stage.
    rng : numpy.random.Generator, optional
        For ``order="random"``.
    """

    name = "data"
    label = "n_obs"

    def __init__(self, compiled, kernel, *, order="random", obs_per_stage="adaptive", cess_target=0.9, rng=None):
        if compiled.improper_priors:
            raise ValueError(
                f"pmz: data annealing starts from the prior, which is improper for {compiled.improper_priors}; "
                "give these variables proper priors"
            )
        if compiled.potentials == "prior" and compiled.model.potentials:
            raise ValueError("pmz: data annealing needs the pm.Potential terms in the likelihood (potentials='likelihood')")
        self.compiled = self.evaluator = compiled
        self.kernel = kernel
        self.prior = PriorReference(compiled)
        self.dim = compiled.dim
        self.log_z0 = 0.0
        compiled._term_functions("weighted")  # builds the term graphs, sets n_terms
        n = compiled.n_terms
        self.n_terms = n
        self.t_start, self.t_end = 0.0, float(n)
        self.order = resolve_order(order, n, rng, what="order (of the likelihood terms)")
        if not (obs_per_stage == "adaptive" or (isinstance(obs_per_stage, int | np.integer) and obs_per_stage >= 1)):
            raise ValueError(f"pmz: obs_per_stage must be a positive integer or 'adaptive', got {obs_per_stage!r}")
        self.obs_per_stage = obs_per_stage
        fraction(closed_right=False)("cess_target", cess_target)
        self.cess_target = float(cess_target)
        self._families = {}

    def family_at(self, t) -> PartialLikelihood:
        """The distribution with the first ``t`` terms (in ``order``) included."""
        m = int(round(t))
        if m not in self._families:
            weights = np.zeros(self.n_terms)
            weights[self.order[:m]] = 1.0
            self._families = {m: PartialLikelihood(self.compiled, weights)}  # positions only increase in a run
        return self._families[m]

    def _state(self, X, t):
        return ParticleState(X, self.family_at(t).parts(X, grad=self.kernel.needs_grad))

    def start(self, rng, n):
        return self._state(self.prior.sample(rng, n), 0)

    def next_position(self, t, state, log_w):
        m = int(round(t))
        if self.obs_per_stage != "adaptive":
            return float(min(m + int(self.obs_per_stage), self.n_terms))
        remaining = self.order[m:]
        L = self.compiled.log_likelihood_terms(state.x)[:, remaining]
        log_W = np.cumsum(np.where(np.isnan(L), -np.inf, L), axis=1)  # (n, remaining): adding 1, 2, ... terms
        with np.errstate(invalid="ignore"):
            log_cess = log_cess_fraction(normalized_log_weights(log_w)[:, None], log_W, axis=0)
        admissible = np.isfinite(log_cess) & (log_cess >= np.log(self.cess_target))
        # the CESS falls (nearly) monotonically as terms are added: add terms up to the first inadmissible batch,
        # and at least one
        k = admissible.size if admissible.all() else int(np.argmin(admissible))
        return float(m + max(k, 1))

    def log_increment(self, state, t, t_new):
        new = self._state(state.x, t_new)
        with np.errstate(invalid="ignore"):
            log_W = new.parts.U - state.parts.U
        return np.where(np.isnan(log_W), -np.inf, log_W), new

    def move(self, rng, state, t, params):
        return self.kernel.step(rng, state, self.family_at(t), 1.0, params)

    def fresh(self, rng, n, t):
        return self._state(self.prior.sample(rng, n), t)

    def describe(self):
        return {
            "n_terms": self.n_terms,
            "term_names": list(self.compiled.term_names),
            "term_sizes": list(self.compiled.term_sizes),
            "order": self.order.tolist() if self.n_terms <= 10_000 else "omitted",
            "obs_per_stage": self.obs_per_stage,
            "cess_target": self.cess_target,
        }
