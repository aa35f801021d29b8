"""``serve``'s health metrics (#26): ``iotop_plus_disk_health_*`` in the JSON's words and
``iotop_plus_disk_io_errors_total``, linted by promtool."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.view import ExportSampler
from iotop_plus.programs import find_program
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.health.gate import HEALTH
from iotop_plus.sampling.health.part import HealthFrame
from iotop_plus.sampling.health.smart import parse_smartctl
from tests.support.wait import holds_within

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _nvme_tree(tmp_path: Path) -> Roots:
    base = tmp_path / "nvme"
    shutil.copytree(FIXTURES / "nvme", base, symlinks=True)
    hwmon = base / "sys" / "block" / "nvme0n1" / "device" / "hwmon1"
    hwmon.mkdir(parents=True)
    (hwmon / "temp1_input").write_text("38850\n")
    return Roots(proc=base / "proc", sys=base / "sys")


def _promtool_ok(body: bytes) -> None:
    promtool = find_program("promtool")
    assert promtool is not None, "promtool not installed (Debian package prometheus; make sysdeps)"
    lint = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_serve_exports_the_sysfs_temperature_of_a_captured_nvme(tmp_path: Path) -> None:
    source = LiveSource(_nvme_tree(tmp_path))
    source.want(HEALTH, True)
    sampler = ExportSampler(source, 1.0, show_all=True)
    try:

        def exported() -> str:
            sampler.step()
            return FrameCollector(sampler.view).render(None)[0].decode()

        assert holds_within(lambda: 'temperature_celsius{device="nvme0n1"} 39.0' in exported(), 10)
        text = exported()
        assert 'iotop_plus_disk_health_info{device="nvme0n1"' in text
        assert 'source="sysfs"' in text
        assert "iotop_plus_disk_io_errors_total" not in text  # nothing counts on a tree
        _promtool_ok(text.encode())
    finally:
        source.close()


def test_smartctl_figures_and_io_errors_are_exported_in_the_json_words(tmp_path: Path) -> None:
    source = LiveSource(_nvme_tree(tmp_path))
    sampler = ExportSampler(source, 1.0, show_all=True)
    try:
        base = sampler.step()
    finally:
        source.close()
    assert base.frame is not None
    doc = json.loads((FIXTURES / "smartctl" / "nvme-media-errors-samsung-970evo.json").read_text())
    reading = parse_smartctl(doc)
    health = HealthFrame({"nvme0n1": reading}, {"nvme0n1": 30.0}, {"nvme0n1": 4}, "kmsg")
    view = dataclasses.replace(
        base, frame=dataclasses.replace(base.frame, parts={"health": health})
    )
    body = FrameCollector(lambda: view).render(None)[0]
    text = body.decode()
    for line in (
        'iotop_plus_disk_health_passed{device="nvme0n1"} 1.0',
        'iotop_plus_disk_health_media_errors{device="nvme0n1"} 7.0',
        'iotop_plus_disk_health_percentage_used{device="nvme0n1"} 3.0',
        'iotop_plus_disk_health_available_spare{device="nvme0n1"} 99.0',
        'iotop_plus_disk_health_temperature_celsius{device="nvme0n1"} 35.0',
        'iotop_plus_disk_health_critical_warning{device="nvme0n1"} 0.0',
        'iotop_plus_disk_health_power_on_seconds{device="nvme0n1"} 4.60728e+07',
        'iotop_plus_disk_health_unsafe_shutdowns{device="nvme0n1"} 10.0',
        'iotop_plus_disk_health_age_seconds{device="nvme0n1"} 30.0',
        'iotop_plus_disk_io_errors_total{device="nvme0n1"} 4.0',
    ):
        assert line in text, line
    assert "iotop_plus_disk_health_reallocated_sectors{" not in text  # NVMe has none
    _promtool_ok(body)
