"""Copies of committed bundles with parts left out, for the tests of what a trace shows without them."""

import json
import shutil

VALUE_KEYS = ("coreFile", "startCoreFile")
THREAD_VALUE_KEYS = ("syscallResults", "registerStates")


def without_values(folder, destination):
    """A copy of the bundle in ``folder`` without its known states (cores, system calls' results, register states):
    the pc alone, as a hardware trace without a core has.  Returns the copy's trace.json."""
    copy = destination / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("cores", "syscalls", "registers"))
    listed = json.loads((copy / "trace.json").read_text())
    for process in listed["processes"]:
        for key in VALUE_KEYS:
            process.pop(key, None)
        for thread in process["threads"]:
            for key in THREAD_VALUE_KEYS:
                thread.pop(key, None)
    (copy / "trace.json").write_text(json.dumps(listed))
    return copy / "trace.json"
