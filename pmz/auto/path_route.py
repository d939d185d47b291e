"""The path route: geometric paths ``q^(1-b) p~^b`` from Gaussians fitted to the draws, cross-fitted like the
bridge, where the bridge's overlap is poor.

Half A: q fitted to the even chains, reverse paths started at the odd chains' draws; half B the other way round
(:class:`PathHalf`). Forward paths start at exact q draws, temperatures come from an adaptive pilot, and BAR over
the work gives each half's estimate. The estimate is the halves' mean with ``se = sqrt(se_a^2 + se_b^2) / 2``: the
halves share the chains, but the paths correct most of q's fitting error, and the halves' errors were not
positively correlated (-0.5 over 7 seeds of a 100-D Gaussian posterior), unlike the bridge halves'
(:func:`pmz.auto.bridge_route.pair_se`). Each half runs :data:`N_PATHS_FIRST` paths each way, then doubles them
while the se is above ``target_se`` (at most :data:`N_PATHS_MAX`, and not past ``max_time``).

A reverse path must start at posterior draws that q was not fitted to: a Gaussian fitted to n draws in d
dimensions has a higher density at those draws than at fresh ones (by about d^2 / 4n nats), which made
``1/Z = E_p[q/p~]`` too large. With one q fitted to all draws and the reverse paths started at the same draws, a
100-D Gaussian posterior came out 0.09-0.2 nats low with se 0.025 (3.5-7.7 se, reported reliable).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ..estimators.bar import bar
from ..families import GeometricPath
from ..reliability import assess
from ..runners.starts import evenly_spaced
from .bridge_route import gaussian_reference
from .contract import Named, Outcome

__all__ = ["N_PATHS_FIRST", "N_PATHS_MAX", "PathHalf", "PathRoute", "path_halves"]

N_PATHS_FIRST = 64  # paths each way in each half of the path route's first batch (and its pilot)
N_PATHS_MAX = 512  # at most this many each way in each half


class PathHalf:
    """One cross-fitted half of the path route: a Gaussian q fitted to ``fit_draws`` (:func:`gaussian_reference`),
    the geometric path ``q^(1-b) p~^b`` with an adaptive schedule tuned on a pilot of :data:`N_PATHS_FIRST` paths,
    and batches of forward paths from exact q draws and reverse paths started at ``start_draws`` (posterior draws q
    was not fitted to; each batch at draws no earlier batch started from, spread evenly over the chains), pooled
    (:func:`pmz.runners.pooling.merge_work`); BAR over their work."""

    def __init__(self, context, fit_draws, start_draws, rng):
        from ..methods.options import ScheduleOptions
        from ..methods.schedule import setup_schedule

        self.compiled, self.kernel, self.start_draws = context.target, context.kernel, start_draws
        self.progressbar, self.chunks = context.progressbar, context.chunks
        self.family = GeometricPath(self.compiled, gaussian_reference(self.compiled, fit_draws, rng))
        path_options = ScheduleOptions(schedule="adaptive", n_temps=64, cess_target=0.95, n_pilot=N_PATHS_FIRST,
                                       n_tune_temps=20)
        tune_rng, self.run_rng, self.boot_rng = rng.spawn(3)
        self.schedule, self.params, self.notes, _ = setup_schedule(self.family, self.kernel, path_options, tune_rng,
                                                                    self.progressbar)
        self.used = np.zeros(start_draws.shape[0], dtype=bool)
        self.record = None

    @property
    def n_paths(self) -> int:
        return 0 if self.record is None else self.record.forward.log_weights.size

    def run(self, n_paths: int):
        """``n_paths`` more paths each way, pooled with the earlier ones."""
        from ..methods.annealing import anneal_both_ways
        from ..runners.pooling import merge_work

        free = np.flatnonzero(~self.used)
        if free.size < n_paths:  # every draw has started a path: start again from all of them
            self.used[:] = False
            free = np.arange(self.used.size)
        starts = free[evenly_spaced(free.size, n_paths)]
        self.used[starts] = True
        batch = anneal_both_ways(
            self.family,
            self.kernel,
            self.schedule,
            self.params,
            self.notes,
            target=self.compiled,
            n_forward=n_paths,
            n_reverse=n_paths,
            reverse_start=self.start_draws[starts],
            rng=self.run_rng.spawn(1)[0],
            n_steps_per_temp=2,
            keep_particles=False,
            progressbar=self.progressbar,
            chunks=self.chunks,
        )
        if self.record is not None:
            batch = replace(batch, forward=merge_work([self.record.forward, batch.forward]),
                            reverse=merge_work([self.record.reverse, batch.reverse]))
        self.record = replace(batch, reverse_start="posterior")

    def estimate(self, n_bootstrap):
        est = bar(self.record.forward, self.record.reverse, rng=self.boot_rng.spawn(1)[0], n_bootstrap=n_bootstrap)
        return assess(est, self.record)


def path_halves(context, draws):
    """Both halves, with paths doubled until the se reaches ``target_se`` (module docstring): the pooled estimate,
    the halves as :class:`Named` and the two halves' records."""
    options = context.options
    X_a, _ = draws.flat(np.arange(0, draws.n_chains, 2))
    X_b, _ = draws.flat(np.arange(1, draws.n_chains, 2))
    rng_a, rng_b = context.streams.path.spawn(2)
    halves = [PathHalf(context, X_a, X_b, rng_a), PathHalf(context, X_b, X_a, rng_b)]
    n_paths = N_PATHS_FIRST
    while True:
        for half in halves:
            half.run(n_paths - half.n_paths)
        est_a, est_b = (half.estimate(options.n_bootstrap) for half in halves)
        se = float(np.hypot(est_a.log_z_se, est_b.log_z_se) / 2)
        if se <= options.target_se or 2 * n_paths > N_PATHS_MAX or context.clock.past_deadline():
            break
        n_paths *= 2
    pooled = replace(
        est_a,
        log_z=0.5 * (est_a.log_z + est_b.log_z),
        log_z_se=se,
        log_z_draws=None,
        reliable=est_a.reliable and est_b.reliable,
        reliability_reason="; ".join(r for r in (est_a.reliability_reason, est_b.reliability_reason) if r),
    )
    return pooled, (Named("path_a", est_a), Named("path_b", est_b)), (halves[0].record, halves[1].record)


class PathRoute:
    """Geometric paths from the fitted references (module docstring)."""

    name = "path"

    def applies(self, context) -> str:
        findings = context.bridge
        if findings is None:
            return "the bridge route has not run"
        if not findings.failed:
            return "the bridge passed its checks"
        return ""

    def run(self, context) -> Outcome:
        findings = context.bridge
        t0 = time.perf_counter()
        pooled, (a, b), records = path_halves(context, findings.draws)
        seconds = time.perf_counter() - t0
        context.clock.mark("path BAR from the fitted reference")
        answer = Named("path", pooled)
        return Outcome(
            reason=f"bridge sampling alone is not enough: {findings.failed}",
            answer=answer,
            check=(a, b),
            estimates=(*findings.pair.halves, answer, a, b),
            counted=(a, b),
            result_record=records[0],
            draws=findings.draws,
            rhat=findings.draws.rhat,
            growth=findings.growth,
            unreliable=findings.unreliable,
            sampling_seconds=seconds,
        )
