"""Checks ``pmz.evidence`` makes around a run: the start draws, the prior's normalisation, posterior draws.

* :func:`check_start`: the log density at a few start draws of the family, with errors that name the variable
  behind a NaN / inf, or say that the likelihood is zero where the start draws are;
* :func:`prior_normalisation_note`: for methods that start from prior draws, the measured log mass of priors whose
  density may not integrate to one (:mod:`pmz.model.prior_mass`), as diagnostics and a warning;
* :func:`with_draws_check`: the verdict on posterior draws (:mod:`pmz.runners.draw_trust`) moved from the record's
  notes into the estimate, where a mismatch, divergences or a missed mode make it unreliable.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..families import PowerPosterior
from ..kernels import Kernel
from ..model.prior_mass import normalisation_warning, prior_normalisation
from ..model.pymc import CompiledModel, ModelSpecificationError
from ..records import BidirectionalRecord
from ..runners.draw_trust import trust_reason

__all__ = ["check_start", "n_start", "prior_normalisation_note", "with_draws_check"]


def check_start(
    family, kernel: Kernel, compiled: CompiledModel, rng, n_start: int = 0, n_check: int = 16, n_more: int = 1008
):
    """Evaluate the log density at a few start draws; name the variable behind NaN / inf.

    The evaluation uses the function the kernel will use (with gradients for HMC), so the check compiles
    nothing the run does not need. When U is -inf (the target is zero) at every one of the first ``n_check``
    draws, ``n_more`` further draws are tried: a likelihood that is zero on most of the prior is a valid model
    (the runners handle -inf), but the run needs some of its ``n_start`` start draws (paths, particles, chains)
    where it is not: an error unless about 5 or more of them are expected there.
    """
    X = family.sample_start(rng, n_check)
    parts = family.parts(X, grad=kernel.needs_grad)
    bad_f0 = ~np.isfinite(parts.log_f0)
    bad_u = np.isnan(parts.U) | (parts.U == np.inf)
    all_zero = np.all(parts.U == -np.inf)
    if not (bad_f0.any() or bad_u.any() or all_zero):
        return
    if all_zero and not (bad_f0.any() or bad_u.any()):
        n_ok = int(np.sum(family.parts(family.sample_start(rng, n_more), grad=kernel.needs_grad).U > -np.inf))
        if n_ok * n_start >= 5 * (n_check + n_more):
            return
        _raise_zero_target(family, compiled, X[0], n_check + n_more, n_ok, n_start)
    if compiled.kind == "energy":
        raise ModelSpecificationError(
            f"pmz: {compiled.name}: log f0 or log f1 is NaN/inf at exact draws of the base "
            f"(log f0 = {parts.log_f0[:3]}, U = {parts.U[:3]}); the base must cover the target's support."
        )
    i = int(np.argmax(bad_f0 | bad_u)) if (bad_f0.any() or bad_u.any()) else 0
    per_var = compiled.point_logps(X[i])
    culprits = [name for name, value in per_var.items() if not np.isfinite(value)]
    value = parts.log_f0[i] if bad_f0[i] else parts.U[i]
    free = set(compiled.layout.rv_names)
    underflow = (
        " Exact prior draws of a very vague prior (e.g. Gamma(1e-4, 1e-4)) underflow to the edge of the support; "
        "method='auto' starts from PyMC's initial point instead and needs no prior draws."
        if any(name in free for name in culprits)
        else ""
    )
    raise ModelSpecificationError(
        f"pmz: the log density is {value} at the initial particles ({family.name} start); "
        f"non-finite terms: {culprits or 'none per variable (check pm.Potential terms)'}. "
        f"Check the priors' supports, the observed data (NaN?) and any pm.Potential.{underflow}"
    )


def with_draws_check(estimate, record):
    """The verdict on posterior draws a run started from (:class:`pmz.records.DrawsTrust` in the reverse record's
    notes: :mod:`pmz.runners.draw_trust`) in the estimate's diagnostics (``draws_check``, ``draws_check_se``); a
    draws mismatch, the sampler's divergent transitions or a mode the draws miss make it unreliable
    (``unreliable``, read by :func:`pmz.reliability.assess`)."""
    trust = record.reverse.notes.draws if isinstance(record, BidirectionalRecord) else None
    if trust is None:
        return estimate
    diagnostics = estimate.diagnostics
    if trust.check is not None:
        diagnostics = replace(diagnostics, draws_check=trust.check.effect, draws_check_se=trust.check.se)
    why = trust_reason(trust, record.reverse_start)
    if why and not diagnostics.unreliable:
        diagnostics = replace(diagnostics, unreliable=why)
    return replace(estimate, diagnostics=diagnostics)


def n_start(options) -> int:
    """How many start draws the run makes (paths, particles per run, chains)."""
    for name in ("n_paths", "n_particles", "n_chains"):
        if getattr(options, name, None):
            return int(getattr(options, name))
    return 0


def _raise_zero_target(family, compiled, x, n_tried: int, n_ok: int, n_start: int):
    """The target is zero (U = -inf) at (nearly) every start draw tried: say so, and what starts elsewhere."""
    if compiled.kind == "energy":
        raise ModelSpecificationError(
            f"pmz: {compiled.name}: the target density is zero at {n_tried - n_ok} of {n_tried} exact draws of the "
            "base tried; the base must cover the target's support."
        )
    per_var = compiled.point_logps(x)
    terms = [name for name, value in per_var.items() if value == -np.inf]
    where = "prior draws" if isinstance(family, PowerPosterior) else f"draws of the reference ({family.name})"
    if n_ok == 0:
        count = f"all {n_tried} {where} tried"
        more = "method='smc' with many more particles (n_particles=20000) may find the region"
    else:
        count = (
            f"{n_tried - n_ok} of {n_tried} {where} tried (about {n_ok * n_start / n_tried:.1f} of this run's "
            f"{n_start} start draws would see a non-zero likelihood)"
        )
        more = f"method='smc' with n_particles={int(np.ceil(100 * n_tried / n_ok / 1000)) * 1000} or more"
    raise ModelSpecificationError(
        f"pmz: the log density is -inf at {count}: the likelihood is zero there (non-finite terms: "
        f"{terms or ['pm.Potential terms']}). The data may lie where the prior puts little mass (e.g. y ~ "
        "Uniform(0, theta) with max(y) far in theta's prior tail), or outside the likelihood's support for every "
        f"parameter value. method='auto' starts at the posterior instead (HMC from PyMC's initial point); {more}; "
        "or check that the data and the likelihood's support are what you meant."
    )


def prior_normalisation_note(family, target, rng, method: str):
    """Diagnostics and a warning when a prior-draw method's prior density does not integrate to one
    (:mod:`pmz.model.prior_mass`); measured once per compiled model.

    Returns
    -------
    fields : dict
        ``prior_log_mass``, ``prior_log_mass_se`` and ``prior_unnormalised``: keyword arguments of
        :func:`dataclasses.replace` for any estimate's diagnostics (:class:`pmz.estimate_diagnostics.Diagnostics`);
        empty when every prior integrates to one.
    warning : str or None
    """
    if not isinstance(family, PowerPosterior) or target.kind == "energy":
        return {}, None
    masses = target.__dict__.get("_prior_masses")
    if masses is None:
        masses = prior_normalisation(target, family.prior, rng)
        target._prior_masses = masses
    off = [m for m in masses if m.off]
    if not off:
        return {}, None
    fields = dict(
        prior_log_mass=float(sum(m.log_mass for m in off)),
        prior_log_mass_se=float(np.sqrt(sum(m.se**2 for m in off))),
        prior_unnormalised=", ".join(m.name for m in off),
    )
    return fields, normalisation_warning(off, method)
