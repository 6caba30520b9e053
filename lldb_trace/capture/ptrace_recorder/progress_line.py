"""A long recording's progress on stderr: how many instructions are recorded so far.

On a terminal it is one line, rewritten in place a few times a second and erased at the end.  Into a file
or a pipe it is a line every half minute, so a log shows the recording is alive without filling up.  A
short recording shows nothing.
"""

import time

_TERMINAL_FIRST, _TERMINAL_EVERY = 1.0, 0.25  # seconds
_LOG_EVERY = 30.0


class RecordingProgress:
    """Called with the instruction count; ``clock`` gives seconds (injectable, for tests)."""

    def __init__(self, stream, clock=time.monotonic):
        self.stream = stream
        self.clock = clock
        self.terminal = stream.isatty()
        self.started = clock()
        self.due = self.started + (_TERMINAL_FIRST if self.terminal else _LOG_EVERY)
        self.showing = False

    def __call__(self, instructions):
        now = self.clock()
        if now < self.due:
            return
        self.due = now + (_TERMINAL_EVERY if self.terminal else _LOG_EVERY)
        text = f"recording: {instructions:,} instructions in {now - self.started:.0f} s (Ctrl-C ends it, keeping them)"
        if self.terminal:
            self.stream.write(f"\r{text}\x1b[K")
            self.showing = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def clear(self):
        """Erase the terminal line, so what is printed next starts on a clean line."""
        if self.showing:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.showing = False
