"""Registers a recorder saw along the trace: a known state at each position it stopped at.

``lldb-trace record`` single-steps the program, so it sees every register
before every instruction; keeping them makes its recordings exact where
replaying from the start state could not be (vector code, undefined flags,
pointers through memory).  A thread's file (``registerStates`` in the bundle)
is a NumPy ``.npz`` of two arrays: ``instruction`` (uint64, ascending: how
many of the thread's instructions ran before the state, as in
``syscallResults``) and ``registers`` (uint64, one row per state, one column
per name of ``names``, a TRACKED subset), and ``tid`` (one uint64: the thread whose
states they are; files written before it have none).
"""

import io
import zipfile
from pathlib import Path

import numpy as np

from ..errors import LldbTraceError
from .machine_state import TRACKED
from .registers import INDEX, TRAP_FLAG


class RegisterStatesError(LldbTraceError):
    """A register states file cannot be used."""


def register_states_bytes(tid, instructions, rows, names=TRACKED):
    """The ``.npz`` bytes of thread ``tid``'s states ``rows`` (one per instruction count in ``instructions``)."""
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        instruction=np.asarray(instructions, dtype=np.uint64),
        registers=np.asarray(rows, dtype=np.uint64).reshape(len(instructions), len(names)),
        names=np.array(names),
        tid=np.array([tid], dtype=np.uint64),
    )
    return buffer.getvalue()


MOST_STATES = 1 << 24  # rows a file may hold (the recorder keeps 250,000): a larger one is not unpacked


def read_register_states(path: Path, tid: int | None = None) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``(instructions, rows, names)`` of the file, which must be thread ``tid``'s where it names its thread; one
    line naming the file and what is wrong otherwise."""
    try:
        _check_sizes(path)
        with np.load(path, allow_pickle=False) as arrays:
            instructions, rows, names = arrays["instruction"], arrays["registers"], arrays["names"]
            instructions, rows, names = np.array(instructions), np.array(rows), tuple(str(n) for n in names)
            owner = np.array(arrays["tid"]) if "tid" in arrays.files else None
    except OSError as error:
        raise RegisterStatesError(f"cannot read the register states {path}: {error.strerror}") from None
    except (ValueError, KeyError, EOFError, TypeError, AttributeError, zipfile.BadZipFile):  # TypeError: a 0-d array
        raise RegisterStatesError(
            f"{path} is not a register states file (a .npz of uint64 arrays 'instruction' and 'registers', and "
            "'names'); record again, or remove the thread's registerStates"
        ) from None
    problem = None
    if instructions.dtype != np.uint64 or rows.dtype != np.uint64 or instructions.ndim != 1:
        problem = "its arrays are not uint64 ones of the expected shapes"
    elif rows.shape != (len(instructions), len(names)):
        problem = f"{rows.shape} registers for {len(instructions)} states of {len(names)} names"
    elif not set(names) <= set(TRACKED) or len(set(names)) != len(names):
        problem = f"its names {list(names)} are not distinct ones of {list(TRACKED)}"
    elif len(instructions) > 1 and not bool(np.all(instructions[1:] > instructions[:-1])):
        problem = "its instruction counts are not ascending"
    elif "rip" not in names:
        problem = "it has no rip, which ties each state to the trace's instruction there"
    elif owner is not None and (owner.dtype != np.uint64 or owner.shape != (1,)):
        problem = "its tid is not one uint64"
    if problem:
        raise RegisterStatesError(f"{path} is not a register states file: {problem}; record again")
    if owner is not None and tid is not None and int(owner[0]) != tid:
        raise RegisterStatesError(
            f"{path} holds the registers of thread {int(owner[0])}, but the bundle gives it to thread {tid}: name "
            "each thread's own file in its registerStates, or remove it"
        )
    return instructions, rows, names


def _check_sizes(path: Path) -> None:
    """Refuse, before unpacking it, a file whose arrays are larger than any recording keeps (a compressed file can
    unpack to terabytes); a file that is no .npz at all is left for np.load to refuse."""
    if not zipfile.is_zipfile(path):
        raise ValueError("not a .npz")
    with zipfile.ZipFile(path) as archive:
        for member in archive.infolist():
            with archive.open(member) as stream:
                major, _ = np.lib.format.read_magic(stream)
                read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
                shape, _, _ = read_header(stream)
            if len(shape) > 2 or any(not 0 <= size <= MOST_STATES for size in shape):
                raise RegisterStatesError(
                    f"{path} is not a register states file: its {member.filename} is of shape {shape}, larger than "
                    f"any recording keeps ({MOST_STATES:,} states); record again"
                )


class RecordedStates:
    """The registers a recorder saw, as the recovery asks for them: ``positions`` ascending, a row of ``names``
    each (what ``read_register_states`` gives)."""

    def __init__(self, positions, rows, names):
        if "rflags" in names:  # without the recorder's own TF (registers.TRAP_FLAG)
            rows = rows.copy()
            rows[:, names.index("rflags")] &= np.uint64(~TRAP_FLAG & (1 << 64) - 1)
        self.positions, self.rows = np.asarray(positions, dtype=np.int64), rows
        self.names = [name for name in names if name != "rip"]
        self.columns = [names.index(name) for name in self.names]

    def at(self, position):
        """``{name: value}`` seen at ``position``, or None."""
        k = int(np.searchsorted(self.positions, position))
        if k == len(self.positions) or self.positions[k] != position:
            return None
        row = self.rows[k]
        return {name: int(row[column]) for name, column in zip(self.names, self.columns, strict=True)}

    def between(self, low, high):
        """``(states from low, rows, [(register, column)])`` of the positions low..high."""
        first, last = np.searchsorted(self.positions, [low, high + 1])
        registers = [(INDEX[name], column) for name, column in zip(self.names, self.columns, strict=True)]
        return self.positions[first:last] - low, self.rows[first:last], registers
