"""Real device: the frames' tracer samples a busy device (#25, tracer IOPS lost at QD1).

fio reads a loop device at QD32 (well above BUSY_IOPS here, even on the shared machine);
frames taken every quarter second switch the tracer to one request in BUSY_SAMPLE: the
bpftrace child then runs the sampled program, the device's latency says ``sampled``, its
count is an estimate within 15 % of what diskstats counted, and its percentiles stay
within the range fio's own clat spans."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from iotop_plus.sampling.disks.diskstats import parse_diskstats
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.latency.part import BUSY_SAMPLE
from iotop_plus.sampling.latency.program import MARKER
from tests.e2e.test_latency_real import fio_randread, need_tracer, traced_source
from tests.support.wait import holds_within

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.serial]


def _reads(dev: str) -> int:
    stats = parse_diskstats(Path("/proc/diskstats").read_text())
    return stats[dev].reads


def _sampled_child() -> bool:
    # This process's tracer only: another test's may run beside this one (make test's workers).
    found = subprocess.run(
        ["pgrep", "-af", f"{MARKER} pid={os.getpid()}( |$)"], capture_output=True, text=True
    ).stdout
    return "nr_sector == 0 ||" in found


def test_a_busy_device_is_timed_on_a_sample_that_says_so(
    make_loop: Callable[..., str], fio_bin: str
) -> None:
    need_tracer()
    dev = make_loop(64, filled=True)
    source: LiveSource = traced_source()
    fio = fio_randread(dev, 60, "--ioengine=io_uring", "--iodepth=32", "--direct=1")
    frames: list[Frame] = []

    def sampled() -> bool:
        frames.append(source.next_frame())
        lat = frames[-1].latency
        got = lat.devices.get(dev) if lat is not None else None
        return got is not None and got.sampled == BUSY_SAMPLE

    try:
        assert holds_within(sampled, 45), [
            (f.latency.state, f.latency.notice) for f in frames[-5:] if f.latency is not None
        ]
        assert _sampled_child()
        said = [f.latency.notice for f in frames if f.latency is not None and f.latency.notice]
        assert any(f"1 request in {BUSY_SAMPLE}" in n for n in said), said
        source.next_frame()  # the next frame covers the time from here on
        before = _reads(dev)
        assert holds_within(lambda: _reads(dev) - before >= 20_000, 30)
        frame = source.next_frame()
        after = _reads(dev)
    finally:
        fio.terminate()
        out, _ = fio.communicate(timeout=60)
        source.close()
    lat = frame.latency
    assert lat is not None and lat.devices[dev].sampled == BUSY_SAMPLE
    ours = lat.devices[dev].op("read")
    assert lat.devices[dev].to_json()["sampled"] == BUSY_SAMPLE
    done = after - before
    assert done >= 20_000, done
    assert abs(ours.count - done) <= 0.15 * done, (ours.count, done)
    clat = json.loads(out[out.index("{") :])["jobs"][0]["read"]["clat_ns"]
    p50 = ours.percentile(50)
    assert p50 is not None and p50 <= clat["max"]
