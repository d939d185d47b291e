"""Choosing the schedule (or tempering ladder) of a run, with the pilot that tunes its kernels.

``schedule`` may be a named rule or an array (:mod:`pmz.families.schedules`), or

* ``"varopt"`` (Kiwaki 2015, docs/methods.md, section 9): a pilot walks a reference schedule (``varopt_pilot``, default
  ``"power"``, with ``varopt_pilot_temps`` temperatures), estimates the thermodynamic metric
  ``g(b) = Var_b[U]`` from its importance-weighted particles at every temperature, smooths and floors it
  (:func:`pmz.families.optimal.thermodynamic_metric`), and the production schedule is the constant-speed one,
  ``b_k = Phi^{-1}(k / K Phi(1))`` with ``Phi(b) = int_0^b sqrt(g)``;
* ``"adaptive"``: a pilot chooses each next temperature online so that the conditional ESS of its weights is
  ``cess_target`` (Zhou, Johansen & Aston 2016); its temperatures, re-spaced evenly in their index onto
  ``n_temps`` steps, are the production schedule (equal CESS steps are equal steps of thermodynamic length to
  second order).

A family whose ``U`` is identically zero (``trivial_path``: a model without observed data or potentials) gets the
one-step schedule ``[0, 1]`` whatever the options say: there is nothing to anneal and every estimator is exact.

``delta_max`` (any rule) then caps every increment ("deceleration", VAROPT section 5):
:func:`pmz.families.optimal.decelerate`. The kernels' parameters come from the same pilot, interpolated onto the
production schedule in beta, and are frozen; the pilot's own random stream and its cost are counted in the result
(the run's notes, :class:`pmz.records.RunNotes`, stored as the result's ``tuning``). The production run is then
exact AIS on a fixed schedule. The notes also carry the pilot's metric (``metric_beta``, ``metric_g``), the
thermodynamic length and the perfect-transition prediction of ``Var[log w]`` for the production schedule
(``predicted_var_log_w``, VAROPT: ``K Var[log w] -> J``).
"""

from __future__ import annotations

import numpy as np

from ..families.metric import predicted_log_weight_variance, thermodynamic_length, thermodynamic_metric
from ..families.optimal import constant_speed_schedule, decelerate
from ..families.schedules import make_schedule, validate_schedule
from ..runners.pilot import adaptive_pilot, run_pilot
from ..model.target import count_evaluations
from ..records import RunNotes

__all__ = ["setup_schedule"]

from .options import OPTIMAL_RULES

def _pilot_metric(walk):
    """The pilot's metric on a grid, or None when ``Var_b[U]`` is zero wherever the pilot measured it (``U``
    constant where it is finite: no likelihood at all, or a ``pm.Potential`` that is 0 or -inf). The path then
    has length zero and every schedule is as good as any other."""
    keep = np.isfinite(walk["var_U"])
    if not np.any(walk["var_U"][keep] > 0):
        return None
    return thermodynamic_metric(walk["betas"][keep], walk["var_U"][keep])


def _metric_notes(walk, schedule) -> dict:
    """The pilot's metric and what it predicts for ``schedule``: fields of the run's notes."""
    betas, var_U = walk["betas"], walk["var_U"]
    keep = np.isfinite(var_U)
    if keep.sum() < 2:
        return {}
    metric = _pilot_metric(walk)
    return dict(
        metric_beta=np.asarray(betas[keep], dtype=float),
        metric_g=np.asarray(var_U[keep], dtype=float),
        thermodynamic_length=0.0 if metric is None else thermodynamic_length(*metric),
        predicted_var_log_w=0.0 if metric is None else predicted_log_weight_variance(schedule, *metric),
    )


def setup_schedule(family, kernel, options, rng, progressbar, *, need_pilot: bool = False, n_pilot=None):
    """The production schedule, frozen kernel parameters, the run's notes (:class:`pmz.records.RunNotes`: the
    pilot's description, the schedule rule, the pilot's metric), and the pilot's result (or None).

    ``need_pilot``: run the pilot even when the kernel has nothing to tune (simulated tempering uses its log Z
    curve as a first guess). ``n_pilot`` caps the pilot's size (default ``options.n_pilot``).
    """
    evals = count_evaluations(family)
    rule, n_temps = options.schedule, options.n_temps
    trivial = bool(getattr(family, "trivial_path", False))
    if trivial:  # U = 0 (no likelihood): f1 = f0, nothing to anneal; one step from b = 0 to 1 is exact
        rule, n_temps = "linear", 1
    n_pilot = int(n_pilot or options.n_pilot)
    tune = options.tune and kernel.tunable
    n_adapt = options.n_adapt if kernel.tunable else 1
    tuned, description = None, {"n_pilot": 0}
    if isinstance(rule, str) and rule == "varopt":
        pilot_schedule = make_schedule(options.varopt_pilot, options.varopt_pilot_temps)
        tuned, description = run_pilot(
            family,
            kernel,
            pilot_schedule,
            rng,
            n_pilot=n_pilot,
            n_adapt=n_adapt,
            n_tune_temps=options.varopt_pilot_temps,
            progressbar=progressbar,
        )
        metric = _pilot_metric(tuned.walk)
        if metric is None:  # a zero metric: no schedule is better than the pilot's own rule
            schedule = make_schedule(options.varopt_pilot, n_temps)
        else:
            schedule = constant_speed_schedule(*metric, n_temps)
    elif isinstance(rule, str) and rule == "adaptive":
        tuned = adaptive_pilot(
            family,
            kernel,
            rng,
            cess_target=options.cess_target,
            n_pilot=n_pilot,
            n_adapt=n_adapt,
            progressbar=progressbar,
        )
        visited = tuned.walk["betas"]
        schedule = np.interp(np.linspace(0, visited.size - 1, n_temps + 1), np.arange(visited.size), visited)
        schedule = validate_schedule(np.concatenate([[0.0], schedule[1:-1], [1.0]]))
        description = {"n_pilot": n_pilot, "n_adapt": n_adapt, "pilot_temps": int(visited.size - 1)}
    else:
        schedule = make_schedule(rule, n_temps)
        if tune or need_pilot:
            tuned, description = run_pilot(
                family,
                kernel,
                schedule,
                rng,
                n_pilot=n_pilot,
                n_adapt=n_adapt,
                n_tune_temps=options.n_tune_temps,
                progressbar=progressbar,
            )
    if options.delta_max is not None and not trivial:
        schedule = decelerate(schedule, options.delta_max)
    if tuned is None:
        params = [kernel.default_params(family.dim)] * schedule.size
    elif tune:
        optimal = isinstance(rule, str) and rule in OPTIMAL_RULES  # an array of temperatures is a fixed schedule
        same = tuned.params and len(tuned.params) == schedule.size and not optimal
        params = tuned.params if same and options.delta_max is None else tuned.params_for(schedule)
    else:
        params = [kernel.default_params(family.dim)] * schedule.size
    metric = {}
    if tuned is not None:
        description = {**description, "pilot_logp_evals": evals.n_logp_evals,
                       "pilot_grad_evals": evals.n_grad_evals}
        metric = _metric_notes(tuned.walk, schedule)
    notes = RunNotes(
        description=description,
        schedule_rule=rule if isinstance(rule, str) else "array",
        nothing_to_anneal="the model has no likelihood (U = 0): one step from f0 to f1 = f0" if trivial else "",
        **metric,
    )
    return schedule, params, notes, tuned
