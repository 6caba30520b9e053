"""What a movement through history returns, and how it fails."""

from dataclasses import dataclass

from ..errors import LldbTraceError


class HistoryError(LldbTraceError):
    """A movement or position the history cannot give."""


@dataclass(frozen=True)
class Movement:
    """Where a movement ended, and what to tell the user (the end of history, a gap, a breakpoint)."""

    position: int
    message: str | None = None
    breakpoint: int | None = None  # the address of the breakpoint it stopped at


NO_MORE_HISTORY = "No more reverse-execution history."
