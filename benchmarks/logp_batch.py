"""Per-particle cost of pmz's batched log density + gradient vs PyMC's point-wise functions.

Model: ``pmz.systems.linear_regression(n_obs=1000, n_coef=10)`` (10 free coefficients, 1000 observations).

For each batch size n, three ways of getting the log density and its gradient at n particles are timed:

* ``pymc point-wise``: ``model.compile_logp()`` and ``model.compile_dlogp()``, each called once per particle in
  a Python loop (what a point-wise sampler pays). The particles are converted to PyMC point dicts *before*
  the clock starts, so the conversion is not charged to PyMC.
* ``pmz blocked``: ``CompiledModel(model).log_densities_and_grads(X)`` with the default (cache-sized)
  block size -- the batch is cut into blocks, one compiled call per block.
* ``pmz single call``: ``CompiledModel(model, block_size=n)`` -- one compiled call for the whole batch.

pmz returns more than PyMC here (log prior and log likelihood separately, and both gradients), PyMC the
joint log density and its gradient. Each timing is the median over ``--repeats`` measurements after a
warm-up call; a measurement repeats the batch evaluation enough times to last >= ~50 ms (important for
n = 1) and is divided by the number of particles evaluated. Compilation is excluded for all three.

BLAS is limited to one thread (``--blas-threads``, via threadpoolctl) for all three: on a 2-core machine
where another process occupies a core, multi-threaded OpenBLAS spin-waits and the timings become 5-40x
slower and erratic. The numbers are therefore single-core costs.

Usage::

    python benchmarks/logp_batch.py               # print the table
    python benchmarks/logp_batch.py --write-doc   # also update docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")

import pytensor  # noqa: E402
from _common import DOC, ROOT, cpu_name, time_per_particle, update_doc  # noqa: E402

import pymc as pm  # noqa: E402

from pmz.model import CompiledModel  # noqa: E402
from pmz.systems import linear_regression  # noqa: E402

HEADING = "## Batched log density + gradient vs PyMC point-wise"
BATCHES = (1, 64, 1024, 8192)


def run(batches, repeats: int, seed: int = 0):
    system = linear_regression(n_obs=1000, n_coef=10)
    model = system.model
    rng = np.random.default_rng(seed)

    # PyMC point-wise functions (take a point dict of value variables)
    logp_fn = model.compile_logp()
    dlogp_fn = model.compile_dlogp()

    blocked = CompiledModel(model)
    default_block = blocked.block_size
    X_all = rng.normal(0.0, 1.0, size=(max(batches), blocked.dim))

    # sanity check: the three agree on the joint log density and gradient
    x0 = X_all[:4]
    lp, ll, glp, gll = blocked.log_densities_and_grads(x0)
    ref = np.array([logp_fn(blocked.layout.to_point(x)) for x in x0])
    ref_g = np.array([dlogp_fn(blocked.layout.to_point(x)) for x in x0])
    np.testing.assert_allclose(lp + ll, ref, rtol=1e-9)
    np.testing.assert_allclose(glp + gll, ref_g, rtol=1e-8, atol=1e-8)

    # global warm-up (~1 s): the first measured cell came out 1.5x slower without it (CPU/caches settling)
    t_end = time.perf_counter() + 1.0
    while time.perf_counter() < t_end:
        for x in X_all[:64]:
            p = blocked.layout.to_point(x)
            logp_fn(p)
            dlogp_fn(p)
        blocked.log_densities_and_grads(X_all[:1024])

    rows = []
    for n in batches:
        X = np.ascontiguousarray(X_all[:n])
        points = [blocked.layout.to_point(x) for x in X]  # converted outside the timed region

        def pointwise(points=points):
            for p in points:
                logp_fn(p)
                dlogp_fn(p)

        single = CompiledModel(model, block_size=n)
        single.log_densities_and_grads(X[:1])  # compile outside timing

        (t_pm, t_blk, t_one), cpu = time_per_particle(
            [
                pointwise,
                lambda X=X: blocked.log_densities_and_grads(X),
                lambda X=X: single.log_densities_and_grads(X),
            ],
            n,
            repeats,
        )
        rows.append((n, t_pm, t_blk, t_one, *cpu))
        print(f"  batch {n:5d}: pymc {t_pm * 1e6:8.2f} us  pmz blocked {t_blk * 1e6:8.2f} us  "
              f"pmz single {t_one * 1e6:8.2f} us   (CPU: {cpu[0] * 1e6:.2f} / {cpu[1] * 1e6:.2f} / "
              f"{cpu[2] * 1e6:.2f} us)", file=sys.stderr, flush=True)
    return rows, default_block


def format_table(rows, default_block: int) -> str:
    lines = [
        "| batch | PyMC point-wise (us/particle) | pmz blocked (us/particle) | speed-up | "
        "pmz single call (us/particle) | speed-up |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for n, t_pm, t_blk, t_one, *_ in rows:
        lines.append(
            f"| {n} | {t_pm * 1e6:.1f} | {t_blk * 1e6:.1f} | {t_pm / t_blk:.1f}x | "
            f"{t_one * 1e6:.1f} | {t_pm / t_one:.1f}x |"
        )
    lines.append("")
    lines.append(f"pmz blocked = default block size ({default_block} rows per compiled call for this model); "
                 "single call = `CompiledModel(model, block_size=batch)`. Speed-up = PyMC point-wise time / pmz time.")
    lines.append("")
    lines.append("Same measurements in process CPU time (`time.process_time`, us/particle; less sensitive to other "
                 "load on the machine):")
    lines.append("")
    lines.append("| batch | PyMC point-wise | pmz blocked | speed-up | pmz single call | speed-up |")
    lines.append("|---:|---:|---:|---:|---:|---:|")
    for n, _, _, _, c_pm, c_blk, c_one in rows:
        lines.append(
            f"| {n} | {c_pm * 1e6:.1f} | {c_blk * 1e6:.1f} | {c_pm / c_blk:.1f}x | "
            f"{c_one * 1e6:.1f} | {c_pm / c_one:.1f}x |"
        )
    return "\n".join(lines)


def machine_line() -> str:
    cpu = cpu_name()
    try:
        from threadpoolctl import threadpool_info

        blas = ", ".join(sorted({f"{i['internal_api']} {i['version']}"
                                 for i in threadpool_info() if i.get("user_api") == "blas"}))
    except Exception:  # pragma: no cover - threadpoolctl missing
        blas = "unknown BLAS"
    return (
        f"{cpu}, {os.cpu_count()} cores (another process may have been using one), "
        f"Python {platform.python_version()}, numpy {np.__version__}, pytensor {pytensor.__version__}, "
        f"PyMC {pm.__version__}, numpy BLAS: {blas}; pytensor C backend without a linked BLAS "
        f"(`blas__ldflags` empty: dot products go through numpy)"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, nargs="+", default=list(BATCHES))
    parser.add_argument("--repeats", type=int, default=15, help="measurements per cell (median reported)")
    parser.add_argument("--blas-threads", type=int, default=1, help="BLAS threads (threadpoolctl); default 1")
    parser.add_argument("--write-doc", action="store_true", help=f"write the table into {DOC.relative_to(ROOT)}")
    args = parser.parse_args(argv)

    from threadpoolctl import threadpool_limits

    t0 = time.perf_counter()
    with threadpool_limits(limits=args.blas_threads, user_api="blas"):
        rows, default_block = run(args.batches, args.repeats)
    table = format_table(rows, default_block)
    print(table)
    print(f"(total {time.perf_counter() - t0:.0f} s)", file=sys.stderr)

    if args.write_doc:
        argv_shown = ["benchmarks/logp_batch.py", *sys.argv[1:]]
        command = "python " + " ".join(shlex.quote(a) for a in argv_shown)
        body = "\n".join([
            "Per-particle cost of the log density **and** its gradient on "
            "`pmz.systems.linear_regression(n_obs=1000, n_coef=10)` (dim 10, 1000 observations).",
            "",
            "* **PyMC point-wise**: `model.compile_logp()` and `model.compile_dlogp()`, each called once per particle "
            "in a Python loop, as a point-wise sampler pays (particles converted to point dicts before timing).",
            "* **pmz blocked**: `CompiledModel(model).log_densities_and_grads(X)` (default block size).",
            "* **pmz single call**: `CompiledModel(model, block_size=batch)`, one compiled call for the whole batch.",
            "",
            "pmz returns log prior and log likelihood and both gradients separately; PyMC the joint log density "
            f"and gradient. Median of {args.repeats} measurements (each >= 50 ms; the three methods interleaved) "
            "after a warm-up (`time.perf_counter`), "
            f"compilation excluded. BLAS limited to {args.blas_threads} thread(s) for all columns (with 2 OpenBLAS "
            "threads and a second process on the other core, timings were 5-40x slower and erratic).",
            "",
            table,
            "",
            "PyMC's point-wise cost per particle does not depend on the batch size, so the spread of its column "
            "across rows shows how much other load on the (shared) machine moved the timings; pmz's rows were "
            "measured interleaved with it, so the speed-ups are more stable than the absolute numbers.",
            "",
            f"Command: `{command}`  ",
            f"Date: {datetime.date.today().isoformat()}  ",
            f"Machine: {machine_line()}",
        ])
        update_doc(HEADING, body)
        print(f"wrote {DOC}", file=sys.stderr)


if __name__ == "__main__":
    main()
