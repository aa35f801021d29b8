"""The leftovers of runs that died: changes neither undone, kept nor closed, per setting.

:func:`find_leftovers` reads them out of the journal's lines (see
:mod:`iotop_plus.devices.journal` for the records); :class:`Leftover` is one device setting
(or host setting) such a run left changed, with its original value and whether the device
is still the one changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from iotop_plus.devices.changes import (
    DEVICE_SCOPE,
    HOST_SCOPE,
    HOST_SETTINGS,
    IDENTITY,
    UNDO_ACTIONS,
    SideEffect,
    boot_id,
    device_identity,
    same_boot,
    same_device,
)
from iotop_plus.devices.conflicts import LEAVE
from iotop_plus.devices.settings import SETTINGS
from iotop_plus.roots import Roots


@dataclass(frozen=True)
class Leftover:
    """A setting that a run which died left changed, on one device."""

    device: str | None
    """The device named in the change (None for a host setting)."""
    queue_device: str | None
    """The device whose ``queue/`` was written (None for a host setting)."""
    setting: str
    """The setting's sysfs name, or the sysctl's name for a host setting."""
    original: str
    """The value before the first of these changes: what restore writes back."""
    left: str
    """The value the run left (read back, or asked when the outcome was never written)."""
    changes: tuple[tuple[str, int], ...]
    """(run, sequence) of each open change it stands for."""
    identity: str
    """``same``, or ``stale: ...``/``unknown: ...`` with the reason."""
    side_effects: tuple[SideEffect, ...] = ()
    """Other settings the first change moved, to put back as well."""
    scope: str = DEVICE_SCOPE
    """``device`` or ``host`` (a sysctl such as ``kernel.task_delayacct``)."""

    @property
    def where(self) -> str:
        """``host`` for a host setting, else the device named."""
        return HOST_SCOPE if self.scope == HOST_SCOPE else str(self.device)

    @property
    def stale(self) -> bool:
        """The name now belongs to another device: never restore onto it."""
        return self.identity.startswith("stale")

    @property
    def known(self) -> bool:
        """The device is known to be the one changed."""
        return self.identity == "same"

    def refusal(self, current: str | None) -> str:
        """One line naming the setting, its value and the original."""
        now = current if current is not None else self.left
        return (
            f"{self.where} {self.setting} is {now}, left by a run that ended without undoing "
            f"or keeping it (original {self.original})"
        )


def find_leftovers(
    records: Iterable[Mapping[str, Any]],
    roots: Roots,
    run_alive: Any,
    this_run: str = "",
) -> list[Leftover]:
    """Group the open ``set`` changes of dead runs by device, setting and device identity.

    Args:
        records: The journal's lines, oldest first.
        roots: Where to read the devices' identity now.
        run_alive: ``run_alive(run_id) -> bool``.
        this_run: The caller's run id (alive by definition).
    """
    intents: dict[tuple[str, int], Mapping[str, Any]] = {}
    outcomes: dict[tuple[str, int], Mapping[str, Any]] = {}
    closed: set[tuple[str, int]] = set()
    for rec in records:
        run, seq = rec.get("run"), rec.get("sequence")
        if not isinstance(run, str) or not isinstance(seq, int):
            continue
        kind = rec.get("record")
        if kind == "intent" and rec.get("action") == "set":
            intents[(run, seq)] = rec
        elif kind == "change":
            outcomes[(run, seq)] = rec
            undoes = rec.get("undoes")
            if rec.get("action") in UNDO_ACTIONS and isinstance(undoes, int):
                closed.add((run, undoes))
        elif kind in ("failed", "keep", "closed"):
            closed.add((run, seq))
        elif kind == "conflict" and rec.get("choice") == LEAVE:
            closed.add((run, seq))  # someone changed it since, and a person chose to leave it
    alive: dict[str, bool] = {}
    groups: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    for key, intent in intents.items():
        run = key[0]
        if key in closed or run == this_run:
            continue
        if run not in alive:
            alive[run] = run_alive(run)
        if alive[run]:
            continue
        ident = json.dumps({k: intent.get(k) for k in IDENTITY}, sort_keys=True)
        group = (str(intent.get("queue_device")), str(intent.get("setting")), ident)
        groups.setdefault(group, []).append(key)
    result = []
    boot: list[str | None] = []  # read once, and only when a host leftover needs it
    for (qdev, setting, _), keys in groups.items():
        first, last = intents[keys[0]], intents[keys[-1]]
        outcome = outcomes.get(keys[-1])
        left = str(outcome.get("effective") if outcome else last.get("new"))
        if first.get("scope") == HOST_SCOPE:
            if not boot:
                boot.append(boot_id(roots))
            identity = (
                same_boot(first, boot[0])
                if setting in HOST_SETTINGS
                else "stale: not a known host setting"
            )
            result.append(
                Leftover(
                    device=None,
                    queue_device=None,
                    setting=setting,
                    original=str(first.get("old")),
                    left=left,
                    changes=tuple(keys),
                    identity=identity,
                    scope=HOST_SCOPE,
                )
            )
            continue
        first_out = outcomes.get(keys[0])
        effects = tuple(
            SideEffect(str(e.get("setting")), str(e.get("old")), str(e.get("effective")))
            for e in (first_out.get("side_effects") or [] if first_out else [])
            if isinstance(e, dict) and e.get("setting") in SETTINGS
        )
        valid = setting in SETTINGS and _plain_name(qdev)
        now = device_identity(roots, qdev) if valid else {}
        result.append(
            Leftover(
                device=str(first.get("device")),
                queue_device=qdev,
                setting=setting,
                original=str(first.get("old")),
                left=left,
                changes=tuple(keys),
                identity=same_device(first, now) if valid else "stale: not a device setting",
                side_effects=effects,
            )
        )
    return result


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and name.isprintable()


__all__ = [
    "Leftover",
    "find_leftovers",
]
