"""Two copies of every map the tracer prints, so that nothing is lost between a print and
its clear.

bpftrace runs ``print`` and ``clear`` in its own process, one after the other, some time after
the probe that asked for them (milliseconds on a busy host): a probe's write to a map between
the two would be cleared unseen. So the probes write one copy of each printed map, chosen by
a flag (:data:`GENERATION`, 0 or 1), and every tick and mark flips the flag first and then
prints and clears the copy the probes just left (:func:`flush_lines`). A write is lost only
if bpftrace has not yet cleared a copy when the flag flips back to it: a whole tick later, or
at a frame's mark that comes within that delay after a tick.

A printed map ``@h`` is written as ``@h__0`` or ``@h__1`` and printed under those names;
:func:`logical_name` gives ``@h`` back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

GENERATION = "@tg"
"""The flag: which copy of the printed maps the probes write."""
_SUFFIXES = ("__0", "__1")
_PRINTED = re.compile(r"^(@\w+?)__[01]$")


def buffered_text(text: str, maps: Sequence[str]) -> str:
    """``text`` with every run of writes to the printed ``maps`` split by the flag:
    ``if (@tg) { …__1 } else { …__0 }``.

    A write is a statement of its own (``@h[…] = count();``, after ``{``, ``;`` or at a
    line's start); a run is such statements one after another. Raises ``ValueError`` when
    the text uses a printed map other than by writing it (reading, deleting or clearing it
    would see one copy only)."""
    if not maps:
        return text
    names = "|".join(re.escape(m) for m in maps)
    write = rf"(?:{names})(?:\[|\s*=)[^;{{}}]*;"
    writes = re.compile(rf"(?:(?<=[{{;])|^)(\s*)({write}(?:\s*{write})*)", re.MULTILINE)

    def split(match: re.Match[str]) -> str:
        run = " ".join(line.strip() for line in match.group(2).splitlines())
        copies = [_renamed(run, maps, suffix) for suffix in _SUFFIXES]
        return f"{match.group(1)}if ({GENERATION}) {{ {copies[1]} }} else {{ {copies[0]} }}"

    out = writes.sub(split, text)
    left = re.search(rf"(?:{names})(?![\w])", out)
    if left is not None:
        line = out[: left.start()].count("\n") + 1
        raise ValueError(f"{left.group(0)} is used other than written (line {line})")
    return out


def _renamed(text: str, maps: Iterable[str], suffix: str) -> str:
    for name in maps:
        text = re.sub(rf"{re.escape(name)}(?![\w])", name + suffix, text)
    return text


def flush_lines(maps: Sequence[str]) -> list[str]:
    """The statements a tick or mark runs: flip the flag, then print and clear the copy of
    each of ``maps`` the probes stopped writing (none when there is no map)."""
    if not maps:
        return []

    def flush(suffix: str) -> str:
        return " ".join(f"print({m}{suffix}); clear({m}{suffix});" for m in maps)

    return [
        f"  {GENERATION} = 1 - {GENERATION};",
        f"  if ({GENERATION}) {{ {flush(_SUFFIXES[0])} }}",
        f"  else {{ {flush(_SUFFIXES[1])} }}",
    ]


def logical_name(printed: str) -> str:
    """The map's own name for a copy's (``@h__1`` -> ``@h``); any other name as it is."""
    match = _PRINTED.match(printed)
    return match.group(1) if match else printed
