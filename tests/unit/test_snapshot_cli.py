"""``iotop-plus snapshot`` on fixture trees: formats, selection, names, errors, intervals."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from iotop_plus import cli
from iotop_plus.commands import snapshot_output
from iotop_plus.commands.snapshot_output import IOSTAT_COLUMNS
from iotop_plus.roots import PROC_ENV, SYS_ENV, Roots
from iotop_plus.sampling.frame import live as live_source
from iotop_plus.sampling.frame import model as frame_module

FIXTURES = Path(__file__).parent.parent / "fixtures"
IOSTAT_KEYS = [key for key, _ in IOSTAT_COLUMNS]


def _roots_args(scenario: str | Path) -> list[str]:
    base = scenario if isinstance(scenario, Path) else FIXTURES / scenario
    return ["--proc-root", str(base / "proc"), "--sys-root", str(base / "sys")]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], scenario: str | Path, *argv: str) -> Any:
    code, out, err = run_cli(
        capsys, *_roots_args(scenario), "snapshot", "-i", "0.01", "--format", "json", *argv
    )
    assert code == 0, err
    return iostat_host(json.loads(out))


def iostat_host(doc: Any) -> Any:
    """The one host of iostat's document, ``doc["sysstat"]["hosts"][0]``."""
    assert list(doc) == ["sysstat"] and list(doc["sysstat"]) == ["hosts"], list(doc)
    (host,) = doc["sysstat"]["hosts"]
    return host


def _disks(doc: Any, index: int = 0) -> list[str]:
    return [d["disk_device"] for d in doc["statistics"][index]["disk"]]


def test_default_table_is_iostat_like(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, *_roots_args("nvme"), "snapshot", "-i", "0.01")
    # The hidden count is the one stderr line (the rulings: the TUI and snapshot agree).
    assert code == 0 and err.startswith("iotop-plus: 3 devices hidden (") and err.count("\n") == 1
    lines = out.splitlines()
    assert lines[0].startswith("db-nvme  Linux 6.1.0-18-amd64  iotop-plus ")
    header = next(line for line in lines if line.startswith("Device"))
    assert header.split() == [
        "Device",
        *(snapshot_output._TABLE_HEADERS.get(k, k) for k in IOSTAT_KEYS),
        "inflight",
    ]
    rows = [line.split() for line in lines[lines.index(header) + 1 :] if line.strip()]
    # Whole devices that have done I/O: the partitions and the unused namespace are hidden.
    assert [row[0] for row in rows] == ["nvme0n1"]
    # The tree does not change, so every rate is 0; in-flight is the gauge.
    assert rows[0][1:-1] == ["0.00"] * len(IOSTAT_KEYS) and rows[0][-1] == "2"


def test_json_is_iostats_document_with_nodename_release_and_iostat_keys(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = run_json(capsys, "nvme", "-c", "3")
    assert (doc["tool"], doc["nodename"], doc["release"]) == (
        "iotop-plus",
        "db-nvme",
        "6.1.0-18-amd64",
    )
    # The fixture tree holds no ostype, arch or cpu list: unknown, never this host's.
    assert (doc["sysname"], doc["machine"], doc["number-of-cpus"]) == ("Linux", None, None)
    assert doc["date"] == doc["statistics"][0]["timestamp"][:10]
    assert "host" not in doc and "kernel" not in doc
    assert doc["interval_s"] == 0.01
    assert len(doc["statistics"]) == 3
    entry = doc["statistics"][0]["disk"][0]
    # The rulings' additions per disk: the verdict and what it could not check.
    assert list(entry) == [
        "disk_device",
        *IOSTAT_KEYS,
        "in_flight",
        "name",
        "diagnosis",
        "unchecked",
    ]
    assert entry["disk_device"] == "nvme0n1" and entry["name"] == "nvme0n1"
    for stat in doc["statistics"]:
        assert stat["elapsed_s"] > 0 and stat["no_rates"] == []
        assert "timestamp" in stat


@pytest.mark.parametrize("count", [1, 2, 5])
def test_count_gives_that_many_entries(capsys: pytest.CaptureFixture[str], count: int) -> None:
    doc = run_json(capsys, "md", "--count", str(count))
    assert len(doc["statistics"]) == count


def test_csv_has_a_header_and_a_row_per_device_per_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(
        capsys, *_roots_args("dm"), "snapshot", "-i", "0.01", "-c", "2", "--format", "csv"
    )
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["timestamp", "elapsed_s", "disk_device", "name", *IOSTAT_KEYS, "in_flight"]
    assert [(r[2], r[3]) for r in rows[1:]] == [
        ("sda", "sda"),
        ("dm-0", "vg0-root"),
        ("dm-1", "vg0-swap"),
    ] * 2


def test_all_and_partitions_widen_the_selection(capsys: pytest.CaptureFixture[str]) -> None:
    assert _disks(run_json(capsys, "nvme")) == ["nvme0n1"]
    assert _disks(run_json(capsys, "nvme", "--partitions")) == [
        "nvme0n1",
        "nvme0n1p1",
        "nvme0n1p2",
    ]
    assert _disks(run_json(capsys, "nvme", "--all")) == [
        "nvme0n1",
        "nvme0n1p1",
        "nvme0n1p2",
        "nvme0n2",
    ]


@pytest.mark.parametrize("spelling", ["vg0-root", "/dev/mapper/vg0-root", "dm-0", "/dev/dm-0"])
def test_dm_device_by_any_name(capsys: pytest.CaptureFixture[str], spelling: str) -> None:
    doc = run_json(capsys, "dm", spelling)
    (entry,) = doc["statistics"][0]["disk"]
    assert (entry["disk_device"], entry["name"]) == ("dm-0", "vg0-root")


def test_table_names_dm_devices(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, *_roots_args("dm"), "snapshot", "-i", "0.01", "vg0-swap", "sda1")
    assert code == 0
    assert "dm-1(vg0-swap)" in out and "\nsda1 " in out


def test_unknown_device_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, *_roots_args("dm"), "snapshot", "-i", "0.01", "sdq")
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith("iotop-plus: error: unknown device 'sdq' (known: ")
    assert "dm-0" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["snapshot", "-i", "0"],
        ["snapshot", "-i", "-1"],
        ["snapshot", "-i", "abc"],
        ["snapshot", "-i", "nan"],
        ["snapshot", "-c", "0"],
        ["snapshot", "-c", "1.5"],
        ["snapshot", "--format", "xml"],
        ["snapshot", "--bogus"],
    ],
)
def test_bad_flags_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([*_roots_args("dm"), *argv])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == ""
    assert err.count("\n") == 1 and "error:" in err


def test_missing_root_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "--proc-root", str(tmp_path / "nope"), "snapshot")
    assert code == 2 and err.count("\n") == 1 and "--proc-root" in err


def test_environment_variables_point_at_a_tree(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PROC_ENV, str(FIXTURES / "md" / "proc"))
    monkeypatch.setenv(SYS_ENV, str(FIXTURES / "md" / "sys"))
    code, out, _ = run_cli(capsys, "snapshot", "-i", "0.01", "--format", "json")
    assert code == 0
    doc = iostat_host(json.loads(out))
    assert doc["nodename"] == "nas-md"
    assert _disks(doc) == ["sdb", "sdc", "md0"]
    # Explicit flags win over the environment.
    code, out, _ = run_cli(capsys, *_roots_args("dm"), "snapshot", "-i", "0.01", "-f", "json")
    assert iostat_host(json.loads(out))["nodename"] == "app-lvm"


def test_fractional_interval_is_measured(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, *_roots_args("md"), "snapshot", "-i", "0.25", "-c", "2", "--format", "json"
    )
    assert code == 0
    doc = iostat_host(json.loads(out))
    assert doc["interval_s"] == 0.25
    # Reports keep to a fixed schedule like iostat's: an interval that ran late makes the
    # next one shorter, but report k never comes before k * 0.25 s after the baseline.
    elapsed = [stat["elapsed_s"] for stat in doc["statistics"]]
    assert all(e > 0 for e in elapsed)
    assert elapsed[0] >= 0.25 - 1e-6 and sum(elapsed) >= 0.5 - 2e-6


def _after_the_baseline(monkeypatch: pytest.MonkeyPatch, change: Callable[[], object]) -> None:
    """Run ``change`` once, right after the baseline frame is read.

    A hook on the frame source, not on ``time.sleep``: a loaded host can make the baseline read
    outlast a 0.01 s interval, and then the schedule takes the next frame without sleeping.
    """
    real_next = live_source.LiveSource.next_frame
    calls = []

    def next_frame(self: live_source.LiveSource) -> frame_module.Frame:
        frame = real_next(self)
        calls.append(frame)
        if len(calls) == 1:
            change()
        return frame

    monkeypatch.setattr(live_source.LiveSource, "next_frame", next_frame)


def test_rates_over_a_changing_tree(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The tree moves from t0 to t1 during the interval: figures are the iostat formulas."""
    shutil.copytree(FIXTURES / "nvme", tmp_path / "nvme", symlinks=True)
    proc = tmp_path / "nvme" / "proc"
    _after_the_baseline(monkeypatch, lambda: (proc / "diskstats.t1").replace(proc / "diskstats"))
    doc = run_json(capsys, tmp_path / "nvme", "nvme0n1", "nvme0n1p2")
    stat = doc["statistics"][0]
    disk, part = stat["disk"]
    elapsed = stat["elapsed_s"]
    # elapsed_s is printed to the microsecond, so allow for its rounding.
    assert disk["r/s"] == pytest.approx(2000 / elapsed, rel=1e-3)
    # Per-I/O columns do not depend on the interval: exact.
    assert (disk["r_await"], disk["rareq-sz"], disk["rrqm"]) == (0.5, 16.0, 2.44)
    assert (disk["w_await"], disk["wareq-sz"], disk["wrqm"]) == (1.5, 8.0, 16.67)
    assert (disk["d_await"], disk["dareq-sz"], disk["f_await"]) == (0.5, 1024.0, 0.5)
    assert disk["in_flight"] == 3
    assert part["disk_device"] == "nvme0n1p2" and part["rareq-sz"] == 16.0
    assert part["f/s"] == 0.0  # partitions do not count flushes


def test_device_that_vanishes_is_left_out(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shutil.copytree(FIXTURES / "dm", tmp_path / "dm", symlinks=True)
    stats = tmp_path / "dm" / "proc" / "diskstats"

    def remove_dm1() -> None:
        stats.write_text("".join(x for x in stats.read_text().splitlines(True) if "dm-1" not in x))

    _after_the_baseline(monkeypatch, remove_dm1)
    doc = run_json(capsys, tmp_path / "dm", "dm-0", "dm-1")
    assert _disks(doc) == ["dm-0"]


def test_malformed_line_is_a_warning_and_the_rest_is_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shutil.copytree(FIXTURES / "kernel-4.14", tmp_path / "k", symlinks=True)
    stats = tmp_path / "k" / "proc" / "diskstats"
    stats.write_text(stats.read_text() + "   8  16 sdb 1 2 three\n")
    code, out, err = run_cli(
        capsys, *_roots_args(tmp_path / "k"), "snapshot", "-i", "0.01", "-f", "json"
    )
    assert code == 0
    assert _disks(iostat_host(json.loads(out))) == ["sda", "sda1", "dm-0"]
    # (a 4.14 tree has no PSI and no meminfo: JSON says so in one note line each; the hidden
    # count is a line of its own too)
    notes = ("no pressure (PSI) figures", "no dirty/writeback figures", " hidden (")
    warnings = [w for w in err.splitlines() if not any(n in w for n in notes)]
    assert len(warnings) >= 1
    assert all(w.startswith("iotop-plus: warning: skipped ") for w in warnings)
    assert ":5: " in warnings[0] and "sdb" in warnings[0]


@pytest.mark.parametrize("scenario", ["kernel-2.6", "kernel-4.14", "kernel-5.4", "dm", "md"])
def test_every_fixture_tree_in_every_format(
    capsys: pytest.CaptureFixture[str], scenario: str
) -> None:
    for fmt in ("table", "json", "csv"):
        code, out, err = run_cli(
            capsys, *_roots_args(scenario), "snapshot", "-i", "0.01", "-a", "-f", fmt
        )
        assert code == 0 and out
        if fmt == "json":  # no /proc/pressure, meminfo or vmstat: null, and one line each why
            assert err.count("\n") == 2 and "no pressure (PSI) figures" in err, err
            assert "no dirty/writeback figures" in err, err
            [stat] = iostat_host(json.loads(out))["statistics"]
            assert stat["pressure"] is None and stat["memory"] is None
        else:
            assert err == ""


def test_console_script_against_the_live_host() -> None:
    """The installed console script, on the real /proc and /sys."""
    exe = Path(sys.executable).with_name("iotop-plus")
    if not exe.exists():
        pytest.skip("console script not installed in this environment")
    out = subprocess.run(
        [str(exe), "snapshot", "-i", "0.2", "-f", "json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    doc = iostat_host(json.loads(out.stdout))
    assert doc["release"] == Roots().proc.joinpath("sys/kernel/osrelease").read_text().strip()
    assert (doc["sysname"], doc["machine"]) == (os.uname().sysname, os.uname().machine)
    assert doc["number-of-cpus"] == os.cpu_count()
    disks = _disks(doc)
    assert disks and all(not d[-1:].isdigit() or d.startswith(("loop", "zram")) for d in disks)


def test_broken_pipe_is_not_an_error() -> None:
    """``iotop-plus snapshot | head -1`` exits quietly."""
    snap = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "iotop_plus",
            "snapshot",
            "-i",
            "0.05",
            "-c",
            "40",
            "-a",
            "-f",
            "csv",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert snap.stdout is not None and snap.stderr is not None
    head = subprocess.run(["head", "-1"], stdin=snap.stdout, capture_output=True, timeout=30)
    snap.stdout.close()  # only head holds the pipe now: snapshot's writes hit EPIPE
    err = snap.stderr.read().decode()
    assert snap.wait(timeout=30) == 0
    assert head.stdout.startswith(b"timestamp,")
    assert "Traceback" not in err


def test_snapshot_hides_what_the_tui_hides_and_says_how_many_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """#17 item 5: loop devices were listed by snapshot but hidden by the TUI, with no count."""
    code, out, err = run_cli(
        capsys, *_roots_args("tui_host"), "snapshot", "-i", "0.01", "-f", "json"
    )
    shown = _disks(iostat_host(json.loads(out)))
    assert code == 0 and shown and not any(n.startswith(("loop", "ram", "zram")) for n in shown)
    hidden_lines = [line for line in err.splitlines() if " hidden (" in line]
    assert len(hidden_lines) == 1 and "--all" in hidden_lines[0]
    code, out, err = run_cli(
        capsys, *_roots_args("tui_host"), "snapshot", "-i", "0.01", "-a", "-f", "json"
    )
    shown = _disks(iostat_host(json.loads(out)))
    assert any(n.startswith("loop") for n in shown) and " hidden (" not in err


def test_a_bare_word_that_is_no_subcommand_is_a_device_and_an_unknown_one_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``iotop-plus [DEV...]`` (#17 item 5): "nosuchcommand" used to be argparse's error;
    now it names a device, and one that does not exist is one line and exit 2."""
    code = cli.main([*_roots_args("dm"), "nosuchcommand"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("iotop-plus: error: unknown device 'nosuchcommand'")
    assert err.count("\n") == 1
