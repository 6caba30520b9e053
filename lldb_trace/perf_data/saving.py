"""Putting a perf.data file in place whole: written beside its destination, then renamed over it."""

import os

from ..bundle.saver import SaveError
from ..given_paths import given_path
from ..sources.context_switches import parse_context_switches, read_context_switches
from .writer import CpuStream, perf_data_bytes


def save_perf_data(path, process, cpu, tsc_conversion=None, cpu_streams=(), force=False):
    """Write the perf.data of ``process`` (a SaveProcess) at ``path``; returns its absolute Path.

    An existing file is replaced only with ``force``; an error or Ctrl-C leaves no partial file.
    """
    path = given_path(path, "the perf.data (a file to write)").expanduser().absolute()
    if path.is_dir():
        raise SaveError(f"{path} is a folder: give the name of the perf.data file to write")
    if path.exists() and not force:
        raise SaveError(f"{path} already exists: add --force to replace it")
    if not path.parent.is_dir():
        raise SaveError(f"{path.parent} does not exist: create it first")
    data = perf_data_bytes(process, cpu, tsc_conversion, cpu_streams)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError as error:
        raise SaveError(f"cannot write {path}: {error.strerror}") from None
    finally:
        partial.unlink(missing_ok=True)
    return path


def cpu_streams(bundle):
    """The CpuStreams of a per-cpu bundle (from its files, or a perf.data's cpus); () for a per-thread one."""
    streams = []
    for cpu_trace in bundle.cpus:
        if cpu_trace.switch_data is not None:
            switches = parse_context_switches(cpu_trace.switch_data, cpu_trace.cpu_id, bundle.tsc_conversion)
        else:
            switches = read_context_switches(cpu_trace.context_switches, cpu_trace.cpu_id, bundle.tsc_conversion)
        streams.append(CpuStream(cpu_trace.cpu_id, bytes(cpu_trace.read_trace()), switches.records))
    return tuple(streams)
