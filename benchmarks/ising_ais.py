"""Lattice benchmarks: Ising kernel throughput, AIS error vs sweeps on the 32 x 32 Ising torus, Potts reference.

Default mode (writes the section "## Ising 32 x 32: AIS error vs sweeps, kernel throughput" of docs/benchmarks.md
with ``--write-doc``):

1. throughput of the lattice kernels on a 32 x 32 torus: wall time of one ``kernel.step`` (one sweep over all
   1024 sites of every path, plus the one batched energy evaluation of the new states that the runner reads),
   median over repeats, for 100 and 1000 paths; spin updates per second = paths x 1024 / time;
2. forward AIS (``pmz.runners.ais.run_ais`` + ``pmz.estimators.jarzynski``) on ``pmz.systems.ising(32, 1.0)``
   (exact log Z = 1339.2671, relative to the uniform base; Habeck 2017): a linear schedule of K temperatures
   with one sweep per temperature, K = 100, 300, 1000, 3000, for the checkerboard heat bath and checkerboard
   Metropolis kernels; estimate, delta-method se, error, ESS and the stochastic lower bound mean(log w).

``--potts-reference`` recomputes the reference log Z of the ten-state 32 x 32 Potts model at J = 2 stored in
``pmz.boltzmann.potts.POTTS_REFERENCE`` (and of the 16 x 16 one), by thermodynamic integration along the ordered
branch (see :func:`ordered_branch_log_z`), after validating the same code on the 32 x 32 Ising model against
Kaufman's exact value; it also runs forward AIS through the first-order transition for comparison. It prints
everything and writes nothing.

Usage::

    python benchmarks/ising_ais.py --quick                 # ~1 min: 200 paths, K <= 1000, one seed
    python benchmarks/ising_ais.py --write-doc             # full run (~8 min), updates docs/benchmarks.md
    python benchmarks/ising_ais.py --potts-reference       # ~5 min, prints the Potts reference values
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
warnings.filterwarnings("ignore", category=FutureWarning)

from _common import DOC, ROOT, cpu_name, update_doc

import pmz
from pmz.estimators.jarzynski import jarzynski
from pmz.families.schedules import make_schedule
from pmz.boltzmann.lattice_gibbs import IsingKernel, PottsKernel
from pmz.families.energy import EnergyFamily
from pmz.model.energy_model import EnergyModel, UniformCategorical, UniformSpins
from pmz.runners.ais import run_ais
from pmz.boltzmann.ising import ising, ising_energy, ising_log_z_exact
from pmz.boltzmann.potts import potts_critical_coupling, potts_energy

HEADING = "## Ising 32 x 32: AIS error vs sweeps, kernel throughput"
L, COUPLING = 32, 1.0


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ throughput
def lattice_family(kind: str, shape=L, q: int = 10, coupling: float = 1.0, method: str = "heat_bath"):
    """(family, kernel) of an Ising (``kind="ising"``) or q-state Potts model on a torus, log Z relative to the
    uniform base as in :mod:`pmz.systems` (``log f1 = -E - N log q``)."""
    rows, cols = (shape, shape) if np.isscalar(shape) else shape
    N = rows * cols
    if kind == "ising":
        model = EnergyModel(
            lambda X: -ising_energy(X, shape, coupling) - N * np.log(2),
            UniformSpins(N),
            kernel=IsingKernel(shape, coupling, method=method),
        )
    else:
        model = EnergyModel(
            lambda X: -potts_energy(X, shape, coupling) - N * np.log(q),
            UniformCategorical(N, q),
            kernel=PottsKernel(shape, q, coupling),
        )
    return EnergyFamily(model), model.kernel


def time_step(kind, method, n_paths, beta, min_time=1.0, seed=0):
    """Median wall and CPU time of one kernel step (one sweep + the energies of the new states) over repeats."""
    family, kernel = lattice_family(kind, method=method, coupling=COUPLING)
    rng = np.random.default_rng(seed)
    state = kernel.init_state(family, family.sample_start(rng, n_paths))
    for _ in range(2):  # warm-up
        state, _ = kernel.step(rng, state, family, beta, None)
    times, cpu_times, total = [], [], 0.0
    while total < min_time or len(times) < 5:
        t0, c0 = time.perf_counter(), time.process_time()
        state, _ = kernel.step(rng, state, family, beta, None)
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
        total += times[-1]
    return float(np.median(times)), float(np.median(cpu_times))


def throughput_table(path_counts) -> tuple[str, list]:
    rows = []
    cases = [("ising", "heat_bath", 0.44), ("ising", "metropolis", 0.44), ("potts", "heat_bath", 1.4)]
    for kind, method, beta in cases:
        for n in path_counts:
            t, c = time_step(kind, method, n, beta)
            rows.append({"kind": kind, "method": method, "n": n, "time": t, "cpu": c})
            log(f"  {kind} {method} {n} paths: {t * 1e3:.2f} ms per step (CPU {c * 1e3:.2f} ms)")
    header = "| model (32 x 32) | kernel | paths | wall ms per step | M spin updates / s (wall) | CPU ms per step | "
    lines = [header + "M spin updates / s (CPU) |", "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        model = "Ising" if r["kind"] == "ising" else "Potts q = 10"
        kernel = {"heat_bath": "checkerboard heat bath", "metropolis": "checkerboard Metropolis"}[r["method"]]
        spins = r["n"] * L * L / 1e6
        lines.append(
            f"| {model} | {kernel} | {r['n']} | {r['time'] * 1e3:.2f} | {spins / r['time']:.1f} | "
            f"{r['cpu'] * 1e3:.2f} | {spins / r['cpu']:.1f} |"
        )
    return "\n".join(lines), rows


# ------------------------------------------------------------------------------------------------ AIS
def ais_run(method, n_temps, n_paths, seed):
    system = ising(L, COUPLING, kernel=method)
    family, kernel = EnergyFamily(system.model), system.model.kernel
    t0, c0 = time.perf_counter(), time.process_time()
    record = run_ais(
        family,
        kernel,
        make_schedule("linear", n_temps),
        [kernel.default_params(family.dim)] * (n_temps + 1),
        n_paths=n_paths,
        rng=np.random.default_rng(seed),
        progressbar=False,
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    est = jarzynski(record, n_bootstrap=0)
    return {
        "method": method,
        "K": n_temps,
        "seed": seed,
        "n_paths": n_paths,
        "log_z": est.log_z,
        "error": est.log_z - system.log_z,
        "se": est.log_z_se,
        "ess": est.diagnostics.ess,
        "lower": est.diagnostics.mean_log_w - system.log_z,
        "wall": wall,
        "cpu": cpu,
    }


def ais_table(temps, n_paths, seeds) -> tuple[str, list]:
    runs = []
    for method in ("heat_bath", "metropolis"):
        for K in temps:
            for seed in seeds:
                r = ais_run(method, K, n_paths, seed)
                runs.append(r)
                log(
                    f"  AIS {method} K={K} seed {seed}: {r['log_z']:.3f} (error {r['error']:+.3f}, se {r['se']:.3f}, "
                    f"ESS {r['ess']:.1f}, mean log w - exact {r['lower']:+.2f}) {r['wall']:.1f} s"
                )
    lines = [
        "| kernel | K (sweeps) | seed | log Z | error | se (delta) | ESS | mean log w - exact | wall (s) | CPU (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        kernel = {"heat_bath": "heat bath", "metropolis": "Metropolis"}[r["method"]]
        lines.append(
            f"| {kernel} | {r['K']} | {r['seed']} | {r['log_z']:.2f} | {r['error']:+.2f} | {r['se']:.2f} | "
            f"{r['ess']:.1f} | {r['lower']:+.2f} | {r['wall']:.1f} | {r['cpu']:.1f} |"
        )
    return "\n".join(lines), runs


# ------------------------------------------------------------------------------------------------ Potts reference
def ordered_branch_log_z(kind, L, q, coupling, *, n_nodes, n_chains, n_burn, n_measure, seed):
    """log Z (relative to the uniform base) deep in the ordered phase, by thermodynamic integration in ``u = e^-J``.

    Write ``B(s)`` for the number of unsatisfied bonds (Potts: neighbours of different colour; Ising: antiparallel
    neighbours, each costing 2 in ``sum s_i s_j``). Then ``log Z_torus(J) = log g + 2NJ + D(J)`` with ``g`` the
    number of ground states (q, or 2 for Ising) and

        D(J) = w ∫_J^∞ E_J'[B] dJ' = w ∫_0^(e^-J) E_u[B] / u du,     w = 1 (Potts), 2 (Ising),

    since ``d log Z_torus / dJ = 2N - w E_J[B]`` and ``D -> 0`` as ``J -> ∞``. The integrand is smooth in
    ``u = e^-J`` (a power series starting at ``u^3``), so ``n_nodes``-point Gauss-Legendre quadrature on
    ``[0, e^-J]`` is accurate. At each node ``n_chains`` independent heat-bath chains start from a ground state
    (one ordered phase; the ``g`` symmetric phases are the factor ``g``), run ``n_burn`` sweeps, then average
    ``B`` over ``n_measure`` sweeps; the standard error comes from the spread of the per-chain means.

    Valid where the ordered phase carries all the weight: far enough above the transition that disordered or
    multi-domain configurations are exponentially suppressed (for q = 10 at J = 2 = 1.4 J_c their log weight is
    hundreds below). Returns ``(log_z, se)``.
    """
    family, kernel = lattice_family(kind, L, q, 1.0)
    N = L * L
    if kind == "ising":
        n_ground, weight, start = 2, 2.0, np.ones((n_chains, N))
        broken = lambda X: (2 * N + ising_energy(X, L)) / 2  # sum s s = 2N - 2B
    else:
        n_ground, weight, start = q, 1.0, np.zeros((n_chains, N))
        broken = lambda X: 2 * N + potts_energy(X, L)  # sum delta = 2N - B
    u_max = np.exp(-coupling)
    t, w = np.polynomial.legendre.leggauss(n_nodes)
    u, w = (t + 1) / 2 * u_max, w * u_max / 2
    rng = np.random.default_rng(seed)
    means, ses = np.empty(n_nodes), np.empty(n_nodes)
    for i, u_i in enumerate(u):
        state = kernel.init_state(family, start)
        for _ in range(n_burn):
            state, _ = kernel.step(rng, state, family, -np.log(u_i), None)
        total = np.zeros(n_chains)
        for _ in range(n_measure):
            state, _ = kernel.step(rng, state, family, -np.log(u_i), None)
            total += broken(state.x)
        chain_means = total / n_measure
        means[i], ses[i] = chain_means.mean(), chain_means.std(ddof=1) / np.sqrt(n_chains)
    excitations = np.sum(w * weight * means / u)
    se = np.sqrt(np.sum((w * weight * ses / u) ** 2))
    log_z = np.log(n_ground) + 2 * N * coupling - N * np.log(n_ground) + excitations
    return float(log_z), float(se)


def potts_low_temperature_series(L, q, coupling):
    """Leading terms of the low-temperature expansion of log Z (relative), per site up to ``u^8``, ``u = e^-J``.

    Polymers = connected sets of flipped sites: one site (4 broken bonds, q-1 colours), a same-colour domino (6),
    a two-colour domino (7), same-colour trominoes and 2 x 2 squares (8), minus the u^8 correction of
    incompatible pairs of single flips (same or adjacent site): ``-(5/2) N (q-1)^2 u^8``. Truncation error at
    J = 2, q = 10, N = 1024 is of order 0.01-0.02 (the u^9 terms).
    """
    N, u = L * L, np.exp(-coupling)
    per_site = (
        (q - 1) * u**4 + 2 * (q - 1) * u**6 + 2 * (q - 1) * (q - 2) * u**7 + (7 * (q - 1) - 2.5 * (q - 1) ** 2) * u**8
    )
    return float(np.log(q) + 2 * N * coupling - N * np.log(q) + N * per_site)


def potts_reference(args):
    settings = {"n_nodes": 20, "n_chains": 32, "n_burn": 100, "n_measure": 500}
    log(f"ordered-branch thermodynamic integration, {settings}")
    log("validation on the 32 x 32 Ising torus against Kaufman's exact log Z:")
    for J in (1.0, 0.6):
        t0 = time.perf_counter()
        lz, se = ordered_branch_log_z("ising", 32, 2, J, seed=100, **settings)
        exact = ising_log_z_exact(32, J)
        log(
            f"  Ising J={J}: {lz:.4f} +- {se:.4f}, exact {exact:.4f}, error {lz - exact:+.4f} "
            f"({(lz - exact) / se:+.1f} se) [{time.perf_counter() - t0:.0f} s]"
        )
    for size, repeats in ((32, args.repeats), (16, 2)):
        log(f"ten-state Potts {size} x {size} at J = 2 (J_c = {potts_critical_coupling(10):.4f}):")
        values = []
        for seed in range(repeats):
            t0 = time.perf_counter()
            lz, se = ordered_branch_log_z("potts", size, 10, 2.0, seed=seed, **settings)
            values.append((lz, se))
            log(f"  repeat {seed}: {lz:.4f} +- {se:.4f} [{time.perf_counter() - t0:.0f} s]")
        lz = np.array([v[0] for v in values])
        se_within = np.sqrt(np.mean([v[1] ** 2 for v in values]))
        spread = lz.std(ddof=1) if lz.size > 1 else np.nan
        log(
            f"  mean {lz.mean():.4f}; spread (sd) over {lz.size} repeats {spread:.4f}; mean within-run se "
            f"{se_within:.4f}; se of the mean {spread / np.sqrt(lz.size):.4f}"
        )
        for nodes in (12, 30):  # the same number of measured sweeps in total
            budget = settings["n_nodes"] * settings["n_measure"]
            lz_q, se_q = ordered_branch_log_z(
                "potts", size, 10, 2.0, seed=50 + nodes, **{**settings, "n_nodes": nodes, "n_measure": budget // nodes}
            )
            log(f"  quadrature check, {nodes} nodes (same number of measured sweeps): {lz_q:.4f} +- {se_q:.4f}")
        log(f"  low-temperature series to u^8: {potts_low_temperature_series(size, 10, 2.0):.4f}")
    log("forward AIS through the first-order transition (32 x 32, q = 10, J = 2, linear schedule, 1 sweep/temp):")
    family, kernel = lattice_family("potts", 32, 10, 2.0)
    for K, n_paths in ((1000, 64), (4000, 64)):
        t0 = time.perf_counter()
        record = run_ais(
            family,
            kernel,
            make_schedule("linear", K),
            [kernel.default_params(family.dim)] * (K + 1),
            n_paths=n_paths,
            rng=np.random.default_rng(K),
            progressbar=False,
        )
        est = jarzynski(record, n_bootstrap=0)
        log(
            f"  K={K}, {n_paths} paths: {est.log_z:.2f} (se {est.log_z_se:.2f}, ESS {est.diagnostics.ess:.1f}, "
            f"mean log w {est.diagnostics.mean_log_w:.2f}) [{time.perf_counter() - t0:.0f} s]"
        )


# ------------------------------------------------------------------------------------------------ main
def machine_line() -> str:
    return (
        f"{cpu_name()}, {os.cpu_count()} cores (other processes may have been running), Python "
        f"{platform.python_version()}, numpy {np.__version__}, pmz {pmz.__version__}"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 paths, K = 100, 300, 1000, one seed (~1 min)")
    parser.add_argument("--paths", type=int, default=1000, help="AIS paths per run (default 1000)")
    parser.add_argument("--seeds", type=int, default=2, help="AIS runs per (kernel, K) (default 2)")
    parser.add_argument("--write-doc", action="store_true", help=f"write the tables into {DOC.relative_to(ROOT)}")
    parser.add_argument("--potts-reference", action="store_true", help="recompute the Potts reference values")
    parser.add_argument("--repeats", type=int, default=6, help="independent repeats of the 32 x 32 Potts reference")
    args = parser.parse_args(argv)

    if args.potts_reference:
        potts_reference(args)
        return

    temps = (100, 300, 1000) if args.quick else (100, 300, 1000, 3000)
    n_paths = 200 if args.quick else args.paths
    seeds = range(1 if args.quick else args.seeds)
    t_start = time.perf_counter()
    log("throughput (32 x 32):")
    throughput, _ = throughput_table((100, 1000))
    log(f"AIS on the 32 x 32 Ising torus at J = {COUPLING}, exact log Z = {ising_log_z_exact(L, COUPLING):.4f}:")
    ais, _ = ais_table(temps, n_paths, seeds)
    total = time.perf_counter() - t_start
    print(throughput)
    print()
    print(ais)
    log(f"(total {total / 60:.1f} min)")

    if args.write_doc:
        command = "python " + " ".join(shlex.quote(a) for a in ["benchmarks/ising_ais.py", *sys.argv[1:]])
        intro = (
            "Kernel throughput on the 32 x 32 torus: wall time of one `kernel.step` = one sweep over all 1024 "
            "sites of every path (colour class by colour class, all paths at once) plus the one batched energy "
            "evaluation of the new states that the AIS runner reads; median of repeats (>= 1 s) after two "
            "warm-up steps, at beta J = 0.44 (Ising) and 1.4 (Potts, q = 10). "
            "Spin updates per second = paths x 1024 / time. Wall time (`time.perf_counter`) and process CPU time "
            "(`time.process_time`) are both given: the kernels are single-threaded NumPy, so on an idle machine "
            "they agree, and where they differ other processes were competing for the two cores."
        )
        ais_intro = (
            f"Forward AIS on `pmz.systems.ising(32, 1.0)` (J = 1, log Z relative to the uniform base; exact "
            f"{ising_log_z_exact(L, COUPLING):.4f} by Kaufman's formula): `run_ais` with a linear schedule of K "
            f"temperatures, one sweep per temperature, {n_paths} paths, frozen kernel, "
            "estimate by `jarzynski` (log mean weight; se = delta method). *mean log w - exact* is the "
            "stochastic lower bound's gap (minus the mean dissipated work): when it is many units below 0 the "
            "estimate rests on a handful of paths (see ESS) and its se is not reliable."
        )
        neq = (
            "For comparison, Habeck (2017, NEQ) reports for this system AIS 1333.66 (error -5.6) with K = 1000 "
            "(linear), 1000 single-spin Metropolis steps per temperature (about one sweep) and 1000 paths."
        )
        footer = (
            f"Total time {total / 60:.1f} min. Machine: {machine_line()}. "
            f"Date: {datetime.date.today().isoformat()}. Command: `{command}`."
        )
        body = f"{intro}\n\n{throughput}\n\n{ais_intro}\n\n{ais}\n\n{neq}\n\n{footer}"
        update_doc(HEADING, body)
        log(f"updated {DOC}")


if __name__ == "__main__":
    main()
