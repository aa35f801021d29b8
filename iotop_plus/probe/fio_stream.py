"""fio's JSON output as it arrives: whole documents, and live figures from two of them.

With ``--output-format=json --status-interval=1`` fio prints one whole cumulative JSON
document per second, possibly after text lines such as ``note: ...`` or
``fio: pid=..., err=...``; :class:`JsonDocumentStream` splits them as they arrive and
:func:`progress_from` turns two consecutive ones into a :class:`ProbeProgress`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from iotop_plus.probe.run_types import ProbeProgress


@dataclass
class JsonDocumentStream:
    """Splits fio's stdout into whole JSON documents and the text between them."""

    buffer: str = ""
    """Text received and not yet consumed."""
    text: list[str] = field(default_factory=list)
    """Non-JSON lines seen (notes, error lines)."""
    _decoder: json.JSONDecoder = field(default_factory=json.JSONDecoder)

    def feed(self, chunk: str) -> list[tuple[str, Any]]:
        """Add output; returns the (raw text, document) pairs completed by it."""
        self.buffer += chunk
        docs: list[tuple[str, Any]] = []
        while True:
            start = self._doc_start()
            if start is None:
                # Keep a partial last line: it may be the start of a document.
                head, sep, tail = self.buffer.rpartition("\n")
                if sep:
                    self._text(head)
                    self.buffer = tail
                return docs
            if start:
                self._text(self.buffer[:start])
                self.buffer = self.buffer[start:]
            try:
                doc, end = self._decoder.raw_decode(self.buffer)
            except json.JSONDecodeError:
                return docs  # incomplete: wait for more
            docs.append((self.buffer[:end], doc))
            self.buffer = self.buffer[end:].lstrip("\n")

    def finish(self) -> str:
        """Everything left over at the end of output (garbage when not blank)."""
        rest, self.buffer = self.buffer, ""
        self._text(rest)
        return rest.strip()

    def _doc_start(self) -> int | None:
        # fio starts each document with "{" at the beginning of a line.
        if self.buffer.startswith("{"):
            return 0
        pos = self.buffer.find("\n{")
        return None if pos < 0 else pos + 1

    def _text(self, text: str) -> None:
        self.text += [line for line in text.splitlines() if line.strip()]


def progress_from(
    doc: Any, previous: Any | None, runtime_s: float, engine: str
) -> ProbeProgress | None:
    """Live figures from two consecutive cumulative status documents (None if unusable)."""
    try:
        job = doc["jobs"][0]
        elapsed = float(job["elapsed"])
        now_ms = float(doc["timestamp_ms"])
        prev_job = previous["jobs"][0] if previous is not None else None
        prev_ms = float(previous["timestamp_ms"]) if previous is not None else None
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    figures: dict[str, float] = {}
    lat_sum = lat_n = 0.0
    for direction in ("read", "write"):
        cur = job.get(direction) or {}
        old = (prev_job or {}).get(direction) or {}
        ios = float(cur.get("total_ios", 0)) - float(old.get("total_ios", 0))
        kib = (float(cur.get("io_bytes", 0)) - float(old.get("io_bytes", 0))) / 1024
        if prev_ms is not None and now_ms > prev_ms:
            seconds = (now_ms - prev_ms) / 1000
        else:
            seconds = max(float(cur.get("runtime", 0)) / 1000, 1e-3)
        figures[direction + "_iops"] = max(0.0, ios / seconds)
        figures[direction + "_kib"] = max(0.0, kib / seconds)
        clat, old_clat = cur.get("clat_ns") or {}, old.get("clat_ns") or {}
        n, old_n = float(clat.get("N", 0)), float(old_clat.get("N", 0))
        total = float(clat.get("mean", 0)) * n - float(old_clat.get("mean", 0)) * old_n
        if n > old_n:
            lat_sum += total
            lat_n += n - old_n
    return ProbeProgress(
        elapsed_s=elapsed,
        runtime_s=runtime_s,
        read_iops=figures["read_iops"],
        write_iops=figures["write_iops"],
        read_kib_s=figures["read_kib"],
        write_kib_s=figures["write_kib"],
        mean_lat_us=(lat_sum / lat_n / 1000) if lat_n else 0.0,
        engine=engine,
    )
