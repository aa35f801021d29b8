"""Sampler: one immutable Sample per read, on fixture trees, bad trees and the live host."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import parse_diskstats
from iotop_plus.sampling.disks.sampler import Sample, Sampler, rates_between, select_devices
from tests.support.synthetic import SyntheticTree

RootsFactory = Callable[[str], Roots]


def _copy(src: Roots, dest: Path) -> Roots:
    shutil.copytree(src.proc, dest / "proc", symlinks=True)
    shutil.copytree(src.sys, dest / "sys", symlinks=True)
    return Roots(dest / "proc", dest / "sys")


def test_sample_of_a_fixture_tree(fixture_roots: RootsFactory) -> None:
    roots = fixture_roots("nvme")
    sample = Sampler(roots).sample()
    assert sample.source == str(roots.diskstats)
    assert sample.problems == ()
    assert dict(sample.counters) == parse_diskstats(roots.diskstats.read_text())
    assert sample.names == frozenset({"nvme0n1", "nvme0n1p1", "nvme0n1p2", "nvme0n2"})


def test_sample_is_immutable(fixture_roots: RootsFactory) -> None:
    sample = Sampler(fixture_roots("dm")).sample()
    with pytest.raises(dataclasses.FrozenInstanceError):
        sample.monotonic = 0.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        sample.counters["sda"] = sample.counters["dm-0"]  # type: ignore[index]


def test_rates_between_two_reads_of_a_changing_tree(
    fixture_roots: RootsFactory, tmp_path: Path
) -> None:
    roots = _copy(fixture_roots("dm"), tmp_path)
    sampler = Sampler(roots)
    first = sampler.sample()
    (roots.proc / "diskstats.t1").replace(roots.diskstats)
    second = sampler.sample()
    assert second.monotonic > first.monotonic
    rates = rates_between(first, second)
    elapsed = second.monotonic - first.monotonic
    dm0 = rates["dm-0"]
    assert dm0 is not None
    assert dm0.r_s == pytest.approx(150 / elapsed)
    assert dm0.rareq_sz == pytest.approx(3840 / 150 / 2)
    idle = rates["dm-1"]
    assert idle is not None and idle.r_s == 0


def test_malformed_lines_travel_in_the_sample(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "sys").mkdir()
    (tmp_path / "proc" / "diskstats").write_text(
        "   8 0 sda 1 2 3 4 5 6 7 8 0 10 11\nnonsense here\n   8 16 sdb 1 2 3 4 5 6 7 8 0 10 11\n"
    )
    sample = Sampler(Roots(tmp_path / "proc", tmp_path / "sys")).sample()
    assert sorted(sample.counters) == ["sda", "sdb"]
    assert len(sample.problems) == 1 and sample.problems[0].line_no == 2


def test_falls_back_to_sys_block_stat_without_diskstats(
    fixture_roots: RootsFactory, tmp_path: Path
) -> None:
    roots = _copy(fixture_roots("nvme"), tmp_path)
    expected = parse_diskstats(roots.diskstats.read_text())
    roots.diskstats.unlink()
    sample = Sampler(roots).sample()
    assert sample.source == str(roots.sys_block)
    assert sample.problems == ()
    assert dict(sample.counters) == expected


def test_nothing_readable_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    sample = Sampler(Roots(tmp_path / "proc", tmp_path / "sys")).sample()
    assert sample.counters == {}
    assert len(sample.problems) == 1 and "cannot read" in sample.problems[0].reason


def test_parse_cache_forgets_devices_that_left(tmp_path: Path) -> None:
    """Loop churn: thousands of short-lived names must not grow the cache forever."""
    (tmp_path / "proc").mkdir()
    sampler = Sampler(Roots(tmp_path / "proc", tmp_path / "sys"))
    for batch in range(10):
        lines = [f"7 {i} loop{batch * 100 + i} 1 0 8 1 0 0 0 0 0 1 1" for i in range(100)]
        (tmp_path / "proc" / "diskstats").write_text("\n".join(lines) + "\n")
        sample = sampler.sample()
        assert len(sample.counters) == 100
    assert len(sampler._cache) == 100


def test_select_devices_like_iostat(fixture_roots: RootsFactory) -> None:
    roots = fixture_roots("nvme")
    sampler = Sampler(roots)
    sample = sampler.sample()
    inv = sampler.inventory(sample.names)
    # Default: whole devices that have done I/O since boot (nvme0n2 never has).
    assert select_devices(sample.counters, inv) == ["nvme0n1"]
    assert select_devices(sample.counters, inv, partitions=True) == [
        "nvme0n1",
        "nvme0n1p1",
        "nvme0n1p2",
    ]
    assert select_devices(sample.counters, inv, show_all=True) == list(sample.counters)


@pytest.mark.root
def test_hide_virtual_hides_loop_devices(make_loop: Callable[..., str]) -> None:
    name = make_loop(size_mb=8)
    subprocess.run(
        ["dd", f"if=/dev/{name}", "of=/dev/null", "bs=4k", "count=4"],
        check=True,
        capture_output=True,
    )
    sampler = Sampler(Roots())
    sample = sampler.sample()
    inv = sampler.inventory(sample.names)
    assert name in select_devices(sample.counters, inv)
    assert name not in select_devices(sample.counters, inv, hide_virtual=True)


def test_inventory_is_reread_only_when_the_device_set_changes(
    fixture_roots: RootsFactory,
) -> None:
    sampler = Sampler(fixture_roots("md"))
    names = sampler.sample().names
    first = sampler.inventory(names)
    assert sampler.inventory(names) is first
    assert sampler.inventory(names | {"md1"}) is not first
    assert sampler.inventory(refresh=True) is not first


def test_host_info_from_a_captured_tree(fixture_roots: RootsFactory, tmp_path: Path) -> None:
    host = Sampler(fixture_roots("nvme")).host_info()
    assert (host.hostname, host.kernel, host.uptime_s) == ("db-nvme", "6.1.0-18-amd64", 86400.25)
    roots = _copy(fixture_roots("md"), tmp_path)
    (roots.proc / "uptime").write_text("garbage\n")
    assert Sampler(roots).host_info().uptime_s is None


def test_live_host_info() -> None:
    host = Sampler().host_info()
    assert (
        host.kernel
        == subprocess.run(["uname", "-r"], capture_output=True, text=True).stdout.strip()
    )
    assert host.uptime_s is not None and host.uptime_s > 0


@pytest.mark.root
def test_live_rates_of_reads_on_a_real_loop_device(make_loop: Callable[..., str]) -> None:
    """1 MiB of 4 KiB direct reads through a loop device: exactly 256 reads of 4 KiB."""
    name = make_loop(size_mb=8)
    sampler = Sampler(Roots())
    before = sampler.sample()
    subprocess.run(
        ["dd", f"if=/dev/{name}", "of=/dev/null", "bs=4k", "count=256", "iflag=direct"],
        check=True,
        capture_output=True,
    )
    time.sleep(0.05)
    after = sampler.sample()
    rates = rates_between(before, after)[name]
    assert rates is not None
    elapsed = after.monotonic - before.monotonic
    assert rates.r_s * elapsed == pytest.approx(256)
    assert rates.rkb_s * elapsed == pytest.approx(1024)
    assert rates.rareq_sz == 4.0
    assert rates.w_s == 0


@pytest.mark.slow  # seconds of CPU at scale: in make test, not in test-fast
def test_synthetic_tree_of_many_devices(tmp_path: Path) -> None:
    tree = SyntheticTree(tmp_path, 300, busy_fraction=0.1)
    sampler = Sampler(tree.roots)
    first: Sample = sampler.sample()
    tree.advance(1.0)
    second = sampler.sample()
    rates = rates_between(first, second)
    busy = [n for n, r in rates.items() if r is not None and r.r_s > 0]
    assert sorted(busy) == sorted(tree.busy)
    assert len(rates) == 300
