"""Structured mutations of perf.data files: the perf.data half of the fuzz campaign (tests/fuzz_campaign.py).

A seed is parsed into its layout (support/perf_layout.py: the header, the
attribute table, each record of the data section with its AUXTRACE bytes,
each feature section), mutated, and written back with every offset and
size that the mutation did not target made consistent again, so a mutant
gets past the outer checks to the code behind them.  Mutations:

- per record: its header's type, misc or size, any 4- or 8-byte field of it;
  the words of AUXTRACE_INFO and its size; an AUXTRACE record's fields and
  its trace bytes (zeroed, random, PSBs removed); the file an MMAP2 names
  (a device, a folder, no file); records duplicated (once, or thousands of
  times, which probes the cost of the many-records paths), deleted or
  moved; one trace split into many AUX buffers flagged TRUNCATED;
- per feature section: its table entry, its bytes, the feature bits;
- the file header's fields and the attributes' fields;
- raw damage after all that: truncation, bit flips, runs of bytes.

Values are drawn from boundaries that break arithmetic (0, 1, -1 as u32 and
u64, 2**31, 2**63, the original plus or minus one...) or at random.
:func:`mutants` is deterministic: the same seed files and number give the
same mutants, so a failure is reproduced by its number.
"""

import random
import struct

from . import trace_scripts
from .perf_layout import AUXTRACE, HEADER, PerfLayout, Record

AUXTRACE_INFO, AUX, MMAP2 = 70, 11, 10
MMAP2_NAME = 8 + 64  # where an MMAP2 record's file name starts
AUX_TRUNCATED = 1
PSB = bytes.fromhex("0282") * 8
MAX_AMPLIFIED_BYTES = 4 << 20  # a duplicated record's copies stay under this


def interesting(rng, width, original=0):
    """A value of ``width`` bytes that tends to break arithmetic, or a random one."""
    top = (1 << (8 * width)) - 1
    picks = [0, 1, 2, 7, 8, 9, 63, 64, 65, 0xFF, 0x100, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]
    picks += [1 << 32, 1 << 40, 1 << 62, 1 << 63, top, top - 1, original + 1, original - 1, original * 2]
    picks += [original + 8, original - 8, original << 16]
    if rng.random() < 0.25:
        return rng.getrandbits(8 * width)
    return rng.choice(picks) & top


def _field(rng, raw, start):
    """``(offset, width)`` of an aligned field of ``raw`` from byte ``start`` on (None if it has none)."""
    width = rng.choice((4, 8))
    slots = [k for k in range(start, len(raw) - width + 1, 4)]
    return (rng.choice(slots), width) if slots else None


def _set(raw, offset, width, value):
    struct.pack_into("<I" if width == 4 else "<Q", raw, offset, value % (1 << 8 * width))  # wraps, as in C


def _get(raw, offset, width):
    return struct.unpack_from("<I" if width == 4 else "<Q", raw, offset)[0]


def _pick(rng, layout, kind=None):
    found = layout.indices(kind)
    return rng.choice(found) if found else None


# -- mutations of the layout: each changes ``layout`` and says what it did, or returns None when it cannot apply


def record_header(rng, layout):
    k = _pick(rng, layout)
    raw = layout.records[k].raw
    which = rng.choice(("type", "misc", "size"))
    if which == "type":
        value = rng.choice((0, 1, 3, 9, 10, 11, 12, 14, 15, 64, 68, 70, 71, 79, 81, 82, 118, 119, 0xFFFFFFFF))
        struct.pack_into("<I", raw, 0, value)
    elif which == "misc":
        value = rng.choice((0, 1 << 13, 1 << 14, 1 << 15, 0xFFFF, rng.getrandbits(16)))
        struct.pack_into("<H", raw, 4, value)
    else:
        value = interesting(rng, 2, len(raw))
        struct.pack_into("<H", raw, 6, value)
    return f"record {k} header {which} = {value:#x}"


def record_field(rng, layout):
    k = _pick(rng, layout)
    raw = layout.records[k].raw
    spot = _field(rng, raw, HEADER.size)
    if spot is None:
        return None
    value = interesting(rng, spot[1], _get(raw, *spot))
    _set(raw, *spot, value)
    return f"record {k} (type {layout.records[k].type}) bytes {spot[0]}+{spot[1]} = {value:#x}"


def auxtrace_info_word(rng, layout):
    k = _pick(rng, layout, AUXTRACE_INFO)
    if k is None:
        return None
    raw = layout.records[k].raw
    words = (len(raw) - 16) // 8
    if words <= 0:
        return None
    word = rng.choice((1, 2, 3, 11)) if rng.random() < 0.3 else words  # time_shift, time_mult, time_zero, mtc
    word = word if word < words else rng.randrange(words)
    value = interesting(rng, 8, _get(raw, 16 + 8 * word, 8))
    _set(raw, 16 + 8 * word, 8, value)
    return f"AUXTRACE_INFO word {word} = {value:#x}"


def auxtrace_info_size(rng, layout):
    k = _pick(rng, layout, AUXTRACE_INFO)
    if k is None:
        return None
    record = layout.records[k]
    size = rng.choice((8, 12, 16, 24, 40, 88, 96, len(record.raw) - 8))
    if rng.random() < 0.5:  # the header lies about the size
        struct.pack_into("<H", record.raw, 6, size)
        return f"AUXTRACE_INFO header size = {size}"
    record.raw = record.raw[:size]  # the record really is that short
    struct.pack_into("<H", record.raw, 6, len(record.raw))
    return f"AUXTRACE_INFO cut to {size} bytes"


def auxtrace_field(rng, layout):
    k = _pick(rng, layout, AUXTRACE)
    if k is None:
        return None
    raw = layout.records[k].raw
    name, offset, width = rng.choice(
        (("size", 8, 8), ("offset", 16, 8), ("reference", 24, 8), ("idx", 32, 4), ("tid", 36, 4), ("cpu", 40, 4))
    )
    value = interesting(rng, width, _get(raw, offset, width))
    _set(raw, offset, width, value)
    return f"AUXTRACE record {k} {name} = {value:#x}"


def aux_field(rng, layout):
    k = _pick(rng, layout, AUX)
    if k is None:
        return None
    raw = layout.records[k].raw
    name, offset = rng.choice((("aux_offset", 8), ("aux_size", 16), ("flags", 24)))
    value = rng.choice((0, 1, 2, 4, 5, 8, 0xFF)) if name == "flags" else interesting(rng, 8, _get(raw, offset, 8))
    _set(raw, offset, 8, value)
    return f"AUX record {k} {name} = {value:#x}"


def trace_bytes(rng, layout):
    k = _pick(rng, layout, AUXTRACE)
    if k is None:
        return None
    record = layout.records[k]
    how = rng.choice(("zeroed", "random", "without PSBs", "cut"))
    size = len(record.trace)
    if how == "zeroed":
        record.trace = bytes(size)
    elif how == "random":
        record.trace = rng.randbytes(size)
    elif how == "without PSBs":
        record.trace = record.trace.replace(PSB, bytes(len(PSB)))
    else:
        record.trace = record.trace[: rng.randrange(size + 1)]
        struct.pack_into("<Q", record.raw, 8, len(record.trace))
    return f"AUXTRACE record {k} trace bytes {how}"


def mapping_name(rng, layout):
    """An MMAP2 record naming another file: a device, a folder, a file that is no ELF, nothing."""
    k = _pick(rng, layout, MMAP2)
    if k is None:
        return None
    raw = layout.records[k].raw
    name_end = raw.index(0, MMAP2_NAME) + 1
    name_end += -(name_end - MMAP2_NAME) % 8
    name = rng.choice(("/dev/zero", "/proc/self/mem", "/", "", "relative/name", "/etc/passwd", "/nonexistent/x"))
    padded = name.encode() + b"\0"
    padded += b"\0" * (-len(padded) % 8)
    raw[MMAP2_NAME:name_end] = padded
    struct.pack_into("<H", raw, 6, len(raw))
    return f"MMAP2 record {k} names {name!r}"


def duplicate(rng, layout):
    k = _pick(rng, layout)
    record = layout.records[k]
    size = len(record.raw) + len(record.trace)
    copies = 1 if rng.random() < 0.6 else min(rng.choice((2, 10, 500, 5000, 60000)), MAX_AMPLIFIED_BYTES // size)
    at = k + 1 if rng.random() < 0.7 else rng.randrange(len(layout.records) + 1)
    layout.records[at:at] = [Record(bytearray(record.raw), record.trace) for _ in range(max(copies, 1))]
    return f"record {k} (type {record.type}) duplicated {copies}x at {at}"


def delete(rng, layout):
    k = _pick(rng, layout)
    kind = layout.records.pop(k).type
    return f"record {k} (type {kind}) deleted"


def move(rng, layout):
    k = _pick(rng, layout)
    record = layout.records.pop(k)
    at = rng.randrange(len(layout.records) + 1)
    layout.records.insert(at, record)
    return f"record {k} (type {record.type}) moved to {at}"


def split_trace(rng, layout):
    """One AUXTRACE record's bytes as many buffers, each after an AUX record flagged TRUNCATED (or not)."""
    k = _pick(rng, layout, AUXTRACE)
    if k is None or not layout.records[k].trace:
        return None
    record = layout.records[k]
    pieces = rng.choice((2, 50, 3000, 30000))
    step = max(1, len(record.trace) // pieces)
    flags = rng.choice((0, AUX_TRUNCATED))
    base = _get(record.raw, 16, 8)
    first = k - 1 if k and layout.records[k - 1].type == AUX else k  # the writer puts an AUX record first
    aux = layout.records[first].raw if first < k else None
    made = []
    for start in range(0, len(record.trace), step):
        piece = record.trace[start : start + step]
        raw = bytearray(record.raw)
        _set(raw, 8, 8, len(piece))
        _set(raw, 16, 8, base + start)
        if aux is not None:
            note = bytearray(aux)
            _set(note, 8, 8, base + start)
            _set(note, 16, 8, len(piece))
            _set(note, 24, 8, flags)
            made.append(Record(note))
        made.append(Record(raw, piece))
    layout.records[first : k + 1] = made
    return f"AUXTRACE record {k} split into {len(made)} records of {step} bytes, AUX flags {flags}"


def feature(rng, layout):
    if not layout.features:
        return None
    k = rng.randrange(len(layout.features))
    how = rng.choice(("table", "bytes", "text"))
    if how == "table":
        spot = (rng.randrange(2), 8)
        value = interesting(rng, 8)
        pair = [0, len(layout.features[k])]
        pair[spot[0]] = value
        layout.table_override[k] = tuple(pair)
        return f"feature {k} table {('offset', 'size')[spot[0]]} = {value:#x}"
    blob = bytearray(layout.features[k])
    if how == "bytes" and blob:
        spot = _field(rng, blob, 0)
        if spot is None:
            return None
        value = interesting(rng, spot[1], _get(blob, *spot))
        _set(blob, *spot, value)
        layout.features[k] = bytes(blob)
        return f"feature {k} bytes {spot[0]}+{spot[1]} = {value:#x}"
    text = rng.choice(("GenuineIntel,99999999,-1,x", "GenuineIntel,6,85", "", "GenuineIntel,6,300,70000", "\xff" * 9))
    raw = text.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 8)
    layout.features[k] = struct.pack("<I", len(raw)) + raw
    return f"feature {k} text = {text!r}"


def header_field(rng, layout):
    name, offset = rng.choice(
        (("attr_size", 16), ("attrs.offset", 24), ("attrs.size", 32), ("data.offset", 40), ("event_types", 56))
    )
    value = interesting(rng, 8, _get(layout.head, offset, 8))
    _set(layout.head, offset, 8, value)
    return f"header {name} = {value:#x}"


def feature_bits(rng, layout):
    bit = rng.choice((0, 1, 2, 9, 18, 27, 33, 100, 255, rng.randrange(256)))
    layout.head[72 + bit // 8] ^= 1 << (bit % 8)
    return f"feature bit {bit} flipped"


def attr_field(rng, layout):
    attr_size = _get(layout.head, 16, 8)
    start, size = struct.unpack_from("<QQ", layout.head, 24)
    if not attr_size or start + size > len(layout.head):
        return None
    attr_at = start + attr_size * rng.randrange(max(1, size // attr_size))
    name, offset, width = rng.choice(
        (
            ("type", 0, 4),
            ("size", 4, 4),
            ("config", 8, 8),
            ("sample_type", 24, 8),
            ("flags", 40, 8),
            ("ids.offset", attr_size - 16, 8),
            ("ids.size", attr_size - 8, 8),
        )
    )
    if not 0 <= attr_at + offset <= len(layout.head) - width:
        return None  # an earlier mutation made the table unreadable
    original = _get(layout.head, attr_at + offset, width)
    value = original ^ (1 << rng.randrange(8 * width)) if name in ("flags", "sample_type") else None
    value = interesting(rng, width, original) if value is None else value
    _set(layout.head, attr_at + offset, width, value)
    return f"attr at {attr_at} {name} = {value:#x}"


LAYOUT_MUTATIONS = (
    record_header,
    record_field,
    record_field,
    auxtrace_info_word,
    auxtrace_info_word,
    auxtrace_info_size,
    auxtrace_field,
    aux_field,
    trace_bytes,
    mapping_name,
    duplicate,
    duplicate,
    delete,
    delete,
    move,
    split_trace,
    feature,
    header_field,
    feature_bits,
    attr_field,
)


# -- raw damage of the packed bytes


def truncate(rng, data):
    at = rng.randrange(len(data))
    return data[:at], f"cut at byte {at} of {len(data)}"


def bit_flips(rng, data):
    data = bytearray(data)
    flips = rng.choice((1, 2, 4, 16))
    for _ in range(flips):
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
    return bytes(data), f"{flips} bits flipped"


def byte_run(rng, data):
    at = rng.randrange(len(data))
    length = rng.choice((1, 4, 8, 64, 512))
    fill = rng.choice((b"\0", b"\xff", None))
    run = rng.randbytes(length) if fill is None else fill * length
    return data[:at] + run + data[at + length :], f"{length} bytes at {at} overwritten"


RAW_MUTATIONS = (truncate, bit_flips, byte_run)


def mutant(seed_bytes, rng):
    """``(bytes, description)``: the seed with one to three mutations (raw damage now and then)."""
    layout = PerfLayout.parse(seed_bytes)
    done = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        said = rng.choice(LAYOUT_MUTATIONS)(rng, layout)
        if said:
            done.append(said)
    data = layout.pack()
    if not done or rng.random() < 0.2:
        data, said = rng.choice(RAW_MUTATIONS)(rng, data)
        done.append(said)
    return data, "; ".join(done)


def mutants(seeds, count, seed=0, first=0):
    """``(number, seed name, bytes, description)`` of mutants ``first`` to ``first + count - 1``.

    ``seeds`` is ``{name: perf.data bytes}``; mutant ``n`` depends only on ``seed``, ``n`` and the seeds.
    """
    names = sorted(seeds)
    for number in range(first, first + count):
        rng = random.Random(f"{seed}:{number}")
        name = rng.choice(names)
        data, description = mutant(seeds[name], rng)
        yield number, name, data, description


def seed_files(folder):
    """``{case: bytes}``: the perf.data of each committed case whose binaries are this machine's (cases.py)."""
    cases, scenarios = trace_scripts.cases, trace_scripts.scenarios
    return {
        case: cases.make(case, folder).read_bytes()
        for case in cases.CASES
        if scenarios.modules_match(cases.source_bundle(case))
    }
