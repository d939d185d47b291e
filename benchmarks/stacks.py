"""pmz on this Python stack: compile time and per-particle cost by backend, pmz vs ``pm.sample_smc``, thread policy.

pmz runs on two stacks, PyMC 6 / PyTensor 3 (default backend Numba, Python 3.12 here) and PyMC 5 / PyTensor 2
(default backend C, Python 3.11 here). This script is run once with each stack's interpreter; each run writes its
tables under its own heading of docs/benchmarks.md ("## Both stacks: PyMC <major> (Python <x.y>)"), one subsection
per part, so that neither the two stacks nor the three parts overwrite each other.

Every measurement runs in a worker subprocess (this script re-invoked with ``--worker``) whose PyTensor compile
caches live in a private directory (``PYTENSOR_FLAGS=base_compiledir=<tmp>``; PyTensor 2 and 3 both keep their
Numba cache under ``base_compiledir/numba``, see ``pytensor/link/numba/cache.py``, and ``NUMBA_CACHE_DIR=<tmp>``
moves numba's own cache of ``cache=True`` functions). Each cache is warmed by an untimed run before it is used for
a "warm" number, which is what a user's second session on a machine gets. Private caches keep other processes'
compilations (the test suites running concurrently on this machine) and their compile-directory lock out of
the timings; ``--shared-cache`` uses the user's default caches instead.

``--part backends``: compile time and per-particle cost of each backend available on the stack (PyTensor 3: NUMBA,
CVM; PyTensor 2: CVM (C), and NUMBA if numba imports), on four models: ``normal_mean`` (dim 1),
``linear_regression(n_obs=1000, n_coef=10)`` (dim 10), ``hierarchical_normal()`` (dim 50) and ``nig_regression``
(dim 3, a log-transformed InverseGamma). One fresh worker process per (backend, model), in that backend's warm
private cache:

* **first call**: the session's first ``pmz.evidence(model, compile_mode=backend, n_paths=64, n_temps=50,
  random_seed=0)`` on a new model object (a small run, so compilation dominates): its wall time
  (``time.perf_counter`` around the call) and ``res.run_attrs["compile_time"]`` (pmz's own clock of the
  seconds spent compiling in that call; PyTensor's graph rewriting and lowering, and for Numba the JIT code
  generation at the first call), plus ``import pymc, pmz`` before it;
* **other first-call cost**: first call wall - compile_time - run after compile (what pmz's compile clock does not
  see: building the graphs, the backend's first use in the process);
* **model's first compilation on the machine**: the first call of the earlier, untimed-otherwise worker that put
  this model into the backend's private cache (ops already compiled for an earlier model in the list are reused);
* **run after compile**: a second call on the same model object (compiled functions cached in-process);
* **new model, same session**: the same system rebuilt as a new model object and solved again in the same
  process (``compile_time`` of that call: pmz compiles once per model object);
* **us/particle**: ``CompiledModel(model, mode=backend).log_densities_and_grads(X)`` at a batch of ``--batch``
  (1024) particles (default block size), median of ``--repeats`` (15) measurements, each looping the call for
  >= 50 ms, after a warm-up call; BLAS limited to one thread (``pmz.threads.blas_thread_limit(1)``, pmz's policy).

Plus, once per backend, a **cold cache**: the same first call on ``normal_mean`` in a worker whose
``base_compiledir`` and ``NUMBA_CACHE_DIR`` are new empty directories (a machine's first pmz call ever); this run
then warms that backend's private cache.

``--part smc``: pmz's default method (``"bar"``, ``n_temps`` 300) vs ``pm.sample_smc(draws=2000, chains=1,
cores=1)`` (PyMC's defaults otherwise) on the five systems of ``pmz.systems.ALL_SYSTEMS``, over ``--seeds`` (20)
seeds, in one worker process, everything at the user's defaults (pmz limits BLAS to one thread inside its call,
as a user's call does; SMC's threads are left alone). Every run gets a new model object (built outside the
timing), so both methods pay their graph compilation in every run (on a warm disk cache). Per system:

1. warm-up (untimed): one SMC run and one small pmz run;
2. calibration: three SMC runs give SMC's median wall time T; pmz's ``n_paths`` is fitted so that one pmz call
   takes about T (``_common.calibrate_linear``: wall time as a straight line in ``n_paths`` through two runs each
   at 64 and 512 paths, solved for T and clipped to [512, 16384], one check of two runs at the solution, refitted
   if > 10% off); calibration seeds are not used in the evaluation. n_paths is never lowered below pmz's default
   512: on these small models pmz's time is dominated by a fixed part (compilation, per-temperature call
   overhead), so fewer paths save little time and cost much precision (a first run matched linear_regression's
   time at 16 paths, RMSE 0.14 against 0.05 for SMC, a match resting on timing noise); where pmz's default run
   is slower than SMC the times are not matched, and the efficiency carries the difference;
3. evaluation: for each seed 0 .. n-1 one SMC run and one pmz run, interleaved. Wall time =
   ``time.perf_counter`` around the whole call; process CPU time (``time.process_time``) is recorded as well.

Reported per system: mean wall (and CPU) time of each, bias and RMSE of log Z against the exact value, pmz's mean
reported se, RMSE / mean se, the fraction of pmz runs with |error| < 2 se, and efficiency =
(MSE_smc x time_smc) / (MSE_pmz x time_pmz) with the mean wall times (> 1: pmz needs less time for the same
error). Rows are sorted by efficiency, worst case first.

``--part threads``: pmz's thread policy on a loaded machine.
``pmz.evidence(linear_regression(n_obs=1000, n_coef=10).model, method="ais", random_seed=0)`` (AIS defaults:
512 paths, 600 temperatures) with ``blas_threads=1`` (pmz's default) and ``blas_threads=None`` (OpenBLAS at its
own default threads), ``--thread-repeats`` (3) runs each, interleaved, on one model object compiled by an untimed
warm-up call; once with a busy process started by the worker (a pure-Python ``while True: pass`` loop, which the
OS puts on the other core) and once without it. Reports wall and CPU time and the log Z of each setting.

Usage::

    python benchmarks/stacks.py --part backends --write-doc
    python benchmarks/stacks.py --part smc --write-doc            # 20 seeds, five systems
    python benchmarks/stacks.py --part smc --quick                # 2 seeds, 2 systems, for debugging
    python benchmarks/stacks.py --part threads --write-doc
    python benchmarks/stacks.py --part backends smc threads --write-doc

with each stack's interpreter (e.g. ``/work/venv312/bin/python`` and ``/work/venv311/bin/python``).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np

warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")

from _common import (  # noqa: E402
    DOC,
    NOTES_END,
    NOTES_START,
    ROOT,
    calibrate_linear,
    cpu_name,
    run_evidence,
    update_doc,
    smc_log_marginal_likelihood,
    time_per_particle,
)

PARTS = ("backends", "smc", "threads")
SUBHEADINGS = {
    "backends": "### Compile time and per-particle cost by backend",
    "smc": "### pmz (bar) vs pm.sample_smc at matched time",
    "threads": "### Thread policy",
}
BACKEND_MODELS = ("normal_mean", "linear_regression_1000x10", "hierarchical_normal", "nig_regression")
BACKEND_MODEL_LABELS = {
    "normal_mean": "normal_mean",
    "linear_regression_1000x10": "linear_regression(n_obs=1000, n_coef=10)",
    "hierarchical_normal": "hierarchical_normal",
    "nig_regression": "nig_regression",
}
SMC_SYSTEMS = ("normal_mean", "linear_regression", "nig_regression", "beta_binomial", "poisson_gamma")
QUICK_SYSTEMS = ("normal_mean", "poisson_gamma")
FIRST_CALL = dict(n_paths=64, n_temps=50)
N_PATHS_RANGE = (16, 16384)  # the lower end only for the warm-up run
N_PATHS_START = (64, 512)
PMZ_DEFAULT_PATHS = 512
WARMUP_SEED = 10_000
SMC_CALIBRATION_SEEDS = (10_001, 10_002, 10_003)
PMZ_CALIBRATION_SEED0 = 20_000
MIN_MEASUREMENT_S = 0.05


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ================================================================================================ workers
# Everything below up to "parent" runs inside a worker subprocess (pymc and pmz are imported there only).


def build_model(name: str):
    """A new KnownTruth (new model object) for a benchmark model name."""
    from pmz.systems import ALL_SYSTEMS, hierarchical_normal, linear_regression

    if name == "linear_regression_1000x10":
        return linear_regression(n_obs=1000, n_coef=10)
    if name == "hierarchical_normal":
        return hierarchical_normal()
    return ALL_SYSTEMS[name]()


def stack_versions() -> dict:
    """Versions of everything that matters, from inside the worker."""
    import arviz
    import pymc
    import pytensor

    import pmz
    from pmz.model.backend import backend_name, resolve_mode

    try:
        import numba

        numba_version = numba.__version__
    except Exception:  # pragma: no cover - numba missing
        numba_version = None
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{i['internal_api']} {i['version']} ({i['num_threads']} threads)"
                for i in threadpool_info() if i.get("user_api") == "blas"]
    except Exception:  # pragma: no cover
        blas = []
    return dict(
        python=platform.python_version(),
        numpy=np.__version__,
        pytensor=pytensor.__version__,
        pymc=pymc.__version__,
        arviz=arviz.__version__,
        numba=numba_version,
        pmz=pmz.__version__,
        blas=sorted(set(blas)),
        default_backend=backend_name(resolve_mode(None)),
        cxx=pytensor.config.cxx or "(none)",
        cpu=cpu_name(),
        n_cpu=os.cpu_count(),
    )


def worker_compile(spec: dict) -> dict:
    """Part "backends", one (backend, model) in a fresh process: see the module docstring."""
    t0 = time.perf_counter()
    import pymc  # noqa: F401

    import pmz  # noqa: F401

    t_import = time.perf_counter() - t0
    backend, name = spec["backend"], spec["model"]
    system = build_model(name)
    res, wall, cpu, msgs = run_evidence(system.model, 0, compile_mode=backend, **FIRST_CALL)
    attrs = res.run_attrs
    out = dict(
        backend=backend,
        model=name,
        import_time=t_import,
        first_wall=wall,
        first_cpu=cpu,
        first_compile=float(attrs["compile_time"]),
        backend_name=str(attrs["backend"]),
        log_z=res.log_z,
        log_z_se=res.log_z_se,
        exact=system.log_z,
        warnings=msgs,
    )
    log(f"  [{backend} {name}] import {t_import:.2f} s; first call {wall:.2f} s wall ({cpu:.2f} s CPU), "
        f"compile {out['first_compile']:.2f} s, backend {out['backend_name']}")
    if not spec["full"]:
        return out

    # second call, same model object: compiled functions cached in-process
    res2, wall2, cpu2, _ = run_evidence(system.model, 1, compile_mode=backend, **FIRST_CALL)
    out.update(second_wall=wall2, second_cpu=cpu2, second_compile=float(res2.run_attrs["compile_time"]))
    # the same system rebuilt as a new model object, same session
    again = build_model(name)
    res3, wall3, cpu3, _ = run_evidence(again.model, 0, compile_mode=backend, **FIRST_CALL)
    out.update(rebuilt_wall=wall3, rebuilt_cpu=cpu3, rebuilt_compile=float(res3.run_attrs["compile_time"]))

    # per-particle log density + gradient, pmz's thread policy
    from pmz.model import CompiledModel
    from pmz.threads import blas_thread_limit

    cm = CompiledModel(system.model, mode=backend)
    X = np.random.default_rng(0).normal(0.0, 1.0, size=(spec["batch"], cm.dim))
    with blas_thread_limit(1):
        cm.log_densities_and_grads(X[:2])  # compile outside the timing
        (t_pp,), (c_pp,) = time_per_particle(
            [lambda: cm.log_densities_and_grads(X)], spec["batch"], spec["repeats"], MIN_MEASUREMENT_S
        )
    out.update(dim=cm.dim, block_size=cm.block_size, cm_backend=cm.backend, us_per_particle=t_pp * 1e6,
               cpu_us_per_particle=c_pp * 1e6)
    log(f"  [{backend} {name}] run after compile {wall2:.2f} s; new model same session: compile "
        f"{out['rebuilt_compile']:.2f} s, wall {wall3:.2f} s; {t_pp * 1e6:.2f} us/particle "
        f"({c_pp * 1e6:.2f} CPU), dim {cm.dim}, block {cm.block_size}")
    return out


# ------------------------------------------------------------------------------------------------ SMC
def run_smc(model, seed: int, draws: int) -> dict:
    import pymc as pm

    c0 = time.process_time()
    t0 = time.perf_counter()
    idata = pm.sample_smc(draws=draws, chains=1, cores=1, random_seed=seed, progressbar=False, model=model,
                          return_inferencedata=True)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    log_z, n_stages = smc_log_marginal_likelihood(idata)
    return dict(log_z=log_z, wall=wall, cpu=cpu, n_stages=n_stages)


def run_pmz(model, seed: int, n_paths: int) -> dict:
    res, wall, cpu, msgs = run_evidence(model, seed, n_paths=n_paths)
    a = res.run_attrs
    return dict(log_z=res.log_z, se=res.log_z_se, wall=wall, cpu=cpu, compile=float(a["compile_time"]),
                method=res.method, warnings=msgs)


def worker_smc(spec: dict) -> dict:
    """Part "smc": see the module docstring."""
    import logging

    import pmz  # noqa: F401

    logging.getLogger("pymc").setLevel(logging.WARNING)
    from pmz.systems import ALL_SYSTEMS

    draws = spec["draws"]
    out = []
    for name in spec["systems"]:
        t_sys = time.perf_counter()
        make = ALL_SYSTEMS[name]
        exact = make().log_z
        log(f"== {name}: exact log Z = {exact:.4f}")
        run_smc(make().model, WARMUP_SEED, draws)
        run_pmz(make().model, WARMUP_SEED, n_paths=N_PATHS_RANGE[0])

        smc_cal = [run_smc(make().model, s, draws)["wall"] for s in SMC_CALIBRATION_SEEDS]
        target = float(np.median(smc_cal))
        seeds = iter(range(PMZ_CALIBRATION_SEED0, PMZ_CALIBRATION_SEED0 + 1000))
        # n_paths is only ever raised above pmz's default: on these small models pmz's cost is dominated by a fixed
        # part (compilation, per-temperature call overhead), so fewer paths save little time but cost much
        # precision, and a match at a handful of paths would rest on timing noise (see the calibration line)
        n_paths, points = calibrate_linear(
            lambda n: run_pmz(make().model, next(seeds), n_paths=n)["wall"],
            target, lo=PMZ_DEFAULT_PATHS, hi=N_PATHS_RANGE[1], start=N_PATHS_START, n_start=2, n_check=2, checks=1,
        )
        summary = {}
        for x, t in points:
            summary.setdefault(x, []).append(t)
        cal_text = ", ".join(f"{x} paths {np.median(t):.2f} s" for x, t in sorted(summary.items()))
        matched = n_paths > PMZ_DEFAULT_PATHS or np.median(summary[PMZ_DEFAULT_PATHS]) <= 1.1 * target
        log(f"    SMC median wall {target:.2f} s; pmz calibration: {cal_text} -> n_paths {n_paths}"
            f"{'' if matched else ' (pmz at its default is slower than SMC: time not matched)'}")

        runs = []
        for seed in range(spec["seeds"]):
            s = run_smc(make().model, seed, draws)
            p = run_pmz(make().model, seed, n_paths=n_paths)
            runs.append(dict(seed=seed, smc=s, pmz=p))
            log(f"    seed {seed}: SMC {s['log_z'] - exact:+.4f} ({s['wall']:.2f} s, {s['cpu']:.2f} CPU, "
                f"{s['n_stages']} stages)   pmz {p['log_z'] - exact:+.4f} +- {p['se']:.4f} ({p['wall']:.2f} s, "
                f"{p['cpu']:.2f} CPU, compile {p['compile']:.2f}){'  [warning]' if p['warnings'] else ''}")
        out.append(dict(system=name, exact=exact, smc_target=target, smc_calibration=smc_cal, n_paths=n_paths,
                        matched=bool(matched), calibration=points, calibration_medians=cal_text, runs=runs,
                        time=time.perf_counter() - t_sys))
    return dict(systems=out)


# ------------------------------------------------------------------------------------------------ threads
def worker_threads(spec: dict) -> dict:
    """Part "threads": see the module docstring."""
    import pmz
    from pmz.systems import linear_regression

    system = linear_regression(n_obs=1000, n_coef=10)
    model = system.model
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tiny run, only to compile
        warm = pmz.evidence(model, method="ais", random_seed=0, progressbar=False, n_paths=16, n_temps=10)
    log(f"  warm-up (compile) {time.perf_counter() - t0:.2f} s, compile_time {warm.run_attrs['compile_time']:.2f} s")

    from threadpoolctl import threadpool_info

    default_threads = sorted({i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"})
    rows = []
    for loaded in (False, True):
        busy = None
        try:
            if loaded:
                busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                time.sleep(1.0)
            load_avg = os.getloadavg()
            for rep in range(spec["repeats"]):
                for blas_threads in (1, None):
                    res, wall, cpu, _ = run_evidence(model, 0, method="ais", blas_threads=blas_threads)
                    rows.append(dict(loaded=loaded, blas_threads=blas_threads, rep=rep, wall=wall, cpu=cpu,
                                     log_z=res.log_z, se=res.log_z_se, compile=float(res.run_attrs["compile_time"]),
                                     load_avg=load_avg[0]))
                    log(f"  load={'busy loop' if loaded else 'none'} blas_threads={blas_threads}: {wall:.2f} s wall, "
                        f"{cpu:.2f} s CPU, log Z {res.log_z:.10f} (load avg {load_avg[0]:.2f})")
        finally:
            if busy is not None:
                busy.terminate()
                busy.wait()
    return dict(rows=rows, exact=system.log_z, default_blas_threads=default_threads)


def worker_main(spec: dict) -> None:
    kind = spec["kind"]
    result = {"compile": worker_compile, "smc": worker_smc, "threads": worker_threads}[kind](spec)
    result["versions"] = stack_versions()
    Path(spec["out"]).write_text(json.dumps(result, default=_json_default))


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj)}")


# ================================================================================================ parent
class Caches:
    """Private compile-cache directories for the workers (removed at the end unless kept)."""

    def __init__(self, shared: bool, keep: bool):
        self.shared, self.keep = shared, keep
        self.root = Path(tempfile.mkdtemp(prefix="pmz-stacks-"))

    def dir(self, name: str) -> Path:
        d = self.root / name
        d.mkdir(parents=True, exist_ok=True)
        return d

    def env(self, name: str | None) -> dict:
        """Worker environment: base_compiledir and NUMBA_CACHE_DIR in cache ``name`` (None: the user's)."""
        env = dict(os.environ)
        if name is None:
            return env
        d = self.dir(name)
        flags = env.get("PYTENSOR_FLAGS", "")
        env["PYTENSOR_FLAGS"] = ",".join(f for f in (flags, f"base_compiledir={d / 'pytensor'}") if f)
        env["NUMBA_CACHE_DIR"] = str(d / "numba")
        return env

    def cleanup(self):
        if self.keep:
            log(f"compile caches kept in {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)


def run_worker(spec: dict, env: dict) -> dict:
    """Run this script with ``--worker`` in a fresh process; returns its JSON result."""
    out = Path(tempfile.mkstemp(prefix="pmz-stacks-", suffix=".json")[1])
    spec = {**spec, "out": str(out)}
    try:
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)], env=env,
                       check=True, cwd=str(ROOT))
        return json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)


def available_backends() -> list[str]:
    """The stack's default backend first: PyTensor 3: NUMBA, CVM; PyTensor 2: CVM, NUMBA (if numba imports)."""
    major = int(metadata.version("pytensor").split(".")[0])
    numba_ok = importlib.util.find_spec("numba") is not None
    if numba_ok:
        try:
            import numba  # noqa: F401
        except Exception:
            numba_ok = False
    if major >= 3:
        return ["NUMBA", "CVM"]
    return ["CVM", *(["NUMBA"] if numba_ok else [])]


# ------------------------------------------------------------------------------------------------ part backends
def part_backends(args, caches: Caches) -> tuple[dict, dict]:
    backends = args.backends or available_backends()
    cold, warm, prime = {}, {}, {}
    versions = None
    for backend in backends:
        cache = None if args.shared_cache else f"{backend.lower()}"
        log(f"== backend {backend}: cold cache ({args.models[0]})")
        cold_cache = f"{backend.lower()}-cold" if args.shared_cache else cache
        r = run_worker(dict(kind="compile", backend=backend, model=args.models[0], full=False), caches.env(cold_cache))
        cold[backend] = r
        versions = versions or r["versions"]
        for name in args.models:
            if args.shared_cache or name != args.models[0]:  # the cold run already compiled the first model
                log(f"== backend {backend}, {name}: warming the cache for this model")
                p = run_worker(dict(kind="compile", backend=backend, model=name, full=False), caches.env(cache))
            else:
                p = r
            if not args.shared_cache:  # a private cache: this was the model's first compilation in it
                prime[f"{backend}|{name}"] = p
            log(f"== backend {backend}, {name}: measured")
            warm[(backend, name)] = run_worker(
                dict(kind="compile", backend=backend, model=name, full=True, batch=args.batch, repeats=args.repeats),
                caches.env(cache),
            )
    return dict(backends=backends, cold=cold, prime=prime, warm={f"{b}|{m}": v for (b, m), v in warm.items()}), versions


def format_backends(data: dict, args) -> str:
    backends, cold, warm, prime = data["backends"], data["cold"], data["warm"], data.get("prime", {})
    lines = [
        "| model | dim | backend | model's first compilation on the machine: wall (s) [compile_time] | "
        "later session, first call: wall (s) | compile_time (s) | other first-call cost (s) | run after compile (s) | "
        "new model, same session: compile_time (s) | log density + grad (us/particle) | (CPU us/particle) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in args.models:
        for b in backends:
            r = warm[f"{b}|{name}"]
            p = prime.get(f"{b}|{name}")
            first = f"{p['first_wall']:.2f} [{p['first_compile']:.2f}]" if p else "--"
            other = r["first_wall"] - r["first_compile"] - r["second_wall"]
            lines.append(
                f"| {BACKEND_MODEL_LABELS[name]} | {r['dim']} | {b} ({r['backend_name']}) | {first} | "
                f"{r['first_wall']:.2f} | {r['first_compile']:.2f} | {other:.2f} | {r['second_wall']:.2f} | "
                f"{r['rebuilt_compile']:.2f} | {r['us_per_particle']:.2f} | {r['cpu_us_per_particle']:.2f} |"
            )
    lines += ["", "Cold cache (empty `base_compiledir` and `NUMBA_CACHE_DIR`: a machine's first pmz call ever) vs "
              f"warm cache (later session), first call on {args.models[0]}:", "",
              "| backend | cache | import pymc, pmz (s) | first call: wall (s) | first call: process CPU (s) | "
              "first call: compile_time (s) |",
              "|---|---|---:|---:|---:|---:|"]
    for b in backends:
        c, w = cold[b], warm[f"{b}|{args.models[0]}"]
        for label, r in (("cold", c), ("warm", w)):
            lines.append(f"| {b} | {label} | {r['import_time']:.2f} | {r['first_wall']:.2f} | {r['first_cpu']:.2f} | "
                         f"{r['first_compile']:.2f} |")
    # sanity: the backends give statistically the same estimate (same seed; not bit-identical in general, since
    # rounding differences between backends can flip an accept/reject decision and the paths then diverge)
    diffs = []
    for name in args.models:
        rs = [warm[f"{b}|{name}"] for b in backends]
        zs = [r["log_z"] for r in rs]
        spread = max(zs) - min(zs)
        diffs.append(f"{BACKEND_MODEL_LABELS[name]} {spread:.1e} ({spread / rs[0]['log_z_se']:.2f} se)")
    if len(backends) > 1:
        lines += ["", "Sanity check, spread of the first call's log Z across backends (same seed): " + "; ".join(diffs)
                  + "."]
    return "\n".join(lines)


def backends_body(data: dict, args, versions: dict, total: float) -> str:
    backends = data["backends"]
    return "\n".join([
        f"Backends measured: {', '.join(backends)} (default of this stack: {versions['default_backend']}). "
        "One fresh worker process per (backend, model), compile caches in a private directory per backend, warmed "
        "by an untimed run of the same model in an earlier process (a user's second session).",
        "",
        "* **first call**: the process's first `pmz.evidence(model, compile_mode=backend, "
        f"n_paths={FIRST_CALL['n_paths']}, n_temps={FIRST_CALL['n_temps']}, random_seed=0)` on a new model object "
        "(method bar; a small run so that "
        "compilation dominates). wall = `time.perf_counter` around the call; compile_time = "
        "`res.run_attrs[\"compile_time\"]` (pmz's clock of its graph compilation, Numba's JIT at the first call "
        "included; not included: building the graphs and the first use of the backend in the process).",
        "* **model's first compilation on the machine**: the same first call in the earlier process that put this "
        "model into the backend's (private, initially empty) cache. Models run in the table's order and share the "
        "cache, so ops already compiled for an earlier model are not compiled again; the cold-cache table below is "
        "the true first call ever.",
        "* **other first-call cost**: first call wall - compile_time - run after compile: the part of a session's "
        "first call that pmz's compile clock does not see (building the graphs, the backend's first use in the "
        "process, e.g. importing PyTensor's Numba dispatchers, and the block-size probe's `.eval()` in "
        "`CompiledModel.__init__`).",
        "* **run after compile**: a second call on the same model object (compiled functions cached in-process; "
        "seed 1).",
        "* **new model, same session**: the same system rebuilt as a new model object and solved in the same process "
        "(pmz compiles once per model object; PyTensor's in-process and disk caches are warm).",
        f"* **us/particle**: `CompiledModel(model, mode=backend).log_densities_and_grads(X)`, X = {args.batch} "
        f"particles (default block size), median of {args.repeats} measurements (each >= 50 ms) after a warm-up, "
        "BLAS limited to one thread (`pmz.threads.blas_thread_limit(1)`); process CPU time alongside.",
        "",
        format_backends(data, args),
        "",
        "Cold-cache C compilation runs the compiler in child processes, so its process CPU time understates the "
        "work; the warm cache is what every later session on the machine gets (PyTensor keeps both caches on disk, "
        "`~/.pytensor` by default).",
        "",
        *subsection_notes("backends"),
        f"Command: `{command_line()}` (part backends: {total / 60:.1f} min)  ",
        f"Date: {datetime.date.today().isoformat()}  ",
        f"Machine: {machine_line(versions)}",
    ])


# ------------------------------------------------------------------------------------------------ part smc
def summarize_smc(data: dict) -> list[dict]:
    rows = []
    for s in data["systems"]:
        exact = s["exact"]
        e_smc = np.array([r["smc"]["log_z"] - exact for r in s["runs"]])
        e_pmz = np.array([r["pmz"]["log_z"] - exact for r in s["runs"]])
        se = np.array([r["pmz"]["se"] for r in s["runs"]])
        n = len(e_smc)
        t_smc = float(np.mean([r["smc"]["wall"] for r in s["runs"]]))
        t_pmz = float(np.mean([r["pmz"]["wall"] for r in s["runs"]]))
        mse_smc, mse_pmz = float(np.mean(e_smc**2)), float(np.mean(e_pmz**2))
        rows.append(dict(
            system=s["system"], exact=exact, n=n, n_paths=s["n_paths"], matched=s.get("matched", True),
            n_stages=float(np.mean([r["smc"]["n_stages"] for r in s["runs"]])),
            t_smc=t_smc, t_pmz=t_pmz,
            c_smc=float(np.mean([r["smc"]["cpu"] for r in s["runs"]])),
            c_pmz=float(np.mean([r["pmz"]["cpu"] for r in s["runs"]])),
            compile_pmz=float(np.mean([r["pmz"]["compile"] for r in s["runs"]])),
            bias_smc=float(e_smc.mean()), bias_pmz=float(e_pmz.mean()),
            bias_se_smc=float(e_smc.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
            bias_se_pmz=float(e_pmz.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
            rmse_smc=float(np.sqrt(mse_smc)), rmse_pmz=float(np.sqrt(mse_pmz)),
            mean_se=float(se.mean()),
            within_2se=float(np.mean(np.abs(e_pmz) < 2 * se)),
            efficiency=(mse_smc * t_smc) / max(mse_pmz * t_pmz, 1e-300),
            outside=[(r["seed"], float(e), float(x)) for r, e, x in zip(s["runs"], e_pmz, se) if abs(e) >= 2 * x],
            n_warn=sum(bool(r["pmz"]["warnings"]) for r in s["runs"]),
        ))
    return sorted(rows, key=lambda r: r["efficiency"])


def format_smc(rows: list[dict]) -> str:
    lines = [
        "| system | exact log Z | SMC time (s) | pmz time (s) [n_paths] | SMC bias +- se | SMC RMSE | "
        "pmz bias +- se | pmz RMSE | pmz mean se | pmz RMSE / se | pmz \\|err\\| < 2 se | efficiency |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['system']} | {r['exact']:.3f} | {r['t_smc']:.2f} (CPU {r['c_smc']:.2f}) | "
            f"{r['t_pmz']:.2f} (CPU {r['c_pmz']:.2f}) [{r['n_paths']}{'' if r['matched'] else '*'}] | "
            f"{r['bias_smc']:+.4f} +- {r['bias_se_smc']:.4f} | {r['rmse_smc']:.4f} | "
            f"{r['bias_pmz']:+.4f} +- {r['bias_se_pmz']:.4f} | {r['rmse_pmz']:.4f} | {r['mean_se']:.4f} | "
            f"{r['rmse_pmz'] / r['mean_se']:.2f} | {r['within_2se'] * 100:.0f}% | {r['efficiency']:.1f} |"
        )
    return "\n".join(lines)


def smc_body(data: dict, rows: list[dict], args, versions: dict, total: float) -> str:
    n_seeds = rows[0]["n"] if rows else 0
    outside = [f"{r['system']} seed {seed}: error {e:+.4f}, se {x:.4f} ({abs(e) / x:.1f} se)"
               for r in rows for seed, e, x in r["outside"]]
    cal = "; ".join(f"{s['system']}: SMC {s['smc_target']:.2f} s, pmz {s['calibration_medians']} -> {s['n_paths']} "
                    f"paths{'' if s['matched'] else ' (not matched)'}" for s in data["systems"])
    n_unmatched = sum(not s["matched"] for s in data["systems"])
    n_runs = sum(r["n"] for r in rows)
    n_warn = sum(r["n_warn"] for r in rows)
    return "\n".join([
        f"Each known-truth system (`pmz.systems.ALL_SYSTEMS`, data fixed) solved with seeds 0-{n_seeds - 1} by each "
        "method, interleaved, in one process; every run gets a new model object (built outside the timing), so both "
        "pay their graph compilation in every run, on a warm disk cache.",
        "",
        f"* **pm.sample_smc**: `pm.sample_smc(draws={args.draws}, chains=1, cores=1, random_seed=s)`, PyMC's defaults "
        "otherwise (IMH kernel, threshold 0.5), threads left as they are; estimate = the last stage's "
        "`sample_stats[\"log_marginal_likelihood\"]`.",
        "* **pmz**: `pmz.evidence(model, random_seed=s, n_paths=N)`: the default method (bar, 300 temperatures, "
        "BLAS limited to one thread inside the call by pmz's default `blas_threads=1`). N calibrated per system so "
        "that a pmz call takes about SMC's median wall time over three calibration runs (wall time as a straight line "
        f"in n_paths through two runs each at {N_PATHS_START[0]} and {N_PATHS_START[1]} paths, solved, one check of "
        f"two runs, clipped to [{PMZ_DEFAULT_PATHS}, {N_PATHS_RANGE[1]}]); one untimed warm-up run of each per "
        f"system. n_paths is only raised above pmz's default {PMZ_DEFAULT_PATHS}, never lowered: on these small models "
        "pmz's time is dominated by a fixed part (compilation, per-temperature call overhead; see the calibration "
        f"line: {N_PATHS_START[0]} paths cost nearly as much as {N_PATHS_START[1]}), so fewer paths would save little "
        "time and cost much precision. Where pmz's default run is > 1.1x slower than SMC the times are not matched "
        "(n_paths marked *) and the efficiency column carries the difference.",
        "* time = mean wall time per run (`time.perf_counter` around the whole call, compilation included), process "
        "CPU time in brackets; bias = mean(estimate - exact) +- its standard error over the seeds; pmz mean se = "
        "mean of pmz's reported `log_z_se`; efficiency = (MSE_smc x time_smc) / (MSE_pmz x time_pmz) with the "
        "mean wall times (> 1: pmz reaches a given error in less time). Sorted by efficiency, worst case first. "
        f"With {n_seeds} seeds an RMSE is known to about +-{100 / np.sqrt(2 * max(n_seeds, 1)):.0f}%, an "
        f"efficiency (a ratio of two MSEs) to about a factor {np.exp(2 / np.sqrt(max(n_seeds, 1) / 2)):.1f} "
        "(2 sigma).",
        "",
        format_smc(rows),
        "",
        f"Calibration (SMC median wall time; pmz median wall time per n_paths tried -> n_paths used): {cal}. "
        f"Time matched on {len(rows) - n_unmatched} of {len(rows)} systems.  ",
        f"pmz runs with \\|error\\| >= 2 se: {len(outside)} of {n_runs}"
        + (f" ({'; '.join(outside)})." if outside else "."),
        f"pmz warnings: {n_warn} of {n_runs} runs.",
        "",
        *subsection_notes("smc"),
        f"Command: `{command_line()}` (part smc: {total / 60:.1f} min)  ",
        f"Date: {datetime.date.today().isoformat()}  ",
        f"Machine: {machine_line(versions)}",
    ])


# ------------------------------------------------------------------------------------------------ part threads
def threads_body(data: dict, args, versions: dict, total: float) -> str:
    rows = data["rows"]
    ref = {loaded: [r["log_z"] for r in rows if r["loaded"] == loaded and r["blas_threads"] == 1]
           for loaded in (False, True)}
    ref_z = ref[False][0]
    lines = [
        "| other load | blas_threads | wall (s): median [min, max] | CPU (s): median | log Z | "
        "max \\|log Z - log Z(blas_threads=1, no load)\\| | load average (1 min) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for loaded in (False, True):
        for bt in (1, None):
            rs = [r for r in rows if r["loaded"] == loaded and r["blas_threads"] == bt]
            w = [r["wall"] for r in rs]
            label = "1 (pmz default)" if bt == 1 else "None (OpenBLAS default)"
            lines.append(
                f"| {'busy loop on one core' if loaded else 'none started'} | {label} | {np.median(w):.2f} "
                f"[{min(w):.2f}, {max(w):.2f}] | {np.median([r['cpu'] for r in rs]):.2f} | {rs[0]['log_z']:.6f} | "
                f"{max(abs(r['log_z'] - ref_z) for r in rs):.1e} | {rs[0]['load_avg']:.2f} |"
            )
    speed = {}
    for loaded in (False, True):
        t1 = np.median([r["wall"] for r in rows if r["loaded"] == loaded and r["blas_threads"] == 1])
        tn = np.median([r["wall"] for r in rows if r["loaded"] == loaded and r["blas_threads"] is None])
        speed[loaded] = tn / t1
    return "\n".join([
        "`pmz.evidence(linear_regression(n_obs=1000, n_coef=10).model, method=\"ais\", random_seed=0)` (AIS defaults: "
        "512 paths, 600 temperatures; the stack's default backend) with `blas_threads=1` (pmz's default: BLAS "
        "limited to one thread inside the call) and `blas_threads=None` (OpenBLAS at its own default, "
        f"{', '.join(map(str, data['default_blas_threads']))} threads here), {args.thread_repeats} runs each, "
        "interleaved, on one model object compiled by an untimed warm-up call; without and with a busy process "
        "(a pure-Python `while True: pass` loop started for the duration). Wall time = `time.perf_counter` "
        "around the call, CPU = the process's CPU time.",
        "",
        *lines,
        "",
        f"Median wall time, blas_threads=None / blas_threads=1: {speed[False]:.1f}x without the busy loop, "
        f"{speed[True]:.1f}x with it. \"none started\" does not mean an idle machine: other jobs (test suites) "
        "were running, see the load average.",
        "",
        *subsection_notes("threads"),
        f"Command: `{command_line()}` (part threads: {total / 60:.1f} min)  ",
        f"Date: {datetime.date.today().isoformat()}  ",
        f"Machine: {machine_line(versions)}",
    ])


# ------------------------------------------------------------------------------------------------ doc
def stack_heading() -> str:
    pymc_major = metadata.version("pymc").split(".")[0]
    return f"## Both stacks: PyMC {pymc_major} (Python {sys.version_info.major}.{sys.version_info.minor})"


def command_line() -> str:
    argv_shown = ["benchmarks/stacks.py", *sys.argv[1:]]
    return f"{Path(sys.executable)} " + " ".join(shlex.quote(a) for a in argv_shown)


def pmz_revision() -> str:
    """The repository's commit, with "+ local changes" when pmz/ differs from it (empty outside git)."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "pmz"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f" (git {rev}{' + local changes' if dirty else ''})"


def machine_line(v: dict) -> str:
    return (
        f"{v['cpu']}, {v['n_cpu']} cores (shared with other jobs), Python {v['python']}, numpy {v['numpy']}, "
        f"pytensor {v['pytensor']}, PyMC {v['pymc']}, ArviZ {v['arviz']}, numba {v['numba']}, "
        f"pmz {v['pmz']}{pmz_revision()}, C compiler {v['cxx']}, BLAS: {'; '.join(v['blas'])}"
    )


_CURRENT_NOTES: dict[str, list[str]] = {}


def subsection_notes(part: str) -> list[str]:
    return _CURRENT_NOTES.get(part, [])


def _split_section(heading: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The stack section's current subsections (by part) and the hand-written notes kept in each."""
    if not DOC.exists():
        return {}, {}
    lines = DOC.read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == heading), None)
    if start is None:
        return {}, {}
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    by_line = {h: p for p, h in SUBHEADINGS.items()}
    parts, current = {}, None
    for line in lines[start + 1 : end]:
        if line.strip() in by_line:
            current = by_line[line.strip()]
            parts[current] = []
        elif current is not None:
            parts[current].append(line)
    texts = {p: "\n".join(ls).strip("\n") for p, ls in parts.items()}
    notes = {}
    for p, text in texts.items():
        i, j = text.find(NOTES_START), text.find(NOTES_END)
        if 0 <= i < j:
            notes[p] = [*text[i : j + len(NOTES_END)].splitlines(), ""]
    return texts, notes


def write_part(part: str, make_body) -> None:
    """Rewrite subsection ``part`` of this stack's section, keeping the other parts and any notes."""
    heading = stack_heading()
    texts, notes = _split_section(heading)
    _CURRENT_NOTES.clear()
    _CURRENT_NOTES.update(notes)
    texts[part] = make_body().strip("\n")
    intro = (
        "Measured with `benchmarks/stacks.py` run with this stack's interpreter (the other stack has its own "
        "section); one subsection per `--part`, each with its own command, date and versions. See the script's "
        "docstring for exactly what is timed."
    )
    body = [intro, ""]
    for p in PARTS:
        if p in texts:
            body += [SUBHEADINGS[p], "", texts[p], ""]
    update_doc(heading, "\n".join(body))
    log(f"wrote {DOC} ({heading} / {SUBHEADINGS[part]})")


# ------------------------------------------------------------------------------------------------ main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", nargs="+", choices=PARTS, help="which measurements (one or more)")
    parser.add_argument("--write-doc", action="store_true", help=f"write the tables into {DOC.relative_to(ROOT)}")
    parser.add_argument("--seeds", type=int, default=20, help="part smc: seeds per system (0 .. n-1)")
    parser.add_argument("--systems", nargs="+", choices=SMC_SYSTEMS, help="part smc: default all five")
    parser.add_argument("--quick", action="store_true",
                        help=f"part smc: 2 seeds on {', '.join(QUICK_SYSTEMS)} (or --systems), for debugging")
    parser.add_argument("--draws", type=int, default=2000, help="part smc: SMC draws (PyMC's default 2000)")
    parser.add_argument("--models", nargs="+", choices=BACKEND_MODELS, default=list(BACKEND_MODELS),
                        help="part backends: models (the first one also gets the cold-cache run)")
    parser.add_argument("--backends", nargs="+", help="part backends: default NUMBA and CVM where available")
    parser.add_argument("--batch", type=int, default=1024, help="part backends: particles per timed call")
    parser.add_argument("--repeats", type=int, default=15, help="part backends: timed measurements per cell")
    parser.add_argument("--thread-repeats", type=int, default=3, help="part threads: runs per setting")
    parser.add_argument("--shared-cache", action="store_true",
                        help="use the user's PyTensor/Numba caches instead of private ones (cold runs stay private)")
    parser.add_argument("--keep-cache", action="store_true", help="keep the private cache directories")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        worker_main(json.loads(args.worker))
        return
    if not args.part:
        parser.error("--part is required (backends, smc, threads)")
    if args.quick:
        args.seeds = 2
        args.systems = args.systems or list(QUICK_SYSTEMS)
    args.systems = args.systems or list(SMC_SYSTEMS)

    caches = Caches(shared=args.shared_cache, keep=args.keep_cache)
    t_all = time.perf_counter()
    try:
        for part in PARTS:
            if part not in args.part:
                continue
            t0 = time.perf_counter()
            log(f"##### part {part}")
            if part == "backends":
                data, versions = part_backends(args, caches)
                total = time.perf_counter() - t0
                print(f"\n{SUBHEADINGS[part]}\n\n{format_backends(data, args)}\n", flush=True)
                make_body = lambda: backends_body(data, args, versions, total)  # noqa: E731
            elif part == "smc":
                cache = None if args.shared_cache else "smc"
                data = run_worker(dict(kind="smc", systems=args.systems, seeds=args.seeds, draws=args.draws),
                                  caches.env(cache))
                versions = data["versions"]
                rows = summarize_smc(data)
                total = time.perf_counter() - t0
                print(f"\n{SUBHEADINGS[part]}\n\n{format_smc(rows)}\n", flush=True)
                make_body = lambda: smc_body(data, rows, args, versions, total)  # noqa: E731
            else:
                cache = None if args.shared_cache else "threads"
                data = run_worker(dict(kind="threads", repeats=args.thread_repeats), caches.env(cache))
                versions = data["versions"]
                total = time.perf_counter() - t0
                body = threads_body(data, args, versions, total)
                print(f"\n{SUBHEADINGS[part]}\n\n{body}\n", flush=True)
                make_body = lambda: threads_body(data, args, versions, total)  # noqa: E731
            log(f"(part {part}: {total / 60:.1f} min)")
            if args.write_doc:
                write_part(part, make_body)
    finally:
        caches.cleanup()
    log(f"(total {(time.perf_counter() - t_all) / 60:.1f} min)")


if __name__ == "__main__":
    main()
