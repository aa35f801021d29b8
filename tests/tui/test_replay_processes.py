"""Replay shows what was recorded: the top processes (with rates from recorded pairs) and PSI."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.record.recorder import Recorder
from iotop_plus.record.timeline import open_timeline
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.tui.replay import make_replay_app
from tests.support.synthetic import SyntheticTree
from tests.tui.helpers import wait_for

T0 = 1_700_000_000.0
MIB = 1 << 20


def processes(k: int) -> tuple[dict[str, object], ...]:
    """postgres writes 4 MiB/s and waits; backup reads 2 MiB/s and appears at sample 2."""
    out: list[dict[str, object]] = [
        {
            "pid": 4242,
            "comm": "postgres",
            "cgroup": "/system.slice/postgresql.service",
            "read_bytes": 10 * MIB,
            "write_bytes": 100 * MIB + k * 4 * MIB,
            "delay_ticks": 1000 + k * 25,
            "read_bps": 0.0,
            "write_bps": 4.0 * MIB,
        }
    ]
    if k >= 2:
        out.append(
            {
                "pid": 777,
                "comm": "backup",
                "cgroup": "/user.slice",
                "read_bytes": k * 2 * MIB,
                "write_bytes": 0,
                "delay_ticks": None,
                "read_bps": 2.0 * MIB,
                "write_bps": 0.0,
            }
        )
    return tuple(out)


PRESSURE = {
    "io": {
        "some": {"avg10": 12.5, "avg60": 4.0, "avg300": 1.0, "total_us": 123456},
        "full": {"avg10": 3.25, "avg60": 1.0, "avg300": 0.5, "total_us": 23456},
    }
}


def record(tmp_path: Path) -> tuple[SyntheticTree, Path]:
    tree = SyntheticTree(tmp_path / "host", 4)
    rec_dir = tmp_path / "rec"
    source = LiveSource(tree.roots)
    recorder = Recorder(rec_dir, lambda: {"host": "synthetic", "zone": "UTC", "inventory": []})
    try:
        for k in range(6):
            tree.advance(1.0)
            frame = source.next_frame()
            sample = dataclasses.replace(frame.sample, monotonic=500.0 + k, wall_time=T0 + k)
            recorder.write(RecordedSample(sample, processes(k), PRESSURE))
    finally:
        recorder.close()
        source.close()
    return tree, rec_dir


def test_recorded_frames_carry_processes_with_rates_from_recorded_pairs(tmp_path: Path) -> None:
    _, rec_dir = record(tmp_path)
    timeline = open_timeline(rec_dir)
    frame = timeline.frame_at(T0 + 3)
    assert frame is not None and frame.processes is not None
    rates = {key[0]: r for key, r in frame.processes.rates.items()}
    assert rates[4242] is not None and rates[4242].write_bps == 4 * MIB
    assert rates[4242].io_wait_pct is not None and rates[4242].io_wait_pct > 0
    assert rates[777] is not None and rates[777].read_bps == 2 * MIB
    assert rates[4242].task.comm == "postgres"
    cgroups = {key[0]: c for key, c in frame.processes.cgroups.items()}
    assert cgroups[4242] == "/system.slice/postgresql.service"
    first = timeline.frame_at(T0 + 2)  # backup's first sample: the rate the recorder saw
    assert first is not None and first.processes is not None
    assert {k[0]: r.read_bps for k, r in first.processes.rates.items() if r}[777] == 2 * MIB
    assert frame.pressure is not None and frame.pressure.io is not None
    assert frame.pressure.io.some is not None and frame.pressure.io.some.avg10 == 12.5
    timeline.close()


async def test_the_replay_processes_tab_lists_the_recorded_processes(tmp_path: Path) -> None:
    tree, rec_dir = record(tmp_path)
    timeline = open_timeline(rec_dir)
    app = make_replay_app(tree.roots, timeline, T0 + 4)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame is not None)
        await app.main_screen.run_action("panel_tab('tab-processes')")
        panel = app.main_screen.panels.process_panel
        await wait_for(pilot, lambda: panel.is_mounted and bool(panel.query("ProcessList")))
        await wait_for(pilot, lambda: {r.pid for r in panel.process_list.rows} == {4242, 777})
        names = {r.pid: r for r in panel.process_list.rows}
        assert "postgres" in str(names[4242]) and "backup" in str(names[777])
    timeline.close()
