"""The history reference's programs: how each is built and recorded, and what GDB is asked about it.

Each program lives in test_traces/src/, is linked -static -no-pie (the bundle and GDB's addresses
then do not depend on this machine's shared libraries) and runs from main's first instruction to
`the_end` (or into its crash).  A sequence starts from a known place (`goto` begin/end, or the
`count`-th forward hit of a breakpoint from the beginning) and lists GDB commands; every command's
answer is saved.  {"repeat": CMD, "max": N} repeats CMD until it stops moving.
"""

from dataclasses import dataclass, field
from pathlib import Path

SOURCES = Path(__file__).resolve().parent.parent / "src"
C_FLAGS = ("-O0", "-g", "-static", "-no-pie")


@dataclass(frozen=True)
class Program:
    name: str
    sources: tuple  # compiled with `flags`
    purpose: str
    flags: tuple = C_FLAGS
    nodebug_sources: tuple = ()  # compiled separately with -O0 and no -g
    stop: str | None = "the_end"  # None: the program crashes and the recording stops at the fault
    # False: no walks line by line over the whole run.  At -O2 GCC's line tables mark rows as statements
    # or not (is_stmt); GDB steps by statements and names an address by its statement row, lldb_trace by
    # LLDB's line entries (the last row at an address): the walks would compare that, not the program's point.
    line_walks: bool = True
    sequences: list = field(default_factory=list)

    @property
    def compiler(self):
        return "g++" if any(source.endswith(".cpp") for source in self.sources) else "gcc"


def line(source, text):
    """`source:N` for the one line of test_traces/src/source that contains text (breakpoints by line)."""
    numbers = [n for n, content in enumerate((SOURCES / source).read_text().splitlines(), 1) if text in content]
    if len(numbers) != 1:
        raise ValueError(f"{source}: {text!r} is on lines {numbers}, not on exactly one")
    return f"{source}:{numbers[0]}"


def sequence(name, purpose, start, *steps):
    return {"name": name, "purpose": purpose, "start": start, "steps": list(steps)}


def repeat(command, most=300):
    return {"repeat": command, "max": most}


BEGIN, END = {"goto": "begin"}, {"goto": "end"}
LINE_WALKS = ("reverse-step walk", "reverse-next walk", "step walk", "next walk")


def hit(location, count=1):
    return {"hit": location, "count": count}


def common_sequences(program_name):
    """What every program answers: both ends of history, and walks over all of it line by line."""
    return [
        sequence(
            "at the beginning",
            "every reverse command at position 0 says 'No more reverse-execution history.' and stays",
            BEGIN,
            "reverse-stepi",
            "reverse-nexti",
            "reverse-step",
            "reverse-next",
            "reverse-finish",
            "reverse-continue",
            "record goto begin",
            "stepi",
            "reverse-stepi",
        ),
        sequence(
            "at the end",
            "stepping back from the end and forward onto it again; record goto to the current position",
            END,
            "reverse-stepi",
            "stepi",
            "record goto end",
            "reverse-nexti",
            "nexti",
            "reverse-step",
            "step",
            "record goto begin",
            "record goto end",
        ),
        sequence("continue to the end", "no breakpoints: continue runs to the end", BEGIN, "continue"),
        sequence("reverse-continue to the beginning", "no breakpoints: back to position 0", END, "reverse-continue"),
        sequence("reverse-step walk", "reverse-step from the end back to the beginning", END, repeat("reverse-step")),
        sequence("reverse-next walk", "reverse-next from the end back to the beginning", END, repeat("reverse-next")),
        sequence("step walk", "step from the beginning to the end", BEGIN, repeat("step")),
        sequence("next walk", "next from the beginning to the end", BEGIN, repeat("next")),
        sequence(
            "reverse-finish walk",
            f"reverse-finish out of {program_name}'s stop, frame after frame, to the outermost",
            END,
            repeat("reverse-finish", 12),
        ),
    ]
