"""The device table's columns and colour thresholds, apart from the widget."""

from __future__ import annotations

from iotop_plus.config import Config
from iotop_plus.sampling.disks.figures import FIGURES
from iotop_plus.text import table_figure as format_value
from iotop_plus.tui.widgets.table_columns import (
    BAD,
    COLUMN_SETS,
    DIM,
    EXTENDED_PRIORITY,
    NOT_SATURATION_MARK,
    PLAIN,
    WARN,
    cell,
    column_scale,
)


def _col(key: str):
    return next(c for c in COLUMN_SETS["extended"] if c.key == key)


def test_column_sets_follow_the_registry() -> None:
    assert [c.key for c in COLUMN_SETS["extended"]] == [f.key for f in FIGURES]
    assert sorted(EXTENDED_PRIORITY) == sorted(f.key for f in FIGURES)
    assert {c.key for c in COLUMN_SETS["basic"]} <= {f.key for f in FIGURES}
    # Titles wider than 7 characters get a wider column, so a space always separates them.
    assert {c.key: c.width for c in COLUMN_SETS["extended"] if c.width != 8} == {
        "rareq_sz": 9,
        "wareq_sz": 9,
        "dareq_sz": 9,
        "in_flight": 9,
    }


def test_colour_thresholds() -> None:
    cfg = Config()
    r_await = _col("r_await")
    assert cell(r_await, 1.0, False, None, cfg) == ("1.00", PLAIN)
    assert cell(r_await, cfg.await_warn_ms_solid, False, None, cfg)[1] == WARN
    assert cell(r_await, cfg.await_bad_ms_solid, False, None, cfg)[1] == BAD
    # A spinning disk is allowed more before it turns yellow.
    assert cell(r_await, cfg.await_warn_ms_solid, True, None, cfg)[1] == PLAIN
    aqu = _col("aqu_sz")
    assert cell(aqu, 0.8 * 64, False, 64, cfg)[1] == BAD
    assert cell(aqu, 10.0, False, 64, cfg)[1] == PLAIN
    util = _col("util")
    assert cell(util, 100.0, False, None, cfg) == ("100.00" + NOT_SATURATION_MARK, DIM)
    assert cell(util, 95.0, True, None, cfg) == ("95.00", BAD)
    assert cell(_col("in_flight"), 3, None, None, cfg) == ("3", PLAIN)
    assert format_value(123_456.0) == "123k"


def test_virtual_and_loop_devices_are_not_judged_as_spinning_disks() -> None:
    """virtio-blk and many loop devices say rotational=1: their awaits must still be judged
    as fast storage's (the host or the backing file decides their speed, not a seek)."""
    from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory
    from iotop_plus.tui.widgets.device_table import DeviceTable

    def dev(name: str, kind: str, device_class: str, parent: str | None = None) -> BlockDevice:
        return BlockDevice(
            name,
            8,
            0,
            kind,
            parent=parent,
            rotational=None if parent else True,
            device_class=device_class,
        )

    inventory = Inventory(
        {
            "vda": dev("vda", "disk", "virtual"),
            "vda1": dev("vda1", "part", "virtual", parent="vda"),
            "loop1": dev("loop1", "loop", "loop"),
            "sda": dev("sda", "disk", "hdd"),
            "sda1": dev("sda1", "part", "hdd", parent="sda"),
        }
    )
    table = DeviceTable(Config())
    table._inventory = inventory
    cfg = Config()
    r_await = _col("r_await")
    slow_for_fast_storage = cfg.await_bad_ms_solid + 1  # below the spinning-disk bad mark
    for name in ("vda", "vda1", "loop1"):
        row = table._make_row(name, 0)
        assert cell(r_await, slow_for_fast_storage, row.rotational, None, cfg)[1] == BAD, name
        assert cell(_col("util"), 95.0, row.rotational, None, cfg)[1] == DIM, name
    for name in ("sda", "sda1"):
        row = table._make_row(name, 0)
        assert cell(r_await, slow_for_fast_storage, row.rotational, None, cfg)[1] == WARN, name


def test_device_tab_says_a_virtio_disk_is_virtual_not_spinning() -> None:
    from iotop_plus.sampling.topology.inventory import BlockDevice
    from iotop_plus.tui.widgets.device_panel import device_facts

    vda = BlockDevice("vda", 254, 0, "disk", rotational=True, device_class="virtual")
    facts = dict(device_facts(vda, None))
    assert facts["type"] == "virtual disk: the host decides its speed"
    assert "spinning" not in " ".join(facts.values())
    loop = BlockDevice("loop1", 7, 1, "loop", rotational=False, device_class="loop")
    assert "backing file" in dict(device_facts(loop, None))["type"]
    assert "NVMe" not in " ".join(dict(device_facts(loop, None)).values())


async def test_one_number_format_per_column() -> None:
    """#17 item 14: "Use one number format per column": nvme0n1's rkB/s read 41600 in the
    column where the other disks read 3840.00."""
    from tests.tui.canned import canned_app
    from tests.tui.helpers import row_line, started, table

    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        t = table(app)
        index = 1 + [c.key for c in t.columns].index("rkb_s")
        cells = [row_line(app, name).split()[index] for name in t.visible_names()]
        decimals = {len(c.partition(".")[2]) for c in cells if c not in ("-",)}
        assert decimals == {1}, cells  # the largest, 41600, fits one decimal: all get one
    assert format_value(41_600.0, column_scale(41_600.0)) == "41600.0"
    assert format_value(3_840.0, column_scale(41_600.0)) == "3840.0"
    assert format_value(5.0, column_scale(2_000_000.0)) == "5"
    assert format_value(123_456_789.0, column_scale(123_456_789.0)) == "123457k"
