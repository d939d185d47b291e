"""The sum route: every free variable is discrete and their joint values are few, so log Z is their exact sum.

``log Z = logsumexp_k log p~(k)`` over the joint values (:class:`pmz.model.discrete_sum.DiscreteEnumeration`, at
most :data:`pmz.model.discrete_sum.MAX_STATES` of them; an unbounded support over the window where its terms are
not negligible), with ``n_chains x n_draws`` exact posterior draws. The proof: a finite sum, exact (se 0).
"""

from __future__ import annotations

from ..estimate_diagnostics import Diagnostics
from ..model.discrete_sum import MAX_STATES, WINDOW_TOLERANCE
from ..records import EvidenceEstimate
from .chains import FIRST_DRAWS_MAX
from .contract import Named, Outcome

__all__ = ["SumRoute"]


class SumRoute:
    """Exact sum over the joint values of an all-discrete model (module docstring)."""

    name = "sum"

    def applies(self, context) -> str:
        if not context.all_discrete:
            return "not every free variable is discrete"
        if context.enumeration is None:
            return f"more than {MAX_STATES} joint values, or an unbounded support too wide to sum"
        return ""

    def run(self, context) -> Outcome:
        enumeration, options = context.enumeration, context.options
        context.clock.mark(f"sum over {enumeration.n_states} joint values")
        names = ", ".join(context.discrete_names)
        reason = (f"every free variable is discrete ({names}): their {enumeration.n_states} joint values are "
                  "summed exactly")
        if enumeration.window is not None:
            lo, hi = enumeration.window
            reason += (f" over the window {lo}..{hi} of an unbounded support (the terms at both ends are more than "
                       f"{WINDOW_TOLERANCE:g} nats below the largest and falling; the rest is taken as negligible)")
        if options.posterior is not None:
            reason += "; the draws given as posterior= are not needed (the posterior draws are exact)"
        estimate = EvidenceEstimate(log_z=enumeration.log_z, log_z_se=0.0, method="sum", diagnostics=Diagnostics())
        answer = Named("sum", estimate)
        shape = (options.n_chains, options.n_draws or FIRST_DRAWS_MAX)
        return Outcome(
            reason=reason,
            answer=answer,
            proof="a finite sum over every joint value",
            estimates=(answer,),
            counted=(answer,),
            posterior_x=enumeration.draw(context.streams.sample, shape),
            on_full_model=True,
        )
