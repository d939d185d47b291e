"""Running a method's chunks in this process, on a process pool or on a Dask cluster, with checkpoints.

``pmz.evidence(..., executor=client)`` (a ``dask.distributed.Client``) or ``executor=pool`` (any
``concurrent.futures.Executor``, e.g. a ``ProcessPoolExecutor``) runs the chunks of a chunked method (see
:mod:`pmz.runners.pooling`) where the executor puts them; without an executor they run here, one after the other.
Every chunked method runs through a :class:`ChunkRunner` (:func:`local_runner`: one chunk here, when the call has
no ``executor=``, ``checkpoint=`` or ``n_chunks``). The method decides the chunks (whole blocks of work) and gives
each path, chain or run its own random stream before any chunk runs, so the pooled record is the same bits whatever
ran where, in whichever order, however often (a chunk whose worker died runs again from the same arguments) and
however the work was cut into chunks.

Shipping: what the chunks share (the target, family, kernel, schedule and frozen kernel parameters, or the SMC
sequence) is pickled once per call into a *payload*, with a PyMC model's compiled functions replaced by the model
itself (cloudpickle) and compiled again on arrival: pickled PyTensor functions are 8-11 times larger than the model
and load a fraction of a second faster, but on PyTensor 3 the function rebuilt from its pickle can differ from the
client's in the last bits, while the model compiled again in the worker gives the same bits (docs/scaling.md). Each
worker process (each thread of it) unpickles a payload once and keeps it (:data:`_PAYLOADS`), and compiles each
model once and keeps it for later calls (:data:`_COMPILED`), so a worker compiles once however many chunks it runs.
Chunks in one process (a thread pool, a Dask worker's threads) run one at a time: PyTensor work in two threads at
once gives other bits (:data:`pmz.threads.PYTENSOR_LOCK`).
A Dask client sends the payload to the cluster once (a task whose result is copied to every worker); a
``concurrent.futures`` executor sends it with every chunk. The result's attrs separate the workers' compile time
(``worker_compile_time``: unpickling, graph building and JIT) from their sampling time (``sampling_time``).

Interruption: Ctrl-C (KeyboardInterrupt) while chunks run stops waiting, cancels the chunks not yet finished and
returns what the finished ones give; ``pmz.evidence`` then marks the result partial and unreliable. With
``checkpoint="run.nc"`` every finished chunk is written to the file as it arrives (:mod:`pmz.execution.checkpoints`)
and a call with the same arguments takes the chunks it finds there instead of running them again.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import io
import os
import pickle
import socket
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..model.pymc import CompiledModel
from ..progress import progress_bar
from ..threads import PYTENSOR_LOCK, blas_thread_limit
from .checkpoints import Checkpoint, digest, target_description

__all__ = [
    "KEEP_ON_INTERRUPT",
    "local_runner",
    "Task",
    "ChunkOutput",
    "ChunkRunner",
    "run_chunk",
    "dumps",
    "executor_name",
]

DEFAULT_CHUNKS = 8  # chunks of a run split for executor= or checkpoint= when n_chunks is not given
KEEP_ON_INTERRUPT = (  # the advice of the "interrupted before any chunk finished" errors
    "a run split into chunks keeps the finished ones when interrupted: pass n_chunks=8, or checkpoint='run.nc' "
    "(a later call with the same arguments resumes from it)"
)


# --------------------------------------------------------------------------
# executors
# --------------------------------------------------------------------------


def _is_dask_client(executor) -> bool:
    return type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "scatter")


def executor_name(executor) -> str:
    """``"none"``, ``"dask"`` or the executor's class name; a TypeError for anything that cannot run chunks."""
    if executor is None:
        return "none"
    if _is_dask_client(executor):
        return "dask"
    if isinstance(executor, concurrent.futures.Executor):
        return type(executor).__name__
    raise TypeError(
        "pmz: executor must be a dask.distributed.Client or a concurrent.futures.Executor (e.g. "
        f"concurrent.futures.ProcessPoolExecutor()), got {type(executor).__name__}"
    )


# --------------------------------------------------------------------------
# shipping: pickling with models instead of compiled functions, once per worker
# --------------------------------------------------------------------------


_COMPILED: OrderedDict = OrderedDict()  # (model token, thread) -> CompiledModel rebuilt in this process
_CACHE_SIZE = 4
_CACHE_LOCK = threading.Lock()


def _cached(cache, key, build):
    """``cache[key]``, built by ``build()`` when missing; the least recently used entries beyond
    :data:`_CACHE_SIZE` are dropped. Keys carry the thread: a compiled function is not safe to share between
    threads. Builds (unpickling, compiling) run one at a time in a process (:data:`pmz.threads.PYTENSOR_LOCK`)."""
    key = (key, threading.get_ident())
    with _CACHE_LOCK:
        value = cache.get(key)
        if value is not None:
            cache.move_to_end(key)
            return value
    with PYTENSOR_LOCK:
        value = build()
    with _CACHE_LOCK:
        cache[key] = value
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)
    return value


def _compiled_model(token: str, blob: bytes) -> CompiledModel:
    """The CompiledModel of a pickled ``(model, potentials, mode, block_size)``: compiled once per process and
    thread, and kept for later calls on the same model."""

    def build():
        model, potentials, mode, block_size = pickle.loads(blob)
        return CompiledModel(model, potentials=potentials, mode=mode, block_size=block_size)

    return _cached(_COMPILED, token, build)


_MODEL_IDS = weakref.WeakKeyDictionary()  # CompiledModel -> an id for this session (pmz compiles a model once)


def _model_token(compiled: CompiledModel) -> str:
    """What a worker keeps a rebuilt model under: this session's id of the compiled model and the values of its
    data (``pm.Data`` set since, or new observations, make a new token). A PyMC model's pickle changes from call to
    call (PyMC and PyTensor cache things on it), so it cannot serve as the key itself."""
    model_id = _MODEL_IDS.setdefault(compiled, uuid.uuid4().hex)
    data = {v.name: np.asarray(v.get_value()) for v in compiled.model.data_vars}
    return digest(model_id, data, target_description(compiled))[:24]


def dumps(obj) -> bytes:
    """cloudpickle ``obj``, every :class:`~pmz.model.pymc.CompiledModel` in it as its PyMC model and settings
    (compiled again where it is loaded, once per process: :func:`_compiled_model`)."""
    import cloudpickle

    class Pickler(cloudpickle.Pickler):
        def reducer_override(self, value):
            if isinstance(value, CompiledModel):
                blob = cloudpickle.dumps((value.model, value.potentials, value.mode_option, value.block_size))
                return _compiled_model, (_model_token(value), blob)
            return super().reducer_override(value)

    buffer = io.BytesIO()
    Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


_PAYLOADS: OrderedDict = OrderedDict()  # (payload token, thread) -> (target, context) unpickled in this process


@dataclass(frozen=True)
class ChunkOutput:
    """What a chunk sends back: its record, the seconds spent compiling (unpickling the payload, building graphs,
    JIT) and sampling, the CPU seconds of both (less than their sum when the worker shared its core), where it ran,
    and the size of the pickled record."""

    record: object
    compile_time: float
    sampling_time: float
    worker: str
    result_bytes: int = 0
    cpu_time: float = 0.0


def _compile_seconds(target) -> float:
    return float(getattr(target, "compile_time", 0.0))


def run_chunk(token: str, payload: bytes, fn, arguments: dict, blas_threads) -> ChunkOutput:
    """Run one chunk on a worker: ``fn(**context, **arguments)``, the payload's ``(target, context)`` unpickled and
    compiled once per worker process and thread (a compiled function is not safe to call from two threads).

    Chunks in one process (the threads of a pool or of a Dask worker) run one at a time: any chunk may build or
    compile PyTensor graphs (its thread's first one compiles the model's functions; every ``pm.sample`` group of
    bridge sampling compiles its own), and PyTensor work in two threads at once gives other bits
    (:data:`pmz.threads.PYTENSOR_LOCK`)."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    target, context = _cached(_PAYLOADS, token, lambda: pickle.loads(payload))
    compile0 = _compile_seconds(target)
    t1 = time.perf_counter()
    with PYTENSOR_LOCK, blas_thread_limit(blas_threads):  # the lock first: BLAS limits set and restored in turn
        record = fn(**context, **arguments)
    elapsed = time.perf_counter() - t1
    compiled = _compile_seconds(target) - compile0
    return ChunkOutput(
        record=record,
        compile_time=(t1 - t0) + compiled,
        sampling_time=elapsed - compiled,
        worker=f"{socket.gethostname()}:{os.getpid()}",
        result_bytes=len(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)),
        cpu_time=time.process_time() - cpu0,
    )


def _same(value):
    return value


# --------------------------------------------------------------------------
# the runner
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One chunk: ``key`` (unique in the call, e.g. ``"forward-0003"``), the runner's keyword ``arguments`` of this
    chunk, and its ``work`` (units of the progress bar)."""

    key: str
    arguments: dict
    work: float = 1.0


class ChunkRunner:
    """Runs a call's chunks where ``executor`` says, keeps the checkpoint, and reports what it did.

    Parameters
    ----------
    executor : dask.distributed.Client, concurrent.futures.Executor or None
        None: the chunks run in this process, one after the other.
    checkpoint : str or os.PathLike, optional
        The netCDF file of finished chunks (:mod:`pmz.execution.checkpoints`).
    fingerprint : str
        The call's fingerprint (:func:`run_fingerprint`).
    progressbar : bool
        One bar for all chunks, wherever they run.
    timeout : float, optional
        Seconds to wait for the next chunk to finish before a TimeoutError.
    blas_threads : int or None
        The BLAS thread limit each chunk runs under (:mod:`pmz.threads`).
    """

    def __init__(self, *, executor=None, checkpoint=None, fingerprint="", progressbar=True, timeout=None,
                 blas_threads=1):
        self.executor = executor
        self.executor_name = executor_name(executor)
        self.checkpoint = None if checkpoint is None else Checkpoint(checkpoint, fingerprint)
        self.progressbar = progressbar
        self.timeout = timeout
        self.blas_threads = blas_threads
        self.interrupted = False
        self.n_tasks = self.n_done = self.n_resumed = 0
        self.worker_compile_time = self.sampling_time = self.chunk_wall_time = self.cpu_time = 0.0
        self.workers: set[str] = set()
        self.payload_bytes = 0
        self.task_bytes: list[int] = []
        self.result_bytes: list[int] = []
        self.outside_logp_evals = self.outside_grad_evals = 0

    # ---------------------------------------------------------------- public
    def close(self):
        """Release what the run holds (the checkpoint file's lock)."""
        if self.checkpoint is not None:
            self.checkpoint.close()

    def count(self, n_chunks, units: int, default: int | None = None) -> int:
        """The number of chunks: ``n_chunks`` as given; else, with an executor or a checkpoint, ``default``
        (:data:`DEFAULT_CHUNKS`) capped at ``units``; else one (the whole run here)."""
        if n_chunks is not None:
            return int(n_chunks)
        if self.executor is None and self.checkpoint is None:
            return 1
        return int(min(DEFAULT_CHUNKS if default is None else default, units))

    @property
    def partial(self) -> bool:
        """Whether some chunks did not finish (the run was interrupted)."""
        return self.n_done < self.n_tasks

    def whole_here(self, n_chunks: int) -> bool:
        """Whether the run is one chunk in this process without a checkpoint: no finished chunk could be kept on
        Ctrl-C, so a runner function that can keep its finished part (SMC's runs, tempering's sweeps) should."""
        return self.executor is None and self.checkpoint is None and int(n_chunks) == 1

    def own_bar(self, n_chunks: int) -> bool:
        """Whether a run of ``n_chunks`` chunks shows the runner function's own progress bar (one chunk run here:
        the bar of the algorithm itself, e.g. AIS's temperatures) instead of this runner's bar over chunks."""
        return bool(self.progressbar) and self.executor is None and int(n_chunks) == 1

    def run(self, fn, target, context: dict, tasks: list[Task], *, desc: str) -> dict:
        """Run ``fn(**context, **task.arguments)`` for every task not in the checkpoint; ``{key: record}`` of the
        finished ones (all of them unless the run was interrupted: then :attr:`interrupted` is set). The runner's
        bar is off where ``context["progressbar"]`` is on (:meth:`own_bar`)."""
        self.n_tasks += len(tasks)
        digests = {}
        if self.checkpoint is not None:  # chunks are stored and found again by digest
            base = digest(fn, context)
            digests = {t.key: digest(base, t.arguments) for t in tasks}
        done = self._resume(tasks, digests)
        pending = [t for t in tasks if t.key not in done]
        t0 = time.perf_counter()
        show = self.progressbar and not context.get("progressbar", False)
        with progress_bar(total=sum(t.work for t in tasks), desc=desc, disable=not show) as bar:
            bar.update(sum(t.work for t in tasks if t.key in done))
            bar.set_postfix_str(self._postfix(len(done), len(tasks)), refresh=False)
            try:
                if self.executor is None:
                    self._run_here(fn, target, context, pending, digests, done, bar, len(tasks))
                else:
                    self._run_remote(fn, target, context, pending, digests, done, bar, len(tasks))
            except KeyboardInterrupt:
                self.interrupted = True
        self.chunk_wall_time += time.perf_counter() - t0
        self.n_done += len(done)
        return done

    def attrs(self) -> dict:
        """The result attrs of the chunked run."""
        mean = lambda values: float(np.mean(values)) if values else 0.0  # noqa: E731
        return {
            "executor": self.executor_name,
            "chunks_total": int(self.n_tasks),
            "chunks_done": int(self.n_done),
            "chunks_resumed": int(self.n_resumed),
            "partial": int(self.partial),
            "n_workers": len(self.workers),
            "worker_compile_time": float(self.worker_compile_time),
            "sampling_time": float(self.sampling_time),
            "chunk_wall_time": float(self.chunk_wall_time),
            "chunk_cpu_time": float(self.cpu_time),
            "payload_bytes": int(self.payload_bytes),
            "chunk_bytes": mean(self.task_bytes),
            "result_bytes": mean(self.result_bytes),
        }

    # ---------------------------------------------------------------- internals
    @staticmethod
    def _postfix(n_done, n_tasks):
        return f"chunks {n_done}/{n_tasks}"

    def _resume(self, tasks, digests) -> dict:
        done = {}
        if self.checkpoint is None:
            return done
        stored = self.checkpoint.load()
        for t in tasks:
            if t.key not in stored:
                continue
            stored_digest, record = stored[t.key]
            if stored_digest != digests[t.key]:
                raise ValueError(
                    f"pmz: chunk {t.key} of the checkpoint {self.checkpoint.path} ran with another setup than this "
                    "call's (schedule, tuned kernels, start states or random stream: with random_seed=None every "
                    "call differs); delete the file or pass another checkpoint path."
                )
            done[t.key] = record
            self.n_resumed += 1
            self._count_outside(record)
        return done

    def _count_outside(self, record):
        """Evaluations that were not made on this process's target (remote or earlier chunks)."""
        self.outside_logp_evals += int(getattr(record, "n_logp_evals", 0))
        self.outside_grad_evals += int(getattr(record, "n_grad_evals", 0))

    def _finish(self, task, output: ChunkOutput, digests, done, bar, n_tasks):
        done[task.key] = output.record
        self.worker_compile_time += output.compile_time
        self.sampling_time += output.sampling_time
        self.cpu_time += output.cpu_time
        self.workers.add(output.worker)
        if output.result_bytes:
            self.result_bytes.append(output.result_bytes)
        if self.checkpoint is not None:
            self.checkpoint.save(task.key, digests[task.key], output.record)
        bar.update(task.work)
        bar.set_postfix_str(self._postfix(len(done), n_tasks), refresh=False)

    def _collect(self, output: ChunkOutput, task, digests, done, bar, n_tasks):
        self._count_outside(output.record)
        self._finish(task, output, digests, done, bar, n_tasks)

    def _run_here(self, fn, target, context, pending, digests, done, bar, n_tasks):
        for task in pending:
            compile0 = _compile_seconds(target)
            t0, cpu0 = time.perf_counter(), time.process_time()
            record = fn(**context, **task.arguments)
            elapsed = time.perf_counter() - t0
            compiled = _compile_seconds(target) - compile0
            output = ChunkOutput(  # compile time: the client's own
                record, 0.0, elapsed - compiled, "local", cpu_time=time.process_time() - cpu0
            )
            self._finish(task, output, digests, done, bar, n_tasks)

    def _run_remote(self, fn, target, context, pending, digests, done, bar, n_tasks):
        if not pending:
            return
        payload = dumps((target, context))
        token = hashlib.sha256(payload).hexdigest()[:24]
        self.payload_bytes = max(self.payload_bytes, len(payload))
        futures, payload_ref = {}, payload
        dask = self.executor_name == "dask"
        try:
            if dask:  # a task holds the payload, copied to every worker (chunks go where a worker is free; a lost
                # copy is fetched from another worker or recomputed from the task)
                key = f"pmz-payload-{token}-{uuid.uuid4().hex[:8]}"
                payload_ref = self.executor.submit(_same, payload, pure=False, key=key)
                import distributed

                distributed.wait(payload_ref, timeout=self.timeout)
                self.executor.replicate([payload_ref])
            for task in pending:
                args = (token, payload_ref, fn, task.arguments, self.blas_threads)
                self.task_bytes.append(len(dumps((fn, task.arguments))) + (0 if dask else len(payload)))
                if dask:
                    future = self.executor.submit(
                        run_chunk, *args, pure=False, key=f"pmz-chunk-{task.key}-{uuid.uuid4().hex[:8]}"
                    )
                else:
                    future = self.executor.submit(run_chunk, *args)
                futures[future] = task
            waiting, last = set(futures), time.monotonic()
            while waiting:
                finished = [f for f in waiting if f.done()]
                if not finished:
                    if self.timeout is not None and time.monotonic() - last > self.timeout:
                        raise TimeoutError(
                            f"pmz: no chunk finished in {self.timeout:g} s (chunk_timeout); {len(done)} of {n_tasks} "
                            "chunks are done" + (" and in the checkpoint" if self.checkpoint is not None else "")
                        )
                    time.sleep(0.02)
                    continue
                last = time.monotonic()
                for future in sorted(finished, key=lambda f: futures[f].key):
                    waiting.discard(future)
                    self._collect(future.result(), futures[future], digests, done, bar, n_tasks)
        except KeyboardInterrupt:  # chunks that finished before the interrupt still count
            for future, task in sorted(futures.items(), key=lambda item: item[1].key):
                if task.key not in done and future.done() and not future.cancelled() and future.exception() is None:
                    self._collect(future.result(), task, digests, done, bar, n_tasks)
            raise
        finally:
            for future in futures:
                if not future.done():
                    future.cancel()
            if dask and payload_ref is not payload:
                payload_ref.release()


def local_runner(progressbar: bool = True) -> ChunkRunner:
    """The runner of a call without ``executor=``, ``checkpoint=`` or ``n_chunks``: its one chunk runs here, showing
    the algorithm's own progress bar. Every chunked method runs through a runner, so this is the same path as a
    distributed run."""
    return ChunkRunner(progressbar=progressbar)
