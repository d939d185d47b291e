"""pmz BAR and bridge sampling vs PyMC's ``pm.sample_smc`` log marginal likelihood at matched wall time.

On each known-truth system of ``pmz.systems.ALL_SYSTEMS`` (data fixed: the builders' default seed 0) every
configuration below estimates log Z with ``--seeds`` different random seeds; the table reports per
configuration the median wall and CPU time per run, bias, RMSE against the exact log Z, pmz's mean reported
standard error, RMSE / mean se (about 1 for an honest error bar) and the RMSE ratio SMC / pmz at matched time.

Configurations, per system:

* ``smc``: ``pm.sample_smc`` with PyMC's defaults (2000 draws, IMH kernel), ``chains=1, cores=1``
  (``ais_vs_smc.run_smc``). Its median CPU time over four calibration runs is the budget T.
* ``bar K=k`` for k in ``BAR_N_TEMPS``: ``pmz.evidence(method="bar", n_temps=k, nuts_tune=--nuts-tune)``,
  forward and reverse annealing with ``n_reverse = n_paths`` reverse paths started at resampled forward end
  states relaxed by 20 steps of the frozen beta = 1 HMC kernel (``reverse_start="auto"``, pmz's default). ``n_paths`` is calibrated so that one run costs T: short schedules buy
  many paths, long ones few ("whatever schedule length is best at that budget": all are reported, and the one
  with the lowest mean *reported* se, which needs no exact answer, is marked as pmz's choice).
* ``bridge``: ``pmz.evidence(method="bridge", nuts_tune=--nuts-tune)`` with ``n_draws`` calibrated to T.
* ``bridge (defaults)``: ``pmz.evidence(method="bridge")`` at its defaults (2000 NUTS draws after 1000 tuning
  steps), usually dearer than T; it is compared with
* ``smc (bridge's time)``: ``pm.sample_smc`` with ``draws`` calibrated to the median CPU time of three
  calibration runs of ``bridge (defaults)``;
* ``bar K=300 (bridge's time)``: bar at its default schedule length with ``n_paths`` calibrated to that same
  larger budget (at SMC's default time bar can barely run, see the results).

Time matching follows ``ais_vs_smc.py``: everything runs single-process in this one Python process with BLAS
limited to one thread; calibration is in process CPU time (on a shared machine far steadier than wall time)
with seeds never used in the evaluation, by ``_common.calibrate_linear`` (cost linear in the calibrated
setting: 3 runs at each of two settings, least-squares line solved for T, checked with 2 runs at the solution
and refitted, at most twice, if more than 10% off). pmz's times are ``time.perf_counter`` /
``time.process_time`` around the whole ``pmz.evidence`` call, so they include the ``pm.sample`` NUTS run, the
pilot tuning and building the result.

Compilation: one untimed warm-up run of every method per system fills pytensor's on-disk C cache.
``pm.sample_smc`` and ``pm.sample`` (inside bar / bridge) rebuild their compiled functions in every call, and
every timed run pays for that. pmz compiles its own batched log density once per model object and caches it
in the process (``pmz.api``): the warm-up pays it, the timed runs do not. That one-time cost is measured
(CPU time of the first warm-up call minus that of an identical second call) and reported next to the table.

Evaluation: for each seed, one run of every configuration (interleaved, so drifts in the machine's load hit
all alike).

Usage::

    python benchmarks/neq_vs_smc.py --quick                  # 3 seeds, 2 systems
    python benchmarks/neq_vs_smc.py --seeds 10 --write-doc   # full run, updates docs/benchmarks.md
    python benchmarks/neq_vs_smc.py --systems normal_mean poisson_gamma
"""

from __future__ import annotations

import argparse
import csv
import datetime
import itertools
import logging
import shlex
import sys
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")

from _common import DOC, ROOT, calibrate_linear, existing_notes, run_evidence, update_doc
from ais_vs_smc import CALIBRATION_SEEDS, QUICK_SYSTEMS, WARMUP_SEED, machine_line, run_smc

from pmz.registry import METHODS
from pmz.systems import ALL_SYSTEMS

HEADING = "## BAR and bridge sampling vs pm.sample_smc (matched wall time)"
BAR_N_TEMPS = (30, 100, 300)
MATCHED_NUTS_TUNE = 100
SMC_DEFAULT_DRAWS = 2000
BRIDGE_DEFAULTS = {k: METHODS["bridge"].defaults[k] for k in ("n_draws", "nuts_tune")}
N_BRIDGE_DEFAULT_CALIBRATION = 3
GOAL = 10.0  # the goal: an order of magnitude lower RMSE than SMC
# calibrated setting -> (lower bound, upper bound, the two start settings of the calibration)
KNOBS = {
    "n_paths": (32, 8192, (32, 512)),
    "n_draws": (100, 40_000, (100, 2000)),
    "draws": (500, 40_000, (2000, 8000)),
}
PMZ_CALIBRATION_SEED0 = 20_000  # calibration seeds of pmz and of the SMC draws; evaluation seeds are 0 .. n-1


# ------------------------------------------------------------------------------------------------ configurations
@dataclass(frozen=True)
class Config:
    """One estimator setting: ``method`` ("smc", "bar" or "bridge") with fixed ``options``.

    ``knob`` names the option calibrated to a time budget (``value`` once calibrated); ``budget`` says which:
    "smc" (the default SMC run's time T), "bridge_default" (the default bridge run's time) or "" (none).
    ``compare_with``: the key of the SMC configuration run at about the same time (pmz rows only).
    """

    key: str
    method: str
    options: dict = field(default_factory=dict)
    knob: str | None = None
    value: int | None = None
    budget: str = ""
    compare_with: str = ""

    def settings(self) -> dict:
        return {**self.options, **({self.knob: self.value} if self.knob else {})}

    def describe(self) -> str:
        s = self.settings()
        if self.method == "smc":
            return f"draws={s['draws']}"
        if self.method == "bar":
            return f"n_temps={s['n_temps']}, n_paths=n_reverse={s['n_paths']}, nuts_tune={s['nuts_tune']}"
        s = {**BRIDGE_DEFAULTS, **s}
        return f"n_draws={s['n_draws']}, nuts_tune={s['nuts_tune']}"


SMC_AT_BRIDGE_TIME = "smc (bridge's time)"


def make_configs(nuts_tune: int, n_temps_grid) -> list[Config]:
    bar = {"nuts_tune": nuts_tune}
    bar_default_temps = METHODS["bar"].defaults["n_temps"]
    return [
        Config("smc", "smc", {"draws": SMC_DEFAULT_DRAWS}),
        *(Config(f"bar K={k}", "bar", {"n_temps": k, **bar}, "n_paths", budget="smc", compare_with="smc")
          for k in n_temps_grid),
        Config("bridge", "bridge", {"nuts_tune": nuts_tune}, "n_draws", budget="smc", compare_with="smc"),
        Config("bridge (defaults)", "bridge", compare_with=SMC_AT_BRIDGE_TIME),
        Config(SMC_AT_BRIDGE_TIME, "smc", knob="draws", budget="bridge_default"),
        Config(f"bar K={bar_default_temps} (bridge's time)", "bar", {"n_temps": bar_default_temps, **bar}, "n_paths",
               budget="bridge_default", compare_with=SMC_AT_BRIDGE_TIME),
    ]


def run_config(model, seed: int, cfg: Config) -> dict:
    """One run: log Z, reported se (NaN for SMC), wall and CPU time, SMC stages, pmz warnings."""
    if cfg.method == "smc":
        log_z, wall, cpu, n_stages = run_smc(model, seed, draws=cfg.settings()["draws"])
        return {"log_z": log_z, "se": np.nan, "wall": wall, "cpu": cpu, "n_stages": n_stages, "warnings": ""}
    res, wall, cpu, messages = run_evidence(model, seed, method=cfg.method, **cfg.settings())
    return {"log_z": res.log_z, "se": res.log_z_se, "wall": wall, "cpu": cpu, "n_stages": np.nan,
            "warnings": " | ".join(messages)}


# ------------------------------------------------------------------------------------------------ calibration
def warm_up(model) -> float:
    """Untimed runs of every method (C cache, pmz's compiled model); returns pmz's one-time compile CPU time."""
    run_smc(model, WARMUP_SEED, draws=200)
    tiny = Config("tiny", "bar", {"n_temps": 10, "n_paths": 16, "nuts_tune": 10})
    first = run_config(model, WARMUP_SEED, tiny)["cpu"]
    second = run_config(model, WARMUP_SEED, tiny)["cpu"]
    run_config(model, WARMUP_SEED, Config("tiny", "bridge", {"n_draws": 100, "nuts_tune": 10}))
    return max(first - second, 0.0)


def calibrate(model, cfg: Config, target: float, seeds, log=print) -> tuple[Config, list]:
    """``cfg`` with its knob set so that one run costs about ``target`` seconds of CPU time."""
    lo, hi, start = KNOBS[cfg.knob]
    value, points = calibrate_linear(
        lambda v: run_config(model, int(next(seeds)), replace(cfg, value=v))["cpu"],
        target,
        lo=lo,
        hi=hi,
        start=start,
    )
    per_value = {}
    for v, t in points:
        per_value.setdefault(v, []).append(t)
    log(f"    {cfg.key}: " + ", ".join(f"{cfg.knob}={v} -> {np.median(t):.2f} s" for v, t in per_value.items())
        + f"; target {target:.2f} s -> {cfg.knob}={value}")
    return replace(cfg, value=value), points


def calibrate_system(model, configs, log=print) -> tuple[list[Config], dict]:
    """Calibrate every configuration with a knob; returns them and the budgets (CPU seconds) used."""
    seeds = itertools.count(PMZ_CALIBRATION_SEED0)
    smc_cal = [run_config(model, s, configs[0])["cpu"] for s in CALIBRATION_SEEDS]
    budgets = {"smc": float(np.median(smc_cal))}
    log(f"    budget: SMC median CPU time {budgets['smc']:.2f} s (runs: {', '.join(f'{t:.2f}' for t in smc_cal)})")
    bridge_default = next(c for c in configs if c.key == "bridge (defaults)")
    bridge_cal = [run_config(model, int(next(seeds)), bridge_default)["cpu"] for _ in range(N_BRIDGE_DEFAULT_CALIBRATION)]
    budgets["bridge_default"] = float(np.median(bridge_cal))
    log(f"    budget: bridge (defaults) median CPU time {budgets['bridge_default']:.2f} s")
    out, floors = [], {}
    for cfg in configs:
        if cfg.knob is None:
            out.append(cfg)
            continue
        cfg, points = calibrate(model, cfg, budgets[cfg.budget], seeds, log=log)
        at_lo = [t for v, t in points if v == KNOBS[cfg.knob][0]]
        floors[cfg.key] = float(np.median(at_lo)) if at_lo else np.nan
        out.append(cfg)
    return out, {"budgets": budgets, "floors": floors}


# ------------------------------------------------------------------------------------------------ benchmark
def bench_system(name: str, seeds, configs, log=print):
    system = ALL_SYSTEMS[name]()
    model, exact = system.model, system.log_z
    log(f"== {name}: exact log Z = {exact:.4f}")
    compile_cpu = warm_up(model)
    log(f"    pmz one-time compile (first minus second warm-up call): {compile_cpu:.2f} s CPU")
    configs, cal = calibrate_system(model, configs, log=log)
    runs = []
    for seed in seeds:
        parts = []
        for cfg in configs:
            r = run_config(model, seed, cfg)
            runs.append({"system": name, "config": cfg.key, "method": cfg.method, "settings": cfg.describe(),
                         "compare_with": cfg.compare_with, "seed": seed, "exact": exact, **r})
            se = "" if np.isnan(r["se"]) else f" +- {r['se']:.4f}"
            parts.append(f"{cfg.key} {r['log_z'] - exact:+.4f}{se} ({r['wall']:.2f} s){' [w]' if r['warnings'] else ''}")
        log(f"    seed {seed}: " + "; ".join(parts))
    return runs, {"system": name, "exact": exact, "compile_cpu": compile_cpu, "configs": configs, **cal}


def summarize(runs) -> list[dict]:
    """Per (system, configuration): medians of the times, bias, RMSE, mean reported se, warnings."""
    out = []
    for system, key in dict.fromkeys((r["system"], r["config"]) for r in runs):
        rs = [r for r in runs if r["system"] == system and r["config"] == key]
        err = np.array([r["log_z"] - r["exact"] for r in rs])
        n = err.size
        out.append({
            "system": system,
            "config": key,
            "method": rs[0]["method"],
            "settings": rs[0]["settings"],
            "compare_with": rs[0]["compare_with"],
            "exact": rs[0]["exact"],
            "n": n,
            "wall": float(np.median([r["wall"] for r in rs])),
            "cpu": float(np.median([r["cpu"] for r in rs])),
            "stages": float(np.mean([r["n_stages"] for r in rs])),
            "bias": float(err.mean()),
            "bias_se": float(err.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
            "rmse": float(np.sqrt(np.mean(err**2))),
            "mean_se": float(np.mean([r["se"] for r in rs])),
            "n_warn": sum(bool(r["warnings"]) for r in rs),
        })
    return out


def reference_smc(summary, s) -> dict | None:
    """The SMC row a pmz row is compared with: the one run at (about) the same time."""
    return next((x for x in summary if x["system"] == s["system"] and x["config"] == s["compare_with"]), None)


def bar_rows(summary, system) -> list[dict]:
    """The bar rows matched to SMC's default time (the schedule-length grid)."""
    return [s for s in summary if s["system"] == system and s["method"] == "bar" and s["compare_with"] == "smc"]


def selected_bar(summary, system) -> dict | None:
    """pmz's choice among the bar rows at SMC's time: lowest mean reported se (uses no exact answer)."""
    bars = bar_rows(summary, system)
    return min(bars, key=lambda s: s["mean_se"]) if bars else None


def equal_time_ratio(smc, s) -> float:
    """RMSE ratio SMC / pmz with SMC's RMSE rescaled to pmz's CPU time (error variance ~ 1 / time)."""
    return smc["rmse"] * np.sqrt(smc["cpu"] / s["cpu"]) / s["rmse"]


def format_table(summary) -> str:
    lines = [
        ("| system (exact log Z) | method | settings | median wall (s) | median CPU (s) | CPU / SMC's | "
        "bias (+- se) | RMSE | mean reported se | RMSE / mean se | RMSE ratio SMC / pmz |"),
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summary:
        ref = reference_smc(summary, s)
        chosen = selected_bar(summary, s["system"])
        method = s["config"] + (" *" if chosen is not None and s is chosen else "")
        settings = s["settings"] + (f" ({s['stages']:.1f} stages)" if s["method"] == "smc" else "")
        if s["method"] == "smc":
            se = cal = ratio = "--"
            t_ratio = "--" if s["config"] == "smc" else f"{s['cpu'] / _row(summary, s['system'], 'smc')['cpu']:.2f}"
        else:
            se, cal = f"{s['mean_se']:.4f}", f"{s['rmse'] / s['mean_se']:.2f}"
            ratio = f"**{ref['rmse'] / s['rmse']:.1f}x**" if ref else "--"
            t_ratio = f"{s['cpu'] / ref['cpu']:.2f}" if ref else "--"
        lines.append(
            f"| {s['system']} ({s['exact']:.3f}) | {method} | {settings} | {s['wall']:.2f} | {s['cpu']:.2f} | "
            f"{t_ratio} | {s['bias']:+.4f} +- {s['bias_se']:.4f} | {s['rmse']:.4f} | {se} | {cal} | {ratio} |"
        )
    return "\n".join(lines)


def _row(summary, system, key):
    return next(s for s in summary if s["system"] == system and s["config"] == key)


def observations(summary, calibrations) -> list[str]:
    """Data-driven one-liners per system: ratios at matched time, the goal, budgets pmz could not meet."""
    lines = ["Per system (computed from the table; ratio = RMSE ratio SMC / pmz):", ""]
    for cal in calibrations:
        system = cal["system"]
        smc = _row(summary, system, "smc")
        bars = bar_rows(summary, system)
        bridge = _row(summary, system, "bridge")
        parts = [f"at SMC's default time ({smc['cpu']:.2f} s CPU):"]
        chosen = selected_bar(summary, system)
        if chosen is not None:
            best = min(bars, key=lambda s: s["rmse"])
            parts.append(f"bar {smc['rmse'] / chosen['rmse']:.1f}x (pmz's choice {chosen['config']}; best row "
                         f"{best['config']} {smc['rmse'] / best['rmse']:.1f}x), bridge {smc['rmse'] / bridge['rmse']:.1f}x;")
        matched = [*bars, bridge]
        best_matched = max(smc["rmse"] / s["rmse"] for s in matched)
        parts.append(f"goal of {GOAL:.0f}x {'met' if best_matched >= GOAL else 'not met'} (best {best_matched:.1f}x);")
        over = [f"{s['config']} {s['cpu'] / smc['cpu']:.1f}x" for s in matched if s["cpu"] > 1.25 * smc["cpu"]]
        if over:
            parts.append("even at their cheapest settings these cost more CPU time than SMC: " + ", ".join(over) + ";")
        smc_b = _row(summary, system, SMC_AT_BRIDGE_TIME)
        later = [s for s in summary if s["system"] == system and s["compare_with"] == SMC_AT_BRIDGE_TIME]
        parts.append(f"at bridge's default time ({smc_b['cpu']:.2f} s CPU for SMC):")
        parts.append(", ".join(
            f"{s['config']} {smc_b['rmse'] / s['rmse']:.1f}x at {s['cpu'] / smc_b['cpu']:.2f}x SMC's CPU time "
            f"({equal_time_ratio(smc_b, s):.1f}x with SMC rescaled to equal time)" for s in later
        ) + ";")
        default = _row(summary, system, "bridge (defaults)")
        parts.append(f"bridge (defaults) vs default SMC {smc['rmse'] / default['rmse']:.1f}x at "
                     f"{default['cpu'] / smc['cpu']:.1f}x the CPU time")
        biased = [f"{s['config']} {s['bias']:+.4f}" for s in summary
                  if s["system"] == system and s["n"] > 2 and abs(s["bias"]) > 3 * s["bias_se"]]
        if biased:
            parts[-1] += "; bias > 3 se: " + ", ".join(biased)
        lines.append(f"* {system}: " + " ".join(parts))
    return lines


def calibration_lines(calibrations) -> list[str]:
    lines = []
    for cal in calibrations:
        b = cal["budgets"]
        knobs = ", ".join(
            f"{c.key} {c.knob}={c.value}" + (" (lower bound)" if c.value == KNOBS[c.knob][0] else "")
            for c in cal["configs"] if c.knob
        )
        floors = ", ".join(f"{k} {v:.2f} s" for k, v in cal["floors"].items() if np.isfinite(v))
        lines.append(f"* {cal['system']}: SMC budget {b['smc']:.2f} s CPU, bridge (defaults) {b['bridge_default']:.2f} s; "
                     f"calibrated {knobs}; CPU time at the lowest setting: {floors}; "
                     f"pmz one-time compile {cal['compile_cpu']:.2f} s CPU")
    return lines


# ------------------------------------------------------------------------------------------------ main
def doc_body(args, table, summary, calibrations, total) -> str:
    argv_shown = ["benchmarks/neq_vs_smc.py", *sys.argv[1:]]
    command = "python " + " ".join(shlex.quote(a) for a in argv_shown)
    n_pmz = sum(s["n"] for s in summary if s["method"] != "smc")
    n_warn = sum(s["n_warn"] for s in summary)
    return "\n".join([
        (f"Each known-truth system (`pmz.systems.ALL_SYSTEMS`, data fixed) is solved {args.seeds} times "
        f"(seeds 0-{args.seeds - 1}) by each configuration; errors are against the exact log Z."),
        "",
        ("* **smc**: `pm.sample_smc(draws=2000, chains=1, cores=1, compute_convergence_checks=False)`, PyMC's "
        "defaults otherwise (IMH kernel), estimate = the final stage's `sample_stats[\"log_marginal_likelihood\"]` "
        "(as in the AIS section). Its median CPU time over four calibration runs is the budget T."),
        (f"* **bar K=k**: `pmz.evidence(method=\"bar\", n_temps=k, n_paths=P, nuts_tune={args.nuts_tune})`, "
        "n_reverse = P reverse paths started at resampled forward end states relaxed by 20 steps of the frozen "
        "beta = 1 HMC kernel (`reverse_start=\"auto\"`, pmz's default; no NUTS run), "
        "pmz's defaults otherwise (power schedule, HMC with 3 leapfrog steps, pilot tuning). P is calibrated so "
        "that a run costs T: a short schedule buys more paths. * = pmz's choice among the K values, the one with "
        "the lowest mean *reported* se (no exact answer needed)."),
        (f"* **bridge**: `pmz.evidence(method=\"bridge\", n_draws=N, nuts_tune={args.nuts_tune})` (Gaussian "
        "reference fitted to the first half of each chain), N calibrated so that a run costs T."),
        (f"* **bridge (defaults)**: `pmz.evidence(method=\"bridge\")` ({BRIDGE_DEFAULTS['n_draws']} NUTS draws after "
        f"{BRIDGE_DEFAULTS['nuts_tune']} tuning steps per chain), compared with **smc (bridge's time)**: "
        "`pm.sample_smc` with its draws calibrated to the default bridge run's CPU time, as is "
        f"**bar K={METHODS['bar'].defaults['n_temps']} (bridge's time)** (bar's default schedule length, P "
        "calibrated to that larger budget)."),
        "",
        ("Time matching: all single-process in one Python process, BLAS limited to 1 thread, configurations "
        "interleaved per seed. Calibration in process CPU time (steadier than wall time on this shared machine), "
        "with seeds outside the evaluation: cost modelled as linear in the calibrated setting, 3 runs at each of two "
        "settings, least-squares line solved for the budget, checked with 2 runs there and refitted at most twice "
        "if >10% off (`_common.calibrate_linear`, as for AIS above). pmz's time is measured around the whole "
        "`pmz.evidence` call: the NUTS run, the pilot tuning, the annealing and building the result. "
        "Compilation: an untimed warm-up run of each method per system fills pytensor's C cache; `pm.sample_smc` "
        "and `pm.sample` (inside bar and bridge) recompile their functions in every call and pay for it in every "
        "timed run, while pmz's own batched log density is compiled once per model and cached in the process, so "
        "the timed pmz runs do not include it; that one-time cost is listed per system below."),
        "",
        ("CPU / SMC's = median CPU time / that of the SMC row it is compared with (smc for the rows matched to T, "
        "smc (bridge's time) for the two rows matched to bridge's default time; for the latter SMC row itself, / "
        "smc's); RMSE ratio SMC / pmz = that SMC row's RMSE / this row's (bold). The residual time mismatch is "
        "corrected approximately in the per-system lines below by rescaling SMC's RMSE by sqrt(its CPU time / "
        "pmz's), i.e. assuming error variance ~ 1/time. "
        "RMSE / mean se ~ 1 means pmz's error bar is honest. "
        f"With {args.seeds} seeds an RMSE is itself only known to about +-{100 / np.sqrt(2 * args.seeds):.0f}%."),
        "",
        table,
        "",
        "Calibration (budgets in CPU seconds per run):",
        "",
        *calibration_lines(calibrations),
        "",
        f"pmz warnings: {n_warn} of {n_pmz} pmz runs.",
        "",
        *observations(summary, calibrations),
        "",
        *existing_notes(HEADING),
        f"Command: `{command}` (total {total / 60:.1f} min)  ",
        f"Date: {datetime.date.today().isoformat()}  ",
        f"Machine: {machine_line()}",
    ])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per system and configuration (0 .. n-1)")
    parser.add_argument("--systems", nargs="+", choices=sorted(ALL_SYSTEMS), help="default: all five")
    parser.add_argument("--quick", action="store_true",
                        help=f"3 seeds on {', '.join(QUICK_SYSTEMS)} (or on --systems), for debugging")
    parser.add_argument("--n-temps", type=int, nargs="+", default=list(BAR_N_TEMPS),
                        help=f"bar schedule lengths to try at matched time (default {BAR_N_TEMPS})")
    parser.add_argument("--nuts-tune", type=int, default=MATCHED_NUTS_TUNE,
                        help=f"NUTS tuning steps of the time-matched bar and bridge runs (default {MATCHED_NUTS_TUNE})")
    parser.add_argument("--blas-threads", type=int, default=1, help="BLAS threads (threadpoolctl); default 1")
    parser.add_argument("--raw", type=Path, help="write the per-run results to this CSV file")
    parser.add_argument("--write-doc", action="store_true", help=f"write the table into {DOC.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds = 3
        args.systems = args.systems or list(QUICK_SYSTEMS)
    args.systems = args.systems or list(ALL_SYSTEMS)

    logging.getLogger("pymc").setLevel(logging.WARNING)  # "Initializing SMC sampler..." etc.
    logging.getLogger("pymc.sampling.mcmc").setLevel(logging.ERROR)  # "Only 50 samples per chain ..."
    logging.getLogger("pymc.stats.convergence").setLevel(logging.ERROR)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    from threadpoolctl import threadpool_limits

    t_start = time.perf_counter()
    runs, calibrations = [], []
    configs = make_configs(args.nuts_tune, args.n_temps)
    with threadpool_limits(limits=args.blas_threads, user_api="blas"):
        for name in args.systems:
            r, cal = bench_system(name, range(args.seeds), configs, log=log)
            runs += r
            calibrations.append(cal)
    total = time.perf_counter() - t_start

    summary = summarize(runs)
    table = format_table(summary)
    print(table)
    print("\n".join(["", *calibration_lines(calibrations), "", *observations(summary, calibrations)]))
    log(f"(total {total / 60:.1f} min; pmz warnings in {sum(s['n_warn'] for s in summary)} runs)")
    for r in runs:
        if r["warnings"]:
            log(f"  pmz warning ({r['system']}, {r['config']}, seed {r['seed']}): {r['warnings']}")

    if args.raw:
        with open(args.raw, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(runs[0]))
            writer.writeheader()
            writer.writerows(runs)
        log(f"wrote {args.raw}")

    if args.write_doc:
        update_doc(HEADING, doc_body(args, table, summary, calibrations, total))
        log(f"wrote {DOC}")


if __name__ == "__main__":
    main()
