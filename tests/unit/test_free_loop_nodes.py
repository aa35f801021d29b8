"""A free loop node (no backing file, size 0) is described from its numbers alone, and its
queue is not read: a host may hold hundreds of them, each some twenty sysfs files, all read
before the first figures."""

from __future__ import annotations

from pathlib import Path

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.queue_settings import QueueReader
from iotop_plus.sampling.disks.sampler import Sample
from iotop_plus.sampling.frame.part import ReadContext
from iotop_plus.sampling.topology.inventory import read_inventory


def _loop(sys_root: Path, n: int, sectors: int, backing: str | None) -> None:
    d = sys_root / "block" / f"loop{n}"
    (d / "queue").mkdir(parents=True)
    (d / "dev").write_text(f"7:{n}\n")
    (d / "size").write_text(f"{sectors}\n")
    (d / "ro").write_text("0\n")
    for name, value in (("rotational", "1"), ("logical_block_size", "512"), ("nr_requests", "128")):
        (d / "queue" / name).write_text(value + "\n")
    (d / "queue" / "scheduler").write_text("[none] mq-deadline\n")
    if backing is not None:
        (d / "loop").mkdir()
        (d / "loop" / "backing_file").write_text(backing + "\n")
        (d / "loop" / "dio").write_text("0\n")


def _roots(tmp_path: Path) -> Roots:
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text("")
    (proc / "swaps").write_text("Filename Type Size Used Priority\n")
    _loop(sys_root, 0, 32768, "/var/tmp/disk.img")
    _loop(sys_root, 1, 0, None)
    return Roots(proc=proc, sys=sys_root)


def test_a_free_loop_node_is_its_numbers_and_kind(tmp_path: Path) -> None:
    inventory = read_inventory(_roots(tmp_path))
    bound, free = inventory.get("loop0"), inventory.get("loop1")
    assert bound is not None and free is not None
    assert not bound.unattached_loop
    assert bound.loop_backing_file == "/var/tmp/disk.img" and bound.rotational is True
    assert bound.logical_block_size == 512 and bound.size_bytes == 32768 * 512
    assert free.unattached_loop and free.device_class == "loop" and free.hidden_by_default
    # Nothing of its queue was read (the tree has them: a read would have found them).
    assert (free.rotational, free.logical_block_size, free.size_bytes) == (None, None, 0)


def test_the_queue_part_reads_no_free_loop_node(tmp_path: Path) -> None:
    roots = _roots(tmp_path)
    inventory = read_inventory(roots)
    sample = Sample(0.0, 0.0, {})
    ctx = ReadContext(roots, sample, None, inventory, frozenset())
    queues, _ = QueueReader(roots).read(ctx)
    assert set(queues) == {"loop0"}
    assert queues["loop0"].values["nr_requests"] == 128


def test_a_loop_node_with_a_size_but_no_loop_directory_is_read_whole(tmp_path: Path) -> None:
    """A captured tree may leave out loop/: a size says the device is bound all the same."""
    roots = _roots(tmp_path)
    _loop(roots.sys, 2, 2048, None)
    dev = read_inventory(roots).get("loop2")
    assert dev is not None and not dev.unattached_loop
    assert dev.size_bytes == 2048 * 512 and dev.logical_block_size == 512
