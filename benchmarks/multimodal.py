"""pmz's default evidence method against peers on the hard posteriors of ``multimodal_models.py``.

Multimodal (label switching, bumps, eggbox), thin curved (Gaussian shells), funnel-shaped and discrete models, each
with a trusted log Z (see that module). For every model (``--models a,b`` for a subset) and seeds 0 .. ``--seeds``-1
the tools run interleaved per seed in this one process (pmz, sample_smc, dynesty, nautilus, then the next model),
each on a freshly built model and timed whole with ``time.perf_counter``, compilation included (model construction
excluded); no thread pinning here (``pmz.evidence`` applies its own BLAS policy, the peers run with the process's):

* ``pmz``: ``pmz.evidence(model, random_seed=seed, progressbar=False)`` (or ``--method NAME``); recorded: log Z,
  ``res.log_z_se``, ``res.reliable``, wall time and the route of the default method
  (``res.evidence_stats.attrs["route"]``: bridge, path, modes or tempered);
* ``sample_smc``: ``pm.sample_smc(draws=2000, chains=1, random_seed=seed, progressbar=False,
  compute_convergence_checks=False)``, log Z = the last stage's ``log_marginal_likelihood``
  (``_common.smc_log_marginal_likelihood``; no se);
* ``dynesty``: static nested sampling, ``dynesty.NestedSampler(..., nlive=500)``, ``run_nested(dlogz=0.01)``
  (its default bounding and sampling methods), log Z and its ``logzerr``;
* ``nautilus``: ``nautilus.Sampler(prior, likelihood, n_dim, seed=seed)`` with its default settings, ``run()``,
  ``sampler.log_z`` (no se).

The nested samplers get PyMC's own compiled log-likelihood (``model.datalogp``: the observed variables and the
``pm.Potential`` terms; each value variable replaced by its transform's forward map of the constrained value, so
PyMC's own graph computes it) of the free variables mapped from the unit cube through the prior's inverse CDF: each
free variable in the model's order, its distribution's ppf with its parameters evaluated at the variables already
mapped (independent priors, and also hierarchical ones such as the funnel's ``x ~ N(0, exp(v/2))``). Only for models
whose free variables are all continuous with Normal, Uniform or HalfNormal priors (value transforms: none, log,
interval, or ordered on iid components -- there the cube is mapped to sorted iid draws, whose density is K! times
the model's, so log Z gets log(1/K!) added: PyMC's ordered density is not renormalised); for the other models the
run is recorded as "not applicable". A tool that cannot be imported is recorded as "not installed" (install both
with ``pip install -e .[bench]``, the ``bench`` extra of pyproject.toml: ``dynesty>=2``, ``nautilus-sampler>=1``),
and run once it can be imported. Every peer run (sample_smc included) is capped at ``--timeout`` seconds (default
600; ``signal.SIGALRM`` in this process) and recorded as "did not finish in 600 s".

Every run is appended as one JSON line to ``benchmarks/results/multimodal.jsonl`` (``--cache``), keyed by model,
tool, method, seed and PyMC version, so an interrupted benchmark resumes where it stopped; ``--report`` prints the
tables from the cache alone. Per model the report gives each tool's RMSE against the stored truth (over the runs
that finished) and mean wall time, the efficiency (MSE_peer x time_peer) / (MSE_pmz x time_pmz) against each peer
(> 1: pmz reaches a given accuracy in less time, assuming error variance ~ 1 / time), pmz's 95% coverage (fraction of
runs with |error| <= 1.96 se), the largest |error| / se among the runs pmz flagged reliable, the fraction flagged
unreliable and which routes ran; worst efficiency first, with the geometric mean and the worst case per peer on top.

Usage::

    python benchmarks/multimodal.py --seeds 10                          # all models (hours; resumable)
    python benchmarks/multimodal.py --seeds 1 --models bumps,poisson_1000 --cache /tmp/mm.jsonl
    python benchmarks/multimodal.py --report --write-doc                # tables from the cache, into docs
    python benchmarks/multimodal.py --check-truths                      # recompute the truths
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import inspect
import io
import json
import logging
import math
import os
import platform
import shlex
import signal
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
from scipy import special

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
from multimodal_models import MODELS  # noqa: E402

import pymc as pm  # noqa: E402
import pytensor  # noqa: E402

import pmz  # noqa: E402

CACHE = Path(__file__).resolve().parent / "results" / "multimodal.jsonl"
SMC_DRAWS = 2000
DYNESTY = {"nlive": 500, "dlogz": 0.01}
TIMEOUT = 600.0
DEFAULT_METHOD = inspect.signature(pmz.evidence).parameters["method"].default
TOOLS = ("pmz", "sample_smc", "dynesty", "nautilus")
PEERS = TOOLS[1:]
PEER_LABEL = {"sample_smc": "SMC", "dynesty": "dynesty", "nautilus": "nautilus"}
MODULE_OF = {"dynesty": "dynesty", "nautilus": "nautilus"}  # tool -> module that must be importable

HEADING = "## Hard posteriors: default evidence vs pm.sample_smc, dynesty, nautilus"


# ------------------------------------------------------------------------------------------------ prior transform
class NotApplicable(Exception):
    """The model's free variables cannot be mapped from the unit cube by inverse CDFs (see the module docstring)."""


def _ppf_normal(u, mu, sigma):
    return mu + sigma * special.ndtri(u)


def _ppf_uniform(u, lower, upper):
    return lower + (upper - lower) * u


def _ppf_halfnormal(u, loc, scale):
    return loc + scale * special.ndtri(0.5 + 0.5 * u)


_PPF = {"NormalRV": _ppf_normal, "UniformRV": _ppf_uniform, "HalfNormalRV": _ppf_halfnormal}
_NATURAL_TRANSFORMS = {"NoneType", "LogTransform", "IntervalTransform", "Interval"}


class NestedProblem:
    """A PyMC model as a nested-sampling problem: ``prior_transform(u)``, ``log_likelihood(theta)``, ``n_dim`` and
    ``log_prior_mass`` (log Z of the model = ``log_prior_mass`` + the nested sampler's log Z).

    Raises :class:`NotApplicable` for discrete free variables, other priors or other value transforms.
    """

    def __init__(self, model):
        from pytensor.graph.replace import clone_replace, graph_replace

        try:
            from pytensor.graph.traversal import ancestors
        except ImportError:  # PyTensor 2
            from pytensor.graph.basic import ancestors

        free = list(model.free_RVs)
        discrete = [rv.name for rv in free if rv.dtype.startswith(("int", "uint", "bool"))]
        if discrete:
            raise NotApplicable(f"discrete free variables {discrete}")
        self.specs, start, self.log_prior_mass = [], 0, 0.0
        placeholders = {rv: rv.type() for rv in free}
        for rv in free:
            op = type(rv.owner.op).__name__
            if op not in _PPF:
                raise NotApplicable(f"prior of {rv.name} is {op} (no inverse CDF here)")
            transform = type(model.rvs_to_transforms.get(rv)).__name__
            ordered = transform == "Ordered"
            if transform not in _NATURAL_TRANSFORMS and not ordered:
                raise NotApplicable(f"value transform {transform} on {rv.name}")
            params = list(rv.owner.op.dist_params(rv.owner))
            parents = [p for p in free if p in set(ancestors(params))]
            replaced = clone_replace(params, {p: placeholders[p] for p in parents})
            fn = pytensor.function([placeholders[p] for p in parents], replaced, on_unused_input="ignore")
            shape = tuple(int(s) for s in rv.shape.eval())
            const = None if parents else [np.asarray(v, dtype=np.float64) for v in fn()]
            if ordered:
                if parents or not all(np.all(np.broadcast_to(p, shape) == np.broadcast_to(p, shape)[..., :1])
                                      for p in const):
                    raise NotApplicable(f"ordered {rv.name} without iid components")
                k = shape[-1]
                self.log_prior_mass -= float(special.gammaln(k + 1)) * int(np.prod(shape[:-1]))
            size = int(np.prod(shape))
            self.specs.append({"name": rv.name, "rv": rv, "ppf": _PPF[op], "fn": fn, "const": const,
                               "parents": [p.name for p in parents], "shape": shape, "ordered": ordered,
                               "slice": slice(start, start + size)})
            start += size
        self.n_dim = start
        # the log-likelihood as a function of the constrained values: each value variable replaced by its
        # transform's forward map of a constrained placeholder (PyMC maps it back with the backward map)
        xs = {rv: rv.type(name=rv.name) for rv in free}
        replace = {}
        for rv in free:
            transform = model.rvs_to_transforms.get(rv)
            replace[model.rvs_to_values[rv]] = (xs[rv] if transform is None
                                                else transform.forward(xs[rv], *rv.owner.inputs))
        loglik = graph_replace(model.datalogp, replace, strict=False)
        loglik = graph_replace(loglik, {rv: xs[rv] for rv in free}, strict=False)  # RVs in transform parameters
        self._loglik = pytensor.function([xs[rv] for rv in free], loglik, on_unused_input="ignore")

    def prior_transform(self, u):
        u = np.asarray(u, dtype=np.float64)
        out = np.empty(self.n_dim)
        values = {}
        for s in self.specs:
            params = s["const"] if s["const"] is not None else [
                np.asarray(v, dtype=np.float64) for v in s["fn"](*[values[p] for p in s["parents"]])]
            x = s["ppf"](u[s["slice"]].reshape(s["shape"]), *params)
            x = np.broadcast_to(x, s["shape"])
            if s["ordered"]:
                x = np.sort(x, axis=-1)
            values[s["name"]] = x
            out[s["slice"]] = x.ravel()
        return out

    def log_likelihood(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        value = float(self._loglik(*[theta[s["slice"]].reshape(s["shape"]) for s in self.specs]))
        return value if math.isfinite(value) else -np.inf


# ------------------------------------------------------------------------------------------------ runs
class _Timeout(BaseException):  # BaseException: not swallowed by a library's `except Exception`
    pass


@contextlib.contextmanager
def _deadline(seconds: float):
    """Raise :class:`_Timeout` in this (main) thread after ``seconds`` of wall time (SIGALRM)."""

    def handler(signum, frame):
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _blank(method_used) -> dict:
    return {"status": "ok", "log_z": math.nan, "se": math.nan, "reliable": None, "route": None, "error": None,
            "method_used": method_used, "warnings": []}


def run_pmz(name: str, seed: int, method: str) -> dict:
    """One ``pmz.evidence`` call on a fresh model; times the call only (compilation included)."""
    out = _blank(None)
    out.update(pmz_run(MODELS[name].build(), seed, None if method == DEFAULT_METHOD else method))
    if out["error"] is not None:
        out["status"] = "error"
    elif not math.isfinite(out["log_z"]):
        out["status"], out["error"] = "error", "non-finite log Z"
    return out


def _smc(model, seed):
    idata = pm.sample_smc(draws=SMC_DRAWS, chains=1, random_seed=seed, progressbar=False, model=model,
                          compute_convergence_checks=False)
    log_z, stages = smc_log_marginal_likelihood(idata)
    return {"log_z": log_z, "stages": stages}


def _dynesty(model, seed):
    import dynesty

    problem = NestedProblem(model)
    sampler = dynesty.NestedSampler(problem.log_likelihood, problem.prior_transform, problem.n_dim,
                                    nlive=DYNESTY["nlive"], rstate=np.random.default_rng(seed))
    sampler.run_nested(dlogz=DYNESTY["dlogz"], print_progress=False)
    res = sampler.results
    return {"log_z": float(res.logz[-1]) + problem.log_prior_mass, "se": float(res.logzerr[-1]),
            "n_like": int(np.sum(res.ncall)), "log_prior_mass": problem.log_prior_mass}


def _nautilus(model, seed):
    import nautilus

    problem = NestedProblem(model)
    sampler = nautilus.Sampler(problem.prior_transform, problem.log_likelihood, n_dim=problem.n_dim, seed=seed)
    sampler.run(verbose=False)
    return {"log_z": float(sampler.log_z) + problem.log_prior_mass, "n_like": int(sampler.n_like),
            "n_eff": float(sampler.n_eff), "log_prior_mass": problem.log_prior_mass}


_PEER_RUN = {"sample_smc": _smc, "dynesty": _dynesty, "nautilus": _nautilus}


def run_peer(tool: str, name: str, seed: int, timeout: float) -> dict:
    """One peer run on a fresh model, capped at ``timeout`` s; times the call only (compilation included)."""
    out = _blank(tool)
    module = MODULE_OF.get(tool)
    if module is not None and importlib.util.find_spec(module) is None:
        out["status"], out["error"], out["wall"] = "not installed", f"{module} not installed", math.nan
        return out
    model = MODELS[name].build()
    sink = io.StringIO()
    t0 = time.perf_counter()
    try:
        with _deadline(timeout), warnings.catch_warnings(), contextlib.redirect_stdout(sink):
            warnings.simplefilter("ignore")
            out.update(_PEER_RUN[tool](model, seed))
        out["wall"] = time.perf_counter() - t0
    except _Timeout:
        out["wall"] = time.perf_counter() - t0
        out["status"], out["error"] = "timeout", f"did not finish in {timeout:.0f} s"
    except NotApplicable as exc:
        out["wall"] = math.nan
        out["status"], out["error"] = "not applicable", f"not applicable: {exc}"[:500]
    except Exception as exc:  # noqa: BLE001 -- a failed run is a result
        out["wall"] = time.perf_counter() - t0
        out["status"], out["error"] = "error", f"{type(exc).__name__}: {exc}"[:500]
    if out["status"] == "ok" and not math.isfinite(out["log_z"]):
        out["status"], out["error"] = "error", "non-finite log Z"
    return out


def _method(tool: str, method: str) -> str:
    return method if tool == "pmz" else tool


def _done(cache: dict, key: tuple) -> bool:
    """A cached run counts as done unless its tool was not installed then and can be imported now."""
    r = cache.get(key)
    if r is None:
        return False
    module = MODULE_OF.get(r["tool"])
    return not (r.get("status") == "not installed" and module and importlib.util.find_spec(module) is not None)


def run_benchmark(names, seeds, method, cache_path: Path, log, tools=TOOLS, rerun=False,
                  timeout=TIMEOUT) -> dict[tuple, dict]:
    cache = load_cache(cache_path)
    if rerun:  # run everything again; the new lines supersede the old ones in the file
        cache = {k: v for k, v in cache.items() if not (k[0] in names and k[3] in seeds and k[4] == pm.__version__)}
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    commit = pmz_commit()
    todo = [(n, s, tool) for s in seeds for n in names for tool in tools
            if not _done(cache, (n, tool, _method(tool, method), s, pm.__version__))]
    total = len(names) * len(seeds) * len(tools)
    log(f"{len(todo)} runs to do ({len(names)} models x {len(seeds)} seeds x {len(tools)} tools, "
        f"{total - len(todo)} cached in {cache_path})")
    for i, (name, seed, tool) in enumerate(todo, 1):
        truth = MODELS[name].truth(pm.__version__)
        r = run_pmz(name, seed, method) if tool == "pmz" else run_peer(tool, name, seed, timeout)
        row = {"model": name, "tool": tool, "method": _method(tool, method), "seed": seed, "pymc": pm.__version__,
               "truth": truth, **r, "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "pmz_commit": commit, "python": platform.python_version()}
        with open(cache_path, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        cache[run_key(row)] = row
        if r["status"] == "ok":
            msg = f"error {r['log_z'] - truth:+.4f}"
            if tool != "sample_smc" and math.isfinite(r["se"]):
                msg += f" (se {r['se']:.4f})"
            if tool == "pmz":
                msg += f", reliable {r['reliable']}, route {r['route']}"
        else:
            msg = r["error"]
        log(f"[{i}/{len(todo)}] {name} seed {seed} {tool}: {msg}, {r['wall']:.1f} s")
    return cache


# ------------------------------------------------------------------------------------------------ report
def _tool_stats(runs: list[dict], truth: float) -> dict:
    ok = [r for r in runs if r.get("status") == "ok"]
    status = Counter(r.get("status", "error") for r in runs)
    err = np.array([r["log_z"] - truth for r in ok])
    timed = [r["wall"] for r in runs if r.get("status") in ("ok", "error", "timeout") and math.isfinite(r["wall"])]
    return {"n": len(runs), "ok": ok, "err": err, "status": status,
            "mse": float(np.mean(err**2)) if ok else math.nan,
            "rmse": math.sqrt(float(np.mean(err**2))) if ok else math.nan,
            "bias": float(err.mean()) if ok else math.nan,
            "time": float(np.mean(timed)) if timed else math.nan}


def summarize(cache: dict, names, seeds, method: str, pymc_version: str, tools=TOOLS) -> list[dict]:
    rows = []
    for name in names:
        truth = MODELS[name].truth(pymc_version)
        stats = {}
        for tool in tools:
            runs = [cache[k] for s in seeds if (k := (name, tool, _method(tool, method), s, pymc_version)) in cache]
            stats[tool] = _tool_stats(runs, truth)
        if not any(st["n"] for st in stats.values()):
            continue
        p = stats.get("pmz")
        exact = _exact(p)
        eff = {}
        for peer in (t for t in tools if t != "pmz"):
            q = stats[peer]
            if exact and q["ok"]:
                eff[peer] = math.inf  # an exact sum (se 0): no accuracy-for-time trade to compare
            elif p is None or not p["ok"] or not q["ok"] or p["mse"] <= 0:
                eff[peer] = math.nan
            else:
                eff[peer] = (q["mse"] * q["time"]) / (p["mse"] * p["time"])
        row = {"model": name, "dim": MODELS[name].dim, "kind": MODELS[name].kind, "truth": truth, "stats": stats,
               "efficiency": eff}
        if p is not None and p["ok"]:
            se = np.array([r["se"] for r in p["ok"]])
            exact_run = (se == 0) & (np.abs(p["err"]) < 1e-8)  # an exact sum: covered, no error to scale
            finite = np.isfinite(se) & ((se > 0) | exact_run)
            covered = (np.abs(p["err"]) <= 1.96 * se) | exact_run
            row["coverage"] = float(np.mean(covered[finite])) if finite.any() else math.nan
            rel = [0.0 if x else abs(e) / s if s > 0 else math.inf
                   for r, e, s, x in zip(p["ok"], p["err"], se, exact_run) if r["reliable"] is True]
            row["max_z_reliable"] = max(rel) if rel else math.nan
            flags = [r["reliable"] for r in p["ok"] if r["reliable"] is not None]
            row["unreliable"] = float(np.mean([f is False for f in flags])) if flags else math.nan
            row["n_flags"] = len(flags)
            row["routes"] = Counter(str(r.get("route")) for r in p["ok"])
            row["commits"] = sorted({str(r.get("pmz_commit")) for r in p["ok"]})
        else:
            row.update(coverage=math.nan, max_z_reliable=math.nan, unreliable=math.nan, n_flags=0, routes=Counter(),
                       commits=[])
        rows.append(row)

    def worst(r):
        known = [e for e in r["efficiency"].values() if not math.isnan(e)]
        return (bool(known), min(known) if known else 0.0)

    rows.sort(key=worst)  # models without any efficiency first, then worst efficiency first
    return rows


def _exact(st) -> bool:
    """Every finished run an exact answer: se 0 and error below 1e-8 (pmz's sum route)."""
    return bool(st and st["ok"] and all(r["se"] == 0 for r in st["ok"]) and np.all(np.abs(st["err"]) < 1e-8))


def _cell_rmse(st: dict) -> str:
    """RMSE over the finished runs, with what happened to the others."""
    if st["n"] == 0:
        return "--"
    st_ = st["status"]
    if st_.get("not applicable", 0) == st["n"]:
        return "n/a"
    if st_.get("not installed", 0) == st["n"]:
        return "not installed"
    text = fmt(st["rmse"], ".4f") if st["ok"] else ""
    notes = []
    if st_.get("timeout"):
        notes.append(f"{st_['timeout']}/{st['n']} DNF")
    if st_.get("error"):
        notes.append(f"{st_['error']}/{st['n']} failed")
    if notes:
        text = (text + " " if text else "") + f"({', '.join(notes)})"
    return text


def _cell_eff(row, peer) -> str:
    e = row["efficiency"].get(peer, math.nan)
    if e == math.inf:
        return "exact"
    if math.isfinite(e):
        return f"{e:.3g}"
    st = row["stats"][peer]
    if row["stats"]["pmz"]["ok"] and st["n"] and st["status"].get("timeout", 0) == st["n"]:
        return "DNF"  # every peer run hit the time limit
    return "--"


def format_report(rows: list[dict], tools=TOOLS) -> str:
    peers = [t for t in tools if t != "pmz"]
    lines = []
    for peer in peers:
        vals = [(r["efficiency"][peer], r["model"]) for r in rows if math.isfinite(r["efficiency"].get(peer, math.nan))
                and r["efficiency"][peer] > 0]
        if not vals:
            lines.append(f"- vs {peer}: no model with runs of both.")
            continue
        eff = np.array([v for v, _ in vals])
        w, wn = min(vals)
        exact = [r["model"] for r in rows if r["efficiency"].get(peer) == math.inf]
        dnf = [r["model"] for r in rows if r["stats"][peer]["status"].get("timeout", 0)]
        lines.append(f"- vs {peer}: efficiency (MSE x time of {peer}) / (MSE x time of pmz) over {eff.size} models: "
                     f"geometric mean **{math.exp(np.mean(np.log(eff))):.2f}**, worst **{w:.3g}** ({wn}); pmz more "
                     f"efficient on {int(np.sum(eff > 1))} of {eff.size}"
                     + (f"; pmz exact (se 0) on: {', '.join(exact)}" if exact else "")
                     + (f"; did not finish in the time limit on: {', '.join(dnf)}" if dnf else "") + ".")
    lines.append("")
    head = ["model", "dim", "kind", "truth log Z", "pmz RMSE", "pmz bias", "pmz time (s)"]
    for peer in peers:
        head += [f"{PEER_LABEL[peer]} RMSE", f"{PEER_LABEL[peer]} time (s)"]
    head += [f"eff. vs {PEER_LABEL[p]}" for p in peers]
    head += ["pmz 95% coverage", "max abs(err)/se, reliable", "unreliable", "pmz routes"]
    lines += ["| " + " | ".join(head) + " |", "|---|---:|---|" + "---:|" * (len(head) - 4) + "---|"]
    for r in rows:
        p = r["stats"]["pmz"]
        unrel = "--" if math.isnan(r["unreliable"]) else f"{r['unreliable']:.0%} of {r['n_flags']}"
        routes = ", ".join(f"{k} {v}" for k, v in sorted(r["routes"].items())) or "--"
        cells = [r["model"], str(r["dim"]), r["kind"], f"{r['truth']:.3f}", _cell_rmse(p), fmt(p["bias"], "+.4f"),
                 fmt(p["time"], ".1f")]
        for peer in peers:
            st = r["stats"][peer]
            cells += [_cell_rmse(st), fmt(st["time"], ".1f") if st["status"].get("ok") or
                      st["status"].get("timeout") else "--"]
        cells += [_cell_eff(r, peer) for peer in peers]
        cells += [fmt(r["coverage"], ".0%"), fmt(r["max_z_reliable"], ".2f"), unrel, routes]
        lines.append("| " + " | ".join(cells) + " |")
    commits = sorted({c for r in rows for c in r["commits"]})
    if commits:
        lines += ["", f"pmz commits of the runs: {', '.join(commits)}."]
    return "\n".join(lines)


def doc_body(args, report: str, method: str, pymc_version: str) -> str:
    command = "python " + " ".join(shlex.quote(a) for a in ["benchmarks/multimodal.py", *sys.argv[1:]])
    cache = CACHE if args.cache is None else Path(args.cache)
    shown = cache.resolve().relative_to(ROOT) if cache.resolve().is_relative_to(ROOT) else cache
    return "\n".join([
        (f"pmz's default method (`pmz.evidence(model, random_seed=seed, progressbar=False)`, method \"{method}\") "
         f"against `pm.sample_smc(draws={SMC_DRAWS}, chains=1)`, dynesty (static, nlive={DYNESTY['nlive']}, "
         f"dlogz={DYNESTY['dlogz']}) and nautilus (default settings) on the hard posteriors of "
         "`benchmarks/multimodal_models.py`: label-switching and ordered Gaussian mixtures, five unequal bumps, "
         "Gaussian shells, the eggbox, Neal's funnel in 10 and 50 dimensions, a change point, a discrete label per "
         "observation, a 4 x 4 Ising model and a Poisson(1000) parameter (truths by quadrature, symmetry, closed "
         "form or enumeration, each checked against PyMC's own density -- see that module). Each run builds the "
         "model afresh and is timed whole (compilation included, model construction excluded), all tools in one "
         "process, interleaved per seed. The nested samplers get PyMC's compiled log-likelihood through an "
         "inverse-CDF prior transform, only where the priors allow (n/a: discrete variables); each peer run is "
         f"capped at {args.timeout:.0f} s (DNF)."),
        "",
        ("Columns: RMSE and bias against the stored truth over the runs that finished; efficiency = (MSE_peer x "
         "time_peer) / (MSE_pmz x time_pmz) with mean wall times (> 1: pmz reaches a given accuracy faster, "
         "assuming error variance ~ 1/time); pmz 95% coverage = fraction of runs with |error| <= 1.96 x reported "
         "se; max abs(err)/se, reliable = the largest |error| / se among runs with `res.reliable` True; "
         "unreliable = fraction of runs with `res.reliable` False; pmz routes = how often each route of the default "
         "method ran. Sorted by pmz's worst efficiency against any peer, worst first."),
        "",
        report,
        "",
        *existing_notes(HEADING),
        f"Command: `{command}` (runs cached in `{shown}`)  ",
        f"Date: {datetime.date.today().isoformat()}  ",
        (f"Machine: {cpu_name()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}, PyMC "
         f"{pymc_version}, pmz {pmz.__version__} ({pmz_commit()}), " + ", ".join(
             f"{m} {_version(m)}" for m in ("dynesty", "nautilus"))),
    ])


def _version(module: str) -> str:
    try:
        from importlib.metadata import version

        return version({"nautilus": "nautilus-sampler"}.get(module, module))
    except Exception:  # noqa: BLE001
        return "not installed"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help=f"comma-separated subset of: {', '.join(MODELS)}")
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0 .. n-1 per model and tool (default 10)")
    parser.add_argument("--method", default=DEFAULT_METHOD, help=f"pmz method (default: pmz's, {DEFAULT_METHOD!r})")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated subset of {', '.join(TOOLS)}")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="wall-time cap of one peer run (s)")
    parser.add_argument("--cache", help=f"JSONL run cache (default {CACHE.relative_to(ROOT)})")
    parser.add_argument("--report", action="store_true", help="only print the tables from the cache (no runs)")
    parser.add_argument("--rerun", action="store_true",
                        help="ignore cached runs of these models / seeds (e.g. after pmz changed) and run them again")
    parser.add_argument("--pymc", default=pm.__version__, help="with --report: PyMC version of the cached runs")
    parser.add_argument("--write-doc", action="store_true", help="write the table into docs/benchmarks.md")
    parser.add_argument("--check-truths", action="store_true",
                        help="recompute the truths of multimodal_models.py and compare, then exit")
    args = parser.parse_args(argv)
    names = args.models.split(",") if args.models else list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(MODELS)}")
    tools = tuple(args.tools.split(","))
    if any(t not in TOOLS for t in tools):
        parser.error(f"tools must be among {', '.join(TOOLS)}")
    tools = tuple(t for t in TOOLS if t in tools)  # report order
    if args.check_truths:
        import multimodal_models

        multimodal_models.main(["--check", "--models", ",".join(names)])
        return
    cache_path = Path(args.cache) if args.cache else CACHE
    seeds = list(range(args.seeds))

    for name in ("pymc", "pmz", "pytensor"):
        logging.getLogger(name).setLevel(logging.ERROR)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    if args.report:
        cache = load_cache(cache_path)
    else:
        t0 = time.perf_counter()
        cache = run_benchmark(names, seeds, args.method, cache_path, log, tools=tools, rerun=args.rerun,
                              timeout=args.timeout)
        log(f"(total {(time.perf_counter() - t0) / 60:.1f} min)")
    report_tools = ("pmz", *(t for t in PEERS))
    rows = summarize(cache, names, seeds, args.method, args.pymc, tools=report_tools)
    if not rows:
        print(f"no cached runs for these models / seeds / method {args.method!r} / PyMC {args.pymc}")
        return
    report = format_report(rows, tools=report_tools)
    print(report)
    if args.write_doc:
        update_doc(HEADING, doc_body(args, report, args.method, args.pymc))
        log("wrote docs/benchmarks.md")


if __name__ == "__main__":
    main()
