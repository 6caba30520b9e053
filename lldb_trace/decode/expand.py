"""Blocks expanded to instruction addresses, on demand.

A libipt block is ``size`` instructions executed in order from ``ip``: each
one falls through or is a direct jump or call (the block ends at the first
instruction whose successor needs trace).  Walking the code with capstone
recovers every address; each distinct block is walked once and cached.
"""

from ..x86.instructions import Classifier, Transfer


class BlockExpander:
    """Instruction addresses of blocks, read through a ModuleBytes."""

    def __init__(self, module_bytes):
        self.classifier = Classifier(module_bytes.read)
        self._cache = {}

    def addresses(self, ip, size):
        """The ``size`` instruction addresses of the block starting at ``ip``, as a tuple."""
        key = ip << 16 | size
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = tuple(self._walk(ip, size))
        return found

    def needs_trace(self, ip):
        """Does the instruction at ``ip`` need a packet to know where execution goes next?"""
        return self.classifier[ip].transfer not in (Transfer.OTHER, Transfer.DIRECT)

    def _walk(self, ip, size):
        classify = self.classifier
        for _ in range(size):
            yield ip
            insn = classify[ip]
            ip = insn.straight_successor
