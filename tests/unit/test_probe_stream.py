"""Splitting fio's stdout into whole JSON documents, and live figures from two of them."""

from __future__ import annotations

import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from iotop_plus.probe.fio_stream import JsonDocumentStream, progress_from


def _status(elapsed: int, ts_ms: int, ios: int, io_bytes: int, n: int, mean_ns: float) -> dict:
    direction = {
        "total_ios": ios,
        "io_bytes": io_bytes,
        "runtime": elapsed * 1000,
        "clat_ns": {"N": n, "mean": mean_ns},
    }
    return {
        "fio version": "fio-3.33",
        "timestamp_ms": ts_ms,
        "jobs": [{"jobname": "x", "error": 0, "elapsed": elapsed, "read": direction}],
    }


DOCS = [
    _status(1, 1000, 1000, 4096000, 1000, 50000.0),
    _status(2, 2000, 3000, 12288000, 3000, 100000.0),
]
OUTPUT = "note: both iodepth >= 1 and synchronous I/O engine are selected\n" + "".join(
    json.dumps(d, indent=2) + "\n" for d in DOCS
)


def test_notes_before_the_json_are_kept_as_text_and_every_document_is_found() -> None:
    stream = JsonDocumentStream()
    docs = [doc for _, doc in stream.feed(OUTPUT)]
    assert docs == DOCS
    assert stream.text == ["note: both iodepth >= 1 and synchronous I/O engine are selected"]
    assert stream.finish() == ""


@given(st.lists(st.integers(min_value=1, max_value=len(OUTPUT) - 1), max_size=12))
def test_documents_survive_any_chunking(cuts: list[int]) -> None:
    stream = JsonDocumentStream()
    bounds = [0, *sorted(set(cuts)), len(OUTPUT)]
    docs = []
    for a, b in itertools.pairwise(bounds):
        docs += [doc for _, doc in stream.feed(OUTPUT[a:b])]
    assert docs == DOCS
    assert stream.finish() == ""


def test_garbage_is_left_over_at_the_end() -> None:
    stream = JsonDocumentStream()
    assert stream.feed("Segmentation fault\n{not json at all\n") == []
    assert "{not json at all" in stream.finish()
    assert "Segmentation fault" in stream.text


def test_raw_text_of_a_document_is_what_fio_printed() -> None:
    stream = JsonDocumentStream()
    raws = [raw for raw, _ in stream.feed(OUTPUT)]
    assert json.loads(raws[1]) == DOCS[1]


def test_progress_is_the_interval_between_two_cumulative_documents() -> None:
    first = progress_from(DOCS[0], None, 10, "io_uring")
    assert first is not None
    assert first.read_iops == 1000 and first.mean_lat_us == 50.0
    second = progress_from(DOCS[1], DOCS[0], 10, "io_uring")
    assert second is not None
    # 2000 I/Os and 8192000 bytes in the 1000 ms between the two reports.
    assert second.read_iops == 2000
    assert second.read_kib_s == 8000
    # (3000 * 100 µs - 1000 * 50 µs) / 2000 I/Os = 125 µs.
    assert second.mean_lat_us == 125.0
    assert second.time_left_s == 8 and second.fraction == 0.2
    assert progress_from({"jobs": []}, None, 10, "io_uring") is None
