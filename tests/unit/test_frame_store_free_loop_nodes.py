"""A host may hold hundreds of free loop nodes (no backing file): each is a line of
``/proc/diskstats`` and a device of every frame. Counted whole towards a chunk's size they
made chunks of a few frames (8 at 261 devices), too short for their figures to be packed, and
the frame store's figures grew with every free node (a 15-minute ring at 0.25 s: 36 bytes a
node a frame, ~26 MB for 200). A free node counts a quarter of a device."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from iotop_plus.record.store import OPEN_CELLS, FrameStore
from iotop_plus.record.store_chunk import frame_cells
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory
from tests.support.synthetic import SyntheticTree

DEVICES = 60
FREE = 56
START = 1_700_000_040.0
"""A wall-clock minute's start (a new minute starts a chunk)."""


def _free(name: str, minor: int) -> BlockDevice:
    return BlockDevice(name, 7, minor, "loop", device_class="loop")


def test_a_free_loop_node_weighs_a_quarter_and_a_bound_one_a_device() -> None:
    bound = dataclasses.replace(_free("loop0", 0), loop_backing_file="/x.img", size_bytes=1 << 20)
    devices = {"sda": BlockDevice("sda", 8, 0, "sd"), "loop0": bound}
    devices.update({f"loop{n}": _free(f"loop{n}", n) for n in range(1, 201)})
    inventory = Inventory(devices)
    assert frame_cells(tuple(devices), inventory) == 2 + 50
    assert frame_cells(("sda", "loop0"), inventory) == 2
    assert frame_cells(("gone",), Inventory({})) == 1


def _frames(base: Path, count: int) -> list[Frame]:
    """``count`` frames of 60 synthetic disks, 56 of them described as free loop nodes."""
    tree = SyntheticTree(base, DEVICES)
    source = live_source(tree.roots)
    try:
        first = source.next_frame()
        names = list(first.sample.counters)
        devices = dict(first.inventory.devices)
        for i, name in enumerate(names[:FREE]):
            devices[name] = _free(name, i)
        inventory = Inventory(devices)
        out = []
        for i in range(count):
            tree.advance(0.25)
            frame = source.next_frame()
            sample = dataclasses.replace(frame.sample, wall_time=START + 0.25 * i)
            out.append(dataclasses.replace(frame, sample=sample, inventory=inventory))
        return out
    finally:
        source.close()


def test_free_loop_nodes_make_chunks_longer(mem_path: Path) -> None:
    store = FrameStore(15, 0.25, background=False)
    for frame in _frames(mem_path, 160):
        store.append(frame)
    cells = (DEVICES - FREE) + FREE // 4
    first = store._chunks[0]  # (the chunks' lengths are what is measured)
    assert first.cells == cells
    assert len(first) == -(-OPEN_CELLS // cells)  # 2,500 / 18: 139 frames, not 42
    assert len(first) > OPEN_CELLS // DEVICES
