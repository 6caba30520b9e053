"""Where batch jobs run: a Dask cluster started on this machine, or an existing Dask scheduler.

Dask distributed rather than Ray: it installs with pip alone, runs a local
cluster of worker processes without any daemon, and a cluster is two
commands (``dask scheduler``, ``dask worker tcp://HOST:PORT``) on machines
that share the recordings' storage.  Locally every core runs one worker
process with one thread (the decoding and analyses are Python: threads would
share one core), with no memory limit (one large trace may need much of the
machine) and without Ctrl-C (this process cancels the jobs and stops them).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from ..decode.workers import worker_count
from ..errors import LldbTraceError
from . import worker_setup

DASK_SCHEMES = ("tcp", "tls")
QUIET = logging.CRITICAL  # Dask's own logging (a worker restarted, versions) says nothing the command does not


class ClusterError(LldbTraceError):
    """No cluster to run on: an address that is not a Dask scheduler's, or one that does not answer."""


@contextlib.contextmanager
def connected(address: str | None, workers: int | None, timeout: float) -> Iterator:
    """A distributed.Client of the scheduler at ``address`` (tcp://HOST:PORT or a scheduler file), or of
    a local cluster of ``workers`` processes (default: one per core) when ``address`` is None."""
    with _quiet_dask():
        from distributed import Client

        if address is None:
            with _local_cluster(worker_count(workers)) as cluster, Client(cluster) as client:
                yield client
            return
        try:
            client = Client(**_scheduler(address), timeout=timeout)
        except (OSError, TimeoutError):
            raise ClusterError(
                f"no Dask scheduler answered at {address} within {timeout:g} s: is 'dask scheduler' running there,"
                " and is the port open from here?"
            ) from None
        with client:
            yield client


def _scheduler(address: str) -> dict:
    """Client's arguments for ``address``; a one-line error for what is no Dask scheduler."""
    scheme, found, _rest = address.partition("://")
    if found and scheme == "ray":
        raise ClusterError(
            f"--cluster {address}: only Dask schedulers are supported (tcp://HOST:PORT, or a scheduler file):"
            " lldb-trace runs its jobs on Dask distributed, which needs no Ray cluster (see docs/batch.md)"
        )
    if found and scheme in DASK_SCHEMES:
        return {"address": address}
    if not found and Path(address).is_file():
        return {"scheduler_file": address}
    raise ClusterError(
        f"--cluster {address}: give a Dask scheduler's address (tcp://HOST:PORT) or its scheduler file"
        " ('dask scheduler --scheduler-file FILE')"
    )


@contextlib.contextmanager
def _local_cluster(workers: int) -> Iterator:
    """A LocalCluster whose workers leave Ctrl-C to this process: the first ones are started while it ignores
    SIGINT (they inherit that; a Ctrl-C in those seconds is lost), a restarted one ignores it once set up."""
    from distributed import LocalCluster

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=0,
            dashboard_address="127.0.0.1:0",  # no dashboard without bokeh: only the status routes, on any port
            silence_logs=QUIET,
            preload=[worker_setup.__name__],
        )
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    with cluster:
        yield cluster


@contextlib.contextmanager
def _quiet_dask() -> Iterator[None]:
    """Dask's loggers at QUIET while the command runs, as they were afterwards."""
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(QUIET)
    try:
        yield
    finally:
        logger.setLevel(level)
