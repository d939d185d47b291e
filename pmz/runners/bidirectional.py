"""Where the reverse paths of two-way annealing start (Habeck 2017).

The forward run starts at exact draws of f0; the reverse run starts at draws of p1 and visits the same
kernels in the reverse order (see :mod:`pmz.runners.ais`). Both share schedule and kernel parameters, so their
work values are the input of the two-sided estimators (BAR, histogram, cumulants, stochastic bounds). The
composition of the two runs is :func:`pmz.methods.annealing.anneal_both_ways`; this module makes the reverse
starts.

Reverse starts (``reverse_start``; in ``pmz.evidence`` the user's draws come as ``posterior=``):

* an ``arviz.InferenceData`` / xarray posterior / dict of draws, or an array ``(n, dim)`` of flat particles:
  used as given (thinned evenly to ``n_reverse``);
* ``"nuts"``: a ``pm.sample`` NUTS run on the PyMC model (exact posterior draws up to MCMC error);
* ``"resample"``: forward end states resampled by their weights, then ``reverse_burn`` steps of the frozen
  beta = 1 kernel for the whole batch at once (a "long run of T_K", docs/methods.md, section 1). Cheap: no second
  sampler, no recompilation. The starts depend on the forward run, so the reverse run can inherit its bias
  where the forward weights are poor (low ESS) or the kernel cannot relax the resampled set (separated modes):
  the record says "resample", and the result warns when the forward ESS is below 10% of the paths;
* ``"hmc"``: pmz's many-chain HMC on the posterior (:func:`pmz.runners.posterior_hmc.sample_posterior`: 32 chains with
  cross-chain warm-up, draws thinned by 4), independent of the forward run, through the model's own compiled
  gradient (no second compile);
* ``"auto"`` (default): the energy model's ``sample_target`` if it has one; ``"hmc"`` for a PyMC model with
  continuous free variables; ``"resample"`` only where neither exists (an energy model without a target sampler,
  a PyMC model with discrete free variables), and the result then says that the bounds are not guaranteed.
"""

from __future__ import annotations

import numpy as np

from ..records import DrawsTrust

from .starts import (
    DRAW_KINDS,
    check_draws,
    evenly_spaced,
    hmc_starts,
    is_draws,
    nuts_draws,
    posterior_to_flat,
    resampled_starts,
)

__all__ = ["reverse_start_states", "starts_need_forward", "REVERSE_STARTS"]

REVERSE_STARTS = ("auto", "hmc", "nuts", "resample")


def _reverse_starts(
    reverse_start, target, forward, family, kernel, params, n, rng, progressbar, nuts_tune, reverse_burn
):
    """Start states of the reverse run, a label for the record, and, where they are the user's draws, all of those
    draws with the chain of each (``(X, chain)``, for :func:`check_draws`; None otherwise)."""
    if isinstance(reverse_start, str):
        if reverse_start not in REVERSE_STARTS:
            raise ValueError(f"pmz: reverse_start must be one of {REVERSE_STARTS}, draws or an array")
        if reverse_start == "auto":
            if target.kind == "energy" and target.sample_target is not None:
                return np.asarray(target.sample_target(rng, n), dtype=float), "exact", None
            continuous = target.kind != "energy" and not target.layout.discrete_mask.any()
            reverse_start = "hmc" if continuous else "resample"
        if reverse_start == "hmc":
            if target.kind == "energy" or target.layout.discrete_mask.any():
                raise ValueError("pmz: reverse_start='hmc' needs a PyMC model with continuous free variables")
            return hmc_starts(target, n, rng), "hmc", None
        if reverse_start == "nuts":
            if target.kind == "energy":
                raise ValueError("pmz: reverse_start='nuts' needs a PyMC model; use 'resample' for energy models")
            X, _, _ = nuts_draws(target, n, rng, tune=nuts_tune, progressbar=progressbar)
            return X, "nuts", None
        X = resampled_starts(forward, n, rng)
        state = kernel.init_state(family, X)
        for _ in range(reverse_burn):
            state, _ = kernel.step(rng, state, family, 1.0, params[-1])
        return state.x, "resample", None
    if isinstance(reverse_start, np.ndarray):
        X_all = _flat_starts(reverse_start, family.dim, None)
        return _thin(X_all, n), "posterior", (X_all, np.zeros(X_all.shape[0], dtype=int))
    if target.kind == "energy":
        raise TypeError("pmz: for an energy model, posterior must be an array of states (reverse_start: 'auto' or "
                        "'resample')")
    if not is_draws(reverse_start):
        raise TypeError(
            f"pmz: posterior must be posterior draws ({DRAW_KINDS}) or an array (n, {family.dim}) of flat "
            f"unconstrained states; got {type(reverse_start).__name__}"
        )
    X_all, chain = posterior_to_flat(target, reverse_start, option="posterior")
    return _thin(X_all, n), "posterior", (X_all, chain)


def starts_need_forward(reverse_start, target) -> bool:
    """Whether the reverse starts of ``reverse_start`` are made from the forward run (``"resample"``, and
    ``"auto"`` where no exact or HMC draws exist): then the reverse paths can only start once it has finished."""
    if not isinstance(reverse_start, str):
        return False
    if reverse_start == "auto":
        if target.kind == "energy":
            return target.sample_target is None
        return bool(target.layout.discrete_mask.any())
    return reverse_start == "resample"


def reverse_start_states(
    reverse_start, target, forward, family, kernel, params, n, rng, progressbar, nuts_tune, reverse_burn
):
    """``(starts, label, trust)``: the reverse run's start states (see the module docstring), the label the record
    keeps, and, where the starts are the user's draws, the verdict on them (:class:`pmz.records.DrawsTrust`: the
    Stein check of :func:`pmz.runners.draws_check.check_draws`; None otherwise). ``forward`` may be None unless
    :func:`starts_need_forward`."""
    starts, label, given = _reverse_starts(
        reverse_start, target, forward, family, kernel, params, n, rng, progressbar, nuts_tune, reverse_burn
    )
    trust = None
    if given is not None and target.kind != "energy":  # the user's draws (all of them): like this posterior?
        trust = DrawsTrust(check=check_draws(target, *given, rng.spawn(1)[0], option="posterior"))
    return starts, label, trust


def _thin(X, n: int) -> np.ndarray:
    """At most ``n`` rows of ``X``, evenly spaced."""
    return X[evenly_spaced(X.shape[0], min(n, X.shape[0]))]


def _flat_starts(array, dim: int, n: int | None) -> np.ndarray:
    """A user's array of flat states, checked (shape, numbers, finite) and thinned evenly to at most ``n``."""
    if array.dtype.kind not in "biuf":
        raise TypeError(f"pmz: the posterior array holds {array.dtype} values, not numbers")
    X = np.asarray(array, dtype=float)
    if X.ndim != 2 or X.shape[1] != dim or X.shape[0] == 0:
        raise ValueError(f"pmz: the posterior array must have shape (n, {dim}) with n >= 1, got {X.shape}")
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        raise ValueError(
            f"pmz: {int(bad.sum())} of the {X.shape[0]} rows of the posterior array are NaN or inf (the first "
            f"is row {int(np.argmax(bad))}); drop them"
        )
    return X if n is None else _thin(X, n)
