"""The plan of the default: an ordered tuple of routes, and one loop that asks each in turn.

Each route says whether it applies (``applies(context)`` returns why not, "" when it does) and, when it runs,
answers or hands over with a reason (:mod:`pmz.auto.contract`). The first answer is the result; every route asked
leaves a line in the result's route timeline (``res.run_attrs["routes_tried"]``, and ``print(res)``).

Adding a route is one file (a class with ``name``, ``applies`` and ``run``) and one line in :data:`PLAN`
(CONTRIBUTING.md, "Adding a route to the default").
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .bridge_route import BridgeRoute
from .chains import NEGLIGIBLE_MASS
from .contract import ANSWERED, HANDED_OVER, NOT_APPLICABLE, Outcome, Trial
from .context import AutoContext
from .importance_route import ImportanceRoute
from .laplace_route import LaplaceRoute
from .latent_route import LatentRoute
from .modes_route import ModesRoute
from .non_centred_route import NonCentredRoute
from .path_route import PathRoute
from .sum_route import SumRoute
from .tempered_route import TemperedRoute

__all__ = ["PLAN", "AutoRecord", "run_auto", "run_plan"]

PLAN = (
    SumRoute(),  # every free variable discrete, few joint values: their exact sum
    LatentRoute(),  # Gaussian latents integrated out exactly, importance sampling over a few hyperparameters
    LaplaceRoute(),  # concave latents: Laplace Gaussians corrected by annealing, importance over the hyperparameters
    ImportanceRoute(),  # at most 30 coordinates: importance sampling from the posterior's peak
    NonCentredRoute(),  # funnels: the three routes above on the model with its scale-dependent Normals non-centred
    TemperedRoute(),  # discrete variables that cannot be summed out, or chains that diverge: SMC from the prior
    ModesRoute(),  # chains that disagree: a mixture over their modes
    TemperedRoute(after_modes=True),  # modes that do not settle (the modes route hands over): SMC from the prior
    BridgeRoute(),  # cross-fitted bridge sampling from a Gaussian fitted to the draws
    PathRoute(),  # a path from that Gaussian where the bridge's overlap is poor
)


@dataclass(frozen=True)
class AutoRecord:
    """What the default ran: the route that answered, its outcome, and every route asked on the way.

    Attributes
    ----------
    route : str
        The name of the route that answered (``"sum"``, ``"latent"``, ``"importance"``, ``"tempered"``,
        ``"modes"``, ``"bridge"``, ``"path"``, or a route added to the plan).
    reason : str
        Why this route, with what the call did to the model (chains dropped, discrete variables summed out).
    outcome : Outcome
        The route's answer (:class:`pmz.auto.contract.Outcome`), its posterior draws on the model as written.
    trials : tuple of Trial
        Every route asked, in order, and what came of it.
    timeline : list of (label, seconds)
    known_log_mass : dict name -> float
        The log mass of each free variable's density as PyMC writes it, where it is not 0 and known from the
        model's structure (:func:`pmz.model.prior_mass.known_log_masses`: ``-log K!`` per ordered vector of K
        exchangeable entries, the left-out Gaussian constant of a conditional autoregression).
    dropped_chains : int
        Chains dropped (or restarted from the others' states) because they sat where the posterior mass is
        negligible.
    """

    route: str
    reason: str
    outcome: Outcome
    trials: tuple = ()
    timeline: list = field(default_factory=list)
    known_log_mass: dict = field(default_factory=dict)
    dropped_chains: int = 0

    @property
    def posterior_x(self):
        """Equally weighted posterior draws (chain, draw, dim) for the result's posterior group, or None."""
        draws = self.outcome.draws
        return draws.x if draws is not None else self.outcome.posterior_x

    @property
    def result_record(self):
        return self.outcome.result_record

    @property
    def final_x(self):
        return None


def run_plan(plan, context) -> tuple:
    """Ask the routes of ``plan`` in order: ``(route name, outcome, trials)`` of the first that answers."""
    trials = []
    answered = False
    try:
        for route in plan:
            why_not = route.applies(context)
            if why_not:
                trials.append(Trial(route.name, NOT_APPLICABLE, why_not))
                continue
            outcome = route.run(context)
            if outcome.answered:
                trials.append(Trial(route.name, ANSWERED, outcome.reason))
                answered = True
                return route.name, outcome, tuple(trials)
            trials.append(Trial(route.name, HANDED_OVER, outcome.reason))
            context.clock.mark(f"{route.name} route not taken: {outcome.reason}")
    finally:
        context.progress.close(done=answered)
    asked = "; ".join(trial.line() for trial in trials)
    raise RuntimeError(f"pmz: no route of the default's plan answered ({asked})")


def run_auto(family, kernel, options, rng, progressbar, target, chunks=None, plan=None) -> AutoRecord:
    """Run the default on a compiled PyMC model: the routes of ``plan`` (default :data:`PLAN`, read at each call)
    in order.

    Discrete free variables whose joint support has at most :data:`pmz.model.discrete_sum.MAX_CONFIGURATIONS`
    values are summed out exactly first (:mod:`pmz.model.discrete_sum`, log Z unchanged) and the continuous routes
    run on the summed model; the posterior draws then get their discrete values from the exact conditionals.

    ``chunks`` (a :class:`~pmz.execution.executors.ChunkRunner`, with ``executor=`` or ``n_chunks``): the chains
    run in ``n_chunks`` groups that warm up on their own (:mod:`pmz.auto.chain_groups`), and the path and SMC
    routes split their paths and runs on the same runner. Without ``n_chunks`` the chains stay one group
    (:data:`pmz.auto.chains.CHAIN_CHUNKS`): groups of fewer chains adapt worse in many dimensions (a 400-D Gaussian
    posterior with two groups of 16 chains took the modes route, 233 s and flagged, where one group takes 9 s), so
    splitting them is the user's choice, worth it for models of few dimensions and much data (1.1-1.6x on two
    processes)."""
    from ..model.prior_mass import known_log_masses

    context = AutoContext(family, kernel, options, rng, progressbar, target, chunks)
    context.given_flat  # draws given as posterior= are checked at once, also where no route reads them
    name, outcome, trials = run_plan(PLAN if plan is None else plan, context)
    dropped = context.chains.dropped if context.chains_ran else 0
    reason = outcome.reason
    if dropped:
        reason += (f"; {dropped} of {options.n_chains} chains were stuck where the posterior mass is negligible "
                   f"(below {NEGLIGIBLE_MASS:g} of the largest cluster's) and were dropped")
    if options.posterior is not None and not context.chains_ran:
        reason += "; the draws given as posterior= are not needed (this route draws its own)"
    if context.summed is not None:
        reason += (f"; discrete free variables {context.discrete_names} summed out exactly "
                   f"({context.summed.n_configurations} values)")
        outcome = _with_discrete(outcome, context)
    return AutoRecord(route=name, reason=reason, outcome=outcome, trials=trials, timeline=context.clock.timeline,
                      known_log_mass=known_log_masses(target.model), dropped_chains=dropped)


def _with_discrete(outcome: Outcome, context) -> Outcome:
    """The outcome's posterior draws with discrete values drawn from their exact conditionals (the routes that ran
    on the summed model)."""
    draw_rng = context.streams.spawn(1)[0]
    if outcome.draws is not None:
        outcome = replace(outcome, draws=replace(outcome.draws, x=context.summed.with_discrete(outcome.draws.x,
                                                                                             draw_rng)))
    if outcome.posterior_x is not None and not outcome.on_full_model:
        outcome = replace(outcome, posterior_x=context.summed.with_discrete(outcome.posterior_x, draw_rng))
    return outcome
