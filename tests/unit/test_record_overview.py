"""Per-minute roll-ups: they hold the figures of the raw counters, old files read in the same
shape, and ``snapshot --from --overview`` prints them without decoding a sample."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from iotop_plus.cli import build_parser
from iotop_plus.commands import snapshot
from iotop_plus.commands.common import UsageError
from iotop_plus.record import reader as reader_module
from iotop_plus.record import upgrade
from iotop_plus.record.chunks import ROLLUP_METRICS
from iotop_plus.record.reader import RecordingFile
from iotop_plus.sampling.disks.diskstats import (
    IO_TICKS,
    READ_MS,
    READS,
    SECTORS_READ,
    SECTORS_WRITTEN,
    TIME_IN_QUEUE,
    WRITE_MS,
    WRITES,
)
from iotop_plus.sampling.disks.sampler import Sample
from tests.support.old_recordings import fixture_samples, path_of
from tests.unit.test_record_codec import busy_samples, write


def exact_minutes(
    rec: RecordingFile, samples: list[Sample]
) -> list[dict[str, dict[str, list[float]]]]:
    """Per closed chunk, each device's per-interval figures computed from the raw counters."""
    by_wall = {round(s.wall_time * 1e9): k for k, s in enumerate(samples)}
    out = []
    for chunk in rec.chunks:
        first, last = by_wall[chunk.first_ns], by_wall[chunk.last_ns]
        figures: dict[str, dict[str, list[float]]] = {}
        for k in range(max(1, first), last + 1):
            prev, cur = samples[k - 1], samples[k]
            dt = cur.monotonic - prev.monotonic
            for name, c in cur.counters.items():
                p = prev.counters[name].values
                d = [a - b for a, b in zip(c.values, p, strict=True)]
                ios = d[READS] + d[WRITES]
                row = {
                    "iops": ios / dt,
                    "mbps": (d[SECTORS_READ] + d[SECTORS_WRITTEN]) * 512 / 1e6 / dt,
                    "await": (d[READ_MS] + d[WRITE_MS]) / ios if ios else 0.0,
                    "util": d[IO_TICKS] / dt / 10,
                    "aqu": d[TIME_IN_QUEUE] / dt / 1000,
                }
                row["dt"] = dt
                for m, v in row.items():
                    figures.setdefault(name, {}).setdefault(m, []).append(v)
        out.append(figures)
    return out


def close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-9


def check_rollups(rec: RecordingFile, samples: list[Sample], devices: int, rel: float) -> None:
    """Each closed chunk's roll-up of the first ``devices`` devices against the figures of
    the raw counters, to ``rel``."""
    exact = exact_minutes(rec, samples)
    assert len(rec.chunks) >= 3
    for i, want in enumerate(exact):
        got = rec.rollup(i)
        assert got["devices"] == list(want)
        for j, name in enumerate(got["devices"][:devices]):
            for m in ROLLUP_METRICS:
                values = want[name][m]
                assert close(got[m]["min"][j], min(values), rel), (i, name, m)
                assert close(got[m]["max"][j], max(values), rel), (i, name, m)
            # a mean over the chunk's time (its I/Os over its seconds), not a mean of rates
            dts = want[name]["dt"]
            for m in ("iops", "util", "aqu"):
                mean = sum(v * t for v, t in zip(want[name][m], dts, strict=True)) / sum(dts)
                assert close(got[m]["mean"][j], mean, rel), (i, name, m)
        assert close(got["seconds"], sum(want[got["devices"][0]]["dt"]), 1e-3)


def test_the_roll_ups_hold_the_min_max_and_mean_of_the_raw_counters(tmp_path: Path) -> None:
    """Min and max of each interval's figure and the mean over the chunk, to the 3 digits
    kept."""
    samples = busy_samples(150, devices=6)
    write(tmp_path / "r.rec", samples)
    check_rollups(RecordingFile(tmp_path / "r.rec"), samples, 6, 5e-3)


@pytest.mark.parametrize(("version", "rel"), [(1, 5e-4), (2, 5e-4), (3, 5e-3)])
def test_an_older_versions_roll_ups_read_in_the_current_shape(version: int, rel: float) -> None:
    """Versions 1 and 2 stored ``[min, max, mean]`` per device to 4 digits, version 3 the
    current columns to 3 (tests/fixtures/recordings); each reads as the current version's.
    Its busy disks only: the third's counters wrap and reset, which the roll-up counts as
    nothing where plain differences go negative."""
    samples = [rs.sample for rs in fixture_samples()]
    check_rollups(RecordingFile(path_of(version)), samples, 2, rel)


def test_roll_ups_take_under_six_tenths_of_a_byte_per_device_a_sample(tmp_path: Path) -> None:
    """Stored by column to 3 digits, 60 busy devices' roll-ups take 0.54 bytes per device per
    sample; versions 1 and 2's rows of ``[min, max, mean]`` to 4 digits took 0.69."""
    samples = busy_samples(300, devices=60)
    trailers = write(tmp_path / "r.rec", samples).stats.trailers
    assert trailers / (300 * 60) < 0.6, trailers


def test_a_roll_up_that_is_not_one_reads_as_empty() -> None:
    def read(version: int, doc: object) -> dict[str, object]:
        return reader_module.normalized_rollup(upgrade.rollup(version, doc))

    assert read(2, {"devices": ["a"], "seconds": 60, "iops": [[1, 2]]}) == {}
    assert read(4, {"devices": ["a"], "seconds": 60, "iops": [[1, 2, 3]]}) == {}
    assert read(4, {"devices": ["a"], "seconds": 60}) == {}
    assert read(4, [1, 2]) == {}
    rows = {"devices": ["a"], "seconds": 60, **{m: [[1, 2, 3]] for m in ROLLUP_METRICS}}
    want = {"min": [1.0], "max": [2.0], "mean": [3.0]}
    assert read(1, rows)["iops"] == read(2, rows)["iops"] == want
    columns = {"devices": ["a"], "seconds": 60, **{m: want for m in ROLLUP_METRICS}}
    assert read(3, columns)["iops"] == read(4, columns)["iops"] == want


def args_for(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["snapshot", *argv])


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = snapshot.run(args_for(*argv), None, out)  # type: ignore[arg-type]
    return code, out.getvalue()


def test_overview_prints_each_closed_minute_without_decoding_a_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    samples = busy_samples(150, devices=4)
    write(tmp_path / "r.rec", samples)
    rec = RecordingFile(tmp_path / "r.rec")
    decoded: list[int] = []
    real = RecordingFile.samples

    def counted(self: RecordingFile, i: int) -> object:
        decoded.append(i)
        return real(self, i)

    monkeypatch.setattr(RecordingFile, "samples", counted)
    code, text = run("--from", str(tmp_path / "r.rec"), "--overview", "-f", "json", "sd1")
    assert code == 0 and decoded == []
    doc = json.loads(text)
    assert len(doc["minutes"]) == len(rec.chunks)
    first = doc["minutes"][0]
    assert list(first["devices"]) == ["sd1"]
    assert set(first["devices"]["sd1"]) == set(ROLLUP_METRICS)
    assert first["end"] == "2023-11-14T22:13" + first["end"][16:]  # T0 is 22:13:20 UTC
    stored = [rec.rollup(i)["iops"] for i in range(len(rec.chunks))]
    assert [m["devices"]["sd1"]["iops"] for m in doc["minutes"]] == [
        {k: iops[k][1] for k in ("min", "max", "mean")} for iops in stored
    ]
    code, text = run("--from", str(tmp_path / "r.rec"), "--overview", "-f", "csv")
    lines = text.splitlines()
    assert lines[0].startswith("start,end,device,iops_min,iops_max,iops_mean,mbps_min")
    assert len(lines) == 1 + 4 * len(rec.chunks)
    code, text = run("--from", str(tmp_path / "r.rec"), "--overview")
    assert code == 0 and "IOPS" in text and "aqu-sz" in text and "sd3" in text
    assert max(map(len, text.splitlines())) <= 80  # an SSH session at 80x24
    assert text.splitlines()[3].startswith("22:13 sd0 ")  # rows named by their minute


def test_overview_refusals_are_one_line(tmp_path: Path) -> None:
    write(tmp_path / "r.rec", busy_samples(70, devices=2))
    with pytest.raises(UsageError, match="no device nvme9n1 in the recording's roll-ups"):
        run("--from", str(tmp_path / "r.rec"), "--overview", "nvme9n1")
    with pytest.raises(UsageError, match="drop --interval"):
        run("--from", str(tmp_path / "r.rec"), "--overview", "-i", "10")
    with pytest.raises(UsageError, match="need --from"):
        run("--overview")
