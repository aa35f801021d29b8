"""``diff``: quiet windows stay quiet, moved figures and new issuers rank first, the CLI's
windows and errors, all on recordings written with the real writer (seeded, deterministic)."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from datetime import timezone
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.commands.diff import diff_timeline
from iotop_plus.record.diff_report import compare, report_text
from iotop_plus.record.timeline import open_timeline
from iotop_plus.record.whatchanged import Change, ranked, shift
from iotop_plus.record.window_stats import Series, WindowStats
from tests.support.cli import run_cli
from tests.support.recorded_load import T0, Load, write_recording


def series(values: list[float]) -> Series:
    s = Series()
    for v in values:
        s.add(v)
    return s


def quiet_pairs(path: Path, n_samples: int, length: float, seed: int) -> tuple[int, list[str]]:
    timeline = open_timeline(path)
    rng = random.Random(seed)
    quiet, loud = 0, []
    try:
        for _ in range(20):
            a0 = T0 + rng.uniform(1, n_samples - length - 1)
            b0 = T0 + rng.uniform(1, n_samples - length - 1)
            report = diff_timeline(timeline, (a0, a0 + length), (b0, b0 + length))
            assert report.a.intervals and report.b.intervals
            quiet += report.quiet
            if not report.quiet:
                loud += report_text(report, timezone.utc)
    finally:
        timeline.close()
    return quiet, loud


def test_quiet_windows_of_a_steady_noisy_recording_say_no_significant_change(
    tmp_path: Path,
) -> None:
    # 16 busy devices drifting +-20 % a sample around their rate, 4 idle ones.
    path = tmp_path / "steady.rec"
    write_recording(path, Load(20, seed=5, steady=True, idle=4), 1800)
    quiet, loud = quiet_pairs(path, 1800, 120, seed=7)
    assert quiet >= 19, "\n".join(loud)


def test_quiet_long_windows_compared_by_minute_say_no_significant_change(tmp_path: Path) -> None:
    path = tmp_path / "steady.rec"
    write_recording(path, Load(5, seed=9, steady=True, idle=2), 5400)
    quiet, loud = quiet_pairs(path, 5400, 600, seed=3)
    assert quiet >= 19, "\n".join(loud)


class Stepped(Load):
    """A steady load whose first device runs at a third of its rate from sample ``at`` on."""

    def __init__(self, n: int, at: int) -> None:
        super().__init__(n, seed=5, steady=True, idle=1)
        self.at, self.k = at, 0

    def step(self) -> list[list[int]]:
        self.k += 1
        if self.k == self.at:
            self.base[0] /= 3
        return super().step()


def issuers(k: int, half: int, device: str) -> Mapping[str, Any]:
    rows = [{"pid": 10, "comm": "postgres", "r/s": 500.0, "w/s": 100.0}]
    if k >= half:
        rows.append({"pid": 99, "comm": "dd", "cmdline": "dd of=/x", "r/s": 0.0, "w/s": 900.0})
    return {"W": {"source": "tracer", "status": None, "devices": {device: rows}}}


@pytest.mark.parametrize("length", [200, 900])
def test_a_rate_cut_to_a_third_and_a_new_issuer_are_the_top_changes(
    tmp_path: Path, length: int
) -> None:
    n, half = 2000, 1000
    load = Stepped(6, half)
    path = tmp_path / "step.rec"
    write_recording(path, load, n, lambda k: issuers(k, half, load.names[1]))
    timeline = open_timeline(path)
    try:
        a = (T0 + half - 20 - length, T0 + half - 20)
        b = (T0 + half + 20, T0 + half + 20 + length)
        report = diff_timeline(timeline, a, b)
    finally:
        timeline.close()
    kinds = [(c.kind, c.device) for c in report.changes]
    assert ("figure", load.names[0]) in kinds[:2], kinds
    fig = next(c for c in report.changes if c.kind == "figure")
    assert fig.device == load.names[0]
    assert "iops" in fig.evidence["changed"]
    assert fig.before["iops"] == pytest.approx(3 * fig.after["iops"], rel=0.2)
    new = [c for c in report.changes if c.kind == "issuer"]
    assert [(c.device, c.evidence["comm"], c.evidence["how"]) for c in new] == [
        (load.names[1], "dd", "appeared"),
        (load.names[1], "postgres", "changed share"),
    ]
    assert not any(c.device == load.names[-1] for c in report.changes)  # the idle one


def test_the_spread_inside_each_window_weighs_the_shift() -> None:
    steady = shift(series([100.0, 101, 99] * 20), series([130.0, 131, 129] * 20), 1.0)
    noisy = shift(series([40.0, 100, 160] * 20), series([70.0, 130, 190] * 20), 1.0)
    assert steady is not None and noisy is not None
    assert steady.significant and not noisy.significant
    assert steady.effect > 3 * noisy.effect


def test_an_idle_device_does_not_explode() -> None:
    # 0 -> 0.4 I/O/s: the spread is at least 1 I/O/s, so no change however steady.
    got = shift(series([0.0] * 60), series([0.4] * 60), 1.0)
    assert got is not None and not got.significant
    # A 20 % move of a perfectly steady figure: under the 25 % bar.
    got = shift(series([1000.0] * 60), series([1200.0] * 60), 1.0)
    assert got is not None and abs(got.effect) >= 3 and not got.significant


def test_events_rank_with_their_devices_figure_else_last() -> None:
    fig_a = Change("figure", "sda", "", {}, {}, 12.0)
    fig_b = Change("figure", "sdb", "", {}, {}, -40.0)
    set_a = Change("setting", "sda", "sda scheduler", "none", "bfq", None, {}, at=T0)
    set_c = Change("setting", "sdc", "sdc read_ahead_kb", "128", "16", None, {}, at=T0 + 5)
    gone = Change("device", "sdd", "sdd went", True, False, None, {}, at=T0 + 1)
    order = ranked([set_c, gone, fig_a, set_a, fig_b])
    assert order == [fig_b, set_a, fig_a, set_c, gone]  # then settings before devices
    assert set_a.effect == 12.0 and set_c.effect is None


def test_settings_and_devices_from_recorded_events_with_when_and_who() -> None:
    a, b = WindowStats(T0, T0 + 60), WindowStats(T0 + 60, T0 + 120)
    record: dict[str, Any] = {
        "record": "change",
        "time": T0 + 61.5,
        "run": "set-42",
        "device": "sdb",
        "queue_device": "sdb",
        "setting": "scheduler",
        "old": "none",
        "new": "bfq",
        "effective": "bfq",
        "action": "set",
        "side_effects": [{"setting": "nr_requests", "old": "64", "effective": "256"}],
    }
    added = {"source": "device", "kind": "device-added", "text": "sdz appeared", "device": "sdz"}
    events: list[tuple[float, Mapping[str, Any]]] = [
        (T0 + 62, {"source": "changes", "record": record}),
        (T0 + 63, added),
    ]
    queue_a = {"sdb": {"scheduler": "none", "nr_requests": 64, "read_ahead_kb": 128}}
    queue_b = {"sdb": {"scheduler": "bfq", "nr_requests": 256, "read_ahead_kb": 128}}
    report = compare(a, b, events=events, queue_before=queue_a, queue_after=queue_b)
    got = [(c.kind, c.device, c.before, c.after, c.at) for c in report.changes]
    assert got == [
        ("setting", "sdb", "none", "bfq", T0 + 61.5),
        ("device", "sdz", False, True, T0 + 63),
    ]
    assert report.changes[0].evidence["who"] == "set-42"
    assert not report.quiet


def write_small(path: Path) -> None:
    write_recording(path, Load(4, seed=1, steady=True), 300)


def test_cli_json_shape_and_quiet(tmp_path: Path) -> None:
    path = tmp_path / "r.rec"
    write_small(path)
    done = run_cli("diff", "--from", str(path), "--b", f"@{T0 + 200:.0f}..@{T0 + 290:.0f}",
                   "-f", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert set(doc) == {"tool", "version", "from", "a", "b", "changes", "quiet", "not_recorded"}
    assert doc["a"] == {"start": T0 + 110, "end": T0 + 200}  # as long, right before B
    assert doc["quiet"] is True and doc["changes"] == []
    assert "issuers" in doc["not_recorded"]
    text = run_cli("diff", "--from", str(path), "--a", f"@{T0 + 10:.0f}..@{T0 + 100:.0f}",
                   "--b", f"@{T0 + 200:.0f}..@{T0 + 290:.0f}")  # fmt: skip
    assert text.returncode == 0 and "no significant change" in text.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--a", "@1..@2"], "--a needs --b"),
        (["--b", "13:00"], "START..END"),
        (["--b", "@1700000200..@1700000100"], "not after"),
        (["--b", "@x..@y"], "--b:"),
    ],
)
def test_cli_usage_errors_are_one_line_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    path = tmp_path / "r.rec"
    write_small(path)
    done = run_cli("diff", "--from", str(path), *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr


def test_cli_not_a_recording_is_one_line_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.rec"
    bad.write_bytes(b"\x00" * 4096)
    done = run_cli("diff", "--from", str(bad), "--b", "@1..@2")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
