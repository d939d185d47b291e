"""Scaling of a chunked ``pmz.evidence`` run over Dask workers: wall time, speed-up, efficiency and bytes per chunk
with 1 and 2 workers (a LocalCluster of processes, one thread each), against the same chunks run in this process;
the model shipped as a PyMC model (cloudpickle) against its compiled functions; the inputs of the cost model of
docs/scaling.md.

Cases (both with ``n_chunks=8``, so that every run computes the same bits):

* ``bar``: BAR on ``pmz.systems.hierarchical_normal()`` (50 parameters, exact log evidence), 8 forward and 8
  reverse chunks;
* ``rts``: RTS on ``pmz.systems.rbm_digits(20)`` (64 visible units, exact log Z), 8 chunks of chains of the long run.

The model is compiled in this process before the timed runs; each executor run starts a fresh cluster, so its wall
time includes the workers' compilation (not the cluster's start, reported apart). The machine's load
(``os.getloadavg``) is printed before and after: on a shared machine the 2-worker figures are only as good as the
cores that were free.

    PYTHONPATH=. python benchmarks/scaling.py                 # both cases, 1 and 2 workers (~10 min on 2 cores)
    PYTHONPATH=. python benchmarks/scaling.py --quick         # small sizes: a smoke run of the script (~2 min)
    PYTHONPATH=. python benchmarks/scaling.py --case bar --workers 1 2 4 --json out.json
    PYTHONPATH=. python benchmarks/scaling.py --shipping-only      # the model against its compiled functions
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import pickle
import sys
import time
import warnings

import numpy as np

import pmz

CASES = {
    "bar": dict(
        system="hierarchical_normal",
        method="bar",
        options=dict(n_paths=2048, n_temps=1000, n_chunks=8),
        quick=dict(n_paths=128, n_temps=40, n_chunks=8),
    ),
    "rts": dict(
        system="rbm_digits",
        method="rts",
        options=dict(n_chains=256, n_sweeps=3000, n_temps=50, n_initial=4, initial_sweeps=50, n_chunks=8),
        quick=dict(n_chains=64, n_sweeps=100, n_temps=20, n_initial=2, initial_sweeps=20, n_chunks=8),
    ),
}
SEED = 2026
ATTRS = ("wall_time", "compile_time", "worker_compile_time", "sampling_time", "chunk_wall_time", "chunk_cpu_time",
         "chunks_total",
         "n_workers", "payload_bytes", "chunk_bytes", "result_bytes")


def build_system(name):
    return pmz.systems.hierarchical_normal() if name == "hierarchical_normal" else pmz.systems.rbm_digits(20)


def _compile_here(model):
    from pmz.methods.options import CommonOptions
    from pmz.methods.setup import compiled_model

    if isinstance(model, pmz.EnergyModel):
        return
    compiled = compiled_model(model, CommonOptions())
    compiled.log_densities_and_grads(np.zeros((2, compiled.dim)))


def _row(label, res, wall, startup=0.0):
    row = {"run": label, "wall": wall, "startup": startup, "log_z": res.log_z, "log_z_se": res.log_z_se}
    row.update({key: res.run_attrs.get(key, 0) for key in ATTRS})
    return row


def run_case(name, workers, quick):
    from dask.distributed import Client, LocalCluster

    case = CASES[name]
    system = build_system(case["system"])
    options = case["quick" if quick else "options"]
    common = dict(method=case["method"], random_seed=SEED, progressbar=False, **options)
    _compile_here(system.model)  # every timed run finds the model compiled in this process (workers compile)
    t0 = time.perf_counter()
    here = pmz.evidence(system.model, **common)
    rows = [_row("no executor", here, time.perf_counter() - t0)]
    print(f"  {name}: no executor {rows[-1]['wall']:.1f} s, log Z {here.log_z:.4f} +/- {here.log_z_se:.4f} "
          f"(exact {system.log_z:.4f})", flush=True)
    for n in workers:
        t0 = time.perf_counter()
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            client.wait_for_workers(n)
            startup = time.perf_counter() - t0
            t1 = time.perf_counter()
            res = pmz.evidence(system.model, executor=client, **common)
            wall = time.perf_counter() - t1
        same = res.log_z == here.log_z and res.log_z_se == here.log_z_se
        rows.append(_row(f"{n} worker{'s' * (n > 1)}", res, wall, startup) | {"same_bits": same})
        print(f"  {name}: {n} worker(s) {wall:.1f} s (cluster start {startup:.1f} s), same bits: {same}", flush=True)
    return {"case": name, "system": case["system"], "exact_log_z": system.log_z, "options": options, "rows": rows}


# --------------------------------------------------------------------------
# shipping: the model (cloudpickle, compiled again) or its compiled functions
# --------------------------------------------------------------------------


def _warm_up():
    import pmz

    return pmz.__version__


def _load_and_evaluate(blob, X):
    """In a fresh process: unpickle, then evaluate the log density and gradient once (compiling if needed)."""
    t0 = time.perf_counter()
    family = pickle.loads(blob)
    t1 = time.perf_counter()
    parts = family.parts(X, grad=True)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, parts.U, parts.grad_U


def shipping():
    import cloudpickle

    from pmz.execution.executors import dumps
    from pmz.methods.options import TwoWayOptions
    from pmz.methods.setup import compiled_model, make_family

    system = pmz.systems.hierarchical_normal()
    family = make_family(compiled_model(system.model, TwoWayOptions()), "prior")
    X = family.sample_start(np.random.default_rng(0), 64)
    reference = family.parts(X, grad=True)
    blobs = {"model (cloudpickle, compiled on arrival)": dumps(family),
             "compiled functions (cloudpickle)": cloudpickle.dumps(family)}
    out = []
    for label, blob in blobs.items():
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
            pool.submit(_warm_up).result()  # the process is up, pmz imported (excluded from the timings)
            load, first_call, U, grad_U = pool.submit(_load_and_evaluate, blob, X).result()
        same = bool(np.array_equal(U, reference.U) and np.array_equal(grad_U, reference.grad_U))
        diff = float(max(np.max(np.abs(U - reference.U)), np.max(np.abs(grad_U - reference.grad_U))))
        out.append({"shipped": label, "bytes": len(blob), "unpickle": load, "first_call": first_call,
                    "same_bits": same, "max_abs_diff": diff})
        print(f"  shipping {label}: {len(blob)} bytes, unpickle {load:.2f} s, first call {first_call:.2f} s, "
              f"same bits {same} (max diff {diff:.1e})", flush=True)
    return out


# --------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------


def table(case):
    rows = case["rows"]
    base = next((r for r in rows if r["run"] == "1 worker"), rows[0])
    lines = [
        "| run | wall (s) | speed-up vs 1 worker | efficiency | client serial (s) | worker compile (s, sum) | "
        "sampling (s, sum) | chunks' CPU / wall | chunks | payload (B) | per chunk to worker (B) | per chunk back (B) "
        "| same bits |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        speed = base["wall"] / r["wall"]
        busy = r["worker_compile_time"] + r["sampling_time"]  # seconds the chunks ran (summed over workers)
        cpu_share = r["chunk_cpu_time"] / busy if busy else float("nan")
        workers = 1 if r["run"] == "no executor" else int(r["run"].split()[0])
        lines.append(
            f"| {r['run']} | {r['wall']:.1f} | {speed:.2f} | {speed / workers:.2f} | "
            f"{r['wall_time'] - r['chunk_wall_time']:.1f} | {r['worker_compile_time']:.1f} | {r['sampling_time']:.1f} "
            f"| {cpu_share:.2f} | {r['chunks_total']} | {int(r['payload_bytes'])} | {r['chunk_bytes']:.0f} | "
            f"{r['result_bytes']:.0f} | "
            f"{r.get('same_bits', '(reference)')} |"
        )
    return "\n".join(lines)


def cost_model(case) -> str:
    """The cost model of docs/scaling.md fitted to the 1-worker run, its prediction for every other run (on free
    cores, and with the share of a core the run's chunks really had), and where adding workers stops paying.

    ``T(W) = S + C_w + ceil(N / W) (t / share + o)``: ``S`` the client's serial time, ``C_w`` one worker's compile,
    ``N`` chunks of ``t`` CPU seconds each, ``share`` the fraction of a core a worker gets, ``o`` the per-chunk
    overhead (scheduling, pickling, moving the chunk's bytes)."""
    rows = {r["run"]: r for r in case["rows"]}
    one = rows.get("1 worker")
    if one is None:
        return "(no 1-worker run: no cost model)"
    n = int(one["chunks_total"])
    S = one["wall_time"] - one["chunk_wall_time"]
    C_w = one["worker_compile_time"]
    busy = one["worker_compile_time"] + one["sampling_time"]
    share1 = one["chunk_cpu_time"] / busy if busy else 1.0
    t = one["sampling_time"] * share1 / n  # CPU seconds of one chunk
    o = max(one["chunk_wall_time"] - C_w - one["sampling_time"], 0.0) / n
    lines = [f"S = {S:.2f} s, C_w = {C_w:.2f} s, N = {n}, t = {t:.2f} CPU s per chunk, o = {1000 * o:.1f} ms "
             f"per chunk (1-worker run, share {share1:.2f})", "",
             "| workers | measured (s) | predicted, free cores (s) | predicted, measured share (s) | share |",
             "| ---: | ---: | ---: | ---: | ---: |"]
    for label, r in rows.items():
        if label == "no executor":
            continue
        w = int(label.split()[0])
        busy = r["worker_compile_time"] + r["sampling_time"]
        share = r["chunk_cpu_time"] / busy if busy else 1.0
        rounds = -(-n // w)
        free = S + C_w + rounds * (t + o)
        shared = S + C_w / share + rounds * (t / share + o)
        lines.append(f"| {w} | {r['wall']:.1f} | {free:.1f} | {shared:.1f} | {share:.2f} |")
    total = n * t
    lines += ["", f"free cores, n_chunks fixed: no gain beyond W = N = {n}; T(inf) = S + C_w + t + o = "
              f"{S + C_w + t + o:.1f} s against T(1) = {S + C_w + n * (t + o):.1f} s",
              f"free cores, n_chunks = 4 W: efficiency falls to 1/2 at W = 1 + C / (S + C_w + 4 o) = "
              f"{1 + total / (S + C_w + 4 * o):.0f} workers (C = N t = {total:.1f} CPU s)"]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", nargs="+", choices=sorted(CASES), default=sorted(CASES))
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--no-shipping", action="store_true", help="skip the model-versus-functions measurement")
    parser.add_argument("--shipping-only", action="store_true", help="only the model-versus-functions measurement")
    parser.add_argument("--json", default=None, help="write the figures to this file")
    parser.add_argument("--analyse", default=None, help="print the tables and cost model of a --json file, run nothing")
    args = parser.parse_args(argv)
    if args.analyse:
        with open(args.analyse) as f:
            out = json.load(f)
        for case in out["cases"]:
            print(f"\n{case['case']} on {case['system']} ({case['options']}):\n\n{table(case)}\n\ncost model:\n")
            print(cost_model(case))
        return
    warnings.filterwarnings("ignore")
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; "
          f"{os.cpu_count()} cores; python {sys.version.split()[0]}", flush=True)
    out = {"load_before": load_before, "cases": [], "shipping": []}
    if not args.no_shipping:
        out["shipping"] = shipping()
    for name in [] if args.shipping_only else args.case:
        out["cases"].append(run_case(name, args.workers, args.quick))
    out["load_after"] = os.getloadavg()
    print(f"load average after: {out['load_after'][0]:.2f} {out['load_after'][1]:.2f} {out['load_after'][2]:.2f}")
    for case in out["cases"]:
        print(f"\n{case['case']} on {case['system']} ({case['options']}):\n")
        print(table(case))
        print("\ncost model:\n")
        print(cost_model(case))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=float)


if __name__ == "__main__":
    main()
