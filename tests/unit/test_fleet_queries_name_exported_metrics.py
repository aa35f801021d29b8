"""Every metric the fleet view's PromQL names is one ``serve`` exports (issue #23, item 5).

The fleet view is a Prometheus client: if the exporter renamed a metric and the fleet's queries
kept the old name, every figure of the fleet would silently read "no data yet". The names come
from the exporter's definitions; this test holds them to what the exporter really renders.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType

from prometheus_client.parser import text_string_to_metric_families

from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.fleet import FLEET_QUERIES, HISTORY_QUERIES
from iotop_plus.export.view import ExportSampler
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.sampler import HostInfo
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.latency.hist import (
    RUNNING,
    DeviceLatency,
    Histogram,
    LatencyFrame,
    OpLatency,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
METRIC = re.compile(r"\biotop_plus_[A-Za-z0-9_]+")


class NvmeWithLatency:
    """The nvme fixture's frames with I/O pressure and a running tracer's latency."""

    def __init__(self, proc: Path) -> None:
        self.live = LiveSource(Roots(proc=proc, sys=FIXTURES / "nvme" / "sys"))
        self.roots = self.live.roots

    def next_frame(self, early: Callable[[Frame], object] | None = None) -> Frame:
        ops = {"read": OpLatency(Histogram.of([20_000, 3_000_000]), 1000, 2)}
        device = DeviceLatency(MappingProxyType(ops))
        latency = LatencyFrame(RUNNING, MappingProxyType({"nvme0n1": device}), span_s=1.0)
        return dataclasses.replace(self.live.next_frame(), latency=latency)

    def want(self, part: str, on: bool) -> None:
        self.live.want(part, on)

    def detail(self, pid: int | None, cgroup: str | None) -> None:
        pass

    def host_info(self) -> HostInfo:
        return self.live.host_info()

    def close(self) -> None:
        self.live.close()


def exported_series(tmp_path: Path) -> set[str]:
    """The sample names ``serve`` renders for a host with disks, PSI and latency."""
    proc = tmp_path / "proc"
    shutil.copytree(FIXTURES / "nvme" / "proc", proc, symlinks=True)
    shutil.copytree(FIXTURES / "cgroups" / "v2-systemd" / "proc" / "pressure", proc / "pressure")
    sampler = ExportSampler(NvmeWithLatency(proc), 1.0, show_all=True)
    collector = FrameCollector(sampler.view)
    for _ in range(2):
        sampler.step()
    body = collector.render(None)[0].decode()
    return {s.name for f in text_string_to_metric_families(body) for s in f.samples}


def test_every_metric_a_fleet_query_names_is_exported(tmp_path: Path) -> None:
    exported = exported_series(tmp_path)
    queries = {
        **{f"fleet {k}": q for k, q in FLEET_QUERIES.items()},
        **{f"history {k}": q for k, (_, q) in HISTORY_QUERIES.items()},
    }
    for what, promql in queries.items():
        named = set(METRIC.findall(promql))
        assert named, f"{what}: names no iotop_plus_ metric: {promql}"
        assert named <= exported, f"{what} names {sorted(named - exported)}, not exported"
