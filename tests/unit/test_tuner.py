"""The Tuner's bookkeeping on a small fake sysfs: journal, undo order, net settings, exports.

The kernel's own behaviour (rounding, clamping, side effects) is tested on real loop devices
in tests/e2e/test_tuning.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from iotop_plus.devices.boot_export import shell_script, udev_match, udev_rules
from iotop_plus.devices.conflicts import TuningError
from iotop_plus.devices.journal import Journal, default_journal_path
from iotop_plus.devices.settings import SettingError
from iotop_plus.devices.tuner import Tuner
from iotop_plus.devices.writers import write_tree_file
from iotop_plus.roots import Roots
from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory
from iotop_plus.state import default_state_dir
from tests.unit.test_settings import make_tree


@pytest.fixture
def roots(tmp_path: Path) -> Roots:
    return make_tree(tmp_path / "tree")


@pytest.fixture
def tuner(roots: Roots, tmp_path: Path) -> Tuner:
    # The ruling "live trees only, at the edge": a temporary tree needs an injected writer.
    return Tuner(
        roots,
        Journal(tmp_path / "state" / "changes.jsonl"),
        is_root=True,
        clock=lambda: 0,
        writer=write_tree_file,
    )


def sysfs(roots: Roots, name: str) -> str:
    return (roots.sys_block / "sda" / "queue" / name).read_text().strip()


def test_default_state_dir_is_var_lib_for_root_whatever_xdg_says() -> None:
    # Ruling: one state directory, so sudo, sudo -E and a unit see the same journal.
    assert default_state_dir({"XDG_STATE_HOME": "/home/u/.s"}, euid=0) == Path(
        "/var/lib/iotop-plus"
    )
    if os.geteuid() == 0:
        assert default_journal_path({"XDG_STATE_HOME": "/x"}) == Path(
            "/var/lib/iotop-plus/changes.jsonl"
        )
    assert default_state_dir({"XDG_STATE_HOME": "/var/state"}, euid=1000) == Path(
        "/var/state/iotop-plus"
    )
    home = Path.home() / ".local" / "state" / "iotop-plus"
    assert default_state_dir({}, euid=1000) == home
    # A relative XDG_STATE_HOME is invalid by the spec and ignored.
    assert default_state_dir({"XDG_STATE_HOME": "rel/dir"}, euid=1000) == home


def test_undo_is_last_in_first_out(roots: Roots, tuner: Tuner) -> None:
    tuner.apply("sda", "read_ahead_kb", "16")
    tuner.apply("sda", "read_ahead_kb", "256")
    tuner.apply("sda1", "nomerges", "2")
    assert [c.sequence for c in tuner.active] == [1, 2, 3]
    undo = tuner.undo()
    assert (undo.action, undo.undoes, undo.old, undo.effective) == ("undo", 3, "2", "0")
    assert sysfs(roots, "nomerges") == "0"
    tuner.undo()
    assert sysfs(roots, "read_ahead_kb") == "16"
    tuner.undo()
    assert sysfs(roots, "read_ahead_kb") == "128"
    with pytest.raises(TuningError, match="nothing to undo"):
        tuner.undo()


def test_revert_all_restores_the_first_old_values(roots: Roots, tuner: Tuner) -> None:
    tuner.apply("sda", "read_ahead_kb", "16")
    tuner.apply("sda", "read_ahead_kb", "256")
    tuner.apply("sda", "wbt_lat_usec", "0")
    reverts = tuner.revert_all()
    assert [r.undoes for r in reverts] == [3, 2, 1]
    assert (sysfs(roots, "read_ahead_kb"), sysfs(roots, "wbt_lat_usec")) == ("128", "2000")
    assert tuner.active == ()
    assert tuner.revert_all() == ()


def test_journal_file_and_memory_agree_and_intent_comes_first(tuner: Tuner) -> None:
    tuner.apply("sda", "read_ahead_kb", "16")
    tuner.undo()
    assert tuner.journal.path is not None
    lines = [json.loads(x) for x in tuner.journal.path.read_text().splitlines()]
    assert [x["record"] for x in lines] == ["intent", "change", "intent", "change"]
    changes = [{k: v for k, v in x.items() if k != "record"} for x in lines[1::2]]
    assert changes == [c.to_json() for c in tuner.journal.entries]
    assert lines[1]["time"] == "1970-01-01T00:00:00+00:00"
    assert {"time", "run", "device", "setting", "old", "new", "effective"} <= set(lines[1])
    intent = lines[0]
    assert (intent["run"], intent["sequence"], intent["old"], intent["new"]) == (
        tuner.journal.run_id,
        1,
        "128",
        "16",
    )
    assert {"dev", "diskseq"} <= set(intent)


def test_an_unwritable_journal_refuses_the_change(roots: Roots, tmp_path: Path) -> None:
    # Ruling "no safe journal, no change": this replaces the old test that asserted the
    # journal never stops a change.
    blocker = tmp_path / "file"
    blocker.write_text("")
    tuner = Tuner(roots, Journal(blocker / "changes.jsonl"), is_root=True, writer=write_tree_file)
    with pytest.raises(SettingError, match=f"no change made: .*{blocker}") as exc:
        tuner.apply("sda", "read_ahead_kb", "16")
    assert exc.value.kind == "failed"
    assert sysfs(roots, "read_ahead_kb") == "128"
    assert tuner.journal.entries == ()
    assert tuner.active == ()


def test_apply_many_validates_everything_before_writing(roots: Roots, tuner: Tuner) -> None:
    with pytest.raises(SettingError, match="nomerges"):
        tuner.apply_many("sda", [("read_ahead_kb", "16"), ("nomerges", "9")])
    assert sysfs(roots, "read_ahead_kb") == "128"
    assert tuner.journal.entries == ()
    with pytest.raises(SettingError, match="given more than once"):
        tuner.apply_many("sda", [("read_ahead_kb", "16"), ("read_ahead_kb", "32")])


def test_apply_many_writes_scheduler_then_max_sectors_first(tuner: Tuner) -> None:
    changes = tuner.apply_many(
        "sda", [("read_ahead_kb", "16"), ("max_sectors_kb", "512"), ("scheduler", "none")]
    )
    assert [c.setting for c in changes] == ["scheduler", "max_sectors_kb", "read_ahead_kb"]


def test_not_root_cannot_apply(roots: Roots) -> None:
    tuner = Tuner(roots, is_root=False)
    with pytest.raises(SettingError) as exc:
        tuner.apply_many("sda", [("read_ahead_kb", "16")])
    assert exc.value.kind == "permission"
    assert sysfs(roots, "read_ahead_kb") == "128"


def test_net_settings_leave_out_what_ended_where_it_started(tuner: Tuner) -> None:
    tuner.apply("sda", "read_ahead_kb", "16")
    tuner.apply("sda", "read_ahead_kb", "128")  # back to the start
    tuner.apply("sda", "nomerges", "1")
    tuner.apply("sda1", "scheduler", "kyber")
    assert tuner.net_settings() == {"sda": {"scheduler": "kyber", "nomerges": "1"}}


# --- udev rules ------------------------------------------------------------------------------

# udev rule syntax (udev(7)): comma-separated KEY[{attr}] OP "value" items.
_ITEM = re.compile(
    r'^(?P<key>[A-Z]+)(\{(?P<attr>[^{}"]+)\})?(?P<op>==|!=|\+=|-=|:=|=)"(?P<v>[^"]*)"$'
)
_MATCH_KEYS = {"ACTION", "SUBSYSTEM", "KERNEL", "ENV", "ATTR", "ATTRS"}
_ASSIGN_KEYS = {"ATTR", "ENV"}


def parse_udev_rules(text: str) -> list[list[tuple[str, str | None, str, str]]]:
    """A strict parse of the subset of udev rule syntax the exporter uses.

    Raises:
        ValueError: naming the first bad line.
    """
    rules = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        items = []
        for raw in line.split(", "):
            m = _ITEM.match(raw)
            if m is None:
                raise ValueError(f"line {number}: bad item {raw!r}")
            key, attr, op, value = m["key"], m["attr"], m["op"], m["v"]
            if op in ("==", "!=") and key not in _MATCH_KEYS:
                raise ValueError(f"line {number}: {key} cannot be matched")
            if op == "=" and key not in _ASSIGN_KEYS:
                raise ValueError(f"line {number}: {key} cannot be assigned")
            if key in ("ATTR", "ATTRS", "ENV") and not attr:
                raise ValueError(f"line {number}: {key} needs {{name}}")
            items.append((key, attr, op, value))
        rules.append(items)
    return rules


def test_the_parser_can_fail() -> None:
    for bad in (
        'KERNEL=="sda" ATTR{queue/nomerges}="1"',
        'KERNEL=="sda", ATTR{queue/nomerges}=1',
        'KERNEL=="sda", RUN=="x"',
        'KERNEL="sda"',
        'KERNEL=="sda", ATTR="1"',
    ):
        with pytest.raises(ValueError, match="line 1"):
            parse_udev_rules(bad)


def test_rules_match_the_kernel_name_with_a_comment_when_nothing_stable_is_known(
    tuner: Tuner,
) -> None:
    tuner.apply("sda", "scheduler", "bfq")
    tuner.apply("sda", "read_ahead_kb", "16")
    text = tuner.udev_rules(Inventory())
    assert (
        "# sda: no serial or WWN is known, so this matches the kernel name, "
        "which can change between boots\n"
    ) in text
    assert (
        'ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", KERNEL=="sda", '
        'ATTR{queue/scheduler}="bfq", ATTR{queue/read_ahead_kb}="16"\n'
    ) in text
    (rule,) = parse_udev_rules(text)
    assert rule[-2:] == [
        ("ATTR", "queue/scheduler", "=", "bfq"),
        ("ATTR", "queue/read_ahead_kb", "=", "16"),
    ]


def _disk(**kw: object) -> BlockDevice:
    return BlockDevice("sda", 8, 0, "disk", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("device", "match", "comment"),
    [
        (
            _disk(wwid="naa.5000c500a1b2c3d4", serial="Z1X2"),
            'ATTRS{wwid}=="naa.5000c500a1b2c3d4"',
            "WWN (sysfs)",
        ),
        (_disk(serial="Z1X2"), 'ATTRS{serial}=="Z1X2"', "serial number (sysfs)"),
        (
            _disk(wwid="0x5000c500a1b2c3d4", identity_source="udev"),
            'ENV{ID_WWN}=="0x5000c500a1b2c3d4"',
            "WWN (udev)",
        ),
        (_disk(serial="Z1X2", identity_source="udev"), 'ENV{ID_SERIAL_SHORT}=="Z1X2"', "(udev)"),
        (_disk(serial='bad"quote'), 'KERNEL=="sda"', "kernel name"),
        (_disk(serial="glob*"), 'KERNEL=="sda"', "kernel name"),
        (None, 'KERNEL=="sda"', "kernel name"),
    ],
)
def test_rules_prefer_wwn_then_serial(device: BlockDevice | None, match: str, comment: str) -> None:
    key, note = udev_match(device, "sda")
    assert key == match
    assert comment in note
    inventory = Inventory({"sda": device} if device else {})
    text = udev_rules({"sda": {"read_ahead_kb": "16"}}, inventory)
    assert match in text
    parse_udev_rules(text)


def test_shell_script_is_valid_sh_and_guards_the_identity(tmp_path: Path) -> None:
    text = shell_script(
        {"sda": {"scheduler": "mq-deadline", "read_ahead_kb": "16"}},
        Inventory({"sda": _disk(serial="Z1X2")}),
    )
    path = tmp_path / "tune.sh"
    path.write_text(text)
    assert subprocess.run(["sh", "-n", str(path)], capture_output=True).returncode == 0
    assert "if same_disk sda Z1X2 /sys/block/sda/serial /sys/block/sda/device/serial; then" in text
    assert "    set_queue sda scheduler mq-deadline\n    set_queue sda read_ahead_kb 16\n" in text
    assert text.rstrip().endswith('exit "$status"')


def test_export_writes_new_files_and_never_overwrites(tuner: Tuner, tmp_path: Path) -> None:
    tuner.apply("sda", "read_ahead_kb", "16")
    rules, script = tuner.export(tmp_path / "out", Inventory())
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(0))  # the tuner's clock says 0
    assert (rules.name, script.name) == (f"iotop-plus-{stamp}.rules", f"iotop-plus-{stamp}.sh")
    assert rules.parent == script.parent == tmp_path / "out"
    assert 'ATTR{queue/read_ahead_kb}="16"' in rules.read_text()
    assert "set_queue sda read_ahead_kb 16" in script.read_text()
    with pytest.raises(FileExistsError):
        tuner.export(tmp_path / "out", Inventory())
