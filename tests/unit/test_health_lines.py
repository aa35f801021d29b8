"""What the TUI shows of health (#26): the Device tab's lines and the table's severity mark,
from readings of real drives' smartctl JSON."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.health.part import NOT_READ_YET, HealthFrame
from iotop_plus.sampling.health.smart import DeviceHealth, parse_smartctl
from iotop_plus.tui.health_lines import HEALTH_HELP, health_facts
from iotop_plus.tui.widgets.device_rows import severity_marks

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _reading(name: str, normalized: dict[int, int] | None = None) -> DeviceHealth:
    """A real capture's reading; ``normalized`` changes ATA attributes' normalized values."""
    doc: dict[str, Any] = json.loads((FIXTURES / "smartctl" / name).read_text())
    for row in doc.get("ata_smart_attributes", {}).get("table", []):
        if row["id"] in (normalized or {}):
            row["value"] = (normalized or {})[row["id"]]
    return parse_smartctl(doc)


def _frame(health: HealthFrame) -> Frame:
    roots = Roots(proc=FIXTURES / "nvme" / "proc", sys=FIXTURES / "nvme" / "sys")
    source = LiveSource(roots)
    try:
        return dataclasses.replace(source.next_frame(), parts={"health": health})
    finally:
        source.close()


def test_device_tab_lines_say_the_figures_their_age_and_the_errors() -> None:
    nvme = _reading("nvme-media-errors-samsung-970evo.json")
    frame = _frame(HealthFrame({"nvme0n1": nvme}, {"nvme0n1": 150.0}, {"nvme0n1": 3}, "kmsg"))
    facts = dict(health_facts("nvme0n1", frame))
    assert facts["health"] == (
        "PASSED, 35 °C, wear 3 %, spare 99 %, media errors 7, log 62, unsafe off 10, "
        "on 12,798 h (smartctl, 2 min ago)"
    )
    assert facts["I/O errors"] == "≥ 3 since start (kmsg)"  # the kernel log rate-limits
    assert dict(health_facts("nvme0n2", frame))["health"] == NOT_READ_YET


def test_a_device_without_health_says_why_and_uncounted_errors_say_why() -> None:
    none = DeviceHealth(source="none", reason="loop: a file-backed device")
    why = "I/O errors: cannot read /dev/kmsg (run as root)"
    frame = _frame(HealthFrame({"loop0": none}, {"loop0": 1.0}, None, None, why))
    assert health_facts("loop0", frame) == [
        ("health", "none: loop: a file-backed device"),
        ("I/O errors", "cannot read /dev/kmsg (run as root)"),
    ]


def test_severity_marks_errors_a_failing_verdict_and_wear_past_90() -> None:
    readings = {
        "sda": _reading("hdd-reallocated-hitachi-hds721050.json"),  # SMART FAILED
        "sdb": _reading("sata-ssd-samsung-mz7wd240.json", {177: 5}),  # wear 95 %
        "sdc": _reading("sata-ssd-samsung-mz7wd240.json"),  # wear 9 %: fine
        "nvme0n1": _reading("nvme-media-errors-samsung-970evo.json"),
    }
    errors = {"sda": 0, "sdb": 0, "sdc": 0, "nvme0n1": 0, "loop3": 2}
    frame = _frame(HealthFrame(readings, {}, errors, "tracer"))
    assert severity_marks(frame) == {
        "sda": "SMART: failing",
        "sdb": "wear 95 %",
        "loop3": "2 I/O errors since start",
    }
    assert severity_marks(dataclasses.replace(frame, parts={"health": None})) == {}


def test_the_help_says_what_each_figure_means_and_when_it_misleads() -> None:
    text = " ".join(HEALTH_HELP)
    for word in ("media errors", "wear", "realloc", "pending", "Misleads", "rate-limits"):
        assert word in text


def test_kmsg_error_counts_are_a_lower_bound_in_json_and_on_screen() -> None:
    kmsg = HealthFrame({}, {}, {"loop3": 40, "loop4": 0}, "kmsg")
    assert kmsg.device_json("loop3")["io_errors"] == 40
    assert kmsg.device_json("loop3")["io_errors_lower_bound"] is True
    assert kmsg.errors_text("loop3") == "≥ 40" and kmsg.errors_text("loop4") == "0"
    traced = HealthFrame({}, {}, {"loop3": 40}, "tracer")
    assert traced.device_json("loop3")["io_errors_lower_bound"] is False
    assert traced.errors_text("loop3") == "40"
    assert HealthFrame({}, {}, None, None).device_json("loop3")["io_errors_lower_bound"] is None
