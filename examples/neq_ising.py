"""Habeck's 32 x 32 Ising experiment (NEQ, NIPS 2017, section 6): every nonequilibrium estimator vs the exact log Z.

    python examples/neq_ising.py                   # 3 seeds, 1000 + 1000 paths, K = 1000 (about 2 min per seed)
    python examples/neq_ising.py --quick           # 16 x 16, 200 + 200 paths, K = 200 (seconds)
    python examples/neq_ising.py --write-doc       # also writes docs/neq_ising.md

Set-up as in the paper: J = 1 (beta from 0 to 1), log Z relative to the uniform base, a linear schedule with
K = 1000 temperatures and one sweep of single-spin Metropolis updates (1024 spin updates) per temperature;
1000 forward paths from uniform spins and 1000 reverse paths from equilibrium draws at beta = 1. One
``pmz.evidence(..., method="histogram")`` run per seed gives every estimator at once: its diagnostics hold the
forward (AIS) and reverse (RAISE) Jarzynski values, the stochastic bounds and BAR; the histogram estimator's
posterior mean is the result itself. The exact value comes from Kaufman's formula.
"""

import argparse
import time
from pathlib import Path

import numpy as np

import pmz
from pmz.boltzmann import ising

PAPER = {"AIS": 1333.66, "RAISE": 1342.05, "BAR": 1338.05, "histogram": 1338.28, "exact": 1339.27}
ROWS = ("AIS", "RAISE", "lower bound", "upper bound", "BAR", "histogram")


def run_seed(L, n_paths, n_temps, seed):
    system = ising(L, 1.0, kernel="metropolis")
    res = pmz.evidence(
        system.model,
        method="histogram",
        random_seed=seed,
        progressbar=False,
        n_paths=n_paths,
        n_temps=n_temps,
        schedule="linear",
        n_bootstrap=0,
        n_gibbs_draws=1000,
    )
    d = res.evidence_stats
    values = {
        "AIS": float(d["jarzynski_forward"]),
        "RAISE": float(d["jarzynski_reverse"]),
        "lower bound": float(d["lower"]),
        "upper bound": float(d["upper"]),
        "BAR": res.estimates.loc["bar", "log_z"],
        "histogram": res.log_z,
    }
    ses = {"BAR": res.estimates.loc["bar", "log_z_se"], "histogram": res.log_z_se}
    return system.log_z, values, ses, float(d["overlap"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args(argv)
    L, n_paths, n_temps = (16, 200, 200) if args.quick else (32, 1000, 1000)

    t0 = time.perf_counter()
    runs = [run_seed(L, n_paths, n_temps, seed) for seed in range(args.seeds)]
    exact = runs[0][0]
    lines = [
        f"| estimator | pmz, mean over {args.seeds} seeds | spread (sd) | mean reported se | error vs exact |"
        + (" paper (NEQ) |" if L == 32 else ""),
        "| --- | ---: | ---: | ---: | ---: |" + (" ---: |" if L == 32 else ""),
    ]
    for row in ROWS:
        vals = np.array([r[1][row] for r in runs])
        ses = [r[2][row] for r in runs if row in r[2]]
        se = f"{np.mean(ses):.3f}" if ses else "-"
        spread = f"{np.std(vals, ddof=1):.3f}" if len(vals) > 1 else "-"
        paper = f" {PAPER.get(row, float('nan')):.2f} |" if L == 32 and row in PAPER else (" - |" if L == 32 else "")
        lines.append(f"| {row} | {vals.mean():.3f} | {spread} | {se} | {vals.mean() - exact:+.3f} |{paper}")
    lines.append(f"| exact (Kaufman) | {exact:.3f} | | | |" + (f" {PAPER['exact']:.2f} |" if L == 32 else ""))
    overlap = np.mean([r[3] for r in runs])
    gap = np.mean([r[1]["upper bound"] - r[1]["lower bound"] for r in runs])
    elapsed = time.perf_counter() - t0
    table = "\n".join(lines)
    print(
        f"Ising {L} x {L}, J = 1: {n_paths} forward + {n_paths} reverse paths, K = {n_temps} (linear), "
        f"1 Metropolis sweep per temperature; {args.seeds} seeds, {elapsed:.0f} s"
    )
    print(table)
    print(f"mean overlap of forward and reverse work: {overlap:.3f}")
    if args.write_doc:
        doc = Path(__file__).resolve().parents[1] / "docs" / "neq_ising.md"
        doc.write_text(_doc_text(table, L, n_paths, n_temps, args.seeds, elapsed, overlap, gap))
        print(f"written to {doc}")
    return exact, runs


def _doc_text(table, L, n_paths, n_temps, seeds, elapsed, overlap, gap):
    return f"""# NEQ's Ising experiment: every estimator against the exact log Z

Reproduces the {L} x {L} Ising experiment of Habeck, "Model evidence from nonequilibrium simulations" (NIPS 2017):
J = 1 (inverse temperature from 0 to 1), periodic lattice, log Z relative to the uniform base
(`log Z_torus - N log 2`, exact value by Kaufman's formula: 1339.2671), a linear schedule with K = {n_temps}, one
sweep of single-spin Metropolis updates per temperature (`pmz.systems.ising(32, 1.0, kernel="metropolis")`),
{n_paths} forward paths from uniform spins and {n_paths} reverse paths started at equilibrium draws at J = 1
(`model.sample_target`: aligned start with a random global sign, 200 heat-bath sweeps).

{table}

Mean overlap of the forward and reverse work distributions: {overlap:.3f}. Total time {elapsed:.0f} s on 2 cores.

Reading the table. The two-sided estimators (BAR and the histogram estimator, which are the same maximum-likelihood
answer; the histogram column is its Gibbs posterior mean) land on the exact value, within their reported standard
errors, from works whose one-sided estimates are off: AIS is biased low and RAISE high, and the stochastic bounds
bracket the exact value with a gap of {gap:.1f} nats (the hysteresis). The paper's qualitative picture holds. Our
one-sided estimates are closer to the truth than the paper's (AIS 1333.66, RAISE 1342.05); the paper does not
state every detail of its Metropolis sweep (site order, random vs sequential), and a different sweep dissipates
differently, so the one-sided biases need not match.

Reproduce: `python examples/neq_ising.py --write-doc` (about {elapsed / max(seeds, 1):.0f} s per seed).
"""


if __name__ == "__main__":
    main()
