"""Issue #24 item 4: dirty and writeback memory and their thresholds are a frame part, shown in
``snapshot`` JSON, exported, recorded (type ``M``) and replayed, with a mark when dirty crosses
the background threshold. Fixture trees: /proc/meminfo and /proc/vmstat written by the test."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotop_plus import cli
from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.view import ExportSampler
from iotop_plus.programs import find_program
from iotop_plus.record.chunks import ChunkWriter
from iotop_plus.record.collect import inventory_doc, recorded_sample
from iotop_plus.record.timeline import open_timeline
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.sampler import Sampler
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.memory.dirty import (
    WRITEBACK,
    MemoryPart,
    MemoryReader,
    parse_memory,
    read_memory,
)
from tests.support.synthetic import SyntheticTree

FIXTURES = Path(__file__).parents[1] / "fixtures"

MEMINFO = """MemTotal:        4005328 kB
MemFree:         1638380 kB
Dirty:             {dirty} kB
Writeback:          {wb} kB
WritebackTmp:          0 kB
"""
VMSTAT = """nr_free_pages 409595
nr_dirty {pages}
nr_writeback 0
nr_dirty_threshold {thresh}
nr_dirty_background_threshold {bg}
"""


def write_memory(
    proc: Path, dirty_kb: int, wb_kb: int, thresh: int, bg: int, page: int = 4096
) -> None:
    """meminfo and vmstat as the kernel writes them; vmstat's figures are pages of ``page``."""
    (proc / "meminfo").write_text(MEMINFO.format(dirty=dirty_kb, wb=wb_kb))
    pages = dirty_kb * 1024 // page
    (proc / "vmstat").write_text(VMSTAT.format(pages=pages, thresh=thresh, bg=bg))


def nvme_tree(tmp_path: Path) -> Path:
    base = tmp_path / "nvme"
    shutil.copytree(FIXTURES / "nvme", base, symlinks=True)
    return base


def snapshot_json(capsys: pytest.CaptureFixture[str], base: Path) -> tuple[dict, str]:
    roots = ["--proc-root", str(base / "proc"), "--sys-root", str(base / "sys")]
    code = cli.main([*roots, "snapshot", "-i", "0.01", "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    [stat] = json.loads(out)["sysstat"]["hosts"][0]["statistics"]
    return stat, err


def test_snapshot_json_has_dirty_writeback_and_the_thresholds_in_kb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = nvme_tree(tmp_path)
    write_memory(base / "proc", 51200, 1024, thresh=100000, bg=50000)
    stat, err = snapshot_json(capsys, base)
    # vmstat's thresholds are pages: times the page size (4 KiB here).
    assert stat["memory"] == {
        "dirty_kB": 51200,
        "writeback_kB": 1024,
        "dirty_threshold_kB": 400000,
        "dirty_background_threshold_kB": 200000,
    }
    assert "dirty/writeback" not in err


def test_a_captured_tree_with_64k_pages_scales_the_thresholds_by_its_own_page_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = nvme_tree(tmp_path)
    write_memory(base / "proc", 6400, 0, thresh=1000, bg=500, page=65536)
    stat, _ = snapshot_json(capsys, base)
    assert stat["memory"]["dirty_threshold_kB"] == 64000
    assert stat["memory"]["dirty_background_threshold_kB"] == 32000


def test_a_malformed_meminfo_is_one_line_and_the_disks_are_still_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = nvme_tree(tmp_path)
    write_memory(base / "proc", 100, 0, thresh=1000, bg=500)
    (base / "proc" / "meminfo").write_text("Dirty: lots kB\n")
    stat, err = snapshot_json(capsys, base)
    lines = [w for w in err.splitlines() if "dirty/writeback" in w]
    assert len(lines) == 1 and "'Dirty: lots kB'" in lines[0] and "Traceback" not in err
    assert stat["disk"] and stat["memory"]["dirty_kB"] is None
    assert stat["memory"]["dirty_threshold_kB"] == 4000  # vmstat was fine


def test_crossing_the_background_threshold_is_one_mark_each_way(tmp_path: Path) -> None:
    tree = SyntheticTree(tmp_path / "tree", 1)
    proc = tree.roots.proc
    write_memory(proc, 1000, 0, thresh=2000, bg=1000)  # bg = 4000 kB
    source = LiveSource(tree.roots)
    first = source.next_frame()
    memory = first.get(MemoryPart)
    assert memory is not None and memory.dirty_kB == 1000
    assert not [e for e in first.events if e.kind == WRITEBACK]  # the first read sets the state

    def writeback_events(dirty_kb: int) -> list[str]:
        write_memory(proc, dirty_kb, 512, thresh=2000, bg=1000)
        frame = source.next_frame()
        memory = frame.get(MemoryPart)
        assert memory is not None and memory.dirty_kB == dirty_kb
        events = [e for e in frame.events if e.kind == WRITEBACK]
        assert all(e.marked and e.device is None for e in events)  # every device's charts
        return [e.text for e in events]

    [up] = writeback_events(4000)
    assert "background threshold" in up and "writeback starts" in up
    assert writeback_events(5000) == []  # still above: no new mark
    assert writeback_events(3800) == []  # hovering just below (95 %): no new mark
    [down] = writeback_events(2000)
    assert "back below" in down
    assert writeback_events(4100) != []  # the next storm is marked again


def test_missing_meminfo_and_vmstat_are_one_line_saying_so() -> None:
    memory = read_memory(Roots(proc=FIXTURES / "kernel-4.14" / "proc", sys=FIXTURES))
    assert memory.dirty_kB is None and memory.dirty_background_threshold_kB is None
    assert memory.problem is not None and "\n" not in memory.problem
    assert "meminfo and vmstat missing" in memory.problem
    assert MemoryReader(Roots(proc=FIXTURES / "kernel-4.14" / "proc")).read()[1] == ()


def test_the_recording_keeps_memory_as_type_m_and_replay_shows_it(tmp_path: Path) -> None:
    tree = SyntheticTree(tmp_path / "tree", 2)
    write_memory(tree.roots.proc, 3000, 200, thresh=5000, bg=2500)
    source = LiveSource(tree.roots)
    path = tmp_path / "r.rec"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    inventory = Sampler(tree.roots).inventory()
    header = {"host": "synthetic", "kernel": "6.1.0-synthetic", "zone": "UTC", "interval_s": 1}
    writer = ChunkWriter(fd, {**header, **inventory_doc(inventory, tree.roots, {})})
    live = []
    for dirty in (3000, 11000):
        write_memory(tree.roots.proc, dirty, 200, thresh=5000, bg=2500)
        tree.advance(1.0)
        frame = source.next_frame()
        live.append(frame)
        rs = recorded_sample(frame, tree.roots, 0)
        assert rs.parts["M"]["dirty_kB"] == dirty
        writer.append(rs)
    writer.close_chunk()
    os.close(fd)
    timeline = open_timeline(path)
    try:
        replayed = [timeline.frame_at(f.wall_time) for f in live]
    finally:
        timeline.close()
    assert [f.get(MemoryPart) for f in replayed if f is not None] == [
        f.get(MemoryPart) for f in live
    ]
    # The crossing was recorded as an event and comes back as a mark.
    [mark] = [e for e in replayed[1].events if e.kind == WRITEBACK] if replayed[1] else []
    assert mark.marked and "writeback starts" in mark.text


def test_serve_exports_the_memory_figures_in_bytes(tmp_path: Path) -> None:
    base = nvme_tree(tmp_path)
    write_memory(base / "proc", 51200, 1024, thresh=100000, bg=50000)
    roots = Roots(proc=base / "proc", sys=base / "sys")
    sampler = ExportSampler(LiveSource(roots), 1.0, show_all=True)
    sampler.step()
    body, _ = FrameCollector(sampler.view).render(None)
    text = body.decode()
    assert "iotop_plus_memory_dirty_bytes 5.24288e+07" in text
    assert "iotop_plus_memory_writeback_bytes 1.048576e+06" in text
    assert "iotop_plus_memory_dirty_threshold_bytes 4.096e+08" in text
    assert "iotop_plus_memory_dirty_background_threshold_bytes 2.048e+08" in text
    promtool = find_program("promtool")
    assert promtool is not None, "promtool is installed on this machine (Debian prometheus)"
    done = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_snapshot_from_a_recording_without_memory_says_null(tmp_path: Path) -> None:
    tree = SyntheticTree(tmp_path / "tree", 1)
    path = tmp_path / "old.rec"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    inventory = Sampler(tree.roots).inventory()
    header = {"host": "synthetic", "kernel": "6.1.0-synthetic", "zone": "UTC", "interval_s": 1}
    writer = ChunkWriter(fd, {**header, **inventory_doc(inventory, tree.roots, {})})
    source = LiveSource(tree.roots)  # no meminfo in this tree: nothing recorded as M
    for _ in range(2):
        tree.advance(1.0)
        writer.append(recorded_sample(source.next_frame(), tree.roots, 0))
    writer.close_chunk()
    os.close(fd)
    from iotop_plus.commands import snapshot

    out = io.StringIO()
    args = cli.build_parser().parse_args(["snapshot", "--from", str(path), "-f", "json", "-a"])
    assert snapshot.run(args, tree.roots, out) == 0
    [stat] = json.loads(out.getvalue())["sysstat"]["hosts"][0]["statistics"]
    assert stat["memory"] is None


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Dirty:", "Writeback:", "nr_dirty_threshold", "DirtyX:", "x"]),
            st.sampled_from(["12", "12 kB", "", "1 2 3", "-4"]),
        ),
        max_size=12,
    )
)
def test_the_searched_lines_are_the_lines_a_full_split_finds(
    lines: list[tuple[str, str]],
) -> None:
    text = "\n".join(f"{k} {v}".rstrip() for k, v in lines)
    by_split = parse_memory(text, text, 4096)
    naive: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        key = {"Dirty:": "dirty_kB", "Writeback:": "writeback_kB"}.get(words[0])
        if key and len(words) in (2, 3) and words[1].isdigit():
            naive[key] = int(words[1])
        if words[0] == "nr_dirty_threshold" and len(words) == 2 and words[1].isdigit():
            naive["dirty_threshold_kB"] = int(words[1]) * 4
    assert by_split[0] == naive
