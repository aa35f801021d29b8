"""The bpftrace JSON parser on canned output, the program text, and the frame delta logic."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import LATENCY
from iotop_plus.sampling.latency.hist import FAILED, RUNNING, STARTING, bucket_index
from iotop_plus.sampling.latency.parser import TracerBatch, TracerParser, op_of
from iotop_plus.sampling.latency.part import LatencyPart
from iotop_plus.sampling.latency.program import MARKER, dev_t, tracer_program
from iotop_plus.sampling.latency.tracer import Tracer

# Shapes seen from bpftrace 0.17 -f json (REFERENCE.md), blank lines included.
H = {
    "7340042,R,15,6": 3,
    "7340042,RA,16,0": 1,
    "7340042,WS,17,2": 2,
    "7340042,FF,20,0": 1,
    "7340042,FWS,17,3": 1,
    "7340042,N,10,0": 5,
    "254,DS,18,1": 4,
}
DS = {"7340042,R": 130000, "7340042,RA": 70000, "7340042,WS": 200000, "7340042,FF": 1100000}
DS["7340042,FWS"] = 110000
DM = {"7340042,R": 60000, "7340042,RA": 70000, "7340042,WS": 101000}
CANNED = "\n".join(
    [
        '{"type": "attached_probes", "data": {"probes": 4}}',
        "",
        "",
        json.dumps({"type": "map", "data": {"@h": H}}),
        "",
        json.dumps({"type": "map", "data": {"@ds": DS}}),
        json.dumps({"type": "map", "data": {"@dm": DM}}),
        '{"type": "hist", "data": {"@old": [{"min": 0, "max": 1, "count": 3}]}}',
        '{"type": "map", "data": {"@qs": {"7340042,WS": 50000}}}',
        '{"type": "map", "data": {"@qn": {"7340042,WS": 2}}}',
        '{"type": "printf", "data": "tick 1000000000\\n"}',
        '{"type": "map", "data": {"@h": {}}}',
        '{"type": "printf", "data": "tick 1250000000\\n"}',
    ]
)


def feed_all(text: str) -> tuple[TracerParser, list[TracerBatch]]:
    parser = TracerParser()
    batches = [b for line in text.splitlines(keepends=True) if (b := parser.feed(line)) is not None]
    return parser, batches


def test_canned_output_becomes_one_batch_per_tick() -> None:
    parser, batches = feed_all(CANNED)
    assert parser.attached
    assert [b.end_ns for b in batches] == [1_000_000_000, 1_250_000_000]
    first, second = batches
    assert second.ops == {}
    loop = dev_t(7, 10)
    read = first.ops[(loop, "read")]
    assert read.device.count == 4  # R and RA together
    assert read.device.buckets[bucket_index(15, 6)] == 3
    assert read.device.sum_ns == 200_000 and read.device.max_ns == 70_000
    write = first.ops[(loop, "write")]
    assert write.device.count == 3  # WS and the preflushed FWS
    assert write.queue_sum_ns == 50_000 and write.queue_count == 2
    assert first.ops[(loop, "flush")].device.count == 1
    assert first.ops[(254, "discard")].device.count == 4
    assert not any(op == "other" for _, op in first.ops)  # N (no data) dropped


@pytest.mark.parametrize(
    ("rwbs", "op"),
    [
        ("R", "read"),
        ("RSM", "read"),
        ("W", "write"),
        ("FWFS", "write"),
        ("F", "flush"),
        ("FF", "flush"),
        ("D", "discard"),
        ("DS", "discard"),
        ("N", None),
        ("", None),
    ],
)
def test_rwbs_to_operation(rwbs: str, op: str | None) -> None:
    assert op_of(rwbs) == op


@pytest.mark.parametrize(
    "line",
    [
        "Attaching 4 probes...",
        '{"type": "map", "data": {"@h": {"x,R,1,1": 2}}}',
        "[1, 2]",
        '{"type": "printf", "data": "tick nope\\n"}',
    ],
)
def test_garbage_is_one_clear_error(line: str) -> None:
    with pytest.raises(ValueError, match="tracer"):
        TracerParser().feed(line)


def test_program_marks_itself_and_attaches_insert_only_for_the_queue_split() -> None:
    with_queue = tracer_program(queue=True, tag="t1")
    without = tracer_program(queue=False)
    assert with_queue.splitlines()[0].startswith(f"// {MARKER} pid=")
    assert "t1" in with_queue.splitlines()[0]
    assert "block_rq_insert" in with_queue and "block_rq_insert" not in without
    assert "@qs" not in without


class CannedTracer(Tracer):
    """A tracer whose child never runs: batches are pushed by the test."""

    def __init__(self) -> None:
        super().__init__(queue=True)

    def start(self) -> None:
        self.attached.set()

    def push(self, batch: TracerBatch) -> None:
        self._batches.append(batch)
        self.ready.set()


def counters(*devs: tuple[str, int, int]) -> dict[str, DiskCounters]:
    return {n: DiskCounters(ma, mi, n, (0,) * 11, 11) for n, ma, mi in devs}


def test_frames_carry_the_delta_and_drop_vanished_devices() -> None:
    tracer = CannedTracer()
    part = LatencyPart(make_tracer=lambda: tracer, check=lambda: (None, "mounted tracefs"))
    devs = counters(("loop3", 7, 3), ("vda", 254, 0))
    first = part.frame(devs, 0.5)
    assert first.state == STARTING and first.status == "starting tracer…"
    assert first.notice == "mounted tracefs"
    _, batches = feed_all(CANNED.replace("7340042", str(dev_t(7, 3))).replace("254,DS", "1,DS"))
    for b in batches:
        tracer.push(b)
    f1 = part.frame(devs, 1.1)  # only the tick at 1.0 s
    assert f1.state == RUNNING and f1.has_figures and f1.notice is None
    assert f1.devices["loop3"].op("read").count == 4
    assert "vda" not in f1.devices  # the dev 1 records belong to no listed device
    f2 = part.frame(counters(("vda", 254, 0)), 1.3)  # loop3 vanished
    assert dict(f2.devices) == {}
    assert f2.span_s == pytest.approx(0.25)
    tracer.error = "latency tracer (bpftrace) killed by SIGKILL"
    f3 = part.frame(devs, 2.0)
    assert f3.state == FAILED and "SIGKILL" in (f3.status or "")


def test_a_frame_asked_right_after_another_waits_for_a_new_tick() -> None:
    """align() accepts a tick that ended up to 20 ms ago, but never the one the previous
    frame ended at: back-to-back frames used to reuse it and cover no time at all."""
    waited: list[int] = []

    class Recording(CannedTracer):
        def wait_tick(self, after_ns: int, timeout: float) -> bool:
            waited.append(after_ns)
            return True

    tracer = Recording()
    part = LatencyPart(make_tracer=lambda: tracer, check=lambda: (None, None))
    part.start()
    now = time.monotonic_ns()
    tracer.push(TracerBatch(now - 10**9, {}))  # the first tick is dropped: it starts the span
    tracer.push(TracerBatch(now - 5_000_000, {}))
    part.frame({}, now / 1e9)  # ends at the tick 5 ms ago
    part.align()
    assert waited[-1] == now - 5_000_000 + 1  # not now - 20 ms: that tick is used up


def test_missing_prerequisite_is_one_line_and_no_tracer() -> None:
    line = "bpftrace is not installed (...): apt-get install bpftrace"
    part = LatencyPart(check=lambda: (line, None))
    frame = part.frame({}, 1.0)
    assert frame.state == FAILED and part.tracer is None
    assert frame.status is not None and "\n" not in frame.status
    assert not part.wait_ready(0.1)


def test_live_source_wants_latency_only_on_the_live_host(tmp_path: Path) -> None:
    roots = Roots(proc=tmp_path / "proc", sys=tmp_path / "sys")
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "diskstats").write_text(
        "   7       3 loop3 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    )
    (tmp_path / "sys" / "block").mkdir(parents=True)
    source = LiveSource(roots)
    assert source.next_frame().latency is None  # not wanted: no tracer, no field
    source.want(LATENCY, True)
    frame = source.next_frame()
    assert frame.latency is not None and frame.latency.state == FAILED
    assert "captured tree" in (frame.latency.status or "")
    source.want(LATENCY, False)
    assert source.next_frame().latency is None
    with pytest.raises(ValueError):
        source.want("latencies", True)
    source.close()
