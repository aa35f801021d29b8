"""A JSON document whose ``statistics`` list is written one element at a time (``top``'s
``--format json``, by process and by cgroup)."""

from __future__ import annotations

import json
import textwrap
from typing import Any, TextIO

from iotop_plus.text import printable_doc


class JsonStream:
    """Writes ``doc`` as ``json.dump(doc, indent=2)`` would, one statistic at a time.

    Each interval is written (and flushed) as it ends: nothing piles up in memory over a
    long ``--count``, and a reader sees every interval as it comes.
    """

    _EMPTY_TAIL = "[]\n}"

    def __init__(self, doc: dict[str, Any], out: TextIO) -> None:
        head = json.dumps(printable_doc({**doc, "statistics": []}), indent=2)
        if not head.endswith('"statistics": ' + self._EMPTY_TAIL):
            raise ValueError("statistics must be the document's last key")
        self.out = out
        self.count = 0
        self._closed = False
        out.write(head[: -len(self._EMPTY_TAIL)] + "[")

    def add(self, statistic: dict[str, Any]) -> None:
        """Write one element of ``statistics``."""
        body = textwrap.indent(json.dumps(printable_doc(statistic), indent=2), "    ")
        self.out.write(("," if self.count else "") + "\n" + body)
        self.out.flush()
        self.count += 1

    def close(self) -> None:
        """End the list and the document (once)."""
        if not self._closed:
            self._closed = True
            self.out.write(("\n  ]" if self.count else "]") + "\n}\n")
            self.out.flush()
