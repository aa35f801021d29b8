"""Hints from the numbers, placement against device classes, and history comparisons."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iotop_plus.probe.fio_parse import parse_result
from iotop_plus.probe.history import ProbeHistory, compare
from iotop_plus.probe.presets import PRESETS
from iotop_plus.probe.results import (
    DEVICE_CLASSES,
    DirectionResult,
    DiskUtil,
    FioOutputError,
    Latency,
    ProbeResult,
    hints_for,
    place,
)


def _direction(iops: float = 50_000, p99: float = 300, p9999: float = 500) -> DirectionResult:
    return DirectionResult(
        iops=iops,
        bw_kib_s=int(iops * 4),
        io_bytes=int(iops * 4096 * 60),
        total_ios=int(iops * 60),
        runtime_ms=60_000,
        clat=Latency(80, 10, 9000, (("p50", 70), ("p99", p99), ("p99.99", p9999))),
        slat_mean_us=2,
        lat_mean_us=82,
        iops_min=iops * 0.9,
        iops_max=iops * 1.1,
        bw_min_kib_s=iops * 4 * 0.9,
        bw_max_kib_s=iops * 4 * 1.1,
        bw_mean_kib_s=iops * 4,
        bw_samples=120,
    )


def _result(**changes: object) -> ProbeResult:
    preset = PRESETS["randread"]
    base = ProbeResult(
        preset="randread",
        title=preset.title,
        params=replace(preset.params, runtime_s=60),
        target="/srv (on sda)",
        device="sda",
        fio_version="fio-3.33",
        read=_direction(),
        write=None,
        fsync=None,
        usr_cpu_pct=5,
        sys_cpu_pct=10,
        disk_util=(DiskUtil("sda", 3_000_000, 0, 99.0),),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _codes(result: ProbeResult, preset: str = "randread", rotational: bool | None = None) -> set:
    return {h.code for h in hints_for(result, PRESETS[preset], rotational)}


def test_a_clean_long_run_gets_no_hints() -> None:
    assert _codes(_result()) == set()


def test_each_rule_fires_on_its_own_numbers() -> None:
    assert "tail-jitter" in _codes(_result(read=_direction(p99=300, p9999=4000)))
    stalled = replace(_direction(), bw_min_kib_s=_direction().bw_mean_kib_s * 0.3)
    assert "stalls" in _codes(_result(read=stalled))
    assert "sys-cpu" in _codes(_result(sys_cpu_pct=45))
    buffered = _result(
        params=replace(_result().params, direct=False),
        disk_util=(DiskUtil("sda", 1000, 0, 5.0),),
    )
    assert "page-cache" in _codes(buffered)
    assert "short-runtime" in _codes(_result(params=replace(_result().params, runtime_s=10)))
    shallow = _result(params=replace(_result().params, iodepth=1))
    assert "low-qd" in _codes(shallow, rotational=False)
    assert "low-qd" not in _codes(shallow, rotational=True)
    assert "idle-device" in _codes(_result(disk_util=(DiskUtil("sda", 10, 0, 20.0),)))


def test_short_runtime_hint_quotes_the_recommended_runtime() -> None:
    result = _result(params=replace(_result().params, runtime_s=10))
    text = next(h.text for h in hints_for(result, PRESETS["randread"]) if h.code == "short-runtime")
    assert "60-300 s" in text and "quick probe" in text


def test_placement_uses_iops_for_random_and_bandwidth_for_sequential() -> None:
    assert "SATA SSD" in place(_result(), PRESETS["randread"])
    assert "NVMe" in place(_result(read=_direction(iops=600_000)), PRESETS["randread"])
    assert "HDD" in place(_result(read=_direction(iops=150)), PRESETS["randread"])
    assert "above every" in place(_result(read=_direction(iops=5e6)), PRESETS["randread"])
    seq = _result(read=replace(_direction(), bw_kib_s=3_000_000))  # ~3.1 GB/s
    assert "NVMe" in place(seq, PRESETS["seqscan"])
    assert all(c.source for c in DEVICE_CLASSES)


def test_parse_refuses_failed_jobs_and_empty_documents() -> None:
    with pytest.raises(FioOutputError, match="no jobs"):
        parse_result({}, PRESETS["wal"], PRESETS["wal"].params, target="x", device=None)
    failed = {"jobs": [{"jobname": "wal", "error": 28}]}
    with pytest.raises(FioOutputError, match="No space left on device"):
        parse_result(failed, PRESETS["wal"], PRESETS["wal"].params, target="x", device=None)


def test_history_compares_two_probes_with_deltas_and_settings() -> None:
    history = ProbeHistory()
    a = history.add(_result(), (("scheduler", "mq-deadline"), ("read_ahead_kb", "128")))
    b = history.add(
        _result(read=_direction(iops=60_000)),
        (("scheduler", "mq-deadline"), ("read_ahead_kb", "16")),
    )
    assert len(history) == 2 and history.get(2) is b and history.get(3) is None
    rows = {row.label: row for row in compare(a, b)}
    assert rows["read_ahead_kb"].a == "128" and rows["read_ahead_kb"].b == "16"
    assert rows["read_ahead_kb"].delta == "changed"
    assert rows["scheduler"].delta == ""
    assert rows["IOPS"].delta == "+10,000 (+20.0%)" and rows["IOPS"].better is True
    assert "ra 16" in b.label


def test_product_text_never_mentions_the_seeds() -> None:
    """'the seeds' are our design notes, not something a user has read."""
    quick = _result(params=replace(_result().params, runtime_s=10))
    texts = [quick.quick_label] + [h.text for h in hints_for(quick, PRESETS["randread"])]
    assert texts and not any("seed" in t.lower() for t in texts)


@pytest.mark.parametrize(
    ("device_class", "says"),
    [
        ("loop", "backing file"),
        ("virtual", "the host decides its speed"),
        ("ram", "memory"),
    ],
)
def test_loop_and_virtual_probes_are_not_compared_with_nvme_or_hdd(
    device_class: str, says: str
) -> None:
    """A loop device backed by the page cache was 'typical of NVMe'; a virtio disk was
    compared with HDD datasheets. The figure measures the backing file or the host."""
    fast = _result(read=_direction(iops=600_000))
    for preset in ("randread", "seqscan", "wal"):
        text = place(fast, PRESETS[preset], device_class)
        assert says in text, text
        assert "typical of" not in text and "NVMe" not in text and "HDD" not in text
    assert "NVMe" in place(fast, PRESETS["randread"], "nvme")  # hardware is still placed


def test_probe_history_survives_a_new_history_on_the_same_state_dir(tmp_path) -> None:
    from iotop_plus.probe.history import ProbeHistory

    state = tmp_path / "iotop-plus"
    first = ProbeHistory.load(state)
    first.add(_result(), (("read_ahead_kb", "128"),))
    first.add(_result(read=_direction(iops=60_000)), (("read_ahead_kb", "16"),))
    probes = state / "probes.jsonl"
    assert oct(probes.stat().st_mode & 0o777) == "0o600"
    again = ProbeHistory.load(state)
    assert len(again) == 2 and again.notes == []
    loaded = again.get(2)
    assert loaded is not None and loaded.result == first.records[1].result
    assert loaded.settings == (("read_ahead_kb", "16"),)
    assert again.add(_result()).number == 3
    assert len(ProbeHistory.load(state, keep=2)) == 2  # bounded: only the newest are loaded


def test_a_corrupt_probe_history_line_is_skipped_with_a_note(tmp_path) -> None:
    from iotop_plus.probe.history import ProbeHistory

    state = tmp_path / "iotop-plus"
    ProbeHistory.load(state).add(_result())
    with open(state / "probes.jsonl", "a") as fh:
        fh.write('{"record": "probe-result", "result": {"preset": 1}, "time": 0}\n{oops\n')
    ProbeHistory.load(state).add(_result(read=_direction(iops=60_000)))
    history = ProbeHistory.load(state)
    assert len(history) == 2
    assert history.notes == [f"{state / 'probes.jsonl'}: skipped 2 lines that did not parse"]


def test_a_probe_whose_device_served_more_than_fio_issued_says_other_io_hit_it() -> None:
    """#17 item 8, for single probes: the device's own counters show someone else's load."""
    fio_ios = sum(d.total_ios for d in _result().directions)
    busy = _result(disk_util=(DiskUtil("sda", int(fio_ios * 1.5), 0, 99.0),))
    text = next(h.text for h in hints_for(busy, PRESETS["randread"]) if h.code == "other-io")
    assert text.startswith("other I/O hit the device during the probe: it served ")
    assert "other-io" not in _codes(_result(disk_util=(DiskUtil("sda", fio_ios, 0, 99.0),)))
