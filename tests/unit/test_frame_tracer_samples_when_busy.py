"""The frames' tracer cost a busy device about 1 us of BPF on every request (#25: 7.7 % of
the IOPS at QD1, goal <= 3 %). Above BUSY_IOPS it now times one request in BUSY_SAMPLE
(restarting its child with the sampled program), says so once and in every figure, and
times every request again once the devices are quiet."""

from __future__ import annotations

from types import MappingProxyType

from iotop_plus.sampling.latency.hist import Histogram, LatencyFrame, OpLatency
from iotop_plus.sampling.latency.parser import TracerBatch
from iotop_plus.sampling.latency.part import (
    BUSY_FRAMES,
    BUSY_IOPS,
    BUSY_SAMPLE,
    QUIET_FRAMES,
    LatencyPart,
)
from iotop_plus.sampling.latency.program import dev_t
from iotop_plus.sampling.latency.tracer import Tracer
from iotop_plus.tui.widgets.latency_view import LatencyView


class Counters:
    """A device's cumulative counters, as the frame passes them."""

    def __init__(self, reads: int) -> None:
        self.major, self.minor, self.reads, self.writes = 7, 3, reads, 0


class Canned(Tracer):
    """A tracer whose child never runs: the test pushes each tick's batch."""

    def __init__(self, sample: int) -> None:
        super().__init__(queue=False, sample=sample)

    def start(self) -> None:
        self.ready.set()


def _part() -> tuple[LatencyPart, list[Canned]]:
    made: list[Canned] = []

    def make() -> Canned:
        made.append(Canned(part.sample))
        return made[-1]

    part = LatencyPart(queue=False, make_tracer=make, check=lambda: (None, None))
    return part, made


def _frame(
    part: LatencyPart, made: list[Canned], t: int, iops: int, total: list[int]
) -> LatencyFrame:
    """One second at ``iops`` (what the tracer counts, as estimates of all requests)."""
    tracer = made[-1]
    if tracer.first_tick_ns is None:
        tracer.first_tick_ns = (t - 1) * 10**9
    hist = Histogram.of([50_000] * (iops // part.sample))
    scaled = Histogram(MappingProxyType({k: v * part.sample for k, v in hist.buckets.items()}))
    tracer._batches.append(
        TracerBatch(t * 10**9, MappingProxyType({(dev_t(7, 3), "read"): OpLatency(scaled)}))
    )
    total[0] += iops
    return part.frame({"loop3": Counters(total[0])}, t + 0.001)


def test_a_busy_device_is_sampled_and_a_quiet_one_timed_whole_again() -> None:
    part, made = _part()
    part.start()
    total, t = [0], 1
    for _ in range(BUSY_FRAMES - 1):
        frame = _frame(part, made, t, 2 * BUSY_IOPS, total)
        t += 1
        assert frame.devices["loop3"].sampled == 1 and len(made) == 1
    frame = _frame(part, made, t, 2 * BUSY_IOPS, total)
    t += 1
    assert len(made) == 2 and made[-1].sample == BUSY_SAMPLE  # a new child, sampled
    assert frame.notice is not None and f"1 request in {BUSY_SAMPLE}" in frame.notice
    frame = _frame(part, made, t, 2 * BUSY_IOPS, total)
    t += 1
    busy = frame.devices["loop3"]
    assert busy.sampled == BUSY_SAMPLE and busy.to_json()["sampled"] == BUSY_SAMPLE
    assert busy.op("read").count == 2 * BUSY_IOPS  # scaled back: an estimate of all
    view = LatencyView().render_text(frame, "loop3", width=100).plain
    assert f"sampled 1 in {BUSY_SAMPLE}" in view.splitlines()[0]
    for _ in range(QUIET_FRAMES - 1):  # a dip below a quarter, but not for long enough
        frame = _frame(part, made, t, BUSY_IOPS // 8, total)
        t += 1
    assert len(made) == 2
    frame = _frame(part, made, t, BUSY_IOPS // 8, total)
    assert len(made) == 3 and made[-1].sample == 1
    assert frame.notice == "latency: timing every request again"


def test_a_probes_tracer_keeps_its_sample_and_a_quiet_frame_tracer_times_everything() -> None:
    fixed = LatencyPart(queue=False, issuers=True, only_dev=dev_t(7, 3), sample=16)
    assert not fixed.adaptive and fixed.sample == 16
    part, made = _part()
    part.start()
    total = [0]
    for t in range(1, 3 * BUSY_FRAMES):
        frame = _frame(part, made, t, BUSY_IOPS // 2, total)
        assert frame.devices["loop3"].sampled == 1
    assert len(made) == 1
