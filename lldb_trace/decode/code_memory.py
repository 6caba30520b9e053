"""The code of a traced process, read from its module files at their load addresses.

Both the decoder's block expansion and the post-mortem process's memory reads
need it.  Each segment's bytes are read from the file once, on first use.
"""


class CodeMemory:
    """Reads bytes of ``modules`` (bundle Modules, whose segments are at run-time addresses)."""

    def __init__(self, modules):
        self._segments = sorted(
            ((segment.vaddr, segment.vaddr + segment.memory_size, segment, module.path) for module in modules
             for segment in module.segments),
            key=lambda entry: entry[0],
        )  # fmt: skip
        self._bytes = {}

    def segment_at(self, address):
        for start, end, segment, path in self._segments:
            if start <= address < end:
                return start, end, segment, path
        return None

    def read(self, address, size):
        """Up to ``size`` bytes at ``address`` (fewer at a segment's end), or b"" outside every module."""
        found = self.segment_at(address)
        if found is None:
            return b""
        start, end, segment, path = found
        data = self._bytes.get(start)
        if data is None:
            with open(path, "rb") as f:
                f.seek(segment.offset)
                data = f.read(segment.size)
            data = self._bytes[start] = data + bytes(segment.memory_size - len(data))  # .bss reads as zeros
        return data[address - start : min(end, address + size) - start]
