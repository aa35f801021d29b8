"""``snapshot --from --overview`` prints one row a minute when devices come and go (#22 item
12): the writer closes a chunk when the device layout changes, so one minute can hold two or
three chunks, each with its own roll-up."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.cli import build_parser
from iotop_plus.commands import snapshot
from iotop_plus.record.reader import RecordingFile
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.disks.sampler import Sample
from tests.unit.test_record_codec import busy_samples, write

T0 = 1_700_000_000.0  # 22:13:20 UTC


def churning_samples() -> list[Sample]:
    """sd0..sd2 busy for 150 s; sd9 plugged in at 22:14:10 and pulled at 22:14:40."""
    out = []
    for k, s in enumerate(busy_samples(150, devices=3)):
        counters = dict(s.counters)
        if 50 <= k < 80:
            counters["sd9"] = DiskCounters(8, 144, "sd9", tuple([k * 100] * 8 + [0] * 9), 17)
        out.append(Sample(s.monotonic, s.wall_time, MappingProxyType(counters)))
    return out


def run(*argv: str) -> str:
    out = io.StringIO()
    args = build_parser().parse_args(["snapshot", *argv])
    assert snapshot.run(args, None, out) == 0  # type: ignore[arg-type]
    return out.getvalue()


def test_overview_has_one_row_a_minute_when_devices_come_and_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    path = tmp_path / "r.rec"
    write(path, churning_samples())
    rec = RecordingFile(path)
    minutes_of_chunks = [c.first_ns // 60_000_000_000 for c in rec.chunks]
    assert len(minutes_of_chunks) > len(set(minutes_of_chunks))  # a minute of several chunks
    doc = json.loads(run("--from", str(path), "--overview", "-f", "json", "--all"))
    ends = [m["end"][:16] for m in doc["minutes"]]  # "start" is the interval before the minute
    assert len(ends) == len(set(ends)) == len(set(minutes_of_chunks)), ends
    busy = next(m for m in doc["minutes"] if "sd9" in m["devices"])
    assert busy["seconds"] > 55 and set(busy["devices"]) == {"sd0", "sd1", "sd2", "sd9"}
    # The minute's figures are those of its chunks together: max of maxes, min of mins.
    whole = [
        rec.rollup(i) for i, c in enumerate(rec.chunks) if c.first_ns // 60_000_000_000 == 28333334
    ]
    sd0 = [r["iops"] for r in whole if r]
    assert busy["devices"]["sd0"]["iops"]["max"] == max(max(r["max"][0] for r in sd0), 0)
    assert busy["devices"]["sd0"]["iops"]["min"] == min(r["min"][0] for r in sd0)
    rows = [line.split()[0] for line in run("--from", str(path), "--overview", "--all")
            .splitlines()[3:] if line[:1].isdigit()]  # fmt: skip
    assert len(rows) == len(set(rows)) == len(set(minutes_of_chunks)), rows
    csv = run("--from", str(path), "--overview", "-f", "csv", "--all").splitlines()[1:]
    keys = [(line.split(",")[1][:16], line.split(",")[2]) for line in csv]
    assert len(keys) == len(set(keys)), keys
