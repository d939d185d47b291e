"""Batched (Blockwise) nodes under each backend: pmz's C-backend rewrites vs what Numba compiles itself.

Batching a model turns a triangular solve (MvNormal with a Cholesky factor, LKJ) or a discrete variable used as an
index (``mu[z]``) into a ``Blockwise`` node. PyTensor's C backend runs such a node as a Python loop over the batch,
so pmz rewrites it at compile time into one NumPy call over the whole batch (``pmz.model.linalg``,
``pmz.model.indexing``). PyTensor 3's default Numba backend compiles the loop itself. This script measures, for
two models that contain such nodes, three ways of compiling pmz's batched log density + gradient:

* ``numba``: the Numba backend as pmz uses it (no rewrite; pmz's default on PyTensor 3);
* ``c + rewrite``: the C backend with pmz's rewrites (pmz's default on PyTensor 2);
* ``numba + rewrite``: the Numba backend with pmz's rewrites (the rewritten ops then run in Numba's object mode).

Models: an LKJ model (``pm.LKJCholeskyCov`` for 3 dimensions, ``pm.MvNormal`` with 20 observations) and a
three-component mixture with one ``pm.Categorical`` label per observation (200 observations; log density only,
the labels are discrete). Each (model, way) runs in a fresh subprocess: ``compile + first call`` is the first
evaluation of 1024 particles (graph lowering and JIT included, on this machine's warm or cold disk cache, as
stated), ``us/particle`` the median of 7 timed evaluations of 1024 particles after it, BLAS limited to one thread.

Usage::

    python benchmarks/blockwise_backends.py               # print the table
    python benchmarks/blockwise_backends.py --write-doc   # also update docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import shlex
import subprocess
import sys
import time

HEADING = "## Blockwise nodes: pmz's C-backend rewrites vs Numba"
WAYS = ("numba", "c + rewrite", "numba + rewrite")
MODELS = ("lkj", "mixture")


def _worker(model_name: str, way: str) -> dict:
    import warnings

    warnings.filterwarnings("ignore")
    import numpy as np
    import pymc as pm
    from pytensor.compile.mode import get_mode

    from pmz.model import CompiledModel
    from pmz.model.linalg import REWRITE_TAG
    from pmz.threads import blas_thread_limit

    rng = np.random.default_rng(1)
    with pm.Model() as model:
        if model_name == "lkj":
            chol, _, _ = pm.LKJCholeskyCov("c", n=3, eta=2.0, sd_dist=pm.Exponential.dist(1.0), compute_corr=True)
            m = pm.Normal("m", 0.0, 1.0, shape=3)
            pm.MvNormal("obs", m, chol=chol, observed=rng.normal(size=(20, 3)))
        else:
            w = pm.Dirichlet("w", np.ones(3))
            mu = pm.Normal("mu", 0.0, 1.0, shape=3)
            z = pm.Categorical("z", p=w, shape=200)
            pm.Normal("y", mu[z], 1.0, observed=rng.normal(size=200))
    mode = {"numba": "NUMBA", "c + rewrite": "CVM", "numba + rewrite": get_mode("NUMBA").including(REWRITE_TAG)}[way]
    cm = CompiledModel(model, mode=mode)
    X = 0.5 * rng.normal(size=(1024, cm.dim))
    if cm.layout.discrete_mask.any():
        X[:, cm.layout.discrete_mask] = rng.integers(0, 3, size=(1024, int(cm.layout.discrete_mask.sum())))
        evaluate = cm.log_densities
    else:
        evaluate = cm.log_densities_and_grads
    with blas_thread_limit(1):
        t0 = time.perf_counter()
        evaluate(X)
        first = time.perf_counter() - t0
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            evaluate(X)
            times.append(time.perf_counter() - t0)
    return {"first": first, "compile_time": cm.compile_time, "us": float(np.median(times)) / 1024 * 1e6}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-doc", action="store_true")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(*args.worker)))
        return
    import pymc
    import pytensor

    started = time.perf_counter()
    rows = []
    for model_name in MODELS:
        for way in WAYS:
            out = subprocess.run(
                [sys.executable, __file__, "--worker", model_name, way], capture_output=True, text=True, check=True
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append((model_name, way, r))
            print(model_name, way, r, flush=True)
    what = {"lkj": "LKJ + MvNormal (log density + gradient)", "mixture": "mixture with Categorical labels (log density)"}
    lines = [
        "| model | way | compile + first call (s) | pmz compile_time (s) | us/particle |",
        "|---|---|---:|---:|---:|",
    ]
    for model_name, way, r in rows:
        lines.append(f"| {what[model_name]} | {way} | {r['first']:.2f} | {r['compile_time']:.2f} | {r['us']:.2f} |")
    table = "\n".join(lines)
    command = "python " + " ".join(shlex.quote(a) for a in ["benchmarks/blockwise_backends.py", *(argv or sys.argv[1:])])
    meta = (
        f"Command: `{command}` ({(time.perf_counter() - started) / 60:.1f} min)  \n"
        f"Date: {datetime.date.today()}  \n"
        f"Python {platform.python_version()}, PyTensor {pytensor.__version__}, PyMC {pymc.__version__}; "
        "disk caches as this machine had them (warm unless this was the first run)"
    )
    print(table)
    print(meta)
    if args.write_doc:
        sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
        from _common import update_doc

        intro = (__doc__.split("Usage::")[0].strip().split("\n\n", 1)[1]).strip()
        update_doc(f"{HEADING} (PyTensor {pytensor.__version__})", f"{intro}\n\n{table}\n\n{meta}\n")


if __name__ == "__main__":
    main()
