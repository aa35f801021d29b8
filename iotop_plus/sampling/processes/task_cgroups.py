"""Each task's cgroup, for the per-process view: read once per task, refreshed now and then."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from iotop_plus.roots import Roots
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded

if TYPE_CHECKING:
    from iotop_plus.sampling.processes.rates import TaskKey

TASK_CGROUP_REFRESH_S = 30.0
"""A task's cgroup is read when it is first seen, then again after this long (it may move)."""


class TaskCgroups:
    """Each task's cgroup path from ``/proc/PID/cgroup``, read once per task and refreshed
    every :data:`TASK_CGROUP_REFRESH_S`, so a frame reads only new (or stale) tasks.

    The path follows the one rule the issuers use too
    (:func:`~iotop_plus.sampling.cgroups.names.task_cgroup`): the v2 path below the v2 root,
    else the v1 blkio path, so the CGROUP column and the issuers name the same cgroup.
    """

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self._paths: dict[TaskKey, tuple[str, float]] = {}

    def update(
        self, tasks: Mapping[TaskKey, object], now: float | None = None
    ) -> Mapping[TaskKey, str]:
        """The paths of ``tasks``; forgets the tasks that are gone."""
        from iotop_plus.sampling.cgroups.names import task_cgroup

        now = time.monotonic() if now is None else now
        known = self._paths
        fresh: dict[TaskKey, tuple[str, float]] = {}
        proc = str(self.roots.proc)
        for key in tasks:
            entry = known.get(key)
            if entry is None or now - entry[1] >= TASK_CGROUP_REFRESH_S:
                try:
                    text = read_bounded(
                        f"{proc}/{key[0]}/cgroup", MAX_ATTRIBUTE_BYTES, "surrogateescape"
                    )
                except OSError:
                    text = None
                path = task_cgroup(text)[0] if text is not None else None
                if path is not None:
                    entry = (path, now)
                elif entry is None:
                    continue
            fresh[key] = entry
        self._paths = fresh
        return MappingProxyType({key: entry[0] for key, entry in fresh.items()})
