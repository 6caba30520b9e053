"""A process's code and what is derived from it, shared by every process that loads the same modules.

A bundle of thousands of processes forked from one program holds as many
identical module lists.  Its module bytes, its decoded instruction cache, its
libipt image, its function ranges and PLT sections depend on the module list
alone, so processes with equal lists share one ProcessCode: each module file
is read once, and its instructions are decoded once, however many processes
ran it.  A ProcessCode lives as long as a process using it does.
"""

import weakref
from functools import cached_property

from ..symbolize.function_ranges import FunctionRanges
from .expand import BlockExpander
from .images import modules_image
from .module_bytes import ModuleBytes
from .plt import PltSections

_shared = weakref.WeakValueDictionary()  # modules tuple -> ProcessCode


class ProcessCode:
    """The code of ``modules`` (bundle Modules at run-time addresses); the costly parts are made on first use."""

    def __init__(self, modules):
        self.modules = modules
        self.module_bytes = ModuleBytes(modules)
        self.expander = BlockExpander(self.module_bytes)

    @cached_property
    def image(self):
        """The libipt image of the modules' executable segments."""
        return modules_image(self.modules)

    @cached_property
    def functions(self):
        """Where the modules' functions begin and end (their unwind tables)."""
        return FunctionRanges(self.modules)

    @cached_property
    def plt(self):
        """The modules' PLT sections."""
        return PltSections(self.modules)


def process_code(modules):
    """The ProcessCode of ``modules`` (a tuple), shared with every live process that has the same ones."""
    code = _shared.get(modules)
    if code is None:
        code = _shared[modules] = ProcessCode(modules)
    return code
