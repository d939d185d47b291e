"""The default, ``method="auto"``: an ordered plan of routes to the evidence, each proving or checking its answer.

The plan (:data:`pmz.auto.plan.PLAN`) asks each route in turn whether it applies, and the first that answers
gives the result; every route asked leaves a line in the result (``res.run_attrs["routes_tried"]``,
``print(res)``). The route contract is :mod:`pmz.auto.contract`; what the routes read, :mod:`pmz.auto.context`.

=============  ==============================================================  ==================================
route          applies where                                                   answer rests on
=============  ==============================================================  ==================================
sum            every free variable discrete, at most 2^20 joint values          a finite sum (exact, se 0)
latent         Gaussian latents (32-4000 coordinates) given <= 6 others         the Gaussian integral (exact
                                                                                without hyperparameters), else
                                                                                importance sampling: two halves
laplace        latents (8 or more) proven concave from the graph (random       importance sampling over the
               effects of a Poisson, logistic, binomial or negative-binomial    hyperparameters, each weighted by
               GLM) given 1-6 others                                            an annealed correction from the
                                                                                Laplace Gaussian: two halves
importance     at most 30 coordinates (the routes above did not answer)         importance sampling from the peak:
                                                                                two halves
tempered       discrete variables too many to sum out, or pmz's chains          independent SMC runs
               diverge
modes          the chains disagree (split R-hat above ``max_rhat``)             importance sampling from a mixture
                                                                                over the modes (two halves), or
                                                                                SMC from it (independent runs)
bridge         posterior draws (pmz's chains or ``posterior=``)                 two cross-fitted bridge halves
path           the bridge's overlap is poor and time is left                    two cross-fitted path halves
=============  ==============================================================  ==================================

Before the plan, discrete free variables with at most 1024 joint values are summed out exactly; the continuous
routes run on the summed model and the posterior draws get their discrete values from the exact conditionals.

Modules: :mod:`~pmz.auto.plan` (the plan and its loop), :mod:`~pmz.auto.contract`, :mod:`~pmz.auto.context`,
:mod:`~pmz.auto.estimate` (the estimate and its verdict), one module per route, :mod:`~pmz.auto.chains` (the
chains' warm-up and draws) with :mod:`~pmz.auto.chain_groups`, and the shared machinery
(:mod:`~pmz.auto.importance_sampling`, :mod:`~pmz.auto.hyper_importance`, :mod:`~pmz.auto.peak_search`,
:mod:`~pmz.auto.smc_runs`, :mod:`~pmz.auto.clock`).
"""

from .contract import Named, Outcome, Route, Trial
from .estimate import estimate_auto
from .plan import PLAN, AutoRecord, run_auto, run_plan

__all__ = ["PLAN", "AutoRecord", "Named", "Outcome", "Route", "Trial", "estimate_auto", "run_auto", "run_plan"]
