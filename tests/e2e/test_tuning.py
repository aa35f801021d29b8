"""Tuning a real loop device: every setting set, read back, undone; the kernel's rounding and
clamping reported as effective; all-or-nothing; the journal; the exported rules and script.

Each test makes its own loop device and puts every queue setting back at the end (queue
settings outlive ``losetup -d``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iotop_plus.devices.conflicts import TuningError
from iotop_plus.devices.journal import Journal
from iotop_plus.devices.settings import SettingError, read_settings, write_setting
from iotop_plus.devices.tuner import Tuner
from iotop_plus.roots import Roots
from tests.support.queue_guard import queue_values, restored_queue

pytestmark = pytest.mark.root

LIVE = Roots()


@pytest.fixture
def loop(make_loop: Callable[..., str]) -> Iterator[str]:
    """A fresh loop device whose queue settings are restored after the test."""
    name = make_loop(32)
    with restored_queue(name):
        yield name


@pytest.fixture
def tuner(tmp_path: Path) -> Tuner:
    return Tuner(LIVE, Journal(tmp_path / "state" / "iotop-plus" / "changes.jsonl"))


def _other_scheduler(device: str) -> str:
    value = {v.setting.name: v for v in read_settings(LIVE, device)}["scheduler"]
    return next(c for c in value.choices if c != value.value)


def test_every_setting_is_set_read_back_and_restored(loop: str, tuner: Tuner) -> None:
    original = queue_values(loop)
    wanted = {
        "scheduler": _other_scheduler(loop),
        "max_sectors_kb": "512",
        "read_ahead_kb": "16" if original["read_ahead_kb"] != "16" else "32",
        "nr_requests": "64",
        "nomerges": "2" if original["nomerges"] != "2" else "1",
        "rq_affinity": "2" if original["rq_affinity"] != "2" else "1",
        "wbt_lat_usec": "5000" if original["wbt_lat_usec"] != "5000" else "6000",
    }
    # In write order: the scheduler resets nr_requests, max_sectors_kb resets read_ahead_kb.
    for setting, value in wanted.items():
        before = queue_values(loop)
        change = tuner.apply(loop, setting, value)
        assert change.old == before[setting]
        assert change.effective == value, change.summary
        assert queue_values(loop)[setting] == value
    assert queue_values(loop) == wanted

    for _ in wanted:
        tuner.undo()
    assert queue_values(loop) == original
    assert tuner.active == ()
    with pytest.raises(TuningError, match="nothing to undo"):
        tuner.undo()


def test_read_ahead_rounding_is_reported_as_effective(loop: str, tuner: Tuner) -> None:
    change = tuner.apply(loop, "read_ahead_kb", "7")
    assert (change.new, change.effective) == ("7", "4")
    assert change.note == "rounded down to whole 4 KiB pages"
    assert "asked 7" in change.summary
    assert Path(f"/sys/block/{loop}/queue/read_ahead_kb").read_text().strip() == "4"
    # blockdev reports the same value in 512-byte sectors.
    ra = subprocess.run(
        ["blockdev", "--getra", f"/dev/{loop}"], capture_output=True, text=True, check=True
    )
    assert ra.stdout.strip() == "8"


def test_max_sectors_kb_is_clamped_to_the_hardware_limit(loop: str, tuner: Tuner) -> None:
    hw = Path(f"/sys/block/{loop}/queue/max_hw_sectors_kb").read_text().strip()
    change = tuner.apply(loop, "max_sectors_kb", str(int(hw) * 100))
    assert change.effective == hw
    assert change.note == f"clamped to max_hw_sectors_kb ({hw})"


def test_max_sectors_kb_resets_read_ahead_and_undo_puts_both_back(loop: str, tuner: Tuner) -> None:
    tuner.apply(loop, "read_ahead_kb", "16")
    change = tuner.apply(loop, "max_sectors_kb", "512")
    before = queue_values(loop)
    if not change.side_effects:
        pytest.skip("this kernel does not reset read_ahead_kb with max_sectors_kb")
    assert [e.setting for e in change.side_effects] == ["read_ahead_kb"]
    assert change.side_effects[0].old == "16"
    assert before["read_ahead_kb"] != "16"
    tuner.undo()
    assert queue_values(loop)["read_ahead_kb"] == "16"


def test_scheduler_switch_records_nr_requests_and_revert_all_is_exact(
    loop: str, tuner: Tuner
) -> None:
    original = queue_values(loop)
    assert original["scheduler"] == "none"
    change = tuner.apply(loop, "scheduler", "mq-deadline")
    assert {e.setting for e in change.side_effects} == {"nr_requests"}
    tuner.apply(loop, "nr_requests", "1000")
    tuner.apply(loop, "read_ahead_kb", "128")
    tuner.apply(loop, "read_ahead_kb", "256")
    reverts = tuner.revert_all()
    assert [r.action for r in reverts] == ["revert"] * 4
    assert queue_values(loop) == original
    assert tuner.active == ()


def test_deadline_alias_is_written_as_mq_deadline(loop: str, tuner: Tuner) -> None:
    change = tuner.apply(loop, "scheduler", "deadline")
    assert change.new == change.effective == "mq-deadline"


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("read_ahead_kb", "+5", "has a sign"),
        ("read_ahead_kb", "-5", "has a sign"),
        ("read_ahead_kb", "1.5", "is not a whole number"),
        ("read_ahead_kb", "0x10", "is not base 10"),
        ("read_ahead_kb", " 16", "has spaces"),
        ("read_ahead_kb", "4294967296", "out of range"),
        ("max_sectors_kb", "3", "out of range"),
        ("nomerges", "3", "out of range (valid: 0, 1 or 2)"),
        ("rq_affinity", "7", "out of range"),
        ("wbt_lat_usec", "-2", "has a sign"),
        ("scheduler", "cfq", "is not a scheduler of this device (valid: one of none"),
    ],
)
def test_invalid_values_are_refused_before_writing(
    loop: str, tuner: Tuner, setting: str, value: str, message: str
) -> None:
    before = queue_values(loop)
    with pytest.raises(SettingError, match=message.replace("(", r"\(").replace(")", r"\)")) as exc:
        tuner.apply(loop, setting, value)
    assert exc.value.kind == "invalid"
    assert queue_values(loop) == before
    assert tuner.journal.entries == ()


def test_kernel_refusal_names_the_valid_range(loop: str, tuner: Tuner) -> None:
    # With scheduler none, nr_requests cannot exceed the hardware queue depth: EINVAL.
    depth = Path(f"/sys/block/{loop}/mq/0/nr_tags").read_text().strip()
    with pytest.raises(SettingError) as exc:
        tuner.apply(loop, "nr_requests", str(int(depth) + 1))
    assert exc.value.kind == "refused"
    assert exc.value.message == (
        f"value not accepted by this device (valid: 4 to {depth} with scheduler none "
        "(0-3 become 4))"
    )


def test_small_nr_requests_become_four(loop: str, tuner: Tuner) -> None:
    change = tuner.apply(loop, "nr_requests", "2")
    assert change.effective == "4"
    assert change.note == "0-3 become 4"


def test_wbt_minus_one_restores_the_default_and_undo_restores_the_old(
    loop: str, tuner: Tuner
) -> None:
    original = queue_values(loop)["wbt_lat_usec"]
    tuner.apply(loop, "wbt_lat_usec", "0")
    change = tuner.apply(loop, "wbt_lat_usec", "-1")
    assert change.effective.isdigit()
    tuner.revert_all()
    assert queue_values(loop)["wbt_lat_usec"] == original


def test_multi_setting_apply_with_one_bad_value_changes_nothing(loop: str, tuner: Tuner) -> None:
    before = queue_values(loop)
    # The scheduler and read-ahead are written first; the kernel then refuses nr_requests
    # above MAX_SCHED_RQ, and both earlier writes must be rolled back.
    with pytest.raises(SettingError, match="nothing was changed"):
        tuner.apply_many(
            loop,
            [("read_ahead_kb", "16"), ("scheduler", "kyber"), ("nr_requests", "99999")],
        )
    assert queue_values(loop) == before
    actions = [c.action for c in tuner.journal.entries]
    assert actions[:2] == ["set", "set"]
    assert set(actions[2:]) == {"rollback"}
    assert tuner.active == ()


def test_journal_lines_hold_time_device_setting_old_new_effective(loop: str, tuner: Tuner) -> None:
    tuner.apply(loop, "read_ahead_kb", "7")
    tuner.undo()
    assert tuner.journal.path is not None
    records = [json.loads(x) for x in tuner.journal.path.read_text().splitlines()]
    # #11: each write's intent (with the device's major:minor and diskseq) comes first.
    assert [x["record"] for x in records] == ["intent", "change", "intent", "change"]
    intent = records[0]
    assert intent["dev"] == (Path("/sys/block") / loop / "dev").read_text().strip()
    assert intent["diskseq"] == (Path("/sys/block") / loop / "diskseq").read_text().strip()
    lines = [x for x in records if x["record"] == "change"]
    assert [x["action"] for x in lines] == ["set", "undo"]
    first = lines[0]
    assert first["device"] == loop
    assert first["setting"] == "read_ahead_kb"
    assert (first["new"], first["effective"]) == ("7", "4")
    assert first["time"].endswith("+00:00")
    assert lines[1]["undoes"] == first["sequence"]
    assert tuner.journal.problem is None


def test_write_setting_alone_reads_back(loop: str) -> None:
    result = write_setting(LIVE, loop, "read_ahead_kb", "130")
    assert result.effective == "128"


def test_exported_script_reapplies_the_kept_values(loop: str, tuner: Tuner, tmp_path: Path) -> None:
    original = queue_values(loop)
    tuner.apply(loop, "scheduler", "mq-deadline")
    tuner.apply(loop, "read_ahead_kb", "16")
    kept = queue_values(loop)
    script = tmp_path / "tune.sh"
    script.write_text(tuner.shell_script())
    tuner.revert_all()
    assert queue_values(loop) == original
    run = subprocess.run(["sh", str(script)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert queue_values(loop) == kept
    assert f"{loop} read_ahead_kb: 16" in run.stdout


def _udevadm_test(rules_dir: Path, device: str, empty: Path) -> str:
    """``udevadm test`` with only our rules, in a private mount namespace.

    /run and /dev are fresh tmpfs there, so udev's database and /dev symlinks on the host are
    untouched; only the ATTR writes reach sysfs, on the test's own loop device.
    """
    script = (
        "mount -t tmpfs none /run && mount -t tmpfs none /dev && "
        f"mount --bind {rules_dir} /etc/udev/rules.d && "
        f"for d in /lib/udev/rules.d /usr/lib/udev/rules.d /run/udev/rules.d; do "
        f'[ -d "$d" ] && mount --bind {empty} "$d"; done; '
        f"exec udevadm test --action=add /sys/block/{device}"
    )
    run = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, timeout=60
    )
    return run.stdout + run.stderr


def test_udev_rules_parse_and_apply_in_udevadm_test(
    loop: str, tuner: Tuner, tmp_path: Path
) -> None:
    if shutil.which("udevadm") is None or shutil.which("unshare") is None:
        pytest.skip("udevadm or unshare is not installed")
    verify = subprocess.run(["udevadm", "verify", "--help"], capture_output=True)
    original = queue_values(loop)
    tuner.apply(loop, "scheduler", "mq-deadline")
    tuner.apply(loop, "read_ahead_kb", "16")
    kept = queue_values(loop)
    rules = tmp_path / "rules.d"
    rules.mkdir()
    (tmp_path / "empty").mkdir()
    rules_file = rules / "61-iotop-plus.rules"
    rules_file.write_text(tuner.udev_rules())
    if verify.returncode == 0:
        checked = subprocess.run(["udevadm", "verify", str(rules_file)], capture_output=True)
        assert checked.returncode == 0, checked.stderr
    tuner.revert_all()
    assert queue_values(loop) == original

    log = _udevadm_test(rules, loop, tmp_path / "empty")
    assert "61-iotop-plus.rules" in log
    assert "Invalid" not in log and "invalid" not in log, log
    assert f"ATTR '/sys/devices/virtual/block/{loop}/queue/scheduler' writing 'mq-deadline'" in log
    # udevadm test really applies ATTR assignments: the rule sets the kept values.
    assert queue_values(loop) == kept


def test_udevadm_test_reports_a_broken_rule(loop: str, tmp_path: Path) -> None:
    """The check above can fail: a malformed line is reported."""
    if shutil.which("udevadm") is None or shutil.which("unshare") is None:
        pytest.skip("udevadm or unshare is not installed")
    rules = tmp_path / "rules.d"
    rules.mkdir()
    (tmp_path / "empty").mkdir()
    (rules / "61-broken.rules").write_text(f'KERNEL=="{loop}", ATTR{{queue/nomerges"="1"\n')
    log = _udevadm_test(rules, loop, tmp_path / "empty")
    assert "61-broken.rules:1" in log
    assert "nvalid" in log
