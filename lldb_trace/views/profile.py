"""``pt profile``'s answer: a Profile (lldb_trace.profile) as a text table or as JSON.

Text: a header saying what was profiled (thread, grouping, range, instruction
count and the unit of time, or that the trace has no timing), one line per
row, and a totals line.  Time columns appear only when the trace has timing:
"0 ns" would claim a measurement that was never made.  JSON holds every
field of the rows shown, the totals and the range.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..profile import Profile, ProfileRow


def profile_text(profile: Profile, rows: Sequence[ProfileRow]) -> str:
    """The table of ``rows`` (some of ``profile.rows``, in the order to show)."""
    timing = f"times in {profile.time_unit}" if profile.time_unit else "no timing in this trace"
    lines = [
        f"Profile of thread {profile.tid} by {profile.by}: items {profile.range}"
        f" ({profile.instructions} instructions), {timing}"
    ]
    headers = ["calls", "exclusive", "%", "inclusive", "%"]
    if profile.time_unit:
        headers += [f"exclusive {profile.time_unit}", f"inclusive {profile.time_unit}"]
    table = [_cells(profile, row) for row in rows]
    total = [str(profile.calls), str(profile.instructions), "100.0%", "", ""]
    if profile.time_unit:
        total += [str(profile.time), ""]
    widths = [max(len(header), *(len(cells[k]) for cells in [*table, total])) for k, header in enumerate(headers)]
    widths[2] = widths[4] = len("100.0%")  # shares: the same width whichever rows are shown
    header, names = _labels(profile, rows)
    lines.append(_line(headers, widths, header))
    for cells, name in zip(table, names, strict=True):
        lines.append(_line(cells, widths, name))
    lines.append(_line(total, widths, f"total ({len(rows)} of {_count(len(profile.rows), profile.by)})"))
    if len(rows) < len(profile.rows):
        lines.append(f"... {_count(len(profile.rows) - len(rows), 'more ' + profile.by)}: '-c 0' shows all")
    return "\n".join(lines)


def profile_json(profile: Profile, rows: Sequence[ProfileRow], sort: str) -> str:
    """The profile as one JSON object: totals, the range, the unit of time (null: no timing) and ``rows``."""
    document = {
        "thread": profile.tid,
        "by": profile.by,
        "range": {"first": profile.range.first, "last": profile.range.last},
        "instructions": profile.instructions,
        "calls": profile.calls,
        "timeUnit": profile.time_unit,
        **({"time": profile.time} if profile.time_unit else {}),
        "sort": sort,
        "rowCount": len(profile.rows),
        "rows": [_row_object(profile, row) for row in rows],
    }
    return json.dumps(document, indent=1)


def _row_object(profile, row):
    times = {"exclusiveTime": row.exclusive_time, "inclusiveTime": row.inclusive_time} if profile.time_unit else {}
    return {
        "name": row.name,
        **row.fields,
        "calls": row.calls,
        "exclusive": row.exclusive,
        "exclusiveShare": round(profile.share(row.exclusive), 6),
        "inclusive": row.inclusive,
        "inclusiveShare": round(profile.share(row.inclusive), 6),
        **times,
    }


def _labels(profile, rows):
    """The name column's header and each row's cell in it; by line, the line's function follows, aligned."""
    if profile.by != "line":
        return profile.by, [row.name for row in rows]
    places = [row.name if row.fields["line"] else "(no line)" for row in rows]
    width = max(map(len, ["line", *places]))
    functions = [row.fields["function"] for row in rows]
    return f"{'line':<{width}}  function", [f"{p:<{width}}  {f}" for p, f in zip(places, functions, strict=True)]


def _cells(profile, row):
    cells = [
        str(row.calls),
        str(row.exclusive),
        _percent(profile.share(row.exclusive)),
        str(row.inclusive),
        _percent(profile.share(row.inclusive)),
    ]
    if profile.time_unit:
        cells += [str(row.exclusive_time), str(row.inclusive_time)]
    return cells


def _count(number, what):
    return f"{number} {what}" + ("" if number == 1 else "s")


def _percent(share):
    return f"{100 * share:.1f}%"


def _line(cells, widths, name):
    return "  ".join(f"{cell:>{width}}" for cell, width in zip(cells, widths, strict=True)) + f"  {name}"
