"""Many threads' answers as one, exactly: sums of whole numbers per row, in the order of the jobs.

Threads are disjoint (no instruction runs in two), so a row's calls,
exclusive and inclusive counts over many threads are the sums of its counts
in each, and the totals the sums of the totals.  Times add up only when
every thread has timing in the same unit (ns, or TSC ticks); otherwise the
merged profile has none rather than a sum of unlike things.  Rows are met in
job order, so ties in the sorted answer fall the same way on any cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ..analysis import ItemRange
from ..profile import Profile, ProfileRow
from .analyses import CallCount


def merged_profile(profiles: Sequence[Profile], by: str) -> Profile:
    """One Profile with every row of ``profiles`` (keyed by name and fields), summed; its ``tid`` (0) and
    ``range`` (all its instructions) stand for no one thread."""
    units = {made.time_unit for made in profiles}
    unit = units.pop() if len(units) == 1 else None
    rows: dict[tuple, ProfileRow] = {}
    for made in profiles:
        for row in made.rows:
            key = (row.name, tuple(sorted(row.fields.items())))
            found = rows.get(key)
            if found is None:
                rows[key] = replace(row) if unit else replace(row, exclusive_time=None, inclusive_time=None)
                continue
            found.calls += row.calls
            found.exclusive += row.exclusive
            found.inclusive += row.inclusive
            if unit:
                found.exclusive_time = (found.exclusive_time or 0) + (row.exclusive_time or 0)
                found.inclusive_time = (found.inclusive_time or 0) + (row.inclusive_time or 0)
    instructions = sum(made.instructions for made in profiles)
    merged = Profile(0, by, ItemRange(0, instructions - 1), instructions, unit, list(rows.values()))
    merged.rows = merged.sorted_rows()
    return merged


@dataclass
class CallTotals:
    """Calls per function (``module`function`` labels) and per module, over every thread."""

    functions: dict[str, int] = field(default_factory=dict)
    modules: dict[str, int] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(self.functions.values())

    def by_count(self, counts: dict[str, int]) -> list[tuple[str, int]]:
        """``(name, calls)`` most calls first, names in order."""
        return sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))


def merged_calls(threads: Iterable[list[CallCount]]) -> CallTotals:
    totals = CallTotals()
    for counts in threads:
        for count in counts:
            totals.functions[count.function] = totals.functions.get(count.function, 0) + count.calls
            if count.module is not None:
                totals.modules[count.module] = totals.modules.get(count.module, 0) + count.calls
    return totals
