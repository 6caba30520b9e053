"""Ctrl-C, SIGTERM and SIGHUP while a recording runs, and while what it recorded is written.

While the program runs they end the run cleanly: Ctrl-C raised KeyboardInterrupt at a random point, and
SIGTERM (``timeout``) or SIGHUP (a closed terminal) killed the recorder and left its temporary cores behind.
Once the run has ended they wait until the recording is made whole and its bundle written: they killed the
recorder while it wrote, leaving nothing and saying nothing.
"""

import contextlib
import signal
import threading

ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def ending_signals_to(handler):
    """Inside the block the ending signals go to ``handler`` (signal.SIG_IGN: they wait); only the main thread
    gets signals, so elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, handler) for number in ENDING_SIGNALS}
    try:
        yield
    finally:
        for number, handler_before in previous.items():
            signal.signal(number, handler_before)


def ending_signals_held():
    """The ending signals wait until the block is done."""
    return ending_signals_to(signal.SIG_IGN)
