"""Exporter figures: scrape time at 200 and 5,000 devices, node_exporter's same scrape, serve's
CPU at 200 devices with a 15 s scrape interval, and a fleet query round over 1,000 hosts.

Goals: a scrape <= 20 ms at 200 devices and <= 200 ms at 5,000; serve <= 0.5 % of a
core at 200 devices. Run: .venv/bin/python benchmarks/bench_exporter.py [--quick]
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.fleet import PrometheusClient, fleet_round
from iotop_plus.export.view import ExportSampler
from iotop_plus.sampling.frame.live import LiveSource
from tests.support.cgroup_trees import bump_io_stat, synthetic_tree
from tests.support.synthetic import SyntheticTree


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


OPENMETRICS = "application/openmetrics-text; version=1.0.0"


def med(xs: list[float]) -> float:
    """Median, in ms."""
    return sorted(xs)[len(xs) // 2] * 1000


def scrape_times(n: int, base: Path, rounds: int = 5) -> dict[str, float]:
    """Scrape right after a new frame, before (rendered by the scrape) and after (rendered
    ahead on the sampler thread), and what rendering ahead costs per frame: medians in ms."""
    tree = SyntheticTree(base, n)
    sampler = ExportSampler(LiveSource(tree.roots), 1.0, show_all=True)
    collector = FrameCollector(sampler.view)
    sampler.step()
    collector.render(None)
    collector.render(OPENMETRICS)
    out: dict[str, list[float]] = {
        k: [] for k in ("lazy", "lazy_om", "cached", "hit", "hit_om", "ahead", "ahead_om")
    }
    for _ in range(rounds):
        # Before: the scrape that follows a new frame renders it.
        tree.advance(1.0)
        sampler.step()
        t = time.perf_counter()
        collector.render(None)
        out["lazy"].append(time.perf_counter() - t)
        t = time.perf_counter()
        collector.render(None)
        out["cached"].append(time.perf_counter() - t)
        tree.advance(1.0)
        sampler.step()
        t = time.perf_counter()
        collector.render(OPENMETRICS)
        out["lazy_om"].append(time.perf_counter() - t)
        # After: prerender on the frame (CPU of this thread), then the scrape is a hit.
        for formats, key in (((None,), "ahead"), ((None, OPENMETRICS), "ahead_om")):
            fresh = FrameCollector(sampler.view)
            for accept in formats:
                fresh.render(accept)  # a scraper asked for these formats before
            tree.advance(1.0)
            sampler.step()
            t = time.thread_time()
            fresh.prerender()
            out[key].append(time.thread_time() - t)
            if key == "ahead_om":
                t = time.perf_counter()
                fresh.render(None)
                out["hit"].append(time.perf_counter() - t)
                t = time.perf_counter()
                fresh.render(OPENMETRICS)
                out["hit_om"].append(time.perf_counter() - t)
    return {k: med(v) for k, v in out.items()}


def cgroup_cost(base: Path, devices: int, cgroups: int, rounds: int = 7) -> str:
    """CPU of one serve frame with and without cgroups (1,000 cgroups with I/O, depth 4)."""
    tree = SyntheticTree(base, devices)
    paths = synthetic_tree(base, cgroups)
    figures = {}
    for depth in (None, 4):
        sampler = ExportSampler(LiveSource(tree.roots), 1.0, show_all=True, cgroup_depth=depth)
        collector = FrameCollector(sampler.view)
        sampler.on_view = collector.prerender
        sampler.step()
        steps = []
        for tick in range(rounds):
            tree.advance(1.0)
            bump_io_stat(base, paths, tick + 1)
            t = time.thread_time()
            sampler.step()
            steps.append(time.thread_time() - t)
        figures[depth] = (med(steps), len(sampler.view().cgroups))
    off, on = figures[None][0], figures[4][0]
    return (
        f"{on:.1f} ms per frame with cgroups ({figures[4][1]} exported), {off:.1f} ms without:"
        f" +{on - off:.1f} ms, {100 * (on - off) / 1000 / 5:.2f} % of a core at --interval 5"
    )


def node_exporter_scrape(n: int, base: Path) -> str:
    binary = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if binary is None:
        return "node_exporter not installed"
    tree = SyntheticTree(base, n)
    port = free_port()
    proc = subprocess.Popen(
        [
            *(binary, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults"),
            *("--collector.diskstats", f"--path.procfs={tree.roots.proc}"),
            *(f"--path.sysfs={tree.roots.sys}", "--collector.diskstats.device-exclude=^$"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        for _ in range(100):
            try:
                urllib.request.urlopen(url, timeout=5).read()
                break
            except OSError:
                time.sleep(0.1)
        times = []
        for _ in range(5):
            tree.advance(1.0)
            t = time.perf_counter()
            urllib.request.urlopen(url, timeout=30).read()
            times.append(time.perf_counter() - t)
        return f"{sorted(times)[2] * 1000:.1f} ms (HTTP, diskstats collector only)"
    finally:
        proc.terminate()
        proc.wait(10)


def serve_cpu(base: Path, seconds: float, interval: str) -> str:
    tree = SyntheticTree(base, 200)
    port = free_port()
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "iotop_plus", "--proc-root", str(tree.roots.proc)),
            *("--sys-root", str(tree.roots.sys), "--state-dir", str(base / "state"), "serve"),
            *("--listen", f"127.0.0.1:{port}", "--interval", interval, "--all"),
        ],
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        for _ in range(200):
            try:
                urllib.request.urlopen(url, timeout=5).read()
                break
            except OSError:
                time.sleep(0.1)

        def cpu() -> float:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        start_cpu, start = cpu(), time.monotonic()
        next_scrape = start
        while time.monotonic() - start < seconds:
            tree.advance(1.0)
            if time.monotonic() >= next_scrape:
                urllib.request.urlopen(url, timeout=10).read()
                next_scrape += 15
            time.sleep(1.0)
        used = cpu() - start_cpu
        return f"{100 * used / (time.monotonic() - start):.2f} % of a core over {seconds:.0f} s"
    finally:
        proc.terminate()
        proc.wait(10)


def fleet_1000(base: Path) -> str:
    promtool, prometheus = shutil.which("promtool"), shutil.which("prometheus")
    if promtool is None or prometheus is None:
        return "prometheus/promtool not installed"
    now = int(time.time())
    lines = []
    names = [
        ("iotop_plus_disk_reads_completed", 50),
        ("iotop_plus_disk_writes_completed", 30),
        ("iotop_plus_disk_read_bytes", 400000),
        ("iotop_plus_disk_written_bytes", 200000),
        ("iotop_plus_disk_read_time_seconds", 0.05),
        ("iotop_plus_disk_write_time_seconds", 0.02),
        ("iotop_plus_disk_io_time_seconds", 0.3),
        ("iotop_plus_disk_io_time_weighted_seconds", 0.6),
    ]
    for name, per_s in names:
        lines.append(f"# TYPE {name} counter")
        for host in range(1000):
            for dev in ("sda", "nvme0n1"):
                for k, t in enumerate(range(now - 300, now + 1, 15)):
                    value = k * 15 * per_s * (1 + host % 7)
                    lines.append(
                        f'{name}_total{{instance="host{host}:9891",device="{dev}"}} {value} {t}'
                    )
    lines.append("# TYPE iotop_plus_pressure_stalled_seconds counter")
    for host in range(1000):
        for k, t in enumerate(range(now - 300, now + 1, 15)):
            lines.append(
                f'iotop_plus_pressure_stalled_seconds_total{{instance="host{host}:9891",'
                f'resource="io"}} {k * 0.1} {t}'
            )
    lines.append("# EOF")
    base.mkdir(parents=True, exist_ok=True)
    om = base / "fleet.om"
    om.write_text("\n".join(lines) + "\n")
    tsdb = base / "tsdb"
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(om), str(tsdb)],
        check=True,
        capture_output=True,
    )
    port = free_port()
    config = base / "p.yml"
    config.write_text("global: {scrape_interval: 15s}\n")
    proc = subprocess.Popen(
        [
            *(prometheus, f"--config.file={config}", f"--storage.tsdb.path={tsdb}"),
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = PrometheusClient(f"http://127.0.0.1:{port}", timeout=60)
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2).read()
                break
            except OSError:
                time.sleep(0.2)
        rounds = []
        result = None
        for _ in range(3):
            result = fleet_round(client, "1m")
            rounds.append(result.elapsed_s)
        assert result is not None
        return (
            f"{sorted(rounds)[1] * 1000:.0f} ms per round (median of 3): {len(result.hosts)} hosts,"
            f" {len(result.rows)} rows, error={result.error}"
        )
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    quick = "--quick" in sys.argv
    with tempfile.TemporaryDirectory(prefix="iotop-plus-bench-") as tmp:
        base = Path(tmp)
        for n in (200, 5000):
            f = scrape_times(n, base / f"s{n}", rounds=3 if quick else 5)
            print(
                f"scrape at {n} devices right after a new frame, rendered by the scrape (before):"
                f" {f['lazy']:.1f} ms 0.0.4, {f['lazy_om']:.1f} ms OpenMetrics;"
                f" between frames {f['cached']:.2f} ms"
            )
            print(
                f"scrape at {n} devices right after a new frame, rendered ahead (after):"
                f" {f['hit']:.2f} ms 0.0.4, {f['hit_om']:.2f} ms OpenMetrics; rendering ahead"
                f" costs {f['ahead']:.1f} ms CPU per frame (0.0.4 only),"
                f" {f['ahead_om']:.1f} ms (both formats)"
            )
            print(f"node_exporter at {n} devices: {node_exporter_scrape(n, base / f'n{n}')}")
        print(
            "cgroups at 200 devices, 1,000 cgroups: "
            + cgroup_cost(base / "cg", 200, 1000, rounds=3 if quick else 7)
        )
        seconds = 30 if quick else 120
        for interval in ("1", "5"):
            print(
                f"serve CPU at 200 devices, --interval {interval}, 15 s scrapes: "
                + serve_cpu(base / f"cpu{interval}", seconds, interval)
            )
        print(f"fleet round at 1,000 hosts x 2 devices: {fleet_1000(base / 'fleet')}")


if __name__ == "__main__":
    main()
