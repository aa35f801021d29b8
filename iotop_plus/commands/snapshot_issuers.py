"""``snapshot --issuers``: ``disk[].issuers`` in a fixed shape,
from the frame's issuers part; without the tracer (root and bpftrace) ``null`` and one stderr
line saying what is missing, and the exit code stays 0."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from iotop_plus.sampling.files.part import FilesPart, writeback_dirtiers
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.processes.issuers import TRACER, issuer_text
from iotop_plus.sampling.processes.issuers_part import ISSUERS, IssuersPart
from iotop_plus.text import printable

_said: set[str] = set()


def want_issuers(source: LiveSource, timeout: float, fmt: str = "json") -> None:
    """Ask the frames for issuers and wait (up to ``timeout``) until the tracer attributes
    requests, so the baseline frame starts a whole traced interval."""
    _said.clear()
    if fmt == "csv":
        print("iotop-plus: note: --issuers adds no CSV columns (see -f json)", file=sys.stderr)
    source.want(ISSUERS, True)
    source.wait_latency(timeout)


def who_lines(args: argparse.Namespace, names: Sequence[str], frame: Frame | None) -> str:
    """With ``--issuers``, the table's ``who DEV:`` line per device that did I/O: its top
    three issuers (without the tracer none, and why once on stderr)."""
    if not getattr(args, "issuers", False):
        return ""
    issuers = frame.get(IssuersPart) if frame is not None else None
    if issuers is None or issuers.source != TRACER:
        _say_why_none(frame, "no who lines")
        return ""
    lines = []
    for name in names:
        top = issuers.of(name)[:3]
        if top:
            lines.append(f"who {printable(name)}: " + " · ".join(map(issuer_text, top)))
    return "".join(f"{printable(line)}\n" for line in lines)


def add_issuers(disks: Sequence[dict[str, Any]], frame: Frame | None) -> None:
    """Give each ``disk[]`` entry its ``issuers`` (up to 10 by IOPS; null without the tracer),
    and say once on stderr why they are null."""
    issuers = frame.get(IssuersPart) if frame is not None else None
    traced = issuers is not None and issuers.source == TRACER
    files = frame.get(FilesPart) if frame is not None else None
    for disk in disks:
        who = issuers.of(disk["disk_device"]) if issuers is not None and traced else None
        disk["issuers"] = [i.to_json() for i in who] if who is not None else None
        dirtiers = writeback_dirtiers(files, disk["disk_device"])
        for doc in disk["issuers"] or ():
            if doc.get("kind") == "writeback" and dirtiers is not None:
                doc["dirtiers"] = dirtiers
    if not traced and disks:
        _say_why_none(frame, "disk[].issuers is null")


def _say_why_none(frame: Frame | None, so: str) -> None:
    """One stderr line (once) saying why the frames carry no issuers."""
    latency = frame.latency if frame is not None else None
    why = latency.status if latency is not None and latency.status else None
    note = f"--issuers needs the block tracer: {why}" if why else "no issuers in these frames"
    if note not in _said:
        _said.add(note)
        print(f"iotop-plus: {printable(note)}; {so}", file=sys.stderr)
