"""What the call forest reads of a block (a row of a decoded part): its last instruction and its tail jumps.

A block ends at its only branch that leaves it, but a direct jump inside it
may still enter another function (a tail call the block decoder does not
end a block at).  Each distinct block is examined once per part.
"""

from ..x86.instructions import Transfer


class BlockFacts:
    """The facts of a part's rows, found on first use; asking about another part starts afresh."""

    def __init__(self, expander, functions, plt):
        self.expander, self.functions, self.plt = expander, functions, plt
        self._part, self._facts = None, {}

    def of(self, row, part):
        """``(last instruction's address, its size, [(offset, target) of tail jumps inside])`` of a row."""
        if part is not self._part:
            self._part, self._facts = part, {}
        facts = self._facts.get(row)
        if facts is None:
            addresses = self.expander.addresses(part.block_ips[row], part.block_sizes[row])
            last = self.expander.classifier[addresses[-1]]
            facts = self._facts[row] = (addresses[-1], last.size, self._tail_jumps(addresses))
        return facts

    def tail_rows(self, part):
        """Rows of ``part`` holding a tail jump."""
        return {row for row in range(len(part.block_ips)) if part.block_sizes[row] and self.of(row, part)[2]}

    def into_stub(self, jump_address, target):
        """Does a jump from ``jump_address`` enter a PLT stub from outside the PLT (a tail call through it)?"""
        return self.plt is not None and self.plt.contains(target) and not self.plt.contains(jump_address)

    def _tail_jumps(self, addresses):
        """Direct jumps inside a block (not its last instruction) to the entry of another function."""
        found = []
        classify, functions = self.expander.classifier, self.functions
        for offset, address in enumerate(addresses[:-1]):
            insn = classify[address]
            if insn.transfer == Transfer.DIRECT and insn.target != insn.next_address:
                if self.into_stub(address, insn.target):
                    found.append((offset, insn.target))
                    continue
                there = functions.containing(insn.target)
                if there is not None and there[0] == insn.target and functions.containing(address) != there:
                    found.append((offset, insn.target))
        return found
