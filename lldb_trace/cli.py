"""``lldb-trace``: the command-line entry point for work outside an LLDB session."""

import argparse
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

from . import __version__
from .errors import LldbTraceError


def _versions(_args):
    from . import libipt

    print(f"lldb_trace {__version__}")
    try:
        major, minor, patch, _build, ext = libipt.library_version()
        print(f"libipt     {major}.{minor}.{patch}{ext}")
    except libipt.LibiptUnavailableError as error:
        print(f"libipt     missing: {error}")
    for package in ("capstone", "pyelftools", "jsonschema"):
        print(f"{package:<10} {metadata.version(package)}")
    try:
        import lldb

        print(f"lldb       {lldb.SBDebugger.GetVersionString().splitlines()[0]} ({Path(lldb.__file__).parent})")
    except ImportError:
        print("lldb       no Python bindings here (pip install 'lldb-trace[lldb]', or use the plugin inside LLDB)")


def _packets(args):
    from .packet_dump import iter_lines

    try:
        trace = Path(args.trace).read_bytes()
    except OSError as error:
        raise LldbTraceError(f"cannot read trace file {args.trace}: {error.strerror}") from None
    for line in iter_lines(trace):
        print(line)


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
    commands.add_parser(
        "lldbinit", help="print the ~/.lldbinit lines that load this plugin into a system LLDB"
    ).set_defaults(run=_lldbinit)
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        args.run(args)
    except LldbTraceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
