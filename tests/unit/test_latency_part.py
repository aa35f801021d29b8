"""The recorded latency part (``Q``): per-device histograms round-trip through JSON and the
recording, hostile documents are refused, and ``diff`` compares their p99."""

from __future__ import annotations

import os
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from iotop_plus.commands.diff import diff_timeline
from iotop_plus.record.stream import bounded_part
from iotop_plus.record.timeline import open_timeline
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame import registry
from iotop_plus.sampling.frame.model import LATENCY
from iotop_plus.sampling.frame.part import ReadContext
from iotop_plus.sampling.latency.hist import (
    RUNNING,
    DeviceLatency,
    Histogram,
    LatencyFrame,
    OpLatency,
)
from iotop_plus.sampling.latency.hist_part import (
    LatencyHistograms,
    LatencyHistogramsPart,
    of_latency_frame,
    percentile_ms,
)
from tests.support.recorded_load import T0, Load, write_recording

PART = LatencyHistogramsPart()


def hist_ms(*values_ms: float) -> Histogram:
    return Histogram.of(int(v * 1e6) for v in values_ms)


def frame(devices: dict[str, dict[str, Histogram]], sampled: int = 1) -> LatencyFrame:
    return LatencyFrame(
        RUNNING,
        MappingProxyType(
            {
                name: DeviceLatency(
                    MappingProxyType({op: OpLatency(h) for op, h in ops.items()}), sampled=sampled
                )
                for name, ops in devices.items()
            }
        ),
        span_s=1.0,
    )


def test_registered_with_its_letter_and_flag() -> None:
    got = registry.part("latency-histograms")
    assert got is not None and (got.letter, got.record_flag) == ("Q", "latency")
    assert got.wants == (LATENCY,)  # the tracer the histograms come from


def test_the_reader_takes_the_frames_latency_and_round_trips() -> None:
    latency = frame(
        {
            "sda": {
                "read": hist_ms(*[1.0] * 98, 50, 60),
                "write": hist_ms(2, 3),
                "flush": hist_ms(9),
            }
        },
        sampled=4,
    )
    ctx = ReadContext(Roots(), None, None, None, frozenset(), latency=latency)  # type: ignore[arg-type]
    value, events = PART.reader(Roots()).read(ctx)
    assert events == () and value is not None
    assert set(value.devices["sda"]) == {"read", "write"}  # flushes are not I/O latency
    doc = PART.to_json(value)
    assert PART.from_json(doc) == value
    assert doc["sampled"] == {"sda": 4}
    p99 = value.p99_ms("sda")
    assert p99 is not None and 40 <= p99 <= 60
    assert percentile_ms(doc["devices"]["sda"], 0.99) == pytest.approx(p99)
    assert PART.disk_json(value, "sda") == {"latency_p99_ms": round(p99, 4)}
    assert PART.disk_json(value, "sdb") == {}


def test_no_figures_no_value() -> None:
    assert of_latency_frame(None) is None
    assert of_latency_frame(LatencyFrame("starting")) is None


@pytest.mark.parametrize(
    "doc",
    [
        None,
        [],
        {"devices": []},
        {"devices": {"sda": {"read": {"b": [[1, 2, 3]]}}}},
        {"devices": {"sda": {"read": {"b": [[-1, 2]]}}}},
        {"devices": {"sda": {"read": {"b": [[10**9, 2]]}}}},
        {"devices": {"sda": {"read": {"b": [[1, True]]}}}},
        {"devices": {"sda": {"read": {"b": [[1, 1]] * 10_000}}}},
    ],
)
def test_hostile_documents_are_refused_without_raising(doc: Any) -> None:
    got = PART.from_json(doc)
    assert got is None or got.devices == {}
    if isinstance(doc, dict) and isinstance(doc.get("devices"), dict):
        assert percentile_ms(doc["devices"]["sda"], 0.99) is None


def test_a_recorded_part_is_cut_to_the_samples_devices() -> None:
    doc: dict[str, Any] = {"devices": {"sda": {}, "ghost": {}}}
    assert bounded_part("Q", doc, {"sda": object()}) == {"devices": {"sda": {}}}


def test_diff_compares_p99_from_recorded_histograms(tmp_path: Path) -> None:
    load = Load(3, seed=2, steady=True)
    name = load.names[2]

    def parts(k: int) -> dict[str, Any]:
        slow = 40.0 if k >= 300 else 4.0  # the tail grows tenfold; the rest stays
        value = LatencyHistograms(
            MappingProxyType({name: MappingProxyType({"read": hist_ms(*[1.0] * 95, *[slow] * 5)})})
        )
        return {"Q": PART.to_json(value)}

    path = tmp_path / "q.rec"
    write_recording(path, load, 600, parts)
    timeline = open_timeline(path)
    try:
        report = diff_timeline(timeline, (T0 + 100, T0 + 290), (T0 + 310, T0 + 500))
    finally:
        timeline.close()
    assert "latency" not in report.not_recorded
    fig = [c for c in report.changes if c.kind == "figure"]
    assert [c.device for c in fig] == [name], [c.what for c in report.changes]
    assert fig[0].evidence["changed"] == ["p99"]
    assert fig[0].before["p99"] < 5 < 35 < fig[0].after["p99"]
    assert os.path.getsize(path) > 0
