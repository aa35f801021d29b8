"""What the registered frame parts add to the commands: their ``record``/``snapshot`` options
(one per :attr:`~iotop_plus.sampling.frame.part.FramePart.record_flag`, named in the registry's
lines so no part module loads to parse a command line), the parts those options want, and
their keys in ``snapshot``'s JSON."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from iotop_plus.sampling.frame import registry

if TYPE_CHECKING:
    from iotop_plus.sampling.frame.model import Frame


def add_part_options(p: argparse.ArgumentParser, command: str) -> None:
    """``--FLAG`` for each registered part's record flag the parser has no option for."""
    for flag in registry.record_flags():
        option = f"--{flag}"
        if option in p._option_string_actions:  # the command's own option of that name
            continue
        p.add_argument(
            option,
            dest=flag_dest(flag),
            action="store_true",
            help=f"{command} the frame part of --{flag} too",
        )


def flag_dest(flag: str) -> str:
    """The argparse attribute of ``--flag``."""
    return "part_" + flag.replace("-", "_")


def given_flags(args: argparse.Namespace) -> frozenset[str]:
    """The registered parts' flags given on the command line (``record --sync``)."""
    return frozenset(f for f in registry.record_flags() if getattr(args, flag_dest(f), False))


def wanted_keys(flags: frozenset[str]) -> tuple[str, ...]:
    """The keys of the parts whose record flag is among ``flags`` (loads the parts)."""
    if not flags:
        return ()
    return tuple(p.key for p in registry.parts() if p.record_flag in flags)


def add_part_json(
    disks: Sequence[dict[str, Any]], entry: dict[str, Any], frame: Frame | None
) -> None:
    """Each part in ``frame``: its keys in every disk entry (``disk_json``) and in the
    statistics ``entry`` (``entry_json``)."""
    if frame is None or not frame.parts:
        return
    for part in registry.parts():
        value = frame.parts.get(part.key)
        if value is None:
            continue
        for disk in disks:
            disk.update(part.disk_json(value, disk["disk_device"]))
        entry.update(part.entry_json(value))
