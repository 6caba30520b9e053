"""libipt status codes as one exception type."""

from ..errors import LldbTraceError
from .enums import ErrorCode
from .native import lib


def errstr(code):
    """libipt's own text for an error code (positive or negated)."""
    text = lib().pt_errstr(abs(int(code)))
    return text.decode() if text else f"unknown error {code}"


class LibiptError(LldbTraceError):
    """A negative libipt status: ``status`` (negative int), ``code`` and libipt's text."""

    def __init__(self, status, context=""):
        self.status = int(status)
        try:
            self.code = ErrorCode(-self.status)
        except ValueError:
            self.code = None
        self.text = errstr(self.status)
        self.context = context
        where = f"{context}: " if context else ""
        super().__init__(f"{where}{self.text} (libipt error {self.status})")


def check(status, context=""):
    """Return a non-negative ``status`` unchanged; raise LibiptError for a negative one."""
    if status < 0:
        raise LibiptError(status, context)
    return status
