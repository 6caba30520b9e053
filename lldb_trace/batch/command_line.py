"""``lldb-trace profile|calls|find|export``: one analysis over many recordings, on this machine's cores or a cluster.

Each command lists the threads of every recording (a job per recording), runs
its analysis on each thread (a job per thread), and merges the answers in the
order of the recordings and their threads.  Options are named as the pt
command's are; what is new is where the work runs (--cluster, --workers),
--keep-going, and -o for the file to write.  cli.py imports this module for
every command, so Dask is imported only when one of these runs.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..errors import LldbTraceError
from ..export import FORMATS, WEIGHTS
from ..option_table import RANGE, SEARCH_PATH, SYSROOT, TID, Option, add_arguments, parse_number
from ..profile import GROUPINGS, SORTS

DEFAULT_COUNT = 20
SPLIT_MB = 64.0  # a thread's trace of this many MB is decoded across the workers (split_decode.py)


class BatchError(LldbTraceError):
    """A batch command asked for something it cannot do: no threads, a bad search, a bad sort."""


COUNT = Option(
    "c", "count", f"How many rows to show (default {DEFAULT_COUNT}; 0: all).", "Count", "number", default=DEFAULT_COUNT
)
JSON = Option("j", "json", "Print JSON.")
PER_THREAD_RANGE = RANGE.with_help("Only items FROM:TO of each thread (e.g. 1000:2000, -5000:).")
PROFILE_OPTIONS = (
    Option("b", "by", "What a row is.", choices=tuple(GROUPINGS.items()), default="function"),
    PER_THREAD_RANGE,
    COUNT,
    Option("s", "sort", "The order of the rows.", choices=tuple((name, name) for name in SORTS), default="exclusive"),
    JSON,
)
CALLS_OPTIONS = (
    PER_THREAD_RANGE,
    COUNT.with_help(f"How many functions to show (default {DEFAULT_COUNT}; 0: all)."),
    JSON,
)
FIND_OPTIONS = (
    Option("f", "function", "Calls of this function.", "FunctionName"),
    Option("l", "line", "Executions of this source line (FILE:LINE).", "FileLineColumn"),
    Option("a", "address", "Executions of the instruction at this address.", "AddressOrExpression"),
    COUNT.with_help(f"How many to list per thread, newest first (default {DEFAULT_COUNT}; 0: all)."),
    JSON,
)
EXPORT_OPTIONS = (
    Option("F", "format", "What to write.", choices=tuple((name, form.about) for name, form in FORMATS.items())),
    PER_THREAD_RANGE,
    Option("m", "min-duration", "Leave out calls shorter than this (100 instructions, or 10us).", "Value"),
    Option("w", "weight", "The axis and the folded weights.", choices=tuple(WEIGHTS.items())),
    Option("f", "force", "Replace the output file if it exists."),
)
COMMANDS = {  # name: (what it answers, its own options)
    "profile": ("calls, instructions and time per function, line or module, over many recordings", PROFILE_OPTIONS),
    "calls": ("how often each function and module was called, over many recordings", CALLS_OPTIONS),
    "find": ("where each recording's threads called a function, ran a line or an address", FIND_OPTIONS),
    "export": ("many recordings' calls as one folded, speedscope, Chrome or Perfetto file", EXPORT_OPTIONS),
}


def add_batch_parsers(commands: Any) -> None:
    """Add the four batch subcommands to ``lldb-trace``'s ``commands`` (argparse subparsers)."""
    for name, (summary, options) in COMMANDS.items():
        parser = commands.add_parser(
            name,
            help=summary,
            description=f"{summary[0].upper()}{summary[1:]}: what 'pt {name}' answers for one thread, for every"
            " traced thread of every RECORDING, computed by worker processes on this machine's cores or on a Dask"
            " cluster (--cluster) and merged exactly. See docs/batch.md.",
        )
        parser.add_argument(
            "inputs",
            nargs="+",
            metavar="RECORDING",
            help="a bundle (its folder or JSON file), a perf.data, or a folder",
        )
        add_arguments(parser, options)
        _add_common(parser, export=name == "export")
        parser.set_defaults(run=_RUNS[name])


def _add_common(parser: argparse.ArgumentParser, export: bool) -> None:
    add_arguments(parser, (TID.with_help("Only this thread of each recording (repeat for several)."),))
    output = "the file to write (an existing one only with --force)" if export else "write to FILE, not stdout"
    parser.add_argument("-o", "--output", metavar="FILE", required=export, help=output)
    cluster = "a Dask scheduler: tcp://HOST:PORT, or its scheduler file (default: worker processes on this machine)"
    parser.add_argument("--cluster", metavar="ADDRESS", help=cluster)
    workers = "how many worker processes to start on this machine (default: one per core)"
    parser.add_argument("--workers", type=_positive, metavar="N", help=workers)
    timeout = "how long to wait for the --cluster scheduler to answer (default 30)"
    parser.add_argument("--timeout", type=_more_than_zero, default=30.0, metavar="SECONDS", help=timeout)
    split = f"decode a thread whose trace has at least this many MB in pieces across the workers (default {SPLIT_MB})"
    parser.add_argument("--split-above", type=_more_than_zero, default=SPLIT_MB, metavar="MB", help=split)
    keep_going = "leave out the recordings that fail, naming them, instead of failing"
    parser.add_argument("--keep-going", action="store_true", help=keep_going)
    add_arguments(parser, (replace(SEARCH_PATH, short=""), replace(SYSROOT, short="")))  # -s, -r: sort, range


def _more_than_zero(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0: {text}")
    return value


def _positive(text: str) -> int:
    value = parse_number(text)
    if not value:
        raise argparse.ArgumentTypeError(f"must be a number of 1 or more: {text}")
    return value


def _profile(args: argparse.Namespace) -> None:
    from .analyses import ProfileOf
    from .merge import merged_profile
    from .views import profile_document, profile_report

    answered, missing = _per_thread(args, ProfileOf(args.by, args.range))
    merged = merged_profile([made for _thread, made in answered], args.by)
    if args.sort in ("time", "inclusive-time") and not merged.time_unit:
        raise BatchError(f"cannot sort by {args.sort}: not every thread has timing in the same unit")
    rows = merged.sorted_rows(args.sort)
    shown = rows[: args.count or None]
    threads = [thread for thread, _made in answered]
    if args.json:
        _emit(args, profile_document(merged, shown, args.sort, threads, args.range, missing), "profile")
    else:
        _emit(args, profile_report(merged, shown, threads, args.range), "profile")


def _calls(args: argparse.Namespace) -> None:
    from .analyses import CallsOf
    from .merge import merged_calls
    from .views import calls_document, calls_report

    answered, missing = _per_thread(args, CallsOf(args.range))
    totals = merged_calls(counts for _thread, counts in answered)
    threads = [thread for thread, _counts in answered]
    text = (
        calls_document(totals, args.count, threads, missing) if args.json else calls_report(totals, args.count, threads)
    )
    _emit(args, text, "calls")


def _find(args: argparse.Namespace) -> None:
    from .analyses import FindIn
    from .views import found_document, found_report

    function, line, address = _search(args)
    answered, missing = _per_thread(args, FindIn(function, line, address, args.count))
    notes = [found.note for _thread, found in answered]
    if all(notes):
        raise BatchError(f"{notes[0]}, in every recording")
    what = function or (f"{line[0]}:{line[1]}" if line else f"0x{address:x}")
    _emit(args, found_document(answered, missing) if args.json else found_report(answered, what), "matches")


def _export(args: argparse.Namespace) -> None:
    from ..export.output import check_path
    from .analyses import ExportOf
    from .export_file import write_export

    if args.format is None:
        raise BatchError(f"give --format {'|'.join(FORMATS)}")
    target = check_path(args.output, args.force)  # before minutes of work
    answered, _missing = _per_thread(args, ExportOf(args.range))
    exported = [thread for _name, thread in answered]
    done = write_export(exported, args.format, target, args.range, args.min_duration, args.weight)
    print(done.summary())


_RUNS: dict[str, Callable[[argparse.Namespace], None]] = {
    "profile": _profile,
    "calls": _calls,
    "find": _find,
    "export": _export,
}


def _search(args: argparse.Namespace) -> tuple[str | None, tuple[str, int] | None, int | None]:
    """``(function, (file, line), address)`` with exactly one set, as ``pt find`` reads them."""
    given = [name for name in ("function", "line", "address") if getattr(args, name) is not None]
    if len(given) != 1:
        raise BatchError("give exactly one of --function NAME, --line FILE:LINE and --address ADDR")
    if args.function is not None:
        return args.function, None, None
    if args.line is not None:
        file, _, number = args.line.rpartition(":")
        line = parse_number(number)
        if not file or not line:
            raise BatchError(f"--line '{args.line}': give FILE:LINE, e.g. main.c:42")
        return None, (file, line), None
    address = parse_number(args.address)
    if address is None:
        raise BatchError(f"--address '{args.address}': give an address in hex (0x401000) or decimal")
    return None, None, address


def _per_thread(args: argparse.Namespace, analysis: Callable) -> tuple[list[tuple[Any, Any]], list]:
    """``([(ThreadName, answer)], failures)`` of ``analysis`` on every traced thread (or -t TID) of every
    recording, in their order; failures are those --keep-going let through, said on stderr."""
    from .cluster import connected
    from .engine import Failure, JobFailedError, Progress, run_jobs
    from .inputs import recordings
    from .jobs import Source, on_thread, traced_threads
    from .split_decode import analysed_here
    from .views import ThreadName

    if args.workers and args.cluster:
        raise BatchError(
            "--workers starts processes on this machine: with --cluster, the cluster's workers run the jobs"
        )
    found = recordings(args.inputs)
    run = uuid.uuid4().hex  # workers keep a recording open for the jobs of this run only
    sources = [Source(r.path, tuple(args.sysroot or ()), tuple(args.search_path or ()), run) for r in found]
    progress = Progress(sys.stderr, f"lldb-trace {args.command}")
    with connected(args.cluster, args.workers, args.timeout) as client:
        names = [r.name for r in found]
        listed, failures = run_jobs(client, traced_threads, [(s,) for s in sources], names, progress, args.keep_going)
        threads: list[tuple[Source, ThreadName]] = []
        for recording, source, tids in zip(found, sources, listed, strict=True):
            if tids == []:
                print(f"note: {recording.name} has no traced thread", file=sys.stderr)
            kept = [(pid, tid) for pid, tid in tids or () if not args.tid or tid in args.tid]
            threads.extend((source, ThreadName(recording.name, pid, tid)) for pid, tid in kept)
        if not threads:
            wanted = f"thread {', '.join(map(str, args.tid))}" if args.tid else "traced thread"
            raise BatchError(f"no {wanted} in {len(found)} recording(s): nothing to analyse")
        labels = [f"{thread.recording} (thread {thread.tid})" for _source, thread in threads]
        workers = sum(client.nthreads().values())
        split, more = _split_plans(client, threads, labels, workers, args, progress)
        failures += more
        pieces = max(1, workers // len(threads))
        whole = [k for k in range(len(threads)) if k not in split]
        jobs = [(threads[k][0], threads[k][1].pid, threads[k][1].tid, analysis, pieces) for k in whole]
        found_whole, more = run_jobs(client, on_thread, jobs, [labels[k] for k in whole], progress, args.keep_going)
        failures += more
        values: list[Any] = [None] * len(threads)
        for k, value in zip(whole, found_whole, strict=True):
            values[k] = value
        for k, plan in split.items():
            source, thread = threads[k]
            outcome = analysed_here(client, source, thread.pid, thread.tid, plan, analysis, labels[k], progress)
            if outcome.error is not None:
                if not args.keep_going:
                    raise JobFailedError(f"{labels[k]}: {outcome.error}")
                failures.append(Failure(labels[k], outcome.error))
            values[k] = outcome.value
    for failure in failures:
        print(f"warning: left out {failure.what}: {failure.error}", file=sys.stderr)
    if failures:
        print(f"warning: the answer leaves out the {len(failures)} named above (--keep-going)", file=sys.stderr)
    answered = [(thread, value) for (_source, thread), value in zip(threads, values, strict=True) if value is not None]
    if not answered:
        raise BatchError("every job failed: nothing to answer")
    return answered, failures


def _split_plans(
    client: Any, threads: list, labels: list[str], workers: int, args: argparse.Namespace, progress: Any
) -> tuple[dict[int, list], list]:
    """``({thread's place: its pieces}, failures)`` for the threads whose trace has at least --split-above MB,
    when the cluster has more than one worker (split_decode.py)."""
    from .engine import run_jobs
    from .split_decode import planned_pieces

    if workers < 2:
        return {}, []
    least = max(1, int(args.split_above * 2**20))
    jobs = [(source, thread.pid, thread.tid, workers, least) for source, thread in threads]
    plans, failures = run_jobs(client, planned_pieces, jobs, labels, progress, args.keep_going)
    failed = {failure.what for failure in failures}
    return {k: plan for k, plan in enumerate(plans) if plan and labels[k] not in failed}, failures


def _emit(args: argparse.Namespace, text: str, what: str) -> None:
    """Print ``text``, or write it to -o FILE whole (replacing it) and say so."""
    if args.output is None:
        print(text)
        return
    from ..export.output import check_path, staged

    path = check_path(args.output, True)
    with staged(path) as out:
        out.write(text + "\n")
    print(f"wrote the {what} of {len(args.inputs)} input(s) to {path}")
