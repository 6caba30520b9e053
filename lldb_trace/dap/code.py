"""Code a DAP client shows: sources by reference, and the disassembly around an address.

A frame without line information (libc, a program built without ``-g``)
gets its function's disassembly as a source by reference, one instruction a
line, so a client without a disassembly view (nvim-dap) still shows where
the frame is.  ``disassemble`` reads the code through LLDB: the modules'
code is the same at every position of a trace.  Going back from an address
is anchored at the start of the symbol holding it (x86 cannot be decoded
backwards); where nothing can be decoded the entries are marked invalid, as
DAP asks, so the client gets as many as it asked for.
"""

from bisect import bisect_right
from pathlib import Path

import lldb

from .arguments import RequestError

MAX_LISTING = 50_000  # instructions in one function's listing
MAX_DISASSEMBLE = 10_000  # instructions one disassemble request may ask for
MAX_SOURCE_BYTES = 16 * 1024 * 1024
MAX_BACK_BYTES = 1024 * 1024  # how far back from an address its symbol may start, to be decoded from there


class Sources:
    """The listings handed out as sources by reference, by function start, and the files stack frames named by
    path (kept for the session): the files a client may read through ``source``, and no others."""

    def __init__(self):
        self._by_start, self._listings = {}, {}  # start -> reference; reference -> (name, addresses, text)
        self._paths = set()

    def named(self, path):
        """A frame's source file by path: the client may ask for its text."""
        self._paths.add(path)

    def of_frame(self, target, frame):
        """``(source, line from 1)`` of the frame's pc in its function's listing; None without a symbol."""
        symbol = frame.GetSymbol()
        start = symbol.GetStartAddress().GetLoadAddress(target) if symbol.IsValid() else lldb.LLDB_INVALID_ADDRESS
        if start == lldb.LLDB_INVALID_ADDRESS:
            return None
        reference = self._by_start.get(start)
        if reference is None:
            reference = self._by_start[start] = len(self._listings) + 1
            name = f"{frame.GetModule().GetFileSpec().GetFilename()}`{symbol.GetName()}"
            self._listings[reference] = (name, *_listing(target, symbol, start))
        name, addresses, _text = self._listings[reference]
        line = max(1, bisect_right(addresses, frame.GetPC()))
        return {"name": name, "sourceReference": reference, "presentationHint": "deemphasize"}, line

    def text(self, reference):
        if reference not in self._listings:
            raise RequestError(f"sourceReference {reference} names no source of this session")
        return self._listings[reference][2]

    def file(self, path):
        """The text of a file a frame named (its debug information's source), read now."""
        if path not in self._paths:
            shown = "no source file of a frame this session showed: only those are served"
            raise RequestError(f"{path[:200]} is {shown}")
        try:
            file = Path(path)
            if not file.is_file():
                raise RequestError(f"{path[:200]} is not a readable file")
            if file.stat().st_size > MAX_SOURCE_BYTES:
                raise RequestError(f"{path[:200]} is larger than {MAX_SOURCE_BYTES} bytes")
            return file.read_bytes().decode("utf-8", "replace")
        except OSError as error:
            raise RequestError(f"cannot read {path[:200]}: {error}") from None


def _listing(target, symbol, start):
    lines, addresses = [], []
    for instruction in _instructions(symbol.GetInstructions(target), MAX_LISTING):
        address = instruction.GetAddress().GetLoadAddress(target)
        addresses.append(address)
        operands = instruction.GetOperands(target)
        lines.append(f"0x{address:x} <+{address - start}>: {instruction.GetMnemonic(target)} {operands}".rstrip())
    return addresses, "\n".join(lines) + "\n"


def _instructions(listed, limit):
    return (listed.GetInstructionAtIndex(k) for k in range(min(listed.GetSize(), limit)))


def source(session, arguments):
    """A listing by its reference, or a frame's file by its path (for clients that ask by path)."""
    given = arguments.object("source", None)
    reference = arguments.integer("sourceReference", 0)
    if given is not None and "sourceReference" in given:
        reference = given.integer("sourceReference")
    if reference:
        return {"content": session.sources.text(reference), "mimeType": "text/x-asm"}
    path = given.string("path") if given is not None else None
    if not path:
        raise RequestError("give a sourceReference, or a source with a path")
    return {"content": session.sources.file(path)}


def disassemble(session, arguments):
    target = session.target()
    reference = arguments.string("memoryReference")
    try:
        base = int(reference, 0)
    except ValueError:
        raise RequestError(f"memoryReference must be an address such as 0x401620, not {reference[:40]!r}") from None
    offset = arguments.integer("offset", 0, minimum=-(2**63), maximum=2**63 - 1)
    first = arguments.integer("instructionOffset", 0, minimum=-MAX_DISASSEMBLE, maximum=MAX_DISASSEMBLE)
    count = arguments.integer("instructionCount", maximum=MAX_DISASSEMBLE)
    symbols = arguments.boolean("resolveSymbols", True)
    address = base + offset
    if not 0 <= address < 2**64:
        raise RequestError(f"{reference[:40]} + {offset} is no address")
    before = _before(target, address, max(0, -first)) if first < 0 else []
    found = before + _after(target, address, max(0, first + count))
    start = len(before) + first  # where instruction ``first`` falls in ``found``
    low = found[0].GetAddress().GetLoadAddress(target) if found else address
    high = found[-1].GetAddress().GetLoadAddress(target) + found[-1].GetByteSize() if found else address
    shown = []
    for k in range(start, start + count):
        if 0 <= k < len(found):
            shown.append(_shown(session, target, found[k], symbols))
        else:  # no code here: a placeholder a byte apart from its neighbours, as DAP asks
            shown.append(_invalid(max(0, low + k) if k < 0 else min(2**64 - 1, high + k - len(found))))
    return {"instructions": shown}


def _after(target, address, count):
    """``count`` instructions from ``address`` on (fewer where no code can be read)."""
    if not count:
        return []
    listed = target.ReadInstructions(target.ResolveLoadAddress(address), count)
    return [item for item in _instructions(listed, count) if item.IsValid()]


def _before(target, address, count):
    """Up to ``count`` instructions that end at ``address``, decoded from the starts of the symbols before it."""
    found, end = [], address
    while len(found) < count and end > 0:
        symbol = target.ResolveLoadAddress(end - 1).GetSymbol()
        start = symbol.GetStartAddress().GetLoadAddress(target) if symbol.IsValid() else lldb.LLDB_INVALID_ADDRESS
        if start == lldb.LLDB_INVALID_ADDRESS or not end - MAX_BACK_BYTES <= start < end:
            break
        piece, at = [], start
        while at < end:
            listed = _after(target, at, min(end - at, MAX_DISASSEMBLE))
            if not listed:
                break
            for instruction in listed:
                if at >= end:
                    break
                piece.append(instruction)
                at += instruction.GetByteSize() or 1
        if at != end:
            break  # the symbol's code does not run up to the address: nothing before it is sure
        found, end = piece + found, start
    return found[-count:] if count else []


def _shown(session, target, instruction, symbols):
    address = instruction.GetAddress()
    load = address.GetLoadAddress(target)
    data = instruction.GetData(target)
    shown = {
        "address": f"0x{load:x}",
        "instructionBytes": " ".join(f"{byte:02x}" for byte in data.uint8s),
        "instruction": f"{instruction.GetMnemonic(target)} {instruction.GetOperands(target)}".rstrip(),
    }
    symbol = address.GetSymbol()
    if symbols and symbol.IsValid():
        shown["symbol"] = f"{address.GetModule().GetFileSpec().GetFilename()}`{symbol.GetName()}"
    entry = address.GetLineEntry()
    if entry.IsValid() and entry.GetLine() > 0 and entry.GetFileSpec().fullpath:
        path = entry.GetFileSpec().fullpath
        shown["location"] = {"name": Path(path).name, "path": path}
        shown["line"] = entry.GetLine() - 1 + session.lines_from
    return shown


def _invalid(address):
    return {"address": f"0x{address:x}", "instruction": "??", "presentationHint": "invalid"}


HANDLERS = {"source": source, "disassemble": disassemble}
