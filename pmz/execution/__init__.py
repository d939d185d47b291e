"""Running a method's work in chunks: in this process, on a thread or process pool, or on a Dask cluster, with
checkpoints (docs/scaling.md).

* :mod:`~pmz.execution.executors`: the chunk runner (one task per chunk, the compiled model shipped once per worker);
* :mod:`~pmz.execution.checkpoints`: each finished chunk's record in one netCDF file, resumed by a later call.
"""
