"""bambi models as pmz inputs: the PyMC model a bambi model builds, and its fit's draws on that model's variables.

A bambi model (``bmb.Model("y ~ x + z", data)``) builds a PyMC model (``.backend.model``) whose variables are not
always the ones its fit reports:

* with ``center_predictors=True`` (bambi's default) the PyMC model's ``Intercept`` is the intercept of centred
  predictors, ``a_c``, while ``fit()`` reports the intercept of the data as given, ``a = a_c - mean(X) b``;
* for non-centred group-specific terms, the PyMC model's free variable is the offset ``z`` (``1|g_offset``) while
  ``fit()`` reports ``z * sigma`` and drops the offset.

Bridge sampling from the reported draws on the PyMC model is confidently wrong (an intercept 0.7 posterior sd
off gave log Z 16 se off). :func:`model_draws` maps a fit's draws back with bambi's own inverse of that
reporting step; the check of the draws (:mod:`pmz.runners.draws_check`) then tests the mapped draws like any
others. bambi is optional (``pip install "pmz[bambi]"``): nothing here imports it.
"""

from __future__ import annotations

import pymc as pm

from ..inference_data import get_group, is_inference_data

__all__ = ["is_bambi_model", "pymc_model_of", "model_draws", "from_bambi"]


def is_bambi_model(obj) -> bool:
    """Whether ``obj`` is a ``bambi.Model`` (by its class's package, without importing bambi)."""
    return type(obj).__module__.split(".")[0] == "bambi" and hasattr(obj, "build") and hasattr(obj, "backend")


def pymc_model_of(bmb_model) -> pm.Model:
    """The PyMC model of a bambi model, built first when it is not (``bmb_model.build()``, as ``fit`` does)."""
    if not getattr(bmb_model, "built", False) or getattr(bmb_model, "backend", None) is None:
        bmb_model.build()
    return bmb_model.backend.model


def _from_bambi_fit(draws) -> bool:
    """Whether draws are a bambi fit's (its posterior group's attrs say ``modeling_interface: bambi``)."""
    post = get_group(draws, "posterior") if is_inference_data(draws) else draws
    attrs = getattr(post, "attrs", None) or {}
    return str(attrs.get("modeling_interface", "")).lower() == "bambi"


def model_draws(bmb_model, draws):
    """A bambi fit's draws (``bmb_model.fit()``'s result, or its posterior group) as draws of the PyMC model's own
    free variables; other draws (``pm.sample`` on ``bmb_model.backend.model``, a dict) unchanged.

    bambi's fit reports the intercept of uncentred predictors and drops non-centred offsets; its
    ``Model._re_center_intercept`` undoes both. Where this bambi version has no such step the draws are refused
    (a ValueError that says what to pass instead) rather than used as they are.
    """
    if not _from_bambi_fit(draws):
        return draws
    undo = getattr(bmb_model, "_re_center_intercept", None)
    if undo is None:
        raise ValueError(
            "pmz: these draws come from bambi's fit, which reports its intercept for the predictors as given while "
            "its PyMC model has the intercept of centred predictors; this bambi version offers no way to map them "
            "back. Pass posterior=None (pmz draws its own), or draws of the PyMC model itself: "
            "`with bmb_model.backend.model: idata = pm.sample()`"
        )
    pymc_model_of(bmb_model)
    if is_inference_data(draws):
        return undo(draws)
    from ..inference_data import RESULT_BASE, build

    return get_group(undo(build(RESULT_BASE, {"posterior": draws})), "posterior")


def from_bambi(model, options: dict) -> tuple[pm.Model, dict]:
    """``pmz.evidence``'s model and options for a bambi model: its PyMC model, and draws given as ``posterior=``
    or ``reverse_start=`` mapped onto that model's variables (:func:`model_draws`). Anything else unchanged."""
    if not is_bambi_model(model):
        return model, options
    options = dict(options)
    for name in ("posterior", "reverse_start"):
        value = options.get(name)
        if value is not None and not isinstance(value, str):
            options[name] = model_draws(model, value)
    return pymc_model_of(model), options
