"""A probe's tracer costs the device about 1.2 us of BPF per request, timing every one (#25:
a quick probe reported 0.72x the IOPS of an untraced one). It now times one request in N,
chosen on a hash of ``sector >> 3``, and every figure built from it says so."""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict
from types import MappingProxyType

import pytest

from iotop_plus.probe.block_latency import (
    PROBE_SAMPLE,
    ProbeTracer,
    block_latency,
    block_line,
    flush_write_of,
    issuers_of,
    with_block_latency,
)
from iotop_plus.probe.history import _block, _issuers
from iotop_plus.probe.results import Issuers, other_io_note
from iotop_plus.roots import Roots
from iotop_plus.sampling.latency.hist import DeviceLatency, Histogram, OpLatency
from iotop_plus.sampling.latency.program import (
    SAMPLE_MAX,
    sample_filter,
    sample_kept,
    tracer_program,
)
from tests.unit.test_probe_results import _result


def _share(sectors: list[int], sample: int) -> float:
    return sum(sample_kept(s, 8, sample) for s in sectors) / len(sectors)


@pytest.mark.parametrize("sample", [2, 8, 16, 64])
def test_the_sample_is_one_request_in_n_for_sequential_and_random_4k_requests(
    sample: int,
) -> None:
    sequential = [8 * i for i in range(200_000)]  # 4k-aligned: the low three bits are zero
    rng = random.Random(25)
    scattered = [8 * rng.randrange(1 << 28) for _ in range(200_000)]
    strided = [8 * 64 * i for i in range(200_000)]  # 256k steps
    pages = [16 * i for i in range(200_000)]  # 8k steps (the wal preset)
    for sectors in (sequential, scattered, strided, pages):
        assert _share(sectors, sample) == pytest.approx(1 / sample, rel=0.1)


def test_requests_without_sectors_are_always_kept() -> None:
    assert all(sample_kept(s, 0, 16) for s in (0, 8, 2**64 - 1))


def test_the_choice_depends_on_the_sector_alone() -> None:
    """Submission, insert, issue and completion of one request choose alike."""
    rng = random.Random(3)
    for _ in range(1000):
        sector = 8 * rng.randrange(1 << 30)
        assert len({sample_kept(sector, n, 16) for n in (8, 16, 256)}) == 1


def test_every_block_probe_of_a_sampled_program_carries_the_filter() -> None:
    text = tracer_program(
        queue=True, issuers=True, only_dev=7340035, sample=16, rwbs_at={}, errors=True
    )
    heads = [line for line in text.splitlines() if line.startswith("tracepoint:block:")]
    sampled = [h for h in heads if "block_rq_error" not in h]
    assert len(sampled) == 4  # insert, submission, issue, completion
    for head in sampled:
        assert "args->dev == 7340035 && (args->nr_sector == 0 ||" in head, head
        assert ">> 28) & 15) == 0)" in head, head
    # counts are estimates of all requests: each kept one with sectors stands for 16
    assert "@who__0[args->dev, pid, comm] = sum(args->nr_sector ? 16 : 1);" in text
    for counted in ("@h__0[args->dev, args->rwbs, $e, $s]", "@fh__0[args->dev, $e, $s]", "@qn__0["):
        assert re.search(re.escape(counted) + r".* = sum\(\$n\);", text), counted
    assert "@ds__0[args->dev, args->rwbs] = sum(($v) * $n);" in text
    assert "$n = (args->nr_sector) ? 16 : 1;" in text
    assert "$n = ($w & 2) ? 16 : 1;" in text  # a flush+write: its submission had sectors


def test_an_unsampled_program_is_unchanged() -> None:
    assert sample_filter(None, 1) == ""
    text = tracer_program(queue=False, sample=1)
    assert "nr_sector == 0 ||" not in text


@pytest.mark.parametrize("bad", [0, 3, 12, 2 * SAMPLE_MAX])
def test_a_sample_that_is_not_a_power_of_two_is_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="power of two"):
        sample_filter(None, bad)


def test_a_probes_tracer_samples() -> None:
    part = ProbeTracer(Roots())._make_part(7340035)
    assert part.sample == PROBE_SAMPLE > 1


def _latency(sampled: int) -> DeviceLatency:
    hist = Histogram.of([40_000] * 90 + [80_000] * 10)
    ops = MappingProxyType({"read": OpLatency(hist), "flush+write": OpLatency(hist)})
    who = MappingProxyType({(100, "fio"): 1600, (200, "dd"): 800})
    return DeviceLatency(ops, who, sampled)


def test_probe_figures_say_they_are_sampled() -> None:
    block = block_latency(_latency(16).op("read"), 16)
    assert block is not None and block.sampled == 16 and block.count == 100
    assert block_line(block).endswith("(about 100 requests, 1 in 16 timed)")
    whole = block_latency(_latency(1).op("read"))
    assert whole is not None and whole.sampled == 1
    assert block_line(whole).endswith("(100 requests)")
    flush = flush_write_of(_latency(16))
    assert flush is not None and flush.sampled == 16


def test_probe_issuers_are_labelled_estimates() -> None:
    issuers = issuers_of(_latency(16), 100, None, buffered=False)
    assert issuers is not None
    assert (issuers.fio, issuers.others, issuers.sampled) == (1600, (("dd[200]", 800),), 16)
    note = other_io_note("the run", 1600, None, direct=True, issuers=issuers)
    assert note is not None and "about 800 requests from dd[200]" in note
    exact = Issuers(fio=1600, others=(("dd[200]", 800),), journal=0)
    plain = other_io_note("the run", 1600, None, direct=True, issuers=exact)
    assert plain is not None and "about" not in plain


def test_snapshot_latency_json_says_sampled_only_when_sampled() -> None:
    assert _latency(16).to_json()["sampled"] == 16
    assert "sampled" not in _latency(1).to_json()
    merged = _latency(1).merged(_latency(16))
    assert merged.sampled == 16


def test_a_probe_result_carries_sampled_into_its_json_and_history() -> None:
    result = with_block_latency(_result(), _latency(16), None)
    assert result.read is not None and result.read.block is not None
    doc = asdict(result)
    assert doc["read"]["block"]["sampled"] == 16
    assert re.search(r"1 in 16 timed", block_line(result.read.block))
    back = _block(json.loads(json.dumps(doc["read"]["block"])))
    assert back == result.read.block
    older = {k: v for k, v in doc["read"]["block"].items() if k != "sampled"}
    kept = _block(older)  # a result kept before sampling: every request was timed
    assert kept is not None and kept.sampled == 1
    issuers = issuers_of(_latency(16), 100, None, buffered=False)
    assert issuers is not None
    assert _issuers(json.loads(json.dumps(asdict(issuers)))) == issuers
    assert _issuers({"fio": 3, "journal": 0, "others": []}) == Issuers(3, 0)
