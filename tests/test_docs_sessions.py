"""What README.md and docs/*.md show is what the commands do: every block runs, or its page says why not.

Each page's blocks run in order, as a reader would type them (support/doc_runs.py):
LLDB sessions in one in-process LLDB per page, shell and console blocks in bash
with .venv/bin on the PATH, Python blocks as scripts; each line a block shows
under a command must be printed by it ("…" and "..." stand for what the page
leaves out).
"""

import pytest
from support.doc_blocks import PAGES, PROMPTS, ROOT, RUN, SHOWS_NOTHING_TO_RUN, blocks, not_run_markers, steps

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.doc_runs import PageRun  # noqa: E402

PAGE_NAMES = [str(page.relative_to(ROOT)) for page in PAGES]


def test_every_block_is_run_or_says_why_not():
    for page in PAGES:
        found = blocks(page)
        assert not_run_markers(page) == sum(block.not_run is not None for block in found), (
            f"{page.name}: a 'not run' comment must sit on the line right above a block"
        )
        for block in found:
            if block.kind == SHOWS_NOTHING_TO_RUN:
                assert not any(line.startswith(tuple(PROMPTS.values())) for line in block.text.splitlines()), (
                    f"{block.where}: a text block shows no command"
                )
            elif block.not_run is None:
                assert block.kind in RUN, (
                    f"{block.where}: say what the block is ({', '.join(RUN)} or text), or mark it <!-- not run: why -->"
                )
            else:
                assert block.not_run, f"{block.where}: a block not run says why"


def test_the_bug_hunt_and_the_tour_are_run():
    """The pages' sessions are found: the README's walkthrough, the commands' tour (a parsing slip would skip them)."""
    readme = [block for block in blocks(ROOT / "README.md") if block.kind == "lldb" and block.not_run is None]
    tour = [block for block in blocks(ROOT / "docs" / "commands.md") if block.kind == "lldb"]
    assert sum(len(steps(block)) for block in readme) >= 10
    assert len(steps(tour[0])) >= 13


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_the_page_runs_as_shown(name, tmp_path, monkeypatch):
    run = PageRun(tmp_path, monkeypatch)
    try:
        for block in blocks(ROOT / name):
            if block.not_run is None and block.kind != SHOWS_NOTHING_TO_RUN:
                run.run(block)
    finally:
        run.close()
