"""One rule for which devices are listed: the headless commands, serve and the TUI's table.

The table judged a device the inventory did not describe yet (it appeared between two
inventory reads) by its name; ``select_devices`` showed it. Both now ask
``shown_by_default``, so a new loop device stays hidden everywhere.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.sampler import Sampler, select_devices
from iotop_plus.sampling.topology.inventory import (
    HIDDEN_KINDS,
    Inventory,
    hidden_by_default,
    read_inventory,
)


@pytest.mark.root
def test_a_loop_device_not_yet_in_the_inventory_is_hidden_as_in_the_table(
    make_loop: Callable[..., str],
) -> None:
    name = make_loop(size_mb=8)
    subprocess.run(
        ["dd", f"if=/dev/{name}", "of=/dev/null", "bs=4k", "count=4", "iflag=direct"],
        check=True,
        capture_output=True,
    )
    sample = Sampler(Roots()).sample()
    assert sample.counters[name].ever_used
    before_it = Inventory({n: d for n, d in read_inventory(Roots()).devices.items() if n != name})
    assert name not in select_devices(sample.counters, before_it, hide_virtual=True)
    assert name in select_devices(sample.counters, before_it)


@pytest.mark.root
def test_hidden_by_default_agrees_by_name_and_by_kind(make_loop: Callable[..., str]) -> None:
    name = make_loop(size_mb=8)
    device = read_inventory(Roots()).get(name)
    assert device is not None and device.kind in HIDDEN_KINDS
    assert device.hidden_by_default and hidden_by_default(name)
    for dev in read_inventory(Roots()).devices.values():
        if not dev.is_partition:
            assert dev.hidden_by_default == hidden_by_default(dev.name), dev.name
