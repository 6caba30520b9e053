"""A request's ``arguments``, read with their types checked: a wrong one is a one-line error response.

Clients send what the DAP specification says, fuzzers and buggy clients
anything: a string for a thread id, a float for a line, ``null`` for a list,
an integer of a hundred digits.  Every handler reads its arguments through
this class, so each of those ends as a RequestError naming the argument.
"""

MAX_INTEGER = 2**63 - 1  # what LLDB's 64-bit APIs take; a larger number is no id, line or address here
MAX_LINE = 2**31 - 1  # LLDB takes a line as a 32-bit number; no source file is longer
_MISSING = object()


class RequestError(Exception):
    """A request that cannot be answered: its message is the error response's."""


class Arguments:
    """The arguments of one request (a JSON object), read by name and type."""

    def __init__(self, values, where="arguments"):
        if values is None:
            values = {}
        if not isinstance(values, dict):
            raise RequestError(f"{where} must be a JSON object, not {_kind(values)}")
        self.values, self.where = values, where

    def __contains__(self, name):
        return self.values.get(name) is not None

    def integer(self, name, default=_MISSING, minimum=0, maximum=MAX_INTEGER):
        value = self._get(name, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise RequestError(f"{self._name(name)} must be an integer, not {_kind(value)}")
        if not minimum <= value <= maximum:
            raise RequestError(f"{self._name(name)} must be from {minimum} to {maximum}, not {_short(value)}")
        return value

    def line(self, name, lines_from):
        """A source line in the client's numbering (its first line is ``lines_from``: 0 or 1), as LLDB's (from 1)."""
        return self.integer(name, minimum=lines_from, maximum=MAX_LINE - 1 + lines_from) + 1 - lines_from

    def string(self, name, default=_MISSING):
        value = self._get(name, default)
        if value is not default:
            _check_string(value, self._name(name))
        return value

    def boolean(self, name, default):
        value = self._get(name, default)
        if not isinstance(value, bool):
            raise RequestError(f"{self._name(name)} must be true or false, not {_kind(value)}")
        return value

    def object(self, name, default=_MISSING):
        value = self._get(name, default)
        return value if value is default else Arguments(value, self._name(name))

    def objects(self, name, default=_MISSING):
        """A list of JSON objects, each as Arguments."""
        return [Arguments(item, f"{self._name(name)}[{k}]") for k, item in enumerate(self._list(name, default))]

    def strings(self, name, default=_MISSING):
        items = self._list(name, default)
        for k, item in enumerate(items):
            _check_string(item, f"{self._name(name)}[{k}]")
        return items

    def _list(self, name, default):
        value = self._get(name, default)
        if value is default:
            return [] if default is None else value
        if not isinstance(value, list):
            raise RequestError(f"{self._name(name)} must be a list, not {_kind(value)}")
        return value

    def _get(self, name, default):
        value = self.values.get(name)
        if value is None:
            if default is _MISSING:
                raise RequestError(f"{self._name(name)} is missing")
            return default
        return value

    def _name(self, name):
        return name if self.where == "arguments" else f"{self.where}.{name}"


def _check_string(value, name):
    """A string LLDB can take: JSON's ``"\\ud800"`` is a lone surrogate, which no UTF-8 holds (nor a NUL)."""
    if not isinstance(value, str):
        raise RequestError(f"{name} must be a string, not {_kind(value)}")
    if "\0" in value:
        raise RequestError(f"{name} holds a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise RequestError(f"{name} is not valid Unicode text (it holds a lone surrogate)") from None


def _kind(value):
    """How a JSON value is named in an error: its type, and the value itself when short."""
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "an object"}
    if value is None:
        return "null"
    name = kind.get(type(value), type(value).__name__)
    return f"{name} ({_short(value)})" if isinstance(value, int | float | str) and not isinstance(value, bool) else name


def _short(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
