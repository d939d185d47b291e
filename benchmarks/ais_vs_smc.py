"""pmz AIS vs PyMC's ``pm.sample_smc`` log marginal likelihood at matched wall time.

On each known-truth system of ``pmz.systems.ALL_SYSTEMS`` (data fixed: the builders' default seed 0) both
methods estimate log Z with ``--seeds`` different random seeds; the table reports each method's mean wall
time per run, bias (mean error, +- its standard error over the seeds) and RMSE of log Z against the exact
value, and for pmz the mean of its reported standard error (an honest error bar has mean se ~ RMSE when
the bias is small).

Both run single-process: ``pm.sample_smc(draws=2000 (default), chains=1, cores=1, kernel=IMH (default))``
and ``pmz.evidence(method="ais")`` run in this one Python process, one after the other, and BLAS is
limited to one thread for both (``--blas-threads``; on this 2-core machine, shared with other work,
multi-threaded OpenBLAS spin-waits and makes timings erratic).

Matched wall time, per system:

1. warm-up: one untimed SMC run and one tiny AIS run (pytensor's on-disk C cache is then warm for both, so
   neither method is charged for first-time C compilation; each is still charged for its own graph
   compilation in every run);
2. calibration: four timed SMC runs (seeds not used in the evaluation) give the SMC time T. AIS keeps
   its default ``n_paths=512`` and its number of temperatures is calibrated: AIS time is fitted as a
   straight line in ``n_temps`` through runs at n_temps=10 and the default 600, solved for T, checked
   with runs at the solution and refitted if >10% off (see ``calibrate_n_temps``; clipped to [10, 4000]). Both
   are calibrated in process CPU time (``time.process_time``): on a shared machine the wall time of
   identical runs varies by +-30%, the CPU time much less;
   ``n_temps`` is scaled rather than ``n_paths`` because
   pmz evaluates all paths in one vectorised call per leapfrog step: its cost is dominated by the
   per-temperature call overhead, so fewer paths would barely save time (measured: 8 paths cost about
   half as much as 512 at 200 temperatures);
3. evaluation: for each seed, one SMC run and one AIS run (interleaved, so drifts in the machine's load hit
   both alike). SMC time = ``time.perf_counter`` around ``pm.sample_smc``; pmz time =
   ``res.run_attrs["wall_time"]`` (the whole ``pmz.evidence`` call, compilation included). Both wall
   and CPU time are reported.

Everything else is left at each method's defaults (SMC: IMH kernel, threshold 0.5, correlation_threshold
0.01; AIS: power schedule, 1 HMC step of 10 leapfrog steps per temperature, tuning on).

Usage::

    python benchmarks/ais_vs_smc.py --quick                  # 2 seeds, 2 systems
    python benchmarks/ais_vs_smc.py --seeds 10 --write-doc   # full run, updates docs/benchmarks.md
    python benchmarks/ais_vs_smc.py --systems normal_mean poisson_gamma
"""

from __future__ import annotations

import argparse
import csv
import datetime
import logging
import os
import platform
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np

warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")

import pytensor  # noqa: E402
from _common import DOC, ROOT, calibrate_linear, cpu_name, existing_notes, run_evidence, update_doc  # noqa: E402
from _common import smc_log_marginal_likelihood as smc_log_evidence  # noqa: E402

import pymc as pm  # noqa: E402

import pmz  # noqa: E402
from pmz.systems import ALL_SYSTEMS  # noqa: E402

HEADING = "## pmz AIS vs pm.sample_smc at matched wall time"
QUICK_SYSTEMS = ("normal_mean", "linear_regression")
AIS_DEFAULT_PATHS, AIS_DEFAULT_TEMPS = 512, 600
N_TEMPS_RANGE = (10, 4000)
CALIBRATION_SEEDS = (10_001, 10_002, 10_003, 10_004)  # never used in the evaluation (seeds there are 0 .. n-1)
CALIBRATION_CHECKS = 2
WARMUP_SEED = 10_000


# ------------------------------------------------------------------------------------------------ SMC
def smc_log_marginal_likelihood(idata) -> float:
    """SMC's log evidence estimate (the last stage's ``log_marginal_likelihood``), on PyMC 5 and 6 (see _common)."""
    return smc_log_evidence(idata)[0]


def run_smc(model, seed: int, draws: int = 2000) -> tuple[float, float, float, int]:
    """One ``pm.sample_smc`` run: (log Z estimate, wall time in s, process CPU time in s, number of stages)."""
    c0 = time.process_time()
    t0 = time.perf_counter()
    idata = pm.sample_smc(
        draws=draws,
        chains=1,
        cores=1,
        random_seed=seed,
        progressbar=False,
        model=model,
        compute_convergence_checks=False,
    )
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    n_stages = int(idata.sample_stats.sizes["draw"])
    return smc_log_marginal_likelihood(idata), wall, cpu, n_stages


# ------------------------------------------------------------------------------------------------ AIS
def run_ais(model, seed: int, n_temps: int, n_paths: int = AIS_DEFAULT_PATHS):
    """One ``pmz.evidence(method="ais")`` run: (log Z, reported se, wall time incl. compile, CPU time, warnings).

    The wall time is pmz's own ``attrs["wall_time"]`` (the whole call); the CPU time is ``time.process_time``
    around the call.
    """
    res, _, cpu, messages = run_evidence(
        model, seed, method="ais", n_paths=n_paths, n_temps=n_temps, schedule="power", n_steps_per_temp=1, kernel="hmc"
    )
    return res.log_z, res.log_z_se, float(res.run_attrs["wall_time"]), cpu, messages


def calibrate_n_temps(model, target_time: float, log=print) -> tuple[int, list]:
    """``n_temps`` at which one AIS run (n_paths=512) takes about ``target_time`` seconds of CPU time.

    The calibration uses process CPU time, not wall time: both methods are single-threaded here, so on an
    idle machine the two agree, but on a shared one the wall time of a run depends on what else is running
    (measured: +-30% between identical runs), while its CPU time varies less.

    Time is close to linear in n_temps, T(K) = c + b K (a small fixed cost for compilation and step-size
    tuning, plus the cost per temperature). Single timings are noisy, so: 3 runs each at K = 10 and at the
    default K = 200, a least-squares line through all runs, solved for the target; then up to
    CALIBRATION_CHECKS rounds of 2 runs at the solution, each added to the fit, until their median is
    within 10% of the target (``_common.calibrate_linear``).
    """
    lo, hi = N_TEMPS_RANGE
    seeds = iter(np.arange(CALIBRATION_SEEDS[0], CALIBRATION_SEEDS[0] + 1000))
    k, points = calibrate_linear(
        lambda n_temps: run_ais(model, int(next(seeds)), n_temps=n_temps)[3],
        target_time,
        lo=lo,
        hi=hi,
        start=(lo, AIS_DEFAULT_TEMPS),
        checks=CALIBRATION_CHECKS,
    )
    summary = {}
    for kk, tt in points:
        summary.setdefault(kk, []).append(tt)
    log("    calibration (CPU time, median per n_temps): "
        + ", ".join(f"{kk} -> {np.median(tt):.2f} s" for kk, tt in summary.items())
        + f"; target {target_time:.2f} s -> n_temps {k}")
    return k, points


# ------------------------------------------------------------------------------------------------ benchmark
def bench_system(name: str, seeds, draws: int, log=print):
    system = ALL_SYSTEMS[name]()
    model, exact = system.model, system.log_z
    log(f"== {name}: exact log Z = {exact:.4f}")

    # 1. warm-up (untimed): fills pytensor's compile cache for both methods
    run_smc(model, WARMUP_SEED, draws=draws)
    run_ais(model, WARMUP_SEED, n_temps=10, n_paths=16)

    # 2. calibration
    smc_cal = [run_smc(model, s, draws=draws)[2] for s in CALIBRATION_SEEDS]
    target = float(np.mean(smc_cal))
    log(f"    SMC calibration CPU time {target:.2f} s")
    n_temps, cal_points = calibrate_n_temps(model, target, log=log)

    # 3. evaluation, interleaved
    runs = []
    for seed in seeds:
        z_smc, t_smc, c_smc, n_stages = run_smc(model, seed, draws=draws)
        runs.append(dict(system=name, method="smc", seed=seed, log_z=z_smc, se=np.nan, time=t_smc, cpu=c_smc,
                         exact=exact, n_temps=n_stages, n_paths=draws, warnings=""))
        z_ais, se_ais, t_ais, c_ais, msgs = run_ais(model, seed, n_temps=n_temps)
        runs.append(dict(system=name, method="pmz_ais", seed=seed, log_z=z_ais, se=se_ais, time=t_ais, cpu=c_ais,
                         exact=exact, n_temps=n_temps, n_paths=AIS_DEFAULT_PATHS, warnings=" | ".join(msgs)))
        log(f"    seed {seed}: SMC {z_smc - exact:+.4f} ({t_smc:.2f} s wall, {c_smc:.2f} s CPU, {n_stages} stages)   "
            f"AIS {z_ais - exact:+.4f} +- {se_ais:.4f} ({t_ais:.2f} s wall, {c_ais:.2f} s CPU)"
            f"{'  [warning]' if msgs else ''}")
    return runs, dict(system=name, exact=exact, smc_calibration_time=target, n_temps=n_temps, cal_points=cal_points)


def summarize(runs):
    """Per (system, method): mean time, bias, se of the bias, RMSE, mean reported se, #runs, #warnings."""
    out = []
    keys = []
    for r in runs:
        key = (r["system"], r["method"])
        if key not in keys:
            keys.append(key)
    for system, method in keys:
        rs = [r for r in runs if r["system"] == system and r["method"] == method]
        err = np.array([r["log_z"] - r["exact"] for r in rs])
        n = len(err)
        out.append(dict(
            system=system,
            method=method,
            exact=rs[0]["exact"],
            n=n,
            time=float(np.mean([r["time"] for r in rs])),
            cpu=float(np.mean([r["cpu"] for r in rs])),
            bias=float(err.mean()),
            bias_se=float(err.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
            rmse=float(np.sqrt(np.mean(err**2))),
            mean_se=float(np.mean([r["se"] for r in rs])),
            n_temps=rs[0]["n_temps"] if method == "pmz_ais" else float(np.mean([r["n_temps"] for r in rs])),
            n_warn=sum(bool(r["warnings"]) for r in rs),
        ))
    return out


def rmse_at_smc_time(summary, s) -> float:
    """RMSE rescaled to the SMC run's mean CPU time, assuming error variance ~ 1 / time (approximate).

    The calibration only matches the times to within ~10-30%; this puts both methods on the same budget.
    For SMC rows it is the RMSE itself.
    """
    smc = next(x for x in summary if x["system"] == s["system"] and x["method"] == "smc")
    return s["rmse"] * np.sqrt(s["cpu"] / smc["cpu"])


def format_table(summary) -> str:
    lines = [
        "| system | exact log Z | method | mean time (s) | mean CPU time (s) | bias (+- se) | RMSE | "
        "RMSE at SMC's CPU time | mean reported se |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summary:
        if s["method"] == "smc":
            method = f"pm.sample_smc (2000 draws, {s['n_temps']:.1f} stages)"
            se = "--"
        else:
            method = f"pmz AIS (512 paths, {s['n_temps']} temps)"
            se = f"{s['mean_se']:.4f}"
        lines.append(
            f"| {s['system']} | {s['exact']:.3f} | {method} | {s['time']:.2f} | {s['cpu']:.2f} | "
            f"{s['bias']:+.4f} +- {s['bias_se']:.4f} | {s['rmse']:.4f} | {rmse_at_smc_time(summary, s):.4f} | {se} |"
        )
    return "\n".join(lines)


def observations(summary) -> list[str]:
    """Data-driven one-liners per system: who wins on RMSE, significant biases, honesty of pmz's se."""
    lines = ["Per system (computed from the table):", ""]
    for system in dict.fromkeys(s["system"] for s in summary):
        smc = next((s for s in summary if s["system"] == system and s["method"] == "smc"), None)
        ais = next((s for s in summary if s["system"] == system and s["method"] == "pmz_ais"), None)
        if smc is None or ais is None:
            continue
        winner = "pmz AIS" if ais["rmse"] < smc["rmse"] else "SMC"
        ratio = max(ais["rmse"], smc["rmse"]) / max(min(ais["rmse"], smc["rmse"]), 1e-300)
        adj = rmse_at_smc_time(summary, ais)
        winner_adj = "pmz AIS" if adj < smc["rmse"] else "SMC"
        ratio_adj = max(adj, smc["rmse"]) / max(min(adj, smc["rmse"]), 1e-300)
        parts = [f"lower RMSE: {winner} ({ratio:.2f}x)",
                 f"at equal CPU time: **{winner_adj}** ({ratio_adj:.2f}x)",
                 f"time AIS/SMC {ais['time'] / smc['time']:.2f} (CPU {ais['cpu'] / smc['cpu']:.2f})"]
        for s in (smc, ais):
            if s["n"] > 1 and abs(s["bias"]) > 2 * s["bias_se"]:
                parts.append(f"{'SMC' if s is smc else 'AIS'} bias {s['bias']:+.3f} is > 2 se")
        parts.append(f"pmz RMSE / mean reported se = {ais['rmse'] / ais['mean_se']:.2f}")
        lines.append(f"* {system}: " + "; ".join(parts))
    return lines


def machine_line() -> str:
    cpu = cpu_name()
    return (
        f"{cpu}, {os.cpu_count()} cores (another process may have been using one), Python "
        f"{platform.python_version()}, numpy {np.__version__}, pytensor {pytensor.__version__}, PyMC "
        f"{pm.__version__}, pmz {pmz.__version__}"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per system and method (0 .. n-1)")
    parser.add_argument("--systems", nargs="+", choices=sorted(ALL_SYSTEMS), help="default: all five")
    parser.add_argument("--quick", action="store_true",
                        help=f"2 seeds on {', '.join(QUICK_SYSTEMS)} (or on --systems), for debugging")
    parser.add_argument("--draws", type=int, default=2000, help="SMC draws (PyMC's default 2000)")
    parser.add_argument("--blas-threads", type=int, default=1, help="BLAS threads (threadpoolctl); default 1")
    parser.add_argument("--raw", type=Path, help="write the per-run results to this CSV file")
    parser.add_argument("--write-doc", action="store_true", help=f"write the table into {DOC.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds = 2
        args.systems = args.systems or list(QUICK_SYSTEMS)
    args.systems = args.systems or list(ALL_SYSTEMS)

    logging.getLogger("pymc").setLevel(logging.WARNING)  # "Initializing SMC sampler..." etc.

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    from threadpoolctl import threadpool_limits

    t_start = time.perf_counter()
    runs, calibrations = [], []
    with threadpool_limits(limits=args.blas_threads, user_api="blas"):
        for name in args.systems:
            r, cal = bench_system(name, range(args.seeds), args.draws, log=log)
            runs += r
            calibrations.append(cal)
    total = time.perf_counter() - t_start

    summary = summarize(runs)
    table = format_table(summary)
    print(table)
    n_warn = sum(s["n_warn"] for s in summary)
    log(f"(total {total / 60:.1f} min; pmz warnings in {n_warn} runs)")
    for r in runs:
        if r["warnings"]:
            log(f"  pmz warning ({r['system']}, seed {r['seed']}): {r['warnings']}")

    if args.raw:
        with open(args.raw, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(runs[0]))
            writer.writeheader()
            writer.writerows(runs)
        log(f"wrote {args.raw}")

    if args.write_doc:
        argv_shown = ["benchmarks/ais_vs_smc.py", *sys.argv[1:]]
        command = "python " + " ".join(shlex.quote(a) for a in argv_shown)
        cal_lines = ", ".join(
            f"{c['system']} {c['smc_calibration_time']:.2f} s -> {c['n_temps']} temps" for c in calibrations
        )
        body = "\n".join([
            f"Each known-truth system (`pmz.systems.ALL_SYSTEMS`, data fixed) is solved {args.seeds} times "
            f"(seeds 0-{args.seeds - 1}) by each method; errors are against the exact log Z.",
            "",
            f"* **pm.sample_smc**: `pm.sample_smc(draws={args.draws}, chains=1, cores=1, random_seed=s, "
            "compute_convergence_checks=False)` with PyMC's defaults otherwise (IMH kernel, threshold 0.5); "
            "estimate = the final stage's `sample_stats[\"log_marginal_likelihood\"]`. Time = "
            "`time.perf_counter` around the call (graph compilation included).",
            "* **pmz AIS**: `pmz.evidence(model, method=\"ais\", n_paths=512, n_temps=K, schedule=\"power\", "
            "n_steps_per_temp=1, kernel=\"hmc\")` (pmz's defaults otherwise: 3 leapfrog steps, tuning on 40 "
            "temperatures); time = `res.run_attrs[\"wall_time\"]` (whole call, "
            "compilation and step-size tuning included). K is calibrated per system so that an AIS run takes "
            "about as long as an SMC run, measured in process CPU time, which a busy machine disturbs far less "
            "than wall time (SMC: mean of four calibration runs; AIS: least-squares line of CPU time vs K "
            f"through 3 runs each at K = 10 and {AIS_DEFAULT_TEMPS}, solved, checked with 2 runs at the solution and refitted "
            "(at most twice) if >10% off; all with seeds outside the evaluation). "
            "n_temps is scaled rather than n_paths: "
            "pmz's cost is dominated by per-temperature call overhead, so fewer paths save little time.",
            "* Both single-process, in one Python process, one run after the other (SMC and AIS interleaved "
            f"per seed), BLAS limited to {args.blas_threads} thread; one untimed warm-up run of each per "
            "system so that neither pays first-time C compilation.",
            "",
            "mean time = wall time per run (what the user waits); mean CPU time = `time.process_time` per run "
            "(both methods single-threaded, so on an idle machine the two would agree; the gap is load from "
            "other processes). "
            "bias = mean(estimate - exact) +- its standard error over the seeds; RMSE = root mean square "
            "error; RMSE at SMC's CPU time = RMSE x sqrt(mean CPU time / SMC's mean CPU time), i.e. rescaled to "
            "SMC's budget assuming error variance ~ 1/time (the calibration matches times only to ~10-30%); "
            "mean reported se = average of pmz's own `log_z_se` (compare with pmz's RMSE). "
            f"With {args.seeds} seeds an RMSE is itself only known to about +-{100 / np.sqrt(2 * args.seeds):.0f}%.",
            "",
            table,
            "",
            f"Calibration (mean SMC CPU time of the calibration runs -> AIS n_temps): {cal_lines}.",
            f"pmz warnings: {n_warn} of {sum(s['n'] for s in summary if s['method'] == 'pmz_ais')} AIS runs.",
            "",
            *observations(summary),
            "",
            *existing_notes(HEADING),
            f"Command: `{command}` (total {total / 60:.1f} min)  ",
            f"Date: {datetime.date.today().isoformat()}  ",
            f"Machine: {machine_line()}",
        ])
        update_doc(HEADING, body)
        log(f"wrote {DOC}")


if __name__ == "__main__":
    main()
