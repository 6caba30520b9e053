"""An in-process LLDB with the plugin imported, for tests that drive real commands."""

import lldb


class Session:
    """A debugger whose command output and routed-command output can both be read back."""

    def __init__(self, tmp_path):
        self.debugger = lldb.SBDebugger.Create(False)
        self.debugger.SetAsync(False)
        # Routed commands print through the debugger's own streams, not the caller's result.
        self._out_path, self._err_path = tmp_path / "lldb.out", tmp_path / "lldb.err"
        self._out, self._err = open(self._out_path, "w+"), open(self._err_path, "w+")  # noqa: SIM115
        self.debugger.SetOutputFileHandle(self._out, False)
        self.debugger.SetErrorFileHandle(self._err, False)
        self.handle("command script import lldb_trace")

    def handle(self, command):
        result = lldb.SBCommandReturnObject()
        self.debugger.GetCommandInterpreter().HandleCommand(command, result)
        return result

    def ok(self, command):
        result = self.handle(command)
        assert result.Succeeded(), f"{command}: {result.GetError()}"
        return result.GetOutput()

    def launch(self, binary, *breakpoints, output=None):
        """``file``, one ``breakpoint set`` per argument (``"-n main"``), ``process launch`` (stdout to ``output``)."""
        self.ok(f"file {binary}")
        for breakpoint in breakpoints:
            self.ok(f"breakpoint set {breakpoint}")
        self.ok("process launch" + (f" -o {output}" if output else ""))

    def streams(self):
        """Everything printed on the debugger's output and error streams so far: (out, err)."""
        self.debugger.GetOutputFile().Flush()
        self.debugger.GetErrorFile().Flush()
        return self._out_path.read_text(), self._err_path.read_text()

    def close(self):
        lldb.SBDebugger.Destroy(self.debugger)
        self._out.close()
        self._err.close()

    @property
    def target(self):
        return self.debugger.GetSelectedTarget()


def commands_output(tmp_path, commands):
    """``(out, err)`` of ``commands`` in an in-process LLDB: the debugger's streams, then each command's result."""
    session = Session(tmp_path)
    try:
        results = [session.handle(command) for command in commands]
        out, err = session.streams()
    finally:
        session.close()
    return out + "".join(r.GetOutput() for r in results), err + "".join(r.GetError() for r in results)
