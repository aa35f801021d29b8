"""Process totals since the start are made when read (#25, recorder CPU).

Every frame with processes computed every task's totals (iotop's accumulated mode), which the
recorder never reads and the Processes tab reads only in totals mode, for the rows it shows:
about a fifth of the recorder's CPU at 1 s.
"""

from __future__ import annotations

from typing import Any

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.processes import rates as processes


def test_a_frames_totals_are_made_only_for_the_tasks_read(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []
    real = processes._totals

    def counting(base: Any, cur: Any) -> Any:
        made.append(cur.key)
        return real(base, cur)

    monkeypatch.setattr(processes, "_totals", counting)
    source = LiveSource(Roots(), devices=False)
    source.want("processes", True)
    try:
        source.next_frame()
        frame = source.next_frame()
    finally:
        source.close()
    procs = frame.processes
    assert procs is not None and len(procs.sample.tasks) > 10  # this host's processes
    assert made == []  # none read yet: none made
    keys = list(procs.sample.tasks)[:3]
    first = [procs.totals[k] for k in keys]
    assert made == keys and [procs.totals[k] for k in keys] == first  # each made once
    assert list(procs.totals) == list(procs.sample.tasks)  # keys and order as before
    everything = dict(procs.totals)
    assert len(made) == len(everything)  # each made once, the three already made reused
    assert all(t.task is procs.sample.tasks[k] for k, t in everything.items())
