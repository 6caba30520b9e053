"""``lldb-trace serve``: its options, and the run that loads the trace and serves it."""

from __future__ import annotations

import shlex
import signal
import socket
import sys
from dataclasses import replace

from ..errors import LldbTraceError
from ..option_table import CORE, SEARCH_PATH, SYSROOT, add_arguments

LOCALHOST = "127.0.0.1"


def add_serve_parser(commands) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve a trace to GDB, LLDB or an IDE as a gdb-remote target with reverse execution",
        description="Serve PATH (a bundle or a perf.data) with the GDB remote protocol: GDB's 'target remote', "
        "LLDB's 'gdb-remote' and reverse execution (bs/bc packets: reverse-step, reverse-continue, "
        "'process continue --reverse'). 'monitor help' in the client lists the history commands.",
    )
    serve.add_argument("path", metavar="PATH", help="a bundle's JSON file or folder, or a perf.data")
    where = serve.add_mutually_exclusive_group(required=True)
    where.add_argument("--port", type=int, metavar="N", help="listen on TCP port N (0: any free port)")
    where.add_argument("--stdio", action="store_true", help="speak on stdin/stdout ('target remote | ...')")
    serve.add_argument("--host", default=LOCALHOST, help=f"address to listen on (default {LOCALHOST})")
    add_arguments(serve, (SEARCH_PATH, replace(SYSROOT, short="R"), CORE))  # as lldb-trace dump and trace load
    serve.add_argument("--log", metavar="FILE", help="write each packet, its replies and its time to FILE")
    serve.set_defaults(run=run)


def run(args) -> None:
    from .. import api
    from ..perf_data import BinarySearch
    from .connection import listen, serve_socket, serve_stdio
    from .libraries import lldb_command
    from .replay import Replay

    if args.port is not None and not 0 <= args.port <= 65535:
        raise LldbTraceError(f"--port {args.port} is no TCP port: give 0 to 65535")
    binaries = BinarySearch.default(args.sysroot or (), args.search_path or ())
    try:
        log = open(args.log, "w") if args.log else None  # noqa: SIM115 (open for the whole session)
    except OSError as error:
        raise LldbTraceError(f"cannot write the log {args.log}: {error.strerror}") from None

    def loaded() -> Replay:
        replay = Replay(api.open_bundle(args.path, binaries=binaries, core=args.core))
        for thread in replay.threads.values():  # decode now: a client waits only seconds for its first replies
            thread.history  # noqa: B018
        return replay

    if args.stdio:  # loaded while the client's first packets are acknowledged
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the client interrupts with 0x03 on the pipe
        serve_stdio(loaded, log)
        return
    replay = loaded()
    trace = replay.trace
    if args.host != LOCALHOST:
        print(
            f"warning: listening on {args.host}: anyone who can reach it can read the trace's memory", file=sys.stderr
        )
    try:
        listener = listen(args.host, args.port)
    except OSError as error:
        reason = (error.strerror or str(error)).split(" (while attempting")[0]  # Python adds the address again
        raise LldbTraceError(f"cannot listen on {args.host}:{args.port}: {reason}") from None
    port = listener.getsockname()[1]
    host = socket.gethostname() if args.host in ("0.0.0.0", "::", "") else args.host  # every address: this one's
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    lldb = lldb_command(replay.process_trace.process, address)
    print(
        f"lldb-trace serve: listening on {address}\n  gdb:  gdb -ex {shlex.quote('target remote ' + address)}\n"
        f"  lldb: {lldb}",
        file=sys.stderr,
        flush=True,
    )
    with listener:
        try:
            serve_socket(lambda: Replay(trace), listener, lambda line: print(line, file=sys.stderr, flush=True), log)
        except KeyboardInterrupt:
            print("lldb-trace serve: stopped", file=sys.stderr)
