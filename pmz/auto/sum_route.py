"""The sum route: every free variable is discrete and their joint values are few, so log Z is their sum.

``log Z = logsumexp_k log p~(k)`` over the joint values (:class:`pmz.model.discrete_sum.DiscreteEnumeration`, at
most :data:`pmz.model.discrete_sum.MAX_STATES` of them), with ``n_chains x n_draws`` exact posterior draws of the
summed values. Bounded supports are summed whole: exact, se 0, the proof "a finite sum over every joint value of the
whole support". One unbounded count is summed over windows (:func:`pmz.model.discrete_sum.windowed_sum`): one around
PyMC's initial point and one around each far mode a grid search finds; the answer is exact (se 0, the bound named in
the proof) only where the mass beyond the windows is proven negligible; otherwise that mass, bounded or estimated,
is the se, and where it may exceed 1e-3 of the sum the answer is flagged.
"""

from __future__ import annotations

from ..estimate_diagnostics import Diagnostics
from ..model.discrete_sum import MAX_STATES, WINDOW_TOLERANCE, enumeration_refusal
from ..records import EvidenceEstimate
from .chains import FIRST_DRAWS_MAX
from .contract import Named, Outcome

__all__ = ["SumRoute"]


class SumRoute:
    """The sum over the joint values of an all-discrete model (module docstring)."""

    name = "sum"

    def applies(self, context) -> str:
        if not context.all_discrete:
            return "not every free variable is discrete"
        if context.enumeration is None:
            return enumeration_refusal(context.full_target)
        return ""

    def run(self, context) -> Outcome:
        enumeration, options = context.enumeration, context.options
        context.clock.mark(f"sum over {enumeration.n_states} joint values")
        reason = _reason(enumeration, ", ".join(context.discrete_names))
        estimate = EvidenceEstimate(log_z=enumeration.log_z, log_z_se=enumeration.log_z_se, method="sum",
                                    diagnostics=Diagnostics())
        answer = Named("sum", estimate)
        shape = (options.n_chains, options.n_draws or FIRST_DRAWS_MAX)
        return Outcome(
            reason=reason,
            answer=answer,
            proof=enumeration.proof,
            estimates=(answer,),
            counted=(answer,),
            posterior_x=enumeration.draw(context.streams.sample, shape),
            on_full_model=True,
            unreliable=enumeration.unreliable,
        )


def _share(share: float) -> str:
    return "none" if share == 0 else f"{share:.2g}"


def _reason(enumeration, names: str) -> str:
    """What was summed, and for an unbounded count what lies beyond its windows and why it may be left out."""
    tail = enumeration.tail
    if tail is None:
        return (f"every free variable is discrete ({names}): their {enumeration.n_states} joint values, the whole "
                "support, are summed exactly")
    windows = " and ".join(f"{lo}..{hi}" for lo, hi in tail.windows)
    reason = (f"every free variable is discrete ({names}): {enumeration.n_states} values of an unbounded support are "
              f"summed over {windows} (grown until the end terms are {WINDOW_TOLERANCE:g} nats below the largest and "
              "falling, and a grid search out to 2^60 for far modes")
    reason += f": {len(tail.far_modes)} found)" if tail.far_modes else ": none found)"
    if enumeration.proof:
        return reason + f"; the rest is proven below {tail.share:.1e} of the sum ({tail.bound_words})"
    if tail.proven_bound:
        return reason + (f"; the rest is proven below {tail.share:.2g} of the sum ({tail.bound_words}), not "
                         f"negligible within {MAX_STATES} values: the se is that bound")
    return reason + (f"; the rest could not be bounded from the model (a pm.Potential, a likelihood whose maximum "
                     "cannot be read, or a prior without a known pmf ratio): the se is the grid's estimate of it "
                     f"({_share(tail.share)} of the sum), which assumes no bump of the summand narrower than the "
                     "grid's spacing between its values")
