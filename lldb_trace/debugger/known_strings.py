"""Whether a C string that LLDB shows in a summary is what memory held at the position.

LLDB reads a char array's or a char pointer's string until its terminator or
a byte it cannot read, and shows what it read as the whole string: ``""``
where it read nothing.  On a trace, memory not known at a position cannot be
read, so an array over unknown bytes showed as a known empty string and a
string known in part as a shorter one.  A summary is proven where every byte
up to its terminator (or the array's end, or LLDB's summary length) is known;
elsewhere the views show where the first byte not known lies instead.
"""

import re

import lldb

from .histories import shows_history
from .shown_state import known_memory, unmapped_in

# the character types whose arrays and pointers LLDB summarizes as strings, and their sizes
_CHARACTERS = {
    lldb.eBasicTypeChar: 1,
    lldb.eBasicTypeSignedChar: 1,
    lldb.eBasicTypeUnsignedChar: 1,
    lldb.eBasicTypeChar8: 1,
    lldb.eBasicTypeChar16: 2,
    lldb.eBasicTypeChar32: 4,
    lldb.eBasicTypeWChar: 4,
}
_STD_STRINGS = ("std::__cxx11::basic_string<", "std::basic_string<")  # libstdc++'s, new and old ABI
_CLASSES = (lldb.eTypeClassClass, lldb.eTypeClassStruct)  # not an array or a pointer of them
_SUMMARY_LENGTH = 1024  # LLDB's target.max-string-summary-length, where the target does not say


def string_element(sbtype):
    """``(is_array, character size)`` where ``sbtype`` is an array of or a pointer to characters, else None."""
    sbtype = sbtype.GetCanonicalType()
    if sbtype.IsArrayType():
        array, element = True, sbtype.GetArrayElementType()
    elif sbtype.IsPointerType():
        array, element = False, sbtype.GetPointeeType()
    else:
        return None
    size = _CHARACTERS.get(element.GetCanonicalType().GetUnqualifiedType().GetBasicType())
    return None if size is None else (array, size)


def is_std_string(sbtype):
    """Is ``sbtype`` libstdc++'s std::string (or another basic_string), which LLDB shows by its characters?"""
    return class_name(sbtype).startswith(_STD_STRINGS)


def class_name(sbtype):
    """The name of the class ``sbtype`` is (or refers to); empty for an array or a pointer, whose name starts as
    its element's does."""
    sbtype = referent_type(sbtype).GetCanonicalType().GetUnqualifiedType()
    return (sbtype.GetName() or "") if sbtype.GetTypeClass() in _CLASSES else ""


def referent_type(sbtype):
    """A reference's referent type (LLDB shows a reference by what it refers to), else ``sbtype``."""
    return sbtype.GetDereferencedType() if sbtype.IsReferenceType() else sbtype


def referent(value):
    return value.Dereference() if value.GetType().IsReferenceType() else value


def unproven_string(target, value):
    """The address of the first byte not known of the string ``value``'s summary shows (an SBValue of a char array
    or pointer, or a std::string), or None where the summary is proven (or shows no string)."""
    found = string_element(value.GetType())
    summary = value.GetSummary()
    if summary is None or '"' not in summary or not shows_history(target):
        return None
    if found is None:
        return _unproven_std_string(target, referent(value)) if is_std_string(value.GetType()) else None
    array, character = found
    if array:
        address, size = value.GetLoadAddress(), value.GetByteSize()
    else:
        address, size = value.GetValueAsUnsigned(), summary_length(target) * character
    if address == lldb.LLDB_INVALID_ADDRESS or not size:
        return None  # an array held in a register, an expression's result: no memory behind it
    return first_unknown(target, address, size, character)


def _unproven_std_string(target, value):
    """A std::string's characters, ``_M_string_length`` of them at ``_M_dataplus._M_p``: the first not known."""
    raw = value.GetNonSyntheticValue()
    pointer = raw.GetChildMemberWithName("_M_dataplus").GetChildMemberWithName("_M_p")
    length = raw.GetChildMemberWithName("_M_string_length")
    if not (pointer.IsValid() and length.IsValid()):
        return None  # another library's layout: its summary is LLDB's business
    for field in (pointer, length):  # where the characters are, and how many: LLDB shows "" when it cannot tell
        if field.GetError().Fail():  # "read memory from 0x... failed": the field's own place
            found = re.search(r"0x[0-9a-fA-F]+", field.GetError().GetCString() or "")
            return int(found.group(0), 16) if found else value.GetLoadAddress()
        address = field.GetLoadAddress()
        if address == lldb.LLDB_INVALID_ADDRESS:
            continue  # a copy in the debugger (an expression's result): its fields were read whole
        known = len(known_memory(target, address, 8))
        if known < 8:
            return address + known
    character = value.GetType().GetCanonicalType().GetTemplateArgumentType(0).GetByteSize() or 1
    address, size = pointer.GetValueAsUnsigned(), length.GetValueAsUnsigned() * character
    known = len(known_memory(target, address, size)) if size else 0
    return None if known >= size else address + known


def unproven_text(target, address):
    """How a string whose first byte not known is at ``address`` shows (at a core: not mapped there, maybe)."""
    if unmapped_in(target, address):
        return f"<not mapped (memory at {address:#x})>"
    return f"<not known at this position (memory at {address:#x})>"


def first_unknown(target, address, size, character):
    """None where the string at ``address`` is known up to its terminator or for ``size`` bytes; else the
    address of the first byte not known."""
    data = known_memory(target, address, size)
    for offset in range(0, len(data) - character + 1, character):
        if not any(data[offset : offset + character]):
            return None  # its terminator, and every byte before it, known
    return None if len(data) >= size else address + len(data)


def summary_length(target):
    """The most characters LLDB reads for a char pointer's summary (the target's setting)."""
    return setting_number(target, "target.max-string-summary-length", _SUMMARY_LENGTH)


def setting_number(target, name, default):
    """The number LLDB's setting ``name`` holds for ``target``'s debugger, or ``default``."""
    setting = lldb.SBDebugger.GetInternalVariableValue(name, target.GetDebugger().GetInstanceName())
    try:
        return int(setting.GetStringAtIndex(0))
    except (TypeError, ValueError):
        return default
