"""Batch analyses over many recordings, or one large one: ``lldb-trace profile|calls|find|export``.

Jobs (one per recording, then one per traced thread) run on a Dask cluster:
by default worker processes on this machine's cores, or an existing Dask
scheduler given with ``--cluster tcp://HOST:PORT``.  Workers open the
recordings by path, so every worker must see them at the same paths (shared
storage).  Answers equal the single-process ones (docs/batch.md says how).
No LLDB here.
"""

from .command_line import add_batch_parsers

__all__ = ["add_batch_parsers"]
