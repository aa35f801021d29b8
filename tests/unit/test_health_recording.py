"""Health in the recording (#26): record type ``H`` written when health changed (and at
each chunk or file start), not every sample, and back in replay with the ages moved on."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from iotop_plus import cli
from iotop_plus.record.chunks import RecordedSample
from iotop_plus.record.reader import RecordingFile
from iotop_plus.record.recorded_health import HEALTH, chunk_health
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.disks.sampler import Sample
from iotop_plus.sampling.health.part import (
    HEALTH_KEYS,
    MAX_PART_DEVICES,
    HealthFrame,
    health_from_json,
)
from iotop_plus.sampling.health.smart import DeviceHealth


@pytest.mark.root
def block_devices() -> set[tuple[str, str]]:
    """Each block device's name and diskseq: a device attached again gets a new diskseq."""
    found = set()
    for entry in Path("/sys/block").iterdir():
        try:
            found.add((entry.name, (entry / "diskseq").read_text().strip()))
        except OSError:
            found.add((entry.name, "?"))
    return found


def test_recorded_health_replays_with_its_age(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state, rec = tmp_path / "state", tmp_path / "rec"
    argv = ["--state-dir", str(state), "record", "--dir", str(rec), "-i", "0.2", "--count", "8"]
    block_devices_before = block_devices()
    assert cli.main([*argv, "--processes", "0"]) == 0
    (path,) = sorted(rec.glob("*.rec"))
    recording = RecordingFile(path)
    samples = [s for i in range(len(recording.chunks)) for s in recording.samples(i)]
    assert len(samples) == 8
    with_h = [s for s in samples if HEALTH in s.parts]
    assert samples[0].parts.get(HEALTH) is not None  # a file starts with it
    # Not every sample: only when something changed. A device that came or went is such a
    # change (a busy host attaches loop devices all the time), so the count is checked only
    # when the host's block devices were the same before and after the recording and in
    # every sample.
    seen = {frozenset(s.sample.counters) for s in samples}
    if block_devices_before == block_devices() and len(seen) == 1:
        assert len(with_h) < len(samples)
    capsys.readouterr()
    code = cli.main(
        ["--state-dir", str(state), "snapshot", "--from", str(rec), "-f", "json", "--health", "-a"]
    )
    out = capsys.readouterr().out
    assert code == 0
    stats = json.loads(out)["sysstat"]["hosts"][0]["statistics"]
    ages = []
    loops_seen = loops_read = 0
    for entry in stats:
        for disk in entry["disk"]:
            assert list(disk["health"]) == list(HEALTH_KEYS)
            if disk["disk_device"].startswith("loop"):
                # One device is read at a time: on a host that lists hundreds of loop devices
                # (a benchmark's, detached), 8 samples do not reach them all.
                reason = disk["health"]["reason"]
                loops_seen += 1
                assert reason.startswith(("loop: ", "not read yet")), reason
                loops_read += reason.startswith("loop: ")
        ages.append(max(d["health"]["age_s"] or 0 for d in entry["disk"]))
    assert loops_read or not loops_seen  # a read one says why a loop has no health figures
    assert ages[-1] > ages[0]  # carried forward: the reading grows older


def test_a_sample_without_h_takes_the_last_one_in_its_chunk() -> None:
    reading = DeviceHealth(source="smartctl", passed=True, media_errors=7)
    part = HealthFrame(
        {"nvme0n1": reading}, {"nvme0n1": 10.0}, {"nvme0n1": 2}, "kmsg", None, {"nvme0n1": 2}
    )
    doc = {**part.as_json(), "wall": 1000.0}
    empty = Sample(0.0, 0.0, {})
    nvme = Sample(0.0, 0.0, {"nvme0n1": DiskCounters(259, 0, "nvme0n1", (0,) * 17, 17)})
    samples = [
        RecordedSample(nvme, None, None, (), {HEALTH: doc}),
        RecordedSample(nvme, None, None, (), {}),
    ]
    first = chunk_health(samples, 0, 1000.0)
    later = chunk_health(samples, 1, 1005.0)
    assert first is not None and later is not None
    assert first.new_errors == {"nvme0n1": 2} and later.new_errors == {}
    assert later.age_s["nvme0n1"] == pytest.approx(15.0)
    assert later.device_json("nvme0n1")["media_errors"] == 7
    assert later.device_json("nvme0n1")["io_errors"] == 2
    assert chunk_health([RecordedSample(empty, None, None, (), {})], 0, time.time()) is None


def test_a_health_part_is_read_for_its_samples_devices_only() -> None:
    """A part listing 100,000 devices for a sample of one costs what the sample's one does."""
    many = {f"d{i}": {"source": "smartctl", "passed": True} for i in range(100_000)}
    doc = {
        "devices": {**many, "sda": {"source": "smartctl", "media_errors": 3}},
        "io_errors": {**dict.fromkeys(many, 1), "sda": 2},
        "grown": {**{d: {"media_errors": [0, 1]} for d in many}, "sda": {"media_errors": [1, 3]}},
        "new_errors": dict.fromkeys(many, 1),
    }
    sda = Sample(0.0, 0.0, {"sda": DiskCounters(8, 0, "sda", (0,) * 17, 17)})
    found = chunk_health([RecordedSample(sda, None, None, (), {HEALTH: doc})], 0, 0.0)
    assert found is not None and list(found.readings) == ["sda"]
    assert found.io_errors == {"sda": 2} and found.new_errors == {}
    assert found.grown == {"sda": {"media_errors": (1, 3)}}
    whole = health_from_json(doc)
    assert whole is not None and len(whole.readings) == MAX_PART_DEVICES
