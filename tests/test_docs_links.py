"""Every relative link of README.md and docs/*.md reaches a file and, after '#', one of its headings."""

import re

from support.doc_blocks import PAGES, ROOT

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
FENCE = re.compile(r"^\s*```")


def anchors(page):
    """The anchors GitHub gives ``page``'s headings (lower case, punctuation dropped, spaces as '-')."""
    found, seen, fenced = set(), {}, False
    for line in page.read_text().splitlines():
        fenced ^= bool(FENCE.match(line))
        heading = None if fenced else HEADING.match(line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
            found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)  # a repeated heading gets -1, -2...
            seen[slug] = seen.get(slug, 0) + 1
    return found


def links(page):
    """The relative links of ``page``, outside its code blocks."""
    found, fenced = [], False
    for line in page.read_text().splitlines():
        fenced ^= bool(FENCE.match(line))
        if not fenced:
            found += [target for target in LINK.findall(line) if not re.match(r"[a-z]+:", target)]
    return found


def test_every_link_reaches_its_file_and_heading():
    checked = 0
    for page in PAGES:
        for target in links(page):
            path, _, anchor = target.partition("#")
            reached = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}: {target}"
            assert reached.exists(), f"{where}: no such file"
            assert not anchor or anchor in anchors(reached), f"{where}: no such heading"
            checked += 1
    assert checked >= 20  # the pages link to each other: a slip in the pattern would check nothing
