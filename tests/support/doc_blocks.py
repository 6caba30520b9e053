"""The fenced blocks of README.md and docs/*.md, each with what it shows and whether its page runs it.

A page says a block cannot run here with ``<!-- not run: REASON -->`` on the
line right above it; every other block is run by tests/test_docs_sessions.py,
so what it shows is what the commands do.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from .paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# What a block is, by its first line's info string (a block of "(lldb) " lines is a session whatever it says).
RUN = {"lldb": "an LLDB session", "sh": "shell commands", "console": "shell commands and their output",
       "python": "a Python script"}  # fmt: skip
SHOWS_NOTHING_TO_RUN = "text"  # a picture or output alone: no command in it
PROMPTS = {"lldb": "(lldb) ", "console": "$ "}
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->")
_FENCE = re.compile(r"^(\s*)```\s*([\w-]*)\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, from 1
    language: str  # the info string, "" without one
    text: str  # the lines between the fences, without the indentation of the fence
    not_run: str | None  # the reason the page gives for not running it

    @property
    def kind(self):
        if any(line.startswith(PROMPTS["lldb"]) for line in self.text.splitlines()):
            return "lldb"
        return self.language

    @property
    def where(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page):
    """Every fenced block of ``page``, in order."""
    found, lines = [], page.read_text().splitlines()
    k = 0
    while k < len(lines):
        fence = _FENCE.match(lines[k])
        if fence is None:
            k += 1
            continue
        indent, language = len(fence.group(1)), fence.group(2)
        end = next(j for j in range(k + 1, len(lines)) if lines[j].strip() == "```")
        above = lines[k - 1].strip() if k > 0 else ""
        reason = NOT_RUN.fullmatch(above)
        text = "".join(line[indent:] + "\n" for line in lines[k + 1 : end])
        found.append(Block(page, k + 1, language, text, reason.group(1) if reason else None))
        k = end + 1
    return found


def not_run_markers(page):
    """How many lines of ``page`` are a ``not run`` comment (each must sit right above a block)."""
    return sum(bool(NOT_RUN.fullmatch(line.strip())) for line in page.read_text().splitlines())


def steps(block):
    """``[(command, [lines it must print])]`` of a session or console block, in order."""
    prompt, found = PROMPTS[block.kind], []
    for line in block.text.splitlines():
        if line.startswith(prompt):
            found.append((line[len(prompt) :], []))
        elif line.strip() and line.strip() != "...":
            found[-1][1].append(line)
    return found


def printed(line, shown):
    """Is ``line`` among the lines ``shown``, spaces aside, ``…`` standing for anything within the line?"""
    pieces = [" ".join(piece.split()) for piece in line.split("…")]
    for candidate in shown:
        candidate, at = " ".join(candidate.split()), 0
        for piece in pieces:
            at = candidate.find(piece, at)
            if at < 0:
                break
            at += len(piece)
        else:
            return True
    return False
