"""The probe tracer's issuer counts and flush+write timings, from its own output lines to the
probe's ``Issuers`` (#22 item 11): before, nothing filled them."""

from __future__ import annotations

import json
from types import MappingProxyType

from iotop_plus.probe.block_latency import flush_write_of, issuers_of, journal_thread
from iotop_plus.sampling.latency.hist import DeviceLatency
from iotop_plus.sampling.latency.parser import TracerParser
from iotop_plus.sampling.latency.program import FLUSH_WRITE, tracer_program

LOOP0 = (7 << 20) | 0


def _line(kind: str, data: object) -> str:
    return json.dumps({"type": kind, "data": data})


def test_the_probe_program_counts_issuers_at_submission_and_times_flush_writes_apart() -> None:
    plain = tracer_program(queue=False)
    probe = tracer_program(queue=False, issuers=True, submit="block_bio_queue")
    assert "@who" not in plain and "@fw" not in plain
    assert "tracepoint:block:block_bio_queue {" in probe
    assert "@who__0[args->dev, pid, comm] = count();" in probe
    assert 'strncmp(args->rwbs, "FW", 2) == 0' in probe  # a preflush
    for name in ("@who", "@fh", "@fs", "@fm"):
        assert f"print({name}__1); clear({name}__1);" in probe


def test_issuer_and_flush_write_maps_become_one_batch() -> None:
    parser = TracerParser()
    lines = [
        _line("map", {"@who": {f"{LOOP0},4242,fio": 900, f"{LOOP0},77,jbd2/loop0-8": 30,
                               f"{LOOP0},99,odd,name": 5}}),
        _line("map", {"@fh": {f"{LOOP0},17,0": 2, f"{LOOP0},18,4": 1}}),
        _line("map", {"@fs": {str(LOOP0): 600_000}}),
        _line("map", {"@fm": {str(LOOP0): 300_000}}),
        _line("map", {"@h": {f"{LOOP0},WS,15,0": 900}}),
    ]  # fmt: skip
    for line in lines:
        assert parser.feed(line) is None
    batch = parser.feed(_line("printf", "tick 123\n"))
    assert batch is not None
    assert batch.issuers[(LOOP0, 99, "odd,name")] == 5  # a comm may hold a comma
    assert batch.issuers[(LOOP0, 4242, "fio")] == 900
    fw = batch.ops[(LOOP0, FLUSH_WRITE)].device
    assert fw.count == 3 and fw.sum_ns == 600_000 and fw.max_ns == 300_000
    assert batch.ops[(LOOP0, "write")].device.count == 900
    again = parser.feed(_line("printf", "tick 124\n"))
    assert again is not None and not again.issuers  # each tick starts afresh


def _latency(issuers: dict[tuple[int, str], int]) -> DeviceLatency:
    return DeviceLatency(MappingProxyType({}), MappingProxyType(issuers))


def test_fio_and_the_target_filesystems_journal_are_not_other_io() -> None:
    seen = _latency({
        (4242, "fio"): 900, (4242, "iou-wrk-4243"): 100, (77, "jbd2/loop0-8"): 1_000,
        (78, "jbd2/loop1-8"): 6, (5150, "dd"): 400, (9, "kworker/u8:3"): 12,
    })  # fmt: skip
    got = issuers_of(seen, 4242, "loop0", buffered=False)
    assert got is not None
    assert (got.fio, got.journal) == (1_000, 1_000)
    assert got.others == (("dd[5150]", 400), ("kworker/u8:3[9]", 12), ("jbd2/loop1-8[78]", 6))
    # Buffered: kernel workers write fio's pages back.
    buffered = issuers_of(seen, 4242, "loop0", buffered=True)
    assert buffered is not None and buffered.fio == 1_012
    # None of fio's requests seen: the tracer cannot tell who else was there.
    assert issuers_of(_latency({(5150, "dd"): 400}), 4242, "loop0", buffered=False) is None
    assert flush_write_of(None) is None and flush_write_of(seen) is None


def test_a_journal_threads_comm_cut_at_15_characters_still_counts() -> None:
    assert journal_thread("jbd2/nvme0n1p12", "nvme0n1p12")  # "jbd2/nvme0n1p12-8", cut
    assert not journal_thread("jbd2/nvme0n1p12", "nvme0n1p1")
    assert journal_thread("jbd2/nvme0n1p1-", "nvme0n1p1")
    assert not journal_thread("jbd2/loop10-8", "loop1")


def test_a_probes_tracer_traces_only_its_device() -> None:
    # A loop device's backing I/O on another device cost every probe map update (measured:
    # 6.7 µs of BPF time per fio write+fsync on a file-backed loop device, 3.9 with the filter).
    program = tracer_program(queue=True, issuers=True, only_dev=LOOP0)
    probes = [line for line in program.splitlines() if line.startswith("tracepoint:block:")]
    assert len(probes) == 4
    assert all(f"/args->dev == {LOOP0}/" in line for line in probes)
    assert "/args->dev" not in tracer_program(queue=True)  # the TUI's tracer sees every device
