"""Device health readers (#26): smartctl JSON from real drives of each kind, the real smartctl
on this machine's devices, the sysfs fallback and the reasons a device has no health."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from iotop_plus.programs import search_path_override
from iotop_plus.roots import Roots
from iotop_plus.sampling.health.smart import (
    TIMED_OUT,
    decode_exit_status,
    parse_smartctl,
    read_health,
    sysfs_health,
)
from tests.support.wait import holds_within

SMARTCTL = Path(__file__).parent.parent / "fixtures" / "smartctl"


def _doc(name: str) -> dict[str, object]:
    doc = json.loads((SMARTCTL / name).read_text())
    assert isinstance(doc, dict)
    return doc


def _fake_smartctl(directory: Path, body: str) -> Path:
    directory.mkdir(mode=0o700, exist_ok=True)
    script = directory / "smartctl"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(stat.S_IRWXU)
    return script


def test_sata_ssd_wear_comes_from_the_wear_leveling_attribute() -> None:
    health = parse_smartctl(_doc("sata-ssd-samsung-mz7wd240.json"), "sd")
    assert health.source == "smartctl" and health.reason is None
    assert health.passed is True
    assert health.percentage_used == 9  # Wear_Leveling_Count normalized 91 of 100
    assert health.reallocated_sectors == 0
    assert health.media_errors == 0  # 187 Uncorrectable_Error_Cnt
    assert health.power_on_hours == 84619
    assert health.temperature_c == 27
    assert health.error_log_entries == 0
    assert health.available_spare is None and health.critical_warning is None


def test_hdd_with_reallocated_sectors_fails_and_its_exit_bits_say_why() -> None:
    health = parse_smartctl(_doc("hdd-reallocated-hitachi-hds721050.json"), "sd")
    assert health.passed is False
    assert health.reallocated_sectors == 1975
    assert health.pending_sectors == 8
    assert health.power_on_hours == 65592
    assert health.temperature_c == 25
    assert health.error_log_entries == 56
    assert health.percentage_used is None  # a spinning disk has no wear figure
    assert health.exit_status == 216
    assert health.exit_notes == (
        "SMART status: DISK FAILING",
        "pre-fail attributes at or below threshold",
        "the device error log has errors",
        "the self-test log has errors",
    )


def test_nvme_with_media_errors() -> None:
    health = parse_smartctl(_doc("nvme-media-errors-samsung-970evo.json"))
    assert health.passed is True
    assert health.media_errors == 7
    assert health.error_log_entries == 62
    assert health.percentage_used == 3 and not health.worn
    assert health.available_spare == 99 and health.available_spare_threshold == 10
    assert health.critical_warning == 0
    assert health.unsafe_shutdowns == 10
    assert health.power_on_hours == 12798
    assert health.temperature_c == 35


def test_scsi_grown_defects_count_as_reallocated() -> None:
    health = parse_smartctl(_doc("scsi-grown-defects-seagate-st4000nm0043.json"), "sd")
    assert health.reallocated_sectors == 56
    assert health.media_errors == 0  # uncorrected read + write errors
    assert health.temperature_c == 34 and health.temperature_critical_c == 68
    assert health.power_on_hours == 43549


def test_virtio_disk_says_why_it_has_no_smart_from_the_captured_output() -> None:
    health = parse_smartctl(_doc("virtio-vda-unable-to-detect.json"), "virtio_blk")
    assert health.source == "none"
    assert health.reason is not None and health.reason.startswith("virtio_blk: ")
    assert "Unable to detect device type" in health.reason
    assert health.exit_notes == ("command line did not parse, or the device type is unknown",)
    assert health.passed is None and health.temperature_c is None


def test_exit_status_bits_in_words() -> None:
    assert decode_exit_status(0) == ()
    assert decode_exit_status(2) == (
        "device open failed, gave no identity, or is in a low-power mode",
    )


def test_not_smartctl_json_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not smartctl JSON"):
        parse_smartctl({"jobs": []})


@pytest.mark.root
def test_real_smartctl_on_this_machines_disk_says_why_there_is_no_smart() -> None:
    disk = next(
        (n for n in os.listdir("/sys/block") if os.path.exists(f"/sys/block/{n}/device/driver")),
        None,
    )
    if disk is None or not os.path.exists("/usr/sbin/smartctl"):
        pytest.fail("this test needs a disk with a driver and smartctl (make sysdeps)")
    health = read_health(Roots(), disk, "disk")
    driver = os.path.basename(os.readlink(f"/sys/block/{disk}/device/driver"))
    if driver == "virtio_blk":  # this development VM: smartctl cannot see through virtio
        assert health.source in ("none", "sysfs")
        assert health.reason is not None and health.reason.startswith("virtio_blk: ")
        assert "Unable to detect device type" in health.reason
        assert health.exit_status == 1
    else:
        assert health.source == "smartctl" or health.reason
    assert health.read_monotonic > 0


def test_without_smartctl_the_reason_says_how_to_install_it(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir(mode=0o700)
    with search_path_override([str(empty)]):
        health = read_health(Roots(), "vda", "disk")
    assert health.source in ("none", "sysfs")
    assert health.reason is not None
    assert "smartctl is not installed" in health.reason
    assert "apt-get install smartmontools" in health.reason


@pytest.mark.parametrize("kind", ["loop", "ram", "zram", "dm", "md"])
def test_devices_without_a_drive_say_why_and_never_run_smartctl(tmp_path: Path, kind: str) -> None:
    ran = tmp_path / "ran"
    bin_dir = tmp_path / "bin"
    _fake_smartctl(bin_dir, f'touch "{ran}"\necho "{{}}"\n')
    with search_path_override([str(bin_dir)]):
        health = read_health(Roots(sys=tmp_path / "sys"), f"{kind}0", kind)
    assert health.source == "none"
    assert health.reason is not None and health.reason.startswith(f"{kind}: ")
    assert not ran.exists()


def test_a_smartctl_that_never_answers_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    bin_dir = tmp_path / "bin"
    _fake_smartctl(bin_dir, f'echo $$ > "{pid_file}"\nexec sleep 600\n')
    with search_path_override([str(bin_dir)]):
        health = read_health(Roots(sys=tmp_path / "sys"), "sdz", "disk", timeout=0.5)
    assert health.source == "none"
    assert health.reason is not None and health.reason.startswith(TIMED_OUT)
    pid = int(pid_file.read_text())
    assert holds_within(lambda: not Path(f"/proc/{pid}").exists(), 5.0)


def test_sysfs_fallback_reads_nvme_hwmon_and_scsi_counters(tmp_path: Path) -> None:
    nvme = tmp_path / "block" / "nvme0n1" / "device" / "hwmon3"
    nvme.mkdir(parents=True)
    (nvme / "temp1_input").write_text("41850\n")
    (nvme / "temp1_max").write_text("84850\n")
    (nvme / "temp1_crit").write_text("89850\n")
    scsi = tmp_path / "block" / "sdb" / "device"
    scsi.mkdir(parents=True)
    (scsi / "ioerr_cnt").write_text("0x5\n")
    (scsi / "iodone_cnt").write_text("0x1f2\n")
    (scsi / "state").write_text("running\n")
    roots = Roots(sys=tmp_path)
    hot = sysfs_health(roots, "nvme0n1")
    assert (hot.source, hot.temperature_c) == ("sysfs", 42)
    assert (hot.temperature_warning_c, hot.temperature_critical_c) == (85, 90)
    sd = sysfs_health(roots, "sdb")
    assert (sd.ioerr_cnt, sd.iodone_cnt, sd.device_state) == (5, 0x1F2, "running")
    assert sysfs_health(roots, "sdc").source == "none"
