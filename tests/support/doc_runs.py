"""Running a documentation page's blocks in order, as a reader would: one LLDB session, one shell, one /tmp.

Paths under ``/tmp/`` in a block become the test's own folder, so a page can
write files where a reader would and the test leaves nothing behind.
"""

import os
import subprocess
import sys
from pathlib import Path

from support.doc_blocks import ROOT, printed, steps
from support.launching import debugserver
from support.lldb_session import Session

IMPORT = "command script import lldb_trace"  # the session has run it already: its output is checked
TIMEOUT = 120


class PageRun:
    """The blocks of one page, run one after the other in the checkout's root; ``close()`` ends the session."""

    def __init__(self, tmp_path, monkeypatch):
        self.tmp = tmp_path
        (tmp_path / "home").mkdir()  # HOME, so a block that writes ~/.lldbinit writes it here
        self.env = dict(os.environ, HOME=str(tmp_path / "home"))
        self.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{self.env.get('PATH', '')}"
        if debugserver():  # for the programs a page launches, in its session or its shell
            self.env["LLDB_DEBUGSERVER_PATH"] = debugserver()
            monkeypatch.setenv("LLDB_DEBUGSERVER_PATH", debugserver())
        monkeypatch.chdir(ROOT)  # the in-process LLDB reads a page's relative paths from here
        self._session = None

    def local(self, text):
        return text.replace("/tmp/", f"{self.tmp}/")

    def run(self, block):
        getattr(self, f"_run_{block.kind}")(block)

    def _run_lldb(self, block):
        session = self.session()
        for command, lines in steps(block):
            if command == IMPORT:
                shown = session.streams()[0].splitlines()
            else:
                result, shown = self._handle(session, self.local(command))
                if not any(line.lstrip().startswith("error:") for line in lines):  # an error shown on purpose
                    assert result.Succeeded(), f"{block.where}: {command}: {result.GetError()}"
            for line in lines:
                assert printed(self.local(line), shown), f"{block.where}: {command} did not print {line!r}"

    @staticmethod
    def _handle(session, command):
        """The command's result, and the lines it printed: in its result, or through the debugger's streams."""
        out, err = session.streams()
        result = session.handle(command)
        now_out, now_err = session.streams()
        printed_now = result.GetOutput() + result.GetError() + now_out[len(out) :] + now_err[len(err) :]
        return result, printed_now.splitlines()

    def _run_sh(self, block):
        done = self._shell(self.local(block.text))
        assert done.returncode == 0, f"{block.where}: exit status {done.returncode}\n{done.stdout}"

    def _run_console(self, block):
        for command, lines in steps(block):
            done = self._shell(self.local(command))
            assert done.returncode == 0, f"{block.where}: {command}: exit status {done.returncode}\n{done.stdout}"
            for line in lines:
                assert printed(self.local(line), done.stdout.splitlines()), f"{block.where}: {command}: {line!r}"

    def _run_python(self, block):
        done = subprocess.run(
            [sys.executable, "-c", self.local(block.text)], cwd=ROOT, env=self.env, timeout=TIMEOUT,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        assert done.returncode == 0, f"{block.where}: the script failed\n{done.stdout}"

    def _shell(self, text):
        return subprocess.run(
            ["bash", "-e", "-c", text], cwd=ROOT, env=self.env, timeout=TIMEOUT,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def session(self):
        """The page's in-process LLDB, started at its first session block."""
        if self._session is None:
            self._session = Session(self.tmp)
        return self._session

    def close(self):
        if self._session is not None:
            self._session.close()  # its launched processes end with their lldb-server
