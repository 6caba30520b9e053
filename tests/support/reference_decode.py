"""Decode a native-format bundle's threads with libipt directly, for checking recordings.

Independent of the project's own decoder (issue 5): the instruction decoder
gives every address; the block decoder's blocks must tile the same addresses.
Both resynchronize at the next PSB after an error, as a debugger would.
"""

import json
from pathlib import Path

from lldb_trace import libipt
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.elf_info import ElfInfo

_PENDING = int(libipt.StatusFlag.EVENT_PENDING)  # a plain int: ``status & IntFlag`` builds a flag at every instruction


def bundle_image(bundle_path):
    """An Image with every module's executable segments at its load address."""
    bundle_path = Path(bundle_path)
    bundle = json.loads(bundle_path.read_text())
    image = libipt.Image("bundle")
    for module in bundle["processes"][0]["modules"]:
        path = bundle_path.parent / module.get("file", module["systemPath"])
        if not path.exists():
            continue  # a missing image: its code decodes as gaps
        load = int(module["loadAddress"], 0) if isinstance(module["loadAddress"], str) else module["loadAddress"]
        for segment in ElfInfo(path).loaded_segments(load):
            if segment.executable:
                image.add_file(str(path), segment.offset, segment.size, segment.vaddr)
    return bundle, image


def _items(decoder):
    """Items in order: ints for instructions (or Blocks), ("error", code) for gaps, ("event", Event)."""
    try:
        status = decoder.sync_forward()
    except libipt.LibiptError as error:
        yield ("error", error.code)
        return
    while True:
        while status & _PENDING:
            status, event = decoder.event()
            yield ("event", event)
        try:
            status, item = decoder.next()
            yield item
        except libipt.LibiptError as error:
            if error.partial is not None:
                yield error.partial
            if error.code == libipt.ErrorCode.EOS:
                return
            yield ("error", error.code)
            try:
                status = decoder.sync_forward()
            except libipt.LibiptError:
                return


def events_of(items, kind=None):
    """The events among decoded items, optionally only those of one type."""
    return [
        item[1] for item in items if isinstance(item, tuple) and item[0] == "event" and kind in (None, item[1].type)
    ]


def segments_of(items):
    """Split instruction addresses into runs separated by errors and overflow events."""
    runs, current = [], []
    for item in items:
        gap = isinstance(item, tuple) and (
            item[0] == "error" or (item[0] == "event" and item[1].type == libipt.EventType.OVERFLOW)
        )
        if gap:
            if current:
                runs.append(current)
            current = []
        elif isinstance(item, libipt.Insn):
            current.append(item.ip)
    if current:
        runs.append(current)
    return runs


def decode_thread(bundle_path, tid, decoder_class=libipt.InsnDecoder):
    bundle, image = bundle_image(bundle_path)
    thread = next(t for t in bundle["processes"][0]["threads"] if t["tid"] == tid)
    trace = (Path(bundle_path).parent / thread["iptTrace"]).read_bytes()
    cpu = bundle["cpuInfo"]
    config = libipt.Config(trace, libipt.Cpu(cpu["family"], cpu["model"], cpu["stepping"]))
    with image, decoder_class(config, image) as decoder:
        return list(_items(decoder))


def blocks_tile(blocks_items, addresses):
    """True when the block decoder's blocks cover ``addresses`` exactly, in order, between gaps."""
    flat = [item for item in blocks_items if isinstance(item, libipt.Block)]
    position = 0
    for block in flat:
        if addresses[position] != block.ip:
            return False
        position += block.ninsn
        if addresses[position - 1] != block.end_ip:
            return False
    return position == len(addresses)


def threads_of(bundle_path):
    """The tids of the bundle's first process."""
    bundle = json.loads(Path(bundle_path).read_text())
    return [thread["tid"] for thread in bundle["processes"][0]["threads"]]


def truth_of(bundle_path, tid):
    """What the recorder single-stepped in thread ``tid`` (the bundle's ground_truth/ folder)."""
    return GroundTruth.read(Path(bundle_path).parent / "ground_truth" / f"{tid}.txt")


def check_exact(bundle_path):
    """Both libipt decoders reproduce every thread's ground truth, gaps only where expected."""
    for tid in threads_of(bundle_path):
        truth = truth_of(bundle_path, tid)
        expected = truth.decodable_segments()
        items = decode_thread(bundle_path, tid)
        assert segments_of(items) == expected, f"thread {tid}"
        blocks = decode_thread(bundle_path, tid, libipt.BlockDecoder)
        assert blocks_tile(blocks, [a for segment in expected for a in segment])
        yield tid, truth, items
