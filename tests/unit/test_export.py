"""The exporter's collector, exposition, events, textfile and web config (no network)."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus import cli
from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.counters import MonotonicDisks
from iotop_plus.export.latency import BUCKET_BOUNDS_S, HIGH_EXP, LOW_EXP, slot_of
from iotop_plus.export.textfile import write_textfile
from iotop_plus.export.view import ExportSampler
from iotop_plus.export.webconfig import WebConfigError, load_web_config
from iotop_plus.programs import find_program
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import MS_WRAP, DiskCounters
from iotop_plus.sampling.disks.sampler import HostInfo
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.sampling.latency.hist import (
    FAILED,
    RUNNING,
    STARTING,
    DeviceLatency,
    Histogram,
    LatencyFrame,
    OpLatency,
    bucket_bounds,
    bucket_of,
)
from iotop_plus.state import StateDir
from tests.support.wait import holds_within

FIXTURES = Path(__file__).parents[1] / "fixtures"
OPENMETRICS = "application/openmetrics-text; version=1.0.0"


def nvme_collector(state: StateDir | None = None) -> tuple[ExportSampler, FrameCollector]:
    roots = Roots(proc=FIXTURES / "nvme" / "proc", sys=FIXTURES / "nvme" / "sys")
    sampler = ExportSampler(
        live_source(roots, journal=state, journal_history=True), 1.0, show_all=True
    )
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
        assert holds_within(out.exists, 5), "no textfile written"
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


class CannedLatency:
    """The nvme fixture's frames, each carrying the next canned :class:`LatencyFrame`."""

    def __init__(self, latencies: list[LatencyFrame]) -> None:
        nvme = FIXTURES / "nvme"
        self.live = LiveSource(Roots(proc=nvme / "proc", sys=nvme / "sys"))
        self.roots = self.live.roots
        self.latencies = latencies

    def next_frame(self, early: object = None) -> Frame:
        return dataclasses.replace(self.live.next_frame(), latency=self.latencies.pop(0))

    def want(self, part: str, on: bool) -> None:
        self.live.want(part, on)

    def detail(self, pid: int | None, cgroup: str | None) -> None:
        pass

    def host_info(self) -> HostInfo:
        return self.live.host_info()

    def close(self) -> None:
        self.live.close()


def running(reads_ns: list[int], writes_ns: list[int], queue_ns: int = 0) -> LatencyFrame:
    ops = {
        "read": OpLatency(Histogram.of(reads_ns), queue_ns, len(reads_ns)),
        "write": OpLatency(Histogram.of(writes_ns)),
        "flush": OpLatency(Histogram.of([5000])),
    }
    device = DeviceLatency(MappingProxyType(ops))
    return LatencyFrame(RUNNING, MappingProxyType({"nvme0n1": device}), span_s=1.0)


def test_powers_of_two_of_nanoseconds_are_exact_edges_of_the_tracer_buckets() -> None:
    for k in range(LOW_EXP, HIGH_EXP + 1):
        edge = 1 << k
        below, at = bucket_of(edge - 1), bucket_of(edge)
        assert bucket_bounds(below)[1] == edge and bucket_bounds(at)[0] == edge
        assert slot_of(below) == k - LOW_EXP and slot_of(at) == min(k + 1, HIGH_EXP + 1) - LOW_EXP
    assert BUCKET_BOUNDS_S[0] == pytest.approx(16.384e-6) and BUCKET_BOUNDS_S[-1] > 1.0


def test_latency_histograms_accumulate_each_frames_delta(tmp_path: Path) -> None:
    warnings: list[str] = []
    frames = [
        LatencyFrame(STARTING, status="starting tracer…"),
        running([1_000, 20_000, 20_000, 3_000_000], [2_000_000_000], queue_ns=500_000),
        LatencyFrame(RUNNING, span_s=1.0),  # a quiet interval: the series stay
        running([20_000], [], queue_ns=250_000),
    ]
    sampler = ExportSampler(CannedLatency(frames), 1.0, show_all=True, warn=warnings.append)
    collector = FrameCollector(sampler.view)
    sampler.step()
    assert b"request_duration" not in collector.render(None)[0]
    for _ in range(3):
        sampler.step()
    body = collector.render(None)[0]
    promtool = find_program("promtool")
    if promtool is not None:
        done = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
        assert done.returncode == 0, done.stdout + done.stderr
    text = body.decode()
    name = "iotop_plus_disk_request_duration_seconds"
    read = 'device="nvme0n1",le="{}",op="read"'
    assert f"# TYPE {name} histogram" in text
    assert f"{name}_bucket{{{read.format('1.6384e-05')}}} 1.0" in text  # the 1 µs request
    assert f"{name}_bucket{{{read.format('3.2768e-05')}}} 4.0" in text  # and three of 20 µs
    assert f"{name}_bucket{{{read.format('0.004194304')}}} 5.0" in text  # and 3 ms
    assert f"{name}_bucket{{{read.format('+Inf')}}} 5.0" in text
    assert f'{name}_count{{device="nvme0n1",op="read"}} 5.0' in text
    assert f'{name}_sum{{device="nvme0n1",op="read"}} 0.00306' in text
    write = 'device="nvme0n1",le="{}",op="write"'
    assert f"{name}_bucket{{{write.format('1.073741824')}}} 0.0" in text  # 2 s: above 2**30 ns
    assert f"{name}_bucket{{{write.format('+Inf')}}} 1.0" in text
    assert 'op="flush"' not in text  # read and write only
    queue = 'iotop_plus_disk_queue_time_seconds_total{device="nvme0n1",op="read"} 0.00075'
    assert queue in text
    assert warnings == []
    om = collector.render(OPENMETRICS)[0].decode()
    assert f"# TYPE {name} histogram" in om and "# UNIT iotop_plus_disk_queue_time_seconds" in om


def test_a_tracer_that_cannot_run_is_one_warning_and_the_rest_is_exported() -> None:
    failed = LatencyFrame(FAILED, status="latency needs root (it runs bpftrace)")
    warnings: list[str] = []
    sampler = ExportSampler(CannedLatency([failed] * 3), 1.0, show_all=True, warn=warnings.append)
    collector = FrameCollector(sampler.view)
    for _ in range(3):
        sampler.step()
    assert warnings == ["latency not exported: latency needs root (it runs bpftrace)"]
    text = collector.render(None)[0].decode()
    assert "iotop_plus_disk_reads_completed_total" in text and "request_duration" not in text


def serve_textfile(tmp_path: Path, tree: Path, *options: str) -> str:
    """``serve --textfile`` on a fixture tree: the first file it writes."""
    out = Path(tempfile.mkdtemp(dir=tmp_path)) / "m.prom"
    argv = ["--proc-root", str(tree / "proc"), "--sys-root", str(tree / "sys")]
    argv += ["--state-dir", str(tmp_path / "state"), "serve", "--textfile", str(out), *options]
    proc = subprocess.Popen([sys.executable, "-m", "iotop_plus", *argv], stderr=subprocess.PIPE)
    try:
        assert holds_within(out.exists, 10), "no textfile written"
        body = out.read_bytes()
    finally:
        proc.terminate()
        assert proc.wait(10) == 0
    assert proc.stderr is not None and proc.stderr.read() == b""
    promtool = find_program("promtool")
    if promtool is not None:
        done = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
        assert done.returncode == 0, done.stdout + done.stderr
    return body.decode()


def test_cgroups_with_io_are_exported_down_to_the_depth_asked(tmp_path: Path) -> None:
    tree = FIXTURES / "cgroups" / "v2-systemd"
    text = serve_textfile(tmp_path, tree)  # default depth 4
    pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
    pod += "1f2e3d4c_1234_5678_9abc_def012345678.slice"
    container = (
        pod
        + "/cri-containerd-9b1e7c3d5f2a4e6c8b0d1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e.scope"
    )
    name = "containerd 9b1e7c3d5f2a in pod 1f2e3d4c-1234-5678-9abc-def012345678"
    labels = f'{{cgroup="{container}",device="sda",name="{name}"}}'
    assert f"iotop_plus_cgroup_read_bytes_total{labels} 8.192e+06" in text
    assert f"iotop_plus_cgroup_reads_completed_total{labels} 2000.0" in text
    nginx = '{cgroup="/system.slice/nginx.service",device="sda",name="nginx.service"}'
    assert f"iotop_plus_cgroup_write_bytes_total{nginx} " in text
    assert f"iotop_plus_cgroup_writes_completed_total{nginx} " in text
    root = '{cgroup="/",device="sdb",name="/"}'
    assert f"iotop_plus_cgroup_read_bytes_total{root} 409600.0" in text
    cgroup_lines = [line for line in text.splitlines() if line.startswith("iotop_plus_cgroup_")]
    assert not [line for line in cgroup_lines if 'device="dm-0"' in line]  # no I/O there
    assert 'iotop_plus_cgroup_pressure_waiting_seconds_total{cgroup="/system.slice",' in text
    shallow = serve_textfile(tmp_path, tree, "--cgroup-depth", "1")
    assert 'cgroup="/system.slice"' in shallow and "nginx.service" not in shallow
    assert "iotop_plus_cgroup_" not in serve_textfile(tmp_path, tree, "--no-cgroups")


def test_cgroups_v1_blkio_are_exported(tmp_path: Path) -> None:
    text = serve_textfile(tmp_path, FIXTURES / "cgroups" / "v1-hybrid")
    cron = '{cgroup="/system.slice/cron.service",device="sda",name="cron.service"}'
    assert f"iotop_plus_cgroup_read_bytes_total{cron} 40960.0" in text
    assert (
        'iotop_plus_cgroup_pressure_waiting_seconds_total{cgroup="/system.slice/cron.service"'
        in text
    )


def test_each_frame_is_rendered_ahead_in_the_formats_scrapers_ask_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sampler, collector = nvme_collector()
    sampler.on_view = collector.prerender
    registry = collector._frame_part
    collected: list[int] = []
    real = registry.collect

    def counting() -> object:
        collected.append(1)
        return real()

    monkeypatch.setattr(registry, "collect", counting)
    sampler.step()  # 0.0.4 is rendered on the sampler thread: the scrape is a cache hit
    assert len(collected) == 1
    classic = collector.render(None)[0]
    assert len(collected) == 1 and b"iotop_plus_disk_reads_completed_total" in classic
    collector.render(OPENMETRICS)  # the first OpenMetrics scrape renders it
    assert len(collected) == 2
    sampler.step()  # from now on both formats are rendered ahead
    assert len(collected) == 4
    om, content_type = collector.render(OPENMETRICS)
    assert content_type.startswith("application/openmetrics-text") and om.endswith(b"# EOF\n")
    collector.render("text/plain")
    assert len(collected) == 4
    monkeypatch.setattr("iotop_plus.export.collector.EAGER_FOR_S", -1.0)
    sampler.step()  # a format nobody scraped for EAGER_FOR_S is no longer rendered ahead
    assert len(collected) == 4
