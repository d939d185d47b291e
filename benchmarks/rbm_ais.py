"""AIS on the digits RBMs: error versus the number of Gibbs sweeps, for three exact kernels.

System: ``pmz.systems.rbm_digits(20)`` (64 visible, 20 hidden units, trained by CD-10 on the binarised
scikit-learn digits), exact log Z by enumerating the 2^20 hidden states. Base: independent Bernoulli pixels with
the training-set marginals (the "base-rate" model). Path: geometric, ``f0^(1-beta) f1^beta``, linear schedule
``b_k = k / K`` with one sweep per temperature, ``K = 100, 300, 1000, 3000``.

Kernels (``pmz.boltzmann.rbm_gibbs``):

* ``RBMGibbs`` (visible space, hidden units summed out): site-by-site heat bath, one sweep = 64 unit updates;
* ``RBMBlockMH`` (visible space): block Gibbs of the jointly tempered RBM (``h | v``, ``v | h``) as a
  Metropolis-Hastings proposal with the exact acceptance ratio for the geometric path;
* ``RBMBlockGibbs`` (joint space ``(v, h)``, base ``Bern(p0) x uniform``): exact block Gibbs ``h | v``,
  ``v | h`` (the geometric path in joint space is the joint tempering of Salakhutdinov & Murray 2008), AIS
  weights from ``U(v, h)`` without summing out ``h``.

Each (kernel, K) is run with ``--seeds`` seeds of ``--n-paths`` paths (``pmz.runners.ais.run_ais`` +
``pmz.estimators.jarzynski.jarzynski``); the table reports the mean estimate error, RMSE over seeds, the mean
reported standard error, the mean ESS and the mean wall time per run. BLAS is limited to one thread.

``--reference`` instead computes the reference log Z of ``rbm_digits(500)`` (forward AIS with the block-MH and
heat-bath kernels at many temperatures, and reverse AIS from long block-Gibbs chains at beta = 1 for a
stochastic upper bound); see ``docs/_parts/rbm.md``.

Usage::

    python benchmarks/rbm_ais.py --quick               # ~1 minute, prints the table
    python benchmarks/rbm_ais.py --write-doc           # full run (< 10 minutes), updates docs/benchmarks.md
    python benchmarks/rbm_ais.py --reference           # the 500-hidden reference value (long)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")
warnings.filterwarnings("ignore", message=".*ArviZ is undergoing.*")

from _common import cpu_name, update_doc

from pmz.estimators.jarzynski import jarzynski
from pmz.families.schedules import make_schedule
from pmz.families.energy import EnergyFamily
from pmz.runners.ais import run_ais
from pmz.boltzmann.rbm import rbm_digits

HEADING = "## RBM (digits, 20 hidden): AIS error vs sweeps"
KERNELS = [  # (label, space, kernel option of energy_model)
    ("heat bath (visible, RBMGibbs)", "visible", "gibbs"),
    ("block MH (visible, RBMBlockMH)", "visible", "block_mh"),
    ("block Gibbs (joint, RBMBlockGibbs)", "joint", "block_gibbs"),
]


def run_one(truth, K: int, n_paths: int, seed: int, schedule: str = "linear"):
    """One forward AIS run; returns a dict of the estimate, its se, the ESS, wall time and acceptance."""
    family, kernel = EnergyFamily(truth.model), truth.model.kernel
    betas = make_schedule(schedule, K)
    t0 = time.perf_counter()
    record = run_ais(
        family,
        kernel,
        betas,
        [kernel.default_params(family.dim)] * (K + 1),
        n_paths=n_paths,
        rng=np.random.default_rng(seed),
        progressbar=False,
        keep_particles=False,
    )
    seconds = time.perf_counter() - t0
    est = jarzynski(record, n_bootstrap=0)
    return {
        "log_z": est.log_z,
        "se": est.log_z_se,
        "ess": est.diagnostics.ess,
        "time": seconds,
        "mean_log_w": est.diagnostics.mean_log_w,
        "acceptance": float(np.nanmean(record.acceptance)),
    }


def bench(Ks, n_paths: int, seeds, n_hidden: int = 20, log=print):
    """One table row per (kernel, K): ``len(seeds)`` independent runs against the system's log Z."""
    rows = []
    for label, space, kernel in KERNELS:
        truth = rbm_digits(n_hidden, space=space, kernel=kernel)
        for K in Ks:
            runs = [run_one(truth, K, n_paths, 1000 * K + s) for s in seeds]
            err = np.array([r["log_z"] - truth.log_z for r in runs])
            row = {
                "kernel": label,
                "K": K,
                "n_paths": n_paths,
                "exact": truth.log_z,
                "n": len(runs),
                "estimate": float(np.mean([r["log_z"] for r in runs])),
                "bias": float(err.mean()),
                "rmse": float(np.sqrt(np.mean(err**2))),
                "mean_abs": float(np.mean(np.abs(err))),
                "se": float(np.mean([r["se"] for r in runs])),
                "ess": float(np.mean([r["ess"] for r in runs])),
                "time": float(np.mean([r["time"] for r in runs])),
                "lower": float(np.mean([r["mean_log_w"] for r in runs])),
                "acceptance": float(np.mean([r["acceptance"] for r in runs])),
                "se_1s": float(np.mean([r["se"] * np.sqrt(r["time"]) for r in runs])),
            }
            rows.append(row)
            log(
                f"{label:36s} K={K:5d}: error {row['bias']:+.4f} (RMSE {row['rmse']:.4f}, se {row['se']:.4f}), "
                f"ESS {row['ess']:.0f}/{n_paths}, acceptance {row['acceptance']:.2f}, {row['time']:.2f} s/run"
            )
    return rows


def equilibrium_starts(rbm, base_means, n: int, n_sweeps: int, rng, log=print):
    """Approximate draws of the RBM: ``n`` chains of ``n_sweeps`` block-Gibbs sweeps at beta = 1 (an exact kernel
    for f1), started at training images. Prints the chains' mean log f1 along the way (equilibration check)."""
    from pmz.boltzmann.rbm_gibbs import RBMBlockGibbs
    from pmz.boltzmann.rbm import digits_split

    train, _ = digits_split()
    v = train[rng.integers(0, train.shape[0], n)].copy()
    gibbs = RBMBlockGibbs(rbm.W, rbm.a, rbm.b, base_means)
    checkpoints = {int(n_sweeps * f) for f in (0.01, 0.1, 0.25, 0.5, 0.75, 1.0)}
    for t in range(1, n_sweeps + 1):
        v, _ = gibbs.sweep(rng, v, 1.0)
        if t in checkpoints:
            f1 = rbm.log_f1(v)
            log(f"    block Gibbs at beta = 1, sweep {t}: mean log f1 = {f1.mean():.3f} +- {f1.std() / np.sqrt(n):.3f}")
    return v


def reference(
    *,
    n_paths: int = 400,
    K_heat: int = 3000,
    K_joint: int = 30000,
    n_start_sweeps: int = 10000,
    seed: int = 2026,
    log=print,
):
    """Reference log Z of ``rbm_digits(500)``: forward AIS (heat bath, visible space; block Gibbs, joint space)
    and reverse AIS (heat bath) from long beta = 1 block-Gibbs chains; prints all numbers."""
    from pmz.boltzmann.rbm import digits_rbm
    from pmz.weights import logsumexp

    rbm, extra = digits_rbm(500)
    rng = np.random.default_rng(seed)
    s_fwd, s_joint, s_chains, s_rev = rng.spawn(4)
    results = {}
    log(f"reference for rbm_digits(500): {n_paths} paths; heat bath K = {K_heat}, joint block Gibbs K = {K_joint}")

    t0 = time.perf_counter()
    truth = rbm_digits(500)
    family, kernel = EnergyFamily(truth.model), truth.model.kernel
    betas = make_schedule("linear", K_heat)
    params = [kernel.default_params(family.dim)] * (K_heat + 1)
    fwd = run_ais(family, kernel, betas, params, n_paths=n_paths, rng=s_fwd, progressbar=False, keep_particles=False)
    est = jarzynski(fwd, rng=np.random.default_rng(0))
    results["forward heat bath"] = est
    log(
        f"  forward heat bath: log Z = {est.log_z:.4f} +- {est.log_z_se:.4f} (bootstrap se "
        f"{est.diagnostics.se_bootstrap:.4f}); lower bound mean log w = {est.diagnostics.mean_log_w:.4f}; "
        f"sd log w = {np.sqrt(est.diagnostics.var_log_w):.3f}; ESS {est.diagnostics.ess:.0f}/{n_paths}; "
        f"{time.perf_counter() - t0:.0f} s"
    )

    t0 = time.perf_counter()
    joint = rbm_digits(500, space="joint")
    jfam, jkernel = EnergyFamily(joint.model), joint.model.kernel
    jbetas = make_schedule("linear", K_joint)
    jrec = run_ais(
        jfam,
        jkernel,
        jbetas,
        [jkernel.default_params(jfam.dim)] * (K_joint + 1),
        n_paths=n_paths,
        rng=s_joint,
        progressbar=False,
        keep_particles=False,
    )
    jest = jarzynski(jrec, rng=np.random.default_rng(0))
    results["forward joint block Gibbs"] = jest
    log(
        f"  forward joint block Gibbs: log Z = {jest.log_z:.4f} +- {jest.log_z_se:.4f} (bootstrap se "
        f"{jest.diagnostics.se_bootstrap:.4f}); lower bound {jest.diagnostics.mean_log_w:.4f}; "
        f"ESS {jest.diagnostics.ess:.0f}/{n_paths}; {time.perf_counter() - t0:.0f} s"
    )

    t0 = time.perf_counter()
    starts = equilibrium_starts(rbm, extra["base_means"], n_paths, n_start_sweeps, s_chains, log=log)
    rev = run_ais(
        family,
        kernel,
        betas,
        params,
        n_paths=n_paths,
        rng=s_rev,
        progressbar=False,
        keep_particles=False,
        direction="reverse",
        starts=starts,
    )
    lw = rev.log_weights
    upper = -float(np.mean(lw))
    raise_ = -(float(logsumexp(lw)) - np.log(lw.size))
    w = np.exp(lw - lw.max())
    raise_se = float(np.sqrt(np.var(w, ddof=1) / lw.size) / np.mean(w))
    log(
        f"  reverse heat bath from {n_start_sweeps} block-Gibbs sweeps: upper bound -mean log w_r = {upper:.4f} "
        f"(+- {np.std(lw, ddof=1) / np.sqrt(lw.size):.4f}); RAISE log Z = {raise_:.4f} +- {raise_se:.4f}; "
        f"{time.perf_counter() - t0:.0f} s"
    )
    gap = upper - est.diagnostics.mean_log_w
    log(f"  sandwich: {est.diagnostics.mean_log_w:.4f} <= log Z <= {upper:.4f} (gap {gap:.4f})")
    return results


def format_table(rows, truth_label: str = "exact") -> str:
    lines = [
        (
            f"| kernel | K (sweeps) | mean estimate | mean error vs {truth_label} | RMSE | mean reported se | "
            "se x sqrt(time) | mean lower bound | ESS / paths | acceptance | wall time / run (s) |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        rmse = f"{r['rmse']:.4f}" if r["n"] > 1 else "--"
        lines.append(
            f"| {r['kernel']} | {r['K']} | {r['estimate']:.4f} | {r['bias']:+.4f} | {rmse} | {r['se']:.4f} | "
            f"{r['se_1s']:.4f} | {r['lower']:.3f} | {r['ess']:.0f} / {r['n_paths']} | {r['acceptance']:.2f} | "
            f"{r['time']:.2f} |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="K = 100, 300, 1000; 2 seeds of 200 paths (~1 min)")
    parser.add_argument("--seeds", type=int, default=5, help="runs per (kernel, K)")
    parser.add_argument("--n-paths", type=int, default=500)
    parser.add_argument("--write-doc", action="store_true", help="write the table into docs/benchmarks.md")
    parser.add_argument("--reference", action="store_true", help="compute the 500-hidden reference log Z")
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--raw", help="write the table rows to this JSON file")
    args = parser.parse_args(argv)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    from threadpoolctl import threadpool_limits

    if args.reference:
        with threadpool_limits(limits=args.blas_threads, user_api="blas"):
            reference(log=log)
        return

    Ks = [100, 300, 1000] if args.quick else [100, 300, 1000, 3000]
    if args.quick:
        args.seeds, args.n_paths = 2, 200
    t0 = time.perf_counter()
    with threadpool_limits(limits=args.blas_threads, user_api="blas"):
        rows = bench(Ks, args.n_paths, range(args.seeds), log=log)
        rows500 = [] if args.quick else bench(H500_TEMPS, H500_PATHS, range(1), n_hidden=500, log=log)
    total = time.perf_counter() - t0
    table = format_table(rows)
    table500 = format_table(rows500, "reference") if rows500 else ""
    print(table, "", table500, sep="\n")
    if args.raw:
        with open(args.raw, "w") as fh:
            json.dump({"h20": rows, "h500": rows500}, fh, indent=1)
    log(f"(total {total / 60:.1f} min)")
    if args.write_doc:
        command = "python " + " ".join(shlex.quote(a) for a in ["benchmarks/rbm_ais.py", *sys.argv[1:]])
        update_doc(HEADING, doc_body(rows, table, table500, args, command, total, rows500))
        log("wrote docs/benchmarks.md")


H500_TEMPS = [100, 300, 1000]
H500_PATHS = 100


def observations(rows, rows500) -> list[str]:
    """Data-driven one-liners: efficiency per second of compute, cost per sweep, degenerate weights."""
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    eff = {k: float(np.median([r["se_1s"] for r in rows if r["kernel"] == k])) for k in kernels}
    sweep = {k: float(np.median([r["time"] / r["K"] for r in rows if r["kernel"] == k])) for k in kernels}
    best = min(eff, key=eff.get)
    lines = [
        "Reading (computed from the tables):",
        "",
        "* 20 hidden: median se x sqrt(time) over K: "
        + ", ".join(f"{k.split(' (')[0]} {eff[k]:.4f}" for k in kernels)
        + f"; most efficient per second: **{best.split(' (')[0]}**. Time per sweep of {rows[0]['n_paths']} paths: "
        + ", ".join(f"{k.split(' (')[0]} {1000 * sweep[k]:.2f} ms" for k in kernels)
        + ".",
    ]
    if rows500:
        bad = [r for r in rows500 if r["ess"] < 0.1 * r["n_paths"]]
        good = [r for r in rows500 if r["ess"] >= 0.1 * r["n_paths"]]
        lines.append(
            "* 500 hidden: "
            + (
                "ESS below 10% of the paths (pmz warns; estimate and se unreliable) for "
                + ", ".join(f"{r['kernel'].split(' (')[0]} K = {r['K']}" for r in bad)
                if bad
                else "no run had ESS below 10% of the paths"
            )
            + "; within 4 se of the reference: "
            + (
                ", ".join(
                    f"{r['kernel'].split(' (')[0]} K = {r['K']}" for r in good if abs(r["bias"]) < 4 * r["se"] + 0.02
                )
                or "none"
            )
            + ". Block-MH acceptance drops to "
            + f"{min(r['acceptance'] for r in rows500 if 'MH' in r['kernel']):.2f} on average over the path."
        )
    return lines


def doc_body(rows, table, table500, args, command, total, rows500=()) -> str:
    exact = rows[0]["exact"]
    parts = [
        (
            f"`pmz.systems.rbm_digits(20)`: a 64 x 20 binary RBM trained by CD-10 on the binarised digits; exact "
            f"log Z = {exact:.4f} (enumeration of the 2^20 hidden states). Forward AIS from the base-rate model "
            "(independent Bernoulli pixels with the training marginals) along the geometric path, linear schedule "
            f"with K temperatures and one sweep per temperature, {args.n_paths} paths per run, {args.seeds} runs "
            "(seeds) per row; `pmz.runners.ais.run_ais` + `pmz.estimators.jarzynski.jarzynski`."
        ),
        "",
        (
            "* **heat bath**: site-by-site Gibbs on the 64 visible units with the hidden units summed out "
            "(one sweep = 64 conditional draws);"
        ),
        (
            "* **block MH**: block Gibbs `h | v`, `v | h` of the jointly tempered RBM as a Metropolis-Hastings "
            "proposal, corrected to the geometric visible path by the exact acceptance ratio;"
        ),
        (
            "* **block Gibbs (joint)**: the same two block draws as an exact Gibbs sampler on the joint state "
            "`(v, h)` (84 binary units), weights from `U(v, h)` (hidden units not summed out)."
        ),
        "",
        (
            "mean error = mean(estimate - exact) over the runs; RMSE over the runs; mean reported se = the "
            "delta-method se of `jarzynski`; se x sqrt(time) = the se one second of compute would give (lower is "
            "more efficient); mean lower bound = mean log weight (a stochastic lower bound on log Z); ESS = Kish "
            "effective sample size of the final weights; acceptance = mean MH acceptance over the path; wall time "
            "per run (`time.perf_counter`, BLAS limited to 1 thread)."
        ),
        "",
        table,
    ]
    if table500:
        parts += [
            "",
            (
                f"The same kernels on `rbm_digits(500)` (64 x 500, PCD-1), {H500_PATHS} paths, one run per row, "
                "against the reference log Z = 126.7952 +- 0.0070 (`pmz.boltzmann.rbm.RBM_DIGITS_H500_LOG_Z`, from "
                "`python benchmarks/rbm_ais.py --reference`: forward heat-bath AIS with K = 3000, checked by joint "
                "block-Gibbs AIS with K = 30000 and by reverse AIS from long beta = 1 chains):"
            ),
            "",
            table500,
        ]
    parts += [
        "",
        *observations(rows, list(rows500)),
        "",
        f"Command: `{command}` (total {total / 60:.1f} min)  ",
        f"Date: {datetime.date.today().isoformat()}  ",
        (
            f"Machine: {cpu_name()}, {os.cpu_count()} cores (shared with other work), Python "
            f"{platform.python_version()}, numpy {np.__version__}"
        ),
    ]
    return "\n".join(parts)


if __name__ == "__main__":
    main()
