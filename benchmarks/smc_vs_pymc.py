"""pmz SMC and ARM vs PyMC's ``pm.sample_smc`` log marginal likelihood at matched wall time.

On each known-truth system of ``pmz.systems.ALL_SYSTEMS`` (five conjugate models) and on
``pmz.systems.hierarchical_normal()`` (50 free parameters, exact log Z) every configuration below estimates log Z
with ``--seeds`` different random seeds (data fixed: the builders' default seed 0). Per configuration the tables
report the median wall and CPU time per run, bias, RMSE against the exact log Z, pmz's mean reported standard
error, RMSE / mean se (about 1 for an honest error bar), the RMSE ratio sample_smc / pmz, and the cost per stage.

Configurations, per system:

* ``sample_smc``: ``pm.sample_smc`` with PyMC's defaults (2000 draws, IMH kernel, threshold 0.5,
  correlation_threshold 0.01), ``chains=1, cores=1``. The kernel is passed as a subclass of PyMC's ``IMH`` that
  only records how many Metropolis steps each stage's ``mutate`` made (PyMC reports no evaluation count); its
  results are bit-identical to ``IMH``'s. Its median CPU time over four calibration runs is the budget T.
* ``smc (T)``: ``pmz.evidence(method="smc")`` (tempering, adaptive schedule with conditional ESS 0.9, 5 HMC
  steps per stage, ``n_runs=4``), ``n_particles`` calibrated so that one call costs T.
* ``arm (T)``: ``pmz.evidence(method="arm")`` (its defaults: linear schedule of 50 temperatures, ``n_runs=4``),
  ``n_particles`` calibrated to T.
* ``smc (defaults)``, ``arm (defaults)``: the same at pmz's defaults (``n_particles=1000``), at their own time.
* hierarchical_normal only, ``arm data``: ``method="arm", sequence="data"`` (data annealing, observations in
  random order, adaptive batch sizes) at a fixed ``n_particles`` (``--data-particles``, default 32): even there
  one call costs several T (about 190 stages per run), so it is not calibrated; it is compared at its own time.

Time matching follows ``neq_vs_smc.py``: everything runs single-process in this one Python process with BLAS
limited to one thread; calibration is in process CPU time (on a shared machine far steadier than wall time)
with seeds never used in the evaluation, by ``_common.calibrate_linear`` (cost linear in ``n_particles``: 3 runs
at each of two settings, least-squares line solved for T, checked with 2 runs at the solution and refitted, at
most twice, if more than 10% off). ``n_runs`` stays 4: the between-run error bar needs several runs.

Compilation: one untimed warm-up run of every method per system fills pytensor's on-disk C cache.
``pm.sample_smc`` compiles its (point-wise) prior and likelihood functions in every call and every timed run pays
for it. pmz compiles its batched log density once per model object and caches it in the process: the warm-up
pays it, the timed runs do not. That one-time cost (CPU time of the first tiny warm-up call minus that of an
identical second call; for data annealing separately) is reported next to the tables.

Evaluation: for each seed, one run of every configuration (interleaved, so drifts in the machine's load hit all
alike).

Usage::

    python benchmarks/smc_vs_pymc.py --quick                  # 3 seeds, 2 systems
    python benchmarks/smc_vs_pymc.py --seeds 10 --write-doc   # full run, updates docs/benchmarks.md
    python benchmarks/smc_vs_pymc.py --systems normal_mean hierarchical_normal
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
from ais_vs_smc import CALIBRATION_SEEDS, WARMUP_SEED, machine_line, smc_log_marginal_likelihood

import pymc as pm
from pymc.smc.kernels import IMH

from pmz.registry import METHODS
from pmz.systems import ALL_SYSTEMS, hierarchical_normal

HEADING = "## SMC and ARM vs pm.sample_smc (matched wall time)"
SYSTEMS = {**ALL_SYSTEMS, "hierarchical_normal": hierarchical_normal}
QUICK_SYSTEMS = ("normal_mean", "hierarchical_normal")
DATA_SYSTEMS = ("hierarchical_normal",)  # systems that also get the data-annealing row
SMC_DEFAULT_DRAWS = 2000
N_PARTICLES = (32, 20_000, (64, 1000))  # calibration: lower bound, upper bound, the two start settings
PMZ_CALIBRATION_SEED0 = 20_000  # pmz calibration seeds; evaluation seeds are 0 .. n-1
CSV_PATH = DOC.parent / "benchmarks_smc_vs_pymc.csv"


# ------------------------------------------------------------------------------------------------ sample_smc
def run_sample_smc(model, seed: int, draws: int = SMC_DEFAULT_DRAWS) -> dict:
    """One ``pm.sample_smc`` run (PyMC's defaults, ``chains=1, cores=1``), with its cost per stage.

    The IMH kernel is subclassed only to record the Metropolis steps of each stage (``n_steps - 1`` after
    ``IMH.mutate``). Every step evaluates the prior and the likelihood of all ``draws`` particles, one compiled
    call each per particle; the initial population is evaluated once. Log-density evaluations (prior +
    likelihood of one particle, no gradient) = ``draws * (1 + total Metropolis steps)``.
    """
    mh_steps: list[int] = []

    class CountingIMH(IMH):
        def mutate(self):
            super().mutate()
            mh_steps.append(self.n_steps - 1)

    c0 = time.process_time()
    t0 = time.perf_counter()
    idata = pm.sample_smc(draws=draws, kernel=CountingIMH, chains=1, cores=1, random_seed=seed, progressbar=False,
                          model=model, compute_convergence_checks=False)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    n_stages = int(idata.sample_stats.sizes["draw"])
    return {"log_z": smc_log_marginal_likelihood(idata), "se": np.nan, "wall": wall, "cpu": cpu,
            "stages_per_run": n_stages, "total_stages": n_stages, "mean_particles": float(draws),
            "n_evals": draws * (1 + sum(mh_steps)), "warnings": ""}


# ------------------------------------------------------------------------------------------------ configurations
@dataclass(frozen=True)
class Config:
    """One estimator setting: ``method`` ("sample_smc", "smc" or "arm") with fixed ``options``;
    ``calibrated``: ``n_particles`` is set so that one run costs T (``value`` once calibrated)."""

    key: str
    method: str
    options: dict = field(default_factory=dict)
    calibrated: bool = False
    value: int | None = None

    def settings(self) -> dict:
        return {**self.options, **({"n_particles": self.value} if self.calibrated else {})}

    def describe(self) -> str:
        if self.method == "sample_smc":
            return f"draws={self.options['draws']}, IMH"
        s = {**METHODS[self.method].defaults, **self.settings()}
        seq = s["sequence"]
        path = (f"adaptive, cess {s['cess_target']}" if s["schedule"] == "adaptive"
                else f"{s['schedule']} {s['n_temps']} temps") if seq == "tempering" else "data, adaptive"
        return f"n_particles={s['n_particles']}, n_runs={s['n_runs']}, n_steps_per_temp={s['n_steps_per_temp']}, {path}"


def make_configs(system: str, data_particles: int) -> list[Config]:
    configs = [
        Config("sample_smc", "sample_smc", {"draws": SMC_DEFAULT_DRAWS}),
        Config("smc (T)", "smc", {"sequence": "tempering", "schedule": "adaptive"}, calibrated=True),
        Config("arm (T)", "arm", calibrated=True),
        Config("smc (defaults)", "smc"),
        Config("arm (defaults)", "arm"),
    ]
    if system in DATA_SYSTEMS:
        configs.append(Config("arm data", "arm", {"sequence": "data", "n_particles": data_particles}))
    return configs


def run_config(model, seed: int, cfg: Config) -> dict:
    """One run: log Z, reported se (NaN for sample_smc), wall and CPU time, stages, evaluations, warnings."""
    if cfg.method == "sample_smc":
        return run_sample_smc(model, seed, **cfg.settings())
    res, wall, cpu, messages = run_evidence(model, seed, method=cfg.method, **cfg.settings())
    stages = res.smc
    attrs = res.run_attrs
    n_runs = int(stages.attrs.get("n_runs", cfg.settings().get("n_runs", 4)))
    return {"log_z": res.log_z, "se": res.log_z_se, "wall": wall, "cpu": cpu,
            "stages_per_run": stages.sizes["stage"] / n_runs, "total_stages": int(stages.sizes["stage"]),
            "mean_particles": float(stages["n_particles"].mean()),
            "n_evals": int(attrs["n_logp_evals"]) + int(attrs["n_grad_evals"]), "warnings": " | ".join(messages)}


# ------------------------------------------------------------------------------------------------ calibration
def warm_up(model, data: bool) -> dict:
    """Untimed runs of every method (C cache, pmz's compiled model); returns pmz's one-time compile CPU times."""
    run_sample_smc(model, WARMUP_SEED, draws=200)
    tiny = Config("tiny", "smc", {"n_particles": 32, "n_runs": 2})
    first = run_config(model, WARMUP_SEED, tiny)["cpu"]
    second = run_config(model, WARMUP_SEED, tiny)["cpu"]
    run_config(model, WARMUP_SEED, Config("tiny", "arm", {"n_particles": 32, "n_runs": 2, "n_temps": 5}))
    compile_cpu = {"tempering": max(first - second, 0.0)}
    if data:
        tiny = Config("tiny", "arm", {"sequence": "data", "n_particles": 16, "n_runs": 1})
        first = run_config(model, WARMUP_SEED, tiny)["cpu"]
        second = run_config(model, WARMUP_SEED, tiny)["cpu"]
        compile_cpu["data"] = max(first - second, 0.0)
    return compile_cpu


def calibrate_system(model, configs, log=print) -> tuple[list[Config], dict]:
    """T = sample_smc's median CPU time; every calibrated configuration gets n_particles for T."""
    smc_cal = [run_config(model, s, configs[0])["cpu"] for s in CALIBRATION_SEEDS]
    budget = float(np.median(smc_cal))
    log(f"    budget T: sample_smc median CPU time {budget:.2f} s (runs: {', '.join(f'{t:.2f}' for t in smc_cal)})")
    seeds = itertools.count(PMZ_CALIBRATION_SEED0)
    lo, hi, start = N_PARTICLES
    out, floors = [], {}
    for cfg in configs:
        if not cfg.calibrated:
            out.append(cfg)
            continue
        value, points = calibrate_linear(
            lambda v, cfg=cfg: run_config(model, int(next(seeds)), replace(cfg, value=v))["cpu"],
            budget, lo=lo, hi=hi, start=start,
        )
        per_value = {}
        for v, t in points:
            per_value.setdefault(v, []).append(t)
        floors[cfg.key] = float(np.median(per_value[lo])) if lo in per_value else np.nan
        log(f"    {cfg.key}: " + ", ".join(f"n_particles={v} -> {np.median(t):.2f} s" for v, t in per_value.items())
            + f"; target {budget:.2f} s -> n_particles={value}")
        out.append(replace(cfg, value=value))
    return out, {"budget": budget, "floors": floors}


# ------------------------------------------------------------------------------------------------ benchmark
def bench_system(name: str, seeds, data_particles: int, log=print):
    system = SYSTEMS[name]()
    model, exact = system.model, system.log_z
    configs = make_configs(name, data_particles)
    log(f"== {name}: exact log Z = {exact:.4f}")
    compile_cpu = warm_up(model, data=name in DATA_SYSTEMS)
    log("    pmz one-time compile (first minus second warm-up call): "
        + ", ".join(f"{k} {v:.2f} s CPU" for k, v in compile_cpu.items()))
    configs, cal = calibrate_system(model, configs, log=log)
    runs = []
    for seed in seeds:
        parts = []
        for cfg in configs:
            r = run_config(model, seed, cfg)
            runs.append({"system": name, "config": cfg.key, "method": cfg.method, "settings": cfg.describe(),
                         "seed": seed, "exact": exact, **r})
            se = "" if np.isnan(r["se"]) else f" +- {r['se']:.4f}"
            parts.append(f"{cfg.key} {r['log_z'] - exact:+.4f}{se} ({r['cpu']:.2f} s){' [w]' if r['warnings'] else ''}")
        log(f"    seed {seed}: " + "; ".join(parts))
    return runs, {"system": name, "exact": exact, "compile_cpu": compile_cpu, "configs": configs, **cal}


def summarize(runs) -> list[dict]:
    """Per (system, configuration): medians of the times, bias, RMSE, se calibration, cost per stage."""
    out = []
    for system, key in dict.fromkeys((r["system"], r["config"]) for r in runs):
        rs = [r for r in runs if r["system"] == system and r["config"] == key]
        err = np.array([r["log_z"] - r["exact"] for r in rs])
        se = np.array([r["se"] for r in rs])
        n = err.size
        mean = lambda f: float(np.mean([f(r) for r in rs]))  # noqa: E731
        out.append({
            "system": system, "config": key, "method": rs[0]["method"], "settings": rs[0]["settings"],
            "exact": rs[0]["exact"], "n": n,
            "wall": float(np.median([r["wall"] for r in rs])),
            "cpu": float(np.median([r["cpu"] for r in rs])),
            "bias": float(err.mean()),
            "bias_se": float(err.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
            "rmse": float(np.sqrt(np.mean(err**2))),
            "mean_se": float(np.mean(se)),
            "cover2": float(np.mean(np.abs(err) < 2 * se)) if np.all(np.isfinite(se)) else np.nan,
            "stages": mean(lambda r: r["stages_per_run"]),
            "particles": mean(lambda r: r["mean_particles"]),
            "evals_per_stage": mean(lambda r: r["n_evals"] / r["total_stages"]),
            "evals_per_particle_stage": mean(lambda r: r["n_evals"] / r["total_stages"] / r["mean_particles"]),
            "ms_per_stage": 1e3 * mean(lambda r: r["cpu"] / r["total_stages"]),
            "us_per_eval": 1e6 * mean(lambda r: r["cpu"] / r["n_evals"]),
            "n_warn": sum(bool(r["warnings"]) for r in rs),
        })
    return out


def _row(summary, system, key):
    return next((s for s in summary if s["system"] == system and s["config"] == key), None)


def equal_time_ratio(ref, s) -> float:
    """RMSE ratio sample_smc / pmz with sample_smc's RMSE rescaled to pmz's CPU time (error variance ~ 1/time)."""
    return ref["rmse"] * np.sqrt(ref["cpu"] / s["cpu"]) / s["rmse"]


def format_tables(summary) -> str:
    acc = [
        ("| system (exact log Z) | configuration | settings | median wall (s) | median CPU (s) | CPU / T | "
         "bias (+- se) | RMSE | mean reported se | RMSE / mean se | |err| < 2 se | RMSE ratio sample_smc / pmz | "
         "ratio at equal CPU |"),
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    cost = [
        ("| system | configuration | stages per run | particles per stage | evaluations per stage | "
         "evaluations per particle and stage | CPU per stage (ms) | CPU per evaluation (us) |"),
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summary:
        ref = _row(summary, s["system"], "sample_smc")
        t_ratio = f"{s['cpu'] / ref['cpu']:.2f}"
        if s["method"] == "sample_smc":
            se = cal = cover = ratio = eq = "--"
        else:
            se, cal = f"{s['mean_se']:.4f}", f"{s['rmse'] / s['mean_se']:.2f}"
            cover = f"{s['cover2']:.0%}"
            ratio = f"{ref['rmse'] / s['rmse']:.1f}x"
            ratio = f"**{ratio}**" if s["config"].endswith("(T)") else ratio
            eq = f"{equal_time_ratio(ref, s):.1f}x"
        acc.append(
            f"| {s['system']} ({s['exact']:.3f}) | {s['config']} | {s['settings']} | {s['wall']:.2f} | "
            f"{s['cpu']:.2f} | "
            f"{t_ratio} | {s['bias']:+.4f} +- {s['bias_se']:.4f} | {s['rmse']:.4f} | {se} | {cal} | {cover} | "
            f"{ratio} | {eq} |"
        )
        cost.append(
            f"| {s['system']} | {s['config']} | {s['stages']:.1f} | {s['particles']:.0f} | "
            f"{s['evals_per_stage']:.0f} | "
            f"{s['evals_per_particle_stage']:.1f} | {s['ms_per_stage']:.1f} | {s['us_per_eval']:.1f} |"
        )
    return "\n".join(acc) + "\n\nCost per stage (means over the seeds; pmz: all runs of a call):\n\n" + "\n".join(cost)


def observations(summary, calibrations) -> list[str]:
    """Data-driven one-liners per system: ratios at matched time, where sample_smc wins, se calibration, biases."""
    lines = ["Per system (computed from the tables; ratio = RMSE ratio sample_smc / pmz):", ""]
    for cal in calibrations:
        system = cal["system"]
        ref = _row(summary, system, "sample_smc")
        parts = []
        for s in (x for x in summary if x["system"] == system and x["method"] != "sample_smc"):
            ratio, eq = ref["rmse"] / s["rmse"], equal_time_ratio(ref, s)
            text = (f"{s['config']} {ratio:.1f}x at {s['cpu'] / ref['cpu']:.2f} T "
                    f"({eq:.1f}x rescaled to equal CPU time)")
            if eq < 1:
                text += " -- **sample_smc is more accurate per CPU second here**"
            parts.append(text)
        flags = []
        for s in (x for x in summary if x["system"] == system and x["method"] != "sample_smc"):
            q = s["rmse"] / s["mean_se"]
            if q > 1.5 or q < 0.67:
                flags.append(f"{s['config']} RMSE / mean se = {q:.2f}")
        biased = [f"{s['config']} {s['bias']:+.4f} ({abs(s['bias']) / s['bias_se']:.1f} se)" for s in summary
                  if s["system"] == system and s["n"] > 2 and abs(s["bias"]) > 3 * s["bias_se"]]
        line = f"* {system}: " + "; ".join(parts)
        if flags:
            line += "; se off by more than 1.5x: " + ", ".join(flags)
        if biased:
            line += "; bias > 3 se: " + ", ".join(biased)
        lines.append(line)
    return lines


def calibration_lines(calibrations) -> list[str]:
    lines = []
    for cal in calibrations:
        knobs = ", ".join(f"{c.key} n_particles={c.value}" + (" (lower bound)" if c.value == N_PARTICLES[0] else "")
                          for c in cal["configs"] if c.calibrated)
        floors = ", ".join(f"{k} {v:.2f} s" for k, v in cal["floors"].items() if np.isfinite(v))
        compile_cpu = ", ".join(f"{k} {v:.2f} s" for k, v in cal["compile_cpu"].items())
        lines.append(f"* {cal['system']}: T = {cal['budget']:.2f} s CPU; calibrated {knobs}"
                     + (f"; CPU time at n_particles={N_PARTICLES[0]}: {floors}" if floors else "")
                     + f"; pmz one-time compile (CPU): {compile_cpu}")
    return lines


# ------------------------------------------------------------------------------------------------ main
def _shown(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def doc_body(args, tables, summary, calibrations, total, csv_path) -> str:
    command = "python " + " ".join(shlex.quote(a) for a in ["benchmarks/smc_vs_pymc.py", *sys.argv[1:]])
    n_pmz = sum(s["n"] for s in summary if s["method"] != "sample_smc")
    n_warn = sum(s["n_warn"] for s in summary)
    return "\n".join([
        (f"pmz's sequential Monte Carlo methods against PyMC's `pm.sample_smc` on the five conjugate systems of "
         "`pmz.systems.ALL_SYSTEMS` and on `pmz.systems.hierarchical_normal()` (50 free parameters, centred, exact "
         f"log Z), data fixed. Each configuration is run {args.seeds} times (seeds 0-{args.seeds - 1}); errors are "
         "against the exact log Z."),
        "",
        ("* **sample_smc**: `pm.sample_smc(draws=2000, chains=1, cores=1, compute_convergence_checks=False)`, "
         "PyMC's defaults otherwise (IMH kernel, threshold 0.5, correlation_threshold 0.01); estimate = the final "
         "stage's `log_marginal_likelihood`. The kernel is a subclass of `IMH` that only counts the Metropolis "
         "steps per stage (same results). Its median CPU time over four calibration runs is the budget **T**."),
        ("* **smc (T)**: `pmz.evidence(method=\"smc\", sequence=\"tempering\", schedule=\"adaptive\", n_particles=P)` "
         "(conditional ESS 0.9 per stage, 5 HMC steps of 3 leapfrog steps per stage, `n_runs=4` independent runs "
         "pooled, se = max(ideal-condition se, between-run se)); **arm (T)**: `pmz.evidence(method=\"arm\", "
         "n_particles=P)` (ARM's defaults: linear schedule of 50 temperatures, particle blocks added while the "
         "stage's ESS fraction < 0.7, `n_runs=4`). P is calibrated per method so that one call costs T."),
        ("* **smc (defaults)**, **arm (defaults)**: the same with pmz's defaults (`n_particles=1000`), at their own "
         "time." + (f" **arm data** (hierarchical_normal only): `method=\"arm\", sequence=\"data\", "
                    f"n_particles={args.data_particles}` (data annealing in random order, adaptive batches): even at "
                    "this small P a call costs several T, so it is not calibrated." if any(
                        c["system"] in DATA_SYSTEMS for c in calibrations) else "")),
        "",
        ("Time matching: all single-process in one Python process, BLAS limited to 1 thread, configurations "
         "interleaved per seed. Calibration in process CPU time (steadier than wall time on this shared machine) "
         "with seeds outside the evaluation, by `_common.calibrate_linear` (cost linear in P: 3 runs at P = "
         f"{N_PARTICLES[2][0]} and {N_PARTICLES[2][1]}, least-squares line solved for T, checked with 2 runs there and "
         "refitted at most twice if >10% off; P clipped to "
         f"[{N_PARTICLES[0]}, {N_PARTICLES[1]}]). pmz's time is measured around the whole `pmz.evidence` call. "
         "Compilation: an untimed warm-up of each method per system fills pytensor's C cache; `pm.sample_smc` "
         "recompiles its functions in every call and pays for it in every timed run, while pmz compiles its batched "
         "log density once per model and caches it, so the timed pmz runs exclude it; that one-time cost is listed "
         "per system below."),
        "",
        ("Columns: CPU / T = median CPU time / sample_smc's; bias = mean(estimate - exact) +- its se over the seeds; "
         "mean reported se = mean of pmz's `log_z_se`; RMSE / mean se ~ 1 and |err| < 2 se in ~95% of runs mean an "
         "honest error bar (with 4 runs the between-run se has 3 degrees of freedom, so single se's scatter "
         "widely); RMSE ratio sample_smc / pmz = sample_smc's RMSE / this row's, at the times shown (bold: the rows "
         "matched to T); ratio at equal CPU = the same with sample_smc's RMSE rescaled by sqrt(its CPU time / this "
         "row's), i.e. assuming error variance ~ 1/time (removes the residual mismatch of the T rows; for the "
         "default rows it is an extrapolation). Cost per stage: an evaluation is one particle's log density "
         "(pmz: with its gradient, in one batched call for all particles; sample_smc: prior and likelihood, no "
         "gradient, two point-wise compiled calls); sample_smc's count is draws x (1 + Metropolis steps), pmz's is "
         "`n_logp_evals + n_grad_evals` from the result's attrs; per stage = over all stages of all runs of a call. "
         f"With {args.seeds} seeds an RMSE is itself only known to about +-{100 / np.sqrt(2 * args.seeds):.0f}%."),
        "",
        tables,
        "",
        "Calibration (CPU seconds per run):",
        "",
        *calibration_lines(calibrations),
        "",
        f"pmz warnings: {n_warn} of {n_pmz} pmz runs. All runs: `{_shown(csv_path)}`.",
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
    parser.add_argument("--systems", nargs="+", choices=sorted(SYSTEMS), help="default: all six")
    parser.add_argument("--quick", action="store_true",
                        help=f"3 seeds on {', '.join(QUICK_SYSTEMS)} (or on --systems), for debugging")
    parser.add_argument("--data-particles", type=int, default=32,
                        help="n_particles of the data-annealing ARM row (hierarchical_normal); default 32")
    parser.add_argument("--blas-threads", type=int, default=1, help="BLAS threads (threadpoolctl); default 1")
    parser.add_argument("--raw", type=Path,
                        help=f"per-run CSV (default with --write-doc: {CSV_PATH.relative_to(ROOT)})")
    parser.add_argument("--write-doc", action="store_true", help=f"write the tables into {DOC.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds = 3
        args.systems = args.systems or list(QUICK_SYSTEMS)
    args.systems = args.systems or list(SYSTEMS)

    for name, level in (("pymc", logging.WARNING), ("pymc.sampling.mcmc", logging.ERROR),
                        ("pymc.stats.convergence", logging.ERROR)):
        logging.getLogger(name).setLevel(level)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    from threadpoolctl import threadpool_limits

    t_start = time.perf_counter()
    runs, calibrations = [], []
    with threadpool_limits(limits=args.blas_threads, user_api="blas"):
        for name in args.systems:
            r, cal = bench_system(name, range(args.seeds), args.data_particles, log=log)
            runs += r
            calibrations.append(cal)
    total = time.perf_counter() - t_start

    summary = summarize(runs)
    tables = format_tables(summary)
    print(tables)
    print("\n".join(["", *calibration_lines(calibrations), "", *observations(summary, calibrations)]))
    log(f"(total {total / 60:.1f} min; pmz warnings in {sum(s['n_warn'] for s in summary)} runs)")
    for r in runs:
        if r["warnings"]:
            log(f"  pmz warning ({r['system']}, {r['config']}, seed {r['seed']}): {r['warnings']}")

    csv_path = args.raw or (CSV_PATH if args.write_doc else None)
    if csv_path:
        with open(csv_path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(runs[0]))
            writer.writeheader()
            writer.writerows(runs)
        log(f"wrote {csv_path}")

    if args.write_doc:
        update_doc(HEADING, doc_body(args, tables, summary, calibrations, total, Path(csv_path).resolve()))
        log(f"wrote {DOC}")


if __name__ == "__main__":
    main()
