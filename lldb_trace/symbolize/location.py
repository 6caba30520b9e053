"""The answer to "what is at this address": shared by the LLDB and the ELF symbolizers."""

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """An instruction's module, function, source line and disassembly (None where unknown).

    ``stub`` says the address is in a PLT stub and ``function`` is the symbol
    the stub jumps to, as LLDB names trampolines; ``resolver`` that ``function``
    is an IFUNC (``STT_GNU_IFUNC``, LLDB's resolver symbols): the code there
    chooses the function that runs under that name, it is not that function.
    """

    module: str | None
    function: str | None
    file: str | None
    line: int | None
    mnemonic: str
    operands: str
    stub: bool = False
    resolver: bool = False

    @property
    def symbol_text(self):
        """The function as LLDB prints it: ``symbol stub for: free`` in a PLT stub, ``(no symbol)`` without one."""
        if self.function is None:
            return "(no symbol)"
        return f"symbol stub for: {self.function}" if self.stub else self.function

    @property
    def function_label(self):
        """``module`function`` as LLDB prints it."""
        return f"{self.module or '(no module)'}`{self.symbol_text}"

    @property
    def source(self):
        return f"{os.path.basename(self.file)}:{self.line}" if self.file and self.line else None

    @property
    def disassembly(self):
        return f"{self.mnemonic} {self.operands}".rstrip()
