"""Chunked runs (``n_chunks``), executors (Dask, concurrent.futures) and checkpoints: the same bits wherever the
chunks run, exact pooling of the chunks' records, resumption, interruption and a killed worker.

One LocalCluster of two worker processes (one thread each) serves the whole module; its one-worker executor
(``client.get_executor(workers=[address])``) is the "1 worker" case. Every executor call has a chunk_timeout, so a
hung cluster fails a test instead of hanging CI.
"""

import concurrent.futures
import functools
import json
import logging
import multiprocessing
import os
import signal
import threading
import time

import numpy as np
import pytest

import pmz
import pmz.registry
from pmz.execution.checkpoints import dataset_record, record_dataset
from pmz.records import SMCRecord, TemperingTrace, WorkRecord
from pmz.runners.pooling import merge_smc, merge_traces, merge_work, split
from pmz.runners.tempering_settings import TemperingSettings
from pmz.runners.tempering_sweep import run_tempering
from pmz.weights import ess

SEED = 20261124
TIMEOUT = 120.0  # seconds without a finished chunk before a test fails
RUNS = {  # small, fast runs of one chunkable method of each kind on normal_mean (exact log Z)
    "bar": dict(n_paths=128, n_temps=40, n_chunks=4),
    "rts": dict(n_chains=24, n_sweeps=200, n_temps=10, n_initial=3, initial_sweeps=30, n_chunks=3),
    "smc": dict(n_particles=300, n_runs=4, n_chunks=2),
}


@pytest.fixture(scope="module")
def system():
    return pmz.systems.normal_mean()


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR
    )
    client = distributed.Client(cluster, timeout="60s")
    client.wait_for_workers(2, timeout=120)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def local(system):
    """The chunked runs in this process, no executor: the reference bits."""
    return {
        method: pmz.evidence(system.model, method=method, random_seed=SEED, progressbar=False, **options)
        for method, options in RUNS.items()
    }


def _evidence(system, method, **extra):
    return pmz.evidence(
        system.model, method=method, random_seed=SEED, progressbar=False, chunk_timeout=TIMEOUT,
        **{**RUNS[method], **extra},
    )


def _arrays(res):
    """Every array of the result's record groups, by group and name (the record as the result keeps it)."""
    out = {}
    for group in ("work", "schedule", "tempering", "smc", "particles"):
        if group in res.group_names():
            ds = res[group]
            for name in ds.data_vars:
                out[f"{group}/{name}"] = np.asarray(ds[name].values)
    return out


def assert_same_bits(a, b):
    assert a.log_z == b.log_z and a.log_z_se == b.log_z_se, (a.log_z, b.log_z)
    arrays_a, arrays_b = _arrays(a), _arrays(b)
    assert arrays_a.keys() == arrays_b.keys()
    for name, value in arrays_a.items():
        np.testing.assert_array_equal(value, arrays_b[name], err_msg=name)
    for key in ("n_logp_evals", "n_grad_evals"):
        assert a.run_attrs[key] == b.run_attrs[key], key


# --------------------------------------------------------------------------
# the chunked results are right
# --------------------------------------------------------------------------


@pytest.mark.parametrize("method", sorted(RUNS))
def test_chunked_runs_match_the_exact_log_z(local, system, method):
    """Within 4 se + 0.02 of the exact log Z (fails with probability about 6e-5) with se < 0.15 (0.03 to 0.08 over 8
    seeds)."""
    res = local[method]
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + 0.02, (res.log_z, system.log_z, res.log_z_se)
    assert 0 < res.log_z_se < 0.15
    attrs = res.run_attrs
    assert attrs["executor"] == "none" and attrs["partial"] == 0 and attrs["chunks_done"] == attrs["chunks_total"]


def test_smc_chunks_are_the_unsplit_run(local, system):
    """SMC runs keep the streams the unsplit call gives them: any grouping gives the unsplit bits."""
    options = {k: v for k, v in RUNS["smc"].items() if k != "n_chunks"}
    whole = pmz.evidence(system.model, method="smc", random_seed=SEED, progressbar=False, **options)
    assert_same_bits(whole, local["smc"])


def test_split():
    assert split(7, 3) == [3, 2, 2] and split(4, 4) == [1, 1, 1, 1]
    with pytest.raises(ValueError, match="n_chunks <= 3"):
        split(3, 4)


def _ais(system, n_paths, seed):
    from pmz.methods.setup import compiled_model, make_family, make_kernel
    from pmz.methods.options import AnnealingOptions
    from pmz.runners.ais import run_ais

    options = AnnealingOptions()
    target = compiled_model(system.model, options)
    family, kernel = make_family(target, "prior"), make_kernel(options, target)
    schedule = np.linspace(0, 1, 11) ** 2
    params = [kernel.default_params(family.dim)] * schedule.size
    return run_ais(family, kernel, schedule, params, n_paths=n_paths, rng=np.random.default_rng(seed),
                   progressbar=False)


def test_chunks_of_a_large_run_are_its_bits(system):
    """A run of more paths than one default batch (4096) cut into chunks of whole blocks: the chunks move their paths
    in the batches the whole run would, so the pooled record is the whole run's, ESS and acceptance included."""
    from pmz.methods.options import AnnealingOptions
    from pmz.methods.setup import compiled_model, make_family, make_kernel
    from pmz.runners.ais import run_ais
    from pmz.runners.pooling import PATH_BLOCKS, chunk_rows
    from pmz.runners.row_streams import RowStreams

    options = AnnealingOptions()
    target = compiled_model(system.model, options)
    family, kernel = make_family(target, "prior"), make_kernel(options, target)
    schedule = np.linspace(0, 1, 4) ** 2
    params = [kernel.default_params(family.dim)] * schedule.size
    common = dict(n_paths=5000, progressbar=False)
    whole = run_ais(family, kernel, schedule, params, rng=np.random.default_rng(3), **common)
    streams = RowStreams.spawn(np.random.default_rng(3), 5000)
    parts = [run_ais(family, kernel, schedule, params, streams=streams, rows=rows, **common)
             for rows in chunk_rows(5000, 3, PATH_BLOCKS)]
    pooled = merge_work(parts)
    for name in ("log_weights", "ess_path", "acceptance", "final_x", "block_log_sum_w", "block_accept_sum"):
        np.testing.assert_array_equal(getattr(pooled, name), getattr(whole, name), err_msg=name)


def test_merged_work_pools_the_weights_exactly(system):
    parts = [_ais(system, m, seed) for m, seed in ((40, 1), (25, 2), (35, 3))]
    merged = merge_work(parts)
    log_w = np.concatenate([p.log_weights for p in parts])
    np.testing.assert_array_equal(merged.log_weights, log_w)
    assert merged.ess_path[-1] == pytest.approx(ess(log_w), rel=1e-12)
    assert merged.final_x.shape == (100, parts[0].final_x.shape[1])
    inner = slice(1, -1)
    expected = sum(p.acceptance[inner] * p.n_paths for p in parts) / 100
    np.testing.assert_allclose(merged.acceptance[inner], expected, rtol=1e-14)
    assert merged.n_grad_evals == sum(p.n_grad_evals for p in parts)


def test_merged_traces_add_the_batch_sums_and_join_the_samples(system):
    from pmz.methods.setup import compiled_model, make_family, make_kernel
    from pmz.methods.options import TemperingOptions

    options = TemperingOptions()
    target = compiled_model(system.model, options)
    family, kernel = make_family(target, "prior"), make_kernel(options, target)
    betas = np.linspace(0, 1, 6)
    params = [kernel.default_params(family.dim)] * betas.size
    common = dict(log_zhat=np.zeros(6), progressbar=False)
    parts = [
        run_tempering(family, kernel, betas, params, TemperingSettings(n_chains=m, n_sweeps=30, n_batches=10,
                      store_draws=True), rng=np.random.default_rng(seed), **common)
        for m, seed in ((4, 1), (3, 2))
    ]
    merged = merge_traces(parts)
    assert merged.n_chains == 7 and merged.n_samples == 30 * 7
    np.testing.assert_allclose(merged.batch_q, parts[0].batch_q + parts[1].batch_q)
    np.testing.assert_array_equal(merged.batch_size, np.full(10, 3 * 7))
    assert merged.c_hat.sum() == pytest.approx(1.0)
    draws = merged.draws_U.reshape(30, 7)
    np.testing.assert_array_equal(draws[:, :4], parts[0].draws_U.reshape(30, 4))
    np.testing.assert_array_equal(draws[:, 4:], parts[1].draws_U.reshape(30, 3))
    np.testing.assert_array_equal(merged.final_levels, np.r_[parts[0].final_levels, parts[1].final_levels])
    assert merged.level_traces.shape == (30, 5)
    visited = merged.counts > 0
    accepted = sum(np.nan_to_num(p.acceptance) * p.counts for p in parts)
    np.testing.assert_allclose(merged.acceptance[visited], accepted[visited] / merged.counts[visited])


def test_merged_smc_renumbers_the_runs_it_has(local):
    record = local["smc"]
    assert "smc" in record.group_names()  # the result of a chunked SMC run keeps the record's groups
    rows = dict(
        log_increment=np.array([0.5, 0.25]), position=np.ones(2), position_from=np.zeros(2), n_particles=[10, 10],
        ess=np.full(2, 5.0), ess_start=np.full(2, 10.0), gamma=np.ones(2), gamma_initial=np.ones(2),
        n_generate=[0, 0], acceptance=np.ones(2), step_size=np.ones(2), n_moves=[10, 10],
        resampled=np.array([True, True]),
    )
    parts = [
        SMCRecord(run=np.array([r]), **{k: np.asarray(v)[i : i + 1] for k, v in rows.items()}, n_runs=1,
                  final_x=np.zeros((2, 1)), final_log_weights=np.log([0.5, 0.5]) + z)
        for i, (r, z) in enumerate(((0, 0.0), (3, 1.0)))
    ]
    merged = merge_smc(parts)  # runs 0 and 3 of four (runs 1 and 2 never finished)
    np.testing.assert_array_equal(merged.run, [0, 1])
    np.testing.assert_array_equal(merged.run_log_z(), [0.5, 0.25])
    assert merged.n_runs == 2 and np.exp(merged.final_log_weights).sum() == pytest.approx(1.0)


# --------------------------------------------------------------------------
# the same bits on any executor
# --------------------------------------------------------------------------


CHUNKABLE = sorted(  # the methods whose bits do not depend on the chunking (auto and bridge: further down)
    name for name, spec in pmz.registry.METHODS.items() if spec.chunked and not spec.chain_groups
)
SMALL = {  # every method that takes an executor, small: the kind of run decides the options
    "annealing": dict(n_paths=64, n_temps=20),
    "tempering": dict(n_chains=16, n_sweeps=40, n_temps=6, n_initial=1, initial_sweeps=10, wl_sweeps=20),
    "smc": dict(n_particles=100, n_runs=3),
}


def _kind(method):
    if method in ("smc", "arm"):
        return "smc"
    return "tempering" if method in ("rts", "ts", "ti", "ti_rb", "mbar", "wang_landau") else "annealing"


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
@pytest.mark.parametrize("method", CHUNKABLE)
def test_same_bits_for_any_chunking_and_executor(system, method):
    """One run path: the call without chunks, with 2 and 3 chunks, and on a 2-thread pool (8 chunks by default)
    gives the same bits (random numbers belong to the paths, chains or runs; sums are pooled by fixed blocks)."""
    common = dict(method=method, random_seed=SEED, progressbar=False, **SMALL[_kind(method)])
    whole = pmz.evidence(system.model, **common)
    for n_chunks in (2, 3):
        assert_same_bits(pmz.evidence(system.model, n_chunks=n_chunks, **common), whole)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        threaded = pmz.evidence(system.model, executor=pool, chunk_timeout=TIMEOUT, **common)
    assert_same_bits(threaded, whole)
    assert threaded.run_attrs["chunks_total"] > 2


@pytest.mark.slow  # every chunkable method on the cluster: about a minute
@pytest.mark.parametrize("method", CHUNKABLE)
def test_same_bits_on_one_and_two_dask_workers(system, client, method):
    """Every method that takes an executor gives the bits of the call without one on 1 and 2 Dask workers."""
    common = dict(method=method, random_seed=SEED, progressbar=False, **SMALL[_kind(method)])
    whole = pmz.evidence(system.model, **common)
    one_worker = client.get_executor(workers=[sorted(client.scheduler_info()["workers"])[0]])
    for executor in (one_worker, client):
        assert_same_bits(pmz.evidence(system.model, executor=executor, chunk_timeout=TIMEOUT, **common), whole)


@pytest.mark.parametrize("method", sorted(RUNS))
def test_no_chunks_is_the_chunked_run(local, system, method):
    """The reference runs of this module (``n_chunks`` chunks here) are the bits of the call without chunks."""
    options = {k: v for k, v in RUNS[method].items() if k != "n_chunks"}
    assert_same_bits(pmz.evidence(system.model, method=method, random_seed=SEED, progressbar=False, **options),
                     local[method])


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
@pytest.mark.parametrize("method", sorted(RUNS))
def test_same_bits_no_executor_one_worker_two_workers(local, system, client, method):
    one_worker = client.get_executor(workers=[sorted(client.scheduler_info()["workers"])[0]])
    on_one = _evidence(system, method, executor=one_worker)
    on_two = _evidence(system, method, executor=client)
    assert_same_bits(on_one, local[method])
    assert_same_bits(on_two, local[method])
    attrs = on_two.run_attrs
    assert attrs["executor"] == "dask" and on_one.run_attrs["executor"] == "ClientExecutor"
    assert attrs["partial"] == 0 and attrs["chunks_done"] == attrs["chunks_total"] == local[method].run_attrs[
        "chunks_total"]
    assert attrs["payload_bytes"] > 0 and attrs["chunk_bytes"] > 0 and attrs["sampling_time"] > 0
    assert on_one.run_attrs["n_workers"] == 1


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_default_chunks_with_an_executor(system, client):
    """Without n_chunks an executor splits the paths into 8 chunks, as n_chunks=8 does here."""
    options = {k: v for k, v in RUNS["bar"].items() if k != "n_chunks"}
    common = dict(method="bar", random_seed=SEED, progressbar=False, **options)
    remote = pmz.evidence(system.model, executor=client, chunk_timeout=TIMEOUT, **common)
    here = pmz.evidence(system.model, n_chunks=8, **common)
    assert_same_bits(remote, here)
    assert remote.run_attrs["chunks_total"] == 16  # 8 forward, 8 reverse


# --------------------------------------------------------------------------
# auto and bridge: groups of chains, the same bits on any executor for a given n_chunks
# --------------------------------------------------------------------------

CHAIN_RUNS = {  # small runs; auto's chains in 2 groups, bridge's pm.sample chains one per group
    "auto": dict(n_chains=8, n_chunks=2, latent=False),  # the chains (the importance route needs no executor)
    "bridge": dict(n_chains=2, n_draws=400, nuts_tune=300, n_chunks=2),
}


def _posterior_draws(res):
    group = "posterior" if "posterior" in res.group_names() else None
    return None if group is None else {name: np.asarray(v.values) for name, v in res[group].data_vars.items()}


def assert_same_draws(a, b):
    draws_a, draws_b = _posterior_draws(a), _posterior_draws(b)
    assert (draws_a is None) == (draws_b is None)
    for name, value in (draws_a or {}).items():
        np.testing.assert_array_equal(value, draws_b[name], err_msg=name)


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
@pytest.mark.parametrize("method", sorted(CHAIN_RUNS))
def test_chain_groups_same_bits_no_executor_one_worker_two_workers(system, client, method):
    """auto's chains and bridge's pm.sample chains in two groups: no executor, one Dask worker and two give the
    same bits (estimate, work, posterior draws), and the estimate is right."""
    common = dict(method=method, random_seed=SEED, progressbar=False, **CHAIN_RUNS[method])
    here = pmz.evidence(system.model, **common)
    assert abs(here.log_z - system.log_z) < 4 * here.log_z_se + 0.02 and here.log_z_se < 0.05
    one_worker = client.get_executor(workers=[sorted(client.scheduler_info()["workers"])[0]])
    for executor in (one_worker, client):
        remote = pmz.evidence(system.model, executor=executor, chunk_timeout=TIMEOUT, **common)
        assert_same_bits(remote, here)
        assert_same_draws(remote, here)
        assert remote.run_attrs["chunks_done"] == remote.run_attrs["chunks_total"] >= 2
    assert remote.run_attrs["n_workers"] == 2 and remote.run_attrs["sampling_time"] > 0


def test_auto_one_group_is_the_call_without_chunks(system):
    """n_chunks=1 (all chains adapt together) and an executor without n_chunks are the call without an executor,
    bit for bit; a thread pool with n_chunks=3 is the same 3 groups run here one after the other."""
    common = dict(random_seed=SEED, progressbar=False, n_chains=12)
    whole = pmz.evidence(system.model, **common)
    assert_same_bits(pmz.evidence(system.model, n_chunks=1, **common), whole)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        assert_same_bits(pmz.evidence(system.model, executor=pool, chunk_timeout=TIMEOUT, **common), whole)
    here = pmz.evidence(system.model, n_chunks=3, **common)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        threaded = pmz.evidence(system.model, executor=pool, n_chunks=3, chunk_timeout=TIMEOUT, **common)
    assert_same_bits(threaded, here)
    assert_same_draws(threaded, here)
    for res in (whole, here):
        assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + 0.02 and res.log_z_se < 0.05


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
@pytest.mark.parametrize("route", ["path", "tempered"])
def test_auto_routes_after_the_chains_on_an_executor(route):
    """The routes after the chains split their paths (path route: a skewed posterior with a strict k-hat limit) or
    SMC runs (tempered route: 21 binary labels, too many joint values to sum) on the executor: the same bits as
    the same groups of chains here, within 4 se (+0.02) of the exact log Z. The 21 labels can only take the
    tempered route; the 8 chains of the 3-coordinate posterior agree far within the split R-hat limit 1.05
    (1.001-1.005 over 8 seeds), and the strict k-hat limit sends them to the path."""
    if route == "path":
        system = pmz.systems.nig_regression()
        model, truth, extra = system.model, system.log_z, dict(max_khat=0.05, n_chains=8, latent=False)
    else:
        import pymc as pm
        from scipy import stats

        y = np.linspace(-1.0, 3.0, 21)
        with pm.Model() as model:
            k = pm.Bernoulli("k", 0.3, shape=21)
            pm.Normal("y", 2.0 * k, 1.0, observed=y)
        truth = float(np.log(0.7 * stats.norm.pdf(y, 0, 1) + 0.3 * stats.norm.pdf(y, 2, 1)).sum())
        extra = {}
    common = dict(random_seed=SEED, progressbar=False, n_chunks=2, **extra)
    here = pmz.evidence(model, **common)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        threaded = pmz.evidence(model, executor=pool, chunk_timeout=TIMEOUT, **common)
    assert here.run_attrs["route"] == threaded.run_attrs["route"] == route
    assert_same_bits(threaded, here)
    assert abs(here.log_z - truth) < 4 * here.log_z_se + 0.02 and here.log_z_se < 0.1
    assert threaded.run_attrs["chunks_total"] > here.run_attrs["chunks_total"]  # the paths or runs were split too


def test_auto_and_bridge_keep_no_checkpoint(system, tmp_path):
    for method in ("auto", "bridge"):
        with pytest.raises(ValueError, match="not checkpoint="):
            pmz.evidence(system.model, method=method, checkpoint=tmp_path / "run.nc", progressbar=False)
    with pytest.raises(ValueError, match="n_chunks must be at most n_chains // 2 = 4"):
        pmz.evidence(system.model, n_chains=8, n_chunks=5, progressbar=False)
    with pytest.raises(ValueError, match="n_chunks must be at most n_chains = 2"):
        pmz.evidence(system.model, method="bridge", n_chunks=3, progressbar=False)


@pytest.mark.slow  # two fresh processes import PyMC
def test_process_pool(local, system):
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as pool:
        res = _evidence(system, "smc", executor=pool)
    assert_same_bits(res, local["smc"])
    assert res.run_attrs["executor"] == "ProcessPoolExecutor" and res.run_attrs["worker_compile_time"] > 0


# --------------------------------------------------------------------------
# interruption and checkpoints
# --------------------------------------------------------------------------


class InterruptAfter(concurrent.futures.Executor):
    """An executor that runs each chunk at once, in this thread, through the worker's path (the payload pickled,
    unpickled and compiled), and raises KeyboardInterrupt at the submission after the first ``k``: Ctrl-C in the
    middle of a run."""

    def __init__(self, k):
        self.k, self.n = k, 0

    def submit(self, fn, *args, **kwargs):
        if self.n >= self.k:
            raise KeyboardInterrupt
        self.n += 1
        future = concurrent.futures.Future()
        future.set_result(fn(*args, **kwargs))
        return future


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
@pytest.mark.parametrize("method, k", [("bar", 3), ("rts", 1), ("smc", 1)])
def test_interrupted_run_is_partial_and_resumes_to_the_same_bits(local, system, tmp_path, method, k):
    """The partial estimate within 4 se + 0.05 of the truth (fails with probability about 6e-5; |z| < 2.1 over 8
    seeds); the resumed run is the unchunked run, bits and reliability verdict (not ``reliable`` itself, which is a
    property of the seed's run), and no longer partial."""
    path = tmp_path / "run.nc"
    with pytest.warns(UserWarning, match="PARTIAL RESULT"):
        partial = _evidence(system, method, executor=InterruptAfter(k), checkpoint=path)
    attrs = partial.run_attrs
    assert attrs["partial"] == 1 and attrs["chunks_done"] == k < attrs["chunks_total"]
    assert not partial.reliable
    assert "PARTIAL RESULT" in partial.reliability_reason and "run.nc" in partial.reliability_reason
    assert np.isfinite(partial.log_z) and np.isfinite(partial.log_z_se) and partial.log_z_se > 0
    assert abs(partial.log_z - system.log_z) < 4 * partial.log_z_se + 0.05  # the se of the chunks it has
    resumed = _evidence(system, method, checkpoint=path)  # the same call, here: the rest of the chunks
    assert resumed.run_attrs["chunks_resumed"] == k and resumed.run_attrs["partial"] == 0
    assert "PARTIAL RESULT" not in resumed.reliability_reason
    assert (resumed.reliable, resumed.reliability_reason) == (local[method].reliable, local[method].reliability_reason)
    assert_same_bits(resumed, local[method])
    again = _evidence(system, method, checkpoint=path)  # everything in the file: nothing runs
    assert again.run_attrs["chunks_resumed"] == again.run_attrs["chunks_total"]
    assert_same_bits(again, local[method])


def test_ctrl_c_in_process_returns_the_finished_chunks(system, monkeypatch):
    from pmz.methods import annealing

    calls = []

    @functools.wraps(annealing.run_ais)
    def interrupted_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return run_ais(*args, **kwargs)

    run_ais = annealing.run_ais
    monkeypatch.setattr(annealing, "run_ais", interrupted_third)
    with pytest.warns(UserWarning, match="PARTIAL RESULT: interrupted with 2 of 8 chunks"):
        res = _evidence(system, "bar")
    assert res.run_attrs["partial"] == 1 and not res.reliable
    assert res["work"].sizes["path"] == 32 and res["work"].sizes["reverse_path"] == 32


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_resampled_reverse_starts_wait_for_the_forward_chunks(system):
    """Reverse starts resampled from the forward run: the forward chunks first, then the reverse ones (same bits on
    a thread pool, whose workers rebuild the model from the payload as a process would)."""
    options = dict(RUNS["bar"], reverse_start="resample")
    here = pmz.evidence(system.model, method="bar", random_seed=SEED, progressbar=False, **options)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        there = pmz.evidence(system.model, method="bar", random_seed=SEED, progressbar=False, executor=pool,
                             chunk_timeout=TIMEOUT, **options)
    assert_same_bits(here, there)
    assert str(there["work"].attrs["reverse_start"]) == "resample"
    with pytest.raises(KeyboardInterrupt, match="before any reverse chunk"):  # no reverse path without all forward
        pmz.evidence(system.model, method="bar", random_seed=SEED, progressbar=False, executor=InterruptAfter(2),
                     **options)


class NeverFinishes(concurrent.futures.Executor):
    """An executor whose chunks never finish (a cluster that stopped answering)."""

    def submit(self, fn, *args, **kwargs):
        return concurrent.futures.Future()


def test_chunk_timeout_stops_waiting(system):
    with pytest.raises(TimeoutError, match="no chunk finished in 0.5 s"):
        pmz.evidence(system.model, method="smc", n_particles=100, n_runs=2, random_seed=1, progressbar=False,
                     executor=NeverFinishes(), chunk_timeout=0.5)


def test_interrupted_before_any_chunk_raises(system):
    with pytest.raises(KeyboardInterrupt):
        _evidence(system, "smc", executor=InterruptAfter(0))


def test_checkpoint_of_another_call_is_an_error(system, tmp_path):
    path = tmp_path / "run.nc"
    _evidence(system, "smc", checkpoint=path)
    with pytest.raises(ValueError, match="different call"):
        _evidence(system, "smc", checkpoint=path, n_particles=200)
    assert _evidence(system, "smc", checkpoint=path).run_attrs["chunks_resumed"] == 2


def test_checkpoint_in_use_by_another_run_is_a_pmz_error(system, tmp_path):
    """Two runs on one checkpoint file at once (HDF5's BlockingIOError in the middle of one of them before): the
    second is refused before it runs, naming the holder; once the first is done the file is free again."""
    from pmz.execution.checkpoints import Checkpoint

    path = tmp_path / "run.nc"
    other = Checkpoint(path, "another run's fingerprint")  # holds the file's lock, as a run in progress does
    with pytest.raises(ValueError, match=r"in use by another run \(pid \d+ on"):
        _evidence(system, "smc", checkpoint=path)
    other.close()
    assert _evidence(system, "smc", checkpoint=path).run_attrs["chunks_done"] == 2
    assert _evidence(system, "smc", checkpoint=path).run_attrs["chunks_resumed"] == 2  # the lock was released


def test_checkpoint_of_another_prior_is_an_error(tmp_path):
    """Same data, same options, same seed, another prior: another model, so another call."""
    import pymc as pm

    def model(prior_sd):
        with pm.Model() as m:
            mu = pm.Normal("mu", 0.0, prior_sd)
            pm.Normal("y", mu, 1.0, observed=[0.3, -0.2, 0.9])
        return m

    common = dict(method="smc", n_particles=100, n_runs=2, random_seed=1, progressbar=False)
    pmz.evidence(model(2.0), checkpoint=tmp_path / "run.nc", **common)
    with pytest.raises(ValueError, match="different call"):
        pmz.evidence(model(3.0), checkpoint=tmp_path / "run.nc", **common)
    assert pmz.evidence(model(2.0), checkpoint=tmp_path / "run.nc", **common).run_attrs["chunks_resumed"] == 2


@pytest.mark.parametrize("which", ["work", "trace", "smc"])
def test_checkpoint_records_round_trip_exactly(local, system, tmp_path, which):
    if which == "work":
        record = _ais(system, 20, 4)
        from pmz.records import DrawsCheck, DrawsTrust, RunNotes

        notes = RunNotes(description={"a": [0.0, 1.0, 2.0], "b": [1, "x"], "c": 0.1}, metric_beta=np.arange(3.0),
                         metric_g=np.ones(3), schedule_rule="power", interrupted="cut",
                         draws=DrawsTrust(check=DrawsCheck(0.1, 0.02, "far"), divergences=3, divergent="many"))
        record = WorkRecord(**{**record.__dict__, "notes": notes})
    elif which == "trace":
        record = TemperingTrace(
            betas=np.linspace(0, 1, 3), log_zhat=np.zeros(3), log_prior=np.log(np.full(3, 1 / 3)),
            **{name: np.random.default_rng(1).random((2, 3)) for name in (
                "batch_q", "batch_qU", "batch_qU2", "batch_counts", "batch_U", "batch_U2")},
            batch_size=np.array([4, 4]), level_traces=np.zeros((2, 0), dtype=int), acceptance=np.array([np.nan, 1, 2]),
        )
    else:
        from pmz.runners.resample_move import smc_runs, smc_settings
        from pmz.methods.smc import build_sequence
        from pmz.methods.setup import compiled_model, make_family, make_kernel
        from pmz.methods.options import SMCOptions

        options = SMCOptions()
        target = compiled_model(system.model, options)
        family, kernel = make_family(target, "prior"), make_kernel(options, target)
        sequence = build_sequence(family, kernel, options, np.random.default_rng(0), target)
        record = smc_runs(sequence, np.random.default_rng(2).spawn(2), smc_settings(n_particles=50), first_run=1)
    ds = record_dataset(record, "digest")
    ds.to_netcdf(tmp_path / "r.nc", engine="h5netcdf")
    import xarray as xr

    with xr.open_dataset(tmp_path / "r.nc", engine="h5netcdf") as back:
        restored = dataset_record(back.load())
    assert type(restored) is type(record)
    for name, value in record.__dict__.items():
        other = restored.__dict__[name]
        if isinstance(value, np.ndarray):
            assert other.dtype == value.dtype and other.shape == value.shape, name
            np.testing.assert_array_equal(other, value, err_msg=name)
        elif isinstance(value, dict):
            assert set(value) == set(other), name
            for key in value:
                expected = np.asarray(value[key], dtype=object)
                np.testing.assert_array_equal(np.asarray(other[key], dtype=object), expected)
        elif name == "notes":  # RunNotes: every field, arrays by value
            assert json.dumps(other.to_dict(), sort_keys=True) == json.dumps(value.to_dict(), sort_keys=True)
            assert other.draws == value.draws and other.interrupted == value.interrupted
        else:
            assert other == value, name


# --------------------------------------------------------------------------
# what cannot be chunked, and bad executors
# --------------------------------------------------------------------------


def test_bad_executors_and_chunk_counts(system):
    with pytest.raises(TypeError, match="concurrent.futures.Executor"):
        pmz.evidence(system.model, method="bar", executor=object(), progressbar=False)
    with pytest.raises(ValueError, match="n_chunks <= 8"):
        pmz.evidence(system.model, method="ais", n_paths=8, n_chunks=9, progressbar=False)


# --------------------------------------------------------------------------
# a worker that dies (last: it restarts one of the module's workers)
# --------------------------------------------------------------------------


@pytest.mark.slow  # a worker restarts (imports PyMC, compiles) while the other runs the chunks
def test_killed_worker_gives_the_same_bits(system, client):
    options = dict(method="bar", random_seed=SEED, progressbar=False, n_paths=256, n_temps=300, n_chunks=8)
    here = pmz.evidence(system.model, **options)
    running, killed = threading.Event(), []
    pids = client.run(os.getpid)  # {worker address: process id}; the cluster runs on this machine

    def kill_a_busy_worker():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and running.is_set():
            busy = [w for w, keys in client.processing().items() if any("pmz-chunk" in str(k) for k in keys)]
            if busy:
                time.sleep(0.2)  # mid-chunk
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed.append(busy[0])
                return
            time.sleep(0.02)

    running.set()
    killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
    killer.start()
    try:
        remote = pmz.evidence(system.model, executor=client, chunk_timeout=TIMEOUT, **options)
    finally:
        running.clear()
        killer.join(timeout=5)
    assert killed, "no worker was killed while the chunks ran"
    assert_same_bits(remote, here)
    client.wait_for_workers(2, timeout=120)  # the nanny restarts the killed worker, at a new address
    assert killed[0] not in client.scheduler_info()["workers"]
