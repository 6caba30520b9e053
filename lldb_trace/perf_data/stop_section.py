"""lldb_trace's own section of a perf.data: how each thread stopped, and which children and threads ran untraced.

perf.data has no record for a signal's siginfo or an exit status (PERF_RECORD_EXIT says only that a task
ended), so without this a crash saved as perf.data would load as a bare end of trace.  The section is a
perf_header_string holding JSON::

    {"format": "lldb_trace stops 1", "processes": [{"pid": 5707,
        "threads": [{"tid": 5707, "stopReason": {"signal": 11, "description": "...", "pc": "0x40113e"}}],
        "untracedChildren": [5708], "untracedThreads": [5709]}]}

with ``stopReason``, ``untracedChildren`` and ``untracedThreads`` as the JSON bundles have them
(bundle/stops.py): a thread that ran untraced in the process's memory makes it shared, and without it a saved
perf.data showed another thread's writes as this one's memory before they happened.  It is a
feature section (``Feature.LLDB_TRACE_STOPS``, the last feature bit) because perf reads the section table of
every bit set but only the sections of the features it knows: perf 6.1 reads such a file as before.  A
record type it does not know would stop its reading, and a file beside the perf.data would be lost when the
file is copied alone.  A section at that bit that does not start with lldb_trace's ``format`` is another
tool's, and left alone.
"""

import json
from dataclasses import dataclass

from ..bundle.schemas import SchemaError, check, schema
from ..bundle.stops import stop_from_json, stop_json
from ..perf.data_file import pack_string, unpack_string

FORMAT = "lldb_trace stops 1"


@dataclass(frozen=True)
class ProcessStops:
    """What the section says of one process: ``{tid: ThreadStop}``, the pids of its untraced children and the tids of
    its untraced threads."""

    stops: dict
    untraced_children: tuple = ()
    untraced_threads: tuple = ()


def pack_stop_section(process):
    """The section for ``process`` (a bundle.saver SaveProcess), or None when it has nothing to say."""
    threads = [{"tid": t.tid, "stopReason": stop_json(t.stop)} for t in process.threads if t.stop is not None]
    untraced_threads = process.untraced_threads
    if not threads and not process.untraced_children and not untraced_threads:
        return None
    listed = {"pid": process.pid, "threads": threads}
    if process.untraced_children:
        listed["untracedChildren"] = list(process.untraced_children)
    if untraced_threads:
        listed["untracedThreads"] = list(untraced_threads)
    return pack_string(json.dumps({"format": FORMAT, "processes": [listed]}, separators=(",", ":")))


def read_stop_section(data, fail):
    """``{pid: ProcessStops}`` from the section's bytes; ``fail(reason)`` raises for a damaged one of ours."""
    try:
        text = unpack_string(data)[0]
    except ValueError:
        return {}  # not a string: another tool's section at this bit
    if FORMAT not in text[:64]:
        return {}
    try:
        document = json.loads(text)
        check(document, _rules())
    except (ValueError, RecursionError) as error:
        fail(f"its lldb_trace stop section is damaged: not JSON ({error})")
    except SchemaError as error:
        fail(f"its lldb_trace stop section is damaged: {error}")
    return {
        listed["pid"]: ProcessStops(
            {thread["tid"]: stop_from_json(thread["stopReason"]) for thread in listed.get("threads", ())},
            tuple(listed.get("untracedChildren", ())),
            tuple(listed.get("untracedThreads", ())),
        )
        for listed in document["processes"]
    }


def _rules():
    """The section's JSON Schema, made of the native bundle schema's own parts."""
    native = schema("intel-pt-lldb")
    process = native["properties"]["processes"]["items"]["properties"]
    thread = process["threads"]["items"]["properties"]
    return {
        "$defs": native["$defs"],
        "type": "object",
        "required": ["format", "processes"],
        "additionalProperties": False,
        "properties": {
            "format": {"const": FORMAT},
            "processes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["pid"],
                    "additionalProperties": False,
                    "properties": {
                        "pid": process["pid"],
                        "untracedChildren": process["untracedChildren"],
                        "untracedThreads": process["untracedThreads"],
                        "threads": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["tid", "stopReason"],
                                "additionalProperties": False,
                                "properties": {"tid": thread["tid"], "stopReason": thread["stopReason"]},
                            },
                        },
                    },
                },
            },
        },
    }
