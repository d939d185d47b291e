"""pmz's default on everyday models against what a PyMC user would otherwise run, and its cost as the data grow.

Models: ``everyday_models.py`` (GLMs, censored and truncated regressions, hierarchical, state-space, latent GP
and correlated Gaussian models, each with a trusted log Z). For every model and seed, three calls on freshly
built models, one after the other in this one process (interleaved: pmz, sample_smc, NUTS + bridge, then the
next seed), each timed whole with ``time.perf_counter`` (compilation included, model construction excluded):

* ``pmz``: ``pmz.evidence(model, random_seed=seed, progressbar=False)``, pmz's default;
* ``sample_smc``: ``pm.sample_smc(draws=2000, random_seed=seed, progressbar=False)``, as a user calls it (PyMC's
  default chains and cores: on a 2-core machine two chains in two processes); log Z = the chains' mean;
* ``nuts_bridge``: ``pm.sample(chains=4, random_seed=seed, progressbar=False)`` (PyMC's default sampler and
  cores), then ``pmz.evidence(model, posterior=idata, ...)``: the bridge-sampling workflow of R's
  bridgesampling; both times recorded (``wall`` = sampling + evidence, ``wall_sample``, ``wall_evidence``);
* ``pmz_pool2`` (not run unless ``--tools`` names it): pmz's default on as many processes as ``pm.sample`` uses
  here, ``pmz.evidence(model, executor=pool, n_chunks=2, ...)`` with a ``ProcessPoolExecutor(2)`` (spawn) made
  once per benchmark process and warmed (its workers have imported pmz; each call still compiles the model in
  every worker, as a user's call does).

Every run is one JSON line in ``benchmarks/results/everyday.jsonl`` (``--cache``), keyed by model, tool, seed
and PyMC version; an interrupted run resumes. ``--report`` prints the table from the cache: per model, worst
first (by pmz's time over the faster peer's), pmz's RMSE, 95% coverage, the largest |error| / se among runs
flagged reliable, the share flagged unreliable, the share of runs with a Bayes-factor-grade answer (reliable and
se <= 0.05), and the three tools' mean times and RMSEs.

``--scaling NAME`` runs pmz's default on ``everyday_models.scaled(NAME, size)`` for each size, each call in a
fresh Python process (so that the peak resident memory, ``ru_maxrss``, is that call's, compile included) and
prints time and memory against the size.

Usage::

    python benchmarks/everyday.py --seeds 3                          # all models, seeds 0-2 (resumable)
    python benchmarks/everyday.py --seeds 1 --models negbin_glm --tools pmz
    python benchmarks/everyday.py --report --write-doc
    python benchmarks/everyday.py --scaling negbin_glm --sizes 1000,10000,100000
"""

from __future__ import annotations

import argparse
import datetime
import json
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
    cpu_name,
    existing_notes,
    fmt,
    load_cache,
    pmz_commit,
    pmz_run,
    print_fresh_row,
    run_in_fresh_process,
    smc_log_marginal_likelihood,
    update_doc,
)

import pymc as pm  # noqa: E402

import pmz  # noqa: E402

CACHE = Path(__file__).resolve().parent / "results" / "everyday.jsonl"
SCALING_CACHE = Path(__file__).resolve().parent / "results" / "everyday_scaling.jsonl"
TOOLS = ("pmz", "sample_smc", "nuts_bridge")
POOL_TOOL = "pmz_pool2"  # pmz's default on a pool of two processes (n_chunks=2)
_POOL = []
BF_SE = 0.05  # nats: a Bayes-factor-grade answer
HEADING = "## Everyday models: time to an answer against pm.sample_smc and pm.sample + bridge"


def _models():
    from everyday_models import EVERYDAY

    return EVERYDAY


# ------------------------------------------------------------------------------------------------ runs
def run_smc(model, seed: int) -> dict:
    out = {"log_z": math.nan, "se": math.nan, "reliable": None, "route": None, "error": None, "warnings": []}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample_smc(draws=2000, random_seed=seed, progressbar=False, model=model)
        out["wall"] = time.perf_counter() - t0
        out["log_z"], out["stages"] = smc_log_marginal_likelihood(idata)
    except Exception as exc:  # noqa: BLE001 -- a failed run is a result
        out["wall"] = time.perf_counter() - t0
        out["error"] = f"{type(exc).__name__}: {exc}"[:500]
    return out


def run_nuts_bridge(model, seed: int) -> dict:
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(chains=4, random_seed=seed, progressbar=False, model=model)
    except Exception as exc:  # noqa: BLE001
        return {"log_z": math.nan, "se": math.nan, "reliable": None, "route": None, "warnings": [],
                "error": f"pm.sample: {type(exc).__name__}: {exc}"[:500], "wall": time.perf_counter() - t0}
    wall_sample = time.perf_counter() - t0
    out = pmz_run(model, seed, posterior=idata)
    out["wall_sample"], out["wall_evidence"] = wall_sample, out["wall"]
    out["wall"] = wall_sample + out["wall"]
    return out


def _warm(_):
    import pmz  # noqa: F401 -- the worker's imports, once per pool

    return os.getpid()


def run_pool2(model, seed: int) -> dict:
    """pmz's default with its chains in two groups on a pool of two worker processes (made once, kept)."""
    import concurrent.futures
    import multiprocessing

    if not _POOL:
        pool = concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
        list(pool.map(_warm, range(4)))
        _POOL.append(pool)
    return pmz_run(model, seed, executor=_POOL[0], n_chunks=2)


def run_benchmark(names, seeds, tools, cache_path: Path, log) -> dict:
    models = _models()
    cache = load_cache(cache_path)
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    commit = pmz_commit()
    todo = [(n, s, t) for s in seeds for n in names for t in tools
            if (n, t, t, s, pm.__version__) not in cache]
    log(f"{len(todo)} runs to do ({len(cache)} cached in {cache_path})")
    for i, (name, seed, tool) in enumerate(todo, 1):
        bench = models[name]
        model = bench.build()
        if tool == "pmz":
            r = pmz_run(model, seed)
        elif tool == "sample_smc":
            r = run_smc(model, seed)
        elif tool == POOL_TOOL:
            r = run_pool2(model, seed)
        else:
            r = run_nuts_bridge(model, seed)
        truth = bench.truth(pm.__version__)
        row = {"model": name, "tool": tool, "method": tool, "seed": seed, "pymc": pm.__version__, "truth": truth,
               **r, "date": datetime.datetime.now().isoformat(timespec="seconds"), "pmz_commit": commit,
               "python": platform.python_version()}
        with open(cache_path, "a") as fh:
            fh.write(json.dumps(row, default=str) + "\n")
        cache[(name, tool, tool, seed, pm.__version__)] = row
        err = r["error"] or f"error {r['log_z'] - truth:+.4f}" + (
            f" (se {r['se']:.4f}, reliable {r['reliable']}, route {r.get('route')})" if tool != "sample_smc" else "")
        log(f"[{i}/{len(todo)}] {name} seed {seed} {tool}: {err}, {r['wall']:.1f} s")
    return cache


# ------------------------------------------------------------------------------------------------ report
def summarize(cache: dict, names, seeds, pymc_version: str) -> list[dict]:
    models = _models()
    rows = []
    for name in names:
        truth = models[name].truth(pymc_version)
        runs = {t: [cache[k] for s in seeds if (k := (name, t, t, s, pymc_version)) in cache]
                for t in (*TOOLS, POOL_TOOL)}
        if not runs["pmz"]:
            continue
        row = {"model": name, "dim": models[name].dim, "kind": models[name].kind, "truth": truth}
        for tool, rs in runs.items():
            ok = [r for r in rs if not r["error"] and np.isfinite(r["log_z"])]
            err = np.array([r["log_z"] - truth for r in ok])
            row[f"n_{tool}"], row[f"fail_{tool}"] = len(rs), len(rs) - len(ok)
            row[f"rmse_{tool}"] = float(np.sqrt(np.mean(err**2))) if ok else math.nan
            row[f"time_{tool}"] = float(np.mean([r["wall"] for r in rs])) if rs else math.nan
            if tool in ("pmz", "nuts_bridge") and ok:
                se = np.array([r["se"] for r in ok])
                row[f"coverage_{tool}"] = float(np.mean(np.abs(err) <= 1.96 * se + 1e-9))  # se 0: exact
                rel = [abs(e) / s for r, e, s in zip(ok, err, se) if r["reliable"] and s > 0]
                row[f"max_z_{tool}"] = max(rel) if rel else math.nan
                row[f"unreliable_{tool}"] = float(np.mean([r["reliable"] is False for r in ok]))
                row[f"bf_grade_{tool}"] = float(np.mean([bool(r["reliable"]) and r["se"] <= BF_SE for r in ok]))
                row[f"se_{tool}"] = float(np.median(se))
        nb = runs["nuts_bridge"]
        row["time_nuts_sample"] = float(np.mean([r.get("wall_sample", math.nan) for r in nb])) if nb else math.nan
        row["time_nuts_evidence"] = (float(np.mean([r.get("wall_evidence", math.nan) for r in nb])) if nb
                                     else math.nan)
        peers = [row["time_sample_smc"], row["time_nuts_sample"]]
        fastest = min((p for p in peers if np.isfinite(p)), default=math.nan)
        row["time_ratio"] = row["time_pmz"] / fastest if np.isfinite(fastest) else math.nan
        row["time_ratio_pool2"] = row[f"time_{POOL_TOOL}"] / row["time_nuts_sample"]
        row["routes"] = sorted({str(r.get("route")) for r in runs["pmz"]})
        rows.append(row)
    rows.sort(key=lambda r: -r["time_ratio"] if np.isfinite(r["time_ratio"]) else -math.inf)
    return rows


def format_report(rows: list[dict]) -> str:
    lines = [
        "| model | dim | truth | pmz runs | pmz RMSE | pmz median se | coverage | max abs(err)/se, reliable | "
        "unreliable | se <= 0.05 & reliable | pmz time (s) | sample_smc time (s) | pm.sample time (s) | "
        "+ bridge (s) | pmz / faster peer | pmz, 2 processes (s) | its / pm.sample | SMC RMSE | NUTS+bridge RMSE "
        "| routes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['dim']} | {r['truth']:.3f} | {r['n_pmz']} | {fmt(r['rmse_pmz'], '.4f')} | "
            f"{fmt(r.get('se_pmz', math.nan), '.4f')} | {fmt(r.get('coverage_pmz', math.nan), '.0%')} | "
            f"{fmt(r.get('max_z_pmz', math.nan), '.2f')} | {fmt(r.get('unreliable_pmz', math.nan), '.0%')} | "
            f"{fmt(r.get('bf_grade_pmz', math.nan), '.0%')} | {fmt(r['time_pmz'], '.1f')} | "
            f"{fmt(r['time_sample_smc'], '.1f')} | {fmt(r['time_nuts_sample'], '.1f')} | "
            f"{fmt(r['time_nuts_evidence'], '.1f')} | {fmt(r['time_ratio'], '.2f')} | "
            f"{fmt(r[f'time_{POOL_TOOL}'], '.1f')} | {fmt(r['time_ratio_pool2'], '.2f')} | "
            f"{fmt(r['rmse_sample_smc'], '.4f')} | {fmt(r['rmse_nuts_bridge'], '.4f')} | {', '.join(r['routes'])} |")
    return "\n".join(lines)


def doc_body(report: str, seeds: int) -> str:
    command = "python " + " ".join(shlex.quote(a) for a in ["benchmarks/everyday.py", *sys.argv[1:]])
    return "\n".join([
        ("pmz's default (`pmz.evidence(model, random_seed=seed, progressbar=False)`) against "
         "`pm.sample_smc(draws=2000)` (PyMC's default chains and cores) and `pm.sample(chains=4)` followed by "
         "`pmz.evidence(model, posterior=idata)` on the models of `benchmarks/everyday_models.py`, each with a "
         "trusted log Z (closed form, Kalman filter + quadrature, Gauss-Hermite quadrature). Interleaved per "
         "seed in one process, fresh models, compile included. Sorted by pmz's time over the faster peer's "
         "(`pm.sample_smc`, or `pm.sample` alone), worst first. The peers use PyMC's default processes (two on "
         "this machine); pmz runs in one."),
        "",
        report,
        "",
        *existing_notes(HEADING),
        f"Command: `{command}` (runs cached in `benchmarks/results/everyday.jsonl`), {seeds} seeds  ",
        f"Date: {datetime.date.today().isoformat()}  ",
        (f"Machine: {cpu_name()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}, PyMC "
         f"{pm.__version__}, pmz {pmz.__version__} ({pmz_commit()})"),
    ])


# ------------------------------------------------------------------------------------------------ scaling
def _one_scaling_point(name: str, size: int, seed: int) -> None:
    """Child process: one default run on ``scaled(name, size)``; prints a JSON line with time and peak memory."""
    from everyday_models import scaled

    bench = scaled(name, size)
    model = bench.build()
    r = pmz_run(model, seed)
    r.update(model=name, size=size, seed=seed, dim=bench.dim, truth=bench.truth(pm.__version__))
    print_fresh_row(r)


def run_scaling(name: str, sizes, seed: int, log) -> list[dict]:
    rows = []
    for size in sizes:
        row, error = run_in_fresh_process(__file__, ["--scaling-child", name, size, seed])
        if row is None:
            log(f"{name} size {size}: failed\n{error}")
            continue
        row.update(pmz_commit=pmz_commit(), pymc=pm.__version__, date=datetime.datetime.now().isoformat())
        with open(SCALING_CACHE, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        rows.append(row)
        log(f"{name} size {size} (dim {row['dim']}): {row['wall']:.1f} s, {row['max_rss_mb']:.0f} MB, "
            f"error {row['log_z'] - row['truth']:+.4f} se {row['se']:.4f} route {row.get('route')}")
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="comma-separated subset")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. n-1 (default 3)")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="run seeds first-seed .. seeds-1 only (e.g. two processes on halves; --report: all)")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--cache", help="JSONL run cache (default benchmarks/results/everyday.jsonl)")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--write-doc", action="store_true")
    parser.add_argument("--scaling", help="a scalable model's name: time and memory against its size")
    parser.add_argument("--sizes", help="comma-separated sizes for --scaling")
    parser.add_argument("--scaling-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.scaling_child:
        name, size, seed = args.scaling_child
        _one_scaling_point(name, int(size), int(seed))
        return
    if args.scaling:
        sizes = [int(s) for s in args.sizes.split(",")]
        run_scaling(args.scaling, sizes, 0, print)
        return
    names = args.models.split(",") if args.models else list(_models())
    seeds = list(range(args.seeds))
    cache_path = CACHE if args.cache is None else Path(args.cache)
    if args.report:
        cache = load_cache(cache_path)
    else:
        cache = run_benchmark(names, seeds[args.first_seed:], args.tools.split(","), cache_path, print)
    report = format_report(summarize(cache, names, seeds, pm.__version__))
    print(report)
    if args.write_doc:
        update_doc(HEADING, doc_body(report, len(seeds)))


if __name__ == "__main__":
    main()
