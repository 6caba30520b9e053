"""Run by each worker process of the local cluster as Dask starts it (a Dask preload).

Ctrl-C in a terminal reaches every process of its group: the command's
answer to it is to cancel the jobs and stop the cluster, so the workers
ignore it rather than each print a traceback.
"""

import signal
from typing import Any


def dask_setup(_worker: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
