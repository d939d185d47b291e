"""CAST on the 2-node MRF of its Figure 2 (Salakhutdinov 2010): time spent per partition by plain Gibbs, FPCD-style
fast weights, Wang-Landau tempering and CAST, over the first 100 updates (and 1000), and CAST as a PyMC step method
on a bimodal posterior with two ladders.

    python examples/cast_two_node.py               # 20 runs x 50 chains per sampler, bimodal posterior 4 chains
    python examples/cast_two_node.py --quick       # 4 runs, no PyMC part
    python examples/cast_two_node.py --write-doc   # also writes docs/cast.md

Model: ``pmz.systems.two_node_mrf(5)``, ``log f(s) = 5 s1 s2`` on two +-1 units: the states (+1, +1) and
(-1, -1) carry all but 4.5e-5 of the mass, and the partitions {s1 = +1} and {s1 = -1} have mass 1/2 each. Every
chain starts in (+1, +1), as the persistent chains of a learning run sit where the data are. One update = one step
of each sampler: a Gibbs sweep; a tempering sweep (kernel step at the chain's level, then a level draw, then the
Wang-Landau update); a CAST step (both chains of a pair, swap every ``swap_interval`` steps).

FPCD-style fast weights (Tieleman & Hinton 2009) are modelled without learning: the model's parameters are already
right (the data statistics are the exact model moments, E[s] = 0, E[s1 s2] = tanh 5), and each chain samples from
``exp((w + c) s1 s2 + b.s)`` with fast parameters that decay by 19/20 per update and move by the fast gradient
``eps (E_data[phi] - phi(s_t))``: the fast biases push the chain out of the state it is in. ``eps = 0.5`` (our
choice) lets them reach ``-eps / (1 - 19/20) = -10``, enough to overcome the weight 5.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from pmz.families import EnergyFamily
from pmz.runners import CASTSettings, run_cast, uniform_ladder
from pmz.systems import partition_of, two_node_mrf

COUPLING = 5.0
N_CHAINS = 50  # the paper's 50 slow + 50 fast chains
HORIZONS = (100, 1000)
FPCD_DECAY, FPCD_RATE = 19.0 / 20.0, 0.5


def gibbs_chains(rng, family, kernel, start, n_steps):
    """Plain Gibbs at beta = 1: the states after every sweep, ``(n_steps, n, 2)``."""
    state = kernel.init_state(family, start)
    out = np.empty((n_steps,) + start.shape)
    for t in range(n_steps):
        state, _ = kernel.step(rng, state, family, 1.0)
        out[t] = state.x
    return out


def fpcd_chains(rng, start, n_steps, coupling=COUPLING, decay=FPCD_DECAY, rate=FPCD_RATE):
    """Heat-bath sweeps of ``exp((w + c) s1 s2 + b.s)`` with FPCD fast parameters ``b`` (n, 2), ``c`` (n,), updated
    after each sweep by ``b <- decay b + rate (0 - s)``, ``c <- decay c + rate (tanh w - s1 s2)``."""
    s = start.copy()
    n = s.shape[0]
    b, c = np.zeros((n, 2)), np.zeros(n)
    target = np.tanh(coupling)
    out = np.empty((n_steps, n, 2))
    for t in range(n_steps):
        for i, j in ((0, 1), (1, 0)):
            field = (coupling + c) * s[:, j] + b[:, i]
            s[:, i] = np.where(rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-2.0 * field)), 1.0, -1.0)
        b = decay * b - rate * s
        c = decay * c + rate * (target - s[:, 0] * s[:, 1])
        out[t] = s
    return out


def summary(states, horizon, mask=None):
    """Over the first ``horizon`` updates of chains ``states (n_steps, n, 2)`` (only where ``mask``): the share of
    time in {s1 = +1}, the chains that visited both partitions, switches per chain, the mixed-state frequency."""
    s = states[:horizon]
    mask = np.ones(s.shape[:2], dtype=bool) if mask is None else mask[:horizon]
    part = partition_of(s)
    share = float(part[mask].mean())
    both = np.array([np.unique(part[mask[:, i], i]).size == 2 for i in range(part.shape[1])])
    switches = [np.sum(np.diff(part[mask[:, i], i]) != 0) for i in range(part.shape[1])]
    mixed = float(np.mean((s[..., 0] != s[..., 1])[mask]))
    return dict(share=share, both=float(both.mean()), switches=float(np.mean(switches)), mixed=mixed)


def pool(rows):
    return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}


def two_node_table(n_runs, seed):
    model = two_node_mrf(COUPLING).model
    family, kernel = EnergyFamily(model), model.kernel
    n_steps = max(HORIZONS)
    start = np.ones((N_CHAINS, 2))
    results = {}
    ladders = {"[0, 1]": uniform_ladder(0.0, 9), "[0.9, 1] (the paper's)": uniform_ladder(0.9, 19)}
    for rng in np.random.default_rng(seed).spawn(n_runs):
        gibbs = gibbs_chains(rng, family, kernel, start, n_steps)
        fpcd = fpcd_chains(rng, start, n_steps)
        runs = {}
        for label, betas in ladders.items():
            for interval in (10, 50):
                if label.startswith("[0.9") and interval == 10:
                    continue
                settings = CASTSettings(n_pairs=N_CHAINS, n_steps=n_steps, swap_interval=interval)
                runs[(label, interval)] = run_cast(
                    family, kernel, betas, settings=settings, rng=rng, start_x=start, start_fast_x=start
                )
        for h in HORIZONS:
            add = lambda name, row: results.setdefault((name, h), []).append(row)  # noqa: E731
            add("Gibbs (beta = 1)", summary(gibbs, h))
            add("FPCD-style fast weights", summary(fpcd, h))
            for (label, interval), run in runs.items():
                K = run.betas.size
                top = run.fast_levels == K - 1
                if interval == 50:
                    add(f"Wang-Landau tempering {label}, beta = 1 states", summary(run.fast_draws, h, top))
                    add(f"Wang-Landau tempering {label}, all levels", summary(run.fast_draws, h))
                add(f"CAST {label}, swap every {interval}", summary(run.slow_draws, h))
    return {key: pool(rows) for key, rows in results.items()}


def _order(name):
    """Gibbs, FPCD, then the [0, 1] ladder (tempering, CAST), then the paper's ladder."""
    rank = ("Gibbs", "FPCD", "Wang-Landau tempering [0, 1]", "CAST [0, 1], swap every 50", "CAST [0, 1]",
            "Wang-Landau tempering [0.9", "CAST [0.9")
    return next(i for i, prefix in enumerate(rank) if name.startswith(prefix))


def format_table(results):
    names = sorted(dict.fromkeys(name for name, _ in results), key=_order)
    h1, h2 = HORIZONS
    lines = [
        f"| sampler | share in s1 = +1, first {h1} | chains in both, {h1} | switches / chain, {h1} | "
        f"share, first {h2} | chains in both, {h2} | switches / chain, {h2} | mixed states, {h2} |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| exact | 0.500 | | | 0.500 | | | {2 * np.exp(-COUPLING) / (4 * np.cosh(COUPLING)):.1e} |",
    ]
    for name in names:
        a, b = results[(name, h1)], results[(name, h2)]
        mixed = "-" if name.endswith("all levels") else f"{b['mixed']:.1e}"  # at beta < 1 they are not rare
        lines.append(
            f"| {name} | {a['share']:.3f} | {100 * a['both']:.0f}% | {a['switches']:.1f} | {b['share']:.3f} | "
            f"{100 * b['both']:.0f}% | {b['switches']:.1f} | {mixed} |"
        )
    return "\n".join(lines)


def bimodal_table(seed, chains=4, draws=1000, tune=500):
    """pm.sample(step=pmz.CAST(...)) on pmz.systems.bimodal_posterior() with the power and the uniform ladder."""
    import logging

    import arviz as az
    import pymc as pm
    import xarray as xr

    import pmz
    from pmz.systems import mode_label

    logging.getLogger("pymc").setLevel(logging.ERROR)
    truth = pmz.systems.bimodal_posterior()
    lines = [
        "| ladder | fast-chain round trips (0 <-> top) per chain | slow-chain mode switches per chain | "
        "share of draws in mu1 < mu2 (exact 0.5) | time (s) |",
        "| --- | --- | --- | --- | ---: |",
    ]
    for label, kwargs in (
        ("power, 11 levels (default)", {}),
        ("uniform in [0, 1], 11 levels", dict(schedule="uniform", n_temps=10)),
        ("uniform in [0, 1], 20 levels", dict(schedule="uniform", n_temps=19)),
    ):
        with truth.model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            step = pmz.CAST(**kwargs)
            t0 = time.perf_counter()
            idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, step=step, random_seed=seed,
                              progressbar=False, compute_convergence_checks=False)
            elapsed = time.perf_counter() - t0
        levels = np.asarray(idata.sample_stats["level"])
        trips = [_round_trips(row, step.n_levels - 1) for row in levels]
        labels = mode_label(np.asarray(idata.posterior["mu"]))
        switches = np.sum(np.diff(labels, axis=1) != 0, axis=1)
        share = (labels == 0).astype(float)
        mcse = float(az.mcse(xr.Dataset({"h": (("chain", "draw"), share)}), method="mean")["h"])
        lines.append(
            f"| {label} | {', '.join(map(str, trips))} | {', '.join(map(str, switches))} | "
            f"{share.mean():.3f} +/- {mcse:.3f} | {elapsed:.0f} |"
        )
    return "\n".join(lines)


def swap_bias_table(seed, n_runs=8, n_pairs=200, n_steps=4000):
    """The slow chains' E[m^2] on a 4 x 4 Ising torus at J = 0.6 (exact by enumeration) for the two swap rules:
    the error averaged over ``n_runs`` independent runs, with its se from their spread."""
    from pmz.boltzmann import ising, ising_energy, ising_log_z_exact

    L, J = 4, 0.6
    model = ising(L, J).model
    states = 2.0 * ((np.arange(2**16)[:, None] >> np.arange(16)) & 1) - 1.0
    log_p = -ising_energy(states, L, J)
    p = np.exp(log_p - log_p.max())
    exact = float(p @ states.mean(axis=1) ** 2 / p.sum())
    betas = uniform_ladder(0.0, 9)
    log_z = np.array([ising_log_z_exact(L, b * J) for b in betas])
    exact_log_g = log_z - log_z[0]  # "frozen at exact": simulated tempering with the exact weights
    lines = [
        f"| swap rule | swap_interval | weights | E[m^2] - exact ({exact:.5f}) | se | z | swaps per swap step |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for swap, interval, weights in (
        ("last", 10, "adapting"), ("last", 50, "adapting"), ("exchange", 1, "adapting"),
        ("last", 10, "frozen at exact"), ("exchange", 1, "frozen at exact"),
    ):
        errors, rates = [], []
        is_frozen = weights.startswith("frozen")
        settings = CASTSettings(n_pairs=n_pairs, n_steps=n_steps, swap_interval=interval, swap=swap,
                                adapt=not is_frozen)
        for rng in np.random.default_rng(seed).spawn(n_runs):
            run = run_cast(EnergyFamily(model), model.kernel, betas, settings=settings, rng=rng,
                           log_g=exact_log_g if is_frozen else None)
            m2 = run.slow_draws[n_steps // 10:].mean(axis=2) ** 2
            errors.append(float(m2.mean()) - exact)
            rates.append(run.swaps.sum() / (run.n_swap_steps * n_pairs))
        error, se = np.mean(errors), np.std(errors, ddof=1) / np.sqrt(n_runs)
        lines.append(
            f"| {swap} | {interval} | {weights} | {error:+.5f} | {se:.5f} | {error / se:+.1f} | {np.mean(rates):.2f} |"
        )
    return "\n".join(lines)


def _round_trips(levels, top):
    """Visits of level 0 followed by a visit of the top level."""
    trips, down = 0, False
    for level in levels:
        if level == 0:
            down = True
        elif level == top and down:
            trips, down = trips + 1, False
    return trips


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--write-doc", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    n_runs = 4 if args.quick else 20
    t0 = time.perf_counter()
    results = two_node_table(n_runs, args.seed)
    table = format_table(results)
    print(f"2-node MRF (w = {COUPLING:g}), {n_runs} runs x {N_CHAINS} chains, all started in (+1, +1) "
          f"({time.perf_counter() - t0:.0f} s)")
    print(table)
    bimodal = bias = None
    if not args.quick:
        bias = swap_bias_table(args.seed)
        print(bias)
        bimodal = bimodal_table(args.seed)
        print(bimodal)
    if args.write_doc:
        doc = Path(__file__).resolve().parents[1] / "docs" / "cast.md"
        doc.write_text(_doc_text(table, bimodal, bias, n_runs))
        print(f"written to {doc}")
    return results


def _doc_text(table, bimodal, bias, n_runs):
    bias_part = "" if bias is None else f"""
## Is the slow chain exact? The two swap rules

The slow chain's own moves leave p_1 invariant; what it receives at a swap decides the rest. `swap="exchange"`
exchanges the two states when the fast chain is at beta = 1 at a swap step: with frozen weights that is a
measure-preserving involution of p_1(x_s) q(x_f, k), so exact. `swap="last"` (the paper's) hands over the fast
chain's *last* beta = 1 state before the swap step, i.e. mostly the state it had when it *left* beta = 1; by
reversibility that state leans towards states from which the level move leaves beta = 1 easily (lower U, higher
energy). The effect is small, and it shows on a 4 x 4 Ising torus at J = 0.6 (checkerboard heat bath, 10 levels
uniform in [0, 1], 8 independent runs of 200 pairs x 4000 steps each, 10% burn-in, se from the spread of the 8
runs; Wang-Landau adapting throughout from zero weights, or weights frozen at the exact log Z_k - log Z_0):

{bias}

`"last"` gives slightly too little E[m^2] (several se; relative error below 1e-3, about 1/100 of the sd of m^2),
with frozen exact weights as well: the error is the rule's, not the adaptation's. `"exchange"` is within about 2
se of exact, frozen or adapting (exact in theory with frozen weights; 8 more runs from another seed, frozen, gave
+0.00006 +- 0.00008), and with `swap_interval=1` it swaps at about 1/K of the steps, as often as
`"last"` with an interval of K (but a state can go back and forth between the two chains). `"last"` stays the
default as the paper's rule; use `"exchange"` when the last digits matter. On the 2-node MRF and the bimodal
posterior the bias is below what the tests resolve.
"""
    bimodal_part = "" if bimodal is None else f"""
## CAST as a PyMC step method: the ladder

`pm.sample(step=pmz.CAST(...))` on `pmz.systems.bimodal_posterior()` (two modes of mass 1/2, 33 posterior sds apart;
NUTS never switches, see [tempering_bimodal.md](tempering_bimodal.md)), 4 chains x 1000 draws after 500 tuning
steps, swap every 10 draws. The fast chain crosses between the modes only near beta = 0 (the barrier is about
110 beta nats), so what matters is how often it walks down there and back:

{bimodal}

On a power posterior the low temperatures need fine steps (`Var_b[U]` grows like `1 / b^2`), which the power
ladder `b_k = (k / K)^4` gives and a uniform one does not: with 11 levels the power ladder made the most round
trips (the slow chains' switches, limited by the swaps as well, differ less), and 20 uniform levels, a longer random
walk with the same poor steps near 0, left one chain in its start mode. Hence `schedule="power"` is `pmz.CAST`'s
default; CAST's uniform ladder is `schedule="uniform"` (with `beta_min`).
"""
    return f"""# CAST: coupled adaptive simulated tempering

Salakhutdinov, "Learning deep Boltzmann machines using adaptive MCMC" (ICML 2010), sections 4-6. A **slow chain**
samples the target at beta = 1 with the plain kernel (Gibbs, MH, HMC); a **fast chain** runs simulated tempering
on a ladder b_0 < ... < b_{{K-1}} = 1 with Wang-Landau weights theta_k, targeting
q(x, k) ∝ r_k f_{{b_k}}(x) exp(-theta_k), and after every step

    theta_k <- theta_k + log(1 + gamma_t) v_k / (c r_k)      (v_k: fraction of fast chains at level k)

with gamma halved whenever the visit histogram is flat and then gamma_t = c / t (pmz.runners.level_weights). Every
`swap_interval` steps the slow chain takes the fast chain's most recent beta = 1 state (`swap="last"`, the paper's
rule; a state is handed over once) or, with `swap="exchange"`, the two exchange states when the fast chain is at
beta = 1 (exact with frozen weights, but only about 1/K of the swap steps swap).

* `pmz.runners.cast`: `cast_step(rng, CASTState, family, kernel, ...) -> (CASTState, CASTInfo)` (one kernel call
  for all slow and fast chains, through `tempering_sweep`; the Wang-Landau update `wang_landau_update`),
  `cast_init`, `run_cast` (a batch of pairs: slow draws, fast levels, visits per level, Wang-Landau's log g and
  its history, swap counts), `uniform_ladder(beta_min, n_temps)`. Works with any pmz family and kernel: energy
  models (RBM, Ising, the 2-node MRF) with their own kernels, a PyMC model's `PowerPosterior` with HMC.
* `pmz.CAST`: the PyMC step method, one pair per PyMC chain, on the same `cast_step`; its draws are the slow
  chain's (all at beta = 1, no reweighting); stats `level`, `beta`, `swapped`, `accept`, `fast_accept`,
  `step_size`, `wl_gamma`, `log_g`.

```python
import pymc as pm, pmz
with pmz.systems.bimodal_posterior().model:
    idata = pm.sample(step=pmz.CAST(), random_seed=1)   # power ladder, 11 levels, swap every 10 draws
```

## The 2-node MRF of CAST Figure 2

`pmz.systems.two_node_mrf(5)`: log f(s) = 5 s1 s2 on two +-1 units; the states (+1, +1) and (-1, -1) hold all but
4.5e-5 of the mass, and the partitions s1 = +1 and s1 = -1 have mass 1/2 each. Every chain starts in (+1, +1).
One update = one Gibbs sweep / one tempering sweep / one CAST step. {n_runs} runs of {N_CHAINS} chains (CAST:
{N_CHAINS} slow + {N_CHAINS} fast chains sharing the Wang-Landau weights, which start at 0 with gamma0 = 1),
averaged. "Switches" counts changes of partition; for the tempering chain at beta = 1 they are counted along its
beta = 1 states only. FPCD-style fast weights: see `examples/cast_two_node.py` (fast parameters that decay by
19/20 and move by 0.5 (E[phi] - phi(s_t)) per update, the model itself already right).

{table}

* Plain Gibbs leaves a mode with probability 9e-5 per sweep: about 95% of the first 1000 updates are spent in the
  start mode, and about one chain in ten ever leaves it.
* FPCD's fast weights push the chain out of the state it is in: it alternates between the modes every few updates
  and splits its time evenly, but it samples a perturbed model: the mixed states, 4.5e-5 of the mass, take
  about 3% of its time.
* The Wang-Landau chain on [0, 1] crosses at low beta within tens of updates (its weights start at 0); its
  beta = 1 states split about evenly over 1000 updates (0.54 over the first 100). On the paper's ladder [0.9, 1]
  (made for DBMs, whose energies are in the thousands) the lowest level still has a barrier of 0.9 x 10 nats, and
  neither the tempering chain nor CAST does much better than Gibbs on this model.
* CAST's slow chain is exact Gibbs at beta = 1 between swaps: it changes mode only at swaps (at most 2 in the first
  100 updates with the paper's interval of 50), its mixed-state frequency is that of exact sampling, and its share
  of time moves to 1/2 as the swaps accumulate (about 0.75 / 0.52 over the first 100 / 1000 updates with a swap
  every 50 steps, 0.60 / 0.51 with a swap every 10).
{bias_part}{bimodal_part}
## Tests

`tests/runners/test_cast.py`: the slow chains' moments on the 2-node MRF (E[s1], E[s2] = 0 within 4 MCSE; mixed states
within a Poisson bound) and on a 4 x 4 Ising torus at J = 0.6 (E[m], E[m^2] by enumeration, both swap rules, "last" allowed its measured bias);
Wang-Landau's log g_k within 4 se (over 4 runs, se < 0.02) of the exact log Z_k - log Z_0 on the MRF and within
0.1 of Kaufman's on the Ising ladder; CAST switching modes where Gibbs (about 9 switches in 10^5 sweeps) does not;
the runner on a PowerPosterior with HMC; `pm.sample(step=pmz.CAST())` on the bimodal posterior (both modes in
every chain; E[mu1], P(mu1 < mu2), E|mu1 - mu2| within 4 MCSE of quadrature) and on a discrete posterior (two
Bernoulli variables tied by a potential, Gibbs kernel).

Left: CAST's use for learning (the slow chains' states feeding the gradient of a DBM or RBM while the parameters
change; the paper's weight adapting factor) and FPCD with real learning belong to the learning part of the issue;
here the model is fixed and FPCD's fast weights are a model of their effect.

Reproduce: `python examples/cast_two_node.py --write-doc`.
"""


if __name__ == "__main__":
    main()
