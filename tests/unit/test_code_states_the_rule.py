"""Comments and docstrings state the rule as it is now, in words the repository explains: in
the package, the benchmarks, the scripts and the tests' support code.

No issue numbers of our own (``#25``; another project's ``node_exporter#1601`` is fine), no
pointer to design files that are not in the repository (``docs/`` is), and no measurement
diary ("now 1.6 ms", "as before"): the figures behind a choice are in docs/performance.md,
next to the benchmark that guards each.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import iotop_plus

PACKAGE = Path(iotop_plus.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[2]
CHECKED = (PACKAGE, REPO / "benchmarks", REPO / "scripts", REPO / "tests" / "support")
"""The code whose comments and docstrings are checked (the tests' own files may name the
issue a test was written for)."""

ISSUE = re.compile(r"(?<![\w/.-])#\d+\b")
OUTSIDE = re.compile(
    r"\b(?:REFERENCE|DESIGN|STYLE|RULINGS[\w-]*)\.md\b|\bthe rulings\b|\brulings'|\bas ruled\b"
    r"|\bruled keys\b",
    re.IGNORECASE,
)
DIARY = re.compile(
    r"\bas before\b|\bnow \d[\d.,]*\s?(?:ms|us|µs|s|ns|KB|MB|KiB|MiB|%)(?!\w)", re.IGNORECASE
)


def _prose(path: Path) -> list[tuple[int, str]]:
    """Each comment and string of a module, with its first line number."""
    found = []
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    for tok in tokens:
        if tok.type in (tokenize.COMMENT, tokenize.STRING):
            found.append((tok.start[0], tok.string))
    return found


def _hits(pattern: re.Pattern[str]) -> list[str]:
    hits = []
    for path in sorted(p for top in CHECKED for p in top.rglob("*.py")):
        for line, text in _prose(path):
            for m in pattern.finditer(text):
                hits.append(f"{path.relative_to(REPO)}:{line}: {m.group(0)!r}")
    return hits


def test_every_checked_directory_holds_code() -> None:
    assert all(any(top.rglob("*.py")) for top in CHECKED), CHECKED


def test_no_issue_numbers_in_the_code() -> None:
    assert _hits(ISSUE) == []


def test_no_pointer_to_design_files_outside_the_repository() -> None:
    assert _hits(OUTSIDE) == []


def test_no_measurement_diary_in_the_code() -> None:
    assert _hits(DIARY) == []


def test_the_patterns_catch_what_they_are_for() -> None:
    assert ISSUE.findall("cost (#25), #17 item 4") == ["#25", "#17"]
    assert ISSUE.findall("node_exporter#1601, a/b#2, x.#3, ``#N``") == []
    assert OUTSIDE.search("see REFERENCE.md, rulings") and OUTSIDE.search("(the rulings)")
    assert not OUTSIDE.search("docs/ARCHITECTURE.md")
    assert DIARY.search("took 5.0 ms, now 1.6 ms") and DIARY.search("the height as before")
