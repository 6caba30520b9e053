"""``lldb-trace``: the command-line entry point for work outside LLDB."""

import argparse
import sys
import sysconfig
from dataclasses import replace
from importlib import metadata
from pathlib import Path

from . import __version__
from .batch import add_batch_parsers
from .dap.command_line import add_dap_parser
from .errors import LldbTraceError
from .given_paths import given_path
from .option_table import (
    BUNDLE_FORMATS,
    DUMP_OPTIONS,
    SEARCH_PATH,
    SYSROOT,
    WORKERS,
    Option,
    add_arguments,
    given_arguments,
)
from .remote.command_line import add_serve_parser

FLAVOR = Option(  # LLDB's dumps follow target.x86-disassembly-flavor instead
    "", "flavor", "Disassembly syntax (default att).", choices=(("att", "AT&T"), ("intel", "Intel")), default="att"
)
MTC_PERIOD = 9  # an MTC every 512 crystal clocks (20 us): the software recorder runs far slower than hardware


_OVERFLOW_LOST = 64  # instructions an injected overflow loses, unless --overflow-lost says


def _versions(_args):
    from . import libipt

    print(f"lldb_trace {__version__}")
    try:
        major, minor, patch, _build, ext = libipt.library_version()
        print(f"libipt     {major}.{minor}.{patch}{ext}")
    except libipt.LibiptUnavailableError as error:
        print(f"libipt     missing: {error}")
    for package in ("capstone", "pyelftools", "jsonschema", "unicorn"):
        print(f"{package:<10} {metadata.version(package)}")
    try:
        import lldb

        print(f"lldb       {lldb.SBDebugger.GetVersionString().splitlines()[0]} ({Path(lldb.__file__).parent})")
    except ImportError:
        print("lldb       no Python bindings here (pip install 'lldb-trace[lldb]', or use the plugin inside LLDB)")


def _packets(args):
    from .bundle.file_checks import not_a_regular_file
    from .views.packets import NoPsbError, TruncatedStreamError, packet_lines

    try:
        # a pipe would block, /dev/zero never end
        kind = not_a_regular_file(given_path(args.trace, "the raw Intel PT trace file"))
        trace = None if kind else Path(args.trace).read_bytes()
    except OSError as error:
        raise LldbTraceError(f"cannot read trace file {args.trace}: {error.strerror}") from None
    if kind:
        raise LldbTraceError(f"{args.trace} is {kind}, not a trace file")
    try:
        for line in packet_lines(trace):
            print(line)
    except (TruncatedStreamError, NoPsbError) as error:  # after the listing: one line naming the file and why
        sys.stdout.flush()
        raise LldbTraceError(f"{args.trace}: {error}") from None


def _dump(args):
    """What ``pt dump`` prints for the bundle, symbolized from the module files (the ELF symbolizer)."""
    from . import api
    from .views import INFO, dump_options, dump_thread, render, render_info, session_info

    if args.file is not None:
        raise LldbTraceError(f"lldb-trace dump prints to its standard output: redirect it, '> {args.file}'")
    options = dump_options(given_arguments(args, DUMP_OPTIONS))
    from .perf_data import BinarySearch

    binaries = BinarySearch.default(args.sysroot or (), args.search_path or ())
    trace = api.open_bundle(args.bundle, args.flavor, binaries, workers=args.workers)
    if not trace.processes:
        raise LldbTraceError(f"{trace.bundle.path} holds no process (only a kernel): there is no thread to dump")
    process_trace = trace.thread(args.tid[0]).process_trace if args.tid else trace.processes[0]
    tids = [process_trace.thread(tid).tid for tid in dict.fromkeys(args.tid or [])] or [process_trace.stopped_tid]
    threads = [trace.thread(tid) for tid in tids]
    if options.mode == INFO:
        for tid in tids:  # the counts pt dump shows once LLDB has asked where the thread stopped
            process_trace.prepare(tid)
        number = {tid: k for k, tid in enumerate(process_trace.tids, start=1)}  # LLDB's thread indexes
        print(render_info(session_info(process_trace, threads, options.verbose, number.get), options))
        return
    dumps = [dump_thread(thread, options) for thread in threads]
    print(render(dumps, options))


def _record(args):
    from .capture.ptrace_recorder.bundle_writer import check_outdir, write_bundle
    from .capture.ptrace_recorder.ending_signals import ending_signals_held
    from .capture.ptrace_recorder.progress_line import RecordingProgress
    from .capture.ptrace_recorder.recording import RecordOptions, record

    if not args.program:
        raise LldbTraceError("no program given: lldb-trace record -o OUTDIR -- PROGRAM [ARGS...]")
    if args.program[0] == "--":
        args.program = args.program[1:]
    if not args.program:
        raise LldbTraceError("no program given: lldb-trace record -o OUTDIR -- PROGRAM [ARGS...]")
    program, *program_args = args.program
    if args.overflow_lost is not None and args.overflow_at is None:
        raise LldbTraceError("--overflow-lost goes with --overflow-at: it says how much the injected overflow loses")
    options = RecordOptions(
        until=args.until,
        from_start=args.from_start,
        all_threads=args.threads == "all",
        tsc=args.tsc or args.mtc or args.cyc,
        mtc_period=MTC_PERIOD if args.mtc or args.cyc else None,
        cycle_accurate=args.cyc,
        psb_period=_psb_period(args.psb_period, args.buffer),
        buffer_kb=args.buffer,
        overflow_at=args.overflow_at,
        overflow_lost=args.overflow_lost or _OVERFLOW_LOST,
        cores=not args.no_core,
    )
    check_outdir(args.output, args.force)  # before minutes of recording, not after
    progress = RecordingProgress(sys.stderr)
    try:
        recording = record(program, program_args, options, progress)
    except KeyboardInterrupt:  # before the program reached the start (once there, Ctrl-C ends the recording)
        raise LldbTraceError("interrupted before the recording started: nothing written") from None
    finally:
        progress.clear()
    with ending_signals_held():  # the bundle goes in whole, Ctrl-C, SIGTERM or not
        path = write_bundle(recording, args.output, args.copy_program, args.force, args.format)
    count, seconds = recording.instructions, recording.seconds
    rate = count / seconds if seconds else 0
    print(
        f"recorded {count} instructions of {len(recording.threads)} thread(s) in {seconds:.2f} s "
        f"({rate:,.0f}/s): {recording.status}{': ' + recording.detail if recording.detail else ''}"
    )
    print(f"wrote {path}")
    if args.until and recording.status != "until":
        print(
            f"note: {program} never reached {args.until}; the recording runs until the program ended", file=sys.stderr
        )
    if recording.untraced_children:
        pids = ", ".join(map(str, recording.untraced_children))
        print(
            f"note: {program} created {len(recording.untraced_children)} process(es) that ran untraced: {pids} "
            "(the recorder follows only the process it starts)",
            file=sys.stderr,
        )
    longest = max((len(recorder.truth.addresses) for recorder in recording.threads.values()), default=0)
    if args.overflow_at is not None and longest <= args.overflow_at:
        print(
            f"note: --overflow-at {args.overflow_at} injected nothing: no thread reached instruction {args.overflow_at}"
            f" (numbered from 0; the longest thread ran {longest})",
            file=sys.stderr,
        )
    for problem in recording.cores.problems if recording.cores else ():
        print(f"note: no core written: {problem}", file=sys.stderr)
    if recording.status == "crashed":
        print("the program crashed: the recording is partial, up to the crash", file=sys.stderr)
    if recording.status == "interrupted":
        print(f"interrupted: the recording is partial ({recording.detail})", file=sys.stderr)


def _psb_period(period, buffer_kb):
    """Bytes between PSBs: a circular buffer keeps a trace only from the first PSB it holds, so at least two."""
    from .capture.encoder.thread_recorder import RecorderOptions, circular_psb_period

    if buffer_kb is None:
        return period or RecorderOptions.psb_period
    if period is None:
        return circular_psb_period(buffer_kb)
    if 2 * period > buffer_kb * 1024:
        raise LldbTraceError(
            f"--psb-period {period} leaves --buffer {buffer_kb} KiB without a PSB to decode from (a circular trace "
            f"starts at its first one): give at most {buffer_kb * 1024 // 2} bytes, or leave it out"
        )
    return period


def _positive(text):
    value = int(text, 0)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def _lldbinit(_args):
    """Print the ~/.lldbinit lines that load the plugin into any LLDB with this Python."""
    site_packages = sysconfig.get_paths()["purelib"]
    print(f"script import site; site.addsitedir({site_packages!r})")
    print("command script import lldb_trace")


def _parser():
    parser = argparse.ArgumentParser(prog="lldb-trace", description="Intel Processor Trace tools for LLDB.")
    parser.add_argument("--version", action="version", version=f"lldb_trace {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("versions", help="show the versions of lldb_trace and what it uses").set_defaults(run=_versions)
    packets = commands.add_parser("packets", help="list the packets of a raw Intel PT trace file")
    packets.add_argument("trace", help="raw Intel PT trace file")
    packets.set_defaults(run=_packets)
    _dump_parser(commands)
    rec = commands.add_parser(
        "record",
        help="run a program, single-stepping it, and write its control flow as an Intel PT bundle",
        description="Record PROGRAM's exact control flow, single-stepping every instruction it runs, from main "
        "(or process start) until SYMBOL, exit, a crash or Ctrl-C. About 16k instructions/s: for long runs, "
        "'pt start --backend software' in LLDB is faster (see the README). Processes it creates run untraced (their "
        "pids are listed). OUTDIR must be new or empty unless --force.",
    )
    rec.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="bundle folder to write (new or empty)")
    rec.add_argument("--until", metavar="SYMBOL", help="stop when a thread reaches this function")
    rec.add_argument("--from-start", action="store_true", help="record from the first instruction, not main")
    rec.add_argument("--tsc", action="store_true", help="add timestamps (TSC packets)")
    rec.add_argument("--mtc", action="store_true", help=f"finer timestamps: TSC and MTC packets (MTCFreq {MTC_PERIOD})")
    rec.add_argument("--cyc", action="store_true", help="cycle-accurate timestamps: TSC, MTC and CYC packets")
    rec.add_argument(
        "--psb-period", type=_positive, metavar="BYTES", help="bytes between PSBs (4096; a quarter of --buffer if less)"
    )
    rec.add_argument("--buffer", type=_positive, metavar="KB", help="keep only the last KB KiB (circular buffer)")
    rec.add_argument("--threads", choices=["main", "all"], default="main", help="which threads to record")
    rec.add_argument("--overflow-at", type=int, metavar="N", help="inject an overflow at instruction N")
    rec.add_argument("--overflow-lost", type=_positive, metavar="N", help="instructions it loses (default 64)")
    rec.add_argument("--copy-program", action="store_true", help="copy the executable into the bundle")
    rec.add_argument(
        "--no-core",
        action="store_true",
        help="write no core files (cores/start.core, cores/end.core) and no syscall results (syscalls/)",
    )
    rec.add_argument(
        "--format",
        choices=[name for name, _what in BUNDLE_FORMATS],
        default="json",
        help="write a trace bundle (json) or OUTDIR/perf.data",
    )
    rec.add_argument("--force", action="store_true", help="replace the recording in OUTDIR; other files there are kept")
    rec.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARGS...]")
    rec.set_defaults(run=_record)
    add_serve_parser(commands)
    commands.add_parser(
        "lldbinit", help="print the ~/.lldbinit lines that load this plugin into a system LLDB"
    ).set_defaults(run=_lldbinit)
    add_dap_parser(commands)
    add_batch_parsers(commands)
    return parser


def _dump_parser(commands):
    dump = commands.add_parser(
        "dump",
        help="print a bundle's session info, instructions, events or call tree, as 'pt dump' does in LLDB",
        description="Print what 'pt dump' prints for BUNDLE in LLDB, with symbols and source lines read from the"
        " module files (ELF symbols, PLT stubs, DWARF lines). Without -i, -E or -C: the session info. The default"
        " thread is the one 'trace load' selects: the one a signal stopped, else the main thread.",
    )
    dump.add_argument("bundle", metavar="BUNDLE", help="a bundle's JSON file, a folder holding trace.json, a perf.data")
    add_arguments(dump, (*DUMP_OPTIONS, SEARCH_PATH, replace(SYSROOT, short="R"), FLAVOR, WORKERS))  # -r is --raw here
    dump.add_argument("-F", "--file", help=argparse.SUPPRESS)  # pt dump's, which a shell does with '>'
    dump.set_defaults(run=_dump)


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        args.run(args)
    except LldbTraceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
