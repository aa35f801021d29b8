"""The tracer's part of the I/O errors (#26): ``block_rq_error`` in the program, ``@err`` in
the parser, and the kinds the frames' events name."""

from __future__ import annotations

import errno
import json

from iotop_plus.sampling.health.io_errors import ERRNO_KINDS, parse_kmsg_record, tracer_errors
from iotop_plus.sampling.latency.parser import TracerParser
from iotop_plus.sampling.latency.program import dev_t, tracer_program


def test_the_program_counts_failed_requests_only_when_asked() -> None:
    with_errors = tracer_program(queue=False, errors=True, marked=True)
    assert "tracepoint:block:block_rq_error { if (@tg) { @err__1[args->dev, args->error]" in (
        with_errors
    )
    assert with_errors.count("print(@err__0); clear(@err__0);") == 2  # at ticks and at marks
    assert "block_rq_error" not in tracer_program(queue=False)


def test_err_map_lines_become_the_batchs_errors_by_device_and_kind() -> None:
    parser = TracerParser()
    # As bpftrace 0.17 printed it here for a loop device on a full tmpfs (7:0, ENOSPC).
    line = {"type": "map", "data": {"@err": {"7340032,-28": 3, "7340032,-5": 1}}}
    assert parser.feed(json.dumps(line)) is None
    batch = parser.feed(json.dumps({"type": "printf", "data": "tick 10467041125479\n"}))
    assert batch is not None
    assert dict(batch.errors) == {(7340032, -28): 3, (7340032, -5): 1}
    counts = tracer_errors([batch], {dev_t(7, 0): "loop0"})
    assert dict(counts) == {("loop0", "critical space allocation"): 3, ("loop0", "I/O"): 1}
    after = parser.feed(json.dumps({"type": "printf", "data": "tick 10468041123163\n"}))
    assert after is not None and dict(after.errors) == {}


def test_kernel_log_lines_name_the_device_and_the_kind() -> None:
    seen_here = (
        "3,1234,9508674044,-;critical space allocation error, dev loop7, sector 8192 "
        "op 0x1:(WRITE) flags 0xc800 phys_seg 128 prio class 2\n"
    )
    found = parse_kmsg_record(seen_here)
    assert found is not None
    assert (found.device, found.kind, found.op) == ("loop7", "critical space allocation", "WRITE")
    older = "3,5,6,-;blk_update_request: I/O error, dev sda, sector 2048 op 0x0:(READ) flags 0x0"
    assert parse_kmsg_record(older) == parse_kmsg_record(older)  # stable
    assert (parse_kmsg_record(older) or found).device == "sda"
    assert parse_kmsg_record("4,7,8,-;Buffer I/O error on dev loop7, logical block 5") is None
    assert parse_kmsg_record("6,9,10,-;loop7: detected capacity change") is None
    assert ERRNO_KINDS[-errno.ENODATA] == "critical medium"
