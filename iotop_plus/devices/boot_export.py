"""What re-applies the kept queue settings at boot: a udev rules file and a POSIX shell script.

:class:`~iotop_plus.devices.tuner.Tuner` hands them the settings changed and kept in a run
(:func:`net_settings`); :func:`export_files` writes both as new files;
each disk is matched by its WWN or serial where one is known, else by its kernel name.
"""

from __future__ import annotations

import os
import shlex
import socket
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path

from iotop_plus import __version__
from iotop_plus.devices.changes import HOST_SCOPE, Change, write_order
from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory

#: Characters that make a udev match value unsafe to quote (globs, quotes, escapes).
_UDEV_UNSAFE = set('"\\*?[]|\n')


def _header(kind: str) -> list[str]:
    stamp = datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")
    return [
        f"# {kind} written by iotop-plus {__version__} on {socket.gethostname()} at {stamp}:",
        "# the queue settings changed and kept in that run.",
    ]


def _safe(value: str | None) -> str | None:
    if not value or any(c in _UDEV_UNSAFE for c in value):
        return None
    return value


def udev_match(device: BlockDevice | None, name: str) -> tuple[str, str]:
    """The udev match keys for a disk and a comment saying what they match on.

    A WWN or serial is stable across reboots and re-cabling, the kernel name is not. From the
    udev database the identity is in ``ENV{ID_WWN}``/``ENV{ID_SERIAL_SHORT}`` (set by
    60-persistent-storage.rules, hence a rules file numbered after 60); from sysfs it is an
    attribute of the disk or one of its parents, so ``ATTRS{}``. Only one ``ATTRS`` key is
    used, since udev requires all ``ATTRS`` keys to match on the same parent.
    """
    kernel = f'KERNEL=="{name}"'
    if device is not None:
        wwid, serial = _safe(device.wwid), _safe(device.serial)
        udev = device.identity_source == "udev"
        if wwid:
            key = f'ENV{{ID_WWN}}=="{wwid}"' if udev else f'ATTRS{{wwid}}=="{wwid}"'
            return key, f"# {name}: matched by its WWN ({device.identity_source})"
        if serial:
            key = f'ENV{{ID_SERIAL_SHORT}}=="{serial}"' if udev else f'ATTRS{{serial}}=="{serial}"'
            return key, f"# {name}: matched by its serial number ({device.identity_source})"
        if device.dm_name and _safe(device.dm_name):
            return (
                f'ENV{{DM_NAME}}=="{device.dm_name}"',
                f"# {name}: matched by its device-mapper name",
            )
    return kernel, (
        f"# {name}: no serial or WWN is known, so this matches the kernel name, "
        "which can change between boots"
    )


def udev_rules(settings: Mapping[str, Mapping[str, str]], inventory: Inventory) -> str:
    """A udev rules file that sets ``settings`` (queue device -> setting -> value) at boot."""
    lines = [
        *_header("udev rules"),
        "# Install as /etc/udev/rules.d/61-iotop-plus.rules, then run:",
        "#   udevadm control --reload && udevadm trigger --action=change --subsystem-match=block",
    ]
    if not settings:
        lines.append("# (no settings were changed and kept)")
    for name, values in settings.items():
        match, comment = udev_match(inventory.get(name), name)
        assigns = ", ".join(f'ATTR{{queue/{s}}}="{v}"' for s, v in values.items())
        lines += [
            comment,
            f'ACTION=="add|change", SUBSYSTEM=="block", ENV{{DEVTYPE}}=="disk", {match}, {assigns}',
        ]
    return "\n".join(lines) + "\n"


def _identity_guard(device: BlockDevice | None, name: str) -> list[str]:
    if device is None or device.identity_source != "sysfs":
        return []
    for attr, value in (("wwid", device.wwid), ("serial", device.serial)):
        if value:
            files = [f"/sys/block/{name}/{attr}", f"/sys/block/{name}/device/{attr}"]
            quoted = " ".join(shlex.quote(f) for f in files)
            return [f"same_disk {name} {shlex.quote(value)} {quoted}"]
    return []


def shell_script(settings: Mapping[str, Mapping[str, str]], inventory: Inventory) -> str:
    """A POSIX shell script equivalent to :func:`udev_rules`, for a one-off re-apply.

    It refuses to touch a kernel name that now belongs to another disk (checked by WWN or
    serial when those are known), and exits 1 if any write failed.
    """
    lines = [
        "#!/bin/sh",
        *_header("Shell script"),
        "# Run as root. Kernel names can change between boots: check them first.",
        "set -u",
        "status=0",
        "same_disk() {  # same_disk DEV EXPECTED FILE...: is DEV still the disk we tuned?",
        "    dev=$1; want=$2; shift 2",
        '    for f in "$@"; do',
        '        if [ -r "$f" ]; then',
        '            [ "$(cat "$f")" = "$want" ] && return 0',
        '            echo "$dev is not the disk that was tuned ($f is not $want); skipped" >&2',
        "            status=1; return 1",
        "        fi",
        "    done",
        "    return 0",
        "}",
        "set_queue() {  # set_queue DEV SETTING VALUE",
        "    f=/sys/block/$1/queue/$2",
        '    if [ ! -e "$f" ]; then echo "$f: no such setting" >&2; status=1; return; fi',
        '    if printf "%s" "$3" > "$f"; then',
        '        echo "$1 $2: $(cat "$f")"',
        "    else",
        '        echo "$1 $2: the device refused $3" >&2; status=1',
        "    fi",
        "}",
    ]
    if not settings:
        lines.append("# (no settings were changed and kept)")
    for name, values in settings.items():
        guard = _identity_guard(inventory.get(name), name)
        sets = [f"set_queue {shlex.quote(name)} {s} {shlex.quote(v)}" for s, v in values.items()]
        if guard:
            lines.append(f"if {guard[0]}; then")
            lines += ["    " + s for s in sets]
            lines.append("fi")
        else:
            lines.append(f"# {name}: no serial or WWN known; the kernel name is trusted")
            lines += sets
    lines.append('exit "$status"')
    return "\n".join(lines) + "\n"


def net_settings(changes: Iterable[Change]) -> dict[str, dict[str, str]]:
    """Per queue device, the final value of each setting ``changes`` (oldest first) changed.

    Settings that ended where they started are left out, and host settings (a sysctl has no
    udev rule). Each device's mapping is in :func:`write_order`.
    """
    first_old: dict[tuple[str, str], str] = {}
    last: dict[tuple[str, str], str] = {}
    for change in changes:
        if change.scope == HOST_SCOPE:
            continue
        key = (change.queue_device, change.setting)
        first_old.setdefault(key, change.old)
        last[key] = change.effective
    result: dict[str, dict[str, str]] = {}
    for (qdev, setting), value in sorted(last.items(), key=lambda kv: write_order(kv[0][1])):
        if first_old[(qdev, setting)] != value:
            result.setdefault(qdev, {})[setting] = value
    return result


def _create(path: Path, text: str, mode: int) -> None:
    # O_EXCL: an export never overwrites a file, ours or anyone's.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def export_files(
    directory: Path, settings: Mapping[str, Mapping[str, str]], inventory: Inventory, when: float
) -> tuple[Path, Path]:
    """Write the udev rules and the shell script of ``settings`` as new files in ``directory``.

    The names carry the time ``when`` (``iotop-plus-20260102-030405.rules`` and ``.sh``).

    Raises:
        OSError: when the directory cannot be made or a file already exists.
    """
    stamp = datetime.fromtimestamp(when).strftime("%Y%m%d-%H%M%S")
    directory.mkdir(parents=True, exist_ok=True)
    rules = directory / f"iotop-plus-{stamp}.rules"
    script = directory / f"iotop-plus-{stamp}.sh"
    _create(rules, udev_rules(settings, inventory), 0o644)
    _create(script, shell_script(settings, inventory), 0o755)
    return rules, script
