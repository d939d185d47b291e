"""pmz's default evidence method vs PyMC's ``pm.sample_smc`` on the benchmark models of ``auto_models.py``.

For every model (``--models a,b`` for a subset) and seeds 0 .. ``--seeds``-1, two runs, each on a freshly built
model (so neither reuses the other's compiled functions) and each timed whole with ``time.perf_counter`` in this
one process, compilation included (model construction excluded; no thread pinning here -- ``pmz.evidence``
applies its own BLAS policy):

* ``pmz.evidence(model, random_seed=seed, progressbar=False)`` -- pmz's default method, or ``--method NAME``;
  recorded: estimate, ``res.log_z_se``, ``res.reliable`` (None if the result has no such attribute), wall time,
  error (exception text, estimate NaN);
* ``pm.sample_smc(draws=2000, chains=1, random_seed=seed, progressbar=False, compute_convergence_checks=False)``;
  log Z = the last stage's ``log_marginal_likelihood`` (``_common.smc_log_marginal_likelihood``); no se.

Every run is appended as one JSON line to ``benchmarks/results/auto_vs_smc.jsonl`` (``--cache``), keyed by
model, tool, method, seed and PyMC version: an interrupted benchmark resumes where it stopped, and ``--report``
prints the tables from the cache alone (``--pymc`` selects another stack's runs).

Per model the report gives pmz's and SMC's RMSE against the stored truth, mean wall times, the efficiency
(MSE_smc * time_smc) / (MSE_pmz * time_pmz) (> 1: pmz reaches a given accuracy in less time, assuming error
variance ~ 1 / time), pmz's 95% coverage (fraction of runs with |error| <= 1.96 se), the largest |error| / se
among runs flagged reliable, and the fraction flagged unreliable; worst efficiency first, with the geometric
mean and the worst case on top.

Usage::

    python benchmarks/auto_vs_smc.py --seeds 20                      # all models (hours; resumable)
    python benchmarks/auto_vs_smc.py --seeds 1 --models regression3,coal_mining
    python benchmarks/auto_vs_smc.py --report --write-doc            # tables from the cache, into docs
    python benchmarks/auto_vs_smc.py --check-truths                  # recompute the exact truths
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import json
import logging
import math
import os
import platform
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np

warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")

from _common import (  # noqa: E402
    ROOT,
    cpu_name,
    existing_notes,
    fmt,
    load_cache,
    pmz_commit,
    pmz_run,
    run_key,
    smc_log_marginal_likelihood,
    update_doc,
)
from auto_models import MODELS  # noqa: E402

import pymc as pm  # noqa: E402

import pmz  # noqa: E402

CACHE = Path(__file__).resolve().parent / "results" / "auto_vs_smc.jsonl"
SMC_DRAWS = 2000
DEFAULT_METHOD = inspect.signature(pmz.evidence).parameters["method"].default


def heading(method: str) -> str:
    return f'## Default evidence (method="{method}") vs pm.sample_smc'


# ------------------------------------------------------------------------------------------------ runs
def run_pmz(name: str, seed: int, method: str) -> dict:
    """One ``pmz.evidence`` call on a fresh model; times the call only (compilation included)."""
    return pmz_run(MODELS[name].build(), seed, None if method == DEFAULT_METHOD else method)


def run_smc(name: str, seed: int) -> dict:
    """One ``pm.sample_smc`` call on a fresh model; times the call only (compilation included)."""
    model = MODELS[name].build()
    out = {"log_z": math.nan, "se": math.nan, "reliable": None, "error": None, "method_used": "sample_smc",
           "warnings": []}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample_smc(draws=SMC_DRAWS, chains=1, random_seed=seed, progressbar=False, model=model,
                                  compute_convergence_checks=False)
        out["wall"] = time.perf_counter() - t0
        out["log_z"], out["stages"] = smc_log_marginal_likelihood(idata)
    except Exception as exc:  # noqa: BLE001
        out["wall"] = time.perf_counter() - t0
        out["error"] = f"{type(exc).__name__}: {exc}"[:500]
    if out["error"] is None and not np.isfinite(out["log_z"]):
        out["error"] = "non-finite log_marginal_likelihood"
    return out


def run_benchmark(
    names, seeds, method, cache_path: Path, log, rerun: bool = False, tools=("pmz", "sample_smc")
) -> dict[tuple, dict]:
    cache = load_cache(cache_path)
    if rerun:  # run everything again; the new lines supersede the old ones in the file
        cache = {k: v for k, v in cache.items() if not (k[0] in names and k[3] in seeds and k[4] == pm.__version__)}
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    commit = pmz_commit()
    todo = [(n, s, tool) for s in seeds for n in names for tool in tools
            if (n, tool, method if tool == "pmz" else "sample_smc", s, pm.__version__) not in cache]
    log(f"{len(todo)} runs to do ({len(names)} models x {len(seeds)} seeds x 2 tools, "
        f"{len(names) * len(seeds) * 2 - len(todo)} cached in {cache_path})")
    for i, (name, seed, tool) in enumerate(todo, 1):
        truth = MODELS[name].truth(pm.__version__)
        r = run_pmz(name, seed, method) if tool == "pmz" else run_smc(name, seed)
        row = {"model": name, "tool": tool, "method": method if tool == "pmz" else "sample_smc", "seed": seed,
               "pymc": pm.__version__, "truth": truth, **r,
               "date": datetime.datetime.now().isoformat(timespec="seconds"), "pmz_commit": commit,
               "python": platform.python_version()}
        with open(cache_path, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        cache[run_key(row)] = row
        err = "" if r["error"] else f"error {r['log_z'] - truth:+.4f}" + (
            f" (se {r['se']:.4f}, reliable {r['reliable']})" if tool == "pmz" else "")
        log(f"[{i}/{len(todo)}] {name} seed {seed} {tool}: {r['error'] or err}, {r['wall']:.1f} s")
    return cache


# ------------------------------------------------------------------------------------------------ report
def summarize(cache: dict, names, seeds, method: str, pymc_version: str) -> list[dict]:
    rows = []
    for name in names:
        truth = MODELS[name].truth(pymc_version)  # the stored truth for that stack's log density

        def get(tool, m):
            return [cache[k] for s in seeds if (k := (name, tool, m, s, pymc_version)) in cache]

        p_runs, s_runs = get("pmz", method), get("sample_smc", "sample_smc")
        if not p_runs and not s_runs:
            continue
        p_ok = [r for r in p_runs if not r["error"] and np.isfinite(r["log_z"])]
        s_ok = [r for r in s_runs if not r["error"] and np.isfinite(r["log_z"])]
        p_err = np.array([r["log_z"] - truth for r in p_ok])
        s_err = np.array([r["log_z"] - truth for r in s_ok])
        p_se = np.array([r["se"] for r in p_ok])
        mse_p = float(np.mean(p_err**2)) if p_ok else math.nan
        mse_s = float(np.mean(s_err**2)) if s_ok else math.nan
        t_p = float(np.mean([r["wall"] for r in p_runs])) if p_runs else math.nan
        t_s = float(np.mean([r["wall"] for r in s_runs])) if s_runs else math.nan
        finite_se = np.isfinite(p_se) & (p_se > 0)
        flags = [r["reliable"] for r in p_ok if r["reliable"] is not None]
        rel = [(abs(e) / s if s > 0 else math.inf) for r, e, s in zip(p_ok, p_err, p_se) if r["reliable"] is True]
        rows.append({
            "model": name, "dim": MODELS[name].dim, "kind": MODELS[name].kind, "truth": truth,
            "n_pmz": len(p_runs), "n_smc": len(s_runs), "fail_pmz": len(p_runs) - len(p_ok),
            "fail_smc": len(s_runs) - len(s_ok),
            "rmse_pmz": math.sqrt(mse_p) if p_ok else math.nan, "rmse_smc": math.sqrt(mse_s) if s_ok else math.nan,
            "bias_pmz": float(p_err.mean()) if p_ok else math.nan,
            "bias_smc": float(s_err.mean()) if s_ok else math.nan,
            "time_pmz": t_p, "time_smc": t_s,
            "efficiency": (mse_s * t_s) / (mse_p * t_p) if p_ok and s_ok and mse_p > 0 else math.nan,
            "coverage": float(np.mean(np.abs(p_err[finite_se]) <= 1.96 * p_se[finite_se])) if finite_se.any()
            else math.nan,
            "max_z_reliable": max(rel) if rel else math.nan,
            "unreliable": float(np.mean([f is False for f in flags])) if flags else math.nan,
            "n_flags": len(flags),
            "methods_used": sorted({str(r["method_used"]) for r in p_ok}),
            "commits": sorted({str(r.get("pmz_commit")) for r in p_runs}),
        })
    # worst efficiency first; models without an efficiency (failures) on top
    rows.sort(key=lambda r: (not math.isnan(r["efficiency"]), 0 if math.isnan(r["efficiency"]) else r["efficiency"]))
    return rows


def format_report(rows: list[dict]) -> str:
    eff = np.array([r["efficiency"] for r in rows if np.isfinite(r["efficiency"]) and r["efficiency"] > 0])
    lines = []
    if eff.size:
        worst = min((r for r in rows if np.isfinite(r["efficiency"])), key=lambda r: r["efficiency"])
        lines += [f"Efficiency (MSE_smc x time_smc) / (MSE_pmz x time_pmz) over {eff.size} models: geometric mean "
                  f"**{math.exp(np.mean(np.log(eff))):.2f}**, worst **{worst['efficiency']:.3g}** ({worst['model']}); "
                  f"pmz more efficient on {int(np.sum(eff > 1))} of {eff.size}.", ""]
    failed = [r for r in rows if r["fail_pmz"] or r["fail_smc"]]
    if failed:
        lines += ["Failed runs (excluded from RMSE): " + "; ".join(
            f"{r['model']} pmz {r['fail_pmz']}/{r['n_pmz']}, sample_smc {r['fail_smc']}/{r['n_smc']}"
            for r in failed), ""]
    lines += [
        "| model | dim | kind | truth log Z | runs | pmz RMSE | SMC RMSE | pmz bias | SMC bias | pmz time (s) | "
        "SMC time (s) | efficiency | pmz 95% coverage | max abs(err)/se, reliable | unreliable |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        unrel = "--" if math.isnan(r["unreliable"]) else f"{r['unreliable']:.0%} of {r['n_flags']}"
        lines.append(
            f"| {r['model']} | {r['dim']} | {r['kind']} | {r['truth']:.3f} | {r['n_pmz']}/{r['n_smc']} | "
            f"{fmt(r['rmse_pmz'], '.4f')} | {fmt(r['rmse_smc'], '.4f')} | {fmt(r['bias_pmz'], '+.4f')} | "
            f"{fmt(r['bias_smc'], '+.4f')} | {fmt(r['time_pmz'], '.1f')} | {fmt(r['time_smc'], '.1f')} | "
            f"{fmt(r['efficiency'], '.3g')} | {fmt(r['coverage'], '.0%')} | {fmt(r['max_z_reliable'], '.2f')} | "
            f"{unrel} |")
    used = sorted({m for r in rows for m in r["methods_used"]})
    commits = sorted({c for r in rows for c in r["commits"]})
    if used:
        lines += ["", f"pmz result methods: {', '.join(used)}; pmz commits of the runs: {', '.join(commits)}."]
    return "\n".join(lines)


def doc_body(args, report: str, method: str, pymc_version: str) -> str:
    command = "python " + " ".join(shlex.quote(a) for a in ["benchmarks/auto_vs_smc.py", *sys.argv[1:]])
    cache = CACHE if args.cache is None else Path(args.cache)
    shown = cache.resolve().relative_to(ROOT) if cache.resolve().is_relative_to(ROOT) else cache
    return "\n".join([
        (f"pmz's default method (`pmz.evidence(model, random_seed=seed, progressbar=False)`, method \"{method}\") "
         f"against `pm.sample_smc(draws={SMC_DRAWS}, chains=1, random_seed=seed, progressbar=False, "
         "compute_convergence_checks=False)` on the benchmark models of `benchmarks/auto_models.py` (none of them a "
         "pmz test system; truths exact, by quadrature, or from agreeing long runs -- see that module). Each run "
         "builds the model afresh and is timed whole (`time.perf_counter`, compilation included, model "
         "construction excluded), both tools in one process, one after the other, no thread pinning."),
        "",
        ("Columns: runs = pmz / SMC runs; RMSE and bias against the stored truth over the successful runs; "
         "efficiency = (MSE_smc x time_smc) / (MSE_pmz x time_pmz) with mean wall times (> 1: pmz reaches a given "
         "accuracy faster, assuming error variance ~ 1/time); pmz 95% coverage = fraction of runs with "
         "|error| <= 1.96 x reported se; max abs(err)/se, reliable = the largest |error| / se among runs with "
         "`res.reliable` True; unreliable = fraction of runs with `res.reliable` False (-- if the result has no "
         "such attribute). Sorted by efficiency, worst first. A truth's own uncertainty (see auto_models.py; "
         "at most a few 1e-3 for the long-run truths) sets a floor under the RMSEs."),
        "",
        report,
        "",
        *existing_notes(heading(method)),
        f"Command: `{command}` (runs cached in `{shown}`)  ",
        f"Date: {datetime.date.today().isoformat()}  ",
        (f"Machine: {cpu_name()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}, PyMC "
         f"{pymc_version}, pmz {pmz.__version__} ({pmz_commit()})"),
    ])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help=f"comma-separated subset of: {', '.join(MODELS)}")
    parser.add_argument("--seeds", type=int, default=20, help="seeds 0 .. n-1 per model and tool (default 20)")
    parser.add_argument("--method", default=DEFAULT_METHOD, help=f"pmz method (default: pmz's, {DEFAULT_METHOD!r})")
    parser.add_argument("--tools", default="pmz,sample_smc",
                        help="comma-separated tools to run (pmz, sample_smc); --seeds may differ between calls")
    parser.add_argument("--cache", help=f"JSONL run cache (default {CACHE.relative_to(ROOT)})")
    parser.add_argument("--report", action="store_true", help="only print the tables from the cache (no runs)")
    parser.add_argument("--rerun", action="store_true",
                        help="ignore cached runs of these models / seeds (e.g. after pmz changed) and run them again")
    parser.add_argument("--pymc", default=pm.__version__, help="with --report: PyMC version of the cached runs")
    parser.add_argument("--write-doc", action="store_true", help="write the table into docs/benchmarks.md")
    parser.add_argument("--check-truths", action="store_true",
                        help="recompute the exact / quadrature truths of auto_models.py and compare, then exit")
    args = parser.parse_args(argv)
    names = args.models.split(",") if args.models else list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(MODELS)}")
    if args.check_truths:
        import auto_models

        auto_models.main(["--check", "--models", ",".join(names)])
        return
    cache_path = Path(args.cache) if args.cache else CACHE
    seeds = list(range(args.seeds))

    for name in ("pymc", "pmz"):
        logging.getLogger(name).setLevel(logging.ERROR)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    if args.report:
        cache = load_cache(cache_path)
    else:
        t0 = time.perf_counter()
        cache = run_benchmark(names, seeds, args.method, cache_path, log, rerun=args.rerun,
                              tools=tuple(args.tools.split(",")))
        log(f"(total {(time.perf_counter() - t0) / 60:.1f} min)")
    rows = summarize(cache, names, seeds, args.method, args.pymc)
    if not rows:
        print(f"no cached runs for these models / seeds / method {args.method!r} / PyMC {args.pymc}")
        return
    report = format_report(rows)
    print(report)
    if args.write_doc:
        update_doc(heading(args.method), doc_body(args, report, args.method, args.pymc))
        log("wrote docs/benchmarks.md")


if __name__ == "__main__":
    main()
