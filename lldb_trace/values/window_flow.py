"""A window's instructions, the address each goes to next, and where nothing carries from one to the next (a cut).

Whether position p carries to p + 1 depends on two addresses only, the instruction's and the next position's,
except after an indirect branch (a signal delivered there looks like the branch: ThreadValues._cut asks the
deliveries) and where the trace marks an interruption.  Each distinct address's rule is worked out once and the
window's positions are compared as arrays: asking ``_cut`` of each of a million positions was a twentieth of the
time it takes to solve them.
"""

import numpy as np

from ..x86.instructions import Transfer

_ALWAYS, _FALL, _TARGET, _EITHER, _ASK = range(5)  # cut always; unless next is the fall-through, the target, either
_NOWHERE = 2**64 - 1  # a target no instruction has


class WindowFlow:
    """The windows of ``values`` (a ThreadValues: its addresses, effects, flow and ``_cut``)."""

    def __init__(self, values):
        self._values = values
        self._addresses = np.asarray(values.addresses, dtype=np.uint64)
        self._interrupted = np.array(sorted(values.interrupted), dtype=np.int64)
        self._rules = {}  # address -> (effect, rule, fall-through, target)

    def window(self, low, high):
        """``(effects, nexts, cuts)`` of positions ``low .. high - 1``, as lists (``cuts`` is changed by
        Deliveries.mark)."""
        values, count = self._values, self._values.count
        here = self._addresses[low:high]
        following = self._addresses[low + 1 : high + 1]
        if len(following) < len(here):  # the trace's last instruction: nothing follows it
            following = np.append(following, np.uint64(0))
        distinct, inverse = np.unique(here, return_inverse=True)
        rules = [self._rule(int(address)) for address in distinct.tolist()]
        rule = np.array([found[1] for found in rules], dtype=np.int8)[inverse]
        fall = np.array([found[2] for found in rules], dtype=np.uint64)[inverse]
        target = np.array([found[3] for found in rules], dtype=np.uint64)[inverse]
        cuts = np.ones(len(here), dtype=bool)
        cuts[rule == _FALL] = (following != fall)[rule == _FALL]
        cuts[rule == _TARGET] = (following != target)[rule == _TARGET]
        either = rule == _EITHER
        cuts[either] = ((following != fall) & (following != target))[either]
        effects = [rules[k][0] for k in inverse.tolist()]
        successors = values.addresses[low + 1 : high + 1]  # the ints the trace's list holds: no copy of each
        nexts = [address or None for address in successors]
        if len(nexts) < len(here):
            successors, nexts = [*successors, 0], [*nexts, None]
        cuts = cuts.tolist()
        asked = set(np.flatnonzero(rule == _ASK).tolist())
        first, last = np.searchsorted(self._interrupted, (low, high))
        asked.update(int(position) - low for position in self._interrupted[first:last])
        if high == count:
            asked.add(high - 1 - low)
        for i in sorted(asked):  # in order: an indirect branch's question may scan the trace from there
            cuts[i] = values._cut(low + i, effects[i], successors[i] if low + i + 1 < count else None)
        return effects, nexts, cuts

    def _rule(self, address):
        found = self._rules.get(address)
        if found is None:
            found = self._rules[address] = self._classify(address)
        return found

    def _classify(self, address):
        values = self._values
        effect = values._effect(address) if address else None
        if effect is None:
            return None, _ALWAYS, 0, _NOWHERE
        flow = values._flow[address]
        fall = address + effect.size
        target = _NOWHERE if flow.target is None else flow.target
        if flow.transfer == Transfer.OTHER:
            return effect, _FALL, fall, _NOWHERE
        if flow.transfer == Transfer.DIRECT:
            return effect, _TARGET, fall, target
        if flow.transfer == Transfer.CONDITIONAL:
            return effect, _EITHER, fall, target
        if flow.transfer == Transfer.INDIRECT:
            return effect, _ASK, fall, _NOWHERE
        return effect, _FALL if effect.kind == "syscall" else _ALWAYS, fall, _NOWHERE
