"""The check of ``pmz.evidence``'s first argument, with an error a user can act on.

* :func:`pymc_model`: the ``pm.Model`` to run (the argument, or the model of the current ``with`` context); a
  TypeError that names what was given otherwise (a dict, a string, a PyTensor variable, ...).

``random_seed`` is checked where the random streams are made (:mod:`pmz.execution.streams`).
"""

from __future__ import annotations

import pymc as pm

from ..sequences.base import SMCSequence

__all__ = ["pymc_model"]


def pymc_model(model) -> pm.Model:
    """``model``, or the model of the current ``with`` context; a TypeError naming what was given otherwise."""
    if model is None:
        try:
            return pm.modelcontext(None)
        except TypeError:
            raise TypeError(
                "pmz.evidence: No model on context stack: pass the model (pmz.evidence(model)) or call "
                "pmz.evidence inside `with model:`"
            ) from None
    if isinstance(model, pm.Model):
        return model
    hint = ""
    if isinstance(model, SMCSequence):
        hint = "; an SMCSequence goes in sequence= (pmz.evidence(method='smc', sequence=...))"
    elif hasattr(model, "owner") and hasattr(model, "type"):  # a PyTensor variable, e.g. a random variable
        hint = "; a variable belongs to a model: pass the model itself (`with pm.Model() as model:`)"
    text = repr(model)
    text = text if len(text) <= 60 else text[:57] + "..."
    raise TypeError(
        "pmz.evidence: the first argument must be a pm.Model or a pmz.EnergyModel (or None inside `with model:`), "
        f"got {type(model).__name__} {text}{hint}"
    )
