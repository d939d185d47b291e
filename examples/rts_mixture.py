"""The 10-D two-Gaussian mixture of Carlson et al. (ICML 2016, section 4.1): RMSE of RTS, MBAR, TI (Riemann,
trapezoid, corrected) and TI-RB against the number of samples, over repeated runs.

    python examples/rts_mixture.py                # 10 repeats, 200..2000 sweeps of 100 chains (about 10 min)
    python examples/rts_mixture.py --quick         # 300 sweeps (about 10 s per repeat)
    python examples/rts_mixture.py --write-doc     # also writes docs/rts_mixture.md

System: ``pmz.systems.gaussian_mixture()``: f0 = N(0, 5^2 I_10), f1 = exp(5) [N(m, I) + N(-m, I)] / 2 with the two
means 10 apart, so log Z = 5 exactly; the geometric path f0^(1-b) f1^b. One ``pmz.evidence(..., method="mbar")``
run per repeat and sample size gives every estimator from the same simulated-tempering run (100 chains, 51 levels,
b_k = (k/50)^4, HMC with 3 leapfrog steps per sweep, pilot-tuned per level, initial iterations from the pilot's
guess): the result holds MBAR itself and, in its diagnostics, RTS and every TI rule.
"""

import argparse
import time
from pathlib import Path

import numpy as np

import pmz
from pmz.systems import gaussian_mixture

ESTIMATORS = {
    "RTS": "rts",
    "MBAR": None,
    "TI Riemann": "ti_riemann",
    "TI trapezoid": "ti_trapezoid",
    "TI corrected": "ti_corrected",
    "TI-RB trapezoid": "ti_rb_trapezoid",
    "TI-RB corrected": "ti_rb_corrected",
}
N_CHAINS = 100


def run(model, n_sweeps, seed):
    res = pmz.evidence(model, method="mbar", random_seed=seed, progressbar=False, n_sweeps=n_sweeps, n_chains=N_CHAINS)
    d = res.estimates
    values = {name: (res.log_z if key is None else d.loc[key, "log_z"]) for name, key in ESTIMATORS.items()}
    ses = {"RTS": d.loc["rts", "log_z_se"], "MBAR": res.log_z_se}
    return values, ses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args(argv)
    sweeps = (300,) if args.quick else (200, 500, 1000, 2000)
    system = gaussian_mixture()
    truth = system.log_z
    t0 = time.perf_counter()
    rows = []
    for n_sweeps in sweeps:
        runs = [run(system.model, n_sweeps, seed) for seed in range(args.repeats)]
        values = {name: np.array([r[0][name] for r in runs]) for name in ESTIMATORS}
        ses = {name: float(np.mean([r[1][name] for r in runs])) for name in ("RTS", "MBAR")}
        rows.append((n_sweeps, values, ses))
    elapsed = time.perf_counter() - t0

    header = "| samples (100 chains x sweeps) | " + " | ".join(ESTIMATORS) + " |"
    lines = [header, "| ---: |" + " ---: |" * len(ESTIMATORS)]
    for n_sweeps, values, _ in rows:
        rmse = [np.sqrt(np.mean((values[name] - truth) ** 2)) for name in ESTIMATORS]
        lines.append(f"| {N_CHAINS * n_sweeps} | " + " | ".join(f"{r:.3f}" for r in rmse) + " |")
    bias_lines = ["| samples | " + " | ".join(ESTIMATORS) + " | mean reported se (RTS / MBAR) |"]
    bias_lines.append("| ---: |" + " ---: |" * (len(ESTIMATORS) + 1))
    for n_sweeps, values, ses in rows:
        bias = [np.mean(values[name]) - truth for name in ESTIMATORS]
        bias_lines.append(
            f"| {N_CHAINS * n_sweeps} | "
            + " | ".join(f"{b:+.3f}" for b in bias)
            + f" | {ses['RTS']:.3f} / {ses['MBAR']:.3f} |"
        )
    table, bias_table = "\n".join(lines), "\n".join(bias_lines)
    print(f"10-D two-Gaussian mixture, log Z = {truth}; RMSE over {args.repeats} repeats")
    print(table)
    print("mean error (bias):")
    print(bias_table)
    print(f"{elapsed:.0f} s")
    if args.write_doc:
        doc = Path(__file__).resolve().parents[1] / "docs" / "rts_mixture.md"
        doc.write_text(_doc_text(table, bias_table, args.repeats, elapsed))
        print(f"written to {doc}")
    return truth, rows


def _doc_text(table, bias_table, repeats, elapsed):
    return f"""# RTS section 4.1 analogue: the 10-D two-Gaussian mixture

`pmz.systems.gaussian_mixture()`: base f0 = N(0, 5^2 I_10), target f1 = exp(5) [N(m, I) + N(-m, I)] / 2 with
|2m| = 10, so log Z = 5 exactly and the two modes are 11.8 nats of barrier apart at b = 1. One simulated-tempering
run (`pmz.evidence(model, method="mbar")`: 100 chains, 51 levels b_k = (k/50)^4, one HMC step of 3 leapfrog steps
per sweep, per-level step sizes from a pilot, the pilot's log Z curve as the first guess, then RTS initial
iterations) gives every estimator at once.

RMSE against the exact log Z over {repeats} repeats:

{table}

Mean error (bias) and the mean reported standard errors:

{bias_table}

Reading the tables, against the paper's section 4.1:

* RTS and MBAR are equally accurate at every sample size (RMSE 0.05-0.06 at 10^5-2 x 10^5 samples), as the paper
  reports; RTS needs O(K) memory, MBAR O(N K) and a Newton solve.
* TI with the right Riemann sum is biased by +0.6 at 51 levels whatever the sample size: the discretisation error
  the paper shows. The trapezoid rule is biased by about -0.02 more than RTS; the corrected trapezoid removes it.
* TI-RB tracks RTS (identical to three decimals with the correction): the Rao-Blackwellised weights
  q(k | x) are the derivative of the RTS curve's mixture estimate of Z(b) at each level, so integrating them with a
  high-order rule reproduces RTS up to the discretisation error.
* The reported standard errors (autocorrelation-aware) match the RMSE from about 5 x 10^4 samples on. All
  estimators share a small negative bias (-0.02 to -0.06, 1-2 se of the 10-run mean) at the shortest runs: a
  chain needs tens of sweeps to walk the ladder, and the shortest runs are only a few round trips long.

Time: {elapsed:.0f} s on 2 cores. Reproduce: `python examples/rts_mixture.py --write-doc`.
"""


if __name__ == "__main__":
    main()
