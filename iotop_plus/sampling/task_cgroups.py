"""Each task's cgroup, for the per-process view: read once per task, refreshed now and then."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from iotop_plus.roots import Roots
from iotop_plus.sampling.diskstats import MAX_ATTRIBUTE_BYTES, read_bounded

if TYPE_CHECKING:
    from iotop_plus.sampling.processes import TaskKey

TASK_CGROUP_REFRESH_S = 30.0
"""A task's cgroup is read when it is first seen, then again after this long (it may move)."""


class TaskCgroups:
    """Each task's cgroup path from ``/proc/PID/cgroup``, read once per task and refreshed
    every :data:`TASK_CGROUP_REFRESH_S`, so a frame reads only new (or stale) tasks."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self._paths: dict[TaskKey, tuple[str, float]] = {}
        self._v2: bool | None = None

    def update(
        self, tasks: Mapping[TaskKey, object], now: float | None = None
    ) -> Mapping[TaskKey, str]:
        """The paths of ``tasks``; forgets the tasks that are gone."""
        from iotop_plus.sampling.cgroup_names import parse_proc_cgroup
        from iotop_plus.sampling.cgroups import V1, detect_layout

        if self._v2 is None:
            self._v2 = detect_layout(self.roots).version != V1
        now = time.monotonic() if now is None else now
        known = self._paths
        fresh: dict[TaskKey, tuple[str, float]] = {}
        proc = str(self.roots.proc)
        for key in tasks:
            entry = known.get(key)
            if entry is None or now - entry[1] >= TASK_CGROUP_REFRESH_S:
                try:
                    text = read_bounded(f"{proc}/{key[0]}/cgroup", MAX_ATTRIBUTE_BYTES)
                except OSError:
                    text = None
                path = parse_proc_cgroup(text, self._v2) if text is not None else None
                if path is not None:
                    entry = (path, now)
                elif entry is None:
                    continue
            fresh[key] = entry
        self._paths = fresh
        return MappingProxyType({key: entry[0] for key, entry in fresh.items()})
