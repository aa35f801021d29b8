"""The exporter's collector, exposition, events, textfile and web config (no network)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iotop_plus import cli
from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.counters import MS_WRAP, MonotonicDisks
from iotop_plus.export.textfile import write_textfile
from iotop_plus.export.view import ExportSampler
from iotop_plus.export.webconfig import WebConfigError, load_web_config
from iotop_plus.programs import find_program
from iotop_plus.roots import Roots
from iotop_plus.sampling.diskstats import DiskCounters
from iotop_plus.sampling.frame import LiveSource
from iotop_plus.state import StateDir

FIXTURES = Path(__file__).parents[1] / "fixtures"
OPENMETRICS = "application/openmetrics-text; version=1.0.0"


def nvme_collector(state: StateDir | None = None) -> tuple[ExportSampler, FrameCollector]:
    roots = Roots(proc=FIXTURES / "nvme" / "proc", sys=FIXTURES / "nvme" / "sys")
    sampler = ExportSampler(LiveSource(roots), 1.0, state=state, show_all=True)
    sampler.step()
    return sampler, FrameCollector(sampler.view)


def test_promtool_accepts_the_classic_exposition() -> None:
    promtool = find_program("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian package prometheus; make sysdeps)")
    _, collector = nvme_collector()
    body, content_type = collector.render(None)
    assert content_type.startswith("text/plain; version=0.0.4")
    done = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
    assert done.returncode == 0, done.stdout + done.stderr
    text = body.decode()
    # node_exporter's semantics: bytes (sectors x 512), seconds (ms / 1000).
    assert 'iotop_plus_disk_read_bytes_total{device="nvme0n1"} 4.096e+10' in text
    assert 'iotop_plus_disk_read_time_seconds_total{device="nvme0n1"} 400.0' in text
    assert 'iotop_plus_disk_discarded_bytes_total{device="nvme0n1"} 1.024e+09' in text
    assert "bytes, not sectors" in text or "in bytes (sectors x 512)" in text
    assert 'iotop_plus_disk_info{device="nvme0n1"' in text
    assert 'iotop_plus_build_info{version="' in text


def test_openmetrics_is_negotiated_by_the_accept_header() -> None:
    _, collector = nvme_collector()
    body, content_type = collector.render(OPENMETRICS)
    assert content_type.startswith("application/openmetrics-text; version=1.0.0")
    assert body.endswith(b"# EOF\n") and body.count(b"# EOF") == 1
    assert b"# UNIT iotop_plus_disk_read_bytes bytes" in body
    classic, ct = collector.render("text/plain")
    assert ct.startswith("text/plain") and b"# EOF" not in classic


def test_the_32_bit_millisecond_wrap_keeps_counters_monotonic() -> None:
    def counters(read_ms: int, reads: int) -> dict[str, DiskCounters]:
        values = [reads, 0, 0, read_ms] + [0] * 13
        return {"sda": DiskCounters(8, 0, "sda", tuple(values), 17)}

    disks = MonotonicDisks()
    before = counters(MS_WRAP - 10, 100)
    disks.update(before)
    after = counters(5, 101)  # the kernel's unsigned int wrapped
    disks.update(after)
    assert disks.values("sda", after["sda"])[3] == MS_WRAP + 5
    reset = counters(3, 1)  # reads fell: the device was reset, not wrapped
    disks.update(reset)
    assert disks.values("sda", reset["sda"])[3] == 3


def test_setting_changes_and_probe_results_come_from_the_state_directory(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    sampler, collector = nvme_collector(state)
    state.append("changes.jsonl", {"record": "intent", "device": "nvme0n1", "setting": "x"})
    change = {"record": "change", "device": "nvme0n1p1", "queue_device": "nvme0n1"}
    state.append("changes.jsonl", change | {"setting": "read_ahead_kb", "side_effects": []})
    state.append("changes.jsonl", change | {"setting": "read_ahead_kb"})
    direction = {
        "iops": 1000.0,
        "bw_kib_s": 4000,
        "clat": {"percentiles_us": [["p50", 80.0], ["p99", 250.0]]},
    }
    probe = {"target": "/dev/nvme0n1", "preset": "randread", "read": direction, "write": None}
    state.append("probes.jsonl", {"record": "probe-result", "time": 1700000000.0, "result": probe})
    sampler.step()
    text = collector.render(None)[0].decode()
    assert 'iotop_plus_setting_changes_total{device="nvme0n1",setting="read_ahead_kb"} 2.0' in text
    labels = '{preset="randread",target="/dev/nvme0n1"}'
    assert f"iotop_plus_probe_iops{labels} 1000.0" in text
    assert f"iotop_plus_probe_bandwidth_bytes{labels} 4.096e+06" in text
    assert f"iotop_plus_probe_latency_p99_seconds{labels} 0.00025" in text
    assert f"iotop_plus_probe_timestamp_seconds{labels} 1.7e+09" in text
    # One more change, appended later, is counted on the next frame.
    state.append("changes.jsonl", change | {"setting": "nomerges"})
    sampler.step()
    assert 'setting="nomerges"} 1.0' in collector.render(None)[0].decode()


def test_textfile_is_replaced_atomically_without_following_links(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "iotop_plus.prom"
    target.symlink_to(victim)  # rename replaces the link itself; the victim is untouched
    write_textfile(target, b"a 1\n")
    assert victim.read_text() == "precious\n"
    assert not target.is_symlink() and target.read_bytes() == b"a 1\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    write_textfile(target, b"a 2\n")
    assert target.read_bytes() == b"a 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iotop_plus.prom", "victim"]


def test_serve_textfile_writes_the_metrics(tmp_path: Path) -> None:
    out = tmp_path / "m.prom"
    argv = [
        *(
            "--proc-root",
            str(FIXTURES / "nvme" / "proc"),
            "--sys-root",
            str(FIXTURES / "nvme" / "sys"),
        ),
        *("--state-dir", str(tmp_path / "state"), "serve", "--textfile", str(out)),
    ]
    proc = subprocess.Popen([sys.executable, "-m", "iotop_plus", *argv], stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            if out.exists():
                break
            time.sleep(0.05)
        assert b"iotop_plus_disk_reads_completed_total" in out.read_bytes()
    finally:
        proc.terminate()
        assert proc.wait(10) == 0  # SIGTERM: a clean exit
    assert proc.stderr is not None and proc.stderr.read() == b""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tls_server_config: [", "not valid YAML"),
        ("basic_auth_users: {alice: hunter2}", "not a bcrypt hash"),
        ("tls_server_config: {cert_file: nope.crt}", "needs key_file"),
        ("tls_server_config: {cert_file: a.crt, key_file: a.key}", "cannot load"),
        ("surprise: 1", "unknown key 'surprise'"),
        ("- a list", "expected a mapping"),
    ],
)
def test_a_malformed_web_config_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    config = tmp_path / "web.yml"
    config.write_text(text)
    with pytest.raises(WebConfigError, match=expected):
        load_web_config(config)
    code = cli.main(["--state-dir", str(tmp_path / "s"), "serve", "--web-config", str(config)])
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err


def test_probe_lines_that_do_not_parse_are_skipped(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    state.append("probes.jsonl", {"record": "probe-result", "time": "soon", "result": {}})
    fd = state.open_file("probes.jsonl", os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"{not json\n" + json.dumps({"record": "probe-result"}).encode() + b"\n")
    os.close(fd)
    _, collector = nvme_collector(state)
    assert "iotop_plus_probe_iops{" not in collector.render(None)[0].decode()
