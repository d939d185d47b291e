"""Seeded results of every route of the default and of every explicit method, to full precision: run it in two
checkouts to see which results a change left bit-identical (log Z, its se, the route and every array of the
result), and by how much the others moved, against their se.

    PYTHONPATH=<checkout> python benchmarks/same_seed.py --out before.json    # then --out after.json in the other
    python benchmarks/same_seed.py --compare before.json after.json            # a table: same bits, or how far apart

``--only`` runs the cases whose names contain one of the given words (``--only modes bridge``). The cases: at
least two seeded models per route of ``method="auto"`` (sum, latent, importance, bridge, path, modes by
importance and by SMC, tempered), user draws given as ``posterior=``, every explicit method of ``pmz.evidence``,
the step methods read by ``pmz.tempered_evidence``, and the tempering, Wang-Landau and CAST drivers called
directly. Each case prints its seconds; the whole set takes a few minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import time
import warnings

import numpy as np


def _digest(value) -> str:
    array = np.ascontiguousarray(np.asarray(value))
    if array.dtype.kind == "O":
        return hashlib.sha256(repr(array.tolist()).encode()).hexdigest()[:16]
    return hashlib.sha256(array.tobytes() + str(array.shape).encode() + array.dtype.str.encode()).hexdigest()[:16]


_SKIP = {"wall_time", "compile_time", "sampling_time", "timeline", "payload_bytes", "chunk_bytes"}


def _result_fingerprint(res) -> dict:
    """log Z, se, route and a digest of every array of every group (times left out)."""
    out = {"log_z": repr(float(res.log_z)), "log_z_se": repr(float(res.log_z_se)), "reliable": bool(res.reliable)}
    attrs = res.run_attrs
    if "route" in attrs:
        out["route"] = str(attrs["route"])
        out["estimates"] = {name: [repr(float(v)) for v in row] for name, row in zip(res.estimates.index,
                                                                                     res.estimates.values)}
    arrays = {}
    for group in res.group_names():
        ds = res[group]
        ds = getattr(ds, "ds", ds)  # a DataTree node on ArviZ 1
        for name in ds.data_vars:
            if name in _SKIP:
                continue
            arrays[f"{group}/{name}"] = _digest(ds[name].values)
    out["arrays"] = arrays
    return out


def _trace_fingerprint(obj) -> dict:
    """A digest of every array field of a record or a tuple of arrays (a driver's output)."""
    from dataclasses import fields, is_dataclass

    out = {}
    items = ((f.name, getattr(obj, f.name)) for f in fields(obj)) if is_dataclass(obj) else enumerate(obj)
    for name, value in items:
        if isinstance(value, np.ndarray):
            out[str(name)] = _digest(value)
        elif isinstance(value, dict):
            for key, v in value.items():
                if isinstance(v, np.ndarray):
                    out[f"{name}/{key}"] = _digest(v)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[str(name)] = repr(value)
    return {"arrays": out}


# ------------------------------------------------------------------------------------------------------ models
def _labels_model():
    import pymc as pm

    with pm.Model() as model:
        s = pm.Bernoulli("s", 0.3, shape=3)
        c = pm.Categorical("c", [0.2, 0.3, 0.5])
        pm.Normal("y", s.sum() + c, 1.0, observed=np.array([0.4, 2.9]))
    return model


def _poisson_count():
    import pymc as pm

    with pm.Model() as model:
        k = pm.Poisson("k", np.float64(1000.0))
        pm.Normal("y", k, np.float64(1.0), observed=1100.0)
    return model


def _binary_labels():
    import pymc as pm

    with pm.Model() as model:
        k = pm.Bernoulli("k", 0.3, shape=21)
        pm.Normal("y", 2.0 * k, 1.0, observed=np.linspace(-1.0, 3.0, 21))
    return model


def _label_mixture():
    """A continuous mean and a binary label per observation (3): the labels are summed out, the rest is continuous."""
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        z = pm.Bernoulli("z", 0.5, shape=3)
        pm.Normal("y", mu + 2.0 * z, 1.0, observed=np.array([0.2, 2.5, 1.1]))
    return model


def _unknown_scale_hierarchy():
    import pymc as pm

    rng = np.random.default_rng(4)
    groups, per = 60, 5
    effect = rng.normal(1.0, 0.7, groups)
    y = effect[:, None] + rng.normal(0, 1.0, (groups, per))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 2.0)
        z = pm.Normal("z", 0.0, 1.0, shape=groups)
        pm.Normal("y", mu=(mu + tau * z)[:, None], sigma=1.0, observed=y)
    return model


def _mu_squared():
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        pm.Normal("y", mu**2, 0.5, observed=4.0)
    return model


def _eight_schools():
    import pymc as pm

    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta = pm.Normal("theta", mu, tau, shape=8)
        pm.Normal("y", theta, sigma, observed=y)
    return model


def _poisson_effects():
    import pymc as pm

    counts = np.random.default_rng(0).poisson(3.0, 40)
    with pm.Model() as model:
        tau = pm.HalfNormal("tau", 1.0)
        z = pm.Normal("z", 0.0, 1.0, shape=40)
        pm.Poisson("y", mu=pm.math.exp(1.0 + tau * z), observed=counts)
    return model


def _pm_sample(model, seed, draws=300, tune=300, chains=2):
    import pymc as pm

    with model:
        return pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed, progressbar=False,
                         compute_convergence_checks=False)


def _auto_cases():
    import pmz
    from pmz import systems

    hier = systems.hierarchical_normal()
    normal_mean = systems.normal_mean()
    return {
        # route: sum
        "auto/sum/labels": (_labels_model, dict(random_seed=3)),
        "auto/sum/poisson_window": (_poisson_count, dict(random_seed=3)),
        # route: latent (exact: no hyperparameters; with hyperparameters: importance over them)
        "auto/latent/hierarchical_exact": (lambda: hier.model, dict(random_seed=1)),
        "auto/latent/gaussian_100": (lambda: systems.correlated_gaussian(dim=100).model, dict(random_seed=0)),
        "auto/latent/ar1_80": (lambda: systems.ar1_state_space(T=80).model, dict(random_seed=0)),
        "auto/latent/unknown_scale": (_unknown_scale_hierarchy, dict(random_seed=2)),
        # route: importance (at most six coordinates)
        "auto/importance/nig": (lambda: systems.nig_regression().model, dict(random_seed=0)),
        "auto/importance/poisson_gamma": (lambda: systems.poisson_gamma().model, dict(random_seed=3)),
        # the chains, then: bridge, path, modes (importance and SMC), tempered
        "auto/bridge/linear_regression": (lambda: systems.linear_regression().model,
                                          dict(random_seed=1, latent=False)),
        "auto/bridge/poisson_effects": (_poisson_effects, dict(random_seed=0)),
        "auto/bridge/hierarchical_50": (lambda: hier.model, dict(random_seed=0, latent=False, n_chains=8)),
        "auto/path/nig_strict_khat": (lambda: systems.nig_regression().model,
                                      dict(random_seed=2, max_khat=0.05, latent=False)),
        "auto/path/linear_strict_khat": (lambda: systems.linear_regression().model,
                                         dict(random_seed=4, max_khat=0.05, latent=False, n_chains=8)),
        "auto/modes/two_means": (lambda: systems.bimodal_posterior().model, dict(random_seed=0)),
        "auto/modes/mu_squared": (_mu_squared, dict(random_seed=1)),
        "auto/modes/slow_mixing": (lambda: normal_mean.model, dict(random_seed=3, max_rhat=1e-9, latent=False)),
        "auto/tempered/eight_schools_strict_rhat": (_eight_schools, dict(random_seed=3, max_rhat=1e-9)),
        "auto/tempered/binary_labels": (_binary_labels, dict(random_seed=0)),
        "auto/tempered/eight_schools": (_eight_schools, dict(random_seed=17)),
        # discrete labels summed out, then the continuous routes
        "auto/summed/label_mixture": (_label_mixture, dict(random_seed=5)),
        # the user's draws: the bridge, and the modes route by SMC (two chains that disagree)
        "auto/posterior/normal_mean": (lambda: normal_mean.model,
                                       dict(random_seed=0, posterior=("sample", 1, 500, 500, 4))),
        "auto/posterior/hierarchical_rhat": (lambda: hier.model,
                                             dict(random_seed=0, posterior=("sample", 1, 150, 300, 2))),
        "auto/posterior/eight_schools": (_eight_schools, dict(random_seed=0, posterior=("sample", 2, 150, 300, 2))),
        # max_time spent at once: every route's budget branch
        "auto/max_time/nig": (lambda: systems.nig_regression().model, dict(random_seed=0, max_time=1e-3)),
        "auto/max_time/chains": (lambda: systems.linear_regression().model,
                                 dict(random_seed=0, max_time=1e-3, latent=False, n_chains=8)),
    }


METHOD_OPTIONS = {
    "ais": dict(n_paths=128, n_temps=100),
    "bar": dict(n_paths=128, n_temps=100),
    "raise": dict(n_paths=128, n_temps=100),
    "cumulant": dict(n_paths=128, n_temps=100),
    "bounds": dict(n_paths=128, n_temps=100),
    "histogram": dict(n_paths=128, n_temps=100),
    "bridge": dict(n_draws=1000, n_chains=2, nuts_tune=300),
    "rts": dict(n_sweeps=300, n_temps=20),
    "ts": dict(n_sweeps=300, n_temps=20),
    "ti": dict(n_sweeps=300, n_temps=20),
    "ti_rb": dict(n_sweeps=300, n_temps=20),
    "mbar": dict(n_sweeps=300, n_temps=20),
    "wang_landau": dict(n_sweeps=300, n_temps=20, wl_sweeps=200),
    "smc": dict(n_particles=300),
    "arm": dict(n_particles=200),
}


def _method_cases():
    import pymc as pm

    def two_parameter():
        y = np.array([0.3, -0.1, 0.8, 1.2, 0.4])
        with pm.Model() as model:
            mu = pm.Normal("mu", 0, 2)
            s = pm.HalfNormal("s", 1.5)
            pm.Normal("y", mu, s, observed=y)
        return model

    return {f"method/{name}": (two_parameter, dict(method=name, random_seed=11, **options))
            for name, options in METHOD_OPTIONS.items()}


def _rbm_model():
    from pmz.boltzmann.rbm import energy_model, random_rbm

    return energy_model(random_rbm(8, 4, seed=1), np.full(8, 0.5))


def _energy_cases():
    import pmz

    return {
        "energy/bar_rbm": (_rbm_model,
                           dict(method="bar", random_seed=2, n_paths=64, n_temps=50)),
        "energy/rts_ising": (lambda: pmz.systems.ising(4).model,
                             dict(method="rts", random_seed=2, n_sweeps=200, n_temps=10)),
    }


def _run_evidence(build, options):
    import pmz

    options = dict(options)
    model = build()
    posterior = options.pop("posterior", None)
    if isinstance(posterior, tuple):
        _, seed, draws, tune, chains = posterior
        options["posterior"] = _pm_sample(model, seed, draws, tune, chains)
    return _result_fingerprint(pmz.evidence(model, progressbar=False, **options))


def _step_method_cases():
    import pymc as pm

    import pmz

    def sample(step_cls, **step_options):
        def run():
            system = pmz.systems.normal_mean()
            with system.model:
                step = step_cls(**step_options)
                idata = pm.sample(draws=300, tune=300, chains=2, cores=1, step=step, random_seed=20261122,
                                  progressbar=False, compute_convergence_checks=False)
            est = pmz.tempered_evidence(idata)
            stats = {name: _digest(idata.sample_stats[name].values) for name in idata.sample_stats.data_vars}
            draws = {name: _digest(idata.posterior[name].values) for name in idata.posterior.data_vars}
            return {"log_z": repr(float(est.log_z)), "log_z_se": repr(float(est.log_z_se)),
                    "arrays": {**{f"stats/{k}": v for k, v in stats.items()},
                               **{f"posterior/{k}": v for k, v in draws.items()}}}
        return run

    def cast_bimodal():
        system = pmz.systems.bimodal_posterior()
        with system.model:
            step = pmz.CAST()
            idata = pm.sample(draws=200, tune=200, chains=2, cores=1, step=step, random_seed=20261122,
                              progressbar=False, compute_convergence_checks=False)
        return {"arrays": {f"posterior/{k}": _digest(idata.posterior[k].values) for k in idata.posterior.data_vars}}

    return {
        "step/simulated_tempering": sample(pmz.SimulatedTempering, n_temps=15),
        "step/wang_landau": sample(pmz.WangLandau, n_temps=15),
        "step/cast": cast_bimodal,
    }


def _driver_cases():
    from pmz.families.energy import EnergyFamily
    from pmz.runners.cast import run_cast, uniform_ladder
    from pmz.runners.tempering_sweep import run_tempering
    from pmz.runners.wang_landau import run_wang_landau

    try:  # the drivers take settings objects; a checkout from before them takes the same values as keywords
        from pmz.runners.tempering_settings import CASTSettings, TemperingSettings, WangLandauSettings
    except ImportError:
        CASTSettings = TemperingSettings = WangLandauSettings = None

    def settings(cls, **values):
        """``(cls(**values),), {}`` or, before the settings objects, ``(), values``: positional and keywords."""
        return ((cls(**values),), {}) if cls is not None else ((), values)

    def mrf():
        import pmz

        return pmz.systems.two_node_mrf(5.0).model

    def cast():
        model = mrf()
        args, kw = settings(CASTSettings, n_pairs=20, n_steps=600, swap_interval=50)
        run = run_cast(EnergyFamily(model), model.kernel, uniform_ladder(0.0, 9), None, *args,
                       rng=np.random.default_rng(5), **kw)
        return _trace_fingerprint(run)

    def tempering():
        model = mrf()
        betas = uniform_ladder(0.0, 9)
        params = [model.kernel.default_params(1)] * betas.size
        args, kw = settings(TemperingSettings, n_chains=30, n_sweeps=200)
        trace = run_tempering(EnergyFamily(model), model.kernel, betas, params, *args, log_zhat=np.zeros(betas.size),
                              rng=np.random.default_rng(6), progressbar=False, **kw)
        return _trace_fingerprint(trace)

    def wang_landau():
        model = mrf()
        betas = uniform_ladder(0.0, 9)
        params = [model.kernel.default_params(1)] * betas.size
        args, kw = settings(WangLandauSettings, n_chains=30, n_sweeps=300)
        out = run_wang_landau(EnergyFamily(model), model.kernel, betas, params, *args, rng=np.random.default_rng(7),
                              progressbar=False, **kw)
        return _trace_fingerprint(out)

    return {"driver/cast": cast, "driver/tempering": tempering, "driver/wang_landau": wang_landau}


def cases() -> dict:
    out = {}
    for name, (build, options) in {**_auto_cases(), **_method_cases(), **_energy_cases()}.items():
        out[name] = (lambda build=build, options=options: _run_evidence(build, options))
    out.update(_step_method_cases())
    out.update(_driver_cases())
    return out


def run(only=None, out=None):
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    results = {}
    for name, case in cases().items():
        if only and not any(word in name for word in only):
            continue
        t0 = time.perf_counter()
        try:
            results[name] = case()
        except Exception as err:  # noqa: BLE001 -- a case that fails is a result too
            results[name] = {"error": f"{type(err).__name__}: {err}"}
        seconds = time.perf_counter() - t0
        shown = results[name]
        print(f"{name:42s} {seconds:7.1f} s  route={shown.get('route', '-'):10s} log_z={shown.get('log_z', '-')} "
              f"se={shown.get('log_z_se', '-')} {shown.get('error', '')}", file=sys.stderr, flush=True)
    text = json.dumps(results, indent=1, sort_keys=True)
    if out:
        with open(out, "w") as handle:
            handle.write(text)
    else:
        print(text)


def compare(before_path, after_path) -> int:
    """Print one line per case; returns the number of cases whose bits differ."""
    with open(before_path) as handle:
        before = json.load(handle)
    with open(after_path) as handle:
        after = json.load(handle)
    n_diff = 0
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            print(f"{name:42s} only in {'after' if a is None else 'before'}")
            n_diff += 1
            continue
        if a == b:
            print(f"{name:42s} same bits ({len(a.get('arrays', {}))} arrays)")
            continue
        n_diff += 1
        what = []
        for key in ("error", "route", "log_z", "log_z_se", "reliable", "estimates"):
            if a.get(key) != b.get(key):
                what.append(f"{key}: {a.get(key)} -> {b.get(key)}")
        arrays_a, arrays_b = a.get("arrays", {}), b.get("arrays", {})
        changed = sorted(k for k in set(arrays_a) | set(arrays_b) if arrays_a.get(k) != arrays_b.get(k))
        if changed:
            what.append(f"arrays differ: {', '.join(changed[:8])}{' ...' if len(changed) > 8 else ''}")
        if "log_z" in a and "log_z" in b and "log_z_se" in a:
            gap = abs(float(a["log_z"]) - float(b["log_z"]))
            se = float(a["log_z_se"]) or float("nan")
            what.append(f"|difference| {gap:.3g} = {gap / se:.2g} se")
        print(f"{name:42s} DIFFERENT: " + "; ".join(what))
    print(f"{n_diff} of {len(set(before) | set(after))} cases differ")
    return n_diff


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="write the results (JSON) here instead of stdout")
    parser.add_argument("--only", nargs="+", help="run only the cases whose names contain one of these words")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two result files")
    args = parser.parse_args()
    if args.compare:
        sys.exit(1 if compare(*args.compare) else 0)
    run(args.only, args.out)


if __name__ == "__main__":
    main()
